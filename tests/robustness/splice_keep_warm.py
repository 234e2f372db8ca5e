#!/usr/bin/env python3
"""splice() into a kept-warm socket bypasses the keep-warm gate: a heartbeat lands inside a
message whose first part went out with SPLICE_F_MORE.

splice(2) is not hooked (nor is it in docs/keep-warm.md's "Not covered" list, which names raw system
calls, io_uring, vfork, system/popen). SPLICE_F_MORE is splice's MSG_MORE ("more data will be
coming in a subsequent splice"), the way proxies and file servers (haproxy, a splice-based
sendfile) send a header then a body. The gate never learns that a message is open, so once the
kernel has pushed the spliced part out and it is acknowledged, the worker's heartbeat goes into
the middle of the message. With send(MSG_MORE) instead (hooked) the shim holds it back, which
this test also shows.

The app (Python, under the shim, reno, 10 ms newline heartbeat): connect, a 5 MB burst, then a
message: a 256 KiB header spliced from a pipe with SPLICE_F_MORE, a 600 ms pause, "<BODY>" with
send(). Correct: no byte between the header and "<BODY>" (as without the shim, and as with
send(MSG_MORE)). A fix: hook splice (and vmsplice) like the write family, SPLICE_F_MORE like
MSG_MORE, or stop keep-warm on a socket the app splices into.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from robustlib import (BURST, Checks, KEEP_WARM_POLICY, SKIP, StreamReceiver, clean_env, fresh, parse_args,
                       require_keep_warm_host, run, write_policy)  # noqa: E402

HEADER = b"H" * (256 << 10)

APP = r'''
import os, socket, sys, time
port, mode = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port))
s.sendall(b"x" * (5 << 20))
time.sleep(0.3)
header = b"H" * (256 << 10)
if mode == "splice":
    r, w = os.pipe()
    os.set_blocking(s.fileno(), True)
    left = len(header)
    pos = 0
    while left:
        n = os.write(w, header[pos:pos + 65536])
        pos += n
        while n:
            m = os.splice(r, s.fileno(), n, flags=os.SPLICE_F_MORE)
            n -= m
            left -= m
else:
    s.sendall(header, socket.MSG_MORE)
time.sleep(0.6)
s.sendall(b"<BODY>")
time.sleep(0.1)
s.close()
print("done")
'''


def main():
    args = parse_args()
    require_keep_warm_host()
    if not hasattr(os, "splice"):
        print("skip: os.splice needs Python 3.10")
        sys.exit(SKIP)
    checks = Checks()
    app = os.path.join(args.work_dir, "splice_app.py")
    open(app, "w").write(APP)
    policy = write_policy(args, "splice", KEEP_WARM_POLICY)
    for shim, mode in ((False, "splice"), (True, "msg_more"), (True, "splice")):
        name = f"{'shim' if shim else 'no shim'}, header by {mode}"
        log = fresh(os.path.join(args.work_dir, f"{mode}-{shim}.jsonl"))
        env = clean_env(TCPTUNE_POLICY=policy, TCPTUNE_LOG=log, TCPTUNE_LOG_FORMAT="jsonl")
        if shim:
            env["LD_PRELOAD"] = args.shim
        receiver = StreamReceiver()
        done = run([sys.executable, app, str(receiver.port), mode], env, timeout=60)
        receiver.thread.join(timeout=30)
        checks.check(done.returncode == 0, f"{name}: the app ran ({done.stderr.strip()[-300:]})")
        data = bytes(receiver.data)
        ok_prefix = data.startswith(BURST)
        rest = data[len(BURST):].lstrip(b"\n").rstrip(b"\n")
        well_formed = ok_prefix and rest.startswith(HEADER) and rest.endswith(b"<BODY>")
        inside = rest[len(HEADER):-len(b"<BODY>")] if well_formed else None
        checks.check(inside == b"", f"{name}: nothing between the header and <BODY> (got {inside!r})")
    checks.finish()


if __name__ == "__main__":
    main()
