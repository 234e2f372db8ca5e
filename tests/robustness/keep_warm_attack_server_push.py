#!/usr/bin/env python3
"""keep_warm on accepted sockets (a server that pushes to its clients, rule role = "server"):
heartbeats between the server's messages, never inside one.

The server is a Python program under the shim (reno, 10 ms newline heartbeat); the client is
this script, not preloaded, which keeps every byte. Cases:
  cork           the server corks its messages: TCP_CORK=1 on the accepted socket, or no cork
                 (the sanity arm: the documented limit (docs/keep-warm.md) puts heartbeats in the pause, so
                 heartbeats do reach it). After a burst: "<HEAD>", a 600 ms pause, "<BODY>",
                 TCP_CORK=0. Corked, nothing may arrive between <HEAD> and <BODY>.
  cork_listener  the same with TCP_CORK=1 set on the listening socket before accept(): Linux
                 copies the cork, like TCP_NODELAY, to the accepted socket, which is corked
                 though the app never corks that descriptor itself.
  asyncio        an asyncio server (TCP_NODELAY set by asyncio) pushes newline-delimited frames
                 with transport.write and writelines, small and large (written in part and
                 finished by the event loop), with pauses between them: every line arrives
                 whole and in order, empty lines (heartbeats) only between frames.
  selectors      the same with a selectors loop over a non-blocking socket, Nagle left on, the
                 frames split into several send() calls with MSG_MORE on all but the last.
"""
import os
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from robustlib import (Checks, clean_env, fresh, parse_args, records, require_keep_warm_host,  # noqa: E402
                       write_policy)

BURST = b"x" * (5 << 20)
NEWLINE = b"\n"
POLICY = ('[[rule]]\nname = "push"\nmatch = { role = "server" }\ncongestion = "reno"\n'
          'keep_warm = { heartbeat = "\\n", interval = "10ms" }\n')

CORK_SERVER = r'''
import fcntl, socket, struct, sys, termios, time
where = sys.argv[1]
listener = socket.socket()
listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 1400)
listener.bind(("127.0.0.1", 0))
listener.listen(1)
if where == "listener":
    listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
print(listener.getsockname()[1], flush=True)
listener.settimeout(30)
conn, _ = listener.accept()
conn.sendall(b"x" * (5 << 20))
deadline = time.time() + 10
while struct.unpack("i", fcntl.ioctl(conn.fileno(), termios.TIOCOUTQ, b"\0" * 4))[0] and time.time() < deadline:
    time.sleep(0.01)
time.sleep(0.3)
if where == "accepted":
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
corked = conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_CORK)
conn.sendall(b"<HEAD>")
time.sleep(0.6)
conn.sendall(b"<BODY>")
if where != "none":
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 0)
time.sleep(0.1)
conn.close()
print("corked", corked, flush=True)
'''

FRAMES = 40


def frame(i):
    """Frame i: a line of a size that cycles from a few bytes to 600 KiB (written in part)."""
    size = (17, 300, 4000, 70000, 600 * 1024)[i % 5]
    body = (b"%d:" % i) + bytes(ord("a") + (i + k) % 26 for k in range(size))
    return body + b"\n"


FRAME_CODE = '''
def frame(i):
    size = (17, 300, 4000, 70000, 600 * 1024)[i % 5]
    body = (b"%d:" % i) + bytes(ord("a") + (i + k) % 26 for k in range(size))
    return body + b"\\n"
'''

ASYNCIO_SERVER = FRAME_CODE + r'''
import asyncio, socket, sys
FRAMES = int(sys.argv[1])

async def serve(reader, writer):
    sock = writer.get_extra_info("socket")
    writer.write(b"x" * (5 << 20))
    await writer.drain()
    await asyncio.sleep(0.3)
    for i in range(FRAMES):
        data = frame(i)
        if i % 2:
            writer.writelines([data[:len(data) // 3], data[len(data) // 3:]])
        else:
            writer.write(data)
        await writer.drain()
        await asyncio.sleep(0.03 + 0.01 * (i % 4))
    print("nodelay", sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY), flush=True)
    writer.close()
    await writer.wait_closed()
    done.set_result(None)

async def main():
    global done
    done = asyncio.get_running_loop().create_future()
    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    sock = server.sockets[0]
    print(sock.getsockname()[1], flush=True)
    await asyncio.wait_for(done, 60)
    server.close()

asyncio.run(main())
'''

SELECTORS_SERVER = FRAME_CODE + r'''
import selectors, socket, sys, time
FRAMES = int(sys.argv[1])
listener = socket.socket()
listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 1400)
listener.bind(("127.0.0.1", 0))
listener.listen(1)
print(listener.getsockname()[1], flush=True)
listener.settimeout(30)
conn, _ = listener.accept()
conn.setblocking(False)
sel = selectors.DefaultSelector()
sel.register(conn, selectors.EVENT_WRITE)

def send_all(data, flags=0):
    view = memoryview(data)
    while view:
        try:
            n = conn.send(view, flags)
        except BlockingIOError:
            sel.select(5)
            continue
        view = view[n:]

send_all(b"x" * (5 << 20))
time.sleep(0.3)
for i in range(FRAMES):
    data = frame(i)
    cut = [0, len(data) // 4, len(data) // 2, len(data)]
    for k in range(3):
        send_all(data[cut[k]:cut[k + 1]], socket.MSG_MORE if k < 2 else 0)
    time.sleep(0.03 + 0.01 * (i % 4))
print("nodelay", conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY), flush=True)
conn.close()
'''


