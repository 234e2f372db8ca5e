#!/usr/bin/env python3
"""keep_warm protocol presets against real servers: burst latency over the emulated 180 ms link.

For each preset a real client (bench/presets/clients.py) sends 60 KB requests after idle gaps to
a real server in the other namespace, in three arms, interleaved (run 1 of each arm, then run 2):
  off        no shim: cubic restarts the window after each gap;
  tuned      under `tcptune run --policy` whose only rule is `keep_warm = { protocol = PRESET }`;
  reference  no shim, `tcptune-linkem set --slow-start-after-idle 0` (the admin's sysctl fix).
It prints per arm the p50 and p99 of every request's latency (start of the call until the answer
is in, pooled over the runs), the ratios tuned/reference, heartbeats per second of idle, and the
target (tuned p50 within 5% of the reference, p99 within 5% + 10 ms), and writes every run's raw
results to bench/results/presets-<UTC time>.json.

  bench/presets/run.py [--preset http1-nginx,http1-haproxy,redis,amqp091,stomp,lines] [--runs 3]
                       [--count 8] [--gap 2] [--build build/release] [--out bench/results]

Root, /dev/net/tun and the servers' Debian packages (scripts/deps.sh test installs them). Holds
/tmp/tcptune-linkem.lock for the whole run: one link per host.
"""
import argparse
import datetime
import json
import os
import signal
import statistics
import subprocess
import sys
from pathlib import Path

import servers

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "ab"))
from ab import machine_info  # noqa: E402  (the shared machine description of bench results)
ARMS = ("off", "tuned", "reference")


class Case:
    """One preset against one server: `make` builds the server from (work dir, port)."""

    def __init__(self, name, preset, protocol, port, server, nagle):
        self.name = name
        self.preset = preset
        self.protocol = protocol
        self.port = port
        self.server = server
        self.nagle = nagle  # whether the client library leaves Nagle on (its own source says)


UPSTREAM_PORT = 18190
# http.client, redis-py and pika set TCP_NODELAY themselves; stomp.py and the line client do not.
CASES = {
    "http1-nginx": Case("http1-nginx", "http1-client", "http1", 18180, "nginx", nagle=False),
    "http1-haproxy": Case("http1-haproxy", "http1-client", "http1", 18181, "haproxy", nagle=False),
    "redis": Case("redis", "redis-client", "redis", 16479, "redis", nagle=False),
    "amqp091": Case("amqp091", "amqp091", "amqp091", 15772, "rabbitmq", nagle=False),
    "stomp": Case("stomp", "stomp", "stomp", 16713, "rabbitmq", nagle=True),
    "lines": Case("lines", "lines", "lines", 17100, "lines", nagle=True),
}


