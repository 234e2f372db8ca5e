#!/usr/bin/env python3
"""Records under a storm of connections (close_storm.c): 4 threads open, write to and close
loopback connections while a SIGALRM handler connects every 2 ms (counted as untuned, in the
parent's summary only), two of them fork a child that
goes on, and one child execs a fresh client. Checked, per process: the app's bytes all arrive
whole; every connection's conn_close has a conn_open with the same ends; a conn_close's write
count matches its latency histogram's, with both ends named; and the summary counts exactly the
conn_close records written plus the records it says were dropped."""
import collections
import re
import subprocess

from testlib import Checks, logged_env, parse_args, records

THREADS = 4
PER_THREAD = 600


def check_process(checks, pid, recs):
    """The records of one process id (both images of the one that execs)."""
    opens = collections.Counter()
    closes = collections.Counter()
    odd = []
    for r in recs:
        event = r.get("event")
        ends = (r.get("role"), r.get("local"), r.get("peer"))
        if event == "conn_open" and r.get("role") != "listener":
            opens[ends] += 1
        elif event == "conn_close":
            closes[ends] += 1
            writes = r.get("writes", 0)
            latency = r.get("write_latency_us") or {}
            if latency.get("count", 0) != writes or not r.get("local") or not r.get("peer"):
                odd.append(r)
    summaries = [r for r in recs if r.get("event") == "summary"]
    dropped = sum(s.get("dropped_records", 0) for s in summaries)
    summarized = sum(s.get("connections", 0) for s in summaries)
    written = sum(closes.values())
    checks.check(written > 0 and summaries, f"pid {pid}: {written} conn_close records and a summary")
    checks.check(not odd, f"pid {pid}: every conn_close names both ends and its write count matches its "
                          f"latency count ({len(odd)} do not: {odd[:2]})")
    unmatched = [ends for ends in closes if closes[ends] > opens[ends]]
    checks.check(not unmatched, f"pid {pid}: every conn_close has its conn_open ({len(unmatched)} have none: "
                                f"{unmatched[:3]})")
    checks.check(summarized == written + dropped,
                 f"pid {pid}: the summary counts {summarized} connections: {written} written + {dropped} dropped")
    return sum(s.get("untuned_in_signal_handlers", 0) for s in summaries)


def main():
    args = parse_args()
    checks = Checks()
    env, log = logged_env(args, "storm")
    try:
        run = subprocess.run([args.probe, str(THREADS), str(PER_THREAD)], env=env, capture_output=True, text=True,
                             timeout=180)
    except subprocess.TimeoutExpired:
        checks.check(False, "the storm ended within 3 minutes")
        checks.finish()
    print(run.stdout, end="")
    checks.check(run.returncode == 0, f"the storm's bytes all arrived whole, no connect failed (exit "
                                      f"{run.returncode}; {run.stderr.strip()[-300:]})")
    by_pid = collections.defaultdict(list)
    for r in records(log):
        by_pid[r.get("pid")].append(r)
    images = sum(1 for r in records(log) if r.get("event") == "summary")
    checks.check(len(by_pid) == 3 and images == 4, f"the parent, two forked children and the image one of them "
                                                   f"execs each logged a summary ({len(by_pid)} processes, "
                                                   f"{images} summaries)")
    untuned = {pid: check_process(checks, pid, recs) for pid, recs in sorted(by_pid.items())}
    # Only the parent's timer runs the handler (a child does not inherit it): a child's summary
    # counts none of the parent's sockets set up there.
    parent = int(re.search(r"^parent (\d+):", run.stdout, re.M).group(1))
    checks.check(untuned[parent] > 0 and all(count == 0 for pid, count in untuned.items() if pid != parent),
                 f"only the parent ({parent}) counts sockets set up in its signal handler ({untuned})")
    checks.finish()


if __name__ == "__main__":
    main()
