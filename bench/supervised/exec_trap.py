#!/usr/bin/env python3
"""What trapping exec costs a shell-heavy program under `tcptune run --supervise` (root only).

    bench/supervised/exec_trap.py [--build build/release] [--rounds 7] [--execs 1000]
                                  [--failing-execs 20000] [--out bench/results]

The program: `/bin/sh -c` running /bin/true --execs times in a loop (a fork and an exec each).
Four arms, each a fresh process, interleaved over --rounds rounds in a rotated order:
  plain       the shell as it is;
  supervised  `tcptune run --supervise --no-log` as root (CAP_SYS_ADMIN): no no_new_privs, exec
              not trapped;
  nnp         the same under no_new_privs set before tcptune (setpriv --no-new-privs): tcptune
              adds nothing and traps no exec, so this is no_new_privs alone;
  exec_trap   the same without CAP_SYS_ADMIN (setpriv --bounding-set=-sys_admin): no_new_privs,
              and every execve traps to tcptune, which reads the path and stats the file.
tcptune's own start and end (it looks for the program's exit every 100 ms) are in its arms'
times, alike for all three: compare exec_trap with nnp.
Each arm's figure is the median over rounds of its wall time per exec; the ratios are medians of
the ratios within each round.

The trap alone, which a fork and an exec of a real program hide in their noise on a busy machine:
in each run a python3 program also calls execve on a file that is not executable (mode 0644)
--failing-execs times, timed inside it: the kernel refuses each after the trap, so the time is
the trap's round trip and tcptune's look at the file (the path read, stat, getxattr), with no
process created. Prints one JSON line (with the load average before and after: on a busy machine
the round trip waits for tcptune to be scheduled) and, with --out, writes it to
exec-trap-<UTC time>.json there."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

LOOP = 'i=0; while [ "$i" -lt "$1" ]; do /bin/true; i=$((i+1)); done'
FAILING = """import os, sys, time
count, path = int(sys.argv[1]), sys.argv[2]
start = time.perf_counter()
for _ in range(count):
    try:
        os.execv(path, [path])
    except PermissionError:
        pass
print((time.perf_counter() - start) / count * 1e9)
"""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build/release")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--execs", type=int, default=1000)
    parser.add_argument("--failing-execs", type=int, default=20000)
    parser.add_argument("--out", help="a directory for exec-trap-<UTC time>.json")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("needs root: the exec_trap arm drops CAP_SYS_ADMIN from a root tcptune", file=sys.stderr)
        sys.exit(77)
    tcptune = os.path.join(args.build, "bin", "tcptune")
    shell = ["/bin/sh", "-c", LOOP, "sh", str(args.execs)]
    not_executable = tempfile.NamedTemporaryFile(prefix="tcptune-exec-trap-")  # mode 0600
    failing = ["/usr/bin/python3", "-c", FAILING, str(args.failing_execs), not_executable.name]
    wrap = {
        "plain": [],
        "supervised": [tcptune, "run", "--supervise", "--no-log", "-q", "--"],
        "nnp": ["setpriv", "--no-new-privs", "--", tcptune, "run", "--supervise", "--no-log", "-q", "--"],
        "exec_trap": ["setpriv", "--inh-caps=-sys_admin", "--bounding-set=-sys_admin", "--", tcptune, "run",
                      "--supervise", "--no-log", "-q", "--"],
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith("TCPTUNE_") and k != "LD_PRELOAD"}
    load_before = os.getloadavg()[0]
    names = list(wrap)
    per_exec = {name: [] for name in names}
    per_failing = {name: [] for name in names}
    for round_number in range(args.rounds):
        for name in names[round_number % len(names):] + names[:round_number % len(names)]:
            start = time.monotonic()
            done = subprocess.run(wrap[name] + shell, env=env, capture_output=True, text=True, timeout=600)
            elapsed = time.monotonic() - start
            inside = subprocess.run(wrap[name] + failing, env=env, capture_output=True, text=True, timeout=600)
            for run in (done, inside):
                if run.returncode != 0:
                    sys.exit(f"{name} failed ({run.returncode}): {run.stderr}")
                if (name == "exec_trap") != ("no_new_privs is set" in run.stderr):
                    sys.exit(f"{name}: expected no_new_privs {'on' if name == 'exec_trap' else 'off'}: {run.stderr}")
            per_exec[name].append(elapsed / args.execs * 1e6)
            per_failing[name].append(float(inside.stdout.split()[-1]) / 1000)
    result = {"execs": args.execs, "rounds": args.rounds, "command": " ".join(shell),
              "us_per_exec": {name: round(statistics.median(v), 1) for name, v in per_exec.items()},
              "failing_execs": args.failing_execs,
              "us_per_failing_exec": {name: round(statistics.median(v), 2) for name, v in per_failing.items()}}
    for name in ("supervised", "nnp", "exec_trap"):
        result[f"{name}_over_plain"] = round(
            statistics.median(a / b for a, b in zip(per_exec[name], per_exec["plain"])), 3)
    result["exec_trap_over_nnp"] = round(
        statistics.median(a / b for a, b in zip(per_exec["exec_trap"], per_exec["nnp"])), 3)
    result["exec_trap_minus_nnp_us"] = round(
        statistics.median(a - b for a, b in zip(per_exec["exec_trap"], per_exec["nnp"])), 1)
    result["failing_exec_trap_minus_nnp_us"] = round(
        statistics.median(a - b for a, b in zip(per_failing["exec_trap"], per_failing["nnp"])), 2)
    result["load_average_1min"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
    result["kernel"] = os.uname().release
    line = json.dumps(result)
    print(line)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        name = time.strftime("exec-trap-%Y%m%dT%H%M%SZ.json", time.gmtime())
        with open(os.path.join(args.out, name), "w", encoding="utf-8") as f:
            f.write(line + "\n")


if __name__ == "__main__":
    main()
