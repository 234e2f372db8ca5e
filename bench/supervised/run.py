#!/usr/bin/env python3
"""Supervised mode's cost: a loopback connect() alone, a loop of connect + accept + close, and an
untrapped system call, timed inside the program, as it is, under the shim and under
`tcptune run --supervise`, with the CPU time tcptune spends per trapped call.

    bench/supervised/run.py [--build build/release] [--rounds 9] [--connects 2000] [--warmup 100]
                            [--loop-connections 3000] [--measure connect,loop,syscall]
                            [--calls getppid,write_devnull,send_udp] [--loops 500000]
                            [--send-loops 100000] [--reps 7] [--no-log] [--before TCPTUNE]
                            [--quiet-wait 120] [--quiet-cpus 0.3] [--out bench/results]
    bench/supervised/run.py --quick --check     # the ctest smoke run

The program is tcptune_supervised_cost (supervised_cost.c); the loop runs its statically linked
build, tcptune_supervised_cost_static, as the programs supervised mode is for. The arms, each a
fresh process:
  plain             the program as it is;
  floor             (connect, loop) the program with --notify-floor: the supervisor's longest
                    filter on its own main thread, and a thread of its own that answers each
                    trapped call at once (CONTINUE), waiting in the kernel's receive with
                    synchronous wake-up where the kernel has it, as tcptune does;
  floor_process     (connect, loop) the same, answered by a child process of the program's
                    (--notify-floor-process): a supervisor is another process, so each round trip
                    switches address spaces twice. The kernel's round trip with no supervisor's
                    work: the least any supervisor pays, and what "the kernel's round trip" means
                    below. Not for the system calls: there supervised_empty is the filter alone;
  shim              (connect, syscall) `tcptune run --policy P`: LD_PRELOAD, the shim tunes from
                    inside (not for the loop: its program is static);
  supervised        `tcptune run --supervise --policy P`: the filter traps connect() and listen(),
                    the supervisor duplicates the socket (pidfd_getfd), applies the rule and lets
                    the call go on;
  supervised_empty  (connect, syscall) `tcptune run --supervise --policy empty.toml` (nodelay
                    "keep", nothing else): the same trap and round trip, with nothing to apply;
  supervised_hand_over  (connect, loop) `container_profile tcptune run --supervise --policy P`:
                    tcptune under a filter that refuses pidfd_getfd, as Docker's and containerd's
                    default seccomp profiles do without CAP_SYS_PTRACE (tests/supervised/
                    container_profile.c, built with the tests). socket() is trapped too: the
                    supervisor makes the socket and hands it over (SECCOMP_ADDFD_FLAG_SEND), and
                    tunes its held reference at connect: two trapped calls per connection. Left
                    out when container_profile is not built. The connect runs time socket()
                    alone too (socket_us), and the two together (socket_connect_us);
  supervised_before, supervised_hand_over_before  (with --before TCPTUNE) the two supervised
                    arms with another tcptune binary (an earlier build), in the same rounds;
  in_process        (system calls only) the program with --filter-midway: its loops run without
                    a filter, then it installs the supervisor's longest filter on itself and
                    runs them again. The filter's cost within one process, free of what differs
                    from one process to the next (where the scheduler puts it, how its memory is
                    laid out: on a small VM that moves a tight loop by tens of per cent, as the
                    shim arm shows on getppid, which the shim does not hook).
  in_process_allow_all  (system calls only) the same with a one-instruction filter that allows
                    every call: what any seccomp filter costs (the kernel's slower way into a
                    system call, whatever the filter says), the least a filter can cost.
P is connect.toml for the connect and loop runs (a client rule: nodelay "on", a congestion
control other than the host's default, sndbuf and rcvbuf 256 KiB) and syscall.toml for the
system-call runs (nodelay "force" and keepalive: the longest filter the supervisor builds, with
the setsockopt pairs it traps; the program sets TCP_NODELAY on its stream itself, so the policy
changes nothing about it that costs a send). With a jsonl log each, as `tcptune run` writes by
default (--no-log: none).

Three measurements:
  connect  --connects sequential blocking connect() calls to a listener in the same program (a
           thread accepts and closes), after --warmup untimed ones, each timed alone with
           CLOCK_MONOTONIC: median, p90 and p99 per run. Target: supervised at most 2x plain.
  loop     --loop-connections connections one after the other, both ends in the program's one
           thread: socket + connect, accept, close the client, close the accepted end; the
           loop's time (from the first socket() to the last close()) and each pair's, whose
           median is what a loaded machine moves least. Target: supervised at most 1.4x plain.
  syscall  a tight loop of --loops calls that the filter lets through (getppid, the cheapest
           call, the worst case for a per-call cost; write of one byte to /dev/null; send of 64
           bytes on a connected loopback UDP socket, --send-loops of those: the send path of a
           real program without a second thread to wake; send_tcp, on request, the same on a
           TCP connection a thread drains, which the scheduler makes noisy), timed whole, --reps
           times per run after one untimed: the least ns per call over the repetitions (an
           interruption only adds time, and a send's time varies by a third from one repetition
           to the next on a small VM). The target: supervised within 10% of plain, judged on
           in_process (supervised/plain across processes is shown alongside).
CPU per trapped call (connect and loop): the program reads, before its first timed call and
30 ms after its last, the run time of each thread of the process that answers its trapped calls
(/proc/PID/task/TID/schedstat, in ns: tcptune, its parent, with --supervisor-cpu; the floor's
thread or process): tcptune's answering thread (its main thread) apart from the rest (the
records thread: records, log, the connection watch). Divided by the trapped calls timed (one
per connection, two where sockets are handed over). The answering thread's CPU per call less the
floor_process answerer's is the supervisor's own work apart from the kernel's round trip.
Target: the supervisor's own work no more than the kernel's round trip, in time (supervised -
floor_process against floor_process - plain) and in CPU.
The arms are interleaved over --rounds rounds, each round in a rotated order, so that noise on
the machine hits every arm alike. Each arm's figure is the median over rounds of its runs'
figures; the ratio to plain is the median over rounds of the ratio within each round (the
rounds follow each other within seconds, while the machine's speed drifts over minutes), and
the difference the median of the differences within each round (in_process: filtered over
unfiltered within each run, then the median over rounds). The sequential connects put a
supervisor's work after its answer on the path too: the next connect waits for it. On a
machine shared with other work, --quiet-wait waits (at most that many seconds) before each
round until the rest of the machine uses fewer than --quiet-cpus CPUs; the JSON records the
wait and the load of each round, and the load average and the CPU time the whole machine
spent (busy, stolen) during the run.

--check exits 1 unless every run exited 0 with its JSON, every connection was accepted, the
first socket of each connect run carries nodelay 1 in the tuned arms (shim, supervised) and 0
in the others (so the tuned arms were tuned, and supervised_empty was not), each supervised
connect and loop run's log has a supervised conn_open for every connect, the floors answered
every connect, the supervised arms report tcptune's CPU, and the JSON has every field. It does
not judge the timings. Writes everything to <out>/supervised-<UTC time>.json.
"""
import argparse
import datetime
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from rounds import cpu_times, median_of, rotated  # noqa: E402
sys.path.insert(0, str(ROOT / "bench" / "ab"))
from ab import machine_info  # noqa: E402  (the shared machine description of bench results)


