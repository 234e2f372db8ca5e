#!/usr/bin/env python3
"""Many processes of one program under one textfile, `prometheus_textfile = "DIR/{program}.prom"`,
read through a real node_exporter and Prometheus (Debian's), both started here on loopback with
a 1 s scrape interval. Python processes of one program, preloaded, each make a known number of
writes: two stay up, one exits early, six start together and exit, one forks a child that makes
its own connection and exits, and one is killed with SIGKILL once its counts are in the file.
Checked through Prometheus's HTTP API: tcptune_writes_total and tcptune_connections_total are
the exact sums over every process, the ended and the killed ones included (and so is
tcptune_options_not_as_requested_total, for an option every connection is refused); tcptune_processes
counts the live ones (the killed one taken out by the next writer that sees it gone), and 0
once all have exited while the sums stay; node_exporter reports no duplicate series and no
textfile error. The recording rules of examples/prometheus are loaded too, and evaluate."""
import os
import shutil
import signal
import subprocess
import sys
import time

from loopback_services import LoopbackServer, PrometheusStack, drain, exporter_and_prometheus
from loopback_services import wait_for as wait_until
from testlib import SKIP, Checks, clean_env, parse_args, parse_exposition, value

DEADLINE = time.monotonic() + 55  # ctest's TIMEOUT is 60 s
APP = r"""
import os, socket, sys
port, writes, forked_writes, hold = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "hold"
def connect_and_write(count):
    c = socket.create_connection(("127.0.0.1", port))
    for _ in range(count):
        c.send(b"x")
    return c
kept = connect_and_write(writes)
if forked_writes:
    child = os.fork()
    if child == 0:
        connect_and_write(forked_writes).close()
        sys.exit(0)  # a normal exit: the shim's last merge runs
    os.waitpid(child, 0)
print("done", flush=True)
if hold:
    sys.stdin.read()
"""
# name: (writes, writes of a forked child, stays up until told)
PROCESSES = {"long": (70, 0, True), "forking": (30, 20, True), "short": (50, 0, False), "killed": (40, 0, True)}
PROCESSES.update({f"burst{i}": (10, 0, False) for i in range(6)})
TOTAL_WRITES = sum(w + f for w, f, _ in PROCESSES.values())
TOTAL_CONNECTIONS = sum(1 + (1 if f else 0) for _, f, _ in PROCESSES.values())


def remaining():
    return max(0.1, DEADLINE - time.monotonic())


def wait_for(what, predicate, limit_s=None):
    """Polls `predicate` until it returns a true value or the time runs out; returns its last value."""
    result = wait_until(predicate, min(limit_s or remaining(), remaining()))
    if not result:
        print(f"gave up waiting for {what}", flush=True)
    return result


