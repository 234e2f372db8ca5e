#!/usr/bin/env python3
"""What a connection costs with records on: a loop of loopback connect + accept + close, as it is
and under `tcptune run`, interleaved round by round, in one run.

    bench/connect_loop/run.py [--build build/release] [--rounds 9] [--connections 3000] [--warmup 20]
                              [--realtime] [--netns] [--cpu N] [--compare NAME=BUILD] [--floor] [--neighbour]
                              [--out bench/results]
    bench/connect_loop/run.py --realtime --netns --cpu 1   # as the README's figures were taken (root)
    bench/connect_loop/run.py --quick --check        # the smoke run (ctest -R bench.connect_loop_quick)

The program is tcptune_connect_loop (connect_loop.c): one thread, both ends, CONNECTIONS times
socket + connect to its own listener + accept + close of both ends, after --warmup untimed pairs;
it times the loop itself (CLOCK_MONOTONIC) and prints one JSON line. Arms, each a fresh process:
  bare      the program as it is;
  no_log    `tcptune run --no-log -- PROGRAM`: both ends tuned (the built-in default policy), no
            records;
  log       `tcptune run -- PROGRAM`: the same with tcptune run's default jsonl log (put under
            this run's work directory through XDG_STATE_HOME), a conn_open and a conn_close for
            every connection's two ends, and the summary;
  NAME:no_log, NAME:log   the same with the tcptune of another build tree, for each --compare
            NAME=BUILD (a before/after in one run);
  floor:records, floor:getpid   with --floor: the program without tcptune, making itself system
            calls the shim makes per pair, and nothing else (`--floor` of connect_loop.c): those
            the records need (getsockname of the client, TCP_INFO of each end: the floor of the
            log arm), and the getpid before each close that the shim made before its vfork hook;
  neighbour with --neighbour (and --cpu): the program as it is while tcptune_neighbour_load
            (neighbour_load.c) keeps another CPU busy with memory work: what a busy thread beside
            the loop costs it, as tcptune's worker is while it formats and writes the records.
Every round runs every arm once, in an order that rotates from round to round; each tcptune
arm's loop time is divided by the bare loop's of the same round, and the median of those ratios
over the rounds is the figure (a loaded machine slows whole rounds; pairing cancels part of
it). The per-connection cost is the median of (arm - bare) / CONNECTIONS, in microseconds per
connection pair (two sockets: a client and an accepted one). For each log run the log is read:
conn_open and conn_close records (every socket's must be there), the summary's dropped_records,
and `dropped` records. Also the whole process's wall time (tcptune run's start-up, the program,
its exit flush, and tcptune run's table afterwards), and the CPU time of the loop's thread (its ratio
to the bare loop's, which other load's steal inflates less than the wall clock) and of the
rest of the process (tcptune's worker thread).

--cpu N keeps every arm's loop thread on CPU N after its warm-up (tcptune's worker, started by
the first connection, keeps every CPU): on a VM whose CPUs run at different speeds the arms are
then compared on one. With it, the time a cache line takes from CPU N to another
(tcptune_line_transfer) goes with the results: a record handed to the worker pays it for each
line it fills, as the system calls it needs pay theirs (floor:records).

--realtime runs every arm under SCHED_FIFO priority 10 (root or CAP_SYS_NICE), the tcptune
worker thread included, so that other load on the machine does not preempt the loop; --netns
runs each process in a network namespace of its own (root), so that the TIME_WAIT sockets of
earlier runs (thousands a round) do not slow later ones' port searches. The load average goes
with the results. Writes bench/results/connect-loop-<UTC time>.json.
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from rounds import cpu_times, median_of, rotated  # noqa: E402
SKIP = 77
RUN_TIMEOUT_S = 120
TARGETS = {"no_log": 1.1, "log": 1.3}  # issue 24, part 1: ratio to the bare loop


def clean_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith("TCPTUNE_") and k != "LD_PRELOAD"}
    env["LC_ALL"] = "C"
    return env


def read_log(path):
    """What the log says: record counts by event and role, and the summary's figures."""
    found = {"conn_open": 0, "conn_open_client": 0, "conn_open_server": 0, "conn_open_listener": 0, "conn_close": 0,
             "dropped_events": 0, "dropped_in_dropped_events": 0, "summary": None, "lines": 0, "bad_lines": 0,
             "bytes": path.stat().st_size}
    with open(path) as log:
        for line in log:
            found["lines"] += 1
            try:
                record = json.loads(line)
            except ValueError:
                found["bad_lines"] += 1
                continue
            event = record.get("event")
            if event == "conn_open":
                found["conn_open"] += 1
                role = record.get("role")
                if role in ("client", "server", "listener"):
                    found[f"conn_open_{role}"] += 1
            elif event == "conn_close":
                found["conn_close"] += 1
            elif event == "dropped":
                found["dropped_events"] += 1
                found["dropped_in_dropped_events"] += record.get("records", 0)
            elif event == "summary":
                found["summary"] = {k: record.get(k) for k in ("connections", "dropped_records", "write_clock")}
    return found


