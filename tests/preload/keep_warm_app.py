#!/usr/bin/env python3
"""A legacy app for the keep-warm test, run under the shim: it sends numbered frames to
the test's server, with idle gaps and the awkward write patterns a heartbeat must never split
(MSG_MORE, a message accepted in part, several writer threads). Frame: b"FRM1", length,
sequence, then `length` bytes of a pattern derived from the sequence number; the server
checks every byte, so a heartbeat inside a frame is caught."""
import argparse
import fcntl
import random
import socket
import struct
import threading
import termios
import time

PAUSE = 0xFFFFFFFF  # a frame with this sequence asks the server to stop reading for a while


def frame(sequence, length):
    body = bytes((sequence * 7 + i) & 0xFF for i in range(min(length, 256)))
    body = (body * (length // 256 + 1))[:length]
    return struct.pack("<4sII", b"FRM1", length, sequence) + body


class Sender:
    def __init__(self, sock):
        self.sock = sock
        self.sequence = 0
        self.lock = threading.Lock()  # the app's own: frames never interleave with each other

    def send(self, length):
        with self.lock:
            self.sock.sendall(frame(self.sequence, length))
            self.sequence += 1

    def send_with_more(self, length, pause):
        """The header with MSG_MORE, a pause, then the rest: one message in two calls."""
        with self.lock:
            data = frame(self.sequence, length)
            self.sock.send(data[:12], socket.MSG_MORE)
            time.sleep(pause)
            self.sock.sendall(data[12:])
            self.sequence += 1

    def send_in_parts(self, length, pause):
        """A large frame on a non-blocking socket while the server is not reading: the first
        calls are accepted in part until EAGAIN; the app waits past the moment everything was
        acknowledged before writing the rest."""
        with self.lock:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65536)
            self.sock.sendall(struct.pack("<4sII", b"FRM1", 0, PAUSE))
            data = memoryview(frame(self.sequence, length))
            self.sock.setblocking(False)
            sent = 0
            try:
                while sent < len(data):
                    sent += self.sock.send(data[sent:])
            except BlockingIOError:
                pass
            self.sock.setblocking(True)
            # Whether everything written so far was acknowledged while the message was still
            # unfinished: only then was the gate's "inside a message" all that held heartbeats.
            drained = False
            deadline = time.monotonic() + pause
            while time.monotonic() < deadline:
                drained = drained or queued(self.sock) == 0
                time.sleep(0.005)
            self.sock.sendall(data[sent:])
            self.sequence += 1
            return sent, drained


def congestion_window(sock):
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
    return struct.unpack_from("I", info, 80)[0]  # tcpi_snd_cwnd


def queued(sock):
    """Bytes written and not yet acknowledged (SIOCOUTQ)."""
    return struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0"))[0]


def wait_until_acknowledged(sock, limit=10.0):
    deadline = time.monotonic() + limit
    while queued(sock) != 0:
        if time.monotonic() > deadline:
            raise SystemExit(f"keep_warm_app: {queued(sock)} bytes still unacknowledged after {limit} s")
        time.sleep(0.001)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--gaps", default="1.0", help="comma-separated idle gaps (s) between bursts")
    parser.add_argument("--more", type=float, default=0, help="pause inside a MSG_MORE message (s)")
    parser.add_argument("--parts", type=float, default=0, help="pause inside a message accepted in part (s)")
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--busy", type=float, default=0, help="how long the writer threads run (s)")
    args = parser.parse_args()

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # Loopback's 64 KiB segments let a 10-segment window carry more than this app keeps in
    # flight, so the window would grow only on a machine slow enough to fall behind. With
    # Ethernet-sized segments every burst is limited by the window and opens it.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 1400)
    sock.connect(("127.0.0.1", args.port))
    sender = Sender(sock)
    for gap in [float(g) for g in args.gaps.split(",") if g]:
        for _ in range(160):  # a burst that opens the congestion window past 10 segments
            sender.send(32 * 1024)
        wait_until_acknowledged(sock)  # the silence starts once the burst is delivered
        print(f"gap before frame {sender.sequence}: cwnd {congestion_window(sock)}", flush=True)
        time.sleep(gap)
        sender.send(10)  # the first write after the silence: did the kernel restart the window?
        print(f"after the gap: cwnd {congestion_window(sock)}", flush=True)
    if args.more:
        sender.send_with_more(100_000, args.more)
    if args.parts:
        # Larger than the most the send and receive buffers can hold (4 MiB + 32 MiB here).
        accepted, drained = sender.send_in_parts(64_000_000, args.parts)
        print(f"non-blocking calls accepted {accepted} of 64000012 bytes; drained inside it: {drained}", flush=True)
    if args.threads:
        deadline = time.monotonic() + args.busy

        def writer(seed):
            rng = random.Random(seed)
            while time.monotonic() < deadline:
                sender.send(rng.randint(100, 4000))
                time.sleep(rng.uniform(0.002, 0.03))

        threads = [threading.Thread(target=writer, args=(i,)) for i in range(args.threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    sender.send(10)
    sock.close()
    print(f"frames {sender.sequence}", flush=True)


if __name__ == "__main__":
    main()
