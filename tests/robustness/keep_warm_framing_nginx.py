#!/usr/bin/env python3
"""keep_warm puts no heartbeat inside an HTTP/1.1 request that nginx streams to its upstream
(issue 20, part 1).

nginx as a streaming reverse proxy (`proxy_request_buffering off`, `proxy_http_version 1.1`,
an upstream keepalive pool so the upstream connection persists) runs under the shim with
`keep_warm = { protocol = "http1-client" }` on its upstream connections: exactly what that
preset is for. nginx forwards a request body as it arrives, so its writes end wherever the
client paused, and each is accepted whole: a heartbeat (CRLF) after one of them lands inside
the body. RFC 9112 lets a server skip CRLF only before a request line.

The client (this script) sends, over one keep-alive connection, a 5 MB POST that opens the
upstream connection's window, then 6 POSTs whose bodies (3 with Content-Length, 3 chunked)
come in 3 parts 60 ms apart, 60 ms after the request head and 60 ms before the next request
(heartbeats are 10 ms apart). The upstream (this script, not under the shim) parses strictly:
CRLFs before a request line are skipped and counted (the heartbeat's place), anything else
that is not the request is an error; it answers 200 with the body's SHA-256. Checked: each
request is answered 200 with its own body's hash, the upstream received exactly these bodies
in order, and it found no byte out of place. Under the shim nginx's log must show heartbeats
(the pauses between requests are theirs); the control runs the same without the shim.
Loopback only; nginx (nginx-light) runs from a private prefix, and skips (77) without it.

  --case buffered   `proxy_request_buffering on`, bodies over 1 KiB in temp files, `sendfile
                    on`: nginx sends each request's head with writev() and its body from the
                    file with sendfile(), which the framer counts down without reading.
"""
import hashlib
import os
import shutil
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from robustlib import (SKIP, Checks, clean_env, free_port, fresh, heartbeats_sent, keep_warm_rule_policy,  # noqa: E402
                       parse_args, require_keep_warm_host, shim_env, wait_until)

PAUSE = 0.06
REQUESTS = 6
WARM_BODY = b"w" * (5 << 20)


def body_of(number):
    return b"".join(b"<%d:%d:" % (number, part) + b"b" * 1990 + b">" for part in range(3))


class StrictUpstream:
    """A keep-alive HTTP/1.1 upstream that records every request body and every byte it could
    not place: CRLFs before a request line are counted (`skipped_crlfs`), anything else that
    breaks the framing goes to `errors` and closes the connection."""

    def __init__(self):
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        self.bodies = []
        self.errors = []
        self.skipped_crlfs = 0
        self.connections = 0
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def serve(self, conn):
        reader = Reader(conn)
        with conn:
            try:
                while True:
                    while reader.peek(2) == b"\r\n":
                        reader.take(2)
                        self.skipped_crlfs += 1
                    if not reader.peek(1):
                        return
                    body = self.request(reader)
                    self.bodies.append(body)
                    answer = hashlib.sha256(body).hexdigest().encode()
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(answer), answer))
            except (ValueError, OSError) as error:
                self.errors.append(str(error))

    def request(self, reader):
        head = reader.until(b"\r\n\r\n", 65536)
        lines = head.split(b"\r\n")
        method, _, version = lines[0].split(b" ", 2) if lines[0].count(b" ") == 2 else (b"", b"", b"")
        if not method.isalpha() or version != b"HTTP/1.1":
            raise ValueError(f"not a request line: {lines[0][:60]!r}")
        fields = {}
        for line in lines[1:-2]:
            name, sep, value = line.partition(b":")
            if not sep or not name or name != name.strip():
                raise ValueError(f"not a header field: {line[:60]!r}")
            fields[name.strip().lower()] = value.strip()
        if fields.get(b"transfer-encoding", b"").lower() == b"chunked":
            body = bytearray()
            while True:
                size_line = reader.until(b"\r\n", 100)[:-2]
                try:
                    size = int(size_line.split(b";")[0], 16)
                except ValueError:
                    raise ValueError(f"not a chunk size: {size_line[:60]!r}") from None
                chunk = reader.take(size + 2)
                if not chunk.endswith(b"\r\n"):
                    raise ValueError(f"chunk of {size} bytes not followed by CRLF: {chunk[-8:]!r}")
                if size == 0:
                    return bytes(body)
                body += chunk[:-2]
        return reader.take(int(fields.get(b"content-length", b"0")))


