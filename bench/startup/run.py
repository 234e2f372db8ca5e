#!/usr/bin/env python3
"""What the shim costs a process that opens no TCP socket: start-up time and memory, in one run.

With LD_PRELOAD in a container's environment every shell, health check and cron job loads
libtcptune.so. Only its small C first stage should load there; the C++ core (and its event
ring and snapshot pool) only in a process with a TCP socket. Arms, interleaved round by round:
  off           no shim
  default       the shim, built-in default policy
  policy-file   the shim, a 5-line policy in TCPTUNE_POLICY
  policy-toml   the same policy in TCPTUNE_POLICY_TOML
  empty-so      an empty C shared object (built here with cc), for scale: what any preloaded
                object costs
  NAME          the shim at PATH, for each --shim NAME=PATH (another build, to compare)
Measured for each arm:
  loop          wall time of `bash -c 'for i in {1..300}; do /bin/true; done'` (bash and every
                /bin/true under the arm), and the user+system CPU of the whole loop
  exec          one bash loop (itself without the shim) that runs /bin/true under every arm in
                turn, 300 times, the order rotating, and times each exec ($EPOCHREALTIME): the
                paired ratio of an arm's exec to the no-shim exec of the same turn, which other
                load on the machine disturbs far less than whole loops
  spawn         this script's own posix_spawn of /bin/true, every arm in turn, 300 times a round:
                the paired difference in microseconds to the no-shim spawn and to the empty
                object's spawn of the same turn (the shim's cost beyond what any preloaded object
                costs)
  true          minor page faults of one /bin/true (wait4), median of many
  sleep         Rss and Pss of a running `sleep` (/proc/PID/smaps_rollup), and whether the core
                is mapped in it
Each round runs every arm's loop once, in a shuffled order, and each arm's loop is compared with
the "off" loop of the same round: the median of those paired ratios (a loaded machine slows whole
rounds; pairing cancels part of it), then the exec pass. Targets: loop at most +5%, at most +256 KiB
resident. Writes everything to bench/results/startup-<UTC time>.json.

With --program connect, each exec is instead a small program that opens one TCP connection to a
loopback listener (connect_once.c, built here with cc), so that the core loads and reads its
policy: what the policy hand-over saves (a process loading the policy an earlier one compiled,
see the README's Start-up cost) is measured there, beside the same program without the shim. Arms:
  off                 no shim
  default             the shim, built-in default policy (nothing to read)
  file-parsed         the 5-line policy in TCPTUNE_POLICY, snapshots off (TCPTUNE_POLICY_CACHE=off)
  file-handed-over    the same, loaded from the snapshot the first process wrote
  toml-parsed         the policy as `tcptune run` passes it (TCPTUNE_POLICY_TOML, TCPTUNE_POLICY_NAME),
                      snapshots off
  toml-handed-over    the same, from its snapshot
  NAME                the shim at PATH, for each --shim NAME=PATH, with the policy in TCPTUNE_POLICY
Before measuring, each shim arm runs once with a log, and its start record must say where its
policy came from (built-in, toml, snapshot); then the interleaved exec pass of every round, and
per arm the CPU time and minor page faults of single runs (wait4).

  bench/startup/run.py                         # 7 rounds (about 4 minutes on a 2-core VM)
  bench/startup/run.py --shim single=/tmp/old/libtcptune.so
  bench/startup/run.py --realtime              # under SCHED_FIFO (root): far less noise from other load
  bench/startup/run.py --quick --check         # the smoke run (ctest -R bench.startup_quick)
  bench/startup/run.py --program connect       # the policy hand-over, in processes that open a TCP socket
"""
import argparse
import datetime
import json
import os
import platform
import random
import resource
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

POLICY = '''version = 1
[defaults]
nodelay = "on"
[[rule]]
match = { port = 6379 }
'''
LOOP = "for i in {1..%d}; do /bin/true; done"
KIB = 1024


