"""`tcptune check`, `run --policy` and `ab --policy` on paths that are not a policy (a FIFO, a
directory, /dev/null, /dev/zero, a socket, a file over 1 MiB, more than 4096 rules): an error
in one line, never a hang; and check's warning when a keep_warm heartbeat can reach accepted
(server-side) sockets, which no shipped preset triggers."""
import argparse
import glob
import re
import os
import socket
import subprocess
import sys

p = argparse.ArgumentParser()
for a in ("--tcptune", "--shim", "--source-dir", "--work-dir"):
    p.add_argument(a, required=True)
args = p.parse_args()
os.makedirs(args.work_dir, exist_ok=True)
passed = failed = 0
# A FIFO must not hang the test: a command still running after this long is a failure.
TIMEOUT_S = 10
MAX_POLICY_BYTES = 1 << 20
MAX_RULES = 4096


def check(ok, what):
    global passed, failed
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    passed, failed = passed + bool(ok), failed + (not ok)


def tcptune(*argv, env=None):
    """The finished command, or None when it was still running after TIMEOUT_S."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("TCPTUNE_") and k != "LD_PRELOAD"}
    e.update(env or {})
    try:
        return subprocess.run([args.tcptune, *argv], capture_output=True, text=True, env=e, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None


def write(name, text):
    path = os.path.join(args.work_dir, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def fresh(path):
    if os.path.lexists(path):
        os.remove(path)
    return path


# -- paths that are not a policy ------------------------------------------------------------
fifo = fresh(os.path.join(args.work_dir, "policy.fifo"))
os.mkfifo(fifo)
directory = os.path.join(args.work_dir, "policy.d")
os.makedirs(directory, exist_ok=True)
listener = socket.socket(socket.AF_UNIX)
listener.bind(fresh(os.path.join(args.work_dir, "policy.sock")))
body = '[defaults]\nnodelay = "on"\n'
padding = "# padding\n" * (MAX_POLICY_BYTES // 10 + 1)
oversized = write("oversized.toml", body + padding)
at_limit = write("at-limit.toml", body + padding[:MAX_POLICY_BYTES - len(body)])
check(os.path.getsize(at_limit) == MAX_POLICY_BYTES, f"a policy of exactly 1 MiB ({os.path.getsize(at_limit)})")
rules = [f"[[rule]]\nmatch = {{ port = {1 + i} }}\n" for i in range(MAX_RULES + 1)]
too_many = write("too-many-rules.toml", "version = 1\n" + "".join(rules))
exactly_max = write("max-rules.toml", "version = 1\n" + "".join(rules[:MAX_RULES]))

bad_paths = [
    ("FIFO", fifo, "a FIFO, not a regular file"),
    ("directory", directory, "a directory, not a regular file"),
    ("/dev/null", "/dev/null", "a character device, not a regular file"),
    ("/dev/zero", "/dev/zero", "a character device, not a regular file"),
    ("unix socket", os.path.join(args.work_dir, "policy.sock"), "a socket, not a regular file"),
    ("oversized file", oversized, "more than the 1 MiB a policy may have"),
    (f"{MAX_RULES + 1} rules", too_many, f"{too_many}:{2 + 2 * MAX_RULES}:1: more than {MAX_RULES} rules"),
]
for name, path, text in bad_paths:
    r = tcptune("check", path)
    check(r is not None, f"check {name}: finishes within {TIMEOUT_S} s")
    if r is None:
        continue
    check(r.returncode == 1 and r.stdout == "" and r.stderr.count("\n") == 1 and
          r.stderr.startswith(f"tcptune: {path}") and text in r.stderr,
          f"check {name}: invalid, exit 1, one line naming the path and '{text}' ({r.returncode}: {r.stderr.strip()})")
    r = tcptune("run", "--policy", path, "--no-log", "--", "/bin/true")
    check(r is not None and r.returncode == 78 and text in r.stderr,
          f"run --policy {name}: refused with 78 ({'hung' if r is None else r.returncode})")
    r = tcptune("ab", "--runs", "1", "--out", os.path.join(args.work_dir, "ab"), "--policy", path, "--", "/bin/true")
    check(r is not None and r.returncode == 78, f"ab --policy {name}: refused with 78 ({'hung' if r is None else r.returncode})")
listener.close()
for name, path, count in (("a policy of exactly 1 MiB", at_limit, 0), (f"{MAX_RULES} rules", exactly_max, MAX_RULES)):
    r = tcptune("check", path)
    check(r is not None and r.returncode == 0 and f"valid, {count} rule" in r.stdout,
          f"check {name}: valid ({'hung' if r is None else r.stderr.strip()[:200]})")

# `run --log FIFO`: the shim refuses the log, and run does not wait on the FIFO for its summary.
# The program opens a TCP socket: the shim opens its log when it loads its core, then.
log_fifo = fresh(os.path.join(args.work_dir, "log.fifo"))
os.mkfifo(log_fifo)
r = tcptune("run", "--log", log_fifo, "--", sys.executable, "-c", "import socket; socket.socket()",
            env={"TCPTUNE_SHIM": args.shim})
check(r is not None and r.returncode == 0 and "a FIFO, not a regular file; logging disabled" in r.stderr,
      f"run --log FIFO: finishes, logging disabled ({'hung' if r is None else r.stderr.strip()})")

# -- heartbeats on accepted sockets ---------------------------------------------------------
WARNING = "heartbeats on accepted (server-side) sockets"


def server_heartbeat_warnings(stderr):
    """check's warnings about heartbeats reaching accepted sockets (not its other warnings)."""
    return [line for line in stderr.splitlines() if line.startswith("tcptune: warning: ") and "(server-side) sockets" in line]