class Reader:
    """Buffered reads from a socket; EOF in the middle of what was asked is a ValueError."""

    def __init__(self, conn):
        self.conn = conn
        self.buffer = bytearray()

    def fill(self, count):
        while len(self.buffer) < count:
            chunk = self.conn.recv(1 << 20)
            if not chunk:
                return False
            self.buffer += chunk
        return True

    def peek(self, count):
        self.fill(count)
        return bytes(self.buffer[:count])

    def take(self, count):
        if not self.fill(count):
            raise ValueError(f"EOF {len(self.buffer)} bytes into {count}")
        out = bytes(self.buffer[:count])
        del self.buffer[:count]
        return out

    def until(self, end, limit):
        while end not in self.buffer:
            if len(self.buffer) > limit or not self.fill(len(self.buffer) + 1):
                raise ValueError(f"no {end!r} in {bytes(self.buffer[:60])!r}")
        cut = self.buffer.index(end) + len(end)
        out = bytes(self.buffer[:cut])
        del self.buffer[:cut]
        return out


class Nginx:
    """nginx in a private prefix: a streaming proxy on 127.0.0.1 in front of `upstream_port`."""

    def __init__(self, work_dir, upstream_port, env, buffered=False):
        self.dir = os.path.join(work_dir, "nginx")
        shutil.rmtree(self.dir, ignore_errors=True)
        for name in ("body", "proxy", "fastcgi", "uwsgi", "scgi", "logs"):
            os.makedirs(os.path.join(self.dir, name))
        self.port = free_port()
        self.error_log = os.path.join(self.dir, "error.log")
        user = "user root;\n" if os.geteuid() == 0 else ""
        # buffered: each body is read whole into a temp file (over 1 KiB), then sent to the
        # upstream after its head with sendfile().
        buffering = ("proxy_request_buffering on; client_body_buffer_size 1k; sendfile on;" if buffered
                     else "proxy_request_buffering off;")
        conf = os.path.join(self.dir, "nginx.conf")
        with open(conf, "w") as f:
            f.write(f"""{user}worker_processes 1;
pid {self.dir}/nginx.pid;
error_log {self.error_log} info;
events {{ worker_connections 64; }}
http {{
  access_log {self.dir}/access.log;
  client_body_temp_path {self.dir}/body;
  proxy_temp_path {self.dir}/proxy;
  fastcgi_temp_path {self.dir}/fastcgi;
  uwsgi_temp_path {self.dir}/uwsgi;
  scgi_temp_path {self.dir}/scgi;
  upstream verifier {{ server 127.0.0.1:{upstream_port}; keepalive 4; }}
  server {{
    listen 127.0.0.1:{self.port};
    client_max_body_size 0;
    keepalive_timeout 60s;
    location / {{
      proxy_pass http://verifier;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      {buffering}
      proxy_buffering off;
      proxy_read_timeout 20s;
    }}
  }}
}}
""")
        self.process = subprocess.Popen(["nginx", "-p", self.dir, "-e", self.error_log, "-c", conf,
                                         "-g", "daemon off;"], env=env, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE)

    def ready(self):
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
            return True
        except OSError:
            return self.process.poll() is not None

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def read_response(conn):
    """(status, body) of one Content-Length response."""
    reader = Reader(conn)
    head = reader.until(b"\r\n\r\n", 65536).split(b"\r\n")
    length = 0
    for line in head[1:]:
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    status = int(head[0].split(b" ")[1])
    body = reader.take(length)
    if reader.buffer:
        raise ValueError(f"bytes after the response: {bytes(reader.buffer[:40])!r}")
    return status, body