def load_module(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Its wait for the rest of the machine to quieten (the two runners share the name run.py).
wait_for_quiet = load_module("keep_warm_scale_run", ROOT / "bench" / "keep_warm_scale" / "run.py").wait_for_quiet

ARMS = ("plain", "floor", "floor_process", "shim", "supervised", "supervised_empty", "supervised_hand_over")
LOOP_ARMS = ("plain", "floor", "floor_process", "supervised", "supervised_hand_over")
BEFORE_ARMS = {"supervised_before": "supervised", "supervised_hand_over_before": "supervised_hand_over"}
HAND_OVER_ARMS = ("supervised_hand_over", "supervised_hand_over_before")
FLOOR_ARMS = ("floor", "floor_process")
MEASURES = ("connect", "loop", "syscall")
SYSCALL_ARMS = ("plain", "shim", "supervised", "supervised_empty", "in_process", "in_process_allow_all")
CROSS_PROCESS_ARMS = SYSCALL_ARMS[:-2]
TUNED_ARMS = ("shim", "supervised", "supervised_hand_over", "supervised_before", "supervised_hand_over_before")
SUPERVISED_ARMS = ("supervised", "supervised_empty", "supervised_hand_over", "supervised_before",
                   "supervised_hand_over_before")
CONNECT_SERIES = ("us", "socket_us", "socket_connect_us")  # connect() alone, socket() alone, the two
CALLS = ("getppid", "write_devnull", "send_udp", "send_tcp")
DEFAULT_CALLS = ("getppid", "write_devnull", "send_udp")
CONNECT_FIGURES = ("median", "p90", "p99")
CONNECT_TARGET_RATIO = 2.0  # supervised connect at most 2x plain
LOOP_TARGET_RATIO = 1.4     # the supervised loop at most 1.4x plain
SYSCALL_TARGET_RATIO = 1.10    # an untrapped call within 10% of plain
RUN_TIMEOUT_S = 120
SKIP = 77


def policy_texts(congestion):
    connect = ["version = 1", "[[rule]]", 'name = "bench-client"', 'match = { role = "client" }', 'nodelay = "on"',
               'buffers = { sndbuf = "256KiB", rcvbuf = "256KiB" }']
    if congestion:
        connect.append(f'congestion = "{congestion}"')
    syscall = ["version = 1", "[[rule]]", 'name = "bench-filter"', 'nodelay = "force"',
               'keepalive = { idle = "60s", interval = "10s", count = 3 }']
    empty = ["version = 1", "[defaults]", 'nodelay = "keep"']
    return {name: "\n".join(lines) + "\n" for name, lines in
            (("connect", connect), ("syscall", syscall), ("empty", empty))}


def read_text(path, default=""):
    try:
        return Path(path).read_text().strip()
    except OSError:
        return default


def other_congestion():
    """An allowed congestion control other than the default, so a tuned socket shows it; or None."""
    default = read_text("/proc/sys/net/ipv4/tcp_congestion_control")
    allowed = read_text("/proc/sys/net/ipv4/tcp_allowed_congestion_control").split()
    for name in ("reno", "cubic", "bbr"):
        if name in allowed and name != default:
            return name
    return None


def clean_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith("TCPTUNE_") and k != "LD_PRELOAD"}
    env["LC_ALL"] = "C"
    return env


