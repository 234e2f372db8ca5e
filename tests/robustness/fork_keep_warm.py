#!/usr/bin/env python3
"""A kept-warm socket shared with a fork()ed child that does not exec gets heartbeats inside
the child's messages, because the socket has FD_CLOEXEC.

docs/keep-warm.md: "Shared descriptors are not kept warm ... nor, after fork(), a socket without
FD_CLOEXEC". But FD_CLOEXEC only matters at exec(): a child that does not exec (a prefork
worker, multiprocessing 'fork', a daemon's helper) shares every descriptor, close-on-exec or
not. Python creates every socket with SOCK_CLOEXEC, so every Python socket is affected.

The app (Python, under the shim, reno, 10 ms newline heartbeat): connect, a burst that opens the
window, fork(); the child (which never execs) sends one corked message "<HEAD>", sleeps
600 ms (longer than the kernel's 200 ms cork ceiling), "<BODY>", uncorks and _exit()s; the
parent waits for it. Correct: the receiver sees "<HEAD><BODY>" with nothing inside, as in the
single-process case (robustness.keep_warm_cork) and as without the shim. The parent should
stop keep-warm on every kept-warm socket at fork(), close-on-exec or not (the child is a second
writer until it execs or closes it).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from robustlib import (Checks, KEEP_WARM_POLICY, StreamReceiver, between_head_and_body, clean_env, fresh, parse_args,
                       records, require_keep_warm_host, run, write_policy)  # noqa: E402


APP = r'''
import os, socket, sys, time
port, mode = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port))
assert os.get_inheritable(s.fileno()) is False   # FD_CLOEXEC, as every Python socket
s.sendall(b"x" * (5 << 20))
time.sleep(0.3)                                   # the burst is acknowledged; window open

def message(sock):
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
    sock.sendall(b"<HEAD>")
    time.sleep(0.6)
    sock.sendall(b"<BODY>")
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 0)

if mode == "fork":
    pid = os.fork()
    if pid == 0:
        message(s)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert status == 0, status
else:
    message(s)
time.sleep(0.1)
s.close()
print("done")
'''


def main():
    args = parse_args()
    require_keep_warm_host()
    checks = Checks()
    app = os.path.join(args.work_dir, "fork_app.py")
    with open(app, "w") as f:
        f.write(APP)
    policy = write_policy(args, "fork", KEEP_WARM_POLICY)
    for shim in (False, True):
        for mode in ("same-process", "fork"):
            name = f"{'shim' if shim else 'no shim'}, {mode}"
            log = fresh(os.path.join(args.work_dir, f"{mode}-{shim}.jsonl"))
            env = clean_env(TCPTUNE_POLICY=policy, TCPTUNE_LOG=log, TCPTUNE_LOG_FORMAT="jsonl")
            if shim:
                env["LD_PRELOAD"] = args.shim
            receiver = StreamReceiver()
            done = run([sys.executable, app, str(receiver.port), "fork" if mode == "fork" else "same"], env, timeout=60)
            receiver.thread.join(timeout=30)
            checks.check(done.returncode == 0, f"{name}: the app ran ({done.stderr.strip()[-300:]})")
            inside = between_head_and_body(receiver.data)
            if shim:
                opens = [o for r in records(log) if r.get("event") == "conn_open" for o in r.get("options", [])
                         if o["name"] == "keep_warm"]
                checks.check(bool(opens) and opens[0]["effective"] == "on", f"{name}: keep_warm is on here")
            checks.check(inside == b"",
                         f"{name}: the child's corked message arrives whole: <HEAD><BODY> with nothing inside "
                         f"(inside: {inside!r})")
    checks.finish()


if __name__ == "__main__":
    main()
