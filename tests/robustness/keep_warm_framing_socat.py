#!/usr/bin/env python3
"""keep_warm never puts a heartbeat inside a message that a relay forwards in pieces (issue 20,
part 1): socat, under the shim with a protocol preset on its outgoing connection, forwards a
producer that pauses inside its messages.

A relay writes whatever it has read, so its writes end wherever its input paused; each write
is accepted whole, and a heartbeat that follows the last write that returned whole lands
inside the message the relay is still forwarding. Only the protocol's own framing, followed
over the bytes written, says where a message ends.

  --case lines   `keep_warm = { protocol = "lines" }`: `socat -u STDIN TCP:sink`, fed 30 JSON
                 lines, each written as two halves 60 ms apart (then 60 ms after its newline).
                 The sink (this script, not under the shim) must get exactly the producer's
                 bytes; empty lines (the preset's heartbeat) may only stand between lines.
  --case redis   `keep_warm = { protocol = "redis-client" }`: `socat TCP-LISTEN TCP:redis`,
                 fed 30 RESP `SET` commands, each paused 60 ms inside its bulk-string value
                 (and after it). Every reply must be +OK, and a GET of every key (on a
                 connection of its own) must return the exact value; redis-server runs on
                 loopback, not under the shim.

Before the relay's real traffic a 5 MB burst of whole messages opens the window (keep-warm
sends nothing below the initial 10 segments; the rule also asks for reno and a 1400-byte MSS),
and heartbeats are 10 ms apart, so every pause is several intervals long. Each case runs twice:
under the shim, where the shim's log must show heartbeats on the relay's connection (the
pauses after whole messages are theirs), and without it, the control, which must be exact.
"""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from robustlib import (SKIP, Checks, StreamReceiver, clean_env, free_port, fresh, heartbeats_sent,  # noqa: E402
                       keep_warm_rule_policy, parse_args, require_keep_warm_host, shim_env, wait_until)

MESSAGES = 30
PAUSE = 0.06
BURST_BYTES = 5 << 20


def relay_policy(args, name, port, protocol):
    return keep_warm_rule_policy(args, name, f'port = {port}, role = "client"', f'protocol = "{protocol}"')


def relay_env(args, policy, log, shim):
    return shim_env(args, policy, log) if shim else clean_env()


# ---- lines ---------------------------------------------------------------------------------

def json_line(number, pad):
    return b'{"seq":%d,"kind":"reading","payload":"%s"}\n' % (number, b"v" * pad)


