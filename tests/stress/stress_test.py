#!/usr/bin/env python3
"""stress.mixed: the mixed workload (8 threads x 20 connections with 20 ms heartbeats, partial
writes and EAGAIN, writev/sendmsg, MSG_MORE and TCP_CORK paused inside the message, 1 ms timer
signals with and without SA_RESTART, fork+exec children and children writing to an inherited
connection, close races over reused descriptor numbers), bounded to about a minute:
  control  without the shim: proves the workload and the receiver's checks are sound
  force    under the shim, nodelay = "force"
  on       under the shim, nodelay = "on"
  both     both ends under the shim, nodelay = "on"
  on-wait  under the shim, nodelay = "on-wait" (the built-in default's mode)
then 10,000 connections at once, twice, with and without the shim (memory per connection, no
crash, records exact after 20,000 closes).
Every variant checks that the receiver found every stream intact; under the shim also that
the summary, the heartbeats and the Prometheus textfile count what really happened."""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stress_harness import Variant, run_scale, run_variant  # noqa: E402

SKIP = 77


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stress", required=True)
    parser.add_argument("--shim", required=True)
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--seconds", type=float, default=11.0, help="per variant under the shim")
    parser.add_argument("--scale-connections", type=int, default=10000)
    parser.add_argument("--scale-rounds", type=int, default=2)
    parser.add_argument("--only", default="", help="comma-separated variant names (and 'scale')")
    parser.add_argument("--sender-args", default="", help="more options for every sender, space-separated")
    args = parser.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    if "reno" not in open("/proc/sys/net/ipv4/tcp_available_congestion_control").read().split():
        print("skip: reno is not available, and keep-warm needs a congestion control that restarts after idle")
        sys.exit(SKIP)

    variants = [
        Variant("control", sender_shim=False, seconds=args.seconds / 2),
        Variant("force", nodelay="force", seconds=args.seconds, seed=2),
        Variant("on", nodelay="on", seconds=args.seconds, seed=3),
        Variant("both", nodelay="on", receiver_shim=True, seconds=args.seconds, seed=4),
        # The built-in default's mode: Nagle on, pushes on every wait, inside corked and MSG_MORE messages too.
        Variant("on-wait", nodelay="on-wait", seconds=args.seconds, seed=5),
    ]
    for variant in variants:
        variant.sender_args = tuple(args.sender_args.split())
    only = set(filter(None, args.only.split(",")))
    started = time.monotonic()
    failed = passed = 0
    outcomes = [run_variant(args.stress, args.shim, args.work_dir, v) for v in variants if not only or v.name in only]
    if not only or "scale" in only:
        outcomes.append(run_scale(args.stress, args.shim, args.work_dir, args.scale_connections, rounds=args.scale_rounds))
    for outcome in outcomes:
        for ok, message in outcome.checks:
            print(("note " if ok is None else "ok   " if ok else "FAIL ") + message, flush=True)
            passed, failed = passed + (ok is True), failed + (ok is False)
        if hasattr(outcome, "per_connection_bytes") and outcome.runs:
            print(f"     scale: {outcome.per_connection_bytes:.0f} B of shim memory per connection", flush=True)
        elif hasattr(outcome, "sender") and outcome.sender:
            s, r = outcome.sender, outcome.receiver
            print(f"     {outcome.variant.name}: {r.get('frames')} frames, {r.get('bytes')} bytes, "
                  f"{r.get('heartbeats')} heartbeats, {r.get('error_count')} errors in {outcome.seconds:.1f} s "
                  f"({s.get('connections')} connections)", flush=True)
    print(f"{passed} passed, {failed} failed in {time.monotonic() - started:.0f} s")
    sys.exit(0 if failed == 0 and passed > 0 else 1)


if __name__ == "__main__":
    main()
