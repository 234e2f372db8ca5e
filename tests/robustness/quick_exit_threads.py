#!/usr/bin/env python3
"""_exit from many threads at once keeps the records of the connections closed before it.

_exit (no exit handlers) has the exiting thread stop the worker and write what it was handed.
When 16 threads call _exit together, one writes and the others went straight on to the system
call, which ended the process while the first was writing: tens of the conn_close records of
connections closed long before were lost. quick_exit_threads_app.c closes 300 loopback
connections (600 closes, both ends), then 16 threads _exit(3) at once; over 10 runs each log
must hold the 600 conn_close records, each connection end once, every line valid JSON, and the
process must end within its bound (exit status 3).
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from robustlib import Checks, clean_env, compile_c, fresh, parse_args, run  # noqa: E402

RUNS = 10
CLOSES = 600


def main():
    args = parse_args()
    source = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "quick_exit_threads_app.c")).read()
    app = compile_c(args, "quick_exit_threads_app", source, "-O2", "-pthread")
    checks = Checks()
    for attempt in range(RUNS):
        log = fresh(os.path.join(args.work_dir, f"run{attempt}.jsonl"))
        started = time.monotonic()
        done = run([app], clean_env(LD_PRELOAD=args.shim, TCPTUNE_LOG=log, TCPTUNE_LOG_FORMAT="jsonl"), timeout=30)
        took = time.monotonic() - started
        lines = open(log, "rb").read().split(b"\n") if os.path.exists(log) else [b""]
        try:
            records = [json.loads(line) for line in lines[:-1]]
            valid = lines[-1] == b""
        except ValueError:
            records, valid = [], False
        ends = [(r.get("local"), r.get("peer")) for r in records if r.get("event") == "conn_close"]
        checks.check(done.returncode == 3 and took < 15, f"run {attempt}: _exit(3) ended the process "
                     f"(status {done.returncode}, {took:.1f} s; {done.stderr.strip()[-200:]})")
        checks.check(valid and len(ends) >= CLOSES and len(set(ends)) == len(ends),
                     f"run {attempt}: the {CLOSES} conn_close records, each once, the log valid jsonl "
                     f"({len(ends)} records, {len(set(ends))} ends)")
    checks.finish()


if __name__ == "__main__":
    main()
