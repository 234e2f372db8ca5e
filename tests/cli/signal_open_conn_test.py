"""A program that dies by a signal while its connection is still open (a server or client
stopped by SIGTERM or a crash, the usual way such programs end): `tcptune run` must die by the
same signal after its table and the log path, in preloaded mode as in supervised mode.

The program (python3, preloaded) connects to a listener of this test, writes a line, and kills
itself with SIGTERM or SIGSEGV, its socket open: no conn_close and no summary reach the log, only
start and conn_open. tcptune's stderr must still name the log, and say why it has no table (a
table from the conn_open records alone is not built yet)."""
import argparse
import os
import shutil
import socket
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "preload"))
from testlib import Checks, clean_env  # noqa: E402

p = argparse.ArgumentParser()
for a in ("--tcptune", "--shim", "--work-dir"):
    p.add_argument(a, required=True)
args = p.parse_args()
shutil.rmtree(args.work_dir, ignore_errors=True)
os.makedirs(args.work_dir)
checks = Checks()

listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(16)
port = listener.getsockname()[1]

PROGRAM = ("import os, signal, socket\n"
           f"s = socket.create_connection(('127.0.0.1', {port}))\n"
           "s.sendall(b'hello\\n')\n"
           "os.kill(os.getpid(), signal.SIG{sig})\n")

for sig in ("TERM", "SEGV"):
    r = subprocess.run([args.tcptune, "run", "--", sys.executable, "-c", PROGRAM.format(sig=sig)],
                       cwd=args.work_dir, env=clean_env(TCPTUNE_SHIM=args.shim, XDG_STATE_HOME=args.work_dir),
                       stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=30, check=False)
    expected = -getattr(__import__("signal"), "SIG" + sig)
    checks.check(r.returncode == expected, f"SIG{sig}: tcptune died by the program's signal ({r.returncode})")
    checks.check("tcptune: log " in r.stderr, f"SIG{sig}, connection open: the log path is printed")
    # No conn_close or summary reached the log, so there is no table to print: tcptune says why.
    checks.check("the program was killed by signal" in r.stderr and "connections' summaries" in r.stderr,
                 f"SIG{sig}, connection open: tcptune says why there is no table ({r.stderr.strip()[-300:]})")
    if checks.failed:
        print("stderr was:\n" + r.stderr)

checks.finish()