def main():
    args = parse_args()
    checks = Checks()
    binaries = exporter_and_prometheus()
    if binaries is None:
        print("skipped: needs Debian's prometheus and prometheus-node-exporter (scripts/deps.sh test)", flush=True)
        sys.exit(SKIP)
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    rules = os.path.join(args.source_dir, "examples", "prometheus", "tcptune.rules.yml")
    rules = rules if os.path.exists(rules) else None
    shutil.rmtree(args.work_dir, ignore_errors=True)
    textfiles = os.path.join(args.work_dir, "textfile")
    os.makedirs(textfiles)
    policy = os.path.join(args.work_dir, "policy.toml")
    with open(policy, "w") as f:
        f.write(f'version = 1\n[log]\nformat = "jsonl"\nprometheus_textfile = "{textfiles}/{{program}}.prom"\n'
                'interval = "200ms"\n'
                # An option the kernel refuses (TTL 0) on every connection, for the counter of
                # options that did not take effect as asked.
                '[defaults]\nsockopt = [ { level = "IPPROTO_IP", name = "IP_TTL", value = 0 } ]\n')
    prometheus = PrometheusStack(binaries, args.work_dir, textfiles, clean_env(), rules)
    apps = {}
    try:
        ready = prometheus.wait_ready(min(20, remaining()))
        checks.check(ready, "node_exporter and Prometheus start on loopback")
        if not ready:
            checks.finish()
        sink = LoopbackServer(drain)
        env = clean_env(LD_PRELOAD=args.shim, TCPTUNE_POLICY=policy,
                        TCPTUNE_LOG=os.path.join(args.work_dir, "log-{pid}.jsonl"))
        for name, (writes, forked, hold) in PROCESSES.items():
            apps[name] = subprocess.Popen([python, "-c", APP, str(sink.port), str(writes), str(forked),
                                           "hold" if hold else "exit"],
                                          env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for name, app in apps.items():
            checks.check(app.stdout.readline().strip() == "done", f"{name} made its writes")
        for name, (_, _, hold) in PROCESSES.items():
            if not hold:
                apps[name].wait(timeout=remaining())
        names = [n for n in os.listdir(textfiles) if n.endswith(".prom")]
        checks.check(len(names) == 1, f"one textfile for the program's processes ({names})")
        if len(names) != 1:
            checks.finish()
        program = names[0][:-len(".prom")]
        path = os.path.join(textfiles, names[0])
        defaults = dict(program=program, rule="(defaults)")

        def file_writes():
            with open(path) as f:
                return value(parse_exposition(f.read()), "tcptune_writes_total", **defaults) == TOTAL_WRITES

        checks.check(bool(wait_for("every share in the file", file_writes)),
                     f"the file sums every process's writes ({TOTAL_WRITES}), as they are written")
        apps["killed"].send_signal(signal.SIGKILL)
        apps["killed"].wait(timeout=remaining())

        selector = f'{{program="{program}",rule="(defaults)"}}'
        expected_live = {"tcptune_writes_total" + selector: TOTAL_WRITES,
                         "tcptune_connections_total" + selector: TOTAL_CONNECTIONS,
                         f'tcptune_processes{{program="{program}"}}': 2,
                         f'tcptune_options_not_as_requested_total{{program="{program}",option="IP_TTL",'
                         'outcome="refused"}': TOTAL_CONNECTIONS}

        def scraped(expected):
            return {q: prometheus.scalar(q) for q in expected}

        got = wait_for("Prometheus to see the sums", lambda: (lambda g: g if g == expected_live else None)(
            scraped(expected_live))) or scraped(expected_live)
        for query, want in expected_live.items():
            checks.check(got.get(query) == want,
                         f"two processes live: Prometheus has {query} = {want} ({got.get(query)})")

        for name in ("long", "forking"):
            apps[name].stdin.close()
            apps[name].wait(timeout=remaining())
        expected_end = dict(expected_live)
        expected_end[f'tcptune_processes{{program="{program}"}}'] = 0
        got = wait_for("Prometheus to see every process gone", lambda: (
            lambda g: g if g == expected_end else None)(scraped(expected_end))) or scraped(expected_end)
        for query, want in expected_end.items():
            checks.check(got.get(query) == want,
                         f"all exited: Prometheus has {query} = {want} ({got.get(query)}): "
                         "counters keep the ended processes, the live gauge does not")
        checks.check(prometheus.scalar("node_textfile_scrape_error") == 0, "node_textfile_scrape_error is 0")
        if rules:
            recorded = wait_for("the recording rules", lambda: prometheus.query(
                f'program_rule:tcptune_write_latency_seconds:p99_rate5m{{program="{program}"}}'), 15)
            checks.check(bool(recorded), f"the example rules load and evaluate ({recorded})")
    finally:
        for app in apps.values():
            if app.poll() is None:
                app.kill()
                app.wait()
        prometheus.close()
    with open(os.path.join(args.work_dir, "node_exporter.log")) as f:
        exporter_output = f.read()
    duplicates = [line for line in exporter_output.splitlines()
                  if "duplicate" in line.lower() or "collected before" in line or "level=error" in line]
    checks.check(not duplicates, f"node_exporter reports no duplicate series and no error ({duplicates[:2]})")
    checks.finish()


if __name__ == "__main__":
    main()
