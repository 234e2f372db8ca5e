#!/usr/bin/env python3
"""The built-in default, nodelay = "on-wait": Nagle stays on, and its held tail goes out when the
thread that wrote turns to wait for input.

The app (this script again, under the shim, with no policy) writes each request or reply as two
writes, a 10-byte header then a 100-byte body: with Nagle on, the body waits for the header's
ACK, which the peer delays by about 40 ms (it is waiting for the body). The peer is this script,
without the shim.
- client: write, write, then wait for the reply by recv (the read path);
- server: write, write, then wait for the next request by poll, epoll or select.
Each must answer in under 4 ms at the median where the same app under nodelay = "keep" takes
40 ms (the control, which shows the stall is there to be removed); TCP_NODELAY read back by the
app is what the app left (0), and 1 where the app set it itself.
- stream: 20,000 16-byte writes with no wait between them make no TCP_NODELAY call at all
  (strace), so Nagle's coalescing is the kernel's as without the shim; the client above,
  traced the same way, shows the pushes.
- cork: a corked message (TCP_CORK=1, a write) is not sent by the app's waits (poll on a pipe,
  a read that finds nothing, a recv with MSG_DONTWAIT): nothing arrives until the app uncorks,
  100 ms later (the kernel's own cork limit is 200 ms).
"""
import json
import os
import select
import shutil
import socket
import subprocess
import sys
import threading
import time

HEADER = b"h" * 10
BODY = b"b" * 100
REQUESTS = 30
STREAM_WRITES = 20000


def recv_exactly(sock, size):
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise EOFError("peer closed")
        data += chunk
    return data


def nodelay_of(sock):
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)


def wait_readable(sock, how):
    """Waits for input on `sock` by poll, epoll or select."""
    if how == "poll":
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        poller.poll(5000)
    elif how == "epoll":
        with select.epoll() as poller:
            poller.register(sock, select.EPOLLIN)
            poller.poll(5)
    else:
        select.select([sock], [], [], 5)


def app_client(port, set_nodelay):
    sock = socket.create_connection(("127.0.0.1", port))
    if set_nodelay:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    latencies = []
    for _ in range(REQUESTS):
        start = time.monotonic()
        sock.send(HEADER)
        sock.send(BODY)
        recv_exactly(sock, 16)
        latencies.append((time.monotonic() - start) * 1000)
    result = {"latencies_ms": latencies, "nodelay": nodelay_of(sock)}
    sock.close()
    return result


def app_server(port, how):
    listener = socket.create_server(("127.0.0.1", port))
    sock, _ = listener.accept()
    for _ in range(REQUESTS):
        wait_readable(sock, how)
        recv_exactly(sock, 16)
        sock.send(HEADER)
        sock.send(BODY)
    wait_readable(sock, how)
    result = {"nodelay": nodelay_of(sock)}
    sock.close()
    return result


def app_cork(port):
    sock = socket.create_connection(("127.0.0.1", port))
    sock.send(b"x" * 10)  # something in flight, as in a real exchange
    recv_exactly(sock, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
    sock.send(BODY)
    reader, writer = os.pipe()
    os.set_blocking(reader, False)
    poller = select.poll()
    poller.register(reader, select.POLLIN)
    poller.poll(0)
    try:
        os.read(reader, 1)
    except BlockingIOError:
        pass
    try:
        sock.recv(1, socket.MSG_DONTWAIT)
    except BlockingIOError:
        pass
    waited = time.monotonic()
    time.sleep(0.1)
    uncorked = time.monotonic()
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 0)
    recv_exactly(sock, 1)
    os.close(reader)
    os.close(writer)
    sock.close()
    return {"waited": waited, "uncorked": uncorked}


def app_stream(port):
    """Small writes and no wait between them, then the end of the stream."""
    sock = socket.create_connection(("127.0.0.1", port))
    for _ in range(STREAM_WRITES):
        sock.send(b"s" * 16)
    sock.shutdown(socket.SHUT_WR)
    result = {"nodelay": nodelay_of(sock)}
    sock.close()
    return result


def app_main(argv):
    mode, port = argv[0], int(argv[1])
    if mode == "stream":
        result = app_stream(port)
    elif mode == "client":
        result = app_client(port, set_nodelay=False)
    elif mode == "client-nodelay":
        result = app_client(port, set_nodelay=True)
    elif mode.startswith("server-"):
        result = app_server(port, mode.split("-", 1)[1])
    else:
        result = app_cork(port)
    print(json.dumps(result), flush=True)


