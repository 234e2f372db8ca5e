#!/usr/bin/env python3
"""keep_warm protocol presets against real servers over the emulated 180 ms link (cubic, slow
start after idle on). The server runs in tcptune-b, a real client library in tcptune-a under
`tcptune run --policy` with only `keep_warm = { protocol = PRESET }`, and sends 60 KB requests
after 1.5 s gaps. Checked for each preset:
  - every request is answered correctly, and what was sent comes back whole;
  - the shim sent heartbeats on the client's connection (conn_close), and that connection had
    no idle restart;
  - the server logged nothing about a malformed or rejected request;
  - the same client under a policy without keep_warm does get idle restarts (the setup does
    exercise what the preset prevents).

  real_servers.py --server nginx|haproxy|redis|rabbitmq|lines --bin BUILD/bin --work-dir DIR
Root, /dev/net/tun and the server's Debian package, else exit 77. Holds /tmp/tcptune-linkem.lock
while the link is up (one link per host).
"""
import argparse
import os
import shutil
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "presets"))
import servers  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--server", required=True, choices=["nginx", "haproxy", "redis", "rabbitmq", "lines"])
parser.add_argument("--bin", required=True)
parser.add_argument("--work-dir", required=True)
args = parser.parse_args()

# (preset, clients.py protocol, port) per server; RabbitMQ serves two presets from one broker.
PLANS = {
    "nginx": [("http1-client", "http1", 18080)],
    "haproxy": [("http1-client", "http1", 18081)],
    "redis": [("redis-client", "redis", 16379)],
    "rabbitmq": [("amqp091", "amqp091", 15672), ("stomp", "stomp", 16613)],
    "lines": [("lines", "lines", 17000)],
}
UPSTREAM_PORT = 18090
CLIENT_LIBRARIES = {"http1": None, "redis": "redis", "amqp091": "pika", "stomp": "stomp", "lines": None}
CLIENT_PACKAGES = {"redis": "python3-redis", "pika": "python3-pika", "stomp": "python3-stomp"}


def skip(why):
    print(f"skipped: {why}")
    sys.exit(77)


if os.geteuid() != 0 or not os.path.exists("/dev/net/tun"):
    skip("needs root and /dev/net/tun for the emulated link")
server_class = {"nginx": servers.Nginx, "haproxy": servers.Haproxy, "redis": servers.RedisServer,
                "rabbitmq": servers.RabbitMq, "lines": servers.LineService}[args.server]
if server_class.missing():
    skip(f"needs {server_class.missing()}")
if not os.path.exists(servers.CLIENT_PYTHON):
    skip(f"needs {servers.CLIENT_PYTHON}")
for _, protocol, _ in PLANS[args.server]:
    module = CLIENT_LIBRARIES[protocol]
    if module and os.system(f"{servers.CLIENT_PYTHON} -c 'import {module}' 2>/dev/null") != 0:
        skip(f"needs {CLIENT_PACKAGES[module]}")

# A timeout's SIGTERM unwinds like an error: the servers stop and the link comes down.
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
bin_dir = Path(args.bin).resolve()
tcptune = bin_dir / "tcptune"
linkem = bin_dir / "tcptune-linkem"
work = Path(args.work_dir).resolve()
shutil.rmtree(work, ignore_errors=True)
work.mkdir(parents=True)
failed = 0


def check(ok, what):
    global failed
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    failed += not ok


def client_connection(records, rule):
    """conn_open and conn_close of the client's connections under RULE (the server's port)."""
    def ours(record):
        return record.get("role") == "client" and record.get("rule") == rule
    opened = [r for r in records if r["event"] == "conn_open" and ours(r)]
    closed = [r for r in records if r["event"] == "conn_close" and ours(r)]
    return opened, closed


