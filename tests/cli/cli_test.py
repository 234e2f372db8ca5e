"""The tcptune command: run, check, doctor, from the outside."""
import argparse
import os
import shutil
import stat
import subprocess
import sys

p = argparse.ArgumentParser()
for a in ("--tcptune", "--shim", "--static-hello", "--source-dir", "--work-dir"):
    p.add_argument(a, required=True)
args = p.parse_args()
os.makedirs(args.work_dir, exist_ok=True)
passed = failed = 0


def check(ok, what):
    global passed, failed
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    passed, failed = passed + bool(ok), failed + (not ok)


STATE = os.path.join(args.work_dir, "state")  # run's default log directory: $XDG_STATE_HOME/tcptune


def tcptune(*argv, env=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith("TCPTUNE_") and k != "LD_PRELOAD"}
    e["XDG_STATE_HOME"] = STATE
    e.update(env or {})
    return subprocess.run([args.tcptune, *argv], capture_output=True, text=True, env=e, timeout=60)


# check: a good policy in plain words, with this host's buffer decision.
good = os.path.join(args.work_dir, "good.toml")
with open(good, "w") as f:
    f.write('[defaults]\nnodelay = "on"\n[[rule]]\nname = "wan"\n'
            'match = { peer = ["203.0.113.0/24", "2001:db8::/32"], port = [443, "8000-8100"], role = "client", program = "legacy_*" }\n'
            'nodelay = "force"\nbuffers = { bandwidth = "1Gbit", rtt = "180ms" }\ncongestion = "bbr"\n'
            'keepalive = { idle = "30s", interval = "5s", count = 4 }\n')
r = tcptune("check", good)
check(r.returncode == 0, f"check good policy exits 0 ({r.returncode}: {r.stderr.strip()})")
check("rule 'wan'" in r.stdout and "203.0.113.0/24 or 2001:db8::/32" in r.stdout, "check names the rule and its peers")
check("port 443 or 8000-8100" in r.stdout and "legacy_*" in r.stdout, "check names ports and programs")
check("22.5 MB" in r.stdout and "rcvbuf 22.5 MB requested" in r.stdout, "check computes the BDP (22.5 MB)")
rmem_max = int(open("/proc/sys/net/core/rmem_max").read())
if rmem_max < 22500000 and os.geteuid() != 0:
    check("caps it at" in r.stdout, "check explains the rmem_max clamp")
check("force" in r.stdout and "keepalive: first probe after 30 s" in r.stdout, "check explains nodelay force and keepalive")

# check: keep_warm, one line per rule, with the payload escaped and "auto" explained.
warm = os.path.join(args.work_dir, "keep_warm.toml")
with open(warm, "w") as f:
    f.write('[defaults]\nkeep_warm = { heartbeat = "\\n" }\n'
            '[[rule]]\nname = "amqp"\nkeep_warm = { heartbeat_hex = "08000000000000ce", interval = "150ms", max_idle = "5m" }\n')
r = tcptune("check", warm)
warm_lines = [line for line in r.stdout.splitlines() if "keep_warm:" in line]
check(r.returncode == 0 and len(warm_lines) == 2, f"check prints one keep_warm line per rule and [defaults] ({warm_lines})")
check(warm_lines[:1] == ['  keep_warm: heartbeat of 8 bytes ("\\x08\\x00\\x00\\x00\\x00\\x00\\x00\\xce") after 150 ms '
                         'without data sent; stops after 300 s without a write by the app'],
      f"check explains keep_warm with a binary payload ({warm_lines[:1]})")
check(warm_lines[1:] == ['  keep_warm: heartbeat of 1 byte ("\\n") after the connection\'s RTO less 50 ms without data '
                         'sent (interval "auto": one heartbeat per RTO of silence, at least 150 ms on Linux); stops after '
                         '60 s without a write by the app'],
      f"check explains keep_warm with interval auto ({warm_lines[1:]})")
nagle_lines = [line for line in r.stdout.splitlines() if "keep_warm with Nagle left on" in line]
check(len(nagle_lines) == 2 and all("TCP_NODELAY set and cleared" in line for line in nagle_lines),
      f"check says how keep_warm stays Nagle-safe on rules that leave Nagle on ({nagle_lines})")

# check without a file: the built-in default, nodelay = "on-wait", in plain words.
r = tcptune("check")
check(r.returncode == 0 and "built-in default" in r.stdout and "nodelay: on-wait (Nagle's algorithm stays on" in r.stdout
      and "wait for input" in r.stdout and "corked" in r.stdout,
      f"check without a file explains the built-in default ({r.returncode}: {r.stdout.strip()[:400]} {r.stderr.strip()})")
