#!/usr/bin/env python3
"""A program whose name is not UTF-8: connect_probe (static) run under `tcptune run
--supervise` through a link named b"bad\\nname\\xff". Checked: the rule that matches on
program = "bad*" tunes its connections; tcptune's two lines on stderr stay two, the name's
newline escaped; every line of the log is UTF-8 and JSON, the name
written with U+FFFD for the stray byte; `tcptune report` counts the connections under the rule
and skips no line."""
import argparse
import json
import os
import socket
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "preload"))
from testlib import SKIP, Checks, clean_env, seccomp_listener_available  # noqa: E402

RULE = "odd-name"
CONNECTIONS = 2
BOUND_S = 20


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tcptune", required=True)
    parser.add_argument("--probe", required=True)
    parser.add_argument("--work-dir", required=True)
    args = parser.parse_args()
    if not seccomp_listener_available():
        print("skipped: this kernel has no seccomp", flush=True)
        sys.exit(SKIP)
    os.makedirs(args.work_dir, exist_ok=True)
    checks = Checks()

    link = os.path.join(os.fsencode(args.work_dir), b"bad\nname\xff")
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink(os.fsencode(os.path.abspath(args.probe)), link)
    policy = os.path.join(args.work_dir, "policy.toml")
    log = os.path.join(args.work_dir, "log.jsonl")
    if os.path.exists(log):
        os.unlink(log)
    with open(policy, "w", encoding="utf-8") as f:
        f.write(f'version = 1\n[log]\nformat = "jsonl"\n'
                f'[[rule]]\nname = "{RULE}"\nmatch = {{ program = "bad*" }}\nnodelay = "force"\n')

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    port = listener.getsockname()[1]
    command = [os.fsencode(args.tcptune), b"run", b"--supervise", b"--policy", os.fsencode(policy), b"--log",
               os.fsencode(log), b"-q", b"--", link, str(port).encode(), str(CONNECTIONS).encode()]
    # stdin closed at once: the probe connects, prints "ready", and exits.
    run = subprocess.run(command, env=clean_env(), stdin=subprocess.DEVNULL, capture_output=True, timeout=BOUND_S)
    listener.close()
    checks.check(run.returncode == 0, f"the probe exits 0 under supervision ({run.returncode}, {run.stderr!r})")
    said = run.stderr.decode("utf-8", "replace").splitlines()
    checks.check(len(said) == 2 and all(line.startswith("tcptune: ") for line in said),
                 f"tcptune says which mode in two lines, the name's newline escaped ({said})")

    with open(log, "rb") as f:
        lines = f.read().splitlines()
    parsed = []
    for line in lines:
        try:
            parsed.append(json.loads(line.decode("utf-8")))
        except ValueError as error:
            checks.check(False, f"a log line is UTF-8 and JSON: {line[:120]!r} ({error})")
    checks.check(len(parsed) == len(lines) and lines, f"all {len(lines)} log lines are UTF-8 and JSON")
    clients = [r for r in parsed if r.get("event") == "conn_open" and r.get("role") == "client"]
    checks.check(len(clients) == CONNECTIONS and all(r.get("rule") == RULE for r in clients),
                 f"the rule matching the raw name tuned every connection ({[r.get('rule') for r in clients]})")
    checks.check(clients and all(r.get("program") == "bad\nname\ufffd" for r in clients),
                 f"the name is written with U+FFFD for the stray byte ({[r.get('program') for r in clients]})")

    report = subprocess.run([args.tcptune, "report", log], env=clean_env(), capture_output=True, text=True,
                            timeout=BOUND_S)
    rows = [line.split() for line in report.stdout.splitlines() if line.startswith(RULE)]
    checks.check(report.returncode == 0 and "skipped" not in report.stdout and rows and rows[0][1] == str(CONNECTIONS),
                 f"tcptune report counts the connections under the rule and skips no line ({report.stdout!r})")
    checks.finish()


if __name__ == "__main__":
    main()
