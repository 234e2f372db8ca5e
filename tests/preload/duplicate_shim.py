#!/usr/bin/env python3
"""Two copies of libtcptune.so at different paths in one LD_PRELOAD, as when an image's own
LD_PRELOAD names the shim and another copy is put first (kube-inject prepends its own, `tcptune
run` its own): the first copy tunes the process and the other passes every call on, so each
connection is tuned, logged and counted once, in either order. Before, each copy loaded its own
core: two start records, two conn_open records per connection, two summaries."""
import argparse
import json
import os
import shutil
import subprocess

from testlib import Checks, clean_env


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shim", required=True)
    parser.add_argument("--app", required=True)
    parser.add_argument("--policy", required=True)
    parser.add_argument("--work-dir", required=True)
    options = parser.parse_args()
    copy_dir = os.path.join(options.work_dir, "copy")
    os.makedirs(copy_dir, exist_ok=True)
    shim_dir = os.path.dirname(options.shim)
    for name in ("libtcptune.so", "libtcptune-core.so"):
        shutil.copy(os.path.join(shim_dir, name), os.path.join(copy_dir, name))
    copy = os.path.join(copy_dir, "libtcptune.so")
    checks = Checks()
    for order, preload in (("built first", f"{options.shim}:{copy}"), ("copy first", f"{copy} {options.shim}")):
        log = os.path.join(options.work_dir, "log.jsonl")
        if os.path.exists(log):
            os.unlink(log)
        result = subprocess.run([options.app], env=clean_env(LD_PRELOAD=preload, TCPTUNE_LOG=log,
                                                             TCPTUNE_POLICY=options.policy),
                                capture_output=True, text=True, timeout=60)
        checks.check(result.returncode == 0 and "TCP_NODELAY=1" in result.stdout,
                     f"{order}: the program is tuned ({result.stdout.strip()} {result.stderr.strip()})")
        with open(log) as f:
            events = [json.loads(line)["event"] for line in f if line.strip()]
        checks.check(events.count("start") == 1 and events.count("summary") == 1,
                     f"{order}: one start and one summary ({events})")
        checks.check(events.count("conn_open") == 2, f"{order}: one conn_open per socket, 2 ({events})")
    checks.finish()


if __name__ == "__main__":
    main()
