#!/usr/bin/env python3
"""A forked child gets its own log file when the log path names {pid} (a prefork server's
operator expects one file per process), and keeps the parent's file otherwise."""
import glob
import json
import os
import sys

from testlib import Checks, clean_env, parse_args, run

CHILD_CONNECTS = r"""
import os, socket, sys
server = socket.socket(); server.bind(("127.0.0.1", 0)); server.listen(4)
port = server.getsockname()[1]
pid = os.fork()
if pid == 0:
    socket.create_connection(("127.0.0.1", port)).close()
    os._exit(0)
os.waitpid(pid, 0)
print(pid)
"""


def main():
    args = parse_args()
    checks = Checks()
    log_dir = os.path.join(args.work_dir, "per-pid")
    os.makedirs(log_dir, exist_ok=True)
    for old in glob.glob(os.path.join(log_dir, "*.log")):
        os.remove(old)
    env = clean_env(LD_PRELOAD=args.shim, TCPTUNE_LOG=os.path.join(log_dir, "{program}.{pid}.log"),
                    TCPTUNE_LOG_LEVEL="debug", TCPTUNE_LOG_FORMAT="text")
    done = run([sys.executable, "-c", CHILD_CONNECTS], env)
    checks.check(done.returncode == 0, f"python forked and connected ({done.stderr.strip()[-200:]})")
    child = done.stdout.strip()
    parent_logs = [p for p in glob.glob(os.path.join(log_dir, "*.log")) if not p.endswith(f".{child}.log")]
    child_log = os.path.join(log_dir, f"{os.path.basename(sys.executable)}.{child}.log")
    checks.check(os.path.exists(child_log), f"the child wrote its own file {os.path.basename(child_log)}")
    checks.check(len(parent_logs) == 1, f"the parent kept one file of its own: {parent_logs}")
    if os.path.exists(child_log) and len(parent_logs) == 1:
        child_text = open(child_log).read()
        parent_text = open(parent_logs[0]).read()
        checks.check("forked_from=" in child_text and "role=client" in child_text,
                     "the child's connection is logged in the child's file")
        checks.check("role=client" not in parent_text, "and not in the parent's")

    # Without {pid}, parent and child share the one file.
    shared = os.path.join(args.work_dir, "shared.log")
    if os.path.exists(shared):
        os.remove(shared)
    env["TCPTUNE_LOG"] = shared
    done = run([sys.executable, "-c", CHILD_CONNECTS], env)
    checks.check(done.returncode == 0 and "role=client" in open(shared).read(),
                 "without {pid} the child logs into the shared file")
    # The telemetry worker restarts in the child: the child's own conn_close and summary.
    child_exits = CHILD_CONNECTS.replace("socket.create_connection((\"127.0.0.1\", port)).close()\n    os._exit(0)",
                                         "c = socket.create_connection((\"127.0.0.1\", port)); c.send(b\"x\" * 10); c.close()\n"
                                         "    sys.exit(0)")
    jsonl_dir = os.path.join(args.work_dir, "per-pid-jsonl")
    os.makedirs(jsonl_dir, exist_ok=True)
    for old in glob.glob(os.path.join(jsonl_dir, "*")):
        os.remove(old)
    env["TCPTUNE_LOG"] = os.path.join(jsonl_dir, "{pid}.jsonl")
    env["TCPTUNE_LOG_FORMAT"] = "jsonl"
    done = run([sys.executable, "-c", child_exits], env)
    child = done.stdout.strip()
    child_path = os.path.join(jsonl_dir, f"{child}.jsonl")
    records = [json.loads(line) for line in open(child_path)] if os.path.exists(child_path) else []
    closes = [r for r in records if r["event"] == "conn_close" and r["role"] == "client"]
    summary = [r for r in records if r["event"] == "summary"]
    checks.check(done.returncode == 0 and closes and closes[0]["writes"] == 1 and closes[0]["bytes"] == 10,
                 f"the child's worker writes the child's conn_close ({closes[:1]})")
    checks.check(summary and summary[0]["connections"] == 1, "and the child's own summary")
    checks.finish()


if __name__ == "__main__":
    main()
