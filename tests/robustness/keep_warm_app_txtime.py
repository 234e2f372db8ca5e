#!/usr/bin/env python3
"""An app's own SO_TXTIME on a kept-warm connection stays as the app set it.

Keep-warm marks each kept-warm socket with SO_TXTIME (CLOCK_MONOTONIC, no flags) so that the
kernel refuses a heartbeat on any socket without the mark. A socket the app had given SO_TXTIME
itself is marked already; the shim replaced the app's flags with its own, and the app read back
flags 0 where it had set SOF_TXTIME_REPORT_ERRORS. The app here (under the shim, `lines`
keep-warm, reno, 10 ms heartbeats) sets SO_TXTIME (CLOCK_MONOTONIC, SOF_TXTIME_REPORT_ERRORS),
connects, sends a 5 MiB line, idles 0.5 s, reads SO_TXTIME back and sends one more line: it
must read what it set, the heartbeats must still go (the kernel accepts SCM_TXTIME on the
app's mark), and the receiver must get the app's bytes whole and in order.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from robustlib import (Checks, StreamReceiver, fresh, keep_warm_rule_policy, parse_args,  # noqa: E402
                       records, require_keep_warm_host, run, shim_env)

SOF_TXTIME_REPORT_ERRORS = 2
APP = r"""
import socket, struct, sys, time
sock = socket.socket()
sock.setsockopt(socket.SOL_SOCKET, 61, struct.pack("iI", time.CLOCK_MONOTONIC, 2))
sock.connect(("127.0.0.1", int(sys.argv[1])))
sock.sendall(b"x" * ((5 << 20) - 1) + b"\n")
time.sleep(0.5)
clock, flags = struct.unpack("iI", sock.getsockopt(socket.SOL_SOCKET, 61, 8))
print(f"clock {clock} flags {flags}")
sock.sendall(b"after\n")
sock.close()
"""
BURST = 5 << 20


def main():
    args = parse_args()
    require_keep_warm_host()
    policy = keep_warm_rule_policy(args, "app_txtime", 'role = "client"', 'protocol = "lines"')
    log = fresh(os.path.join(args.work_dir, "app_txtime.jsonl"))
    receiver = StreamReceiver()
    done = run(["/usr/bin/python3", "-c", APP, str(receiver.port)], shim_env(args, policy, log), timeout=30)
    receiver.thread.join(timeout=20)
    checks = Checks()
    checks.check(done.returncode == 0, f"the app ran ({done.stderr.strip()[-300:]})")
    expected = f"clock {time.CLOCK_MONOTONIC} flags {SOF_TXTIME_REPORT_ERRORS}"
    checks.check(done.stdout.strip() == expected,
                 f"the app reads back the SO_TXTIME it set ({done.stdout.strip()!r}, expected {expected!r})")
    data = bytes(receiver.data)
    between = data[BURST:].split(b"after")[0]
    checks.check(data.startswith(b"x" * (BURST - 1) + b"\n") and data.endswith(b"after\n") and not between.strip(b"\n"),
                 f"the app's bytes whole and in order, only heartbeats between ({len(data)} bytes)")
    arrived = between.count(b"\n")
    heartbeats = sum(r.get("heartbeats", 0) for r in records(log) if r.get("event") == "conn_close")
    checks.check(heartbeats >= 10 and arrived == heartbeats,
                 f"heartbeats went on the app's mark ({heartbeats} counted, {arrived} arrived)")
    checks.finish()


if __name__ == "__main__":
    main()
