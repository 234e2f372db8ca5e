"""Services the Prometheus tests start on loopback: a TCP server that runs a handler per
connection, and Debian's node_exporter (textfile collector only) scraped by Prometheus every
second. Each test bounds its own time; these only start, wait and stop."""
import json
import os
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request

from testlib import free_port  # noqa: F401 (the tests take it from here too)


def http_get(url, timeout=2):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read().decode()


def wait_for(predicate, limit_s):
    """Polls `predicate` (errors count as not yet) until it returns a true value or `limit_s`
    seconds pass; returns its last value."""
    end = time.monotonic() + limit_s
    result = None
    while time.monotonic() < end:
        try:
            result = predicate()
        except (OSError, ValueError, KeyError):
            result = None
        if result:
            return result
        time.sleep(0.2)
    return result


class LoopbackServer:
    """A loopback listener that runs `handle(conn)` in a thread of its own per connection."""

    def __init__(self, handle, backlog=64):
        self.handle = handle
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen(backlog)
        self.port = self.socket.getsockname()[1]
        threading.Thread(target=self.accept_all, daemon=True).start()

    def accept_all(self):
        while True:
            try:
                conn, _ = self.socket.accept()
            except OSError:
                return
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()


def drain(conn):
    """A handler that reads the connection to its end."""
    with conn:
        while conn.recv(65536):
            pass


def exporter_and_prometheus():
    """(node_exporter, prometheus) paths, or None when Debian's packages are not installed."""
    exporter = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
    prometheus = shutil.which("prometheus")
    return (exporter, prometheus) if exporter and prometheus else None


class PrometheusStack:
    """node_exporter serving `textfiles` and a Prometheus scraping it every second, with
    `rules` (a rule file) when given; their output goes to files in `work_dir`."""

    def __init__(self, binaries, work_dir, textfiles, env, rules=None):
        self.binaries, self.work_dir, self.textfiles, self.env, self.rules = binaries, work_dir, textfiles, env, rules
        # Appended to, so that a restart keeps what the first start said.
        self.logs = [open(os.path.join(work_dir, name), "a") for name in ("node_exporter.log", "prometheus.log")]
        for log in self.logs:
            log.truncate(0)
        self.processes = []
        self.start()

    def start(self):
        exporter_bin, prometheus_bin = self.binaries
        exporter_port = free_port()
        prometheus_port = free_port()
        while prometheus_port == exporter_port:
            prometheus_port = free_port()
        config = os.path.join(self.work_dir, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    + (f"rule_files: [{json.dumps(os.path.abspath(self.rules))}]\n" if self.rules else "")
                    + "scrape_configs:\n  - job_name: node\n    static_configs:\n"
                    f"      - targets: ['127.0.0.1:{exporter_port}']\n")
        self.processes = [
            subprocess.Popen([exporter_bin, "--collector.disable-defaults", "--collector.textfile",
                              f"--collector.textfile.directory={self.textfiles}",
                              f"--web.listen-address=127.0.0.1:{exporter_port}"],
                             stdout=self.logs[0], stderr=subprocess.STDOUT, env=self.env),
            subprocess.Popen([prometheus_bin, f"--config.file={config}",
                              f"--storage.tsdb.path={os.path.join(self.work_dir, 'tsdb')}",
                              f"--web.listen-address=127.0.0.1:{prometheus_port}"],
                             stdout=self.logs[1], stderr=subprocess.STDOUT, env=self.env),
        ]
        self.url = f"http://127.0.0.1:{prometheus_port}"

    def wait_ready(self, limit_s, attempts=3):
        """Waits for Prometheus to say it is ready. A port is only free until something else takes
        it (a parallel test's connection can get it as its source port), so a stack of which a
        process has exited is started again on new ports, `attempts` times in all. On failure,
        prints the end of each log."""
        end = time.monotonic() + limit_s
        while time.monotonic() < end:
            exited = [p.args[0] for p in self.processes if p.poll() is not None]
            if exited:
                attempts -= 1
                print(f"{', '.join(exited)} exited at start-up; {self.log_tails()}", flush=True)
                self.stop()
                if attempts == 0:
                    return False
                self.start()
            try:
                if "Ready" in http_get(f"{self.url}/-/ready"):
                    return True
            except (OSError, ValueError):
                pass
            time.sleep(0.2)
        print(f"Prometheus not ready after {limit_s:.0f} s; {self.log_tails()}", flush=True)
        return False

    def log_tails(self, lines=5):
        tails = []
        for log in self.logs:
            with open(log.name, errors="replace") as f:
                tails.append(f"{os.path.basename(log.name)} ends: " + " | ".join(f.read().splitlines()[-lines:]))
        return "; ".join(tails)

    def query(self, expression):
        """{labels-as-frozenset: value} of an instant query."""
        answer = json.loads(http_get(f"{self.url}/api/v1/query?query={urllib.parse.quote(expression)}"))
        if answer.get("status") != "success":
            raise ValueError(answer)
        return {frozenset(r["metric"].items()): float(r["value"][1]) for r in answer["data"]["result"]}

    def scalar(self, expression):
        """The value of a query that gives one series, or None."""
        result = self.query(expression)
        return next(iter(result.values())) if len(result) == 1 else None

    def stop(self):
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()

    def close(self):
        self.stop()
        for log in self.logs:
            log.close()