def run_server(args, name, code, argv, checks):
    """Starts the server under the shim, connects, keeps every byte; (data, server output)."""
    path = os.path.join(args.work_dir, name + "_server.py")  # not "asyncio.py": it would shadow the module
    open(path, "w").write(code)
    policy = write_policy(args, "server-push", POLICY)
    log = fresh(os.path.join(args.work_dir, name + ".jsonl"))
    env = clean_env(LD_PRELOAD=args.shim, TCPTUNE_POLICY=policy, TCPTUNE_LOG=log, TCPTUNE_LOG_FORMAT="jsonl")
    process = subprocess.Popen([sys.executable, path, *argv], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    data = bytearray()
    port = process.stdout.readline().strip()
    if port.isdigit():
        client = socket.socket()
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 1400)
        client.settimeout(60)
        client.connect(("127.0.0.1", int(port)))
        try:
            while True:
                chunk = client.recv(1 << 20)
                if not chunk:
                    break
                data.extend(chunk)
        except OSError as error:
            print(f"client: {error}")
        client.close()
    try:
        out, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
    checks.check(process.returncode == 0, f"{name}: the server ran ({err.strip()[-300:]})")
    opens = [r for r in records(log) if r.get("event") == "conn_open" and r.get("role") == "server"]
    keep_warm = [o for r in opens for o in r.get("options", []) if o["name"] == "keep_warm"]
    checks.check(bool(keep_warm) and keep_warm[0]["effective"] == "on",
                 f"{name}: keep_warm is on for the accepted socket ({keep_warm})")
    return bytes(data), out


def case_cork(args, checks, places=("none", "accepted")):
    for where in places:
        name = f"cork-{where}"
        data, out = run_server(args, name, CORK_SERVER, [where], checks)
        ok = data.startswith(BURST)
        rest = data[len(BURST):].strip(b"\n")
        well_formed = ok and rest.startswith(b"<HEAD>") and rest.endswith(b"<BODY>")
        inside = rest[len(b"<HEAD>"):-len(b"<BODY>")] if well_formed else None
        beats = inside.count(NEWLINE) if inside is not None else None
        checks.check(well_formed and not (inside or b"").strip(b"\n"),
                     f"{name}: the burst, then <HEAD>...<BODY> with at most heartbeats inside ({rest[:60]!r})")
        if where == "none":
            checks.check(inside is not None and inside.count(b"\n") >= 5,
                         f"uncorked: heartbeats reach the pause, so the setup makes them "
                         f"({beats})")
        else:
            checks.check("corked 1" in out, f"{name}: the accepted socket is corked ({out.strip()})")
            checks.check(inside == b"",
                         f"TCP_CORK=1 on the {where} socket: no heartbeat inside the corked message "
                         f"({beats} newlines between <HEAD> and <BODY>)")


def check_frames(name, data, out, checks):
    ok = data.startswith(BURST)
    lines = data[len(BURST):].split(b"\n") if ok else []
    frames = [line for line in lines if line]
    heartbeats = sum(1 for line in lines[:-1] if not line)  # empty lines; the last item follows the final newline
    expected = [frame(i)[:-1] for i in range(FRAMES)]
    wrong = [i for i, (got, want) in enumerate(zip(frames, expected)) if got != want]
    checks.check(ok and len(frames) == FRAMES and not wrong and data.endswith(b"\n"),
                 f"{name}: the burst, then {FRAMES} frames whole and in order ({len(frames)} frames, "
                 f"wrong: {wrong[:5]})")
    checks.check(heartbeats >= FRAMES // 2, f"{name}: heartbeats between frames ({heartbeats})")
    checks.check("nodelay" in out, f"{name}: server finished ({out.strip()})")


def case_asyncio(args, checks):
    data, out = run_server(args, "asyncio", ASYNCIO_SERVER, [str(FRAMES)], checks)
    check_frames("asyncio", data, out, checks)


def case_selectors(args, checks):
    data, out = run_server(args, "selectors", SELECTORS_SERVER, [str(FRAMES)], checks)
    check_frames("selectors", data, out, checks)
    checks.check("nodelay 0" in out, f"selectors: TCP_NODELAY still 0 as the server left it ({out.strip()})")


def main():
    args = parse_args()
    require_keep_warm_host()
    checks = Checks()
    cases = {"cork": case_cork, "cork_listener": lambda a, c: case_cork(a, c, ("none", "listener")),
             "asyncio": case_asyncio, "selectors": case_selectors}
    if args.case not in cases:
        print(f"unknown case {args.case!r}")
        sys.exit(2)
    cases[args.case](args, checks)
    checks.finish()


if __name__ == "__main__":
    main()
