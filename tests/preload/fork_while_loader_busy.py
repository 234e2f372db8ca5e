#!/usr/bin/env python3
"""Children forked while another thread is inside the dynamic loader do not hang, and are tuned.

glibc 2.36 leaves the loader's lock held in a child forked while another thread of its parent
held it (dl_iterate_phdr, dlopen, dlclose). The core is loaded with dlopen at a process's first
TCP socket: such a child of a parent that had not loaded it hung there forever. The fork hook
loads the core before the fork in a process that may have several threads.
fork_while_loader_busy_app.c forks children while a thread walks the loaded objects (walk) or
opens and closes libraries (open); each child listens on a TCP socket once. Every child must
exit on its own (not by its 5 s alarm), and each must be tuned: a listener conn_open in the log
from every child.

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
    if ok:
        print(f"ok {CHILDREN} children exited on their own, each tuned ({args.mode})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
