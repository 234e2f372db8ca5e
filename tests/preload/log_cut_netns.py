#!/usr/bin/env python3
"""A log cut short (`ulimit -f`) by a program that `tcptune run` started in a network namespace
of its own (`unshare -n`, as bwrap --unshare-net, firejail or ip netns exec do): the table counts
only the records before the cut, so run must still say that the log was cut short and the counts
are short, as it does for a program in its own namespace (preload.log_cut_short_ulimit). Root
(unshare -n); exits 77 otherwise.

The program, python3 under the shim, makes 300 loopback connections; the log's limit is 4 KiB."""
import argparse
import os
import resource
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from testlib import SKIP, Checks, clean_env  # noqa: E402

PROGRAM = """
import socket
l = socket.socket(); l.bind(('127.0.0.1', 0)); l.listen(512)
for _ in range(300):
    c = socket.create_connection(l.getsockname()); s, _ = l.accept()
    c.sendall(b'x'); s.recv(1); c.close(); s.close()
print('done', flush=True)
"""

p = argparse.ArgumentParser()
for a in ("--tcptune", "--shim", "--work-dir"):
    p.add_argument(a, required=True)
args = p.parse_args()
shutil.rmtree(args.work_dir, ignore_errors=True)
os.makedirs(args.work_dir)
if os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("ip") is None:
    print("skipped: needs root, unshare and ip", flush=True)
    sys.exit(SKIP)
if subprocess.run(["unshare", "-n", "true"], check=False).returncode != 0:
    print("skipped: unshare -n refused here", flush=True)
    sys.exit(SKIP)
checks = Checks()


def limit_log():
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


r = subprocess.run([args.tcptune, "run", "--", "unshare", "-n", "sh", "-c",
                    f"ip link set lo up && exec {sys.executable} -c \"$0\"", PROGRAM],
                   cwd=args.work_dir, env=clean_env(TCPTUNE_SHIM=args.shim), stdin=subprocess.DEVNULL,
                   capture_output=True, text=True, timeout=60, check=False, preexec_fn=limit_log)
print(f"-> {r.returncode}\nstdout: {r.stdout}stderr: {r.stderr}", flush=True)
checks.check(r.returncode == 0 and "done" in r.stdout, "the program ran to its end")
checks.check("short write" in r.stderr, "the shim said the log was cut")
checks.check("\ntotal " in r.stderr and "tcptune: log " in r.stderr, "run printed its table and the log path")
checks.check("the log was cut short" in r.stderr, "run's table says the log was cut short, so its counts are short")
checks.finish()
