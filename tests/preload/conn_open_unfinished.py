#!/usr/bin/env python3
"""Connects that have not finished when connect() returns (pending_open.hpp), past the reserve of
512 conn_opens the worker gives back:
- 600 non-blocking connects to a listener whose queue is full (their SYNs dropped: they never
  complete), all closed; 600 blocking ones after (the reserve reused); 600 more never completed and
  left open at exit: each gets one conn_open and one conn_close, both naming its own port and the
  peer it connected to (a connection closed while connecting names the peer it was meant for);
- a blocking connect interrupted by a signal (EINTR, no SA_RESTART) that completes later, its
  program never asking SO_ERROR: its conn_open is written while it is open (the worker looks)."""
import json
import time

from testlib import Checks, parse_args, port_of, records, start_logged_python

COUNT = 600

APP = r"""
import ctypes, json, resource, signal, socket, sys, threading, time
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))

def full_listener():
    # Backlog 0 and one connection queued, never accepted: later SYNs are dropped.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    filler = socket.create_connection(listener.getsockname())
    return listener, filler

def never_completed(port):
    held = []
    for _ in range(COUNT):
        one = socket.socket()
        one.setblocking(False)
        assert one.connect_ex(("127.0.0.1", port)) != 0
        held.append(one)
    return held

full, filler = full_listener()
full_port = full.getsockname()[1]
out = {"full_port": full_port, "filler": filler.getsockname()[1]}
held = never_completed(full_port)
out["closed_connecting"] = [one.getsockname()[1] for one in held]
for one in held:
    one.close()
good = socket.socket()
good.bind(("127.0.0.1", 0))
good.listen(1024)
out["good_port"] = good.getsockname()[1]
out["completed"] = []
for _ in range(COUNT):
    one = socket.create_connection(good.getsockname())
    other, _ = good.accept()
    out["completed"].append(one.getsockname()[1])
    one.close()
    other.close()

# EINTR: connect() through libc (the hooks see it; Python's own would ask SO_ERROR afterwards).
eintr_listener, eintr_filler = full_listener()
signal.signal(signal.SIGALRM, lambda *_: None)  # Python installs it without SA_RESTART
def make_room():
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM])
    time.sleep(0.3)
    eintr_listener.accept()  # the connect's retransmitted SYN then finds room
threading.Thread(target=make_room, daemon=True).start()
libc = ctypes.CDLL(None, use_errno=True)
interrupted = socket.socket()
address = socket.inet_aton("127.0.0.1")
sockaddr = (ctypes.c_char * 16)(*([2, 0] + list(eintr_listener.getsockname()[1].to_bytes(2, "big")) + list(address) + [0] * 8))
signal.setitimer(signal.ITIMER_REAL, 0.2)
result = libc.connect(interrupted.fileno(), sockaddr, 16)
out["eintr"] = {"result": result, "errno": ctypes.get_errno(), "port": interrupted.getsockname()[1],
                "peer": eintr_listener.getsockname()[1]}
print(json.dumps(out), flush=True)
sys.stdin.readline()
interrupted.close()
# Another listener: a port let go by a connection closed while connecting may be this one's again.
exit_full, exit_filler = full_listener()
left_open = never_completed(exit_full.getsockname()[1])
print(json.dumps({"exit_full_port": exit_full.getsockname()[1],
                  "open_at_exit": [one.getsockname()[1] for one in left_open]}), flush=True)
sys.exit(0)
""".replace("COUNT", str(COUNT))






def main():
    args = parse_args()
    checks = Checks()
    app, log = start_logged_python(args, "unfinished", APP)
    try:
        first = json.loads(app.stdout.readline())
        eintr = first["eintr"]
        checks.check(eintr["result"] == -1 and eintr["errno"] == 4, f"the blocking connect returned EINTR ({eintr})")
        # Its SYN is sent again 1 s after the first, then the worker looks at most once a second.
        deadline = time.monotonic() + 8
        opened = []
        while time.monotonic() < deadline and not opened:
            opened = [r for r in records(log) if r.get("event") == "conn_open" and r.get("role") == "client"
                      and port_of(r.get("local")) == eintr["port"] and port_of(r.get("peer")) == eintr["peer"]]
            time.sleep(0.05)
        checks.check(len(opened) == 1,
                     f"the interrupted connect's conn_open names both ends while it is open ({opened})")
        app.stdin.write("\n")
        app.stdin.close()
        last = json.loads(app.stdout.readline())
        checks.check(app.wait(timeout=60) == 0, "the program ran to its end")
    finally:
        if app.poll() is None:
            app.kill()
            app.wait()
    opens = {}
    closes = {}
    for record in records(log):
        if record.get("role") != "client" or record.get("event") not in ("conn_open", "conn_close"):
            continue
        table = opens if record["event"] == "conn_open" else closes
        key = (port_of(record.get("local")), port_of(record.get("peer")))
        table[key] = table.get(key, 0) + 1
    groups = {
        "closed while connecting": [(port, first["full_port"]) for port in first["closed_connecting"]],
        "completed": [(port, first["good_port"]) for port in first["completed"]],
        "connecting at exit": [(port, last["exit_full_port"]) for port in last["open_at_exit"]],
    }
    for name, wanted in groups.items():
        checks.check(len(wanted) == COUNT and len(set(wanted)) == COUNT, f"{name}: {len(set(wanted))} distinct ports")
        checks.check(all(opens.get(key) == 1 for key in wanted),
                     f"{name}: each has one conn_open naming its own ends "
                     f"({sum(1 for key in wanted if opens.get(key) != 1)} not)")
        checks.check(all(closes.get(key) == 1 for key in wanted),
                     f"{name}: each has one conn_close naming its own ends "
                     f"({sum(1 for key in wanted if closes.get(key) != 1)} not)")
    checks.finish()


if __name__ == "__main__":
    main()