defaults_warm = write("defaults-warm.toml", '[defaults]\nnodelay = "on"\nkeep_warm = { heartbeat = "\\n" }\n')
r = tcptune("check", defaults_warm)
warnings = server_heartbeat_warnings(r.stderr)
check(r.returncode == 0 and "valid" in r.stdout, f"keep_warm in [defaults]: still valid ({r.returncode})")
check(len(warnings) == 1 and WARNING in warnings[0] and "[defaults]" in warnings[0] and
      'role = "client"' in warnings[0] and "HTTP" in warnings[0] and defaults_warm in warnings[0],
      f"keep_warm in [defaults]: one warning line saying what breaks and what to do ({warnings})")

scoped = write("scoped.toml", '[[rule]]\nname = "catch-all servers"\nmatch = { role = "server" }\nnodelay = "on"\n'
               '[[rule]]\nname = "any"\nkeep_warm = { heartbeat = "\\n" }\n'
               '[[rule]]\nname = "clients"\nmatch = { role = "client", port = 61613 }\nkeep_warm = { heartbeat = "\\n" }\n')
r = tcptune("check", scoped)
check(r.returncode == 0 and not server_heartbeat_warnings(r.stderr),
      f"no warning when a catch-all server rule comes first or the rule is for clients ({r.stderr.strip()})")

unscoped = write("unscoped.toml",
                 '[[rule]]\nname = "stomp"\nmatch = { port = 61613 }\nkeep_warm = { heartbeat = "\\n" }\n'
                 '[[rule]]\nname = "servers"\nmatch = { role = "server", port = 8080 }\n'
                 'keep_warm = { heartbeat_hex = "0a" }\n'
                 '[[rule]]\nname = "clients"\nmatch = { role = "client" }\nkeep_warm = { heartbeat = "\\n" }\n')
r = tcptune("check", unscoped)
warnings = server_heartbeat_warnings(r.stderr)
check(r.returncode == 0 and len(warnings) == 2, f"one warning per rule that can reach accepted sockets ({warnings})")
check(warnings[:1] and warnings[0].startswith(f"tcptune: warning: {unscoped}:1:1: rule 'stomp'") and WARNING in warnings[0],
      f"the warning names the rule's file:line:column ({warnings[:1]})")
check(warnings[1:] and warnings[1].startswith(f"tcptune: warning: {unscoped}:5:1: rule 'servers'"),
      f"a server rule with keep_warm warns too ({warnings[1:]})")

# -- keep_warm protocol presets -------------------------------------------------------------
protocols = write("protocols.toml",
                  '[defaults]\nkeep_warm = { protocol = "http1-client" }\n'
                  '[[rule]]\nname = "broker"\nmatch = { port = 61613 }\nkeep_warm = { protocol = "stomp" }\n'
                  '[[rule]]\nname = "any-server"\nmatch = { role = "server" }\nkeep_warm = { protocol = "lines" }\n')
r = tcptune("check", protocols)
warnings = server_heartbeat_warnings(r.stderr)
check(r.returncode == 0 and "keep_warm: protocol http1-client: heartbeat of 2 bytes (\"\\r\\n\"), only on "
      "connections the program opens (client side)" in r.stdout and
      "why the peer ignores it: RFC 9112 section 2.2" in r.stdout and
      "keep_warm: protocol stomp: heartbeat of 1 byte" in r.stdout,
      f"check names each preset, its bytes, its side and its source ({r.stdout.strip()[-600:]})")
# [defaults]'s client-only preset never reaches accepted sockets; the STOMP rule names its port;
# only the rule that puts "lines" on every accepted socket is warned about.
check(len(warnings) == 1 and warnings[0].startswith(f"tcptune: warning: {protocols}:7:1: rule 'any-server' sends "
                                                    "lines heartbeats") and "only clients that speak a line protocol" in warnings[0],
      f"one warning: the preset on every accepted socket ({warnings})")

