"""Small helpers shared by the Python-driven preload and supervised tests."""
import argparse
import json
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import threading

SKIP = 77


def skip(why):
    print(f"skipped: {why}", flush=True)
    sys.exit(SKIP)


def build_with_musl(source, out):
    """`out` built from C `source` by musl-gcc; skips (77) without Debian's musl-tools."""
    if shutil.which("musl-gcc") is None:
        skip("musl-gcc is not installed (Debian's musl-tools)")
    built = subprocess.run(["musl-gcc", "-O2", "-o", out, source], capture_output=True, text=True, timeout=120)
    if built.returncode != 0:
        print(f"FAIL musl-gcc {source}: {built.stderr.strip()}")
        sys.exit(1)
    return out


class Listener:
    """A loopback listener that accepts and holds every connection until closed."""

    def __init__(self):
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen(64)
        self.socket.settimeout(0.2)
        self.port = self.socket.getsockname()[1]
        self.accepted = []
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.accept_all, daemon=True)
        self.thread.start()

    def accept_all(self):
        while not self.stopped.is_set():
            try:
                self.accepted.append(self.socket.accept()[0])
            except (socket.timeout, OSError):
                continue

    def close(self):
        self.stopped.set()
        self.thread.join(timeout=5)
        for s in self.accepted:
            s.close()
        self.socket.close()


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shim", required=True)
    parser.add_argument("--probe", required=True)
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--work-dir", required=True)
    args = parser.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    return args


class Checks:
    def __init__(self):
        self.failed = 0
        self.passed = 0

    def check(self, ok, what):
        print(("ok   " if ok else "FAIL ") + what, flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        return ok

    def finish(self):
        print(f"{self.passed} passed, {self.failed} failed")
        sys.exit(0 if self.failed == 0 and self.passed > 0 else 1)


def clean_env(**extra):
    """The environment without any tcptune variable, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TCPTUNE_") and k != "LD_PRELOAD"}
    env.update({k: str(v) for k, v in extra.items()})
    return env


def records(path):
    """The JSON objects of a jsonl log, in order; lines that are not JSON are left out."""
    out = []
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    return out


def port_of(endpoint):
    """The port of a record's "local" or "peer" ("127.0.0.1:5001", "[::1]:5001"); None without one."""
    return int(endpoint.rsplit(":", 1)[1]) if endpoint else None


# A policy that only logs, every record, as jsonl.
JSONL_LOG_POLICY = """version = 1
[log]
format = "jsonl"
level = "info"
"""


def logged_env(args, name, policy_text=JSONL_LOG_POLICY):
    """The environment of a program under the shim with the policy `policy_text` (written to
    WORK_DIR/NAME.toml) and its log at WORK_DIR/NAME.jsonl (removed first), and the log's path."""
    policy = os.path.join(args.work_dir, f"{name}.toml")
    with open(policy, "w") as f:
        f.write(policy_text)
    log = os.path.join(args.work_dir, f"{name}.jsonl")
    if os.path.exists(log):
        os.remove(log)
    return clean_env(LD_PRELOAD=args.shim, TCPTUNE_POLICY=policy, TCPTUNE_LOG=log), log


def start_logged_python(args, name, program, *program_args, policy_text=JSONL_LOG_POLICY):
    """`program` (Python source) started by this interpreter under the shim, with the policy
    `policy_text` and its log at WORK_DIR/NAME.jsonl (removed first); stdin and stdout are pipes
    (text). Returns the process and the log's path."""
    env, log = logged_env(args, name, policy_text)
    app = subprocess.Popen([sys.executable, "-c", program, *program_args], env=env, stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, text=True)
    return app, log


def run_logged_python(args, checks, name, program):
    """start_logged_python, run to its end: what its first line of stdout says (JSON), its exit 0
    checked (killed if it does not end within a minute), and its log's path."""
    app, log = start_logged_python(args, name, program)
    try:
        out = json.loads(app.stdout.readline())
        checks.check(app.wait(timeout=60) == 0, f"{name}: the program ran to its end")
    finally:
        if app.poll() is None:
            app.kill()
            app.wait()
    return out, log


def free_port():
    """A loopback port nobody has bound now, for a server started next. It is taken below the
    ephemeral range, so that no client's connect() (a parallel test's) gets it as its source port
    before the server binds it."""
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        low = int(f.read().split()[0])
    for _ in range(100):
        port = random.randrange(10000, max(10001, low))
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(cmd, env, timeout=60, **kwargs):
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, **kwargs)


