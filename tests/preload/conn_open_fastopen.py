#!/usr/bin/env python3
"""A client that connects by sending (sendto or sendmsg with MSG_FASTOPEN, connect() never called)
and keeps its connection open gets its conn_open, naming both ends, while the connection is open:
the worker is told to look at that connect as at one connect() left under way (pending_open.hpp).
Then, at its close, that one conn_open and one conn_close."""
import json
import time

from testlib import Checks, parse_args, port_of, records, skip, start_logged_python

APP = r"""
import json, socket, sys
MSG_FASTOPEN = 0x20000000
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(16)
port = listener.getsockname()[1]
client = socket.socket()
if sys.argv[1] == "sendto":
    sent = client.sendto(b"hello", MSG_FASTOPEN, ("127.0.0.1", port))
else:
    sent = client.sendmsg([b"hello"], [], MSG_FASTOPEN, ("127.0.0.1", port))
accepted, _ = listener.accept()
print(json.dumps({"listener_port": port, "sent": sent, "port": client.getsockname()[1]}), flush=True)
sys.stdin.readline()
client.close()
accepted.close()
"""






def client_records(log, event, port):
    return [r for r in records(log)
            if r.get("event") == event and r.get("role") == "client" and port_of(r.get("local")) == port]


def main():
    args = parse_args()
    try:
        with open("/proc/sys/net/ipv4/tcp_fastopen") as f:
            if int(f.read()) & 1 == 0:
                skip("TCP Fast Open is off for clients (net.ipv4.tcp_fastopen)")
    except OSError:
        skip("no /proc/sys/net/ipv4/tcp_fastopen")
    checks = Checks()
    for call in ("sendto", "sendmsg"):
        app, log = start_logged_python(args, f"fastopen_{call}", APP, call)
        try:
            first = json.loads(app.stdout.readline())
            checks.check(first["sent"] == 5, f"{call} with MSG_FASTOPEN connected and sent ({first})")
            # The worker looks 1 ms after, then less and less often: well within 5 s.
            deadline = time.monotonic() + 5
            opened = []
            while time.monotonic() < deadline and not opened:
                opened = client_records(log, "conn_open", first["port"])
                time.sleep(0.05)
            checks.check(len(opened) == 1 and port_of(opened[0].get("peer")) == first["listener_port"],
                         f"{call}: its conn_open names both ends while it is open ({opened})")
            app.stdin.write("\n")
            app.stdin.close()
            checks.check(app.wait(timeout=30) == 0, f"{call}: the program ran to its end")
        finally:
            if app.poll() is None:
                app.kill()
                app.wait()
        opens = client_records(log, "conn_open", first["port"])
        closes = client_records(log, "conn_close", first["port"])
        checks.check(len(opens) == 1 and len(closes) == 1 and port_of(closes[0].get("peer")) == first["listener_port"],
                     f"{call}: one conn_open and one conn_close, naming its ends ({len(opens)}, {len(closes)})")
    checks.finish()


if __name__ == "__main__":
    main()
