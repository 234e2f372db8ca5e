#!/usr/bin/env python3
"""A supervised client whose first connect() gives a sockaddr of the other family (the kernel
refuses it, EINVAL or EAFNOSUPPORT, and leaves the socket unconnected), then connects with the
right one and holds the connection 3 s. The connection watch follows sockets by their own
family, which that first call gave wrong: the client must still get one conn_open naming both
ends, and one conn_close once it closes, with both ends and tcp_info (not one given up while the
connection was open). The server runs in this test, outside tcptune, so the client is the only
socket followed. With --container-profile the sockets are handed over and the second connect is
not trapped at all.

    wrong_family_test.py --tcptune BIN --work-dir DIR [--container-profile BIN]
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

HOLD_S = 3.0
CLIENT = r"""
import ctypes, socket, struct, sys, time
libc = ctypes.CDLL(None, use_errno=True)
case, port, hold = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
ipv4 = struct.pack("=H", socket.AF_INET) + struct.pack("!H", port) + socket.inet_aton("127.0.0.1") + bytes(8)
mapped = socket.inet_pton(socket.AF_INET6, "::ffff:127.0.0.1")
ipv6 = struct.pack("=H", socket.AF_INET6) + struct.pack("!H", port) + bytes(4) + mapped + bytes(4)
family, wrong = {
    "ipv6_socket_ipv4_address": (socket.AF_INET6, ipv4),            # EINVAL: too short
    "ipv4_socket_ipv6_address": (socket.AF_INET, ipv6),             # EAFNOSUPPORT
    "ipv6_socket_ipv4_family": (socket.AF_INET6, ipv4 + bytes(12)),  # EAFNOSUPPORT
}[case]
client = socket.socket(family, socket.SOCK_STREAM)
address = ctypes.create_string_buffer(wrong, len(wrong))
if libc.connect(client.fileno(), address, len(wrong)) == 0:
    sys.exit("the first connect was not refused")
client.connect(("::ffff:127.0.0.1" if family == socket.AF_INET6 else "127.0.0.1", port))
time.sleep(hold)
client.close()
"""
CASES = ("ipv6_socket_ipv4_address", "ipv4_socket_ipv6_address", "ipv6_socket_ipv4_family")


def serve(listener):
    """Holds each accepted connection until its peer closes."""
    def drain(connection):
        with connection:
            while connection.recv(65536):
                pass

    while True:
        try:
            connection, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=drain, args=(connection,), daemon=True).start()


def problems_of(log):
    records = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    opens = [r for r in records if r.get("event") == "conn_open" and r.get("role") == "client"]
    closes = [r for r in records if r.get("event") == "conn_close" and r.get("role") == "client"]
    problems = []
    if len(opens) != 1 or "local" not in opens[0]:
        problems.append(f"conn_open records {opens}: one naming its local end expected")
    if len(closes) != 1:
        problems.append(f"{len(closes)} conn_close records")
    for record in closes:
        if record.get("duration_s", 0) < HOLD_S - 0.5:
            problems.append(f"conn_close after {record.get('duration_s')} s, while the connection stayed open")
        for field in ("local", "tcp_info"):
            if field not in record:
                problems.append(f"conn_close without {field}: {record}")
    return problems


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tcptune", required=True)
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--container-profile")
    args = parser.parse_args()
    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    client = work / "client.py"
    client.write_text(CLIENT)
    policy = work / "policy.toml"
    policy.write_text('version = 1\n[[rule]]\nname = "all"\nnodelay = "on"\n')
    listener = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    listener.bind(("::", 0))
    listener.listen(16)
    threading.Thread(target=serve, args=(listener,), daemon=True).start()
    port = listener.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TCPTUNE_") and k != "LD_PRELOAD"}
    failed = False
    for case in CASES:
        log = work / f"{case}.jsonl"
        log.unlink(missing_ok=True)
        command = ([args.container_profile] if args.container_profile else []) + [
            args.tcptune, "run", "--supervise", "--policy", str(policy), "--log", str(log), "--quiet", "--",
            "/usr/bin/python3", str(client), case, str(port), str(HOLD_S)]
        run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
        if run.returncode != 0:
            print(f"FAIL {case}: exit {run.returncode}: {run.stderr.strip()[-500:]}")
            failed = True
            continue
        problems = problems_of(log)
        print(("FAIL " if problems else "PASS ") + case + (": " + "; ".join(problems) if problems else ""))
        failed = failed or bool(problems)
    listener.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
