#!/usr/bin/env python3
"""keep_warm keeps going after a splice() or sendfile() that returns fewer bytes than it was
asked for because its source ran dry, the usual way to call them.

A proxy splices from a pipe with a large length (splice(pipe, sock, 65536) moves what the pipe
holds), and a file server calls sendfile() with more than is left of the file and stops at 0;
both calls move everything there was. The app (Python, under the shim, reno, 10 ms newline
heartbeat) sends a burst, waits 0.3 s, sends one 100-byte message "<...$" one of five ways,
then stays silent for 1 s and closes: send(); splice() and sendfile() of exactly 100 bytes
(the controls); splice() asking for 65536 with 100 in the pipe; sendfile() asking for 1 MiB of
a 100-byte file, then once more (0: end of file). The silence after the message must get
heartbeats as it does after send() (about 95 at 10 ms): the connection is idle and outside any
message, and a gate left "inside a message" would let it cool silently while the log says
keep_warm is on.
"""
import os
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from robustlib import (SKIP, Checks, KEEP_WARM_POLICY, clean_env, parse_args, require_keep_warm_host,  # noqa: E402
                       write_policy)

MESSAGE = b"<" + b"m" * 98 + b"$"

APP = r'''
import fcntl, os, socket, struct, sys, termios, time
port, mode, path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
s = socket.socket()
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 1400)
s.connect(("127.0.0.1", port))
s.sendall(b"x" * (5 << 20))
deadline = time.time() + 10
while struct.unpack("i", fcntl.ioctl(s.fileno(), termios.TIOCOUTQ, b"\0" * 4))[0] and time.time() < deadline:
    time.sleep(0.01)
time.sleep(0.3)
msg = b"<" + b"m" * 98 + b"$"
if mode == "send":
    n = s.send(msg)
elif mode.startswith("splice"):
    r, w = os.pipe()
    os.write(w, msg)
    n = os.splice(r, s.fileno(), len(msg) if mode == "splice-exact" else 65536)
else:
    open(path, "wb").write(msg)
    f = os.open(path, os.O_RDONLY)
    if mode == "sendfile-exact":
        n = os.sendfile(s.fileno(), f, 0, len(msg))
    else:
        n = os.sendfile(s.fileno(), f, 0, 1 << 20)
        assert os.sendfile(s.fileno(), f, n, 1 << 20) == 0
assert n == len(msg), n
time.sleep(1.0)
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
    app = os.path.join(args.work_dir, "short_write_app.py")
    open(app, "w").write(APP)
    policy = write_policy(args, "short-write", KEEP_WARM_POLICY)
    for mode in ("send", "splice-exact", "sendfile-exact", "splice-65536", "sendfile-to-eof"):
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.settimeout(30)
        env = clean_env(LD_PRELOAD=args.shim, TCPTUNE_POLICY=policy)
        process = subprocess.Popen([sys.executable, app, str(listener.getsockname()[1]), mode,
                                    os.path.join(args.work_dir, "message.bin")],
                                   env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        data = bytearray()
        try:
            conn, _ = listener.accept()
            conn.settimeout(30)
            while True:
                chunk = conn.recv(1 << 20)
                if not chunk:
                    break
                data.extend(chunk)
            conn.close()
        except OSError as error:
            print(f"{mode}: {error}")
        listener.close()
        try:
            out, err = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
        checks.check(process.returncode == 0 and "done" in out, f"{mode}: the app ran ({err.strip()[-300:]})")
        rest = bytes(data[5 << 20:]) if data.startswith(b"x" * (5 << 20)) else b""
        end = rest.find(b"$")
        before, after = rest[:end + 1], rest[end + 1:]
        whole = before.strip(b"\n") == MESSAGE and not after.strip(b"\n")
        checks.check(whole, f"{mode}: the burst, the message whole, only heartbeats around it ({rest[:60]!r})")
        checks.check(after.count(b"\n") >= 20,
                     f"{mode}: heartbeats in the 1 s of silence after the message "
                     f"({after.count(NEWLINE)} newlines; {before.count(NEWLINE)} before it)")
    checks.finish()


NEWLINE = b"\n"

if __name__ == "__main__":
    main()