def command_for(arm, measure, program_args, paths, log):
    """The command line of one run: `measure` (connect, loop, syscall) chooses the program (the
    loop's is static) and the policy; program_args are the program's mode and its numbers."""
    program = str(paths["program_static" if measure == "loop" else "program"])
    flags = {"plain": [], "floor": ["--notify-floor"], "floor_process": ["--notify-floor-process"],
             "in_process": ["--filter-midway"], "in_process_allow_all": ["--allow-all-midway"]}
    if arm in flags:
        return [program] + flags[arm] + program_args
    supervised_as = BEFORE_ARMS.get(arm, arm)
    command = [str(paths["container_profile"])] if supervised_as == "supervised_hand_over" else []
    command += [str(paths["tcptune_before" if arm in BEFORE_ARMS else "tcptune"]), "run"]
    if arm in SUPERVISED_ARMS:
        command.append("--supervise")
    policy = "empty" if arm == "supervised_empty" else "syscall" if measure == "syscall" else "connect"
    command += ["--policy", str(paths[policy])]
    command += ["--no-log"] if log is None else ["--log", str(log), "--quiet"]
    # Connect and loop runs under the supervisor report its CPU time (tcptune is the program's parent).
    cpu = ["--supervisor-cpu"] if arm in SUPERVISED_ARMS and measure != "syscall" else []
    return command + ["--", program] + cpu + program_args


def count_conn_open(log):
    """Client conn_open records in a jsonl log, and how many of them the supervisor wrote."""
    total = supervised = 0
    for line in read_text(log).splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record.get("event") == "conn_open" and record.get("role") == "client":
            total += 1
            supervised += record.get("supervised") is True
    return total, supervised


def run_once(arm, measure, program_args, paths, work, label, no_log):
    log = None if no_log else work / f"{label}.jsonl"
    if log is not None and log.exists():
        log.unlink()
    command = command_for(arm, measure, program_args, paths, log)
    load = os.getloadavg()[0]
    started = time.monotonic()
    try:
        proc = subprocess.run(command, env=clean_env(), capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                              cwd=work)
    except subprocess.TimeoutExpired:
        return {"arm": arm, "ok": False, "error": f"no result within {RUN_TIMEOUT_S} s", "command": command}
    result = {"arm": arm, "ok": proc.returncode == 0, "returncode": proc.returncode,
              "seconds": round(time.monotonic() - started, 3), "load_1min_before": load, "command": command}
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    try:
        result["result"] = json.loads(lines[-1])
    except (IndexError, ValueError):
        result["ok"] = False
    if not result["ok"]:
        result["error"] = (proc.stderr.strip() or proc.stdout.strip())[-500:]
    elif log is not None:
        result["conn_open_client"], result["conn_open_supervised"] = count_conn_open(log)
    return result


def ratio(a, b):
    return None if a is None or not b else a / b


def by_round(runs, arm, figure):
    """{round: figure(result)} of an arm's successful runs."""
    return {r["round"]: figure(r["result"]) for r in runs if r["arm"] == arm and r["ok"]}


def paired(runs, arm, figure):
    """The median over rounds of arm/plain and of arm - plain, each within its round."""
    mine, plain = by_round(runs, arm, figure), by_round(runs, "plain", figure)
    rounds = sorted(set(mine) & set(plain))
    return (median_of([ratio(mine[r], plain[r]) for r in rounds]),
            median_of([mine[r] - plain[r] for r in rounds]))


def cpu_per_call(run):
    """{"answering", "others", "total"}: the answerer's CPU time in us per trapped call over the
    timed calls (tcptune's answering thread and the rest of tcptune; a floor's answerer), or None."""
    cpu = run["result"].get("answerer_cpu") if run["ok"] else None
    if not cpu or not cpu.get("connects"):
        return None
    calls = cpu["connects"] * (2 if run["arm"] in HAND_OVER_ARMS else 1)
    answering, others = cpu["answering_ns"] / 1e3 / calls, cpu["others_ns"] / 1e3 / calls
    return {"answering": answering, "others": others, "total": answering + others,
            "calls_per_connection": 2 if run["arm"] in HAND_OVER_ARMS else 1}


def summarize_cpu(runs, arms_run):
    """Per arm: the median over rounds of each part of the answerer's CPU per trapped call."""
    out = {}
    for arm in arms_run:
        got = [c for c in (cpu_per_call(r) for r in runs if r["arm"] == arm) if c]
        if got:
            out[arm] = {part: median_of([c[part] for c in got]) for part in ("answering", "others", "total")}
            out[arm]["calls_per_connection"] = got[0]["calls_per_connection"]
            out[arm]["per_round_answering"] = [round(c["answering"], 2) for c in got]
    return out


