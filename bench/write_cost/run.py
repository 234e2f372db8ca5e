#!/usr/bin/env python3
"""What tcptune adds to a stream of small writes, end to end, against the same program without it.

`small_writes` (bench/scenarios) streams 1,000,000 16-byte writes over one loopback connection
with Nagle on (no TCP option set by the program) and reports the time until the receiver has
read everything. Both ends run under each arm:
  bare      no tcptune: the baseline of the round
  preload   LD_PRELOAD=libtcptune.so alone (no log: the writes are not measured)
  run       `tcptune run -- ...` with its default log (jsonl, where tcptune puts it): every write
            timed and counted, its conn_close records written
and, with --arms, also:
  preload-log  LD_PRELOAD with TCPTUNE_LOG (the log without `tcptune run` around the program)
  run-no-log   `tcptune run --no-log` (tcptune replaces itself with the program)
The arms run interleaved, in a rotated order each round (round 1: bare, preload, run; round 2:
preload, run, bare; ...), so a change in the machine's load falls on every arm alike. Each
arm's figure is the sender's wall time; its ratio is to bare's in the same round, and the
reported ratio is the median of those. The CPU time of both ends (user + system, tcptune's own
threads and the `tcptune run` parent included) is reported beside it: on a machine shared with
other work it moves less than the wall time.

The run arm's log must hold the sender's conn_close with every write counted (`writes` equal
to the writes made and `bytes` to what they carried): a run that lost count fails the bench.
Its log files are removed afterwards.

  bench/write_cost/run.py                    # 7 rounds of 1,000,000 writes (about 2 minutes)
  bench/write_cost/run.py --realtime          # under SCHED_FIFO: the machine's other load waits
  bench/write_cost/run.py --rounds 3 --arms bare,preload,run,preload-log,run-no-log
  bench/write_cost/run.py --realtime --other-build ../main/build/release   # before and after
  bench/write_cost/run.py --quick --check    # the smoke run (ctest -R bench.write_cost_quick)

Writes bench/results/write-cost-<UTC time>.json (every run, the load average before each, the
medians and ratios) and prints a table.
"""
import argparse
import datetime
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from loopback_ports import free_port, listening  # noqa: E402

ALL_ARMS = ("bare", "preload", "run", "preload-log", "run-no-log")


def clean_env():
    return {k: v for k, v in os.environ.items() if not k.startswith("TCPTUNE_") and k != "LD_PRELOAD"}


def arm_command(arm, build, shim_build, program, log_dir):
    """The command prefix and environment of one end under `arm`, with the shim of
    `shim_build` (another build's for an arm named NAME@other: `tcptune run` is told of it by
    TCPTUNE_SHIM)."""
    arm = arm.split("@")[0]
    env = clean_env()
    tcptune = str(build / "bin" / "tcptune")
    shim = str(shim_build / "lib" / "libtcptune.so")
    if shim_build != build:
        env["TCPTUNE_SHIM"] = shim
    if arm == "bare":
        return [], env
    if arm in ("preload", "preload-log"):
        env["LD_PRELOAD"] = shim
        if arm == "preload-log":
            env["TCPTUNE_LOG"] = str(log_dir / f"{program}-{{pid}}.jsonl")
        return [], env
    if arm == "run":
        return [tcptune, "run", "--"], env
    if arm == "run-no-log":
        return [tcptune, "run", "--no-log", "--"], env
    raise ValueError(arm)


LOG_LINE = re.compile(r"^tcptune: log (\S+)", re.MULTILINE)


