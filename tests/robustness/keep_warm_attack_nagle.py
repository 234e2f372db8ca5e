#!/usr/bin/env python3
"""keep_warm with Nagle on: the first message after a heartbeat goes out at once, however the
app ends it, on either side of the connection, and the app's view of TCP_NODELAY and errno
stay its own.

Linux holds a sub-MSS segment while an earlier small one is unacknowledged (Minshall), and a
heartbeat is one; the shim pushes the tail of the first message after a heartbeat (TCP_NODELAY
set and cleared). keep_warm_attack_app.c runs under the shim (reno, a 100 ms newline
heartbeat) and sends a 100-byte message every 110 ms, about 10 ms after a heartbeat, ending it
a different way each round; this script's peer (not preloaded) checks every message byte by
byte, counts heartbeats between messages, replies one byte per message and keeps itself in
delayed-ACK ("pingpong") mode with TCP_QUICKACK=0, so a tail held behind the heartbeat's ACK
waits tens of milliseconds where it would otherwise take well under one. A round slower than
20 ms counts as held. The same app without the shim is the baseline: its classic
write-write-read round ("write2", Nagle's own stall) shows the peer does delay its ACKs.

Cases:
  held         messages ended by write, send, MSG_MORE parts, a zero-length send after
               MSG_MORE, writev, sendmsg, sendmmsg, sendfile, splice (with and without
               SPLICE_F_MORE), an uncork: no round slower than without the shim, on a
               connecting app (no nodelay in the policy), an accepting one (role = "server",
               nodelay = "off"), and one that turns Nagle back on itself under nodelay = "on".
  empty_first  an empty write (send of 0 bytes, writev of an empty iovec) or an uncork with
               nothing queued just before the message: the message must not wait either.
"""
import json
import os
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from robustlib import Checks, SKIP, clean_env, compile_c, parse_args, require_keep_warm_host, write_policy  # noqa: E402

PAUSE_MS = 110
ROUNDS_PER_MODE = 6
MESSAGE = b"<" + bytes(ord("a") + i % 26 for i in range(1, 99)) + b"$"
HELD_MODES = ["write", "send", "more", "more3", "more_then_empty", "writev", "sendmsg", "sendmmsg", "sendfile",
              "splice", "splice_more", "cork", "cork_more"]
EMPTY_FIRST_MODES = ["empty_send_first", "empty_writev_first", "empty_cork_first"]
KEEP_WARM = 'congestion = "reno"\nkeep_warm = { heartbeat = "\\n", interval = "100ms" }\n'


class Peer:
    """The other end: checks the burst, then messages "<...$" with only heartbeats between them;
    one reply byte per message; TCP_QUICKACK=0 after every read keeps its ACKs delayed."""

    def __init__(self):
        self.heartbeats = 0
        self.messages = 0
        self.bad = []

    def serve(self, conn):
        conn.settimeout(60)
        burst_done = False
        current = None
        try:
            while True:
                data = conn.recv(1 << 20)
                if not data:
                    break
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 0)
                for byte in data:
                    if not burst_done:
                        if byte == ord("#"):
                            burst_done = True
                            conn.sendall(b"!")
                        elif byte != ord("x"):
                            self.bad.append(f"byte {byte} in the burst")
                        continue
                    if current is None:
                        if byte == ord("\n"):
                            self.heartbeats += 1
                        elif byte == ord("<"):
                            current = bytearray(b"<")
                        else:
                            self.bad.append(f"byte {byte!r} between messages")
                        continue
                    current.append(byte)
                    if byte == ord("$"):
                        self.messages += 1
                        if bytes(current) != MESSAGE:
                            self.bad.append(f"message {self.messages} arrived as {bytes(current)[:40]!r}...")
                        current = None
                        conn.sendall(b"!")
        except OSError as error:
            self.bad.append(f"peer: {error}")
        finally:
            conn.close()


