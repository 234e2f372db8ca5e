"""tcptune run as a service's main process (a wrapped ExecStart=, $MAINPID): the signals systemd
and ExecReload= send to the main process reach the program once each (SIGHUP, SIGUSR1, SIGUSR2,
then SIGTERM, which ends it and tcptune with its status), tcptune itself surviving all but the
last; LISTEN_PID and WATCHDOG_PID that named tcptune name the program, and the socket passed as
descriptor 3 (socket activation) reaches it. The program is static, so tcptune run supervises it
as a child: skipped (77) where there is no seccomp listener."""
import argparse
import os
import select
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "preload"))
from testlib import Checks, clean_env, seccomp_listener_available, skip  # noqa: E402

BOUND = 20

p = argparse.ArgumentParser()
p.add_argument("--tcptune", required=True)
p.add_argument("--probe", required=True)
args = p.parse_args()
if not seccomp_listener_available():
    skip("no seccomp listener here: tcptune run cannot supervise")
checks = Checks()

listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(1)
os.set_inheritable(listener.fileno(), True)
# As systemd starts a socket-activated service: the socket as descriptor 3, LISTEN_PID and
# WATCHDOG_PID naming the process started, which execs into tcptune run.
script = ('exec 3<&%d; export LISTEN_PID=$$ LISTEN_FDS=1 WATCHDOG_PID=$$ WATCHDOG_USEC=30000000; exec "$@"'
          % listener.fileno())
proc = subprocess.Popen(["/bin/sh", "-c", script, "sh", args.tcptune, "run", "-q", "--no-log", "--", args.probe],
                        env=clean_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        pass_fds=(listener.fileno(),), start_new_session=True)
lines = []


def read_until(text, timeout=BOUND):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(text in line for line in lines):
            return True
        ready, _, _ = select.select([proc.stdout], [], [], 0.2)
        if ready:
            line = proc.stdout.readline().decode(errors="replace")
            if not line:
                return any(text in line for line in lines)
            lines.append(line)
    return False


try:
    if not checks.check(read_until("ready"), "the program started under tcptune run"):
        proc.kill()
        print(proc.stderr.read().decode(errors="replace"))
        checks.finish()
    ready = next(line for line in lines if line.startswith("ready"))
    checks.check("listen_pid=1" in ready, f"LISTEN_PID names the program, not tcptune ({ready.strip()})")
    checks.check("watchdog_pid=1" in ready, f"WATCHDOG_PID names the program ({ready.strip()})")
    checks.check("fd3=1" in ready, f"descriptor 3 (the activated socket) reaches the program ({ready.strip()})")
    for sig in (signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
        proc.send_signal(sig)  # to tcptune, as `kill -HUP $MAINPID` does
        got = read_until(f"got {sig.name}")
        time.sleep(0.2)  # a second delivery would show by now
        count = sum(1 for line in lines if line.strip() == f"got {sig.name}")
        checks.check(got and count == 1, f"{sig.name} to tcptune reaches the program once ({count})")
        checks.check(proc.poll() is None, f"tcptune keeps running after {sig.name}")
    proc.send_signal(signal.SIGTERM)
    status = proc.wait(timeout=BOUND)
    read_until("got SIGTERM", timeout=1)
    checks.check(any(line.strip() == "got SIGTERM" for line in lines) and status == 0,
                 f"SIGTERM ends the program, and tcptune with its status ({status})")
finally:
    if proc.poll() is None:
        proc.kill()
        proc.wait()
checks.finish()
