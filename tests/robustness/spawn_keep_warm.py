"""posix_spawn() runs no fork handlers: a kept-warm parent that starts a child with a socket
inherited must stop heartbeating it, as after fork(), since the child may write to it too.
The receiver timestamps every newline; heartbeats must arrive while the parent idles alone and
none after the spawn."""
import os
import socket
import threading
import time

from robustlib import SKIP, Checks, clean_env, parse_args, run, write_policy


def main():
    args = parse_args()
    with open("/proc/sys/net/ipv4/tcp_slow_start_after_idle") as f:
        if f.read().strip() != "1":
            print("skipped: tcp_slow_start_after_idle is 0 here (keep-warm sends nothing)")
            raise SystemExit(SKIP)
    checks = Checks()
    policy = write_policy(args, "spawn", '[[rule]]\nname = "clients"\nmatch = { role = "client" }\n'
                                         'congestion = "reno"\nkeep_warm = { heartbeat = "\\n", interval = "10ms" }\n')
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    newlines = []

    def receive():
        conn, _ = listener.accept()
        while True:
            data = conn.recv(1 << 20)
            if not data:
                return
            now = time.monotonic()
            newlines.extend([now] * data.count(b"\n"))

    reader = threading.Thread(target=receive, daemon=True)
    reader.start()
    app = os.path.join(os.path.dirname(os.path.abspath(__file__)), "spawn_app.py")
    done = run(["python3", app, str(listener.getsockname()[1])],
               clean_env(LD_PRELOAD=args.shim, TCPTUNE_POLICY=policy), timeout=30)
    reader.join(timeout=10)
    times = dict(line.split() for line in done.stdout.splitlines() if len(line.split()) == 2)
    checks.check(done.returncode == 0 and {"idle_start", "spawned", "child_exited"} <= times.keys(),
                 f"the app ran ({done.stdout.strip()!r} {done.stderr.strip()[-300:]})")
    if not checks.failed:
        idle_start, spawned, exited = (float(times[k]) for k in ("idle_start", "spawned", "child_exited"))
        before = sum(1 for t in newlines if idle_start <= t < spawned)
        after = sum(1 for t in newlines if spawned + 0.05 <= t <= exited)
        checks.check(before > 0, f"heartbeats arrive while the parent idles alone ({before})")
        checks.check(after == 0, f"none after posix_spawn shared the socket with a child ({after})")
    checks.finish()


if __name__ == "__main__":
    main()
