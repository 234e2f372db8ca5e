#!/usr/bin/env python3
"""keep_warm puts no heartbeat inside a message that a non-blocking sendfile() sends in
several calls (issue 20, part 1).

A sendfile() on a non-blocking socket that moves less than it was asked means the socket
buffer is full, not that the file ran out: the rest follows in later calls, after the sender
has polled, or done other work. If the connection goes idle in between (the peer took what
was queued) a heartbeat there lands inside the message.

keep_warm_framing_sendfile_app.c (under the shim: reno, 1400-byte MSS, a 10 ms heartbeat)
sends a 5 MiB line that opens the window, then an 8 MiB message from a file, one line ('m'
bytes, then '\\n'): a first non-blocking sendfile() that the full buffers cut short (the
sender has a 1 MiB send buffer; the receiver, this script, not under the shim, a 1 MiB
receive buffer, and it does not read for 300 ms), then, once the receiver has taken everything, a 400 ms stall, then poll() and
sendfile() until the file is sent. The receiver checks that no byte arrived inside the
message.

  --case raw     `keep_warm = { heartbeat = "\\n" }`: the boundary is only guessed; no
                 heartbeat may go out until a later call completes the message.
  --case lines   `keep_warm = { protocol = "lines" }`: none until the message's '\\n' was sent.
  --case raw_sndtimeo, lines_sndtimeo
                 as raw and lines, on a blocking socket with SO_SNDTIMEO (100 ms): the
                 timeout cuts the first call short, as a full buffer does a non-blocking one.

Each case runs the sender twice under the shim (each run must also show heartbeats in the
shim's log: the pauses after the burst and after the message are between lines) and once
without it, the control.
"""
import json
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from robustlib import (Checks, clean_env, compile_c, fresh, heartbeats_sent, keep_warm_rule_policy,  # noqa: E402
                       parse_args, require_keep_warm_host, run, shim_env)

BURST = b"x" * (5 << 20) + b"\n"
MESSAGE = b"m" * ((8 << 20) - 1) + b"\n"
HEARTBEATS = {"raw": 'heartbeat = "\\n"', "lines": 'protocol = "lines"',
              "raw_sndtimeo": 'heartbeat = "\\n"', "lines_sndtimeo": 'protocol = "lines"'}
RUNS_UNDER_SHIM = 2


class SlowReceiver:
    """Accepts one connection with a 1 MiB receive buffer; reads the burst, then nothing for
    300 ms (the sender's first sendfile() fills the buffers and returns short), then all the
    rest until EOF."""

    def __init__(self, pause=0.3):
        self.pause = pause
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(1)
        self.listener.settimeout(30)
        self.port = self.listener.getsockname()[1]
        self.data = bytearray()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        with conn:
            conn.settimeout(30)
            paused = False
            try:
                while True:
                    chunk = conn.recv(1 << 20)
                    if not chunk:
                        break
                    self.data.extend(chunk)
                    if not paused and len(self.data) >= len(BURST):
                        paused = True
                        time.sleep(self.pause)
            except OSError:
                pass
        self.listener.close()


def inside_message(data):
    """(whole, newlines inside the message): whole when the stream is the burst, then the
    message, with only newlines (heartbeats) between and after."""
    if not data.startswith(BURST):
        return False, None
    rest = data[len(BURST):].lstrip(b"\n")
    end = rest.rfind(b"m")
    body = rest[:end + 1]
    whole = rest.startswith(MESSAGE) and not rest[len(MESSAGE):].strip(b"\n")
    return whole, body.count(b"\n")


def main():
    args = parse_args()
    require_keep_warm_host()
    if args.case not in HEARTBEATS:
        print(f"unknown --case {args.case!r}")
        sys.exit(2)
    source = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "keep_warm_framing_sendfile_app.c")).read()
    app = compile_c(args, "keep_warm_framing_sendfile_app", source, "-O2")
    message_file = os.path.join(args.work_dir, "message.bin")
    with open(message_file, "wb") as f:
        f.write(MESSAGE)
    policy = keep_warm_rule_policy(args, args.case, 'role = "client"', HEARTBEATS[args.case])
    checks = Checks()
    for attempt in range(RUNS_UNDER_SHIM + 1):
        shim = attempt > 0
        name = f"{args.case}, " + (f"under the shim, run {attempt}" if shim else "control without the shim")
        log = fresh(os.path.join(args.work_dir, f"{args.case}-{attempt}.jsonl"))
        env = shim_env(args, policy, log) if shim else clean_env()
        # Past the sender's 100 ms send timeout, however the scheduling falls.
        receiver = SlowReceiver(1.0 if args.case.endswith("_sndtimeo") else 0.3)
        sndtimeo = ["sndtimeo"] if args.case.endswith("_sndtimeo") else []
        done = run([app, str(receiver.port), message_file, *sndtimeo], env, timeout=40)
        receiver.thread.join(timeout=30)
        try:
            result = json.loads(done.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            result = {}
        checks.check(done.returncode == 0 and 0 < result.get("first", 0) < len(MESSAGE),
                     f"{name}: the sender ran, its first sendfile() moved part of the message ({result}; "
                     f"{done.stderr.strip()[-300:]})")
        whole, inside = inside_message(bytes(receiver.data))
        checks.check(whole and inside == 0,
                     f"{name}: the message arrived whole, nothing inside it ({inside} newlines inside the "
                     f"{len(MESSAGE)}-byte line; {len(receiver.data)} bytes received)")
        if shim:
            count = heartbeats_sent(log)
            checks.check(count > 0, f"{name}: keep-warm was on, heartbeats went out ({count} in conn_close)")
    checks.finish()


if __name__ == "__main__":
    main()
