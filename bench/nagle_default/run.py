#!/usr/bin/env python3
"""The built-in default against the other nodelay modes, on loopback, in one run.

Two programs that set no TCP option of their own (bench/scenarios):
  small_writes  1,000,000 16-byte writes streamed over one connection, no wait between them:
                Nagle coalesces them; with TCP_NODELAY each write is a segment (the segments
                the sender sent, from TCP_INFO, show it whatever the machine's load)
  rpc           a 10-byte header and a 100-byte body as two writes, then a 16-byte reply:
                with Nagle the body waits for the header's delayed ACK (about 40 ms)
under each arm, interleaved (run 1 of every arm, then run 2, ...):
  off           no shim
  app-nodelay   no shim, the program sets TCP_NODELAY itself (--nodelay)
  keep          the shim with nodelay = "keep" (nothing applied: the shim's own cost)
  default       the shim without a policy: the built-in default, nodelay = "on-wait"
  on, force     the shim with nodelay = "on" / "force" (TCP_NODELAY set)
Both ends run under the arm (LD_PRELOAD, no log). Prints each arm's median [range] and the
ratios the default promises: small_writes default/keep (within 5%), rpc off/default (at least
100x), and writes every run to bench/results/nagle-default-<UTC time>.json.

  bench/nagle_default/run.py                       # 5 rounds (about 3 minutes)
  bench/nagle_default/run.py --cpus 0              # both ends pinned to CPU 0
  bench/nagle_default/run.py --quick --check       # the smoke run (ctest -R bench.nagle_default_quick)
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from loopback_ports import free_port, listening  # noqa: E402

ARMS = {
    "off": (None, None, False),
    "app-nodelay": (None, None, True),
    "keep": ("keep", "shim", False),
    "default": (None, "shim", False),
    "on": ("on", "shim", False),
    "force": ("force", "shim", False),
}


def arm_env(arm, shim):
    nodelay, preload, _ = ARMS[arm]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TCPTUNE_") and k != "LD_PRELOAD"}
    if preload:
        env["LD_PRELOAD"] = shim
        # No policy file is found here unless /etc/tcptune/policy.toml exists (checked in main).
        if nodelay:
            env["TCPTUNE_POLICY_TOML"] = f'version = 1\n[defaults]\nnodelay = "{nodelay}"\n'
    return env


def run_pair(bin_dir, arm, shim, scenario, options, cpus):
    """One run of `scenario` under `arm`: the client's JSON line."""
    env = arm_env(arm, shim)
    port = free_port()
    endpoint = f"127.0.0.1:{port}"
    app_nodelay = ["--nodelay"] if ARMS[arm][2] else []
    pin = ["taskset", "-c", cpus] if cpus else []
    if scenario == "small_writes":
        server = [str(bin_dir / "small_writes"), "receive", "--listen", endpoint]
        client = [str(bin_dir / "small_writes"), "send", "--connect", endpoint, "--writes", str(options.writes),
                  "--size", "16"] + app_nodelay
    else:
        server = [str(bin_dir / "rpc"), "serve", "--listen", endpoint] + app_nodelay
        client = [str(bin_dir / "rpc"), "call", "--connect", endpoint, "--requests", str(options.requests)] + app_nodelay
    receiver = subprocess.Popen(pin + server, env=env, stdout=subprocess.DEVNULL)
    try:
        for _ in range(500):
            if listening(port):
                break
            time.sleep(0.01)
        else:
            raise RuntimeError(f"{scenario} {arm}: the receiver did not listen")
        done = subprocess.run(pin + client, env=env, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise RuntimeError(f"{scenario} {arm}: exit {done.returncode}: {done.stderr.strip()}")
        return json.loads(done.stdout)
    finally:
        receiver.kill()
        receiver.wait()


def metric(scenario, result):
    return result["seconds"] if scenario == "small_writes" else result["latency_ms"]["p50"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build/release")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--writes", type=int, default=1000000)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--cpus", default="", help="taskset CPU list for both ends (default: not pinned)")
    parser.add_argument("--quick", action="store_true", help="2 runs, 200,000 writes, 50 requests")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 unless rpc under the default is at least 10x faster than off")
    parser.add_argument("--out", default=None, help="results directory (default bench/results)")
    options = parser.parse_args()
    if options.quick:
        options.runs, options.writes, options.requests = 2, 200000, 50
    from pathlib import Path
    build = Path(options.build).resolve()
    bin_dir = build / "bin"
    shim = str(build / "lib" / "libtcptune.so")
    if os.path.exists("/etc/tcptune/policy.toml"):
        print("nagle_default: /etc/tcptune/policy.toml exists, so the default arm would not be the built-in "
              "default; skipped", file=sys.stderr)
        return 77
    results = {scenario: {arm: [] for arm in ARMS} for scenario in ("small_writes", "rpc")}
    segments = {arm: [] for arm in ARMS}
    raw = []
    for run in range(1, options.runs + 1):
        for scenario in results:
            for arm in ARMS:
                result = run_pair(bin_dir, arm, shim, scenario, options, options.cpus)
                value = metric(scenario, result)
                results[scenario][arm].append(value)
                if scenario == "small_writes":
                    segments[arm].append(result.get("segments", 0))
                raw.append({"run": run, "scenario": scenario, "arm": arm, "result": result})
                print(f"run {run}/{options.runs} {scenario:12} {arm:12} {value:.4g}", file=sys.stderr, flush=True)

    def med(scenario, arm):
        return statistics.median(results[scenario][arm])

    print(f"\nloopback, {options.runs} interleaved runs per arm"
          f"{', both ends on CPUs ' + options.cpus if options.cpus else ''}; median [min-max]\n")
    print("| arm | small_writes: s for %d x 16 B | vs keep | segments sent | rpc: p50 ms (%d requests) | off / arm |"
          % (options.writes, options.requests))
    print("|---|---|---|---|---|---|")
    for arm in ARMS:
        sw, rpc = results["small_writes"][arm], results["rpc"][arm]
        print(f"| {arm} | {med('small_writes', arm):.3f} [{min(sw):.3f}-{max(sw):.3f}] | "
              f"{med('small_writes', arm) / med('small_writes', 'keep'):.3f} | "
              f"{statistics.median(segments[arm]):.0f} | {med('rpc', arm):.4g} [{min(rpc):.4g}-{max(rpc):.4g}] | {med('rpc', 'off') / med('rpc', arm):.3g}x |")
    stream_ratio = med("small_writes", "default") / med("small_writes", "keep")
    rpc_speedup = med("rpc", "off") / med("rpc", "default")
    print(f"\nsmall_writes default/keep {stream_ratio:.3f} (target at most 1.05: "
          f"{'met' if stream_ratio <= 1.05 else 'NOT met'}); "
          f"on/keep {med('small_writes', 'on') / med('small_writes', 'keep'):.3f}")
    print(f"rpc off/default {rpc_speedup:.0f}x (target at least 100x: {'met' if rpc_speedup >= 100 else 'NOT met'})")

    out_dir = Path(options.out) if options.out else Path(__file__).resolve().parent.parent / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    path = out_dir / f"nagle-default-{stamp}.json"
    path.write_text(json.dumps({"machine": {"kernel": platform.release(), "cpus": os.cpu_count(),
                                            "load": os.getloadavg()},
                                "options": vars(options), "runs": raw,
                                "medians": {s: {a: med(s, a) for a in ARMS} for s in results},
                                "small_writes_segments_median": {a: statistics.median(segments[a]) for a in ARMS},
                                "small_writes_default_over_keep": stream_ratio,
                                "rpc_off_over_default": rpc_speedup}, indent=1) + "\n")
    print(f"results: {path}")
    if options.check and rpc_speedup < 10:
        print("nagle_default: rpc under the built-in default is not 10x faster than without the shim", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