# keep_warm does nothing where this namespace restarts no window after idle (BBR by default, or
# tcp_slow_start_after_idle = 0): check says so of a preset with keep_warm there, and only there.
def sysctl(name):
    with open("/proc/sys/net/ipv4/" + name, encoding="ascii") as f:
        return f.read().strip()


idle_restarts = sysctl("tcp_slow_start_after_idle") != "0"
default_bbr = sysctl("tcp_congestion_control").startswith("bbr")
for preset in sorted(glob.glob(os.path.join(args.source_dir, "config/presets/*.toml"))):
    r = tcptune("check", preset)
    with open(preset, encoding="utf-8") as f:
        text = f.read()
    sets_congestion = re.search(r"^congestion\s*=", text, re.MULTILINE) is not None
    futile = "keep_warm =" in text and (not idle_restarts or (default_bbr and not sets_congestion))
    warnings = r.stderr.splitlines()
    expected = all("does nothing here" in w for w in warnings) and len(warnings) == (1 if futile else 0)
    check(r.returncode == 0 and expected,
          f"check {os.path.basename(preset)}: valid, no warning but keep_warm's where it does nothing ({r.stderr.strip()})")
r = tcptune("check", os.path.join(args.source_dir, "config/presets/bursty-wan.toml"))
check("client connections" in r.stdout and "keep_warm: heartbeat" in r.stdout,
      "bursty-wan.toml keeps client connections warm")
check("message ends guessed: a write call that returns whole" in r.stdout,
      "check says plainly that raw heartbeat bytes only guess where a message ends")
r = tcptune("check", protocols)
check(r.stdout.count("message ends followed: the ") == 3 and "message ends guessed" not in r.stdout,
      "check says a preset follows its protocol's framing")

# -- every mistake in one pass ---------------------------------------------------------------
two_mistakes = write("two-mistakes.toml", '[[rule]]\nmatch = { prot = 443 }\n'
                     'keepalive = { idle = "30s", intreval = "5s" }\nnodelay = "on"\n')
r = tcptune("check", two_mistakes)
lines = r.stderr.splitlines()
check(r.returncode == 1 and r.stdout == "" and len(lines) == 2 and
      lines[0].startswith(f"tcptune: {two_mistakes}:2:11: unknown key 'prot' in match; did you mean 'port'?") and
      lines[1].startswith(f"tcptune: {two_mistakes}:3:29: unknown key 'intreval' in keepalive; did you mean 'interval'?"),
      f"check lists both mistakes, one line each with file:line:column, exit 1 ({r.returncode}: {lines})")
r = tcptune("run", "--policy", two_mistakes, "--no-log", "--", "/bin/true")
check(r.returncode == 78 and r.stderr.count(two_mistakes) == 1 and ":2:11: unknown key 'prot'" in r.stderr,
      f"run still refuses with one line, the first mistake ({r.returncode}: {r.stderr.strip()})")
top_level = write("top-level.toml", 'nodelay = "on"\n')
r = tcptune("check", top_level)
check(r.returncode == 1 and "unknown key 'nodelay' in the policy; put it under [defaults] (every socket) or in a "
      "[[rule]]" in r.stderr, f"a tuning key at the top says where it belongs ({r.stderr.strip()})")

# -- rules that never match -----------------------------------------------------------------
shadowed = write("shadowed.toml",
                 '[[rule]]\nname = "wan"\nmatch = { peer = "10.0.0.0/8", port = ["8000-8099", "8100-8200"] }\n'
                 'nodelay = "on"\n'
                 '[[rule]]\nname = "narrow"\nmatch = { peer = "10.1.0.0/16", port = 8150, role = "client" }\n'
                 'nodelay = "off"\n'
                 '[[rule]]\nname = "elsewhere"\nmatch = { peer = "192.0.2.0/24", port = 8150 }\nnodelay = "off"\n'
                 '[[rule]]\nname = "all"\nnodelay = "force"\n'
                 '[[rule]]\nname = "after-all"\nmatch = { program = "curl" }\nnodelay = "off"\n')
r = tcptune("check", shadowed)
warnings = [w for w in r.stderr.splitlines() if "never matches" in w]
check(r.returncode == 0 and len(warnings) == 2 and
      warnings[0].startswith(f"tcptune: warning: {shadowed}:5:1: rule 'narrow' never matches: rule 'wan' (line 1)") and
      warnings[1].startswith(f"tcptune: warning: {shadowed}:16:1: rule 'after-all' never matches: rule 'all' (line 13)"),
      f"check names each shadowed rule and the rule before it that takes its sockets ({warnings})")