def run_lines(args, checks, shim):
    name = "lines, " + ("under the shim" if shim else "control without the shim")
    sink = StreamReceiver()
    log = fresh(os.path.join(args.work_dir, f"lines-{shim}.jsonl"))
    policy = relay_policy(args, "lines", sink.port, "lines")
    relay = subprocess.Popen(["socat", "-u", "STDIN", f"TCP:127.0.0.1:{sink.port}"], stdin=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=relay_env(args, policy, log, shim))
    sent = bytearray()
    try:
        burst = b"".join(json_line(-1 - i, 1000) for i in range(BURST_BYTES // 1040))
        relay.stdin.write(burst)
        relay.stdin.flush()
        sent += burst
        wait_until(lambda: len(sink.data) >= len(burst), 20)
        time.sleep(PAUSE)
        for number in range(MESSAGES):
            line = json_line(number, 200)
            for part in (line[:len(line) // 2], line[len(line) // 2:]):
                relay.stdin.write(part)
                relay.stdin.flush()
                sent += part
                time.sleep(PAUSE)
        relay.stdin.close()
        relay.wait(timeout=20)
    finally:
        if relay.poll() is None:
            relay.kill()
            relay.wait()
    sink.thread.join(timeout=20)
    checks.check(relay.returncode == 0, f"{name}: socat ran ({relay.stderr.read().decode(errors='replace')[-300:]})")
    data = bytes(sink.data)
    # The preset's heartbeat is an empty line: only between lines are there any.
    without_empty_lines = re.sub(rb"\n\n+", b"\n", data).lstrip(b"\n")
    produced = bytes(sent).splitlines()
    received = set(data.splitlines())
    broken = [line for line in produced if line not in received]
    slow = [line for line in broken if not line.startswith(b'{"seq":-')]
    checks.check(without_empty_lines == bytes(sent) and not broken,
                 f"{name}: the sink got exactly the producer's bytes, empty lines only between lines "
                 f"({len(data)} bytes for {len(sent)}; {len(broken)} of {len(produced)} lines split by a heartbeat, "
                 f"{len(slow)} of them of the {MESSAGES} paused ones, e.g. {[line[:40] for line in broken[:2]]!r})")
    if shim:
        count = heartbeats_sent(log)
        checks.check(count > 0, f"{name}: keep-warm was on, heartbeats went out ({count} in conn_close)")


# ---- redis ---------------------------------------------------------------------------------

def resp(*parts):
    return b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)


def value_of(number, size):
    return (b"value-%d-" % number + b"0123456789abcdef" * (size // 16 + 1))[:size]


def read_replies(conn, count, timeout):
    """`count` RESP simple replies (+OK, -ERR ...) from a relay connection, as a list."""
    conn.settimeout(timeout)
    buffer = b""
    while buffer.count(b"\r\n") < count:
        chunk = conn.recv(65536)
        if not chunk:
            break
        buffer += chunk
    return buffer.split(b"\r\n")[:count]


def redis_get(port, key):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(resp(b"GET", key))
        data = b""
        while True:
            if data.startswith(b"$-1\r\n"):
                return None
            if data.startswith(b"$") and b"\r\n" in data:
                size = int(data[1:data.index(b"\r\n")])
                start = data.index(b"\r\n") + 2
                if len(data) >= start + size + 2:
                    return data[start:start + size]
            if data and not data.startswith(b"$"):
                return data
            chunk = conn.recv(65536)
            if not chunk:
                return data
            data += chunk


class RedisServer:
    """redis-server on loopback in a temporary directory, not under the shim."""

    def __init__(self, work_dir):
        self.dir = tempfile.mkdtemp(prefix="redis-", dir=work_dir)
        self.port = free_port()
        self.log = os.path.join(self.dir, "redis.log")
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", self.dir, "--logfile", self.log, "--loglevel", "verbose", "--protected-mode", "no"],
            env=clean_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def ready(self):
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as conn:
                conn.sendall(b"PING\r\n")
                return conn.recv(64).startswith(b"+PONG")
        except OSError:
            return False

    def protocol_errors(self):
        text = open(self.log, errors="replace").read() if os.path.exists(self.log) else ""
        return [line for line in text.splitlines() if "Protocol error" in line or "protocol error" in line]

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def run_redis(args, checks, server, shim):
    name = "redis, " + ("under the shim" if shim else "control without the shim")
    tag = b"shim" if shim else b"plain"
    log = fresh(os.path.join(args.work_dir, f"redis-{shim}.jsonl"))
    policy = relay_policy(args, "redis", server.port, "redis-client")
    relay_port = free_port()
    relay = subprocess.Popen(["socat", f"TCP-LISTEN:{relay_port},bind=127.0.0.1,reuseaddr",
                              f"TCP:127.0.0.1:{server.port}"], stderr=subprocess.PIPE,
                             env=relay_env(args, policy, log, shim))
    values = {}
    replies = []
    try:
        conn = None
        deadline = time.monotonic() + 10
        while conn is None and time.monotonic() < deadline and relay.poll() is None:
            try:
                conn = socket.create_connection(("127.0.0.1", relay_port), timeout=20)
            except OSError:
                time.sleep(0.02)
        if conn is None:
            checks.check(False, f"{name}: socat listened ({relay.stderr.read().decode(errors='replace')[-300:]})")
            return
        with conn:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            warm_key = b"warm-" + tag
            values[warm_key] = value_of(0, BURST_BYTES)
            conn.sendall(resp(b"SET", warm_key, values[warm_key]))
            replies += read_replies(conn, 1, 20)
            time.sleep(PAUSE)
            for number in range(MESSAGES):
                key = b"key-%s-%d" % (tag, number)
                values[key] = value_of(number, 300)
                command = resp(b"SET", key, values[key])
                cut = command.index(values[key]) + 150  # inside the bulk string
                for part in (command[:cut], command[cut:]):
                    conn.sendall(part)
                    time.sleep(PAUSE)
            replies += read_replies(conn, MESSAGES, 20)
            conn.shutdown(socket.SHUT_WR)
    finally:
        relay.terminate()
        try:
            relay.wait(timeout=10)
        except subprocess.TimeoutExpired:
            relay.kill()
            relay.wait()
    bad_replies = [r for r in replies if r != b"+OK"]
    checks.check(len(replies) == MESSAGES + 1 and not bad_replies,
                 f"{name}: every SET through the relay answered +OK ({len(replies)} replies for "
                 f"{MESSAGES + 1}; not +OK: {bad_replies[:3]!r})")
    wrong = [k for k, v in values.items() if redis_get(server.port, k) != v]
    checks.check(not wrong, f"{name}: every value read back exact ({len(wrong)} of {len(values)} differ or are "
                 f"missing, e.g. {wrong[:3]!r})")
    if shim:
        count = heartbeats_sent(log)
        checks.check(count > 0, f"{name}: keep-warm was on, heartbeats went out ({count} in conn_close)")


def main():
    args = parse_args()
    require_keep_warm_host()
    if shutil.which("socat") is None:
        print("skip: needs socat")
        sys.exit(SKIP)
    checks = Checks()
    if args.case == "lines":
        for shim in (False, True):
            run_lines(args, checks, shim)
    elif args.case == "redis":
        if shutil.which("redis-server") is None:
            print("skip: needs redis-server")
            sys.exit(SKIP)
        server = RedisServer(args.work_dir)
        try:
            if not wait_until(server.ready, 10):
                checks.check(False, "redis-server started")
                checks.finish()
            for shim in (False, True):
                run_redis(args, checks, server, shim)
            errors = server.protocol_errors()
            checks.check(not errors, f"redis-server logged no protocol error ({errors[:3]})")
        finally:
            server.stop()
    else:
        print(f"unknown --case {args.case!r}")
        sys.exit(2)
    checks.finish()


if __name__ == "__main__":
    main()
