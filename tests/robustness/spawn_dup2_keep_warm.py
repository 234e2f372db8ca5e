#!/usr/bin/env python3
"""posix_spawn() with a dup2 file action shares a close-on-exec kept-warm socket with the child,
and the parent's heartbeats land inside the child's corked message.

The posix_spawn hook stops keep-warm only on sockets without FD_CLOEXEC. But the classic way
to hand a connection to a helper program (inetd style: the socket as the child's stdin/stdout)
is posix_spawn_file_actions_adddup2(sock, 1): the child gets the socket although the parent's
descriptor is FD_CLOEXEC (every Python socket is). Variant "same-fd": adddup2(sock, sock),
which glibc implements as "clear FD_CLOEXEC in the child".

The app (Python, under the shim, reno, 10 ms newline heartbeat): connect, a 5 MB burst that
opens the window, then os.posix_spawn() of a Python child (fd 1 = the socket) that corks,
writes "<HEAD>", sleeps 600 ms, writes "<BODY>", uncorks; the parent waits. Correct: the
receiver sees "<HEAD><BODY>" with nothing inside (as without the shim). The hook should look at
the file actions (or simply stop keep-warm on every kept-warm socket) before spawning.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from robustlib import (Checks, KEEP_WARM_POLICY, StreamReceiver, between_head_and_body, clean_env, fresh, parse_args,
                       records, require_keep_warm_host, run, write_policy)  # noqa: E402


CHILD = r'''
import os, socket, sys, time
fd = int(sys.argv[1])
s = socket.socket(fileno=fd)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
os.write(fd, b"<HEAD>")
time.sleep(0.6)
os.write(fd, b"<BODY>")
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 0)
s.detach()
'''

APP = r'''
import os, socket, sys, time
port, mode, child = int(sys.argv[1]), sys.argv[2], sys.argv[3]
s = socket.create_connection(("127.0.0.1", port))
assert os.get_inheritable(s.fileno()) is False
s.sendall(b"x" * (5 << 20))
time.sleep(0.3)
fd = s.fileno()
if mode == "stdout":
    actions, child_fd = [(os.POSIX_SPAWN_DUP2, fd, 1)], 1
else:
    actions, child_fd = [(os.POSIX_SPAWN_DUP2, fd, fd)], fd
pid = os.posix_spawn(sys.executable, [sys.executable, child, str(child_fd)], os.environ, file_actions=actions)
_, status = os.waitpid(pid, 0)
assert status == 0, status
time.sleep(0.1)
s.close()
print("done")
'''


def main():
    args = parse_args()
    require_keep_warm_host()
    checks = Checks()
    app = os.path.join(args.work_dir, "spawn_app.py")
    child = os.path.join(args.work_dir, "spawn_child.py")
    open(app, "w").write(APP)
    open(child, "w").write(CHILD)
    policy = write_policy(args, "spawn", KEEP_WARM_POLICY)
    for shim in (False, True):
        for mode in ("stdout", "same-fd"):
            name = f"{'shim' if shim else 'no shim'}, adddup2 {mode}"
            log = fresh(os.path.join(args.work_dir, f"{mode}-{shim}.jsonl"))
            env = clean_env(TCPTUNE_POLICY=policy, TCPTUNE_LOG=log, TCPTUNE_LOG_FORMAT="jsonl")
            if shim:
                env["LD_PRELOAD"] = args.shim
            receiver = StreamReceiver()
            done = run([sys.executable, app, str(receiver.port), mode, child], env, timeout=60)
            receiver.thread.join(timeout=30)
            checks.check(done.returncode == 0, f"{name}: the app ran ({done.stderr.strip()[-300:]})")
            if shim:
                opens = [o for r in records(log) if r.get("event") == "conn_open" for o in r.get("options", [])
                         if o["name"] == "keep_warm"]
                checks.check(bool(opens) and opens[0]["effective"] == "on", f"{name}: keep_warm is on here")
            inside = between_head_and_body(receiver.data)
            checks.check(inside == b"", f"{name}: the spawned child's corked message arrives whole "
                                        f"(inside <HEAD>..<BODY>: {inside!r})")
    checks.finish()


if __name__ == "__main__":
    main()