# A C client built with _FORTIFY_SOURCE, as distributions build programs: its recv() of a
# fixed-size buffer is glibc's __recv_chk, and its poll() of a fixed array __poll_chk.
FORTIFIED_CLIENT = r"""
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
int main(int argc, char** argv) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in peer = {0};
  peer.sin_family = AF_INET;
  peer.sin_port = htons(atoi(argv[1]));
  peer.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr*)&peer, sizeof peer) != 0) return 2;
  char header[10], body[100], reply[16];
  memset(header, 'h', sizeof header);
  memset(body, 'b', sizeof body);
  double latencies[30];
  volatile int one = 1;  /* counts not known at compile time: the _chk variants are called */
  for (int i = 0; i < 30; i++) {
    double start = now_ms();
    if (write(fd, header, sizeof header) != sizeof header || write(fd, body, sizeof body) != sizeof body) return 3;
    if (i % 2 == 0) {
      struct pollfd fds[1] = {{fd, POLLIN, 0}};
      poll(fds, (nfds_t)one, 5000);
    }
    size_t got = 0;
    while (got < sizeof reply) {
      ssize_t n = recv(fd, reply, (size_t)one * (sizeof reply - got), 0);
      if (n <= 0) return 4;
      got += (size_t)n;
    }
    latencies[i] = now_ms() - start;
  }
  double sorted[30];
  memcpy(sorted, latencies, sizeof sorted);
  for (int i = 0; i < 30; i++)
    for (int j = i + 1; j < 30; j++)
      if (sorted[j] < sorted[i]) { double t = sorted[i]; sorted[i] = sorted[j]; sorted[j] = t; }
  printf("%.3f\n", sorted[15]);
  return 0;
}
"""


def free_listener():
    listener = socket.create_server(("127.0.0.1", 0))
    return listener, listener.getsockname()[1]


class Peer(threading.Thread):
    """The side without the shim, in a thread of this script."""

    def __init__(self, target):
        super().__init__(daemon=True)
        self.target = target
        self.error = None
        self.result = None

    def run(self):
        try:
            self.result = self.target()
        except Exception as error:  # reported by the check that reads it
            self.error = error


def peer_server(listener):
    sock, _ = listener.accept()
    with sock:
        for _ in range(REQUESTS):
            recv_exactly(sock, len(HEADER) + len(BODY))
            sock.sendall(b"r" * 16)


def peer_client(port):
    for _ in range(200):
        try:
            sock = socket.create_connection(("127.0.0.1", port))
            break
        except ConnectionRefusedError:
            time.sleep(0.02)
    latencies = []
    with sock:
        for _ in range(REQUESTS):
            start = time.monotonic()
            sock.sendall(b"q" * 16)
            recv_exactly(sock, len(HEADER) + len(BODY))
            latencies.append((time.monotonic() - start) * 1000)
    return latencies


def peer_cork(listener):
    """Arrival time of the corked message's first byte."""
    sock, _ = listener.accept()
    with sock:
        recv_exactly(sock, 10)
        sock.sendall(b"k")
        recv_exactly(sock, 1)
        arrived = time.monotonic()
        recv_exactly(sock, len(BODY) - 1)
        sock.sendall(b"k")
        return arrived


def peer_sink(listener):
    sock, _ = listener.accept()
    total = 0
    with sock:
        while chunk := sock.recv(65536):
            total += len(chunk)
    return total


def nodelay_calls(trace_path):
    """The TCP_NODELAY setsockopt calls in an strace log: the shim's pushes (the app makes none)."""
    with open(trace_path, encoding="utf-8", errors="replace") as trace:
        return sum(1 for line in trace if "setsockopt" in line and "TCP_NODELAY" in line)


