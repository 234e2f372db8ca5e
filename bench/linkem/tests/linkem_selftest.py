#!/usr/bin/env python3
"""Root self-test of tcptune-linkem: measures the emulated link with real TCP and UDP traffic.

Runs `tcptune-linkem up` with known parameters and checks, between the namespaces tcptune-a (198.18.0.1)
and tcptune-b (198.18.0.2):
  1. RTT: the median of 20 one-byte TCP echoes (and of 20 connects) is within 2 ms of --rtt (40 ms and
     180 ms), and within 1 ms of 0 with --rtt 0 (the floor: stacks, wake-ups, the mover);
  2. rate: bulk TCP goodput at --rate 100Mbit --rtt 20ms is within 10% of the payload rate the link
     allows (100 Mbit/s of IP packets carry 100 * 1448/1500 = 96.53 Mbit/s of TCP payload: 1500-byte MTU,
     20 bytes IP + 20 TCP + 12 timestamp option); and --rate 250Mbit sustains >= 200 Mbit/s of goodput;
  3. loss: --loss 5 drops a fraction of 5000 UDP datagrams within 4 binomial sigmas of 5%;
  4. lifecycle: up twice, status, set, stale state after SIGKILL, run (exit status, SIGTERM), down.
The link is torn down whatever happens. Exit 77 (skip) when not root or /dev/net/tun is missing.

The same file is also the traffic helper run inside the namespaces: --role echo-server|echo-client|...
"""

import argparse
import ctypes
import json
import math
import os
import signal
import socket
import statistics
import struct
import subprocess
import sys
import time

ADDRESS_A = "198.18.0.1"
ADDRESS_B = "198.18.0.2"
PORT = 5201
PAYLOAD_FRACTION = 1448 / 1500  # TCP payload per 1500-byte IP packet with timestamps
BIG_BUFFER = 4 << 20  # clamped to net.core.[rw]mem_max, then doubled by the kernel
LATE_BURST = 10  # packets a single scheduler stall may delay past 500 us (record_lateness)
# A step that fails while a virtual machine's hypervisor took at least this much CPU from it is
# measured again, up to MAX_ATTEMPTS times in all; on a machine without steal a failure stands.
STEAL_RETRY_MS = 20
MAX_ATTEMPTS = 5
# ctest reports a run whose only failures were unmeasurable as skipped.
SKIP_STATUS = 77


# ---------------------------------------------------------------- helpers run inside a namespace

def listen(port, rcvbuf=None):
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if rcvbuf:
        # Before listen(): the window scale of accepted connections is chosen from the listener's buffer.
        server.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    server.bind(("0.0.0.0", port))
    server.listen(16)
    print("ready", flush=True)
    return server


def role_echo_server(args):
    server = listen(args.port)
    server.settimeout(args.seconds)
    try:
        while True:
            connection, _ = server.accept()
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            while True:
                data = connection.recv(64)
                if not data:
                    break
                connection.sendall(data)
            connection.close()
    except socket.timeout:
        pass


def role_echo_client(args):
    connect_ms = []
    for _ in range(args.count):
        start = time.perf_counter()
        probe = socket.create_connection((ADDRESS_B, args.port), timeout=10)
        connect_ms.append((time.perf_counter() - start) * 1e3)
        probe.close()
    client = socket.create_connection((ADDRESS_B, args.port), timeout=10)
    client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    echo_ms = []
    for _ in range(args.count):
        start = time.perf_counter()
        client.sendall(b"x")
        if client.recv(1) != b"x":
            raise SystemExit("echo failed")
        echo_ms.append((time.perf_counter() - start) * 1e3)
    client.close()
    print(json.dumps({"echo_ms": echo_ms, "connect_ms": connect_ms}), flush=True)