def judged(arms, cpu, figure, ratio_target, over_key, minus_key, work_figure=None, hand_over_traps=1):
    """The target of one measurement: supervised (and the hand-over path beside it) against plain
    by `figure`, and the supervisor's own work against the kernel's round trip (floor_process), in
    time (by `work_figure`, `figure` unless given; the hand-over path makes `hand_over_traps`
    trapped calls in that figure) and in CPU."""
    def of(arm, key, which=figure):
        return (arms.get(arm, {}).get(key) or {}).get(which)
    work_figure = work_figure or figure
    round_trip = of("floor_process", minus_key, work_figure)
    floor_cpu = (cpu.get("floor_process") or {}).get("answering")
    paths = {}
    for arm in ("supervised", "supervised_hand_over"):
        if arm not in arms:
            continue
        extra = of(arm, minus_key)
        work_extra = of(arm, minus_key, work_figure)
        per_call = hand_over_traps if arm in HAND_OVER_ARMS else 1
        own_cpu = None if floor_cpu is None or arm not in cpu else cpu[arm]["answering"] - floor_cpu
        work = None if work_extra is None or round_trip is None else work_extra / per_call - round_trip
        paths[arm] = {
            "ratio": of(arm, over_key), "extra_us": extra,
            "met": of(arm, over_key) is not None and of(arm, over_key) <= ratio_target,
            # Per trapped call: what the supervisor adds beyond the kernel's round trip.
            "supervisor_work_us_per_call": work,
            "supervisor_own_cpu_us_per_call": own_cpu,
            "work_within_round_trip": work is not None and work <= round_trip,
            "own_cpu_within_round_trip": own_cpu is not None and round_trip is not None and own_cpu <= round_trip,
        }
    return {"figure": figure, "work_figure": work_figure, "ratio_target": ratio_target,
            "kernel_round_trip_us": round_trip, "kernel_round_trip_thread_us": of("floor", minus_key, work_figure),
            "floor_answerer_cpu_us_per_call": floor_cpu, "paths": paths}


def summarize_connect(runs, arms_run):
    arms = {}
    for arm in arms_run:
        ok = [r["result"]["us"] for r in runs if r["arm"] == arm and r["ok"]]
        arms[arm] = {figure: median_of([us[figure] for us in ok]) for figure in CONNECT_FIGURES}
        arms[arm]["per_round_median"] = [us["median"] for us in ok]
        for series in CONNECT_SERIES[1:]:
            got = [r["result"].get(series) for r in runs if r["arm"] == arm and r["ok"] and r["result"].get(series)]
            arms[arm][series] = {figure: median_of([g[figure] for g in got]) for figure in CONNECT_FIGURES}
    for arm in arms_run[1:]:
        arms[arm]["over_plain"], arms[arm]["minus_plain_us"] = {}, {}
        for f in CONNECT_FIGURES:
            arms[arm]["over_plain"][f], arms[arm]["minus_plain_us"][f] = paired(runs, arm, lambda got: got["us"][f])
        for series in CONNECT_SERIES[1:]:
            arms[arm][series]["over_plain"], arms[arm][series]["minus_plain_us"] = paired(
                runs, arm, lambda got: (got.get(series) or {}).get("median"))
    cpu = summarize_cpu(runs, arms_run)
    target = judged(arms, cpu, "median", CONNECT_TARGET_RATIO, "over_plain", "minus_plain_us")
    target["description"] = (f"a supervised connect's median at most {CONNECT_TARGET_RATIO:g}x plain; the "
                             f"supervisor's own work per trapped call no more than the kernel's round trip "
                             f"(floor_process - plain)")
    # The hand-over path's connect is its second trap: socket() + connect() is the figure to compare.
    if "supervised_hand_over" in arms:
        both = arms["supervised_hand_over"]["socket_connect_us"]
        target["paths"]["supervised_hand_over"]["socket_connect_ratio"] = both.get("over_plain")
    return {"arms": arms, "cpu_us_per_call": cpu, "target": target}


LOOP_FIGURES = ("us_per_connection", "pair_median_us", "pair_p99_us")


def loop_figures(result):
    pair = result.get("pair_us") or {}
    return {"us_per_connection": result.get("us_per_connection"), "pair_median_us": pair.get("median"),
            "pair_p99_us": pair.get("p99"), "seconds": result.get("seconds")}


def summarize_loop(runs, arms_run):
    arms = {}
    for arm in arms_run:
        ok = [loop_figures(r["result"]) for r in runs if r["arm"] == arm and r["ok"]]
        arms[arm] = {figure: median_of([got[figure] for got in ok]) for figure in LOOP_FIGURES + ("seconds",)}
        arms[arm]["per_round_us_per_connection"] = [got["us_per_connection"] for got in ok]
        arms[arm]["program_cpu_us_per_connection"] = median_of(
            [r["result"].get("loop_cpu_us_per_connection") for r in runs if r["arm"] == arm and r["ok"]])
    for arm in arms_run[1:]:
        arms[arm]["over_plain"], arms[arm]["minus_plain_us"] = {}, {}
        for f in LOOP_FIGURES:
            arms[arm]["over_plain"][f], arms[arm]["minus_plain_us"][f] = paired(
                runs, arm, lambda got: loop_figures(got)[f])
    cpu = summarize_cpu(runs, arms_run)
    # The work per call by the median pair: a loaded machine's scheduler gives a loop that never
    # sleeps (plain) long pauses that one sleeping at each trapped call does not get, which moves
    # the loop's total time of each arm by more than the supervisor's work.
    target = judged(arms, cpu, "us_per_connection", LOOP_TARGET_RATIO, "over_plain", "minus_plain_us",
                    work_figure="pair_median_us", hand_over_traps=2)
    target["description"] = (f"the supervised loop (statically linked) at most {LOOP_TARGET_RATIO:g}x the loop "
                             f"without tcptune, by its time (us_per_connection); its median pair alongside, "
                             f"and the round trip and the supervisor's work per call by the median pair")
    for arm, path in target["paths"].items():
        path["pair_median_ratio"] = arms[arm]["over_plain"]["pair_median_us"]
        path["pair_median_met"] = (path["pair_median_ratio"] is not None
                                   and path["pair_median_ratio"] <= LOOP_TARGET_RATIO)
    return {"arms": arms, "cpu_us_per_call": cpu, "target": target}