if not os.path.exists("/etc/tcptune/policy.toml"):
    r = tcptune("doctor")
    check("on-wait" in r.stdout, "doctor names the built-in default's nodelay mode")

bad = os.path.join(args.source_dir, "tests/policies/bad")
corpus = sorted(os.listdir(bad)) if os.path.isdir(bad) else []
check(corpus, "bad-policy corpus present")
for name in corpus[:5]:
    r = tcptune("check", os.path.join(bad, name))
    check(r.returncode == 1 and r.stderr.count("\n") == 1 and f"{os.path.join(bad, name)}:" in r.stderr,
          f"check {name}: exit 1 with one line naming the file ({r.stderr.strip()})")

# doctor: the real value from /proc.
r = tcptune("doctor")
idle = open("/proc/sys/net/ipv4/tcp_slow_start_after_idle").read().strip()
line = [l for l in r.stdout.splitlines() if l.startswith("net.ipv4.tcp_slow_start_after_idle")]
check(r.returncode == 0 and line and line[0].split()[1] == idle, f"doctor reports tcp_slow_start_after_idle={idle}")
check("policy the shim would load" in r.stdout, "doctor names the policy source")

# run: LD_PRELOAD prepended, existing entries kept, the policy validated first.
r = tcptune("run", "--", "/bin/sh", "-c", 'echo "$LD_PRELOAD"')
check(r.returncode == 0 and r.stdout.strip() == os.path.realpath(args.shim),
      f"run finds the shim next to itself and sets LD_PRELOAD ({r.stdout.strip()})")
r = tcptune("run", "--", "/bin/sh", "-c", 'echo "$LD_PRELOAD"', env={"LD_PRELOAD": "/lib/other.so"})
check(r.stdout.strip() == os.path.realpath(args.shim) + ":/lib/other.so", f"run keeps an existing LD_PRELOAD ({r.stdout.strip()})")
shim_path = os.path.realpath(args.shim)
r = tcptune("run", "--", "/bin/sh", "-c", 'echo "$LD_PRELOAD"', env={"LD_PRELOAD": "/lib/a.so /lib/b.so"})
check(r.stdout.strip() == shim_path + ":/lib/a.so:/lib/b.so", f"run splits a space-separated LD_PRELOAD ({r.stdout.strip()})")
r = tcptune("run", "--", "/bin/sh", "-c", 'echo "$LD_PRELOAD"', env={"LD_PRELOAD": "/lib/other.so:" + shim_path})
check(r.stdout.strip() == shim_path + ":/lib/other.so", f"run moves the shim first, once ({r.stdout.strip()})")
r = tcptune("run", "--", "/bin/true", env={"TCPTUNE_SHIM": "/nonexistent/libtcptune.so"})
check(r.returncode == 1 and "TCPTUNE_SHIM=/nonexistent/libtcptune.so is not a file" in r.stderr,
      f"run refuses a TCPTUNE_SHIM that is not a file ({r.returncode}: {r.stderr.strip()})")
# The loader splits LD_PRELOAD at spaces and colons: a shim under such a path (an install prefix
# with a space) cannot be preloaded. run and ab say so and stop, rather than run untuned behind
# ld.so's "cannot be preloaded" lines.
for odd in ("with space", "with:colon"):
    odd_dir = os.path.join(args.work_dir, odd)
    os.makedirs(odd_dir, exist_ok=True)
    shutil.copy(args.shim, os.path.join(odd_dir, "libtcptune.so"))
    for command in (["run", "--"], ["ab", "--runs", "1", "--out", os.path.join(args.work_dir, "odd-ab"), "--"]):
        r = tcptune(*command, "/bin/true", env={"TCPTUNE_SHIM": os.path.join(odd_dir, "libtcptune.so")})
        check(r.returncode == 1 and "LD_PRELOAD cannot hold" in r.stderr and odd in r.stderr
              and "cannot be preloaded" not in r.stderr and len(r.stderr.strip().splitlines()) == 1,
              f"{command[0]}: a shim in '{odd}' is refused with one line ({r.returncode}: {r.stderr.strip()!r})")
bin_dir = os.path.join(args.work_dir, "path-bin")
os.makedirs(bin_dir, exist_ok=True)
not_executable = os.path.join(bin_dir, "not-executable-tool")
with open(not_executable, "w") as f:
    f.write("echo never\n")
os.chmod(not_executable, 0o644)
r = tcptune("run", "--", "not-executable-tool", env={"PATH": bin_dir + ":/usr/bin:/bin"})
check(r.returncode == 126 and "permission denied" in r.stderr, f"a non-executable file on PATH gives 126 ({r.returncode})")
script = os.path.join(bin_dir, "no-shebang-script")
with open(script, "w") as f:
    f.write('echo "script ran with $LD_PRELOAD"\n')
