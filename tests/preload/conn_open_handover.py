#!/usr/bin/env python3
"""A client's conn_open, handed from the app's thread to the worker (pending_open.hpp):
- a non-blocking connect whose program never asks SO_ERROR and keeps the connection open gets its
  conn_open, naming both ends, while the connection is still open (the worker looks at it);
- 600 connections open at once (more than the reserve of 512 conn_opens the worker gives back)
  and 600 more one after another each get one conn_open and one conn_close naming their own
  ports, none lost and none another's."""
import json
import time

from testlib import Checks, parse_args, port_of, records, start_logged_python

HELD = 600

APP = r"""
import json, resource, select, socket, sys
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(1024)
port = listener.getsockname()[1]
client = socket.socket()
client.setblocking(False)
error = client.connect_ex(("127.0.0.1", port))
select.select([], [client], [], 5)
accepted, _ = listener.accept()
print(json.dumps({"listener_port": port, "connect_ex": error, "port": client.getsockname()[1]}), flush=True)
sys.stdin.readline()
held = []
for _ in range(HELD):
    one = socket.create_connection(("127.0.0.1", port))
    held.append((one, listener.accept()[0]))
ports = [one.getsockname()[1] for one, _ in held]
for one, other in held:
    one.close()
    other.close()
for _ in range(HELD):
    one = socket.create_connection(("127.0.0.1", port))
    other = listener.accept()[0]
    ports.append(one.getsockname()[1])
    one.close()
    other.close()
print(json.dumps({"ports": ports}), flush=True)
""".replace("HELD", str(HELD))






def main():
    args = parse_args()
    checks = Checks()
    app, log = start_logged_python(args, "handover", APP)
    try:
        first = json.loads(app.stdout.readline())
        checks.check(first["connect_ex"] != 0, f"the non-blocking connect was under way when it returned ({first})")
        deadline = time.monotonic() + 5
        opened = []
        while time.monotonic() < deadline and not opened:
            opened = [r for r in records(log) if r.get("event") == "conn_open" and r.get("role") == "client"
                      and port_of(r.get("local")) == first["port"]]
            time.sleep(0.05)
        checks.check(len(opened) == 1 and port_of(opened[0].get("peer")) == first["listener_port"],
                     f"its conn_open names both ends while it is open, the program never asking SO_ERROR ({opened})")
        app.stdin.write("\n")
        app.stdin.flush()
        ports = json.loads(app.stdout.readline())["ports"]
        app.stdin.close()
        checks.check(app.wait(timeout=60) == 0, "the program ran to its end")
    finally:
        if app.poll() is None:
            app.kill()
            app.wait()
    logged = records(log)
    opens = {}
    closes = {}
    for record in logged:
        if record.get("role") != "client" or record.get("event") not in ("conn_open", "conn_close"):
            continue
        table = opens if record["event"] == "conn_open" else closes
        key = (port_of(record.get("local")), port_of(record.get("peer")))
        table[key] = table.get(key, 0) + 1
    wanted = [(port, first["listener_port"]) for port in ports]
    checks.check(len(ports) == 2 * HELD and len(set(ports)) == len(ports), f"{len(ports)} distinct client ports")
    checks.check(all(opens.get(key) == 1 for key in wanted),
                 f"each of the {len(wanted)} clients has one conn_open naming its own ends "
                 f"({sum(1 for key in wanted if opens.get(key) != 1)} not)")
    checks.check(all(closes.get(key) == 1 for key in wanted),
                 f"each has one conn_close naming its own ends ({sum(1 for key in wanted if closes.get(key) != 1)} not)")
    summary = [r for r in logged if r.get("event") == "summary"]
    checks.check(len(summary) == 1 and summary[0].get("dropped_records") == 0,
                 f"the summary says no record was dropped ({[s.get('dropped_records') for s in summary]})")
    checks.finish()


if __name__ == "__main__":
    main()
