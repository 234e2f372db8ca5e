#!/usr/bin/env python3
"""No heartbeat before a protocol's first message, on a route with a large initial window.

A route's `initcwnd` (a common tuning: `ip route change ... initcwnd 40`) gives a connection a
window over 10 segments before it has sent a byte, so keep-warm finds it worth keeping from
the start. An AMQP 0-9-1 client must open with the protocol header ("AMQP" 0 0 9 1); heartbeat
frames are valid only once the connection handshake is done, and the framer says so
(amqp091: no boundary before connection.open). Here a client (under the shim, `keep_warm = {
protocol = "amqp091" }`, reno, a 10 ms heartbeat) connects and takes 300 ms before it sends
the protocol header, as a client that resolves credentials or TLS settings first does. The
server (this script, not under the shim) checks the first 8 bytes it receives. It runs in a
network namespace of its own (`unshare -n`, root) whose loopback route has initcwnd 40, with
the control, the same client without the shim, first.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from robustlib import SKIP, Checks, clean_env, fresh, keep_warm_rule_policy, parse_args, shim_env  # noqa: E402

PAIR = r"""
import socket, sys, threading, time
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(1)
got = bytearray()
def serve():
    conn, _ = listener.accept()
    conn.settimeout(5)
    try:
        while len(got) < 64:
            data = conn.recv(65536)
            if not data:
                break
            got.extend(data)
    except OSError:
        pass
thread = threading.Thread(target=serve)
thread.start()
client = socket.create_connection(listener.getsockname())
time.sleep(0.3)
client.sendall(b"AMQP\x00\x00\x09\x01")
time.sleep(0.1)
client.close()
thread.join()
print(bytes(got[:8]).hex())
"""
HEADER = b"AMQP\x00\x00\x09\x01".hex()


def main():
    args = parse_args()
    if os.geteuid() != 0 or subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode != 0:
        print("skip: needs root and unshare -n for a namespace whose route has initcwnd 40")
        sys.exit(SKIP)
    policy = keep_warm_rule_policy(args, "amqp", 'role = "client"', 'protocol = "amqp091"')
    checks = Checks()
    setup = ("ip link set lo up && ip route change local 127.0.0.1 dev lo table local proto kernel scope host "
             "src 127.0.0.1 initcwnd 40 && echo 1 > /proc/sys/net/ipv4/tcp_slow_start_after_idle && "
             'exec /usr/bin/python3 -c "$PAIR"')
    for shim in (False, True):
        name = "under the shim" if shim else "control without the shim"
        log = fresh(os.path.join(args.work_dir, f"first-bytes-{int(shim)}.jsonl"))
        env = dict(shim_env(args, policy, log) if shim else clean_env(), PAIR=PAIR)
        # The shim loads into the client and server alike; only the client's connection matches.
        done = subprocess.run(["unshare", "-n", "sh", "-c", setup], env=env, capture_output=True, text=True,
                              timeout=30)
        first = done.stdout.strip()
        checks.check(done.returncode == 0 and first == HEADER,
                     f"{name}: the server's first 8 bytes are the protocol header ({first!r}, expected {HEADER!r}; "
                     f"{done.stderr.strip()[-300:]})")
    checks.finish()


if __name__ == "__main__":
    main()
