#!/usr/bin/env python3
"""Where `tcptune run` logs, and what `tcptune report` says of a log without records.

- The policy's [log] path is the log of `run --policy P` (absolute, and relative to the working
  directory), unless --log or TCPTUNE_LOG names another; --no-log means no log at all.
- Without any of them: $XDG_STATE_HOME/tcptune, /var/log/tcptune for root (0755, also from `/`,
  as under systemd), ~/.local/state/tcptune for another user (0700), $TMPDIR/tcptune-UID without
  a HOME; never the working directory; the path is printed after the program.
- [log] path = "stderr" (and --log stderr, preloaded and supervised): the records go to stderr
  with the program's own lines, and run says in one line why there is no table.
- report exits 1 when it reads no record (an empty file, a text log, a missing file, a
  directory), naming each file and why; a file without records beside one with is a warning.
"""
import argparse
import json
import os
import shutil
import socket
import stat
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "preload"))
from testlib import Checks, clean_env, seccomp_listener_available  # noqa: E402

p = argparse.ArgumentParser()
for a in ("--tcptune", "--shim", "--connect-probe", "--work-dir"):
    p.add_argument(a, required=True)
args = p.parse_args()
shutil.rmtree(args.work_dir, ignore_errors=True)
os.makedirs(args.work_dir)
os.chmod(args.work_dir, 0o777)
checks = Checks()
NOBODY = 65534

# Two loopback connections (four measured sockets), then "app output" on stdout.
APP = ("import socket\ns = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
       "for i in range(2):\n"
       "    c = socket.create_connection(s.getsockname()); a, _ = s.accept(); c.send(b'x' * 10); c.close(); a.close()\n"
       "print('app output')\n")
PYTHON = "/usr/bin/python3"


def path(*parts):
    return os.path.join(args.work_dir, *parts)


def run(*argv, cwd=None, preexec_fn=None, **env):
    e = clean_env(TCPTUNE_SHIM=args.shim, XDG_STATE_HOME=path("state"))
    for key, value in env.items():
        if value is None:
            e.pop(key, None)
        else:
            e[key] = value
    return subprocess.run([args.tcptune, *argv], capture_output=True, text=True, env=e, timeout=60,
                          cwd=cwd or args.work_dir, preexec_fn=preexec_fn, stdin=subprocess.DEVNULL)