def send_slowly(conn, number):
    """Request `number`: its head, then its body in 3 parts, PAUSE between each."""
    parts = [body_of(number)[i * 1998:(i + 1) * 1998] for i in range(3)]
    chunked = number % 2 == 1
    framing = b"Transfer-Encoding: chunked" if chunked else b"Content-Length: %d" % len(body_of(number))
    conn.sendall(b"POST /slow/%d HTTP/1.1\r\nHost: upstream\r\n%s\r\n\r\n" % (number, framing))
    for index, part in enumerate(parts):
        time.sleep(PAUSE)
        if chunked:
            part = b"%x\r\n%s\r\n" % (len(part), part) + (b"0\r\n\r\n" if index == 2 else b"")
        conn.sendall(part)


def run_proxy(args, checks, shim):
    name = "nginx, " + ("under the shim" if shim else "control without the shim")
    upstream = StrictUpstream()
    log = fresh(os.path.join(args.work_dir, f"nginx-{shim}.jsonl"))
    policy = keep_warm_rule_policy(args, "upstream", f'port = {upstream.port}, role = "client"',
                                   'protocol = "http1-client"')
    nginx = Nginx(args.work_dir, upstream.port, shim_env(args, policy, log) if shim else clean_env(),
                  buffered=args.case == "buffered")
    answers = []
    try:
        if not wait_until(nginx.ready, 10) or nginx.process.poll() is not None:
            checks.check(False, f"{name}: nginx started ({nginx.process.stderr.read().decode()[-300:]})")
            return
        with socket.create_connection(("127.0.0.1", nginx.port), timeout=20) as conn:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn.sendall(b"POST /warm HTTP/1.1\r\nHost: upstream\r\nContent-Length: %d\r\n\r\n" % len(WARM_BODY)
                         + WARM_BODY)
            answers.append((read_response(conn), WARM_BODY))
            for number in range(REQUESTS):
                time.sleep(PAUSE)
                send_slowly(conn, number)
                answers.append((read_response(conn), body_of(number)))
    except (OSError, ValueError, IndexError) as error:
        answers.append(((0, str(error).encode()), b""))
    finally:
        nginx.stop()
        upstream.listener.close()
    wrong = [(status, answer[:64]) for (status, answer), body in answers
             if status != 200 or answer != hashlib.sha256(body).hexdigest().encode()]
    checks.check(len(answers) == REQUESTS + 1 and not wrong,
                 f"{name}: every request answered 200 with its own body's hash ({len(answers)} answers for "
                 f"{REQUESTS + 1}; wrong: {wrong[:3]})")
    expected = [WARM_BODY] + [body_of(number) for number in range(REQUESTS)]
    names = ["warm-up"] + [f"slow {number}" for number in range(REQUESTS)]
    differ = [names[i] for i, (got, want) in enumerate(zip(upstream.bodies, expected)) if got != want]
    checks.check(upstream.bodies == expected and not upstream.errors,
                 f"{name}: the upstream received exactly the {len(expected)} bodies and nothing out of place "
                 f"({len(upstream.bodies)} bodies, {len(differ)} differ: {differ[:3]}; "
                 f"framing errors: {upstream.errors[:3]}; CRLFs before request lines: {upstream.skipped_crlfs}; "
                 f"{upstream.connections} upstream connections)")
    if shim:
        count = heartbeats_sent(log)
        checks.check(count > 0, f"{name}: keep-warm was on, heartbeats went out ({count} in conn_close)")


def main():
    args = parse_args()
    require_keep_warm_host()
    if shutil.which("nginx") is None and not os.path.exists("/usr/sbin/nginx"):
        print("skip: needs nginx (nginx-light)")
        sys.exit(SKIP)
    os.environ["PATH"] += os.pathsep + "/usr/sbin"
    checks = Checks()
    for shim in (False, True):
        run_proxy(args, checks, shim)
    checks.finish()


if __name__ == "__main__":
    main()
