#!/usr/bin/env python3
"""A child forked while another thread of its parent hands a record to the worker does not wait
for that hand-over at its exit. exit() waits for hand-overs under way (a slot marked while its
record is being handed over), at most a second; a fork copies the marks, and the thread that
would end one is not in the child, so each child that caught one waited that second at its exit.
fork_hand_over_app.c: two threads churn loopback connection pairs while the main thread forks
FORKS children one after another, each of which makes a connection and calls exit(0). No child
may take a second from fork() to its reaping (the slowest took 46 ms here; before the fork
cleared the marks, 1,030 ms in each of two runs)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from robustlib import Checks, clean_env, compile_c, fresh, parse_args, run  # noqa: E402

FORKS = 60


def main():
    args = parse_args()
    source = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "fork_hand_over_app.c")).read()
    app = compile_c(args, "fork_hand_over_app", source, "-O2", "-pthread")
    checks = Checks()
    log = fresh(os.path.join(args.work_dir, "log.jsonl"))
    done = run([app, str(FORKS)], clean_env(LD_PRELOAD=args.shim, TCPTUNE_LOG=log, TCPTUNE_LOG_FORMAT="jsonl"),
               timeout=100)
    words = done.stdout.split()
    checks.check(done.returncode == 0 and len(words) == 4 and words[1] == str(FORKS),
                 f"{FORKS} children forked and reaped (status {done.returncode}, {done.stdout.strip()!r})")
    if len(words) == 4:
        slowest = float(words[3])
        checks.check(slowest < 1000, f"no child took a second to end (the slowest {slowest:.1f} ms)")
    checks.finish()


if __name__ == "__main__":
    main()
