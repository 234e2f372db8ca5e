#!/usr/bin/env python3
"""The hooks POSIX calls async-signal-safe are safe to call from a signal handler.

signal_storm's SIGALRM handler (every 300 us) makes a loopback connection with socket,
setsockopt, connect, accept, write, send, writev and close, while the main thread allocates
heavily and makes the same calls, for 2 s. Under the shim, with a jsonl log and a policy with
nodelay and keep_warm, it must exit 0 within its bound, every run: a hang (killed by the
watchdog) or a signal is a failure. The control run without the shim shows the program itself
is sound.
"""
import os
import signal
import subprocess

from robustlib import Checks, clean_env, fresh, parse_args, program, write_policy

RUNS = 4
SECONDS = 2
WATCHDOG = 15  # seconds: far beyond a 2 s run, so only a hang reaches it


def run_bounded(cmd, env):
    """(outcome text, ok)"""
    try:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=WATCHDOG)
    except subprocess.TimeoutExpired:
        return f"hung: killed after {WATCHDOG} s", False
    if done.returncode < 0:
        return f"killed by {signal.Signals(-done.returncode).name} ({done.stderr.strip()[-200:]})", False
    return f"exit {done.returncode}: {done.stdout.strip()} {done.stderr.strip()[-200:]}", done.returncode == 0


def main():
    args = parse_args()
    checks = Checks()
    cmd = [program(args, "signal_storm"), "--seconds", str(SECONDS), "--interval-us", "300"]
    outcome, ok = run_bounded(cmd, clean_env())
    checks.check(ok, f"control without the shim: {outcome}")

    for nodelay in ("on", "force"):
        policy = write_policy(args, nodelay, f'[defaults]\nnodelay = "{nodelay}"\n'
                                             'keep_warm = { heartbeat = "\\n", interval = "10ms" }\n')
        for attempt in range(1, RUNS // 2 + 1):
            log = fresh(os.path.join(args.work_dir, f"{nodelay}-{attempt}.jsonl"))
            env = clean_env(LD_PRELOAD=args.shim, TCPTUNE_POLICY=policy, TCPTUNE_LOG=log, TCPTUNE_LOG_FORMAT="jsonl")
            outcome, ok = run_bounded(cmd, env)
            checks.check(ok, f'nodelay = "{nodelay}", run {attempt}: exits 0 within its bound ({outcome})')
    checks.finish()


if __name__ == "__main__":
    main()