os.chmod(script, 0o755)
r = tcptune("run", "--", script)
check(r.returncode == 0 and r.stdout.strip() == "script ran with " + shim_path,
      f"a script without #! runs with /bin/sh, as execvp would ({r.returncode}: {r.stdout.strip()} {r.stderr.strip()})")
r = tcptune("run", "--policy", good, "--log", "x.log", "-v", "--", "/bin/sh", "-c",
            'echo "$TCPTUNE_POLICY_NAME|$TCPTUNE_LOG|$TCPTUNE_LOG_LEVEL|${TCPTUNE_POLICY-unset}"; printf %s "$TCPTUNE_POLICY_TOML"')
with open(good, encoding="utf-8") as f:
    good_text = f.read()
check(r.stdout.startswith(f"{good}|{os.path.abspath('x.log')}|debug|unset\n") and r.stdout.endswith(good_text),
      f"run passes the policy's text and name, log, level ({r.stdout.strip()[:200]})")
if corpus:
    r = tcptune("run", "--policy", os.path.join(bad, corpus[0]), "--", "/bin/true")
    check(r.returncode == 78, f"run refuses an invalid policy with 78 ({r.returncode})")
r = tcptune("run", "--", "no-such-command-xyz")
check(r.returncode == 127 and "not found" in r.stderr, "run: missing command exits 127")
r = tcptune("run", "--", args.static_hello)
check(r.returncode == 0 and "statically linked" in r.stderr and "hello" in r.stdout, "run warns for a static binary")
suid = os.path.join(args.work_dir, "suid_true")
if os.path.lexists(suid):
    os.unlink(suid)  # a copy onto it would keep the last run's owner
shutil.copy("/bin/true", suid)
os.chmod(suid, 0o4755)
r = tcptune("run", "--", suid)
# setuid to the caller itself raises nothing: an ordinary program, preloaded.
check(r.returncode == 0 and r.stderr.startswith("tcptune: no TCP connection measured") and r.stderr.count("\n") == 1,
      f"run says only that nothing was logged for a binary setuid to its caller ({r.stderr.strip()})")
if os.geteuid() == 0:
    os.chown(suid, 65534, 65534)
    os.chmod(suid, 0o4755)  # chown clears the bit
    r = tcptune("run", "--", suid)
    check("setuid" in r.stderr, f"run names a binary setuid to another user ({r.stderr.strip()})")
go = os.path.join(args.work_dir, "fake_go")
note = os.path.join(args.work_dir, "note")
with open(note, "wb") as f:
    f.write(b"go build id")
subprocess.run(["objcopy", f"--add-section", f".note.go.buildid={note}", "/bin/true", go], check=True)
os.chmod(go, 0o755)
r = tcptune("run", "--", go)
check("Go program" in r.stderr, f"run warns for a Go binary ({r.stderr.strip()})")
r = tcptune("run", "--", "/bin/true")
check(r.returncode == 0 and r.stderr.startswith("tcptune: no TCP connection measured: no process of the run opened "
                                                 f"one, so none wrote {STATE}/tcptune/true-")
      and r.stderr.count("\n") == 1 and r.stderr.endswith(".jsonl\n"),
      f"run says only that nothing was logged for an ordinary program ({r.stderr.strip()})")

# Install-tree lookup: bin/tcptune finds lib/libtcptune.so.
tree = os.path.join(args.work_dir, "tree")
os.makedirs(os.path.join(tree, "bin"), exist_ok=True)
os.makedirs(os.path.join(tree, "lib"), exist_ok=True)
shutil.copy(args.tcptune, os.path.join(tree, "bin", "tcptune"))
open(os.path.join(tree, "lib", "libtcptune.so"), "w").close()
r = subprocess.run([os.path.join(tree, "bin", "tcptune"), "run", "--", "/bin/sh", "-c", 'echo "$LD_PRELOAD"'],
                   capture_output=True, text=True, env={"PATH": os.environ["PATH"]})
check(r.stdout.strip() == os.path.realpath(os.path.join(tree, "lib", "libtcptune.so")), "run finds ../lib/libtcptune.so")
# run writes a jsonl log by default (in $XDG_STATE_HOME/tcptune, never the working directory) and,
# after the program, a summary on stderr.
APP = ("import socket\ns = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
       "c = socket.create_connection(s.getsockname()); a, _ = s.accept()\n"
       "for i in range(50): c.send(b'x' * 100)\n"
       "c.close(); a.close(); print('app output')\n")
