#!/usr/bin/env python3
"""Races with a record being handed to the worker (hand_over_races_app.c: two threads churn
loopback connection pairs, then the main thread calls exit()). An exit waits for hand-overs
under way, which mark the socket's slot while they last.

--case dup: another thread dup()s the descriptor a churning thread is closing. The copy took
the slot's flags, the mark included, and nothing ever ended it there: such a process's exit
waited the most it waits for one (1 s at first: 9 runs of 10), and now says so in a warning
(3 runs of 3 with the copy's mark kept). Now dup() leaves the mark behind: no run may warn.

--case cancel: the log goes to stderr, a pipe whose reader takes nothing for 0.4 s, so the
worker is held up writing, its ring fills, and closes wait for room; the main thread cancels a
churning thread every few milliseconds (pthread_cancel). A cancellation that acted in that wait
(its nanosleep is a cancellation point) unwound through the shim's noexcept frames: the process
ended in std::terminate ("terminate called without an active exception", status 134) in 2 runs
of 2. Now the wait holds cancellation off; each of 3 runs must end with status 0."""
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from robustlib import Checks, clean_env, compile_c, fresh, parse_args, run  # noqa: E402

RUNS = 3
UNFINISHED = "did not finish before the process's records ended"


def dup_case(args, app, checks):
    for attempt in range(RUNS):
        log = fresh(os.path.join(args.work_dir, f"dup{attempt}.jsonl"))
        started = time.monotonic()
        done = run([app, "dup", "300"], clean_env(LD_PRELOAD=args.shim, TCPTUNE_LOG=log, TCPTUNE_LOG_FORMAT="jsonl"),
                   timeout=30)
        took = time.monotonic() - started
        records = [json.loads(line) for line in open(log)] if os.path.exists(log) else []
        warnings = [r.get("message", "") for r in records if r.get("event") == "warning"]
        checks.check(done.returncode == 0 and any(r.get("event") == "summary" for r in records),
                     f"run {attempt}: the app ended (status {done.returncode}) and the log has a summary")
        checks.check(not any(UNFINISHED in w for w in warnings),
                     f"run {attempt}: the exit waited for no hand-over left unfinished on a copy ({took:.2f} s)")


def cancel_case(args, app, checks):
    env = clean_env(LD_PRELOAD=args.shim, TCPTUNE_LOG="stderr", TCPTUNE_LOG_FORMAT="jsonl")
    for attempt in range(RUNS):
        process = subprocess.Popen([app, "cancel", "1000"], env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE)
        lines = []

        def read_late():
            time.sleep(0.4)  # the worker's writes block meanwhile, and the ring fills
            lines.extend(process.stderr.read().decode(errors="replace").splitlines())

        reader = threading.Thread(target=read_late)
        reader.start()
        try:
            status = process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            status = process.wait()
        reader.join(timeout=30)
        said = process.stdout.read().decode().strip()
        others = [line for line in lines if not line.startswith("{")]
        checks.check(status == 0 and said.startswith("cancels "),
                     f"run {attempt}: cancelled threads waiting for the worker leave the app running "
                     f"(status {status}, {said!r}{', ' + others[-1][:120] if others else ''})")


def main():
    args = parse_args()
    source = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "hand_over_races_app.c")).read()
    app = compile_c(args, "hand_over_races_app", source, "-O2", "-pthread")
    checks = Checks()
    {"dup": dup_case, "cancel": cancel_case}[args.case](args, app, checks)
    checks.finish()


if __name__ == "__main__":
    main()
