#!/usr/bin/env python3
"""connect(AF_UNSPEC), the disconnect, then a new connect on the same socket: each connection the
socket made is a connection of its own, with one conn_open and one conn_close naming its own ends.
- a connect still waiting (its listener's queue is full, the SYN dropped) is disconnected, then
  the socket connects to another listener;
- an established connection is disconnected, then the socket connects again;
- a disconnect of a socket that never connected changes nothing;
- a disconnect the kernel refuses (EINVAL: a length past sockaddr_storage) ends nothing.
The program calls libc's connect (ctypes) for the disconnect, as a C program would.
And a process that _exits with a connect still waiting: its conn_open names its local end (the
_exit hook writes what is pending; no conn_close, as _exit summarizes no connection)."""

from testlib import Checks, parse_args, port_of, records, run_logged_python

APP = r"""
import ctypes, errno, json, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
UNSPEC = (ctypes.c_char * 16)()  # sa_family 0: AF_UNSPEC

def disconnect(one):
    result = libc.connect(one.fileno(), UNSPEC, 16)
    assert result == 0, ctypes.get_errno()

full = socket.socket()
full.bind(("127.0.0.1", 0))
full.listen(0)
filler = socket.create_connection(full.getsockname())  # queued, never accepted: later SYNs are dropped
good = socket.socket()
good.bind(("127.0.0.1", 0))
good.listen(16)
out = {"full": full.getsockname()[1], "good": good.getsockname()[1], "filler": filler.getsockname()[1]}

# A connect still waiting, disconnected, then a connect elsewhere.
waiting = socket.socket()
waiting.setblocking(False)
assert waiting.connect_ex(full.getsockname()) != 0
out["waiting_first"] = waiting.getsockname()[1]
disconnect(waiting)
waiting.setblocking(True)
waiting.connect(good.getsockname())
out["waiting_second"] = waiting.getsockname()[1]
accepted, _ = good.accept()
waiting.sendall(b"x" * 100)
assert accepted.recv(100)
accepted.close()

# An established connection, disconnected, then connected again.
again = socket.create_connection(good.getsockname())
out["again_first"] = again.getsockname()[1]
first_accepted, _ = good.accept()
disconnect(again)
again.connect(good.getsockname())
out["again_second"] = again.getsockname()[1]
second_accepted, _ = good.accept()
first_accepted.close()
second_accepted.close()

# Never connected: the disconnect is nothing; the first connect is the connection.
fresh = socket.socket()
disconnect(fresh)
fresh.connect(good.getsockname())
out["fresh"] = fresh.getsockname()[1]
good.accept()[0].close()

# A disconnect the kernel refuses (a length past sockaddr_storage, or negative as an int: EINVAL
# before the family is looked at): the connection goes on, its later bytes its own.
kept = socket.create_connection(good.getsockname())
out["kept"] = kept.getsockname()[1]
kept_accepted, _ = good.accept()
for length in (256, -1):
    assert libc.connect(kept.fileno(), (ctypes.c_char * 256)(), length) == -1, length
    assert ctypes.get_errno() == errno.EINVAL, (length, ctypes.get_errno())
kept.sendall(b"k" * 5000)
assert kept_accepted.recv(5000)
try:
    kept.connect(good.getsockname())
    raise AssertionError("a connect on the connected socket succeeded")
except OSError as error:
    assert error.errno == errno.EISCONN, error
kept_accepted.close()

waiting.close()
again.close()
fresh.close()
kept.close()
print(json.dumps(out), flush=True)
"""

QUICK_EXIT = r"""
import json, os, socket
full = socket.socket()
full.bind(("127.0.0.1", 0))
full.listen(0)
filler = socket.create_connection(full.getsockname())
waiting = socket.socket()
waiting.setblocking(False)
assert waiting.connect_ex(full.getsockname()) != 0
print(json.dumps({"local": waiting.getsockname()[1], "peer": full.getsockname()[1]}), flush=True)
os._exit(0)
"""


def quick_exit(args, checks):
    out, log = run_logged_python(args, checks, "disconnect_quick_exit", QUICK_EXIT)
    opens = [r for r in records(log) if r.get("event") == "conn_open" and port_of(r.get("peer")) == out["peer"]
             and port_of(r.get("local")) != out["peer"]]
    waiting = [r for r in opens if port_of(r.get("local")) == out["local"]]
    checks.check(len(waiting) == 1, f"_exit with a connect waiting: its conn_open names its local end "
                                    f"({out}: {[(r.get('local'), r.get('peer')) for r in opens]})")


def main():
    args = parse_args()
    checks = Checks()
    out, log = run_logged_python(args, checks, "disconnect", APP)
    clients = [r for r in records(log) if r.get("role") == "client" and r.get("event") in ("conn_open", "conn_close")]
    seen = {}
    for record in clients:
        key = (record["event"], port_of(record.get("local")), port_of(record.get("peer")))
        seen[key] = seen.get(key, 0) + 1
    connections = {
        "the waiting connect": (out["waiting_first"], out["full"]),
        "the connect after its disconnect": (out["waiting_second"], out["good"]),
        "the established connection": (out["again_first"], out["good"]),
        "the connection after its disconnect": (out["again_second"], out["good"]),
        "the connect after a disconnect of nothing": (out["fresh"], out["good"]),
        "the connection whose disconnect the kernel refused": (out["kept"], out["good"]),
    }
    for name, (local, peer) in connections.items():
        for event in ("conn_open", "conn_close"):
            checks.check(seen.get((event, local, peer)) == 1,
                         f"{name}: one {event} naming its ends ({local} -> {peer}: {seen.get((event, local, peer))})")
    expected = {(event, local, peer) for local, peer in connections.values() for event in ("conn_open", "conn_close")}
    expected |= {(event, out["filler"], out["full"]) for event in ("conn_open", "conn_close")}
    kept_closes = [r for r in clients if r["event"] == "conn_close" and port_of(r.get("local")) == out["kept"]]
    checks.check(len(kept_closes) == 1 and kept_closes[0].get("bytes", 0) >= 5000,
                 f"a refused disconnect ends nothing: the conn_close counts the bytes sent after it "
                 f"({[r.get('bytes') for r in kept_closes]})")
    others = {key: count for key, count in seen.items() if key not in expected}
    checks.check(not others, f"no other client records ({others})")
    quick_exit(args, checks)
    checks.finish()


if __name__ == "__main__":
    main()