run_dir = os.path.join(args.work_dir, "run-default-log")
shutil.rmtree(run_dir, ignore_errors=True)
os.makedirs(run_dir)
state_dir = os.path.join(run_dir, "state")
e = {k: v for k, v in os.environ.items() if not k.startswith("TCPTUNE_") and k != "LD_PRELOAD"}
e["XDG_STATE_HOME"] = state_dir
r = subprocess.run([args.tcptune, "run", "--", sys.executable, "-c", APP], capture_output=True, text=True,
                   env=e, cwd=run_dir, timeout=60)
log_dir = os.path.join(state_dir, "tcptune")
logs = sorted(os.listdir(log_dir)) if os.path.isdir(log_dir) else []
check(r.returncode == 0 and r.stdout == "app output\n", f"run leaves the app's stdout alone ({r.stdout!r})")
check(len(logs) == 1 and logs[0].startswith("python") and logs[0].endswith(".jsonl") and os.listdir(run_dir) == ["state"],
      f"run writes a jsonl log in $XDG_STATE_HOME/tcptune by default, nothing in the working directory ({logs})")
check("(defaults)" in r.stderr and " 50 " in r.stderr and logs and os.path.join(log_dir, logs[0]) in r.stderr,
      f"run prints a summary naming the log ({r.stderr.strip()[-300:]})")
r = subprocess.run([args.tcptune, "run", "-q", "--", sys.executable, "-c", APP], capture_output=True, text=True,
                   env=e, cwd=run_dir, timeout=60)
check(r.returncode == 0 and r.stderr == "" and len(os.listdir(log_dir)) == 2, "run -q: a log but nothing on stderr")
r = subprocess.run([args.tcptune, "run", "--no-log", "--", sys.executable, "-c", APP], capture_output=True,
                   text=True, env=e, cwd=run_dir, timeout=60)
check(r.returncode == 0 and r.stderr == "" and len(os.listdir(log_dir)) == 2, "run --no-log: neither")
r = tcptune("run", "--", "/bin/sh", "-c", "exit 3")
check(r.returncode == 3, f"run returns the program's exit status ({r.returncode})")
r = tcptune("run", "--", "/bin/sh", "-c", "kill -TERM $$")
check(r.returncode == -15, f"run dies by the signal that ended the program ({r.returncode})")

# ab: both arms run, interleaved, measured the same way; logs, a table, plots and a report
# (the verdicts and the report's content: cli.ab_evidence).
import xml.etree.ElementTree as ElementTree
ab_dir = os.path.join(args.work_dir, "ab")
shutil.rmtree(ab_dir, ignore_errors=True)
r = subprocess.run([args.tcptune, "ab", "--runs", "2", "--out", ab_dir, "--", sys.executable, "-c", APP],
                   capture_output=True, text=True, env=e, timeout=120)
table = {line.split()[0]: line for line in r.stdout.splitlines() if line}
check(r.returncode == 0 and sorted(n for n in os.listdir(ab_dir) if n.endswith(".jsonl")) ==
      ["observe-1.jsonl", "observe-2.jsonl", "tuned-1.jsonl", "tuned-2.jsonl"], f"ab runs both arms twice ({r.stderr[-300:]})")
check(r.stderr.index("run 1/2 observe") < r.stderr.index("run 1/2 tuned") < r.stderr.index("run 2/2 observe"),
      "ab interleaves the arms")
check(table.get("writes", "").split()[1:2] == ["50"] and "connections" in table and "wall" in table,
      f"ab's table has both arms' writes ({table.get('writes')})")
plots = sorted(n for n in os.listdir(ab_dir) if n.endswith(".svg"))
check(plots == ["ack-latency-cdf.svg", "request-latency-cdf.svg", "wall-time.svg", "write-latency-cdf.svg"] and
      "report: " + os.path.join(ab_dir, "report.html") in r.stdout, f"ab draws its plots and names the report ({plots})")
root = ElementTree.parse(os.path.join(ab_dir, "write-latency-cdf.svg")).getroot()
check(len(root.findall("{http://www.w3.org/2000/svg}polyline")) == 2, "the write latency CDF has a curve per arm")
bad = os.path.join(args.work_dir, "bad.toml")
with open(bad, "w") as f:
    f.write("nodelay = 3\n")
check(tcptune("ab", "--policy", bad, "--", "/bin/true").returncode == 78, "ab refuses an invalid policy with 78")

