#!/usr/bin/env python3
"""keep_warm under `http1-client` on haproxy's connection to its backend, in http mode.

haproxy (under the shim: reno, 1400-byte MSS, a 10 ms heartbeat, on the connections it opens)
forwards each request as its body arrives, re-encoding chunked bodies in chunks of its own. The
client here (not under the shim) sends a 5 MiB POST that opens the window on haproxy's
backend connection, then requests that pause (150 ms, fifteen heartbeat intervals) inside
their bodies: a Content-Length body, a chunked body with extensions and trailers cut inside a
chunk and inside a chunk-size line, and a GET with a body. The backend (not under the shim)
parses every request strictly: CRLFs are allowed only before a request line, where they are
heartbeats; a byte out of place fails the test. It also runs without the shim, the control.

  --case te_list   the chunked request says "Transfer-Encoding: chunked," (an empty list
                   element, which RFC 9110 5.6.1 says a recipient ignores): haproxy takes it as
                   chunked and forwards the field as it is to the backend.
"""
import os
import shutil
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from robustlib import (SKIP, Checks, clean_env, fresh, free_port,  # noqa: E402
                       keep_warm_rule_policy, parse_args, records, require_keep_warm_host, shim_env, wait_until)

BURST = 5 << 20
PAUSE = 0.15


class StrictBackend:
    """Parses HTTP/1.1 requests off one connection at a time, answers each with a 200 naming
    the body's length and a digest, and records every problem."""

    def __init__(self):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.port = self.listener.getsockname()[1]
        self.problems = []
        self.bodies = []
        self.heartbeats = 0
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self.connection, args=(conn,), daemon=True).start()

    def connection(self, conn):
        reader = conn.makefile("rb")
        try:
            while True:
                line = reader.readline()
                while line == b"\r\n":
                    self.heartbeats += 1
                    line = reader.readline()
                if not line:
                    return
                if not line.endswith(b" HTTP/1.1\r\n"):
                    self.problems.append(f"bad request line {line[:80]!r}")
                    return
                headers = {}
                while True:
                    header = reader.readline()
                    if header == b"\r\n":
                        break
                    name, sep, value = header.partition(b":")
                    if not sep or not header.endswith(b"\r\n") or name != name.strip():
                        self.problems.append(f"bad header line {header[:80]!r}")
                        return
                    key = name.lower()
                    headers[key] = headers[key] + b"," + value.strip() if key in headers else value.strip()
                body = bytearray()
                codings = [c.strip().lower() for c in headers.get(b"transfer-encoding", b"").split(b",") if c.strip()]
                if codings and codings[-1] == b"chunked":
                    while True:
                        size_line = reader.readline()
                        size_text = size_line.split(b";")[0].strip()
                        if not size_line.endswith(b"\r\n") or not size_text or any(
                                c not in b"0123456789abcdefABCDEF" for c in size_text):
                            self.problems.append(f"bad chunk-size line {size_line[:80]!r}")
                            return
                        size = int(size_text, 16)
                        if size == 0:
                            break
                        body += reader.read(size)
                        if reader.read(2) != b"\r\n":
                            self.problems.append("chunk data not followed by CRLF")
                            return
                    while True:
                        trailer = reader.readline()
                        if trailer == b"\r\n":
                            break
                        if b":" not in trailer:
                            self.problems.append(f"bad trailer {trailer[:80]!r}")
                            return
                else:
                    body += reader.read(int(headers.get(b"content-length", b"0")))
                self.bodies.append(bytes(body))
                answer = f"{len(body)} {sum(body) % 65521}".encode()
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(answer), answer))
        except OSError as error:
            self.problems.append(f"backend: {error}")
        finally:
            conn.close()


