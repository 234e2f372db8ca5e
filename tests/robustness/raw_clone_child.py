#!/usr/bin/env python3
"""A child of a raw clone(CLONE_VM | CLONE_VFORK) must not end its parent's telemetry.

The shim counts the vfork() calls through libc and asks getpid whether a close runs in a vfork
child only while one is in flight; a child that a program starts with clone() itself (as libc's
posix_spawn does inside, and some programs do) is not counted. Its _exit or exec went through
the shim's hooks as if it were its parent's: the _exit stopped the parent's worker (every record
after it lost, and the summary), the exec wrote the parent's summary and at-exec closes.
raw_clone_child_app.c makes 11 loopback connections (both ends: 22 conn_close records) around a
child that _exits, execs /bin/true, fails an exec, or closes the connection open across it; the
parent's records must be the same as without a child: 22 conn_close and one summary, the log
valid jsonl. A close in the child is taken for its parent's (documented), so that case counts
the connection once too. A child of a raw fork system call (no fork handlers, no worker thread
of its own) that _exits or exits, and a child of _Fork() that exits, must end at once; they
waited forever to join their parent's worker (and wrote no record of their own either way).
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from robustlib import Checks, clean_env, compile_c, fresh, parse_args, run  # noqa: E402


def parsed(path):
    """Every line of the log as a JSON object, or None if a line is not one."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                out.append(json.loads(line))
            except ValueError:
                return None
    return out


def main():
    args = parse_args()
    source = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "raw_clone_child_app.c")).read()
    app = compile_c(args, "raw_clone_child_app", source, "-O2")
    checks = Checks()
    for mode in ("none", "exit", "exec", "failexec", "close", "rawfork", "rawfork_exit", "Fork_exit"):
        log = fresh(os.path.join(args.work_dir, f"{mode}.jsonl"))
        env = clean_env(LD_PRELOAD=args.shim, TCPTUNE_LOG=log, TCPTUNE_LOG_FORMAT="jsonl")
        try:
            done = run([app, mode], env, timeout=15)
        except subprocess.TimeoutExpired:
            checks.check(False, f"{mode}: the app ended within 15 s")
            continue
        checks.check(done.returncode == 0 and done.stdout.startswith("done "), f"{mode}: the app ran ({done.stderr.strip()[-300:]})")
        records = parsed(log) if os.path.exists(log) else None
        checks.check(records is not None, f"{mode}: the log is valid jsonl")
        if records is None:
            continue
        words = done.stdout.split()
        pid = int(words[1]) if len(words) == 2 and words[0] == "done" else None
        parent = [r for r in records if r.get("pid") == pid]
        closes = sum(1 for r in parent if r.get("event") == "conn_close")
        summaries = [r for r in parent if r.get("event") == "summary"]
        checks.check(closes == 22 and len(summaries) == 1 and summaries[0].get("ended_by") != "exec",
                     f"{mode}: the parent's 22 conn_close and its one summary at exit "
                     f"({closes} conn_close, summaries ended by {[s.get('ended_by') for s in summaries]})")
    checks.finish()


if __name__ == "__main__":
    main()
