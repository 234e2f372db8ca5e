#!/usr/bin/env python3
"""Both ends of one loopback connection in one process, for the preset side test: each end
sends a burst that opens its congestion window (one message of the preset's protocol, so
keep-warm, which follows the protocol's framing, knows it has ended), waits until it is
acknowledged, stays silent for GAP seconds, sends a last message and shuts its side down. Each end counts what it received
beyond the peer's bytes: heartbeats, if the peer's shim sent any.

Prints one JSON line: {"client_received_extra": N, "server_received_extra": N, ...}.
"""
import argparse
import fcntl
import json
import socket
import termios
import threading
import time

BURST_BODY = 5_000_000


def message(protocol, body):
    """`body` as one message of the preset's protocol: what its framer sees end."""
    if protocol == "http1-client":
        return b"POST /burst HTTP/1.1\r\nHost: side\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    if protocol == "stomp":
        return b"SEND\ndestination:/queue/side\ncontent-length:%d\n\n" % len(body) + body + b"\0"
    raise SystemExit(f"no messages for {protocol}")


def unacknowledged(sock):
    return int.from_bytes(fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0"), "little")


def talk(sock, gap, burst, last, received, key, errors):
    """Send the burst, go quiet, end; read everything the peer sends meanwhile."""
    def read():
        total = bytearray()
        while chunk := sock.recv(1 << 20):
            total += chunk
        received[key] = bytes(total)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        sock.sendall(burst)
        deadline = time.monotonic() + 20
        while unacknowledged(sock) and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(gap)
        sock.sendall(last)
        sock.shutdown(socket.SHUT_WR)
    except OSError as error:
        errors.append(f"{key}: {error}")
    reader.join(timeout=60)
    sock.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gap", type=float, default=1.5)
    parser.add_argument("--protocol", required=True)
    options = parser.parse_args()
    listener = socket.socket()
    # Ethernet-sized segments, inherited by the accepted socket: a burst then needs more than
    # the initial 10 segments, so the window grows and a restart would shrink it.
    listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 1400)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    client = socket.socket()
    client.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 1400)
    client.connect(listener.getsockname())
    server, _ = listener.accept()
    received, errors = {}, []
    burst, last = message(options.protocol, b"x" * BURST_BODY), message(options.protocol, b"DONE")
    ends = [threading.Thread(target=talk, args=(client, options.gap, burst, last, received, "client", errors)),
            threading.Thread(target=talk, args=(server, options.gap, burst, last, received, "server", errors))]
    for end in ends:
        end.start()
    for end in ends:
        end.join()
    listener.close()
    result = {"errors": errors}
    for key in ("client", "server"):
        data = received.get(key, b"")
        whole = data.startswith(burst) and data.endswith(last)
        result[f"{key}_received_whole"] = whole
        result[f"{key}_received_extra"] = len(data) - len(burst) - len(last)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