def requests(case):
    """(pieces of one request, its body): the client pauses between pieces."""
    coding = b"chunked," if case == "te_list" else b"chunked"
    yield [b"POST /burst HTTP/1.1\r\nHost: a\r\nContent-Length: %d\r\n\r\n" % BURST + b"x" * BURST], b"x" * BURST
    yield [b"POST /cl HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\nhel", b"lo wo", b"rld"], b"hello world"
    yield ([b"POST /ch HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: " + coding + b"\r\n\r\n", b"5;ext=\"a;b\"\r\nhel",
            b"lo\r\n1", b"0\r\n0123456789abcdef\r\n0\r\nX-Trailer: y\r\n", b"\r\n"], b"hello0123456789abcdef")
    yield [b"GET /g HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\nab", b"cd"], b"abcd"
    yield [b"POST /crlf HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\n\r\n", b"\r\n"], b"\r\n\r\n"


def run_client(port, case):
    """Sends every request on one connection and reads each answer; the answers' problems."""
    problems = []
    with socket.create_connection(("127.0.0.1", port), timeout=20) as conn:
        reader = conn.makefile("rb")
        for pieces, body in requests(case):
            for index, piece in enumerate(pieces):
                if index > 0:
                    time.sleep(PAUSE)
                conn.sendall(piece)
            status = reader.readline()
            length = 0
            while True:
                header = reader.readline()
                if header in (b"\r\n", b""):
                    break
                if header.lower().startswith(b"content-length:"):
                    length = int(header.split(b":")[1])
            answer = reader.read(length)
            expected = f"{len(body)} {sum(body) % 65521}".encode()
            if not status.startswith(b"HTTP/1.1 200") or answer != expected:
                problems.append(f"{pieces[0][:24]!r}: {status.strip()!r} {answer!r}, expected {expected!r}")
            time.sleep(PAUSE)  # between requests: heartbeats are welcome
    return problems


def main():
    args = parse_args()
    require_keep_warm_host()
    haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
    if not os.path.exists(haproxy):
        print("skip: haproxy is not installed")
        sys.exit(SKIP)
    policy = keep_warm_rule_policy(args, "haproxy", 'role = "client"', 'protocol = "http1-client"')
    checks = Checks()
    for shim in (False, True):
        name = "under the shim" if shim else "control without the shim"
        backend = StrictBackend()
        port = free_port()
        config = os.path.join(args.work_dir, "haproxy.cfg")
        with open(config, "w") as f:
            f.write(f"""global
  maxconn 64
defaults
  mode http
  timeout connect 5s
  timeout client 30s
  timeout server 30s
frontend in
  bind 127.0.0.1:{port}
  default_backend out
backend out
  http-reuse always
  server s 127.0.0.1:{backend.port}
""")
        log = fresh(os.path.join(args.work_dir, f"haproxy-{int(shim)}.jsonl"))
        env = shim_env(args, policy, log) if shim else clean_env()
        proxy = subprocess.Popen([haproxy, "-db", "-f", config], env=env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, start_new_session=True)
        try:
            started = wait_until(lambda: socket.socket().connect_ex(("127.0.0.1", port)) == 0, 10)
            checks.check(started, f"{name}: haproxy listens")
            if not started:
                continue
            try:
                problems = run_client(port, args.case)
            except OSError as error:
                problems = [f"the client's connection failed: {error}"]
        finally:
            proxy.terminate()
            try:
                proxy.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proxy.kill()
                proxy.wait()
        checks.check(not problems and len(backend.bodies) == 5,
                     f"{name}: every request answered as sent ({problems}, {len(backend.bodies)} reached the backend)")
        checks.check(not backend.problems, f"{name}: the backend parsed every request ({backend.problems})")
        # haproxy stopped by SIGTERM writes no conn_close for its backend connection: the
        # heartbeats are counted where they arrive.
        if shim:
            ended = [r.get("keep_warm_ended_by") for r in records(log) if r.get("keep_warm_ended")]
            checks.check(backend.heartbeats > 0, f"{name}: heartbeats went out between requests "
                         f"({backend.heartbeats} CRLFs before request lines; keep-warm ended by: {ended})")
        else:
            checks.check(backend.heartbeats == 0, f"{name}: haproxy itself sends no CRLF before a request line "
                         f"({backend.heartbeats})")
    checks.finish()


if __name__ == "__main__":
    main()