def prove(server, preset, protocol, port):
    """The preset under the shim, then the control without keep_warm."""
    policy = servers.write_policy(work, preset, preset, port)
    result, done, records = servers.run_client(tcptune, protocol, port, work, preset, policy=policy)
    print(f"  {preset}: {result}")
    if done.stderr.strip():
        print(f"  client stderr: {done.stderr.strip()[-2000:]}")
    answered = result is not None and not result["errors"] and result["answered"] == result["requests"]
    check(done.returncode == 0 and answered,
          f"{preset}: every request answered correctly and read back whole "
          f"({result and result['answered']}/{result and result['requests']}, {result and result['errors'][:2]})")
    opened, closed = client_connection(records, preset)
    keep_warm = [o for r in opened for o in r.get("options", []) if o["name"] == "keep_warm"]
    check(len(opened) == 1 and len(keep_warm) == 1 and keep_warm[0]["effective"] == "on" and
          f"protocol {preset}:" in keep_warm[0]["requested"],
          f"{preset}: one client connection, keep_warm on with the preset ({keep_warm})")
    heartbeats = sum(r.get("heartbeats", 0) for r in closed)
    restarts = sum(r.get("idle_restarts", 0) for r in closed)
    check(len(closed) == 1 and heartbeats > 0,
          f"{preset}: the shim sent heartbeats on it ({heartbeats} in {len(closed)} conn_close)")
    idle_restart_records = [r for r in records if r["event"] == "idle_restart"]
    check(len(closed) == 1 and restarts == 0 and not idle_restart_records,
          f"{preset}: no idle restart on the kept-warm connection ({restarts}, {idle_restart_records[:1]})")
    problems = server.problems()
    check(not problems, f"{preset}: the server logged no malformed or rejected request ({problems[:5]})")

    control = servers.write_policy(work, f"{preset}-control", preset, port)
    control.write_text(control.read_text().replace(f'keep_warm = {{ protocol = "{preset}" }}\n', ""))
    result, done, records = servers.run_client(tcptune, protocol, port, work, f"{preset}-control", policy=control)
    _, closed = client_connection(records, f"{preset}-control")
    restarts = sum(r.get("idle_restarts", 0) for r in closed)
    check(done.returncode == 0 and restarts >= 1 and sum(r.get("heartbeats", 0) for r in closed) == 0,
          f"{preset}: without keep_warm the same client's connection restarts after idle ({restarts} restarts; "
          f"latency {result and result['latency_ms']} ms)")


def close_after_heartbeats(server, preset, protocol, port):
    """A client that idles before it closes: a heartbeat is the last thing the server reads.
    nginx and haproxy then log the connection's end as a request begun and abandoned (a 400
    without a request line), not as a malformed one; the others log nothing. The client sees
    nothing either way."""
    server.mark()
    policy = servers.write_policy(work, preset, preset, port)
    result, done, records = servers.run_client(tcptune, protocol, port, work, f"{preset}-idle-close", policy=policy,
                                               count=0, warmup=3, idle_before_close=1.5)
    _, closed = client_connection(records, preset)
    heartbeats = sum(r.get("heartbeats", 0) for r in closed)
    check(done.returncode == 0 and result is not None and result["answered"] == 3 and not result["errors"] and
          heartbeats > 0,
          f"{preset}, idle before close: answered, heartbeats sent in the last silence ({heartbeats}, "
          f"{result and result['errors']})")
    # The client's FIN takes half a round trip to reach the server, which logs the end then.
    expected = {"nginx": ['access: 400 "" 0'], "haproxy": ['log: 400 0 CR-- "<BADREQ>"']}.get(args.server, [])
    # Waiting for lines that must come: up to 10 s; for silence: 1 s, several round trips.
    deadline = time.monotonic() + (10 if expected else 1)
    while time.monotonic() < deadline and not (expected and len(server.problems()) >= len(expected)):
        time.sleep(0.1)
    problems = server.problems()
    if args.server == "nginx":
        lines = [" ".join(p.split()[:4]) for p in problems]
    elif args.server == "haproxy":
        lines = [f"log: {' '.join(p.split()[6:8])} {p.split()[10]} {p.split()[-1]}" for p in problems
                 if p.startswith("log: ") and len(p.split()) > 11]
        lines += [p for p in problems if not p.startswith("log: ")]
    else:
        lines = problems
    what = f"one line for the abandoned request {expected}" if expected else "nothing in the server's log"
    check(lines == expected, f"{preset}, idle before close: {what}, nothing about a malformed request ({problems})")
    if args.server == "nginx":
        requests = [line for line in server.access_lines() if line.startswith("200 ")]
        check(len(requests) == 3, f"{preset}, idle before close: nginx logged the 3 requests as 200 ({requests})")
    elif args.server == "haproxy":
        requests = [line for line in server.request_lines() if " 200 " in line]
        check(len(requests) == 3, f"{preset}, idle before close: haproxy logged the 3 requests as 200 ({requests})")


with servers.link_lock():
    link = None
    try:
        link = servers.link_up(linkem)
        plan = PLANS[args.server]
        if args.server in ("nginx", "haproxy"):
            with servers.BodyVerifier(work / "verifier", UPSTREAM_PORT) as verifier, \
                    server_class(work / args.server, plan[0][2], UPSTREAM_PORT) as server:
                prove(server, *plan[0])
                close_after_heartbeats(server, *plan[0])
                check(not verifier.problems(), f"the upstream received every body intact ({verifier.problems()[:3]})")
        elif args.server == "rabbitmq":
            with server_class(work / "rabbitmq", plan[0][2], plan[1][2]) as server:
                for preset, protocol, port in plan:
                    prove(server, preset, protocol, port)
                    close_after_heartbeats(server, preset, protocol, port)
        else:
            with server_class(work / args.server, plan[0][2]) as server:
                prove(server, *plan[0])
                close_after_heartbeats(server, *plan[0])
    finally:
        if link is not None:
            ours = servers.link_down(linkem, link)
            check(ours, "the link was ours throughout" if ours else servers.REPLACED)
print(f"{failed} failed")
sys.exit(1 if failed else 0)