# report: a recorded fixture (two runs of `probe writes`, a rule for accepted sockets, and a
# last line cut as kill -9 would leave it).
import json
fixture = os.path.join(args.source_dir, "tests", "cli", "fixtures", "probe-two-runs.jsonl")
r = tcptune("report", fixture)
rows = {line.split()[0]: line.split() for line in r.stdout.splitlines() if line and line.split()[0] in
        ("(defaults)", "servers", "total")}
check(r.returncode == 0 and rows.get("(defaults)", [None, ""])[1] == "3" and rows["(defaults)"][2] == "407",
      f"report: (defaults) has 3 connections and 407 writes ({rows.get('(defaults)')})")
check(rows.get("servers", [None, ""])[1] == "3" and rows["servers"][2] == "0", "report: the servers rule")
check(rows.get("total", [None, ""])[1] == "6", "report: total")
check("1 line(s) skipped" in r.stdout, "report: the cut last line is skipped and said so")
r = tcptune("report", fixture, "--by", "program", "--json")
report = json.loads(r.stdout)
check(report["groups"][0]["key"] == "probe" and report["total"]["bytes"] == 661000 and report["skipped_lines"] == 1,
      "report --json by program")
# report after a close burst: a recorded log (conn_churn under the shim, 260 connections on two
# rules closed back to back, conn_open lines taken out) whose worker dropped 131 conn_close
# records. Counts come from the summary (exact), and a note says the latencies are partial.
burst = os.path.join(args.source_dir, "tests", "cli", "fixtures", "close-burst-dropped.jsonl")
r = tcptune("report", burst)
rows = {line.split()[0]: line.split() for line in r.stdout.splitlines() if line and line.split()[0] in
        ("first", "second", "total")}
check(r.returncode == 0 and rows.get("total", [None])[1:4] == ["260", "780", "78"],
      f"report after a close burst: the summary's 260 connections and 780 writes ({rows.get('total')})")
check(rows.get("first", [None])[1:3] == ["130", "390"] and rows.get("second", [None])[1:3] == ["130", "390"],
      f"report after a close burst: by_rule's counts per rule ({rows.get('first')}, {rows.get('second')})")
check("(131 conn_close records dropped" in r.stdout and "the latencies cover 129 of 260 connections" in r.stdout,
      f"report after a close burst says what is partial ({r.stdout[-400:]})")
report = json.loads(tcptune("report", burst, "--json").stdout)
check(report["total"]["connections"] == 260 and report["total"]["connections_without_record"] == 131 and
      report["total"]["bytes"] == 78000, f"report --json after a close burst ({report['total']})")
# Merged percentiles agree with the shim's own, for a group of one connection.
records = [json.loads(line) for line in open(fixture) if line.rstrip().endswith("}")]
busy = [rec for rec in records if rec["event"] == "conn_close" and rec["writes"] > 100][0]
single = os.path.join(args.work_dir, "single.jsonl")
with open(single, "w") as f:
    f.write(json.dumps(busy) + "\n")
merged = json.loads(tcptune("report", single, "--json").stdout)["total"]["write_latency_us"]
check(all(abs(merged[p] - busy["write_latency_us"][p]) <= 0.01 * busy["write_latency_us"][p] + 0.002
          for p in ("p50", "p90", "p99")), f"report's percentiles match the shim's ({merged} vs {busy['write_latency_us']})")
slow_log = os.path.join(args.work_dir, "slow.jsonl")
with open(slow_log, "w") as f:
    for duration, frames in ((5000, ["app+0x10", "app+0x20"]), (7000, ["app+0x10", "app+0x20"]),
                             (90000, ["app+0x99 flush_batch", "app+0x20"]), (4000, None)):
        rec = {"event": "slow_write", "duration_us": duration}
        if frames:
            rec["callsite"] = frames
        f.write(json.dumps(rec) + "\n")
r = tcptune("report", slow_log, "--by", "callsite", "--json")
sites = json.loads(r.stdout)["sites"] if r.returncode == 0 else []
check([s_["callsite"] for s_ in sites] == ["app+0x99 flush_batch < app+0x20", "app+0x10 < app+0x20"] and
      sites[1]["slow_writes"] == 2 and sites[1]["total_us"] == 12000 and
      json.loads(r.stdout)["slow_writes_without_callsite"] == 1,
      f"report --by callsite groups slow writes by call site, costliest first ({sites})")
check(tcptune("report", "/nonexistent.jsonl").returncode == 1, "report on a missing file fails")

r = tcptune("bogus")
check(r.returncode == 2 and "unknown command" in r.stderr, "unknown command exits 2")
r = tcptune("--version")
check(r.returncode == 0 and r.stdout.startswith("tcptune "), "--version")
print(f"{passed} passed, {failed} failed")
sys.exit(0 if failed == 0 else 1)
