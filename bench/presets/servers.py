"""Real servers for the keep_warm preset tests and bench, run inside the emulated link's
receiver namespace, plus the link itself and the shim's log records.

Every server keeps its configuration, data and logs in a work directory of its own and listens
only on the namespace's address (198.18.0.2) or its loopback. `problems()` returns what the
server logged about a malformed or rejected request since it finished starting.
"""
import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

NS_CLIENT = "tcptune-a"
NS_SERVER = "tcptune-b"
SERVER_ADDRESS = "198.18.0.2"
# One link per host: tests, benches and people running them by hand queue on this lock.
LINK_LOCK = "/tmp/tcptune-linkem.lock"
# The client libraries are Debian packages, installed for Debian's interpreter.
CLIENT_PYTHON = "/usr/bin/python3"
HERE = Path(__file__).resolve().parent
VERIFIER = HERE / "body_verifier.py"


def in_namespace(namespace, command):
    return ["ip", "netns", "exec", namespace] + [str(part) for part in command]


@contextlib.contextmanager
def link_lock():
    """Held while the link is ours (flock(2), as the flock(1) command takes it)."""
    with open(LINK_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def link_up(linkem, rtt="180ms"):
    """The emulated link with cubic and slow start after idle on in both namespaces; its JSON."""
    done = subprocess.run([str(linkem), "up", "--rtt", rtt, "--rate", "0", "--congestion", "cubic",
                           "--slow-start-after-idle", "1"], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"tcptune-linkem up failed: {done.stderr.strip()}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def link_pid(linkem):
    """The running link daemon's pid (`tcptune-linkem status`), or None."""
    done = subprocess.run([str(linkem), "status"], capture_output=True, text=True, timeout=60)
    try:
        return json.loads(done.stdout.strip().splitlines()[0]).get("pid") if done.returncode == 0 else None
    except (ValueError, IndexError):
        return None


def link_down(linkem, link=None):
    """Takes the link down, unless LINK (link_up's answer) was replaced meanwhile by someone who
    did not wait for the lock: that one is theirs. True when the link was still ours."""
    if link is not None and link_pid(linkem) != link.get("pid"):
        return False
    subprocess.run([str(linkem), "down"], capture_output=True, timeout=60)
    return True


REPLACED = ("the emulated link was replaced while this ran (someone started tcptune-linkem without taking "
            f"{LINK_LOCK}); these results are not over the link that was set up")


def set_slow_start_after_idle(linkem, value):
    subprocess.run([str(linkem), "set", "--slow-start-after-idle", str(value)], check=True,
                   capture_output=True, timeout=60)


def wait_for_port(port, timeout_s, process=None, address=SERVER_ADDRESS, namespace=NS_SERVER):
    """True once something accepts on ADDRESS:PORT in the namespace."""
    probe = ("import socket,sys\ntry:\n socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=1)\n"
             "except OSError:\n sys.exit(1)\n")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            return False
        if subprocess.run(in_namespace(namespace, [sys.executable, "-c", probe, address, port]),
                          capture_output=True, timeout=10).returncode == 0:
            return True
        time.sleep(0.3)
    return False


def stop_group(process, timeout_s=20):
    """SIGTERM to the process group the server leads, then SIGKILL to what is left."""
    if process is None or process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def start(command, log_path, env=None, namespace=NS_SERVER):
    """COMMAND in the namespace, in a process group of its own, output to LOG_PATH."""
    with open(log_path, "ab") as log:
        return subprocess.Popen(in_namespace(namespace, command), stdout=log, stderr=subprocess.STDOUT,
                                env=env, start_new_session=True)


def tail_from(path, offset):
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace").splitlines()
    except FileNotFoundError:
        return []


def size_of(path):
    try:
        return os.path.getsize(path)
    except FileNotFoundError:
        return 0


class Server:
    """start() / stop() / problems(); `port` is where clients connect on SERVER_ADDRESS."""

    package = ""      # the Debian package that must be installed
    executables = ()  # and the programs it must provide

    def __init__(self, work_dir, port):
        self.work = Path(work_dir)
        self.work.mkdir(parents=True, exist_ok=True)
        self.port = port
        self.processes = []

    @classmethod
    def missing(cls):
        """What is not installed, for the skip message, or None."""
        lacking = [name for name in cls.executables if shutil.which(name) is None and not Path(name).exists()]
        return f"{cls.package} ({', '.join(lacking)})" if lacking else None

    def mark(self):
        """From here on, problems() sees only what the server logs next."""

    def stop(self):
        for process in reversed(self.processes):
            stop_group(process)
        self.processes = []

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()


class BodyVerifier(Server):
    """The upstream behind the HTTP servers: answers "ok SEQ SHA256" when a body is the one the
    client sent for SEQ, 422 otherwise (tests/presets' proof that nothing was cut or moved)."""

    def start(self):
        process = start([sys.executable, VERIFIER, "--port", self.port], self.work / "verifier.log")
        self.processes.append(process)
        if not wait_for_port(self.port, 15, process, address="127.0.0.1"):
            raise RuntimeError(f"the body verifier did not start: {(self.work / 'verifier.log').read_text()}")

    def problems(self):
        return [line for line in tail_from(self.work / "verifier.log", 0) if "MISMATCH" in line]


class Nginx(Server):
    package = "nginx-light"
    executables = ("nginx",)

    def __init__(self, work_dir, port, upstream_port):
        super().__init__(work_dir, port)
        self.upstream_port = upstream_port
        self.access_log = self.work / "access.log"
        self.error_log = self.work / "error.log"

    def start(self):
        for name in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
            (self.work / name).mkdir(exist_ok=True)
        conf = self.work / "nginx.conf"
        # Workers as root, so they can use the private temp directories.
        conf.write_text(f"""user root;
daemon off;
worker_processes 1;
pid {self.work}/nginx.pid;
error_log {self.error_log} info;
events {{ worker_connections 64; }}
http {{
  log_format presets '$status "$request" $request_length $connection $connection_requests';
  access_log {self.access_log} presets;
  client_body_temp_path {self.work}/body;
  proxy_temp_path {self.work}/proxy;
  fastcgi_temp_path {self.work}/fastcgi;
  uwsgi_temp_path {self.work}/uwsgi;
  scgi_temp_path {self.work}/scgi;
  client_body_buffer_size 1m;
  keepalive_timeout 120s;
  keepalive_requests 10000;
  server {{
    listen {SERVER_ADDRESS}:{self.port};
    location / {{ proxy_pass http://127.0.0.1:{self.upstream_port}; }}
  }}
}}
""")
        process = start(["nginx", "-p", self.work, "-e", self.error_log, "-c", conf], self.work / "nginx.out")
        self.processes.append(process)
        if not wait_for_port(self.port, 20, process):
            raise RuntimeError(f"nginx did not start: {tail_from(self.work / 'nginx.out', 0)[-5:]} "
                               f"{tail_from(self.error_log, 0)[-5:]}")
        self.mark()

    def mark(self):
        """From here on, access_lines() and problems() see only what comes next."""
        self.access_offset = size_of(self.access_log)
        self.error_offset = size_of(self.error_log)

    def access_lines(self):
        return tail_from(self.access_log, self.access_offset)

    def problems(self):
        """Access-log lines that are not a 200, and error-log lines about a bad request."""
        bad = [f"access: {line}" for line in self.access_lines() if not line.startswith("200 ")]
        for line in tail_from(self.error_log, self.error_offset):
            if any(word in line for word in ("client sent", "invalid", "[error]", "[crit]", "[alert]")):
                bad.append(f"error log: {line}")
        return bad


class Haproxy(Server):
    package = "haproxy"
    executables = ("haproxy",)

    def __init__(self, work_dir, port, upstream_port):
        super().__init__(work_dir, port)
        self.upstream_port = upstream_port
        self.log = self.work / "haproxy.log"
        self.stats_socket = self.work / "haproxy.sock"

    def start(self):
        conf = self.work / "haproxy.cfg"
        conf.write_text(f"""global
  log stdout format raw local0 info
  stats socket {self.stats_socket} mode 600 level admin
defaults
  mode http
  log global
  option httplog
  timeout connect 5s
  timeout client 120s
  timeout server 120s
  timeout http-request 120s
  timeout http-keep-alive 120s
frontend presets
  bind {SERVER_ADDRESS}:{self.port}
  default_backend verifier
backend verifier
  server verifier 127.0.0.1:{self.upstream_port}
""")
        process = start(["haproxy", "-db", "-f", conf], self.log)
        self.processes.append(process)
        if not wait_for_port(self.port, 20, process):
            raise RuntimeError(f"haproxy did not start: {tail_from(self.log, 0)[-5:]}")
        self.mark()

    def mark(self):
        self.log_offset = size_of(self.log)

    def show_errors(self):
        """`show errors` on the stats socket: the requests haproxy rejected as malformed."""
        command = [sys.executable, "-c",
                   "import socket,sys\ns=socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1])\n"
                   "s.sendall(b'show errors\\n')\nout=b''\nwhile True:\n d=s.recv(65536)\n if not d: break\n"
                   " out+=d\nsys.stdout.write(out.decode(errors='replace'))\n", self.stats_socket]
        return subprocess.run(in_namespace(NS_SERVER, command), capture_output=True, text=True, timeout=20).stdout

    def request_lines(self):
        return [line for line in tail_from(self.log, self.log_offset) if "presets verifier/" in line or
                "presets/" in line]

    def problems(self):
        bad = [f"log: {line}" for line in self.request_lines()
               if " 200 " not in line or "BADREQ" in line]
        errors = self.show_errors()
        captured = re.search(r"Total events captured on \[[^\]]*\]\s*:\s*(\d+)", errors)
        if captured is None:
            bad.append(f"show errors: no answer ({errors.strip()[:200]})")
        elif captured.group(1) != "0":
            bad.append(f"show errors: {errors.strip()[:2000]}")
        return bad


class RedisServer(Server):
    package = "redis-server"
    executables = ("redis-server",)

    def __init__(self, work_dir, port):
        super().__init__(work_dir, port)
        self.log = self.work / "redis.log"

    def start(self):
        conf = self.work / "redis.conf"
        # verbose: protocol errors are logged at this level.
        conf.write_text(f"""bind {SERVER_ADDRESS}
port {self.port}
protected-mode no
daemonize no
dir {self.work}
logfile {self.log}
loglevel verbose
save ""
appendonly no
""")
        process = start(["redis-server", conf], self.work / "redis.out")
        self.processes.append(process)
        if not wait_for_port(self.port, 20, process):
            raise RuntimeError(f"redis-server did not start: {tail_from(self.log, 0)[-5:]}")
        self.mark()

    def mark(self):
        self.log_offset = size_of(self.log)

    def problems(self):
        return [f"log: {line}" for line in tail_from(self.log, self.log_offset)
                if "rotocol error" in line or "# " in line]  # '#' marks warnings in redis logs


class RabbitMq(Server):
    """One broker with AMQP 0-9-1 on `port` and the STOMP plugin on `stomp_port`."""

    package = "rabbitmq-server"
    executables = ("/usr/lib/rabbitmq/bin/rabbitmq-server", "epmd")

    def __init__(self, work_dir, port, stomp_port):
        super().__init__(work_dir, port)
        self.stomp_port = stomp_port
        self.node = f"tcptune-presets-{os.getpid()}@localhost"
        self.log = self.work / "log" / "rabbit.log"

    def start(self):
        for name in ("home", "mnesia", "log"):
            (self.work / name).mkdir(exist_ok=True)
        (self.work / "rabbitmq.conf").write_text(f"""listeners.tcp.1 = {SERVER_ADDRESS}:{self.port}
stomp.listeners.tcp.1 = {SERVER_ADDRESS}:{self.stomp_port}
loopback_users = none
log.console = false
log.file.level = info
""")
        # What `rabbitmq-plugins enable rabbitmq_stomp` writes, for this node only.
        (self.work / "enabled_plugins").write_text("[rabbitmq_stomp].\n")
        (self.work / "rabbitmq-env.conf").write_text("")
        epmd_port = "4369"
        env = dict(os.environ, HOME=str(self.work / "home"), RABBITMQ_NODENAME=self.node,
                   RABBITMQ_MNESIA_BASE=str(self.work / "mnesia"), RABBITMQ_LOG_BASE=str(self.work / "log"),
                   RABBITMQ_LOGS=str(self.log), RABBITMQ_CONFIG_FILE=str(self.work / "rabbitmq.conf"),
                   RABBITMQ_ENABLED_PLUGINS_FILE=str(self.work / "enabled_plugins"),
                   RABBITMQ_CONF_ENV_FILE=str(self.work / "rabbitmq-env.conf"),
                   RABBITMQ_PID_FILE=str(self.work / "rabbitmq.pid"),
                   ERL_EPMD_ADDRESS="127.0.0.1", ERL_EPMD_PORT=epmd_port,
                   RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}")
        # Our own epmd, on the namespace's loopback, so that nothing outlives the test.
        self.processes.append(start(["epmd", "-address", "127.0.0.1", "-port", epmd_port], self.work / "epmd.log",
                                    env=env))
        process = start(["/usr/lib/rabbitmq/bin/rabbitmq-server"], self.work / "rabbitmq.out", env=env)
        self.processes.append(process)
        # Slow to boot (about 15 s on two busy cores).
        if not (wait_for_port(self.port, 90, process) and wait_for_port(self.stomp_port, 30, process)):
            raise RuntimeError(f"rabbitmq-server did not start: {tail_from(self.work / 'rabbitmq.out', 0)[-10:]}")
        self.mark()

    def mark(self):
        self.log_offset = size_of(self.log)

    def lines_since_start(self):
        return tail_from(self.log, self.log_offset)

    def problems(self):
        """Errors, and anything about a frame it could not take (AMQP frame_error, unexpected_frame,
        STOMP framing errors)."""
        return [f"log: {line}" for line in self.lines_since_start()
                if "[error]" in line or re.search(r"(?i)frame|malformed|syntax|unexpected", line)]


class LineService(Server):
    """Newline-delimited JSON: socat accepts, jq (the JSON stream parser; whitespace between
    values, empty lines included, is insignificant to it) reads the stream and answers each
    object with a line saying what it parsed. jq's own errors go to its log."""

    package = "jq and socat"
    executables = ("jq", "socat")
    FILTER = "{seq: .seq, bytes: (.data | length), head: .data[:16], tail: .data[-16:]}"

    def __init__(self, work_dir, port):
        super().__init__(work_dir, port)
        self.log = self.work / "jq.log"

    def start(self):
        # A script, since socat's address syntax gives ':' and ',' meanings of its own.
        script = self.work / "jq-service.sh"
        script.write_text(f"#!/bin/sh\nexec jq -c --unbuffered '{self.FILTER}' 2>>{self.log}\n")
        script.chmod(0o755)
        process = start(["socat", f"TCP-LISTEN:{self.port},bind={SERVER_ADDRESS},reuseaddr,fork", f"EXEC:{script}"],
                        self.work / "socat.log")
        self.processes.append(process)
        if not wait_for_port(self.port, 20, process):
            raise RuntimeError(f"socat did not start: {tail_from(self.work / 'socat.log', 0)[-5:]}")
        self.mark()

    def mark(self):
        self.log_offset = size_of(self.log)
        self.socat_offset = size_of(self.work / "socat.log")

    def problems(self):
        return [f"jq: {line}" for line in tail_from(self.log, self.log_offset) if line.strip()] + \
               [f"socat: {line}" for line in tail_from(self.work / "socat.log", self.socat_offset) if " E " in line]


def shim_records(log_path):
    """The shim's jsonl records, or [] when it wrote none."""
    try:
        with open(log_path) as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


def run_client(tcptune, protocol, port, work_dir, name, policy=None, gap=1.5, count=5, warmup=4, size=60000,
               timeout_s=120, idle_before_close=0):
    """clients.py in the client namespace, under `tcptune run --policy POLICY` when one is given.
    Returns (result JSON or None, the process, the shim's records)."""
    log = Path(work_dir) / f"{name}.jsonl"
    if log.exists():
        log.unlink()
    client = [CLIENT_PYTHON, HERE / "clients.py", protocol, "--host", SERVER_ADDRESS, "--port", port,
              "--gap", gap, "--count", count, "--warmup", warmup, "--size", size,
              "--idle-before-close", idle_before_close]
    if policy is not None:
        client = [tcptune, "run", "--policy", policy, "--log", log, "-q", "--"] + client
    done = subprocess.run(in_namespace(NS_CLIENT, client), capture_output=True, text=True, timeout=timeout_s)
    lines = done.stdout.strip().splitlines()
    try:
        result = json.loads(lines[-1]) if lines else None
    except ValueError:
        result = None
    return result, done, shim_records(log)


def write_policy(work_dir, name, protocol, port):
    """The preset alone on connections to PORT: no nodelay key, so the app's own choice stands."""
    path = Path(work_dir) / f"{name}.toml"
    path.write_text(f"""version = 1
[log]
format = "jsonl"

[[rule]]
name = "{name}"
match = {{ port = {port} }}
keep_warm = {{ protocol = "{protocol}" }}
""")
    return path