def records(file):
    with open(file, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def closes(recs):
    return [r for r in recs if r.get("event") == "conn_close"]


def write(name, text):
    with open(path(name), "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(path(name), 0o644)
    return path(name)


def default_logs():
    directory = path("state", "tcptune")
    return sorted(os.listdir(directory)) if os.path.isdir(directory) else []


# -- the policy's [log] path -------------------------------------------------------------------
from_policy = path("from-policy.jsonl")
policy = write("log-path.toml", f'[log]\npath = "{from_policy}"\n')
r = run("run", "--policy", policy, "--", PYTHON, "-c", APP)
checks.check(r.returncode == 0 and os.path.exists(from_policy) and len(closes(records(from_policy))) == 4,
             f"run --policy P writes P's [log] path ({r.returncode}: {r.stderr.strip()[-200:]})")
checks.check(default_logs() == [], f"... and not the default log ({default_logs()})")
checks.check("connections measured by the shim" in r.stderr and f"tcptune: log {from_policy} " in r.stderr,
             "... and its table reads it, naming it")
check_out = run("check", policy)
checks.check(f"log: {from_policy}" in check_out.stdout, "tcptune check names the same path")

relative = write("relative.toml", '[log]\npath = "relative.jsonl"\n')
os.makedirs(path("cwd"), exist_ok=True)
r = run("run", "--policy", relative, "--", PYTHON, "-c", APP, cwd=path("cwd"))
checks.check(r.returncode == 0 and os.path.exists(path("cwd", "relative.jsonl"))
             and f"tcptune: log {path('cwd', 'relative.jsonl')} " in r.stderr,
             f"a relative [log] path is the working directory's, as the program opens it ({r.stderr.strip()[-200:]})")

given = path("given.jsonl")
os.remove(from_policy)
r = run("run", "--policy", policy, "--log", given, "--", PYTHON, "-c", APP)
checks.check(r.returncode == 0 and os.path.exists(given) and not os.path.exists(from_policy),
             "--log wins over the policy's [log] path")
from_env = path("from-env.jsonl")
r = run("run", "--policy", policy, "--", PYTHON, "-c", APP, TCPTUNE_LOG=from_env)
checks.check(r.returncode == 0 and os.path.exists(from_env) and not os.path.exists(from_policy),
             "TCPTUNE_LOG wins over the policy's [log] path")
r = run("run", "--policy", policy, "--no-log", "--", PYTHON, "-c", APP)
checks.check(r.returncode == 0 and not os.path.exists(from_policy) and r.stderr == "" and default_logs() == [],
             f"--no-log: no log at all, the policy's path neither ({r.stderr.strip()})")

pattern = path("pp-{pid}.jsonl")
per_process = write("per-process.toml", f'[log]\npath = "{pattern}"\n')
r = run("run", "--policy", per_process, "--", PYTHON, "-c", APP)
checks.check(r.returncode == 0 and "one log per process" in r.stderr and "no table" in r.stderr
             and any(n.startswith("pp-") and n[3:-6].isdigit() for n in os.listdir(args.work_dir)),
             f"a {{pid}} path: one file per process, and a line says why there is no table ({r.stderr.strip()})")
text_policy = write("text.toml", f'[log]\npath = "{path("text.log")}"\nformat = "text"\n')
r = run("run", "--policy", text_policy, "--", PYTHON, "-c", APP)
checks.check(r.returncode == 0 and "a text log" in r.stderr and "no table" in r.stderr,
             f"a text log: a line says why there is no table ({r.stderr.strip()})")

# -- the default directory ---------------------------------------------------------------------
r = run("run", "--", PYTHON, "-c", APP)
logs = default_logs()
checks.check(r.returncode == 0 and len(logs) == 1 and logs[0].startswith("python3-") and logs[0].endswith(".jsonl")
             and f"tcptune: log {path('state', 'tcptune', logs[0])} " in r.stderr,
             f"without a path: $XDG_STATE_HOME/tcptune/PROGRAM-TIME-PID.jsonl, printed ({logs})")
checks.check(stat.S_IMODE(os.stat(path("state", "tcptune")).st_mode) == 0o700, "... a directory of mode 0700")
checks.check(not [n for n in os.listdir(path("cwd")) if n.startswith("tcptune-")], "... nothing in the working directory")
r = run("run", "--", "/bin/true")
checks.check(r.returncode == 0 and r.stderr.startswith("tcptune: no TCP connection measured: no process of the run "
                                                      "opened one, so none wrote ") and r.stderr.count("\n") == 1,
             f"a program without connections: run says why there is no log ({r.stderr.strip()})")
r = run("run", "-q", "--", PYTHON, "-c", APP)
checks.check(r.returncode == 0 and r.stderr == "", "-q: nothing on stderr")

if os.geteuid() == 0:
    before = set(os.listdir("/var/log/tcptune")) if os.path.isdir("/var/log/tcptune") else set()
    r = run("run", "--", PYTHON, "-c", APP, cwd="/", XDG_STATE_HOME=None)
    made = sorted(set(os.listdir("/var/log/tcptune")) - before) if os.path.isdir("/var/log/tcptune") else []
    checks.check(r.returncode == 0 and len(made) == 1 and f"tcptune: log /var/log/tcptune/{made[0]} " in r.stderr
                 and not [n for n in os.listdir("/") if n.endswith(".jsonl")],
                 f"root, run from / (as under systemd): /var/log/tcptune, not / ({made}: {r.stderr.strip()[-160:]})")
    checks.check(stat.S_IMODE(os.stat("/var/log/tcptune").st_mode) == 0o755 or bool(before),
                 "... created 0755")
    for name in made:
        os.remove(os.path.join("/var/log/tcptune", name))

    def as_nobody():
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)

    home = path("home")
    os.makedirs(home)
    os.chown(home, NOBODY, NOBODY)
    r = run("run", "--", PYTHON, "-c", APP, preexec_fn=as_nobody, XDG_STATE_HOME=None, HOME=home)
    state = os.path.join(home, ".local", "state", "tcptune")
    made = os.listdir(state) if os.path.isdir(state) else []
    checks.check(r.returncode == 0 and len(made) == 1 and f"tcptune: log {state}/{made[0]} " in r.stderr
                 and stat.S_IMODE(os.stat(state).st_mode) == 0o700,
                 f"another user: ~/.local/state/tcptune, 0700 ({made}: {r.stderr.strip()[-160:]})")
    tmp = path("tmp")
    os.makedirs(tmp)
    os.chmod(tmp, 0o1777)
    r = run("run", "--", PYTHON, "-c", APP, preexec_fn=as_nobody, XDG_STATE_HOME=None, HOME=None, TMPDIR=tmp)
    private = os.path.join(tmp, f"tcptune-{NOBODY}")
    checks.check(r.returncode == 0 and os.path.isdir(private) and len(os.listdir(private)) == 1
                 and stat.S_IMODE(os.stat(private).st_mode) == 0o700,
                 f"without a HOME: $TMPDIR/tcptune-UID, 0700 ({r.stderr.strip()[-160:]})")
    # One that another user made first is not used.
    os.rmdir(private) if not os.listdir(private) else shutil.rmtree(private)
    os.mkdir(private, 0o777)
    r = run("run", "--", PYTHON, "-c", APP, preexec_fn=as_nobody, XDG_STATE_HOME=None, HOME=None, TMPDIR=tmp)
    checks.check(r.returncode == 0 and "is not a private directory of this user; no log" in r.stderr
                 and os.listdir(private) == [],
                 f"... not one that another user made ({r.stderr.strip()[-200:]})")
else:
    print("skip: the root and other-user default directories need root")

# -- [log] path = "stderr" under run -----------------------------------------------------------
to_stderr = write("stderr.toml", '[log]\npath = "stderr"\n')
for what, argv in (("[log] path = \"stderr\"", ["run", "--policy", to_stderr]), ("--log stderr", ["run", "--log", "stderr"])):
    r = run(*argv, "--", PYTHON, "-c", APP)
    lines = r.stderr.splitlines()
    shim_records = [json.loads(line) for line in lines if line.startswith("{")]
    others = [line for line in lines if not line.startswith("{")]
    checks.check(r.returncode == 0 and r.stdout == "app output\n" and len(closes(shim_records)) == 4,
                 f"{what}: the records are on stderr ({len(shim_records)})")
    checks.check(len(others) == 1 and "the log went to stderr" in others[0] and "no table" in others[0]
                 and not os.path.exists("stderr") and not os.path.exists(path("stderr")),
                 f"{what}: one line says why there is no table, and no file named stderr ({others})")

# Supervised: the supervisor's records on tcptune's stderr, which the program shares.
if seccomp_listener_available():
    listener = socket.create_server(("127.0.0.1", 0))
    r = run("run", "--supervise", "--log", "stderr", "--", args.connect_probe, str(listener.getsockname()[1]), "2")
    shim_records = [json.loads(line) for line in r.stderr.splitlines() if line.startswith("{")]
    opens = [x for x in shim_records if x.get("event") == "conn_open" and x.get("role") == "client"]
    checks.check(r.returncode == 0 and len(opens) == 2
                 and any(x.get("event") == "supervisor_summary" for x in shim_records),
                 f"supervised, --log stderr: the supervisor's records are on stderr ({r.returncode}, "
                 f"{len(shim_records)}: {r.stderr.strip()[-300:]})")
    summary = [x for x in shim_records if x.get("event") == "supervisor_summary"]
    checks.check(summary and summary[0].get("log_records_dropped") == 0, "... its summary counts no record dropped")
    listener.close()
else:
    print("skip: supervised mode needs seccomp user notification")

# -- report without records --------------------------------------------------------------------
empty = write("empty.jsonl", "")
text_log = path("text.log")
good = given
for what, files, reason in (("an empty file", [empty], "empty: no process wrote a record"),
                            ("a text log", [text_log], "none a JSON record: a text log"),
                            ("a missing file", [path("missing.jsonl")], "No such file or directory"),
                            ("a directory", [args.work_dir], "a directory, not a log")):
    r = run("report", *files)
    checks.check(r.returncode == 1 and reason in r.stderr and r.stdout == "",
                 f"report of {what}: exit 1, saying why ({r.returncode}: {r.stderr.strip()})")
r = run("report", "--json", empty)
checks.check(r.returncode == 1 and r.stdout == "", "report --json of an empty file: exit 1, no JSON")
r = run("report", "--by", "callsite", text_log)
checks.check(r.returncode == 1 and "a text log" in r.stderr, "report --by callsite of a text log: exit 1")
r = run("report", good, empty)
checks.check(r.returncode == 0 and "warning: " + empty in r.stderr and "total" in r.stdout,
             f"report of a log and an empty file: the table, and a warning for the empty one ({r.stderr.strip()})")
checks.finish()
