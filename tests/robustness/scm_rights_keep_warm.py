#!/usr/bin/env python3
"""A kept-warm socket passed to another process with SCM_RIGHTS gets heartbeats inside the
other process's corked messages.

Passing a connection over a unix socket (sendmsg with SCM_RIGHTS) shares it exactly like dup()
or fork() do, but the shim does not notice either end:
 - "sender": the process under the shim connects (kept warm), passes the socket to a helper
   and keeps its own descriptor (a connection broker, a zero-downtime handover that closes
   later). Its worker keeps sending heartbeats while the helper writes: they land inside the
   helper's corked message. sendmsg() is hooked, so the SCM_RIGHTS cmsg could be seen and
   keep-warm stopped for every descriptor in it.
 - "receiver": the process under the shim receives an established socket (recvmsg with
   SCM_RIGHTS) and makes one setup call on it (setsockopt SO_KEEPALIVE); the shim adopts it as
   "adopted_connected" and keeps it warm, although the process that passed it still writes:
   heartbeats land inside the passer's corked message. A socket that arrives via SCM_RIGHTS is
   as shared as an inherited one ("inherited_connected": not kept warm).
Both: connect, a 5 MB burst (window open), then the other process corks, writes "<HEAD>",
sleeps 600 ms, writes "<BODY>", uncorks. Correct (as without the shim): "<HEAD><BODY>" with
nothing inside.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from robustlib import (Checks, KEEP_WARM_POLICY, StreamReceiver, between_head_and_body, clean_env, fresh, parse_args,
                       records, require_keep_warm_host, write_policy)  # noqa: E402


# argv: role(owner|taker) who_writes(owner|taker) unix_path tcp_port
PEER = r'''
import os, socket, sys, time
role, writer, path, port = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])

def message(s):
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
    s.sendall(b"<HEAD>")
    time.sleep(0.6)
    s.sendall(b"<BODY>")
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 0)

if role == "owner":              # connects, bursts, passes the socket, keeps its descriptor
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"x" * (5 << 20))
    time.sleep(0.3)
    u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    for _ in range(200):
        try:
            u.connect(path); break
        except OSError:
            time.sleep(0.02)
    socket.send_fds(u, [b"F"], [s.fileno()])
    assert u.recv(1) == b"R"     # the taker has the socket (and made its setup call)
    if writer == "owner":
        message(s)
        u.sendall(b"D")
    assert u.recv(1) == b"D"
    time.sleep(0.1)
    s.close()
else:                            # takes the socket
    l = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    l.bind(path); l.listen(1)
    c, _ = l.accept()
    _, fds, _, _ = socket.recv_fds(c, 1, 1)
    t = socket.socket(fileno=fds[0])
    t.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)   # one setup call
    c.sendall(b"R")
    if writer == "taker":
        message(t)
        c.sendall(b"D")
    else:
        assert c.recv(1) == b"D"
        c.sendall(b"D")
    time.sleep(0.1)
    t.close()
print("done", role)
'''


def main():
    args = parse_args()
    require_keep_warm_host()
    checks = Checks()
    peer = os.path.join(args.work_dir, "peer.py")
    open(peer, "w").write(PEER)
    policy = write_policy(args, "scm", KEEP_WARM_POLICY)
    # (case, who is under the shim or None, who writes the message)
    cases = [("control, no shim", None, "taker"), ("sender under the shim", "owner", "taker"),
             ("control, no shim (owner writes)", None, "owner"), ("receiver under the shim", "taker", "owner")]
    for i, (name, shimmed, writer) in enumerate(cases):
        path = fresh(os.path.join(args.work_dir, f"u{i}.sock"))
        log = fresh(os.path.join(args.work_dir, f"case{i}.jsonl"))
        receiver = StreamReceiver()
        procs = []
        for role in ("taker", "owner"):
            env = clean_env(TCPTUNE_POLICY=policy, TCPTUNE_LOG=log, TCPTUNE_LOG_FORMAT="jsonl")
            if shimmed == role:
                env["LD_PRELOAD"] = args.shim
            procs.append(subprocess.Popen([sys.executable, peer, role, writer, path, str(receiver.port)], env=env,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        ok = True
        for p in procs:
            try:
                out, err = p.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                out, err = p.communicate()
            ok = ok and p.returncode == 0
            if p.returncode != 0:
                print(err[-400:])
        receiver.thread.join(timeout=30)
        checks.check(ok, f"{name}: both processes ran")
        if shimmed:
            kw = [o for r in records(log) if r.get("event") == "conn_open" for o in r.get("options", [])
                  if o["name"] == "keep_warm"]
            print(f"     ({name}: keep_warm in conn_open: {[o['effective'] for o in kw]})")
        inside = between_head_and_body(receiver.data)
        checks.check(inside == b"", f"{name}: the {writer}'s corked message arrives whole (inside: {inside!r})")
    checks.finish()


if __name__ == "__main__":
    main()