# -- keep_warm where the namespace restarts no window: a network namespace of the test's own --------
namespaced = subprocess.run(["unshare", "--net", "true"], capture_output=True) if os.geteuid() == 0 else None
if namespaced is not None and namespaced.returncode == 0:
    warm = write("warm.toml", '[[rule]]\nname = "warm-cubic"\nmatch = { role = "client", port = 9 }\ncongestion = "cubic"\n'
                 'keep_warm = { heartbeat = "\\n" }\n'
                 '[[rule]]\nname = "warm"\nmatch = { role = "client" }\nkeep_warm = { heartbeat = "\\n" }\n')

    # A namespace other than the first may only pick an algorithm of tcp_allowed_congestion_control:
    # reno always is; bbr where the host allows it.
    def check_in_namespace(congestion, slow_start_after_idle):
        script = (f"sysctl -qw net.ipv4.tcp_congestion_control={congestion} "
                  f"net.ipv4.tcp_slow_start_after_idle={slow_start_after_idle} || exit 99; "
                  f"exec {args.tcptune} check {warm}")
        r = subprocess.run(["unshare", "--net", "sh", "-c", script], capture_output=True, text=True, timeout=TIMEOUT_S)
        if r.returncode == 99:
            print(f"skip {congestion} in a namespace: {r.stderr.strip()}")
            return None
        return r

    r = check_in_namespace("bbr", 1)
    if r is not None:
        warnings = [w for w in r.stderr.splitlines() if "does nothing here" in w]
        check(r.returncode == 0 and len(warnings) == 1 and f"{warm}:6:1: keep_warm in rule 'warm'" in warnings[0] and
              "default (net.ipv4.tcp_congestion_control) is bbr" in warnings[0],
              f"default bbr: the rule without congestion is warned about, the cubic one is not ({r.stderr.strip()})")
    r = check_in_namespace("reno", 0)
    warnings = [w for w in r.stderr.splitlines() if "does nothing here" in w] if r else []
    check(r is not None and r.returncode == 0 and len(warnings) == 2 and
          all("tcp_slow_start_after_idle is 0" in w for w in warnings),
          f"tcp_slow_start_after_idle = 0: every keep_warm is warned about ({r and r.stderr.strip()})")
    r = check_in_namespace("reno", 1)
    check(r is not None and r.returncode == 0 and "does nothing here" not in r.stderr,
          f"reno, restart on: no warning ({r and r.stderr.strip()})")
else:
    print("skip keep_warm namespace checks: no network namespace of our own (needs root and unshare)")

# -- the plan as another user ------------------------------------------------------------------
wmem_max = int(open("/proc/sys/net/core/wmem_max").read())
big = write("big-buffers.toml", f'[defaults]\nbuffers = {{ sndbuf = {wmem_max * 4} }}\n')
r = tcptune("check", "--as-user", "root", big)
check(r.returncode == 0 and "as user root (uid 0): with CAP_NET_ADMIN" in r.stdout and
      "pinned with CAP_NET_ADMIN (SO_SNDBUFFORCE)" in r.stdout, f"--as-user root: forced above wmem_max ({r.stdout.strip()})")
r = tcptune("check", "--as-user", "nobody", big)
check(r.returncode == 0 and "as user nobody (uid 65534): without CAP_NET_ADMIN" in r.stdout and
      "net.core.wmem_max caps it at" in r.stdout and "SO_SNDBUFFORCE" not in r.stdout,
      f"--as-user nobody: capped at wmem_max ({r.stdout.strip()})")
r = tcptune("check", "--as-user", "4242", big)
check(r.returncode == 0 and "as user 4242 (uid 4242)" in r.stdout, f"--as-user takes a uid without a passwd line ({r.stdout.strip()[:200]})")
r = tcptune("check", "--as-user", "no-such-user-here", big)
check(r.returncode == 2 and r.stdout == "" and "no such user in /etc/passwd" in r.stderr,
      f"--as-user with an unknown name: a usage error ({r.returncode}: {r.stderr.strip()})")

# -- how a size was read; keepalive in words -------------------------------------------------
sized = write("sized.toml", '[defaults]\nbuffers = { sndbuf = "4M" }\nkeepalive = { idle = "30s" }\n')
r = tcptune("check", sized)
check(r.returncode == 0 and f'note: {sized}:2:22: "4M" read as 4,000,000 bytes' in r.stdout,
      f"check says how \"4M\" was read ({r.stdout.strip()})")
keepalive_line = [line for line in r.stdout.splitlines() if "keepalive:" in line]
check(keepalive_line and "then one every " in keepalive_line[0] and "kernel default" not in keepalive_line[0] and
      "tcp_keepalive_probes" in keepalive_line[0], f"keepalive's kernel defaults named ({keepalive_line})")

print(f"{passed} passed, {failed} failed")
raise SystemExit(0 if failed == 0 and passed > 0 else 1)
