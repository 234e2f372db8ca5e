"""tcptune run's stderr is a pipe whose reader has gone (`tcptune run -- prog 2>&1 | grep -q x`,
`| head -1`): the program exits 3 and writes nothing more, so without tcptune the status is 3.
tcptune's table and log path then find no reader: it must still end with the program's status
(3), not die by SIGPIPE (a shell would see 141 under pipefail).

The program (python3, preloaded, or supervised) says it started, makes one loopback connection,
so that there is a table to print, waits until the reader is gone and exits 3."""
import argparse
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "preload"))
from testlib import Checks, clean_env  # noqa: E402

p = argparse.ArgumentParser()
for a in ("--tcptune", "--shim", "--work-dir"):
    p.add_argument(a, required=True)
args = p.parse_args()
shutil.rmtree(args.work_dir, ignore_errors=True)
os.makedirs(args.work_dir)
checks = Checks()

gone = os.path.join(args.work_dir, "reader-gone")
started = os.path.join(args.work_dir, "started")
PROGRAM = ("import os, socket, sys, time\n"
           f"open({started!r}, 'w').close()\n"
           "l = socket.socket(); l.bind(('127.0.0.1', 0)); l.listen(1)\n"
           "c = socket.create_connection(l.getsockname()); s, _ = l.accept(); c.sendall(b'x'); s.recv(1)\n"
           "c.close(); s.close()\n"
           f"while not os.path.exists({gone!r}): time.sleep(0.02)\n"
           "sys.exit(3)\n")
for mode in ([], ["--supervise"]):
    for path in (gone, started):
        if os.path.exists(path):
            os.unlink(path)
    read_end, write_end = os.pipe()
    proc = subprocess.Popen([args.tcptune, "run", *mode, "--", sys.executable, "-c", PROGRAM], cwd=args.work_dir,
                            env=clean_env(TCPTUNE_SHIM=args.shim, XDG_STATE_HOME=args.work_dir), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=write_end)
    os.close(write_end)
    deadline = time.monotonic() + 20
    while not os.path.exists(started) and time.monotonic() < deadline:
        time.sleep(0.02)
    os.close(read_end)  # the reader is gone once the program runs, before tcptune writes its table
    with open(gone, "w", encoding="utf-8"):
        pass
    try:
        status = proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        status = proc.wait()
    checks.check(status == 3, f"run {' '.join(mode)}: the program's status 3 with stderr's reader gone ({status})")
checks.finish()