# The Prometheus text exposition format (0.0.4), as node_exporter's textfile collector reads it.
NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*$")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\["\\n])*)"')


def parse_exposition(text):
    """{(name, frozenset(labels.items())): value}; raises ValueError on anything not allowed."""
    if not text.endswith("\n"):
        raise ValueError("the file does not end with a newline")
    types, samples = {}, {}
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("# HELP "):
            parts = line.split(" ", 3)
            if len(parts) < 4 or not NAME.match(parts[2]):
                raise ValueError(f"line {number}: bad HELP")
            continue
        if line.startswith("# TYPE "):
            parts = line.split(" ")
            if len(parts) != 4 or not NAME.match(parts[2]) or parts[3] not in ("counter", "gauge", "histogram",
                                                                                  "summary", "untyped"):
                raise ValueError(f"line {number}: bad TYPE")
            if parts[2] in types:
                raise ValueError(f"line {number}: second TYPE for {parts[2]}")
            types[parts[2]] = parts[3]
            continue
        if line.startswith("#") or not line:
            continue  # comments (the merge's own state lines among them) and blank lines mean nothing
        match = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$", line)
        if not match:
            raise ValueError(f"line {number}: not a sample: {line}")
        name, _, label_text, value = match.groups()
        labels = {}
        if label_text:
            rest = label_text
            while rest:
                label = LABEL.match(rest)
                if not label or label.group(1) in labels:
                    raise ValueError(f"line {number}: bad labels {label_text}")
                labels[label.group(1)] = label.group(2)
                rest = rest[label.end():]
                if rest.startswith(","):
                    rest = rest[1:]
                elif rest:
                    raise ValueError(f"line {number}: bad labels {label_text}")
        family = re.sub(r"_(bucket|sum|count)$", "", name) if name not in types else name
        if family not in types:
            raise ValueError(f"line {number}: {name} has no TYPE before it")
        if types[family] == "counter" and not name.endswith("_total"):
            raise ValueError(f"line {number}: counter {name} should end in _total")
        key = (name, frozenset(labels.items()))
        if key in samples:
            raise ValueError(f"line {number}: duplicate series {line}")
        samples[key] = float(value)
        if types[family] == "counter" and samples[key] < 0:
            raise ValueError(f"line {number}: negative counter")
    # Histograms: le increasing, cumulative counts non-decreasing, +Inf == _count.
    for family, kind in types.items():
        if kind != "histogram":
            continue
        series = {}
        for (name, labels), value in samples.items():
            if name == family + "_bucket":
                rest = frozenset((k, v) for k, v in labels if k != "le")
                le = dict(labels)["le"]
                series.setdefault(rest, []).append((float("inf") if le == "+Inf" else float(le), value))
        for rest, buckets in series.items():
            buckets.sort()
            counts = [count for _, count in buckets]
            if buckets[-1][0] != float("inf") or counts != sorted(counts):
                raise ValueError(f"{family}: buckets not cumulative or no +Inf")
            if samples.get((family + "_count", rest)) != counts[-1] or (family + "_sum", rest) not in samples:
                raise ValueError(f"{family}: _count differs from the +Inf bucket, or _sum is missing")
    return samples


def value(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())))


def rejects(text):
    try:
        parse_exposition(text)
        return False
    except ValueError:
        return True


def seccomp_listener_available():
    """Whether this kernel and sandbox give a seccomp listener (no_new_privs, a filter)."""
    try:
        with open("/proc/self/status", encoding="utf-8") as f:
            return any(line.startswith("Seccomp:") for line in f)
    except OSError:
        return False