def role_sink_server(args):
    server = listen(args.port, BIG_BUFFER)
    server.settimeout(30)
    connection, _ = server.accept()
    connection.settimeout(30)
    buffer = bytearray(1 << 20)
    view = memoryview(buffer)
    total = 0
    first = None
    marks = []  # (time, bytes received so far), one per 50 ms
    while True:
        n = connection.recv_into(view)
        now = time.perf_counter()
        if n == 0:
            break
        if first is None:
            first = now
            marks.append((now, 0))
        total += n
        if now - marks[-1][0] >= 0.05:
            marks.append((now, total))
    marks.append((time.perf_counter(), total))
    # Goodput after the warm-up (slow start and its overshoot into the queue), to the last byte.
    start = next((m for m in marks if m[0] - first >= args.warmup), marks[0])
    end = marks[-1]
    seconds = end[0] - start[0]
    mbit = (end[1] - start[1]) * 8 / seconds / 1e6 if seconds > 0 else 0.0
    print(json.dumps({"bytes": total, "seconds": seconds, "goodput_mbit": mbit}), flush=True)


def role_bulk_client(args):
    client = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    client.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, BIG_BUFFER)
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, BIG_BUFFER)
    client.settimeout(30)  # never outlive a broken link by long
    client.connect((ADDRESS_B, args.port))
    chunk = b"\0" * (1 << 20)
    deadline = time.perf_counter() + args.seconds
    while time.perf_counter() < deadline:
        client.sendall(chunk)
    client.shutdown(socket.SHUT_WR)
    client.recv(1)  # until the receiver closes: everything was delivered
    client.close()


def role_udp_sink(args):
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sink.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, BIG_BUFFER)
    sink.bind(("0.0.0.0", args.port))
    print("ready", flush=True)
    seen = set()
    sink.settimeout(10)
    try:
        while True:
            data = sink.recv(2048)
            sequence = struct.unpack("!I", data[:4])[0]
            if sequence == 0xFFFFFFFF:
                break
            seen.add(sequence)
            sink.settimeout(2)
    except socket.timeout:
        pass
    print(json.dumps({"received": len(seen)}), flush=True)


def role_udp_source(args):
    source = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    padding = b"\0" * 196
    # Paced at 10000 datagrams/s: nothing but the emulated loss may drop them.
    start = time.perf_counter()
    for sequence in range(args.count):
        while time.perf_counter() < start + sequence / 10000:
            pass
        source.sendto(struct.pack("!I", sequence) + padding, (ADDRESS_B, args.port))
    time.sleep(0.2)
    # The end marker may be lost too: send it a few times (the sink also stops after 2 s of silence).
    for _ in range(20):
        source.sendto(struct.pack("!I", 0xFFFFFFFF), (ADDRESS_B, args.port))
        time.sleep(0.005)


ROLES = {
    "echo-server": role_echo_server,
    "echo-client": role_echo_client,
    "sink-server": role_sink_server,
    "bulk-client": role_bulk_client,
    "udp-sink": role_udp_sink,
    "udp-source": role_udp_source,
}


# ---------------------------------------------------------------- the test driver (host namespace)

class Failed(Exception):
    pass