def percentile(values, fraction):
    """Nearest-rank percentile."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(1, int(-(-fraction * len(ordered) // 1)))
    return ordered[min(rank, len(ordered)) - 1]


def start_servers(names, work):
    """One server per kind the chosen cases need (RabbitMQ serves AMQP and STOMP at once)."""
    started = {}
    for name in names:
        case = CASES[name]
        if case.server in started:
            continue
        if case.server in ("nginx", "haproxy") and "verifier" not in started:
            started["verifier"] = servers.BodyVerifier(work / "verifier", UPSTREAM_PORT)
            started["verifier"].start()
        if case.server == "nginx":
            server = servers.Nginx(work / "nginx", case.port, UPSTREAM_PORT)
        elif case.server == "haproxy":
            server = servers.Haproxy(work / "haproxy", case.port, UPSTREAM_PORT)
        elif case.server == "redis":
            server = servers.RedisServer(work / "redis", case.port)
        elif case.server == "rabbitmq":
            server = servers.RabbitMq(work / "rabbitmq", CASES["amqp091"].port, CASES["stomp"].port)
        else:
            server = servers.LineService(work / "lines", case.port)
        print(f"starting {case.server}", file=sys.stderr, flush=True)
        started[case.server] = server
        server.start()
    return started


def run_arm(options, case, arm, run, work, tcptune, linkem):
    policy = None
    if arm == "tuned":
        policy = servers.write_policy(work, case.preset, case.preset, case.port)
    if arm == "reference":
        servers.set_slow_start_after_idle(linkem, 0)
    try:
        result, done, records = servers.run_client(tcptune, case.protocol, case.port, work,
                                                   f"{case.name}-{arm}-{run}", policy=policy, gap=options.gap,
                                                   count=options.count, warmup=options.warmup, size=options.size,
                                                   timeout_s=120 + options.count * (options.gap + 3))
    finally:
        if arm == "reference":
            servers.set_slow_start_after_idle(linkem, 1)
    if result is None or result["errors"] or done.returncode != 0:
        raise RuntimeError(f"{case.name}/{arm} run {run}: {result and result['errors']} {done.stderr.strip()[-500:]}")
    closed = [r for r in records if r["event"] == "conn_close" and r.get("role") == "client"]
    result["heartbeats"] = sum(r.get("heartbeats", 0) for r in closed)
    result["idle_restarts"] = sum(r.get("idle_restarts", 0) for r in closed)
    result["shim_connections"] = len(closed)
    return result


def summarize(case, results, gap):
    samples = {arm: [x for r in results[arm] for x in r["latency_ms"]] for arm in ARMS}
    p50 = {arm: percentile(samples[arm], 0.50) for arm in ARMS}
    p99 = {arm: percentile(samples[arm], 0.99) for arm in ARMS}
    tuned_runs = results["tuned"]
    idle_s = sum(len(r["latency_ms"]) * gap for r in tuned_runs)
    heartbeats = sum(r["heartbeats"] for r in tuned_runs)
    met = p50["tuned"] <= 1.05 * p50["reference"] and p99["tuned"] <= 1.05 * p99["reference"] + 10
    return {
        "case": case.name, "preset": case.preset, "server": case.server, "client_nagle_on": case.nagle,
        "samples_ms": samples, "p50_ms": p50, "p99_ms": p99,
        "tuned_over_reference_p50": p50["tuned"] / p50["reference"],
        "tuned_over_reference_p99": p99["tuned"] / p99["reference"],
        "tuned_over_off_p50": p50["tuned"] / p50["off"],
        "heartbeats": heartbeats, "heartbeats_per_idle_s": heartbeats / idle_s if idle_s else 0.0,
        "tuned_idle_restarts": sum(r["idle_restarts"] for r in tuned_runs),
        "target": "tuned p50 <= 1.05 x reference p50 and tuned p99 <= 1.05 x reference p99 + 10 ms",
        "target_met": met, "runs": results,
    }


def print_table(summaries):
    print("| preset | server | client Nagle | off p50 / p99 | tuned p50 / p99 | reference p50 / p99 | tuned/ref p50 | "
          "tuned/ref p99 | heartbeats per s idle | idle restarts (tuned) | target |")
    print("|" + "---|" * 11)
    for s in summaries:
        cells = [f"{s['p50_ms'][arm]:.1f} / {s['p99_ms'][arm]:.1f}" for arm in ARMS]
        print(f"| {s['preset']} | {s['server']} | {'on' if s['client_nagle_on'] else 'off'} | {' | '.join(cells)} | "
              f"{s['tuned_over_reference_p50']:.3f} | {s['tuned_over_reference_p99']:.3f} | "
              f"{s['heartbeats_per_idle_s']:.2f} | {s['tuned_idle_restarts']} | "
              f"{'met' if s['target_met'] else 'NOT met'} |")


def build_info(build):
    """Which shim ran: the files' times, since the tree may have moved on since they were built."""
    files = {"tcptune": build / "bin" / "tcptune", "libtcptune.so": build / "lib" / "libtcptune.so"}
    return {name: {"path": str(path), "built": datetime.datetime.fromtimestamp(
        path.stat().st_mtime, datetime.timezone.utc).isoformat(timespec="seconds")}
            for name, path in files.items() if path.exists()}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default=",".join(CASES), help="comma-separated, from: " + ", ".join(CASES))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--count", type=int, default=8, help="requests after a gap, per run")
    parser.add_argument("--gap", type=float, default=2.0, help="seconds of silence before each request")
    parser.add_argument("--warmup", type=int, default=4)
    parser.add_argument("--size", type=int, default=60000)
    parser.add_argument("--build", default=str(ROOT / "build" / "release"))
    parser.add_argument("--out", default=str(ROOT / "bench" / "results"))
    options = parser.parse_args()
    names = [n for n in options.preset.split(",") if n]
    unknown = [n for n in names if n not in CASES]
    if unknown:
        parser.error(f"unknown preset case {unknown}; known: {', '.join(CASES)}")
    if os.geteuid() != 0 or not os.path.exists("/dev/net/tun"):
        print("bench/presets/run.py needs root and /dev/net/tun for the emulated link", file=sys.stderr)
        return 77
    kinds = {"nginx": servers.Nginx, "haproxy": servers.Haproxy, "redis": servers.RedisServer,
             "rabbitmq": servers.RabbitMq, "lines": servers.LineService}
    missing = sorted({kinds[CASES[n].server].missing() for n in names} - {None})
    if missing:
        print(f"missing: {', '.join(missing)} (scripts/deps.sh test installs them)", file=sys.stderr)
        return 77
    # SIGTERM unwinds like an error: the servers stop and the link comes down.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    build = Path(options.build).resolve()
    tcptune, linkem = build / "bin" / "tcptune", build / "bin" / "tcptune-linkem"
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    work = Path(options.out).resolve() / "logs" / f"presets-{stamp}"
    work.mkdir(parents=True, exist_ok=True)

    machine = machine_info()  # the commit the run starts from, before the tree moves on
    summaries = []
    aborted = None
    with servers.link_lock():
        link = servers.link_up(linkem)
        started = {}
        try:
            started = start_servers(names, work)
            for name in names:
                case = CASES[name]
                results = {arm: [] for arm in ARMS}
                for run in range(options.runs):
                    for arm in ARMS:
                        result = run_arm(options, case, arm, run, work, tcptune, linkem)
                        if servers.link_pid(linkem) != link.get("pid"):
                            aborted = f"{name}, {arm} run {run + 1}: {servers.REPLACED}"
                            break
                        results[arm].append(result)
                        print(f"  {name:<14} run {run + 1}/{options.runs} {arm:<9} p50 "
                              f"{statistics.median(result['latency_ms']):8.1f} ms  max "
                              f"{max(result['latency_ms']):8.1f} ms  heartbeats {result['heartbeats']}",
                              file=sys.stderr, flush=True)
                    if aborted:
                        break
                if aborted:
                    break  # the cases before this one ran over the link that was set up: kept
                summary = summarize(case, results, options.gap)
                summary["server_problems"] = started[case.server].problems()
                summaries.append(summary)
        finally:
            for server in reversed(list(started.values())):
                server.stop()
            if not servers.link_down(linkem, link) and not aborted:
                aborted = servers.REPLACED

    print_table(summaries)
    for s in summaries:
        if s["server_problems"]:
            print(f"{s['case']}: the server logged {s['server_problems'][:3]}")
    if aborted:
        print(f"aborted at {aborted}", file=sys.stderr)
    document = {"bench": "presets", "started": stamp, "machine": machine, "build": build_info(build),
                "link": link, "aborted": aborted, "options": vars(options), "summaries": summaries}
    out = Path(options.out) / f"presets-{stamp}.json"
    out.write_text(json.dumps(document, indent=1) + "\n")
    print(f"\nraw results: {out}")
    return 1 if aborted else 0

if __name__ == "__main__":
    sys.exit(main())
