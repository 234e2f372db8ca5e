#!/usr/bin/env python3
"""Processes of one program that all end while the shared Prometheus textfile stays locked (a
burst of exits: many last writes queue for the lock, each waiting at most 1 s). The test holds
the lock itself while twelve processes end, so every last write finds it held: each process
still exits promptly, its counts left beside the file (PATH.leftover.*, which node_exporter does
not read) rather than lost, and the next process's write adds them all: the file's
tcptune_connections_total is exactly thirteen times one process's, no live process remains
counted, and nothing is left beside the file. Before, those twelve processes' counts were lost."""
import argparse
import fcntl
import os
import re
import subprocess
import sys
import time

from testlib import Checks, clean_env

PROCESSES = 12
EXIT_BOUND_S = 30  # twelve processes, each waiting 1 s for the lock at most, on a loaded machine


def total(text, name):
    return sum(float(m.group(1)) for m in re.finditer(r"^%s\{[^}]*\} (\S+)$" % re.escape(name), text, re.M))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shim", required=True)
    parser.add_argument("--app", required=True)
    parser.add_argument("--work-dir", required=True)
    options = parser.parse_args()
    os.makedirs(options.work_dir, exist_ok=True)
    for name in os.listdir(options.work_dir):
        os.unlink(os.path.join(options.work_dir, name))
    program = os.path.basename(options.app)
    textfile = os.path.join(options.work_dir, f"{program}.prom")
    policy = os.path.join(options.work_dir, "policy.toml")
    with open(policy, "w") as f:
        f.write('version = 1\n[log]\npath = "%s/log.jsonl"\nprometheus_textfile = "%s/{program}.prom"\n'
                'interval = "1h"\n' % (options.work_dir, options.work_dir))
    env = clean_env(LD_PRELOAD=options.shim, TCPTUNE_POLICY=policy)
    checks = Checks()

    def one():
        return subprocess.run([options.app, "flood", "3"], env=env, stdout=subprocess.DEVNULL, timeout=EXIT_BOUND_S)

    one()
    with open(textfile) as f:
        per_process = total(f.read(), "tcptune_connections_total")
    checks.check(per_process > 0, f"one process counts its connections ({per_process})")
    os.unlink(textfile)

    with open(textfile + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        start = time.monotonic()
        burst = [subprocess.Popen([options.app, "flood", "3"], env=env, stdout=subprocess.DEVNULL)
                 for _ in range(PROCESSES)]
        codes = [p.wait(timeout=EXIT_BOUND_S) for p in burst]
        took = time.monotonic() - start
        checks.check(codes == [0] * PROCESSES and took < EXIT_BOUND_S,
                     f"the processes exit while the file is locked ({took:.1f} s, {codes})")
        checks.check(not os.path.exists(textfile), "nothing was written into the locked file")
    one()
    with open(textfile) as f:
        text = f.read()
    checks.check(total(text, "tcptune_connections_total") == per_process * (PROCESSES + 1),
                 f"the next write adds every ended process's counts "
                 f"({total(text, 'tcptune_connections_total')} == {per_process} x {PROCESSES + 1})")
    checks.check(total(text, "tcptune_processes") == 0, "no ended process is counted live")
    left = [name for name in os.listdir(options.work_dir) if ".leftover." in name]
    checks.check(left == [], f"nothing is left beside the file ({left})")
    checks.finish()


if __name__ == "__main__":
    main()
