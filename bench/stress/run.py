#!/usr/bin/env python3
"""Longer stress runs than ctest's stress.mixed, and the scale figures, for docs/robustness.md.

    bench/stress/run.py                                   # 16 threads x 50 connections, 60 s per variant
    bench/stress/run.py --threads 8 --connections 20 --seconds 300 --variants on
    bench/stress/run.py --variants none --scale 19900x1,10000x2

Each variant runs tcptune_stress's sender (under the shim, or not for `control`) against its
receiver, which checks every byte of every stream, and compares the receiver's view with the
sender's own counts, the shim's summary record and its Prometheus textfile (the checks of
tests/stress/stress_harness.py). Scale: N connections open at once in one process, with and
without the shim, R times: whether it survives, the shim's memory per connection, and whether
the summary is exact after N x R closes. Prints a table and writes every figure to
bench/results/stress-<UTC time>.json. Loopback only; needs a build with tcptune_stress
(tests/stress) and libtcptune.so."""
import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "stress"))
from stress_harness import Variant, run_scale, run_variant  # noqa: E402

VARIANTS = {
    "control": dict(sender_shim=False, nodelay="force"),
    "force": dict(nodelay="force"),
    "on": dict(nodelay="on"),
    "both": dict(nodelay="on", receiver_shim=True),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build-dir", default=os.path.join(ROOT, "build", "release"))
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--connections", type=int, default=50, help="per thread")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--variants", default="control,force,on,both", help="comma-separated, or 'none'")
    parser.add_argument("--scale", default="19900x1,10000x2",
                        help="comma-separated N x R: N connections at once, R times ('none': skip)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work-dir", default="")
    parser.add_argument("--out", default="", help="results JSON (default bench/results/stress-<time>.json)")
    args = parser.parse_args()
    stress = os.path.join(args.build_dir, "bin", "tcptune_stress")
    shim = os.path.join(args.build_dir, "lib", "libtcptune.so")
    for path in (stress, shim):
        if not os.path.exists(path):
            sys.exit(f"{path} is missing: build first (cmake --build {args.build_dir} --target tcptune_stress tcptune)")
    work = args.work_dir or os.path.join(args.build_dir, "bench-stress")
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    results = {"time": stamp, "machine": os.uname().nodename, "kernel": os.uname().release, "cpus": os.cpu_count(),
               "variants": [], "scale": []}

    print(f"== stress: {args.threads} threads x {args.connections} connections, {args.seconds:g} s per variant, "
          f"20 ms heartbeat")
    header = (f"{'variant':8} {'frames':>9} {'GB':>6} {'heartbeats':>10} {'errors':>6} {'signals':>8} {'EINTR':>6} "
              f"{'partial':>7} {'EAGAIN':>7} {'forks':>5} {'inherit':>7} {'races':>6} {'reuses':>6} {'checks':>8}")
    names = [] if args.variants == "none" else args.variants.split(",")
    failures = []
    if names:
        print(header)
    for index, name in enumerate(names):
        variant = Variant(name, seconds=args.seconds, threads=args.threads, connections=args.connections,
                          seed=args.seed + index, **VARIANTS[name])
        outcome = run_variant(stress, shim, work, variant)
        s, r = outcome.sender, outcome.receiver
        passed = sum(1 for ok, _ in outcome.checks if ok is True)
        failed = [message for ok, message in outcome.checks if ok is False]
        failures += failed
        print(f"{name:8} {r.get('frames', 0):>9} {r.get('bytes', 0) / 1e9:>6.2f} {r.get('heartbeats', 0):>10} "
              f"{r.get('error_count', 0):>6} {s.get('signals', 0):>8} {s.get('eintr', 0):>6} "
              f"{s.get('partial_writes', 0):>7} {s.get('eagain', 0):>7} {s.get('exec_children', 0):>5} "
              f"{len(s.get('children', [])):>7} {s.get('close_races', 0):>6} {s.get('fd_reuses', 0):>6} "
              f"{passed:>3}/{passed + len(failed):<4}", flush=True)
        results["variants"].append({"name": name, "seconds": outcome.seconds, "threads": args.threads,
                                    "connections": args.connections, "sender": s,
                                    "receiver": {k: v for k, v in r.items() if k != "errors"},
                                    "receiver_errors": r.get("errors", [])[:20],
                                    "summary": outcome.summaries.get(s.get("pid"), {}),
                                    "checks": [[ok, message] for ok, message in outcome.checks]})

    for spec in [] if args.scale == "none" else args.scale.split(","):
        at_once, rounds = (int(x) for x in spec.lower().split("x"))
        outcome = run_scale(stress, shim, work, at_once, rounds=rounds)
        failures += outcome.failed
        summary = outcome.summary
        with_shim = outcome.runs.get("with", {})
        print(f"== scale: {outcome.at_once} connections at once, {rounds} time(s): "
              f"{'no crash' if with_shim.get('connections') == outcome.at_once * rounds else 'FAILED'}, "
              f"{outcome.per_connection_bytes:.0f} B of shim memory per connection; after "
              f"{outcome.at_once * rounds} closes the summary has {summary.get('connections')} connections, "
              f"{summary.get('writes')} writes, {summary.get('bytes')} bytes of {with_shim.get('connections')}, "
              f"{with_shim.get('writes')}, {with_shim.get('bytes')} (dropped_records {summary.get('dropped_records')})",
              flush=True)
        results["scale"].append({"at_once": outcome.at_once, "rounds": rounds, "runs": outcome.runs,
                                 "per_connection_bytes": outcome.per_connection_bytes, "summary": summary,
                                 "checks": [[ok, message] for ok, message in outcome.checks]})

    for message in failures:
        print("FAIL " + message)
    out = args.out or os.path.join(ROOT, "bench", "results", f"stress-{stamp}.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(results, f, indent=1)
    print(f"raw results: {os.path.relpath(out, ROOT)}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