def summarize_syscalls(runs, calls):
    out = {}
    for call in calls:
        arms = {}
        mine = [r for r in runs if r["ok"] and r["result"]["call"] == call]
        for arm in CROSS_PROCESS_ARMS:
            ok = [r["result"]["min_ns"] for r in mine if r["arm"] == arm]
            arms[arm] = {"ns": median_of(ok), "per_round_ns": ok}
        for arm in CROSS_PROCESS_ARMS[1:]:
            arms[arm]["over_plain"], arms[arm]["minus_plain_ns"] = paired(mine, arm, lambda got: got["min_ns"])
        for arm in ("in_process", "in_process_allow_all"):
            inside = [r["result"] for r in mine if r["arm"] == arm]
            arms[arm] = {
                "ns": median_of([got["min_ns"] for got in inside]),
                "unfiltered_ns": median_of([got["unfiltered_min_ns"] for got in inside]),
                "per_round_ratio": [got["min_ns"] / got["unfiltered_min_ns"] for got in inside],
                "over_plain": median_of([got["min_ns"] / got["unfiltered_min_ns"] for got in inside]),
                "minus_plain_ns": median_of([got["min_ns"] - got["unfiltered_min_ns"] for got in inside]),
            }
        supervised_ratio = arms["supervised"]["over_plain"]
        filter_ratio = arms["in_process"]["over_plain"]
        out[call] = {"arms": arms, "target": {
            "description": f"an untrapped call under the filter within {round((SYSCALL_TARGET_RATIO - 1) * 100)}% of "
                           f"the same call without it, in the same process (in_process); supervised/plain across "
                           f"processes alongside",
            "ratio": filter_ratio, "extra_ns": arms["in_process"]["minus_plain_ns"],
            # What a filter that allows everything costs: seccomp's own path, the least any filter costs.
            "seccomp_floor_ratio": arms["in_process_allow_all"]["over_plain"],
            "seccomp_floor_ns": arms["in_process_allow_all"]["minus_plain_ns"],
            "supervised_over_plain": supervised_ratio,
            "met": filter_ratio is not None and filter_ratio <= SYSCALL_TARGET_RATIO}}
    return out


def checks_for(results, args):
    checks = []
    runs = results["runs"]
    for r in runs["connect"] + runs["loop"] + runs["syscall"]:
        checks.append((r["ok"], f"{r['label']}: exited 0 with its JSON{'' if r['ok'] else ': ' + r.get('error', '')}"))
    for measure, wanted in (("connect", args.connects + args.warmup),
                            ("loop", args.loop_connections + args.loop_warmup)):
        for r in runs[measure]:
            if not r["ok"]:
                continue
            got = r["result"]
            if measure == "connect":
                checks.append((got["accepted"] == wanted,
                               f"{r['label']}: {got['accepted']} of {wanted} connections accepted"))
                first = got.get("first_socket") or {}
                want_nodelay = 1 if r["arm"] in TUNED_ARMS else 0
                checks.append((first.get("nodelay") == want_nodelay,
                               f"{r['label']}: the first socket's TCP_NODELAY is {first.get('nodelay')} "
                               f"(tuned: {want_nodelay})"))
            if r["arm"] in FLOOR_ARMS:
                answered = (got.get("notify_floor") or {}).get("answered")
                checks.append((answered == wanted, f"{r['label']}: the floor answered {answered} of {wanted} "
                                                   f"connects"))
            if r["arm"] in SUPERVISED_ARMS:
                checks.append((cpu_per_call(r) is not None, f"{r['label']}: tcptune's CPU time read"))
                if not args.no_log:
                    checks.append((r.get("conn_open_supervised") == wanted,
                                   f"{r['label']}: the supervisor logged {r.get('conn_open_supervised')} client "
                                   f"conn_open of {wanted} connects"))
    missing = missing_fields(results)
    checks.append((not missing, f"every field present{': missing ' + ', '.join(missing) if missing else ''}"))
    return checks


def missing_fields(results):
    missing = []
    for arm in results["setup"]["arms"]["connect"]:
        for figure in CONNECT_FIGURES:
            if results["connect"]["arms"][arm][figure] is None:
                missing.append(f"connect.{arm}.{figure}")
    for arm in results["setup"]["arms"]["loop"]:
        for figure in LOOP_FIGURES:
            if results["loop"]["arms"][arm][figure] is None:
                missing.append(f"loop.{arm}.{figure}")
    for call, summary in results["syscall"].items():
        for arm in SYSCALL_ARMS:
            if summary["arms"][arm]["ns"] is None or summary["arms"][arm].get("over_plain", 1.0) is None:
                missing.append(f"syscall.{call}.{arm}")
    for key in ("machine", "load", "setup"):
        if not results.get(key):
            missing.append(key)
    return missing


def fmt(value, spec):
    return "-" if value is None else format(value, spec)


