#!/usr/bin/env python3
"""A child started with vfork() that closes descriptors must not end the parent's connections.

Python's subprocess (close_fds=True, the default) starts its child with vfork(): until exec
the child runs in the parent's memory, and closes every descriptor it does not keep. The
parent here (under the shim, `keep_warm = { protocol = "lines" }`, reno, a 10 ms heartbeat)
opens a connection, sends a 5 MiB line that opens the window, runs `true` with
subprocess.run() (the socket is not passed to it), idles 0.5 s and writes one more line. The
parent's connection is still open and its own: heartbeats must go on after the child ran, and
its conn_close must count both writes and last until the close. The receiver counts the
heartbeats (newlines) that arrived between the two lines. The same without subprocess.run()
is the control.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from robustlib import (Checks, StreamReceiver, fresh, keep_warm_rule_policy, parse_args,  # noqa: E402
                       records, require_keep_warm_host, run, shim_env)

APP = r"""
import socket, subprocess, sys, time
sock = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
sock.sendall(b"x" * ((5 << 20) - 1) + b"\n")
time.sleep(0.3)
if sys.argv[2] == "spawn":
    subprocess.run(["true"], check=True)
time.sleep(0.5)
sock.sendall(b"after\n")
time.sleep(0.2)
sock.close()
"""
BURST = 5 << 20


def main():
    args = parse_args()
    require_keep_warm_host()
    policy = keep_warm_rule_policy(args, "parent", 'role = "client"', 'protocol = "lines"')
    checks = Checks()
    for mode in ("none", "spawn"):
        name = "with subprocess.run()" if mode == "spawn" else "control, no child"
        log = fresh(os.path.join(args.work_dir, f"{mode}.jsonl"))
        receiver = StreamReceiver()
        done = run(["/usr/bin/python3", "-c", APP, str(receiver.port), mode], shim_env(args, policy, log), timeout=30)
        receiver.thread.join(timeout=20)
        checks.check(done.returncode == 0, f"{name}: the app ran ({done.stderr.strip()[-300:]})")
        data = bytes(receiver.data)
        between = data[BURST:].split(b"after")[0]
        heartbeats = between.count(b"\n")
        # 10 ms apart over 0.8 s: about 30 before the child runs and 50 after.
        checks.check(data.startswith(b"x" * (BURST - 1)) and not between.strip(b"\n") and heartbeats >= 50,
                     f"{name}: heartbeats all through the 0.8 s between the two lines ({heartbeats} arrived)")
        closes = [r for r in records(log) if r.get("event") == "conn_close"]
        summary = json.dumps([{k: r.get(k) for k in ("fd", "writes", "heartbeats", "duration_s")} for r in closes])
        checks.check(len(closes) == 1 and closes[0].get("writes") == 2 and closes[0].get("duration_s", 0) >= 0.9,
                     f"{name}: one conn_close, both writes, open until the close ({summary})")
    checks.finish()


if __name__ == "__main__":
    main()