def run_pair(build, other_build, arm, writes, log_dir):
    """One run of small_writes under `arm`: the sender's JSON line and the log files that
    `tcptune run` named."""
    small_writes = str(build / "bin" / "small_writes")
    port = free_port()
    endpoint = f"127.0.0.1:{port}"
    prefix, env = arm_command(arm, build, other_build if arm.endswith("@other") else build, "small_writes", log_dir)
    receiver = subprocess.Popen(prefix + [small_writes, "receive", "--listen", endpoint], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(1000):
            if listening(port):
                break
            if receiver.poll() is not None:
                raise RuntimeError(f"{arm}: the receiver exited: {receiver.stderr.read().strip()}")
            time.sleep(0.005)
        else:
            raise RuntimeError(f"{arm}: the receiver did not listen")
        sender = subprocess.Popen(prefix + [small_writes, "send", "--connect", endpoint, "--writes", str(writes),
                                            "--size", "16"], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        out, sender_err = sender.communicate(timeout=600)
        if sender.returncode != 0:
            raise RuntimeError(f"{arm}: sender exit {sender.returncode}: {sender_err.strip()}")
        receiver_err = receiver.communicate(timeout=60)[1]
        if receiver.returncode != 0:
            raise RuntimeError(f"{arm}: receiver exit {receiver.returncode}: {receiver_err.strip()}")
    finally:
        if receiver.poll() is None:
            receiver.kill()
            receiver.wait()
    logs = LOG_LINE.findall(sender_err) + LOG_LINE.findall(receiver_err)
    return json.loads(out), logs


class ChildUsage:
    """CPU seconds and context switches of the children reaped since the last call (both ends
    of a run, their threads and any process they waited for: RUSAGE_CHILDREN)."""

    def __init__(self):
        self.last = self.total()

    @staticmethod
    def total():
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime, usage.ru_nvcsw + usage.ru_nivcsw

    def take(self):
        now = self.total()
        spent = (now[0] - self.last[0], now[1] - self.last[1])
        self.last = now
        return spent


def sender_records(log_paths):
    """The sender's conn_close and summary records in the run's logs (those that counted
    writes: the receiver makes none); None where there is none."""
    best = {"conn_close": None, "summary": None}
    for path in log_paths:
        try:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
        except OSError:
            continue
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            event = record.get("event")
            if event in best and record.get("writes", 0) > (best[event] or {}).get("writes", 0):
                best[event] = record
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build/release")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--writes", type=int, default=1000000)
    parser.add_argument("--arms", default="bare,preload,run",
                        help=f"comma-separated, from {','.join(ALL_ARMS)}; bare is always run")
    parser.add_argument("--realtime", action="store_true",
                        help="run every arm under SCHED_FIFO priority 10 (root or CAP_SYS_NICE): the other load "
                             "of the machine then waits, as on an idle machine")
    parser.add_argument("--other-build", default=None,
                        help="another build tree (an earlier commit's, with at least the targets tcptune and "
                             "tcptune_core): its shim runs as the arms preload@other and run@other, beside this "
                             "build's, in the same rounds")
    parser.add_argument("--quick", action="store_true", help="2 rounds of 100,000 writes")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 unless every run completed and each log counted every write")
    parser.add_argument("--out", default=None, help="results directory (default bench/results)")
    options = parser.parse_args()
    if options.quick:
        options.rounds, options.writes = 2, 100000
    arms = [a for a in options.arms.split(",") if a]
    if any(a not in ALL_ARMS for a in arms):
        parser.error(f"--arms: one of {', '.join(ALL_ARMS)}")
    other_build = Path(options.other_build).resolve() if options.other_build else None
    if other_build:
        arms += [f"{a}@other" for a in arms if a != "bare"]
    if "bare" not in arms:
        arms.insert(0, "bare")
    build = Path(options.build).resolve()
    for needed in (build / "bin" / "small_writes", build / "bin" / "tcptune", build / "lib" / "libtcptune.so"):
        if not needed.exists():
            print(f"write_cost: {needed} is missing (cmake --build --preset release --target small_writes "
                  "tcptune_cli tcptune tcptune_core)", file=sys.stderr)
            return 2
    if os.path.exists("/etc/tcptune/policy.toml"):
        print("write_cost: /etc/tcptune/policy.toml exists, so no arm would run the built-in default; skipped",
              file=sys.stderr)
        return 77

    if options.realtime:
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))  # inherited by every child
        except PermissionError:
            print("write_cost: --realtime needs root or CAP_SYS_NICE", file=sys.stderr)
            return 2
    seconds = {arm: [] for arm in arms}
    cpu = {arm: [] for arm in arms}
    ratios = {arm: [] for arm in arms}
    cpu_ratios = {arm: [] for arm in arms}
    raw = []
    miscounts = []
    usage = ChildUsage()
    with tempfile.TemporaryDirectory(prefix="tcptune-write-cost-") as tmp:
        log_dir = Path(tmp)
        for round_index in range(options.rounds):
            order = arms[round_index % len(arms):] + arms[:round_index % len(arms)]
            this_round = {}
            for arm in order:
                load = os.getloadavg()[0]
                usage.take()
                result, logs = run_pair(build, other_build, arm, options.writes, log_dir)
                spent, switches = usage.take()
                logs += [str(p) for p in log_dir.glob("*.jsonl")]
                entry = {"round": round_index + 1, "arm": arm, "load1": load, "cpu_s": spent,
                         "context_switches": switches, "result": result}
                if arm.split("@")[0] in ("run", "preload-log"):
                    records = sender_records(logs)
                    close = records["conn_close"]
                    entry["conn_close"] = {k: close.get(k) for k in ("writes", "bytes", "write_latency_us")} \
                        if close else None
                    entry["write_clock"] = (records["summary"] or {}).get("write_clock")
                    if close is None or close.get("writes") != options.writes or \
                            close.get("bytes") != options.writes * 16:
                        miscounts.append(entry)
                for path in logs:
                    Path(path).unlink(missing_ok=True)
                raw.append(entry)
                this_round[arm] = (result["seconds"], spent)
                seconds[arm].append(result["seconds"])
                cpu[arm].append(spent)
                print(f"round {round_index + 1}/{options.rounds} {arm:17} {result['seconds']:.3f} s wall "
                      f"{spent:.3f} s cpu {switches} switches {result.get('segments')} segments (load {load:.1f})", file=sys.stderr, flush=True)
            for arm in arms:
                ratios[arm].append(this_round[arm][0] / this_round["bare"][0])
                cpu_ratios[arm].append(this_round[arm][1] / this_round["bare"][1])

    loads = [entry["load1"] for entry in raw]
    print(f"\n{options.writes:,} writes of 16 bytes over loopback, Nagle on, both ends under each arm; "
          f"{options.rounds} interleaved rounds{' under SCHED_FIFO' if options.realtime else ''}; "
          f"load average {min(loads):.1f} to {max(loads):.1f}\n")
    print("| arm | wall s, median [min-max] | wall / bare (median of rounds) | CPU s (both ends) | CPU / bare "
          "| segments sent | context switches |")
    print("|---|---|---|---|---|---|---|")
    medians = {}
    for arm in arms:
        medians[arm] = {
            "seconds": statistics.median(seconds[arm]),
            "wall_ratio": statistics.median(ratios[arm]),
            "cpu_s": statistics.median(cpu[arm]),
            "cpu_ratio": statistics.median(cpu_ratios[arm]),
            "segments": statistics.median([e["result"].get("segments", 0) for e in raw if e["arm"] == arm]),
            "context_switches": statistics.median([e["context_switches"] for e in raw if e["arm"] == arm]),
        }
        m = medians[arm]
        print(f"| {arm} | {m['seconds']:.3f} [{min(seconds[arm]):.3f}-{max(seconds[arm]):.3f}] | "
              f"{m['wall_ratio']:.3f} | {m['cpu_s']:.3f} | {m['cpu_ratio']:.3f} | {m['segments']:.0f} | "
              f"{m['context_switches']:.0f} |")
    clocks = {}
    for entry in raw:
        if "write_clock" in entry:
            clocks.setdefault(entry["arm"], []).append(entry["write_clock"])
    if clocks:
        print("\nthe write clock at exit (the sender's summary): " + "; ".join(
            f"{arm}: " + ", ".join(f"{name} x{names.count(name)}" for name in sorted(set(map(str, names))))
            for arm, names in clocks.items()))
    if "run" in medians:
        ratio = medians["run"]["wall_ratio"]
        print(f"\nrun / bare {ratio:.3f} (target at most 1.10: {'met' if ratio <= 1.10 else 'NOT met'})")
    for entry in miscounts:
        print(f"write_cost: round {entry['round']} {entry['arm']}: the log did not count every write: "
              f"{entry.get('conn_close')}", file=sys.stderr)

    out_dir = Path(options.out) if options.out else Path(__file__).resolve().parent.parent / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    path = out_dir / f"write-cost-{stamp}.json"
    commit = subprocess.run(["git", "-C", str(Path(__file__).resolve().parent), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    clocksource = Path("/sys/devices/system/clocksource/clocksource0/current_clocksource")
    path.write_text(json.dumps({
        "machine": {"kernel": platform.release(), "cpus": os.cpu_count(),
                    "clocksource": clocksource.read_text().strip() if clocksource.exists() else None,
                    "load_before_each_run": [min(loads), max(loads)]},
        "commit": commit, "options": vars(options), "runs": raw, "medians": medians,
        "miscounted_runs": len(miscounts)}, indent=1) + "\n")
    print(f"results: {path}")
    if options.check and miscounts:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
