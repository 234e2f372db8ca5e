#!/usr/bin/python3
"""Real protocol clients for the keep_warm presets: bursts after idle gaps over one connection.

  clients.py PROTOCOL --host H --port P [--size 60000] [--gap 1.5] [--count 5] [--warmup 4]
             [--idle-before-close SECONDS]

PROTOCOL is http1 (http.client against an HTTP/1.1 server whose upstream checks every body),
redis (redis-py SET/GET), amqp091 (pika, publisher confirms), stomp (stomp.py SEND with a
receipt) or lines (newline-delimited JSON over a plain socket). Warm-up requests go back to
back and open the congestion window, as a long-lived connection's earlier traffic would; then
each of COUNT requests follows GAP seconds of silence. A request's latency runs from the start
of the call until its answer is in: one round trip when the window survived the gap, more after
a restart. At the end everything sent is read back or checked where the protocol allows.

Prints one JSON line: {"protocol", "latency_ms": [...], "warmup_ms": [...], "requests",
"answered", "errors": [...]}; exit 0 only when every request was answered correctly.

It runs under the interpreter the Debian client libraries are installed for (/usr/bin/python3).
"""
import argparse
import hashlib
import json
import random
import socket
import string
import sys
import threading
import time

ALPHABET = (string.ascii_letters + string.digits).encode()


def body_for(seq, size):
    """Printable bytes that differ per request, so a misplaced or lost byte shows."""
    generator = random.Random(seq)
    return bytes(generator.choices(ALPHABET, k=size))


def digest(data):
    return hashlib.sha256(data).hexdigest()


class Http1:
    """http.client keep-alive POSTs; the server's upstream answers "ok SEQ SHA256-OF-BODY"."""

    def __init__(self, options):
        import http.client
        self.connection = http.client.HTTPConnection(options.host, options.port, timeout=30)

    def request(self, seq, body):
        self.connection.request("POST", f"/burst/{seq}", body=body,
                                headers={"Content-Type": "application/octet-stream"})
        response = self.connection.getresponse()
        answer = response.read().decode(errors="replace")
        if response.status != 200 or answer != f"ok {seq} {digest(body)}\n":
            return f"request {seq}: HTTP {response.status} {answer.strip()[:200]!r}"
        return None

    def finish(self, bodies):
        return []

    def close(self):
        self.connection.close()


class Redis:
    """SET of a large value per request (+OK), then GET of every key and the server's error count."""

    def __init__(self, options):
        import redis
        self.client = redis.Redis(host=options.host, port=options.port, socket_timeout=30)

    def request(self, seq, body):
        if self.client.set(f"presets:{seq}", body) is not True:
            return f"SET {seq} was not answered +OK"
        return None

    def finish(self, bodies):
        errors = [f"GET {seq} returned other bytes" for seq, body in bodies.items()
                  if self.client.get(f"presets:{seq}") != body]
        stats = self.client.info("stats")
        if stats.get("total_error_replies", 0) != 0:
            errors.append(f"redis-server replied with {stats['total_error_replies']} errors")
        return errors

    def close(self):
        self.client.close()


class Amqp091:
    """basic.publish with publisher confirms (the broker's basic.ack is the answer), then
    basic.get of every message."""

    QUEUE = "tcptune-presets-amqp"

    def __init__(self, options):
        import pika
        parameters = pika.ConnectionParameters(host=options.host, port=options.port,
                                               credentials=pika.PlainCredentials("guest", "guest"),
                                               connection_attempts=3, retry_delay=1, socket_timeout=30)
        self.connection = pika.BlockingConnection(parameters)
        self.channel = self.connection.channel()
        self.channel.confirm_delivery()
        self.channel.queue_declare(queue=self.QUEUE, auto_delete=False)
        self.channel.queue_purge(queue=self.QUEUE)

    def request(self, seq, body):
        import pika
        try:
            self.channel.basic_publish(exchange="", routing_key=self.QUEUE, body=body, mandatory=True,
                                       properties=pika.BasicProperties(message_id=str(seq)))
        except Exception as error:  # nack, unroutable, closed channel
            return f"publish {seq}: {error!r}"
        return None

    def pause(self, seconds):
        self.connection.sleep(seconds)  # keeps serving the connection, as a pika app does

    def finish(self, bodies):
        errors = []
        for seq, body in bodies.items():
            method, properties, received = self.channel.basic_get(queue=self.QUEUE, auto_ack=True)
            if method is None or properties.message_id != str(seq) or received != body:
                errors.append(f"message {seq} did not come back whole and in order")
        self.channel.queue_delete(queue=self.QUEUE)
        return errors

    def close(self):
        self.connection.close()


