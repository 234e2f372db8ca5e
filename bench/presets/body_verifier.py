#!/usr/bin/env python3
"""The upstream behind nginx and haproxy in the preset tests: POST /burst/SEQ is answered
"ok SEQ SHA256" when its body is exactly the one clients.py sends for SEQ, and 422 (with a
MISMATCH line in this program's output) otherwise.

  body_verifier.py --port P   (listens on 127.0.0.1)
"""
import argparse
import hashlib
import http.server
import sys

from clients import body_for


class Verifier(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        try:
            seq = int(self.path.rsplit("/", 1)[-1])
        except ValueError:
            seq = -1
        if seq >= 0 and body == body_for(seq, len(body)):
            status, answer = 200, f"ok {seq} {hashlib.sha256(body).hexdigest()}\n"
        else:
            status, answer = 422, f"mismatch {self.path} {len(body)} bytes\n"
            print(f"MISMATCH {self.path} {len(body)} bytes", flush=True)
        data = answer.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format, *args):
        pass  # the front server's access log has every request


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    options = parser.parse_args()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", options.port), Verifier)
    print(f"listening on 127.0.0.1:{options.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
