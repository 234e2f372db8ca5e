#!/usr/bin/env python3
"""TCPTUNE_LOG=stderr and a program that detaches as a daemon after its first TCP socket: the
parent exits, the child reopens stdin, stdout and stderr on /dev/null (freopen(3), or daemon(3))
and lives on. glibc's dup2 inside those is no hook's, so the shim sees nothing of it; its log
must not keep the caller's pipe open all the same: a caller reading the program's output
(`out=$(program 2>&1)`, ssh, a CI step) sees the end when the parent exits, as without tcptune.
The parent's records are in the pipe. Each mode runs without the shim first (the control).
The daemon's lifetime is 10 s; the end must come within 3 s (the control: milliseconds)."""
import argparse
import os
import signal
import subprocess
import sys
import time

from testlib import Checks, clean_env

END_BOUND_S = 3.0


def run(app, mode, pidfile, env):
    """Seconds until the pipe's end, and what came through it."""
    start = time.monotonic()
    process = subprocess.Popen([app, mode, pidfile], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, env=env)
    output = b""
    deadline = start + 15
    while time.monotonic() < deadline:
        chunk = os.read(process.stdout.fileno(), 65536)
        if not chunk:
            break
        output += chunk
    took = time.monotonic() - start
    process.wait(timeout=5)
    process.stdout.close()
    # The daemon, detached, is ours to end.
    for _ in range(50):
        if os.path.exists(pidfile) and os.path.getsize(pidfile) > 0:
            break
        time.sleep(0.1)
    try:
        with open(pidfile) as f:
            os.kill(int(f.read()), signal.SIGKILL)
    except (OSError, ValueError):
        pass
    return took, output


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shim", required=True)
    parser.add_argument("--app", required=True)
    parser.add_argument("--work-dir", required=True)
    options = parser.parse_args()
    os.makedirs(options.work_dir, exist_ok=True)
    checks = Checks()
    for mode in ("freopen", "daemon"):
        pidfile = os.path.join(options.work_dir, f"{mode}.pid")
        for shim in (False, True):
            if os.path.exists(pidfile):
                os.unlink(pidfile)
            env = clean_env(LD_PRELOAD=options.shim, TCPTUNE_LOG="stderr") if shim else clean_env()
            took, output = run(options.app, mode, pidfile, env)
            what = f"{mode}, {'with the shim' if shim else 'control'}"
            checks.check(took < END_BOUND_S, f"{what}: the caller's pipe ends when the parent exits ({took:.2f} s)")
            if shim:
                checks.check(b'"event":"conn_open"' in output,
                             f"{what}: the parent's records came through ({output[:200]!r})")
    checks.finish()


if __name__ == "__main__":
    main()
