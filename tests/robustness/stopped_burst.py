#!/usr/bin/env python3
"""A process stopped as a whole during a burst of closes loses no record.

When the ring to the worker is full, a closing thread waits for the worker to take an event,
and gives up after a second in which the worker took none. That second was read on the clock
alone: a process stopped for 1.5 s (SIGSTOP, a debugger) in the middle of a burst came back
with its waiting closers past their second before the worker had run, and dropped hundreds of
records. stopped_burst_app.c: 16 threads, 400 connection pairs each, 20 kB written on every
client, closed all at once; the harness stops the process 20 ms into the burst for 1.5 s, three
times. Each log must hold a conn_close for every connection (summary: no dropped_records), and
the process must end on its own. After its burst, each thread opens and closes 20 more pairs one
by one, on the descriptors just closed: their conn_open records, which find the ring full, wait
for room as closes do, so that each descriptor's records alternate, conn_open then conn_close
(written at once instead, a new conn_open went ahead of its descriptor's previous conn_close).
"""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from robustlib import Checks, clean_env, compile_c, fresh, parse_args  # noqa: E402

RUNS = 3
THREADS, PAIRS, BYTES, AFTER = 16, 400, 20000, 20


def main():
    args = parse_args()
    source = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "stopped_burst_app.c")).read()
    app = compile_c(args, "stopped_burst_app", source, "-O2", "-pthread")
    checks = Checks()
    for attempt in range(RUNS):
        log = fresh(os.path.join(args.work_dir, f"run{attempt}.jsonl"))
        env = clean_env(LD_PRELOAD=args.shim, TCPTUNE_LOG=log, TCPTUNE_LOG_FORMAT="jsonl")
        process = subprocess.Popen([app, str(THREADS), str(PAIRS), str(BYTES), str(AFTER)], env=env, stdout=subprocess.PIPE,
                                   text=True)
        ready = process.stdout.readline()
        if ready.startswith("READY"):
            time.sleep(0.32)  # the app closes 0.3 s after READY
            process.send_signal(signal.SIGSTOP)
            time.sleep(1.5)
            process.send_signal(signal.SIGCONT)
        try:
            out, _ = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            out, _ = process.communicate()
        records = [json.loads(line) for line in open(log)] if os.path.exists(log) else []
        closes = sum(1 for r in records if r.get("event") == "conn_close")
        summary = next((r for r in records if r.get("event") == "summary"), {})
        expected = 2 * THREADS * (PAIRS + AFTER)
        checks.check(process.returncode == 0 and "done" in out, f"run {attempt}: the app ended on its own "
                     f"(status {process.returncode})")
        checks.check(closes == expected and summary.get("dropped_records") == 0,
                     f"run {attempt}: {expected} conn_close records, none dropped "
                     f"({closes} records, dropped_records {summary.get('dropped_records')})")
        first = out_of_order(records)
        checks.check(first is None, f"run {attempt}: each descriptor's records alternate, conn_open then conn_close"
                     + (f" (first out of order: {first})" if first else ""))
    checks.finish()


def out_of_order(records):
    """The first connection record that repeats its descriptor's previous event, or None."""
    last = {}
    for record in records:
        event = record.get("event")
        if event in ("conn_open", "conn_close") and record.get("role") != "listener":
            if last.get(record.get("fd")) == event:
                return record
            last[record.get("fd")] = event
    return None


if __name__ == "__main__":
    main()
