#!/usr/bin/env python3
"""Children forked while another thread is inside the dynamic loader do not hang, and are tuned.

glibc 2.36 leaves the loader's lock held in a child forked while another thread of its parent
held it (dl_iterate_phdr, dlopen, dlclose). The core is loaded with dlopen at a process's first
TCP socket: such a child of a parent that had not loaded it hung there forever. The fork hook
loads the core before the fork in a process that may have several threads.
fork_while_loader_busy_app.c forks children while a thread walks the loaded objects (walk) or
opens and closes libraries (open); each child listens on a TCP socket once. Every child must
exit on its own (not by its 5 s alarm), and each must be tuned: a listener conn_open in the log
from every child. A bash whose subshells fork must load no core (no log at all).

    fork_while_loader_busy.py --shim LIBTCPTUNE --app APP --work-dir DIR --mode walk|open
"""
import argparse
import json
import os
import subprocess
import sys

CHILDREN = 40


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shim", required=True)
    parser.add_argument("--app", required=True)
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--mode", required=True, choices=["walk", "open"])
    args = parser.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    log = os.path.join(args.work_dir, f"{args.mode}.jsonl")
    if os.path.exists(log):
        os.remove(log)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LD_PRELOAD": args.shim, "TCPTUNE_LOG": log,
           "TCPTUNE_LOG_FORMAT": "jsonl"}
    try:
        done = subprocess.run([args.app, args.mode, str(CHILDREN)], env=env, capture_output=True, text=True,
                              timeout=200)
    except subprocess.TimeoutExpired:
        print("FAIL the app did not end within 200 s")
        return 1
    records = [json.loads(line) for line in open(log)] if os.path.exists(log) else []
    listeners = {r["pid"] for r in records if r.get("event") == "conn_open" and r.get("role") == "listener"}
    ok = True
    if done.returncode != 0:
        print(f"FAIL children hung or failed: {done.stdout.strip()} {done.stderr.strip()[-400:]}")
        ok = False
    if len(listeners) != CHILDREN:
        print(f"FAIL {CHILDREN} children tuned (a listener conn_open from each): {len(listeners)}")
        ok = False
    # A process that has only ever had one thread loads nothing at a fork: a shell's subshells.
    shell_log = os.path.join(args.work_dir, f"{args.mode}-shell.jsonl")
    if os.path.exists(shell_log):
        os.remove(shell_log)
    shell = subprocess.run(["bash", "-c", "for i in 1 2 3; do (true); x=$(echo hi); done"],
                           env=dict(env, TCPTUNE_LOG=shell_log), capture_output=True, text=True, timeout=60)
    if shell.returncode != 0 or os.path.exists(shell_log):
        print(f"FAIL a single-threaded shell's forks load no core (status {shell.returncode}, "
              f"log written: {os.path.exists(shell_log)})")
        ok = False
    if ok:
        print(f"ok {CHILDREN} children exited on their own, each tuned ({args.mode}); a shell's forks loaded nothing")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