def print_cpu(cpu, arms):
    print("CPU per trapped call, us (median over rounds): the answerer (tcptune's answering thread; a floor's "
          "answerer) and the rest of tcptune (records thread)")
    for arm in arms:
        if arm in cpu:
            c = cpu[arm]
            print(f"  {arm:<28} answering {fmt(c['answering'], '6.1f')}  rest {fmt(c['others'], '6.1f')}  "
                  f"({c['calls_per_connection']} trapped per connection)")


def print_target(target, ratio_name):
    print(f"target: {target['description']}: the kernel's round trip (floor_process - plain) "
          f"{fmt(target['kernel_round_trip_us'], '+.1f')} us (a thread of the program's own: "
          f"{fmt(target['kernel_round_trip_thread_us'], '+.1f')} us), the floor answerer's CPU "
          f"{fmt(target['floor_answerer_cpu_us_per_call'], '.1f')} us per call")
    for arm, path in target["paths"].items():
        extra = "".join(f", {key} {fmt(path[key], '.2f')}x" for key in ("socket_connect_ratio", "pair_median_ratio")
                        if key in path)
        print(f"  {arm}: {fmt(path['ratio'], '.2f')}x {ratio_name} ({fmt(path['extra_us'], '+.1f')} us): "
              f"{'met' if path['met'] else 'MISSED'}{extra}; per trapped call the supervisor's work "
              f"{fmt(path['supervisor_work_us_per_call'], '+.1f')} us, its own CPU "
              f"{fmt(path['supervisor_own_cpu_us_per_call'], '.1f')} us: within the round trip "
              f"{'yes' if path['work_within_round_trip'] else 'no'} (time), "
              f"{'yes' if path['own_cpu_within_round_trip'] else 'no'} (CPU)")


