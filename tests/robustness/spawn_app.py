#!/usr/bin/env python3
"""Run under the shim with a keep_warm policy: opens a connection to PORT, grows its window with
acknowledged bursts, idles (heartbeats are expected), then starts `sleep` with posix_spawn and
the socket inherited (so the child could write to it) and idles again while the child lives.
Prints the times of the two phases, one "key value" per line, for the test to match against the
heartbeats the receiver saw."""
import os
import socket
import sys
import time

port = int(sys.argv[1])
sock = socket.socket()
sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 1400)  # before connect: segments that fill a window
sock.connect(("127.0.0.1", port))
for _ in range(8):  # bursts the receiver acknowledges: the window grows past 10 segments
    sock.sendall(b"x" * 256 * 1024)
    time.sleep(0.05)
print("idle_start", time.monotonic(), flush=True)
time.sleep(0.6)
os.set_inheritable(sock.fileno(), True)
pid = os.posix_spawn("/bin/sleep", ["sleep", "1"], dict(os.environ, LD_PRELOAD=""))
print("spawned", time.monotonic(), flush=True)
os.waitpid(pid, 0)
print("child_exited", time.monotonic(), flush=True)
sock.close()