def arm_env(shim, extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TCPTUNE_") and k != "LD_PRELOAD"}
    if shim is not None:
        env["LD_PRELOAD"] = shim
    env.update(extra)
    return env


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_loop(env, execs):
    cpu_before = children_cpu()
    start = time.perf_counter()
    subprocess.run(["bash", "-c", LOOP % execs], env=env, check=True)
    return time.perf_counter() - start, children_cpu() - cpu_before


def exec_pass(arms, execs, command="/bin/true"):
    """{arm: [seconds of each exec of `command`]} from one bash loop that runs every arm in turn."""
    names = list(arms)
    base = arm_env(None, {})
    assignments = {}
    for arm in names:
        parts = []
        for name, value in sorted(arms[arm].items()):
            if base.get(name) == value:
                continue
            # The policy text goes through a variable of the loop's own environment.
            quoted = '"$STARTUP_POLICY_TEXT"' if name == "TCPTUNE_POLICY_TOML" else shlex.quote(value)
            parts.append(f"{name}={quoted}")
        assignments[arm] = " ".join(parts)
    cases = []
    for turn in range(len(names)):
        order = names[turn:] + names[:turn]
        body = " ".join(f"t{names.index(a)}a=$EPOCHREALTIME; {assignments[a]} {command}; t{names.index(a)}b=$EPOCHREALTIME;"
                        for a in order)
        cases.append(f"{turn}) {body} ;;")
    script = (f"for i in {{1..{execs}}}; do case $((i % {len(names)})) in {' '.join(cases)} esac; echo "
              + " ".join(f"$t{i}a $t{i}b" for i in range(len(names))) + "; done")
    env = arm_env(None, {"STARTUP_POLICY_TEXT": POLICY})
    out = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, check=True).stdout
    times = {arm: [] for arm in names}
    for line in out.splitlines():
        stamps = [float(field) for field in line.split()]
        for index, arm in enumerate(names):
            times[arm].append(stamps[2 * index + 1] - stamps[2 * index])
    return times


def spawn_pass(arms, spawns):
    """{arm: [seconds of each posix_spawn+wait of /bin/true]}, the arms interleaved spawn by spawn: no
    shell between the clock and the process, so the pairs are tighter than the exec pass's."""
    times = {arm: [] for arm in arms}
    for _ in range(spawns):
        for arm, env in arms.items():
            start = time.perf_counter()
            pid = os.posix_spawn("/bin/true", ["/bin/true"], env)
            os.waitpid(pid, 0)
            times[arm].append(time.perf_counter() - start)
    return times


def one_true(env):
    """Minor page faults of one /bin/true."""
    pid = os.posix_spawn("/bin/true", ["/bin/true"], env)
    _, status, usage = os.wait4(pid, 0)
    if status != 0:
        raise RuntimeError(f"/bin/true exited with status {status}")
    return usage.ru_minflt