def print_tables(results):
    if results["runs"]["connect"]:
        connect = results["connect"]["arms"]
        print(f"\nconnect() on loopback, us, median over {results['setup']['rounds']} rounds of each run's figure "
              f"({results['setup']['connects']} connects a run):")
        print(f"{'arm':<28} {'median':>8} {'p90':>8} {'p99':>8} {'median/plain':>12} {'p99/plain':>9} "
              f"{'median-plain':>12}")
        for arm in results["setup"]["arms"]["connect"]:
            a = connect[arm]
            over = a.get("over_plain", {})
            minus = a.get("minus_plain_us", {})
            print(f"{arm:<28} {fmt(a['median'], '.1f'):>8} {fmt(a['p90'], '.1f'):>8} {fmt(a['p99'], '.1f'):>8} "
                  f"{fmt(over.get('median', 1.0), '.2f'):>12} {fmt(over.get('p99', 1.0), '.2f'):>9} "
                  f"{fmt(minus.get('median', 0.0), '+.1f'):>12}")
        print("\nsocket() alone and socket() + connect(), us, median (median/plain, median-plain):")
        print(f"{'arm':<28} {'socket':>8} {'':>13} {'socket+connect':>15} {'p99':>8} {'':>13}")
        for arm in results["setup"]["arms"]["connect"]:
            alone, both = connect[arm]["socket_us"], connect[arm]["socket_connect_us"]
            print(f"{arm:<28} {fmt(alone['median'], '.1f'):>8} ({fmt(alone.get('over_plain', 1.0), '.2f')}, "
                  f"{fmt(alone.get('minus_plain_us', 0.0), '+.1f')}) {fmt(both['median'], '.1f'):>9} "
                  f"{fmt(both['p99'], '.1f'):>8} ({fmt(both.get('over_plain', 1.0), '.2f')}, "
                  f"{fmt(both.get('minus_plain_us', 0.0), '+.1f')})")
        print_cpu(results["connect"]["cpu_us_per_call"], results["setup"]["arms"]["connect"])
        print_target(results["connect"]["target"], "median connect")
    if results["runs"]["loop"]:
        loop = results["loop"]["arms"]
        print(f"\nthe loop: connect + accept + close, {results['setup']['loop_connections']} connections, statically "
              f"linked; us per connection, median over rounds (ratio to plain, paired within rounds):")
        print(f"{'arm':<28} {'loop':>18} {'pair median':>20} {'pair p99':>10} {'program CPU':>12}")
        for arm in results["setup"]["arms"]["loop"]:
            a = loop[arm]
            over = a.get("over_plain", {})
            print(f"{arm:<28} {fmt(a['us_per_connection'], '.1f'):>9} ({fmt(over.get('us_per_connection', 1.0), '.2f')}x)"
                  f" {fmt(a['pair_median_us'], '.1f'):>10} ({fmt(over.get('pair_median_us', 1.0), '.2f')}x) "
                  f"{fmt(a['pair_p99_us'], '.1f'):>10} {fmt(a['program_cpu_us_per_connection'], '.1f'):>12}")
        print_cpu(results["loop"]["cpu_us_per_call"], results["setup"]["arms"]["loop"])
        print_target(results["loop"]["target"], "loop")
    if results["syscall"]:
        print("\nuntrapped system calls, ns per call (a run's least over its repetitions), median over rounds (ratio "
              "to plain, paired within rounds; in_process: filtered, and its ratio to the same process unfiltered):")
        print(f"{'call':<14} " + " ".join(f"{arm:>20}" for arm in SYSCALL_ARMS))
    for call, summary in results["syscall"].items():
        cells = []
        for arm in SYSCALL_ARMS:
            a = summary["arms"][arm]
            cells.append(f"{fmt(a['ns'], '.1f')} ({fmt(a.get('over_plain', 1.0), '.3f')})")
        print(f"{call:<14} " + " ".join(f"{c:>20}" for c in cells))
    for call, summary in results["syscall"].items():
        t = summary["target"]
        print(f"target {call}: the filter in the same process {fmt(t['ratio'], '.3f')}x "
              f"({fmt(t['extra_ns'], '+.1f')} ns): {'met' if t['met'] else 'MISSED'}; any filter (allow all) "
              f"{fmt(t['seccomp_floor_ratio'], '.3f')}x ({fmt(t['seccomp_floor_ns'], '+.1f')} ns); supervised/plain "
              f"across processes {fmt(t['supervised_over_plain'], '.3f')}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=str(ROOT / "build" / "release"), help="build tree (default build/release)")
    parser.add_argument("--rounds", type=int, default=9, help="rounds; each runs every arm once")
    parser.add_argument("--measure", default=",".join(MEASURES), help="comma-separated, from: " + ", ".join(MEASURES))
    parser.add_argument("--connects", type=int, default=2000, help="timed connects per connect run")
    parser.add_argument("--warmup", type=int, default=100, help="untimed connects first")
    parser.add_argument("--loop-connections", type=int, default=3000, help="timed connections per loop run")
    parser.add_argument("--loop-warmup", type=int, default=20, help="untimed connections first")
    parser.add_argument("--calls", default=",".join(DEFAULT_CALLS), help="comma-separated, from: " + ", ".join(CALLS))
    parser.add_argument("--loops", type=int, default=500_000, help="calls per repetition (getppid, write_devnull)")
    parser.add_argument("--send-loops", type=int, default=100_000, help="calls per repetition of send_udp and send_tcp")
    parser.add_argument("--reps", type=int, default=7, help="timed repetitions per syscall run")
    parser.add_argument("--no-log", action="store_true", help="no log in the tcptune arms")
    parser.add_argument("--before", help="another tcptune (an earlier build): its supervised arms run alongside")
    parser.add_argument("--quiet-wait", type=float, default=120,
                        help="seconds to wait at most, before each round, for the machine to quieten (0: never)")
    parser.add_argument("--quiet-cpus", type=float, default=0.3, help="quiet: fewer CPUs than this busy")
    parser.add_argument("--quick", action="store_true", help="the smoke run: 2 rounds, 200 connects, short loops")
    parser.add_argument("--check", action="store_true", help="exit 1 unless the runs and the JSON are whole")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.connects, args.warmup, args.loop_connections = 2, 200, 20, 200
        args.loops, args.send_loops, args.reps = 20_000, 5_000, 3
        args.quiet_wait = 0
    calls = [c for c in args.calls.split(",") if c]
    unknown = [c for c in calls if c not in CALLS]
    if unknown:
        parser.error(f"unknown call {', '.join(unknown)}; known: {', '.join(CALLS)}")
    measures = [m for m in args.measure.split(",") if m]
    if any(m not in MEASURES for m in measures):
        parser.error(f"unknown measurement in {args.measure}; known: {', '.join(MEASURES)}")
    if "syscall" not in measures:
        calls = []

    build = Path(args.build).resolve()
    paths = {"program": build / "bin" / "tcptune_supervised_cost",
             "program_static": build / "bin" / "tcptune_supervised_cost_static", "tcptune": build / "bin" / "tcptune",
             "shim": build / "lib" / "libtcptune.so"}
    if args.before:
        paths["tcptune_before"] = Path(args.before).resolve()
    absent = [str(p) for p in paths.values() if not p.exists()]
    paths["container_profile"] = build / "bin" / "container_profile"
    hand_over = paths["container_profile"].exists()
    if not hand_over:
        print(f"{paths['container_profile']} is not built: no supervised_hand_over arm (cmake --build --preset "
              f"release --target container_profile)", file=sys.stderr)
    if absent:
        print(f"not built: {', '.join(absent)} (cmake --build --preset release --target tcptune_cli tcptune "
              f"tcptune_supervised_cost tcptune_supervised_cost_static)", file=sys.stderr)
        return 1
    if read_text("/proc/sys/kernel/seccomp/actions_avail").find("user_notif") < 0:
        print("this kernel has no SECCOMP_RET_USER_NOTIF: supervised mode cannot run here", file=sys.stderr)
        return SKIP

    def arms_of(base):
        arms = [a for a in base if hand_over or a != "supervised_hand_over"]
        if args.before:
            arms += [before for before, arm in BEFORE_ARMS.items() if arm in arms]
        return tuple(arms)
    arms_by_measure = {"connect": arms_of(ARMS) if "connect" in measures else (),
                       "loop": arms_of(LOOP_ARMS) if "loop" in measures else ()}

    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out_dir = Path(args.out).resolve()
    work = out_dir / "logs" / f"supervised-{stamp}"
    work.mkdir(parents=True, exist_ok=True)
    congestion = other_congestion()
    policies = policy_texts(congestion)
    for name, text in policies.items():  # connect (and loop), syscall, empty
        paths[name] = work / f"{name}.toml"
        paths[name].write_text(text)

    results = {
        "bench": "supervised", "command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:]), "started": stamp,
        "machine": machine_info(),
        "setup": {"rounds": args.rounds, "measures": measures, "connects": args.connects, "warmup": args.warmup,
                  "loop_connections": args.loop_connections, "loop_warmup": args.loop_warmup, "calls": calls,
                  "loops": args.loops, "send_loops": args.send_loops, "reps": args.reps, "log": not args.no_log,
                  "quiet_wait_s": args.quiet_wait, "quiet_cpus": args.quiet_cpus,
                  "arms": {"connect": list(arms_by_measure["connect"]), "loop": list(arms_by_measure["loop"]),
                           "syscall": list(SYSCALL_ARMS) if calls else []},
                  "policies": policies, "congestion_in_policy": congestion,
                  "program": str(paths["program"]), "program_static": str(paths["program_static"]),
                  "tcptune": str(paths["tcptune"]), "tcptune_before": args.before,
                  "seccomp_actions": read_text("/proc/sys/kernel/seccomp/actions_avail")},
        "runs": {"connect": [], "loop": [], "syscall": []},
    }
    clock = time.monotonic()
    load_start = os.getloadavg()
    busy0, steal0, total0 = cpu_times()
    results["rounds"] = []
    for round_index in range(args.rounds):
        waited, busy = wait_for_quiet(args.quiet_wait, args.quiet_cpus) if args.quiet_wait > 0 else (0.0, None)
        results["rounds"].append({"round": round_index + 1, "waited_s": round(waited, 1),
                                  "busy_cpus_before": None if busy is None else round(busy, 2),
                                  "load_1min": os.getloadavg()[0]})
        print(f"-- round {round_index + 1}: load average {os.getloadavg()[0]:.2f}" +
              (f"; waited {waited:.0f} s for the machine to quieten: {busy:.2f} CPUs busy" if args.quiet_wait > 0
               else ""), flush=True)
        for arm in rotated(arms_by_measure["connect"], round_index):
            label = f"connect/{arm}/round{round_index + 1}"
            run = run_once(arm, "connect", ["connect", str(args.connects), str(args.warmup)], paths, work,
                           label.replace("/", "-"), args.no_log)
            run["label"], run["round"] = label, round_index + 1
            results["runs"]["connect"].append(run)
            us = run.get("result", {}).get("us", {})
            print(f"  {label:<44} median {fmt(us.get('median'), '7.1f')} us  p99 {fmt(us.get('p99'), '7.1f')} us"
                  f"{'' if run['ok'] else '  FAILED'}", flush=True)
        for arm in rotated(arms_by_measure["loop"], round_index):
            label = f"loop/{arm}/round{round_index + 1}"
            run = run_once(arm, "loop", ["loop", str(args.loop_connections), str(args.loop_warmup)], paths, work,
                           label.replace("/", "-"), args.no_log)
            run["label"], run["round"] = label, round_index + 1
            results["runs"]["loop"].append(run)
            got = run.get("result", {})
            print(f"  {label:<44} {fmt(got.get('us_per_connection'), '7.1f')} us per connection, median pair "
                  f"{fmt((got.get('pair_us') or {}).get('median'), '7.1f')} us{'' if run['ok'] else '  FAILED'}",
                  flush=True)
        for call in calls:
            loops = args.send_loops if call.startswith("send_") else args.loops
            for arm in rotated(SYSCALL_ARMS, round_index):
                label = f"{call}/{arm}/round{round_index + 1}"
                run = run_once(arm, "syscall", ["syscall", call, str(loops), str(args.reps)], paths, work,
                               label.replace("/", "-"), args.no_log)
                run["label"], run["round"] = label, round_index + 1
                results["runs"]["syscall"].append(run)
                print(f"  {label:<44} {fmt(run.get('result', {}).get('min_ns'), '8.1f')} ns per call"
                      f"{'' if run['ok'] else '  FAILED'}", flush=True)
    busy1, steal1, total1 = cpu_times()
    ticks = max(1, total1 - total0)
    cpus = os.cpu_count() or 1
    results["load"] = {
        "load_avg_start": list(load_start), "load_avg_end": list(os.getloadavg()),
        "busy_cpus": round((busy1 - busy0) / ticks * cpus, 2), "steal_cpus": round((steal1 - steal0) / ticks * cpus, 3),
        "note": "busy_cpus: the whole machine's, this run's own work included (at most one CPU for the program and "
                "its listener thread, plus the supervisor)",
    }
    results["seconds"] = round(time.monotonic() - clock, 1)
    if arms_by_measure["connect"]:
        results["connect"] = summarize_connect(results["runs"]["connect"], arms_by_measure["connect"])
    if arms_by_measure["loop"]:
        results["loop"] = summarize_loop(results["runs"]["loop"], arms_by_measure["loop"])
    results["syscall"] = summarize_syscalls(results["runs"]["syscall"], calls)
    checks = checks_for(results, args)
    results["checks"] = [{"ok": ok, "message": message} for ok, message in checks]

    out_path = out_dir / f"supervised-{stamp}.json"
    out_path.write_text(json.dumps(results, indent=1) + "\n")
    print_tables(results)
    failures = [message for ok, message in checks if not ok]
    for message in failures:
        print(f"FAILED: {message}")
    print(f"load average {results['load']['load_avg_start'][0]:.2f} -> {results['load']['load_avg_end'][0]:.2f}, "
          f"{results['load']['busy_cpus']} CPUs busy on average; {len(checks) - len(failures)} of {len(checks)} "
          f"checks met; {results['seconds']:g} s; {out_path}")
    return 1 if failures and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