def command_for(arm, program_args, builds, realtime, netns):
    build, mode = builds[arm]
    program = [str(builds["bare"][0] / "bin" / "tcptune_connect_loop")] + program_args
    if mode in ("bare", "neighbour"):
        command = program
    elif mode.startswith("floor_"):
        command = program + ["--floor", mode.removeprefix("floor_")]
    else:
        command = [str(build / "bin" / "tcptune"), "run"] + (["--no-log"] if mode == "no_log" else []) + ["--"] + program
    if netns:
        # A namespace of its own: loopback up, no other run's TIME_WAIT sockets.
        command = ["unshare", "--net", "sh", "-c", 'ip link set lo up && exec "$@"', "sh"] + command
    if realtime:
        command = ["chrt", "--fifo", "10"] + command
    return command


def run_once(arm, program_args, builds, work, label, realtime, netns, neighbour_cpu=None):
    state = work / label
    shutil.rmtree(state, ignore_errors=True)
    state.mkdir(parents=True)
    env = clean_env()
    env["XDG_STATE_HOME"] = str(state)  # tcptune run's default log goes there
    load = os.getloadavg()[0]
    neighbour = None
    if builds[arm][1] == "neighbour":
        neighbour = subprocess.Popen([str(builds[arm][0] / "bin" / "tcptune_neighbour_load"), str(neighbour_cpu)])
        time.sleep(0.05)  # busy before the loop starts
    started = time.monotonic()
    try:
        proc = subprocess.run(command_for(arm, program_args, builds, realtime, netns), env=env, capture_output=True,
                              text=True, timeout=RUN_TIMEOUT_S, cwd=state)
    except subprocess.TimeoutExpired:
        return {"arm": arm, "ok": False, "error": f"no result within {RUN_TIMEOUT_S} s"}
    finally:
        if neighbour is not None:
            neighbour.kill()
            neighbour.wait()
    result = {"arm": arm, "ok": proc.returncode == 0, "returncode": proc.returncode,
              "wall_s": round(time.monotonic() - started, 4), "load_1min_before": load}
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    try:
        result["result"] = json.loads(lines[-1])
    except (IndexError, ValueError):
        result["ok"] = False
    if not result["ok"]:
        result["error"] = (proc.stderr.strip() or proc.stdout.strip())[-500:]
    if builds[arm][1] == "log":
        logs = sorted(state.glob("tcptune/*.jsonl"))
        if len(logs) != 1:
            result["ok"] = False
            result["error"] = f"expected one log under {state}/tcptune, found {len(logs)}"
        else:
            result["log"] = read_log(logs[0])
    shutil.rmtree(state, ignore_errors=True)  # a log run's log is some megabytes
    return result