class SelfTest:
    def __init__(self, linkem):
        self.linkem = linkem
        self.failures = []
        self.daemon_pids = set()
        self.helpers = []  # every traffic helper started, killed at the end of each step
        self.results = {}
        self.retried = []  # steps measured again because the hypervisor took the CPU during them
        self.unmeasurable = []  # steps that lost the CPU to the hypervisor in every attempt

    # -- running things

    def run_linkem(self, *args, timeout=30):
        return subprocess.run([self.linkem, *args], capture_output=True, text=True, timeout=timeout)

    def up(self, *args):
        result = self.run_linkem("up", *args)
        if result.returncode != 0:
            raise Failed(f"up {' '.join(args)}: exit {result.returncode}: {result.stderr.strip()}")
        link = json.loads(result.stdout)
        self.daemon_pids.add(link["pid"])
        return link

    def down(self):
        result = self.run_linkem("down")
        self.reap()
        return result

    def status(self):
        result = self.run_linkem("status")
        return json.loads(result.stdout) if result.returncode == 0 else None

    def reap(self):
        # We are a child subreaper: the daemons (double-forked by `up`) are reparented to us when `up`
        # exits, and become our zombies once they stop. This host's init does not reap them.
        for pid in list(self.daemon_pids):
            for _ in range(50):
                try:
                    done, _ = os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    done = pid
                if done == pid:
                    self.daemon_pids.discard(pid)
                    break
                if not os.path.exists(f"/proc/{pid}"):
                    break
                time.sleep(0.02)

    def helper(self, netns, role, *args):
        command = ["ip", "netns", "exec", netns, sys.executable, os.path.abspath(__file__), "--role", role, *args]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        self.helpers.append(process)
        return process

    def stop_helpers(self):
        # `ip netns exec` execs the helper: the pid is the helper's own.
        for process in self.helpers:
            if process.poll() is None:
                process.kill()
            process.wait()
            if process.stdout:
                process.stdout.close()
        self.helpers.clear()

    def start_server(self, role, *args):
        server = self.helper("tcptune-b", role, *args)
        line = server.stdout.readline()
        if line.strip() != "ready":
            server.kill()
            raise Failed(f"{role} did not start")
        return server

    def finish(self, process, timeout):
        try:
            out, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise Failed("helper timed out")
        if process.returncode != 0:
            raise Failed(f"helper exited {process.returncode}")
        return json.loads(out.strip().splitlines()[-1])

    # -- checks

    def check(self, condition, message):
        print(("  ok   " if condition else "  FAIL ") + message, flush=True)
        if not condition:
            self.failures.append(message)

    def measure_rtt(self, rtt_ms):
        link = self.up("--rtt", f"{rtt_ms}ms", "--seed", "1")
        self.check(link["rtt_ms"] == rtt_ms and link["a_to_b"]["delay_ms"] == rtt_ms / 2,
                   f"up --rtt {rtt_ms}ms reports rtt_ms {link['rtt_ms']} and one-way {link['a_to_b']['delay_ms']}")
        server = self.start_server("echo-server", "--port", str(PORT), "--seconds", "20")
        try:
            client = self.helper("tcptune-a", "echo-client", "--port", str(PORT), "--count", "20")
            samples = self.finish(client, timeout=30)
        finally:
            server.kill()
            server.wait()
        echo = statistics.median(samples["echo_ms"])
        connect = statistics.median(samples["connect_ms"])
        self.results[f"rtt_{rtt_ms}ms"] = {"echo_median_ms": round(echo, 3), "connect_median_ms": round(connect, 3),
                                            "echo_min_ms": round(min(samples["echo_ms"]), 3),
                                            "echo_max_ms": round(max(samples["echo_ms"]), 3)}
        # With --rtt 0 the same echo shows the floor: the stacks, the programs' wake-ups and the mover.
        tolerance = 1 if rtt_ms == 0 else 2
        self.check(abs(echo - rtt_ms) <= tolerance,
                   f"--rtt {rtt_ms}ms: median TCP echo {echo:.3f} ms (within {tolerance} ms)")
        self.check(abs(connect - rtt_ms) <= tolerance,
                   f"--rtt {rtt_ms}ms: median TCP connect {connect:.3f} ms (within {tolerance} ms)")
        self.record_lateness(f"rtt_{rtt_ms}ms")

    def record_lateness(self, name):
        status = self.status()
        if status is None:
            self.check(False, f"{name}: status after the run")
            return
        for direction in ("a_to_b", "b_to_a"):
            counters = status[direction]["counters"]
            late_fraction = counters["late_over_500us"] / max(1, counters["packets"])
            self.results.setdefault("lateness", {})[f"{name}.{direction}"] = {
                "packets": counters["packets"], "p50_us": counters["p50_lateness_us"],
                "p99_us": counters["p99_lateness_us"], "max_us": counters["max_lateness_us"],
                "mean_us": counters["mean_lateness_us"], "late_over_500us": counters["late_over_500us"]}
            # One scheduler stall of a few ms on a busy machine delays every packet queued
            # meanwhile: on a run of about 100 packets that alone can be 5%, so up to
            # LATE_BURST late packets pass however few were sent.
            late_ok = late_fraction < 0.05 or counters["late_over_500us"] <= LATE_BURST
            self.check(counters["p50_lateness_us"] <= 200 and late_ok,
                       f"{name} {direction}: {counters['packets']} packets late by p50 "
                       f"{counters['p50_lateness_us']} us, p99 {counters['p99_lateness_us']} us, max "
                       f"{counters['max_lateness_us']} us; {counters['late_over_500us']} over 500 us")

    def measure_rate(self, rate_mbit, seconds, minimum_mbit=None):
        self.up("--rate", f"{rate_mbit}Mbit", "--rtt", "20ms", "--seed", "1")
        server = self.start_server("sink-server", "--port", str(PORT + 1), "--warmup", "1.0")
        try:
            client = self.helper("tcptune-a", "bulk-client", "--port", str(PORT + 1), "--seconds", str(seconds))
            client.wait(timeout=seconds + 20)
            result = self.finish(server, timeout=20)
        finally:
            server.kill()
        status = self.status()
        goodput = result["goodput_mbit"]
        expected = rate_mbit * PAYLOAD_FRACTION
        self.results[f"rate_{rate_mbit}mbit"] = {"goodput_mbit": round(goodput, 2),
                                                  "expected_payload_mbit": round(expected, 2),
                                                  "a_to_b": status["a_to_b"]["counters"] if status else None}
        if minimum_mbit is None:
            self.check(abs(goodput - expected) <= 0.1 * expected,
                       f"--rate {rate_mbit}Mbit: goodput {goodput:.2f} Mbit/s, expected {expected:.2f} "
                       f"(payload of {rate_mbit} Mbit/s of IP packets) within 10%")
        else:
            self.check(goodput >= minimum_mbit,
                       f"--rate {rate_mbit}Mbit: goodput {goodput:.2f} Mbit/s, at least {minimum_mbit}")
        self.record_lateness(f"rate_{rate_mbit}mbit")

    def measure_loss(self, loss_pct, count):
        self.up("--loss", str(loss_pct), "--seed", "7")
        sink = self.start_server("udp-sink", "--port", str(PORT + 2))
        try:
            source = self.helper("tcptune-a", "udp-source", "--port", str(PORT + 2), "--count", str(count))
            source.wait(timeout=30)
            result = self.finish(sink, timeout=20)
        finally:
            sink.kill()
        status = self.status()
        observed = 1 - result["received"] / count
        p = loss_pct / 100
        sigma = math.sqrt(p * (1 - p) / count)
        counters = status["a_to_b"]["counters"] if status else {}
        self.results[f"loss_{loss_pct}pct"] = {"sent": count, "received": result["received"],
                                               "observed_pct": round(observed * 100, 3),
                                               "four_sigma_pct": round(4 * sigma * 100, 3),
                                               "daemon_drops_loss": counters.get("drops_loss")}
        self.check(abs(observed - p) <= 4 * sigma,
                   f"--loss {loss_pct}: {count - result['received']} of {count} datagrams lost = "
                   f"{observed * 100:.2f}% (5% +- {4 * sigma * 100:.2f}%)")
        # Every datagram the daemon did not drop arrived (the end markers are counted by the daemon too).
        self.check(counters.get("drops_loss", -1) >= count - result["received"],
                   f"daemon counted {counters.get('drops_loss')} loss drops")

    def check_lifecycle(self):
        first = self.up("--rtt", "10ms")
        second = self.up("--delay", "3ms", "--ab-rate", "10Mbit", "--congestion", "bbr",
                         "--slow-start-after-idle", "0")
        self.reap()
        status = self.status()
        self.check(status is not None and status["pid"] == second["pid"] and status["rtt_ms"] == 6
                   and status["a_to_b"]["rate_mbit"] == 10 and status["b_to_a"]["rate_mbit"] == 0
                   and status["congestion"] == "bbr" and status["slow_start_after_idle"] == 0,
                   "up twice: the second link replaces the first")
        self.check(not os.path.exists(f"/proc/{first['pid']}") or first["pid"] not in self.daemon_pids,
                   "up twice: the first daemon is gone")

        allowed_before = read("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
        result = self.run_linkem("set", "--congestion", "cubic", "--slow-start-after-idle", "1")
        self.check(result.returncode == 0, f"set --congestion cubic: exit {result.returncode} {result.stderr.strip()}")
        for netns in ("tcptune-a", "tcptune-b"):
            values = netns_sysctls(netns)
            self.check(values == ("cubic", "1"), f"set: {netns} has congestion/slow_start_after_idle {values}")
        self.check(read("/proc/sys/net/ipv4/tcp_allowed_congestion_control") == allowed_before,
                   f"set: host allowed congestion list restored ({allowed_before!r})")
        result = self.run_linkem("set", "--congestion", "nosuchcc")
        self.check(result.returncode == 1 and "not available" in result.stderr,
                   f"set --congestion nosuchcc fails clearly: {result.stderr.strip()}")

        # A SIGKILLed daemon leaves namespaces (without TUN devices) and a pidfile behind.
        os.kill(second["pid"], signal.SIGKILL)
        time.sleep(0.2)
        self.reap()
        result = self.run_linkem("status")
        self.check(result.returncode == 1 and "not running" in result.stderr,
                   f"status after SIGKILL: exit {result.returncode}: {result.stderr.strip()}")
        link = self.up("--rtt", "2ms")
        self.check(self.status() is not None and link["rtt_ms"] == 2, "up after SIGKILL cleans the stale state")

        result = self.down()
        self.check(result.returncode == 0 and not linkem_namespaces(), "down removes both namespaces")
        self.check(not os.path.exists("/run/tcptune-linkem/pid"), "down removes the pidfile")
        result = self.down()
        self.check(result.returncode == 0, "down again: exit 0 when nothing exists")
        result = self.run_linkem("status")
        self.check(result.returncode == 1 and "not running" in result.stderr, "status when down: exit 1, not running")

        result = self.run_linkem("up", "--rtt", "40")
        self.check(result.returncode == 2 and result.stderr.count("\n") == 1,
                   f"bad arguments: exit 2, one line: {result.stderr.strip()}")
        result = self.run_linkem("up", "--backend", "netem")
        self.check(result.returncode == 1 and "netem" in result.stderr and not linkem_namespaces(),
                   f"--backend netem fails clearly: {result.stderr.strip()}")

        result = self.run_linkem("run", "--rtt", "10ms", "--", "sh", "-c",
                                 "ip netns exec tcptune-a true && exit 3")
        self.check(result.returncode == 3 and not linkem_namespaces(),
                   f"run returns the command's status (3): {result.returncode}; namespaces removed")
        self.check('"backend":"tun"' in result.stderr, "run prints the link's JSON on stderr")
        # In a session of its own, so that a failure can kill it together with its command.
        runner = subprocess.Popen([self.linkem, "run", "--", "sleep", "60"], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, start_new_session=True)
        for _ in range(100):
            if os.path.exists("/run/tcptune-linkem/control.sock"):
                break
            time.sleep(0.05)
        time.sleep(0.2)
        runner.send_signal(signal.SIGTERM)
        try:
            code = runner.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(runner.pid, signal.SIGKILL)
            runner.wait()
            code = None
        self.check(code == 128 + signal.SIGTERM and not linkem_namespaces(),
                   f"run on SIGTERM: stops the command, tears the link down, exit {code}")

    def run_all(self, quick):
        started = time.monotonic()
        steps = [("rtt 0 (floor)", lambda: self.measure_rtt(0)),
                 ("rtt 40ms", lambda: self.measure_rtt(40)),
                 ("rtt 180ms", lambda: self.measure_rtt(180)),
                 ("rate 100Mbit", lambda: self.measure_rate(100, 3.5)),
                 ("rate 250Mbit", lambda: self.measure_rate(250, 3.5, minimum_mbit=200)),
                 ("loss 5%", lambda: self.measure_loss(5, 5000)),
                 ("lifecycle", self.check_lifecycle)]
        if quick:
            steps = [steps[1], steps[-1]]
        try:
            for name, step in steps:
                for attempt in range(1, MAX_ATTEMPTS + 1):
                    print(f"== {name}" + (f" (attempt {attempt})" if attempt > 1 else ""), flush=True)
                    failures_before, steal_before = len(self.failures), steal_ms()
                    try:
                        step()
                    except (Failed, subprocess.TimeoutExpired, json.JSONDecodeError, KeyError, TypeError) as error:
                        self.check(False, f"{name}: {error}")
                    finally:
                        self.stop_helpers()
                        self.down()
                    stolen = steal_ms() - steal_before
                    if len(self.failures) > failures_before and stolen >= STEAL_RETRY_MS and attempt == MAX_ATTEMPTS:
                        # Every attempt lost the CPU to the hypervisor: this machine cannot time the
                        # step now, which is not the emulator's failure (reported as skipped).
                        self.unmeasurable.append({"step": name, "steal_ms": stolen,
                                                  "failures": self.failures[failures_before:]})
                        del self.failures[failures_before:]
                        print(f"  unmeasurable: the hypervisor took {stolen} ms of CPU in attempt {attempt} too",
                              flush=True)
                    if len(self.failures) == failures_before or stolen < STEAL_RETRY_MS or attempt == MAX_ATTEMPTS:
                        break
                    # The mover cannot be on time while the hypervisor runs someone else: measure again.
                    print(f"  retry: the hypervisor took {stolen} ms of CPU during this step (steal in /proc/stat)",
                          flush=True)
                    self.retried.append({"step": name, "steal_ms": stolen, "failures": self.failures[failures_before:]})
                    del self.failures[failures_before:]
        finally:
            self.stop_helpers()
            self.down()
            self.check(not linkem_namespaces(), "no tcptune-a/b namespace is left")
        self.results["retried"] = self.retried
        self.results["unmeasurable"] = self.unmeasurable
        print("results " + json.dumps(self.results), flush=True)
        print(f"elapsed {time.monotonic() - started:.1f} s", flush=True)
        if self.failures:
            return 1
        if self.unmeasurable:
            print(f"skipped: {len(self.unmeasurable)} step(s) lost the CPU to the hypervisor in every attempt", flush=True)
            return SKIP_STATUS
        return 0


def read(path):
    with open(path) as f:
        return f.read().strip()


def steal_ms():
    """CPU time the hypervisor gave to other guests, summed over all CPUs (/proc/stat)."""
    fields = read("/proc/stat").splitlines()[0].split()
    return int(fields[8]) * 1000 // os.sysconf("SC_CLK_TCK") if len(fields) > 8 else 0


def netns_sysctls(netns):
    out = subprocess.run(["ip", "netns", "exec", netns, "sysctl", "-n", "net.ipv4.tcp_congestion_control",
                          "net.ipv4.tcp_slow_start_after_idle"], capture_output=True, text=True).stdout.split()
    return tuple(out)


def linkem_namespaces():
    try:
        return [name for name in os.listdir("/run/netns") if name in ("tcptune-a", "tcptune-b")]
    except FileNotFoundError:
        return []


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--linkem", help="path of tcptune-linkem")
    parser.add_argument("--quick", action="store_true", help="only the 40 ms RTT and the lifecycle checks")
    parser.add_argument("--role", choices=sorted(ROLES))
    parser.add_argument("--port", type=int, default=PORT)
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    args = parser.parse_args()
    if args.role:
        ROLES[args.role](args)
        return 0
    if os.geteuid() != 0:
        print("skipped: needs root (network namespaces, TUN devices)")
        return 77
    if not os.path.exists("/dev/net/tun"):
        print("skipped: /dev/net/tun is missing")
        return 77
    if not args.linkem:
        parser.error("--linkem is required")
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: collect the daemons, see SelfTest.reap
    return SelfTest(args.linkem).run_all(args.quick)


if __name__ == "__main__":
    sys.exit(main())