def median(values):
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--app":
        app_main(sys.argv[2:])
        return
    from testlib import Checks, clean_env, parse_args, run
    args = parse_args()
    checks = Checks()
    keep = 'version = 1\n[defaults]\nnodelay = "keep"\n'

    def app(mode, port, policy=None, trace=None):
        env = clean_env(LD_PRELOAD=args.shim)
        if policy is not None:
            env["TCPTUNE_POLICY_TOML"] = policy
        traced = ["strace", "-f", "-qq", "-e", "trace=setsockopt", "-o", trace] if trace else []
        done = run(traced + [sys.executable, __file__, "--app", mode, str(port)], env, timeout=120)
        try:
            return json.loads(done.stdout)
        except ValueError:
            checks.check(False, f"{mode}: the app ran ({done.returncode}: {done.stderr.strip()[-400:]})")
            return None

    def client_run(mode, policy=None):
        listener, port = free_listener()
        peer = Peer(lambda: peer_server(listener))
        peer.start()
        result = app(mode, port, policy)
        peer.join(30)
        listener.close()
        return result

    def server_run(how, policy=None):
        port = free_listener()
        port[0].close()
        peer = Peer(lambda: peer_client(port[1]))
        peer.start()
        result = app(f"server-{how}", port[1], policy)
        peer.join(30)
        return result, peer.result

    # The client: write, write, recv.
    control = client_run("client", keep)
    tuned = client_run("client")
    if control and tuned:
        checks.check(median(control["latencies_ms"]) >= 30,
                     f"control (nodelay = \"keep\"): the two-write request stalls "
                     f"(median {median(control['latencies_ms']):.2f} ms)")
        checks.check(median(tuned["latencies_ms"]) < 4,
                     f"built-in default: no delayed-ACK stall (median {median(tuned['latencies_ms']):.3f} ms, "
                     f"max {max(tuned['latencies_ms']):.3f} ms)")
        checks.check(tuned["nodelay"] == 0, f"built-in default: the app reads TCP_NODELAY 0, Nagle on ({tuned['nodelay']})")
    own = client_run("client-nodelay")
    if own:
        checks.check(own["nodelay"] == 1, f"the app's own TCP_NODELAY=1 stands after the pushes ({own['nodelay']})")
        checks.check(median(own["latencies_ms"]) < 4, f"and no stall ({median(own['latencies_ms']):.3f} ms)")

    # The server: write, write, then poll / epoll / select for the next request.
    _, control_latencies = server_run("poll", keep)
    checks.check(control_latencies is not None and median(control_latencies) >= 30,
                 f"control server (nodelay = \"keep\"): its client stalls "
                 f"({control_latencies and median(control_latencies):.2f} ms)")
    for how in ("poll", "epoll", "select"):
        result, latencies = server_run(how)
        if result and latencies:
            checks.check(median(latencies) < 4,
                         f"server waiting by {how}: no stall seen by its client (median {median(latencies):.3f} ms)")
            checks.check(result["nodelay"] == 0, f"server waiting by {how}: TCP_NODELAY still 0 ({result['nodelay']})")

    # A stream of small writes that never waits is never pushed: the shim makes no TCP_NODELAY
    # call (the request/response client, traced the same way, shows the pushes are seen).
    if shutil.which("strace"):
        counts = {}
        for mode, peer_target in (("stream", peer_sink), ("client", peer_server)):
            listener, port = free_listener()
            peer = Peer(lambda: peer_target(listener))
            peer.start()
            trace = os.path.join(args.work_dir, f"{mode}.strace")
            result = app(mode, port, trace=trace)
            peer.join(60)
            listener.close()
            counts[mode] = nodelay_calls(trace) if result else None
        checks.check(counts["stream"] == 0,
                     f"stream of {STREAM_WRITES} small writes, no wait: no push, no TCP_NODELAY call "
                     f"({counts['stream']} calls)")
        checks.check(counts["client"] is not None and counts["client"] >= 10,
                     f"the two-write client: its waits push ({counts['client']} TCP_NODELAY calls for {REQUESTS} "
                     f"requests)")
    else:
        print("note: strace missing: the stream's TCP_NODELAY calls are not counted")

    # The fortified client: its waits are __poll_chk and __recv_chk.
    source = os.path.join(args.work_dir, "fortified_client.c")
    exe = os.path.join(args.work_dir, "fortified_client")
    with open(source, "w", encoding="utf-8") as f:
        f.write(FORTIFIED_CLIENT)
    built = shutil.which("cc") and subprocess.run(["cc", "-O2", "-D_FORTIFY_SOURCE=2", "-o", exe, source]).returncode == 0
    if built:
        symbols = subprocess.run(["nm", "-D", exe], capture_output=True, text=True).stdout if shutil.which("nm") else ""
        checks.check("__recv_chk" in symbols and "__poll_chk" in symbols,
                     "the fortified client calls __recv_chk and __poll_chk")
        for name, policy in (("control", keep), ("built-in default", None)):
            listener, port = free_listener()
            peer = Peer(lambda: peer_server(listener))
            peer.start()
            env = clean_env(LD_PRELOAD=args.shim)
            if policy is not None:
                env["TCPTUNE_POLICY_TOML"] = policy
            done = run([exe, str(port)], env, timeout=60)
            peer.join(30)
            listener.close()
            value = float(done.stdout) if done.returncode == 0 and done.stdout.strip() else None
            if policy is not None:
                checks.check(value is not None and value >= 30, f"fortified client, {name}: stalls ({value} ms)")
            else:
                checks.check(value is not None and value < 4, f"fortified client, {name}: no stall ({value} ms)")
    else:
        print("note: no C compiler: the fortified client is not run")

    # A corked message is never sent by a push.
    listener, port = free_listener()
    peer = Peer(lambda: peer_cork(listener))
    peer.start()
    result = app("cork", port)
    peer.join(30)
    listener.close()
    if result and peer.result is not None:
        early = result["uncorked"] - peer.result
        checks.check(peer.result >= result["uncorked"] - 0.005,
                     f"corked: nothing arrived before the uncork (first byte {early * 1000:.1f} ms before it; "
                     f"the waits were {(result['uncorked'] - result['waited']) * 1000:.0f} ms before it)")
    else:
        checks.check(False, f"corked: the exchange finished ({peer.error})")
    checks.finish()


if __name__ == "__main__":
    main()