def summarize(runs, arms, connections):
    by_round = {}
    for run in runs:
        if run["ok"]:
            by_round.setdefault(run["arm"], {})[run["round"]] = run
    bare = by_round.get("bare", {})
    summary = {}
    for arm in arms:
        mine = by_round.get(arm, {})
        seconds = [r["result"]["seconds"] for r in mine.values()]
        def per_pair_us(run, key):
            return 1e6 * run["result"][key] / connections

        entry = {"runs_ok": len(mine), "seconds_median": median_of(seconds),
                 "seconds_min": min(seconds) if seconds else None, "seconds_max": max(seconds) if seconds else None,
                 "us_per_connection_median": median_of([r["result"]["us_per_connection"] for r in mine.values()]),
                 "thread_cpu_us_per_connection_median": median_of([per_pair_us(r, "thread_cpu_seconds")
                                                                   for r in mine.values()]),
                 "worker_cpu_us_per_connection_median": median_of([
                     per_pair_us(r, "process_cpu_seconds") - per_pair_us(r, "thread_cpu_seconds") for r in mine.values()]),
                 "wall_s_median": median_of([r["wall_s"] for r in mine.values()])}
        if arm != "bare":
            rounds = sorted(set(mine) & set(bare))
            ratios = [mine[r]["result"]["seconds"] / bare[r]["result"]["seconds"] for r in rounds]
            extra = [1e6 * (mine[r]["result"]["seconds"] - bare[r]["result"]["seconds"]) / connections for r in rounds]
            cpu_ratios = [mine[r]["result"]["thread_cpu_seconds"] / bare[r]["result"]["thread_cpu_seconds"]
                          for r in rounds]
            entry.update({"ratio_median": median_of(ratios), "ratios": [round(x, 4) for x in ratios],
                          "extra_us_per_connection_median": median_of(extra),
                          "thread_cpu_ratio_median": median_of(cpu_ratios),
                          "wall_ratio_median": median_of([mine[r]["wall_s"] / bare[r]["wall_s"] for r in rounds])})
        logs = [r["log"] for r in mine.values() if "log" in r]
        if logs:
            dropped = [(log["summary"] or {}).get("dropped_records") for log in logs]
            entry.update({"dropped_records": dropped, "dropped_records_max": max((d or 0) for d in dropped),
                          "conn_open_min": min(log["conn_open"] for log in logs),
                          "conn_close_min": min(log["conn_close"] for log in logs),
                          "log_bytes_median": median_of([log["bytes"] for log in logs])})
        summary[arm] = entry
    return summary


def checks_for(results, arms, expected_sockets):
    checks = []
    for run in results["runs"]:
        label = run["label"]
        checks.append((run["ok"], f"{label}: ran ({run.get('error', 'ok')})"))
        log = run.get("log")
        if log is None:
            continue
        summary = log["summary"] or {}
        checks.append((log["summary"] is not None, f"{label}: the log has its summary"))
        checks.append((log["bad_lines"] == 0, f"{label}: every line is JSON ({log['bad_lines']} not)"))
        checks.append((log["conn_close"] == expected_sockets,
                       f"{label}: {log['conn_close']} conn_close records for {expected_sockets} sockets"))
        checks.append((log["conn_open_client"] + log["conn_open_server"] == expected_sockets,
                       f"{label}: {log['conn_open_client']} client and {log['conn_open_server']} server conn_open "
                       f"records for {expected_sockets} sockets"))
        checks.append((summary.get("connections") == expected_sockets,
                       f"{label}: the summary counts {summary.get('connections')} connections of {expected_sockets}"))
        checks.append((summary.get("dropped_records") == 0 and log["dropped_events"] == 0,
                       f"{label}: dropped_records {summary.get('dropped_records')}, {log['dropped_events']} dropped "
                       f"records"))
    return checks


def line_transfer(build, cpu):
    """The time a cache line takes from the loop's CPU to another (tcptune_line_transfer), which a
    record handed to the worker pays for each line it fills; None without --cpu or a second CPU."""
    others = sorted(os.sched_getaffinity(0) - {cpu}) if cpu is not None else []
    if not others:
        return None
    try:
        proc = subprocess.run([str(build / "bin" / "tcptune_line_transfer"), str(cpu), str(others[0])],
                              capture_output=True, text=True, timeout=60)
        return json.loads(proc.stdout) if proc.returncode == 0 else None
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None