def run_app(app, modes, env, listen=False, extra=()):
    """Runs the app against a fresh peer; ({mode: stats}, peer, stderr)."""
    rounds = ROUNDS_PER_MODE * len(modes)
    peer = Peer()
    command = [app, "listen" if listen else "0", ",".join(modes), str(rounds), str(PAUSE_MS), *extra]
    if listen:
        process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        port = int(process.stdout.readline() or 0)
        conn = socket.create_connection(("127.0.0.1", port), timeout=10) if port else None
    else:
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.settimeout(30)
        command[1] = str(listener.getsockname()[1])
        process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            conn, _ = listener.accept()
        except OSError:
            conn = None
        listener.close()
    if conn is not None:
        peer.serve(conn)
    try:
        out, err = process.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
    stats = {}
    for line in out.splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            stats[record["mode"]] = record
    return stats, peer, err.strip()[-300:]


def main():
    args = parse_args()
    require_keep_warm_host()
    checks = Checks()
    source = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "keep_warm_attack_app.c")).read()
    app = compile_c(args, "keep_warm_attack_app", source, "-O2")
    modes = {"held": HELD_MODES, "empty_first": EMPTY_FIRST_MODES}.get(args.case)
    if modes is None:
        print(f"unknown case {args.case!r}")
        sys.exit(2)
    client_policy = write_policy(args, "client", "[defaults]\n" + KEEP_WARM)
    server_policy = write_policy(args, "server", '[[rule]]\nname = "push"\nmatch = { role = "server" }\n'
                                                 'nodelay = "off"\n' + KEEP_WARM)
    on_policy = write_policy(args, "nodelay-on", '[defaults]\nnodelay = "on"\n' + KEEP_WARM)

    # Baseline: no shim. write2 (10 bytes, then 90, then the reply) is Nagle's own stall, which
    # shows this peer's ACKs are delayed long enough for a held tail to count as slow.
    base, base_peer, err = run_app(app, modes + ["write2"], clean_env())
    checks.check(base and not base_peer.bad, f"baseline: the app ran, the stream is intact ({err} {base_peer.bad[:3]})")
    write2 = base.get("write2", {})
    checks.check(write2.get("slow", 0) >= ROUNDS_PER_MODE // 2,
                 f"baseline: the peer delays its ACKs (Nagle's own write-write-read stall in "
                 f"{write2.get('slow')} of {write2.get('rounds')} rounds)")

    arms = [
        ("connecting app, Nagle on (no nodelay)", client_policy, False, ()),
        ('accepting app, role = "server", nodelay = "off"', server_policy, True, ()),
        ('connecting app, nodelay = "on", the app sets TCP_NODELAY=0', on_policy, False, ("nodelay0",)),
    ]
    for name, policy, listen, extra in arms:
        env = clean_env(LD_PRELOAD=args.shim, TCPTUNE_POLICY=policy)
        stats, peer, err = run_app(app, modes, env, listen=listen, extra=extra)
        checks.check(len(stats) == len(modes), f"{name}: the app ran ({err})")
        checks.check(not peer.bad, f"{name}: every message arrived whole, only heartbeats between them "
                                   f"({peer.messages} messages; {peer.bad[:3]})")
        checks.check(peer.heartbeats >= len(modes) * ROUNDS_PER_MODE // 2,
                     f"{name}: heartbeats flowed ({peer.heartbeats} in {len(modes) * ROUNDS_PER_MODE} pauses)")
        for mode in modes:
            got = stats.get(mode, {})
            ref = base.get(mode, {})
            checks.check(got.get("slow", ROUNDS_PER_MODE) <= ref.get("slow", 0) + 1,
                         f"{name}, {mode}: no message held behind a heartbeat ({got.get('slow')} of "
                         f"{got.get('rounds')} rounds over 20 ms, {ref.get('slow')} without the shim; mean "
                         f"{got.get('mean_ms')} ms vs {ref.get('mean_ms')} ms, worst {got.get('worst_ms')} ms)")
            checks.check(got.get("bad_nodelay", 1) == 0 and got.get("errno_clobbered", 1) == 0,
                         f"{name}, {mode}: TCP_NODELAY reads back {got.get('nodelay')} after every message "
                         f"({got.get('bad_nodelay')} wrong), errno left alone ({got.get('errno_clobbered')} changed)")
    checks.finish()


if __name__ == "__main__":
    main()