class Stomp:
    """SEND with a receipt header (the broker's RECEIPT is the answer), then SUBSCRIBE and read
    every message back."""

    DESTINATION = "/queue/tcptune-presets-stomp"

    def __init__(self, options):
        import stomp
        self.condition = threading.Condition()
        self.receipts = set()
        self.messages = []
        self.broker_errors = []
        outer = self

        class Listener(stomp.ConnectionListener):
            def on_receipt(self, frame):
                with outer.condition:
                    outer.receipts.add(frame.headers.get("receipt-id"))
                    outer.condition.notify_all()

            def on_message(self, frame):
                with outer.condition:
                    outer.messages.append(frame)
                    outer.condition.notify_all()

            def on_error(self, frame):
                with outer.condition:
                    outer.broker_errors.append(f"ERROR frame: {frame.headers} {frame.body!r:.200}")
                    outer.condition.notify_all()

        # vhost: the CONNECT frame's host header, which RabbitMQ takes as the virtual host.
        self.connection = stomp.Connection12([(options.host, options.port)], heartbeats=(0, 0), vhost="/")
        self.connection.set_listener("presets", Listener())
        self.connection.connect("guest", "guest", wait=True)

    def wait_for(self, predicate, timeout=30):
        with self.condition:
            return self.condition.wait_for(lambda: predicate() or self.broker_errors, timeout)

    def request(self, seq, body):
        receipt = f"r{seq}"
        self.connection.send(self.DESTINATION, body, headers={"receipt": receipt, "seq": str(seq)})
        if not self.wait_for(lambda: receipt in self.receipts) or self.broker_errors:
            return f"SEND {seq}: no RECEIPT ({self.broker_errors[:1]})"
        return None

    def finish(self, bodies):
        self.connection.subscribe(self.DESTINATION, id="presets", ack="auto")
        self.wait_for(lambda: len(self.messages) >= len(bodies))
        errors = list(self.broker_errors)
        received = {frame.headers.get("seq"): frame.body for frame in self.messages}
        for seq, body in bodies.items():
            got = received.get(str(seq))
            if (got.encode() if isinstance(got, str) else got) != body:
                errors.append(f"message {seq} did not come back whole")
        return errors

    def close(self):
        self.connection.disconnect()


class Lines:
    """One JSON object per line over a plain socket (Nagle left on, as most apps do); the service
    answers each with a line saying what it parsed."""

    def __init__(self, options):
        self.socket = socket.create_connection((options.host, options.port), timeout=30)
        self.reader = self.socket.makefile("rb")

    def request(self, seq, body):
        text = body.decode()
        self.socket.sendall((json.dumps({"seq": seq, "data": text}) + "\n").encode())
        line = self.reader.readline()
        try:
            answer = json.loads(line)
        except ValueError:
            return f"line {seq}: not JSON: {line[:200]!r}"
        expected = {"seq": seq, "bytes": len(text), "head": text[:16], "tail": text[-16:]}
        return None if answer == expected else f"line {seq}: {answer} instead of {expected}"

    def finish(self, bodies):
        return []

    def close(self):
        self.socket.close()


CLIENTS = {"http1": Http1, "redis": Redis, "amqp091": Amqp091, "stomp": Stomp, "lines": Lines}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("protocol", choices=sorted(CLIENTS))
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--size", type=int, default=60000, help="bytes per request body")
    parser.add_argument("--gap", type=float, default=1.5, help="seconds of silence before each request")
    parser.add_argument("--count", type=int, default=5, help="requests after a gap")
    parser.add_argument("--warmup", type=int, default=4, help="back-to-back requests first")
    parser.add_argument("--idle-before-close", type=float, default=0,
                        help="seconds of silence between the last answer and closing the connection")
    options = parser.parse_args()

    total = options.warmup + options.count
    bodies = {seq: body_for(seq, options.size) for seq in range(total)}
    client = CLIENTS[options.protocol](options)
    pause = getattr(client, "pause", time.sleep)
    result = {"protocol": options.protocol, "size": options.size, "gap_s": options.gap,
              "warmup_ms": [], "latency_ms": [], "requests": total, "answered": 0, "errors": []}
    try:
        for seq in range(total):
            if seq >= options.warmup:
                pause(options.gap)
            start = time.monotonic()
            error = client.request(seq, bodies[seq])
            elapsed_ms = (time.monotonic() - start) * 1000
            if error:
                result["errors"].append(error)
                break
            result["answered"] += 1
            result["warmup_ms" if seq < options.warmup else "latency_ms"].append(round(elapsed_ms, 3))
        if not result["errors"]:
            result["errors"] += client.finish(bodies)
        if options.idle_before_close:
            pause(options.idle_before_close)
    except Exception as error:  # a closed connection is a result too
        result["errors"].append(f"{type(error).__name__}: {error}")
    finally:
        try:
            client.close()
        except Exception as error:
            result["errors"].append(f"close: {type(error).__name__}: {error}")
    print(json.dumps(result), flush=True)
    return 0 if not result["errors"] and result["answered"] == total else 1


if __name__ == "__main__":
    sys.exit(main())