def fmt(value, spec):
    return "-" if value is None else format(value, spec)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=str(ROOT / "build" / "release"), help="build tree (default build/release)")
    parser.add_argument("--rounds", type=int, default=9, help="rounds; each runs every arm once")
    parser.add_argument("--connections", type=int, default=3000, help="timed connection pairs per run")
    parser.add_argument("--warmup", type=int, default=20, help="untimed connection pairs first")
    parser.add_argument("--realtime", action="store_true",
                        help="every arm under SCHED_FIFO priority 10 (root or CAP_SYS_NICE)")
    parser.add_argument("--cpu", type=int, metavar="N",
                        help="every arm's loop thread on CPU N only, after its warm-up (tcptune's worker keeps every "
                             "CPU): where the CPUs differ in speed, as on some VMs, the arms are then compared on one")
    parser.add_argument("--netns", action="store_true", help="every process in a network namespace of its own (root)")
    parser.add_argument("--compare", action="append", default=[], metavar="NAME=BUILD",
                        help="also the no_log and log arms with the tcptune of another build tree")
    parser.add_argument("--floor", action="store_true",
                        help="also the loop without tcptune making the shim's added system calls itself")
    parser.add_argument("--neighbour", action="store_true",
                        help="also the loop while another CPU is kept busy with memory work (needs --cpu)")
    parser.add_argument("--quick", action="store_true", help="the smoke run: 2 rounds of 300 connections")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 unless every run ran and every log run's log has every socket's conn_open and "
                             "conn_close, the summary, and no record dropped")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.connections = 2, 300

    build = Path(args.build).resolve()
    builds = {"bare": (build, "bare"), "no_log": (build, "no_log"), "log": (build, "log")}
    for named in args.compare:
        name, _, other = named.partition("=")
        if not name or not other:
            parser.error(f"--compare {named}: expected NAME=BUILD")
        builds[f"{name}:no_log"] = (Path(other).resolve(), "no_log")
        builds[f"{name}:log"] = (Path(other).resolve(), "log")
    if args.floor:
        builds["floor:records"] = (build, "floor_records")
        builds["floor:getpid"] = (build, "floor_getpid")
    others = sorted(os.sched_getaffinity(0) - {args.cpu}) if args.cpu is not None else []
    neighbour_cpu = others[0] if others else None
    if args.neighbour:
        if neighbour_cpu is None:
            parser.error("--neighbour needs --cpu N and another CPU")
        builds["neighbour"] = (build, "neighbour")
    needed = [build / "bin" / "tcptune_connect_loop"] + [b / "bin" / "tcptune" for b, mode in builds.values()
                                                          if mode in ("no_log", "log")]
    needed += [build / "bin" / "tcptune_neighbour_load"] if args.neighbour else []
    absent = sorted({str(p) for p in needed if not p.exists()})
    if absent:
        print(f"not built: {', '.join(absent)} (cmake --build --preset release --target tcptune_cli tcptune "
              f"tcptune_connect_loop)", file=sys.stderr)
        return 1
    if (args.realtime or args.netns) and os.geteuid() != 0:
        print("--realtime and --netns need root", file=sys.stderr)
        return SKIP
    if args.netns and shutil.which("unshare") is None:
        print("--netns needs unshare (util-linux)", file=sys.stderr)
        return SKIP

    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out_dir = Path(args.out).resolve()
    work = out_dir / "logs" / f"connect-loop-{stamp}"
    work.mkdir(parents=True, exist_ok=True)
    arms = list(builds)
    program_args = [str(args.connections), "--warmup", str(args.warmup)] + (
        ["--cpu", str(args.cpu)] if args.cpu is not None else [])
    results = {
        "bench": "connect_loop", "command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:]), "started": stamp,
        "machine": {"kernel": platform.release(), "cpus": os.cpu_count(), "load_average_start": list(os.getloadavg()),
                    "cache_line_transfer": line_transfer(build, args.cpu)},
        "setup": {"rounds": args.rounds, "connections": args.connections, "warmup": args.warmup,
                  "realtime": args.realtime, "netns": args.netns, "cpu": args.cpu,
                  "arms": {arm: {"build": str(b), "mode": mode} for arm, (b, mode) in builds.items()},
                  "commands": {arm: command_for(arm, program_args, builds, args.realtime, args.netns) for arm in arms}},
        "runs": [],
    }
    clock = time.monotonic()
    busy0, steal0, total0 = cpu_times()
    for round_index in range(args.rounds):
        for arm in rotated(arms, round_index):
            label = f"{arm.replace(':', '-')}-round{round_index + 1}"
            run = run_once(arm, program_args, builds, work, label, args.realtime, args.netns, neighbour_cpu)
            run["label"], run["round"] = label, round_index + 1
            results["runs"].append(run)
            res = run.get("result", {})
            log = run.get("log")
            extra = "" if log is None else (f"  log: {log['conn_open']} conn_open, {log['conn_close']} conn_close, "
                                            f"dropped_records {(log['summary'] or {}).get('dropped_records')}")
            print(f"  {label:<26} {fmt(res.get('seconds'), '.4f')} s  {fmt(res.get('us_per_connection'), '6.2f')} us "
                  f"per pair  wall {run.get('wall_s', 0):.3f} s{extra}{'' if run['ok'] else '  FAILED: ' + run['error']}",
                  flush=True)
    busy1, steal1, total1 = cpu_times()
    ticks = max(1, total1 - total0)
    cpus = os.cpu_count() or 1
    results["load"] = {"load_avg_start": results["machine"]["load_average_start"], "load_avg_end": list(os.getloadavg()),
                       "busy_cpus": round((busy1 - busy0) / ticks * cpus, 2),
                       "steal_cpus": round((steal1 - steal0) / ticks * cpus, 3)}
    results["seconds"] = round(time.monotonic() - clock, 1)
    results["summary"] = summarize(results["runs"], arms, args.connections)
    expected_sockets = 2 * (args.connections + args.warmup)
    checks = checks_for(results, arms, expected_sockets)
    results["checks"] = [{"ok": ok, "message": message} for ok, message in checks]
    results["targets"] = {}
    for arm, limit in TARGETS.items():
        ratio = results["summary"][arm].get("ratio_median")
        results["targets"][arm] = {"at_most": limit, "ratio": ratio, "met": ratio is not None and ratio <= limit}
    results["targets"]["no_record_dropped"] = {"met": results["summary"]["log"].get("dropped_records_max") == 0}

    out_path = out_dir / f"connect-loop-{stamp}.json"
    out_path.write_text(json.dumps(results, indent=1) + "\n")
    shutil.rmtree(work, ignore_errors=True)
    load = results["load"]
    print(f"\n{args.connections} connection pairs (connect + accept + close of both ends) per run, {args.rounds} "
          f"interleaved rounds{', SCHED_FIFO' if args.realtime else ''}{', a network namespace per run' if args.netns else ''}"
          f"; load average {load['load_avg_start'][0]:.2f} at the start, {load['load_avg_end'][0]:.2f} at the end, "
          f"{load['busy_cpus']} CPUs busy on average"
          + (f"; the loop on CPU {args.cpu}, a cache line from it to CPU {transfer['cpus'][1]} in "
             f"{transfer['ns_per_transfer']:.0f} ns" if (transfer := results["machine"]["cache_line_transfer"]) else "")
          + "\n")
    print("| arm | loop s, median [min-max] | us per pair | / bare (paired median) | + us per pair | "
          "loop thread's CPU / bare | worker's CPU, us per pair | process wall s | dropped_records (max) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for arm in arms:
        s = results["summary"][arm]
        print(f"| {arm} | {fmt(s['seconds_median'], '.4f')} [{fmt(s['seconds_min'], '.4f')}-{fmt(s['seconds_max'], '.4f')}] | "
              f"{fmt(s['us_per_connection_median'], '.2f')} | {fmt(s.get('ratio_median', 1.0), '.3f')} | "
              f"{fmt(s.get('extra_us_per_connection_median', 0.0), '+.2f')} | "
              f"{fmt(s.get('thread_cpu_ratio_median', 1.0), '.3f')} | {fmt(s['worker_cpu_us_per_connection_median'], '.1f')} | "
              f"{fmt(s['wall_s_median'], '.3f')} | {s.get('dropped_records_max', '-')} |")
    for arm, target in results["targets"].items():
        if "at_most" in target:
            print(f"target {arm}: at most {target['at_most']}x bare: {fmt(target['ratio'], '.3f')}x, "
                  f"{'met' if target['met'] else 'MISSED'}")
    print(f"target: no record dropped: {'met' if results['targets']['no_record_dropped']['met'] else 'MISSED'}")
    print(f"\nwrote {out_path}")
    failures = [message for ok, message in checks if not ok]
    for message in failures[:20]:
        print(f"FAILED: {message}")
    return 1 if args.check and failures else 0


if __name__ == "__main__":
    sys.exit(main())