def empty_object(out_dir):
    """An empty C shared object, or None without a C compiler."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return None
    source, library = out_dir / "empty.c", out_dir / "empty.so"
    source.write_text("void startup_empty(void) {}\n")
    built = subprocess.run([compiler, "-shared", "-fPIC", "-O2", "-o", str(library), str(source)], capture_output=True)
    return str(library) if built.returncode == 0 else None


def sleep_memory(env):
    """Rss and Pss (KiB) of a running sleep once its program is loaded, and whether the core is mapped."""
    sleeper = subprocess.Popen(["sleep", "30"], env=env)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                maps = Path(f"/proc/{sleeper.pid}/maps").read_text()
                # Loaded: sleep's own program and libc are mapped, and it has gone to sleep.
                state = Path(f"/proc/{sleeper.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
                if "libc.so" in maps and state == "S":
                    break
            except OSError:
                pass
            time.sleep(0.01)
        time.sleep(0.05)
        rollup = {}
        for line in Path(f"/proc/{sleeper.pid}/smaps_rollup").read_text().splitlines()[1:]:
            name, value = line.split(":", 1)
            rollup[name] = int(value.split()[0])
        maps = Path(f"/proc/{sleeper.pid}/maps").read_text()
        return {"rss_kib": rollup["Rss"], "pss_kib": rollup["Pss"], "core_mapped": "libtcptune-core.so" in maps,
                "stage_mapped": "libtcptune" in maps}
    finally:
        sleeper.kill()
        sleeper.wait()


def spawn_measure(argv, env):
    """(wall s, user+system CPU s, minor page faults) of one run of argv."""
    start = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, env)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise RuntimeError(f"{argv} exited with status {status}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_minflt


def build_connect_program(out_dir):
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return None
    program = out_dir / "connect_once"
    source = Path(__file__).resolve().parent / "connect_once.c"
    built = subprocess.run([compiler, "-O2", "-o", str(program), str(source)], capture_output=True)
    return str(program) if built.returncode == 0 else None


def start_record(log):
    for line in Path(log).read_text().splitlines() if os.path.exists(log) else []:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record.get("event") == "start":
            return record
    return {}


def connect_bench(options, shim, scratch, out_dir):
    """The policy hand-over in processes that open a TCP socket (--program connect)."""
    program = build_connect_program(scratch)
    if program is None:
        print("startup: no C compiler to build connect_once.c", file=sys.stderr)
        return 77
    listener = socket.create_server(("127.0.0.1", 0), backlog=1024)
    listener.settimeout(0.2)
    stop = threading.Event()

    def accept_all():
        while not stop.is_set():
            try:
                listener.accept()[0].close()
            except OSError:
                continue

    accepter = threading.Thread(target=accept_all, daemon=True)
    accepter.start()
    argv = [program, str(listener.getsockname()[1])]
    policy_file = scratch / "policy.toml"
    policy_file.write_text(POLICY)
    cache = scratch / "cache"
    inline = {"TCPTUNE_POLICY_TOML": POLICY, "TCPTUNE_POLICY_NAME": str(policy_file)}
    arms = {"off": arm_env(None, {}), "default": arm_env(shim, {}),
            "file-parsed": arm_env(shim, {"TCPTUNE_POLICY": str(policy_file), "TCPTUNE_POLICY_CACHE": "off"}),
            "file-handed-over": arm_env(shim, {"TCPTUNE_POLICY": str(policy_file), "TCPTUNE_POLICY_CACHE": str(cache)}),
            "toml-parsed": arm_env(shim, dict(inline, TCPTUNE_POLICY_CACHE="off")),
            "toml-handed-over": arm_env(shim, dict(inline, TCPTUNE_POLICY_CACHE=str(cache)))}
    if os.path.exists("/etc/tcptune/policy.toml"):
        # The default arm would read it: every other arm names its policy in the environment.
        print("startup: /etc/tcptune/policy.toml exists; no built-in default arm", file=sys.stderr)
        del arms["default"]
    expected = {"default": "built-in", "file-parsed": "toml", "file-handed-over": "snapshot", "toml-parsed": "toml",
                "toml-handed-over": "snapshot"}
    for named in options.shim:
        name, _, path = named.partition("=")
        arms[name] = arm_env(str(Path(path).resolve()), {"TCPTUNE_POLICY": str(policy_file)})

    # Each arm does what it says: the handed-over arms' first run writes the snapshot, the second reads it.
    verified, failed = {}, []
    for arm, env in arms.items():
        if arm == "off":
            continue
        for attempt in range(2):
            log = scratch / f"check-{arm}-{attempt}.jsonl"
            subprocess.run(argv, env=dict(env, TCPTUNE_LOG=str(log)), check=True, timeout=60)
        record = start_record(scratch / f"check-{arm}-1.jsonl")
        verified[arm] = {key: record.get(key) for key in ("policy", "policy_from", "policy_snapshot", "policy_snapshot_note")}
        if arm in expected and record.get("policy_from") != expected[arm]:
            failed.append(f"{arm}: policy_from {record.get('policy_from')!r}, expected {expected[arm]!r}")

    results = {arm: {"exec_s": [], "cpu_s": [], "minflt": [], "wall_s": []} for arm in arms}
    for round_number in range(1, options.rounds + 1):
        for arm, times in exec_pass(arms, options.execs, command=shlex.join(argv)).items():
            results[arm]["exec_s"].extend(times)
        for _ in range(options.samples):
            for arm, env in arms.items():
                wall, cpu, faults = spawn_measure(argv, env)
                results[arm]["wall_s"].append(wall)
                results[arm]["cpu_s"].append(cpu)
                results[arm]["minflt"].append(faults)
        print(f"round {round_number}/{options.rounds} done", file=sys.stderr, flush=True)
    stop.set()
    accepter.join(timeout=5)
    listener.close()

    print(f"\n{len(results['off']['exec_s'])} execs per arm of a program that opens one TCP connection to a loopback "
          f"listener, interleaved turn by turn from one bash loop, {options.rounds} rounds"
          f"{' under SCHED_FIFO' if options.realtime else ''}; medians\n")
    print("| arm | policy from | exec ms | vs off (paired; quartiles) | vs its parsed arm, us (paired) | "
          "CPU ms per run | minor faults |")
    print("|---|---|---|---|---|---|---|")
    summary = {}
    for arm in arms:
        paired = [a / o for a, o in zip(results[arm]["exec_s"], results["off"]["exec_s"])]
        quartiles = statistics.quantiles(paired, n=4)
        parsed = arm.replace("handed-over", "parsed")
        saved = None
        if parsed != arm and parsed in results:
            saved = statistics.median(1e6 * (p - h) for p, h in zip(results[parsed]["exec_s"], results[arm]["exec_s"]))
        summary[arm] = {"exec_ms": 1000 * statistics.median(results[arm]["exec_s"]), "exec_ratio": statistics.median(paired),
                        "exec_ratio_quartiles": quartiles, "saved_vs_parsed_us": saved,
                        "cpu_ms": 1000 * statistics.median(results[arm]["cpu_s"]),
                        "minflt": statistics.median(results[arm]["minflt"]),
                        "policy_from": verified.get(arm, {}).get("policy_from")}
        print(f"| {arm} | {summary[arm]['policy_from'] or '-'} | {summary[arm]['exec_ms']:.2f} | "
              f"{summary[arm]['exec_ratio']:.3f} ({quartiles[0]:.3f}-{quartiles[2]:.3f}) | "
              f"{'-' if saved is None else f'{saved:+.0f}'} | {summary[arm]['cpu_ms']:.2f} | {summary[arm]['minflt']:.0f} |")

    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    path = out_dir / f"startup-connect-{stamp}.json"
    path.write_text(json.dumps({"machine": {"kernel": platform.release(), "cpus": os.cpu_count(),
                                            "load_average": os.getloadavg()},
                                "command": " ".join(sys.argv), "program": "connect", "execs": options.execs,
                                "rounds": options.rounds, "samples": options.samples, "realtime": options.realtime,
                                "policy": POLICY, "arms": {arm: {k: v for k, v in arms[arm].items()
                                                                 if k == "LD_PRELOAD" or k.startswith("TCPTUNE_")}
                                                           for arm in arms},
                                "verified": verified, "summary": summary, "runs": results}, indent=1) + "\n")
    print(f"\nwrote {path}")
    if failed:
        print("startup: " + "; ".join(failed), file=sys.stderr)
        return 1
    return 0


def median_range(values, scale=1.0, digits=3):
    values = [v * scale for v in values]
    return f"{statistics.median(values):.{digits}f} [{min(values):.{digits}f}-{max(values):.{digits}f}]"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build/release")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--execs", type=int, default=300, help="/bin/true execs per loop")
    parser.add_argument("--samples", type=int, default=40, help="single /bin/true runs per arm and round")
    parser.add_argument("--shim", action="append", default=[], metavar="NAME=PATH", help="another shim to compare")
    parser.add_argument("--quick", action="store_true", help="3 rounds, 100 execs, 10 samples")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 unless the core is mapped in no arm's sleep and each shim arm's sleep "
                             "has at most 256 KiB more resident than off")
    parser.add_argument("--realtime", action="store_true",
                        help="run the measurements under SCHED_FIFO priority 10 (root or CAP_SYS_NICE), so that other "
                             "load on the machine does not preempt them")
    parser.add_argument("--out", default=None, help="results directory (default bench/results)")
    parser.add_argument("--program", choices=("true", "connect"), default="true",
                        help="what each exec runs: /bin/true, or a program that opens one TCP connection (the core "
                             "and the policy load; the policy hand-over's arms)")
    options = parser.parse_args()
    if options.quick:
        options.rounds, options.execs, options.samples = 3, 100, 10
    build = Path(options.build).resolve()
    shim = str(build / "lib" / "libtcptune.so")
    if not os.path.isfile(shim):
        print(f"startup: {shim} not built", file=sys.stderr)
        return 77
    if os.path.exists("/etc/tcptune/policy.toml") and options.program == "true":
        print("startup: /etc/tcptune/policy.toml exists, so the default arm would not be the built-in default; "
              "skipped", file=sys.stderr)
        return 77
    if options.realtime:
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))  # inherited by every child
        except PermissionError:
            print("startup: --realtime needs root or CAP_SYS_NICE", file=sys.stderr)
            return 77
    out_dir = Path(options.out) if options.out else Path(__file__).resolve().parent.parent / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="tcptune-startup-"))
    if options.program == "connect":
        try:
            return connect_bench(options, shim, scratch, out_dir)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    policy_file = scratch / "policy.toml"
    policy_file.write_text(POLICY)
    arms = {"off": arm_env(None, {}), "default": arm_env(shim, {}),
            "policy-file": arm_env(shim, {"TCPTUNE_POLICY": str(policy_file)}),
            "policy-toml": arm_env(shim, {"TCPTUNE_POLICY_TOML": POLICY})}
    empty = empty_object(scratch)
    if empty is not None:
        arms["empty-so"] = arm_env(empty, {})
    for named in options.shim:
        name, _, path = named.partition("=")
        arms[name] = arm_env(str(Path(path).resolve()), {})

    results = {arm: {"loop_s": [], "loop_cpu_s": [], "exec_s": [], "spawn_s": [], "true_minflt": [], "sleep": []}
               for arm in arms}
    order = random.Random(1)
    for round_number in range(1, options.rounds + 1):
        for arm in order.sample(list(arms), len(arms)):
            env = arms[arm]
            wall, cpu = time_loop(env, options.execs)
            results[arm]["loop_s"].append(wall)
            results[arm]["loop_cpu_s"].append(cpu)
            for _ in range(options.samples):
                results[arm]["true_minflt"].append(one_true(env))
            results[arm]["sleep"].append(sleep_memory(env))
            print(f"round {round_number}/{options.rounds} {arm:12} loop {wall:.3f} s", file=sys.stderr, flush=True)
        for arm, times in exec_pass(arms, options.execs).items():
            results[arm]["exec_s"].extend(times)
        for arm, times in spawn_pass(arms, options.execs).items():
            results[arm]["spawn_s"].extend(times)

    def med(arm, key):
        return statistics.median(results[arm][key])

    def sleep_rss(arm):
        return statistics.median(s["rss_kib"] for s in results[arm]["sleep"])

    print(f"\n{options.execs} execs of /bin/true from bash per loop, {options.rounds} interleaved rounds"
          f"{' under SCHED_FIFO' if options.realtime else ''}; median [min-max]\n")
    print("| arm | loop s | vs off (paired) | loop CPU s | vs off (paired) | exec ms | vs off (paired; quartiles) | "
          "spawn us vs off (paired) | vs empty-so | /bin/true minor faults | sleep Rss KiB | vs off | core mapped |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")

    def spawn_extra_us(arm, baseline):
        if baseline not in results:
            return float("nan")
        return statistics.median(1e6 * (a - b) for a, b in zip(results[arm]["spawn_s"], results[baseline]["spawn_s"]))

    summary = {}
    for arm in arms:
        paired = [a / o for a, o in zip(results[arm]["loop_s"], results["off"]["loop_s"])]
        paired_cpu = [a / o for a, o in zip(results[arm]["loop_cpu_s"], results["off"]["loop_cpu_s"])]
        loop_ratio, cpu_ratio = statistics.median(paired), statistics.median(paired_cpu)
        paired_exec = [a / o for a, o in zip(results[arm]["exec_s"], results["off"]["exec_s"])]
        exec_ratio = statistics.median(paired_exec)
        exec_quartiles = statistics.quantiles(paired_exec, n=4)
        rss_delta = sleep_rss(arm) - sleep_rss("off")
        core = any(s["core_mapped"] for s in results[arm]["sleep"])
        spawn_off, spawn_empty = spawn_extra_us(arm, "off"), spawn_extra_us(arm, "empty-so")
        summary[arm] = {"spawn_extra_us": spawn_off, "spawn_extra_over_empty_us": spawn_empty,
                        "loop_ratio": loop_ratio, "loop_ratios": paired, "loop_cpu_ratio": cpu_ratio,
                        "exec_ms": 1000 * med(arm, "exec_s"), "exec_ratio": exec_ratio, "exec_ratio_quartiles": exec_quartiles,
                        "true_minflt": med(arm, "true_minflt"), "sleep_rss_kib": sleep_rss(arm),
                        "sleep_rss_delta_kib": rss_delta, "core_mapped": core}
        print(f"| {arm} | {median_range(results[arm]['loop_s'])} | {median_range(paired)} | "
              f"{median_range(results[arm]['loop_cpu_s'])} | {median_range(paired_cpu)} | {1000 * med(arm, 'exec_s'):.2f} | "
              f"{exec_ratio:.3f} ({exec_quartiles[0]:.3f}-{exec_quartiles[2]:.3f}) | {spawn_off:+.0f} | {spawn_empty:+.0f} | "
              f"{med(arm, 'true_minflt'):.0f} | "
              f"{sleep_rss(arm):.0f} | {rss_delta:+.0f} | {'yes' if core else 'no'} |")
    failed = []
    for arm in arms:
        if arm == "off" or arm not in ("default", "policy-file", "policy-toml"):
            continue
        ratio, delta = summary[arm]["loop_ratio"], summary[arm]["sleep_rss_delta_kib"]
        exec_ratio = summary[arm]["exec_ratio"]
        print(f"{arm}: loop {100 * (ratio - 1):+.1f}%, CPU {100 * (summary[arm]['loop_cpu_ratio'] - 1):+.1f}%, "
              f"exec {100 * (exec_ratio - 1):+.1f}% (target at most +5%: {'met' if exec_ratio <= 1.05 else 'NOT met'}; "
              f"an empty object: {100 * (summary.get('empty-so', {}).get('exec_ratio', float('nan')) - 1):+.1f}%; "
              f"beyond an empty object: {summary[arm]['spawn_extra_over_empty_us']:+.0f} us per spawn), "
              f"resident {delta:+.0f} KiB (target at most +256 KiB: {'met' if delta <= 256 else 'NOT met'})")
        if delta > 256 or summary[arm]["core_mapped"]:
            failed.append(arm)

    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    path = out_dir / f"startup-{stamp}.json"
    path.write_text(json.dumps({"machine": {"kernel": platform.release(), "cpus": os.cpu_count(),
                                            "load_average": os.getloadavg()},
                                "command": " ".join(sys.argv), "execs": options.execs, "rounds": options.rounds,
                                "realtime": options.realtime,
                                "policy": POLICY, "arms": {arm: arms[arm].get("LD_PRELOAD") for arm in arms},
                                "summary": summary, "runs": results}, indent=1) + "\n")
    shutil.rmtree(scratch, ignore_errors=True)
    print(f"\nwrote {path}")
    if options.check and failed:
        print(f"startup: the core is mapped or more than 256 KiB more is resident in {failed}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
