"""Helpers for the robustness harnesses, on top of tests/preload/testlib.py."""
import argparse
import json
import os
import socket
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "preload"))
from testlib import SKIP, Checks, clean_env, free_port, records, run  # noqa: E402,F401


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shim", required=True)
    parser.add_argument("--bin-dir", required=True, help="where the robustness programs are")
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--case", default="", help="which part of a multi-part harness to run")
    args = parser.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    return args


def program(args, name):
    return os.path.join(args.bin_dir, name)


def write_policy(args, name, text):
    path = os.path.join(args.work_dir, name + ".toml")
    with open(path, "w") as f:
        f.write("version = 1\n" + text)
    return path


def fresh(path):
    """`path`, removed if a previous run left it."""
    if os.path.exists(path):
        os.remove(path)
    return path


def prometheus_counters(path, name):
    """{frozenset of label items: value} for one counter family in a textfile."""
    values = {}
    if not os.path.exists(path):
        return values
    for line in open(path).read().splitlines():
        if not line.startswith(name + "{"):
            continue
        labels, value = line[len(name) + 1:].rsplit("} ", 1)
        items = frozenset(tuple(part.split("=", 1)) for part in labels.split(","))
        values[items] = int(float(value))
    return values


def discarding_listener():
    """A loopback listener that reads and drops whatever every connection sends; its port."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)

    def serve():
        while True:
            conn, _ = listener.accept()
            while conn.recv(65536):
                pass
            conn.close()
    threading.Thread(target=serve, daemon=True).start()
    return listener.getsockname()[1]


def compile_c(args, name, source, *flags):
    """Builds a C helper in the work dir (headers from this directory); skips the test (77)
    without a C compiler, and fails it when the helper does not build."""
    if shutil.which("cc") is None:
        print("skipped: no C compiler")
        raise SystemExit(SKIP)
    src = os.path.join(args.work_dir, name + ".c")
    exe = os.path.join(args.work_dir, name)
    with open(src, "w") as f:
        f.write(source)
    here = os.path.dirname(os.path.abspath(__file__))
    if subprocess.run(["cc", *flags, "-I", here, "-o", exe, src]).returncode != 0:
        print(f"FAIL {name}.c does not build")
        raise SystemExit(1)
    return exe


# The keep-warm sharing tests: a burst that opens the window, then "<HEAD>", a pause, "<BODY>",
# under a 10 ms newline heartbeat (reno, so the window restarts after idle).
BURST = b"x" * (5 << 20)
KEEP_WARM_POLICY = '[defaults]\ncongestion = "reno"\nkeep_warm = { heartbeat = "\\n", interval = "10ms" }\n'


def between_head_and_body(data):
    """What arrived between <HEAD> and <BODY> after the burst (heartbeats before and after are
    fine), or None when the stream is not burst, <HEAD>..., <BODY>."""
    if not bytes(data).startswith(BURST):
        return None
    rest = bytes(data[len(BURST):]).strip(b"\n")
    if not (rest.startswith(b"<HEAD>") and rest.endswith(b"<BODY>")):
        return None
    return rest[len(b"<HEAD>"):-len(b"<BODY>")]


def require_keep_warm_host():
    """keep_warm heartbeats only where the namespace restarts the window after idle, with a
    congestion control other than bbr: these tests ask for reno."""
    if open("/proc/sys/net/ipv4/tcp_slow_start_after_idle").read().strip() != "1":
        print("skip: tcp_slow_start_after_idle is 0 here, so keep_warm sends nothing")
        sys.exit(SKIP)
    allowed = open("/proc/sys/net/ipv4/tcp_allowed_congestion_control").read().split()
    if "reno" not in allowed and os.geteuid() != 0:
        print("skip: reno is not in tcp_allowed_congestion_control")
        sys.exit(SKIP)


class StreamReceiver:
    """Accepts one connection on loopback and keeps every byte it sends, until EOF."""

    def __init__(self):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(1)
        self.port = self.listener.getsockname()[1]
        self.data = bytearray()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        self.listener.settimeout(60)
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        with conn:
            while True:
                chunk = conn.recv(1 << 20)
                if not chunk:
                    break
                self.data.extend(chunk)
        self.listener.close()


class Sink:
    """robust_sink, run without the shim: counts connections, bytes and newlines."""

    def __init__(self, args, expect, max_seconds=60, listeners=1):
        self.process = subprocess.Popen(
            [program(args, "robust_sink"), "--expect", str(expect), "--max-seconds", str(max_seconds),
             "--listeners", str(listeners)],
            stdout=subprocess.PIPE, text=True, env=clean_env())
        self.ports = [int(p) for p in self.process.stdout.readline().split(",")]
        self.port = self.ports[0]

    def result(self, timeout=60):
        """The sink's counts once it has seen every connection it expects."""
        try:
            out, _ = self.process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            out, _ = self.process.communicate()
        lines = [line for line in out.splitlines() if line.startswith("{")]
        return json.loads(lines[-1]) if lines else {}

    def result_after(self, done):
        """The counts after the program `done`; a program that failed may never make every
        connection, so then the sink is stopped rather than waited for."""
        if done.returncode != 0 and self.process.poll() is None:
            self.process.terminate()
        return self.result()


# The framing tests (issue 20): real programs whose messages reach the socket in pieces.
def keep_warm_rule_policy(args, name, match, keep_warm):
    """A policy whose one rule keeps warm the connections `match` selects (a TOML inline
    table's body) with `keep_warm` (its body, without the interval): heartbeats 10 ms apart,
    reno (keep-warm skips bbr, the host default here), and a 1400-byte MSS, so that a burst
    of a few MB opens the window to many segments as on a real link (keep-warm sends nothing
    below 10)."""
    return write_policy(args, name, f"""[[rule]]
name = "{name}"
match = {{ {match} }}
congestion = "reno"
sockopt = [ {{ level = "IPPROTO_TCP", name = "TCP_MAXSEG", value = 1400 }} ]
keep_warm = {{ {keep_warm}, interval = "10ms" }}
""")


def shim_env(args, policy, log):
    """The environment of a program run under the shim with `policy`, logging jsonl to `log`."""
    return clean_env(LD_PRELOAD=args.shim, TCPTUNE_POLICY=policy, TCPTUNE_LOG=log, TCPTUNE_LOG_FORMAT="jsonl")


def heartbeats_sent(log):
    """The heartbeats the shim counted in the conn_close records of a jsonl log."""
    return sum(r.get("heartbeats", 0) for r in records(log) if r.get("event") == "conn_close")


def wait_until(condition, timeout):
    """Polls `condition` every 10 ms for up to `timeout` seconds; its last answer."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return condition()
