"""Runs tcptune_stress (sender, receiver, scale) with and without the shim and checks the
results against each other: the receiver's view of every stream, what the sender says it did,
and what the shim's jsonl log and Prometheus textfile say. Used by stress_test.py (ctest
stress.mixed, bounded) and bench/stress/run.py (longer runs, the figures in docs/robustness.md)."""
import glob
import json
import os
import resource
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field

HEARTBEAT_INTERVAL_MS = 20

POLICY = """version = 1
[defaults]
nodelay = "{nodelay}"
congestion = "reno"          # the host default is bbr, which never restarts after idle
keep_warm = {{ heartbeat = "\\n", interval = "{interval}ms" }}
[log]
format = "jsonl"
trace_writes = false
prometheus_textfile = "{prometheus}"
interval = "500ms"

# bbr: keep-warm is not needed, so none of these connections may ever see a newline.
[[rule]]
name = "plain"
match = {{ port = {plain_port} }}
congestion = "bbr"
"""


@dataclass
class Variant:
    name: str
    sender_shim: bool = True
    receiver_shim: bool = False
    nodelay: str = "force"
    seconds: float = 12.0
    threads: int = 8
    connections: int = 20
    seed: int = 1
    sender_args: tuple = ()  # more tcptune_stress send options, e.g. ("--exec-linger-ms", 0)


@dataclass
class Outcome:
    variant: Variant
    checks: list = field(default_factory=list)  # (ok, message)
    sender: dict = field(default_factory=dict)
    receiver: dict = field(default_factory=dict)
    summaries: dict = field(default_factory=dict)  # pid -> summary record
    seconds: float = 0.0

    def check(self, ok, message):
        self.checks.append((bool(ok), f"{self.variant.name}: {message}"))

    def note(self, message):
        self.checks.append((None, f"{self.variant.name}: {message}"))

    @property
    def failed(self):
        return [message for ok, message in self.checks if ok is False]


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TCPTUNE_") and k != "LD_PRELOAD"}
    env.update({k: str(v) for k, v in extra.items()})
    return env


def listener():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(4096)
    return sock


def read_records(path):
    """Every line of a jsonl log, and the lines that are not JSON (a torn or mixed line)."""
    records, broken = [], []
    with open(path, errors="replace") as f:
        for line in f:
            try:
                records.append(json.loads(line))
            except ValueError:
                broken.append(line.rstrip("\n")[:200])
    return records, broken


def prometheus_totals(path):
    """Counter totals over every rule: {metric: value}."""
    totals = {}
    if not os.path.exists(path):
        return totals
    for line in open(path):
        if line.startswith("#") or "{" not in line:
            continue
        name = line.split("{", 1)[0]
        if name.endswith("_total"):
            totals[name] = totals.get(name, 0) + float(line.split()[-1])
    return totals


class Receiver:
    """tcptune_stress receive, on listeners this process made (so a policy can name their
    ports before the receiver starts, possibly under the shim)."""

    def __init__(self, stress, seed, env, signals=True, max_connections=30000):
        self.listeners = [listener(), listener()]
        self.warm_port, self.plain_port = (s.getsockname()[1] for s in self.listeners)
        fds = [s.fileno() for s in self.listeners]
        args = [stress, "receive", "--seed", str(seed), "--listen-fds", f"{fds[0]},{fds[1]}",
                "--max-connections", str(max_connections)]
        self.env = env
        self.args = args + (["--signals"] if signals else [])

    def start(self, env=None):
        self.process = subprocess.Popen(self.args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                        env=env or self.env, pass_fds=[s.fileno() for s in self.listeners])
        for s in self.listeners:
            s.close()
        self.process.stdout.readline()  # "ports WARM PLAIN": it is listening

    def finish(self, timeout=60):
        try:
            out, _ = self.process.communicate("finish\n", timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            out, _ = self.process.communicate()
        lines = [line for line in out.splitlines() if line.startswith("{")]
        return json.loads(lines[-1]) if lines else {}


def shim_env(shim, policy, log):
    return clean_env(LD_PRELOAD=shim, TCPTUNE_POLICY=policy, TCPTUNE_LOG=log)


def run_variant(stress, shim, work_dir, variant):
    out = Outcome(variant)
    work = os.path.join(work_dir, variant.name)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    receiver = Receiver(stress, variant.seed, None)
    policies = {}
    for side in ("sender", "receiver"):
        policies[side] = os.path.join(work, f"{side}.toml")
        with open(policies[side], "w") as f:
            f.write(POLICY.format(nodelay=variant.nodelay, plain_port=receiver.plain_port,
                                  interval=HEARTBEAT_INTERVAL_MS,
                                  prometheus=os.path.join(work, side + "-{pid}.prom")))
    # {pid}: every process writes its own log, forked children and exec'd programs included.
    log = {side: os.path.join(work, side + "-{pid}.jsonl") for side in ("sender", "receiver")}
    receiver.start(shim_env(shim, policies["receiver"], log["receiver"]) if variant.receiver_shim else clean_env())
    sender_env = shim_env(shim, policies["sender"], log["sender"]) if variant.sender_shim else clean_env()
    started = time.monotonic()
    args = [stress, "send", "--warm-port", receiver.warm_port, "--plain-port", receiver.plain_port,
            "--seed", variant.seed, "--threads", variant.threads, "--connections", variant.connections,
            "--duration-ms", int(variant.seconds * 1000), "--interval-ms", HEARTBEAT_INTERVAL_MS,
            "--signals", "--forks", "--close-races", *variant.sender_args]
    try:
        done = subprocess.run([str(a) for a in args], env=sender_env, capture_output=True, text=True,
                              timeout=variant.seconds + 60)
        sender_out, sender_err, sender_rc = done.stdout, done.stderr, done.returncode
    except subprocess.TimeoutExpired as expired:
        sender_out, sender_err, sender_rc = expired.stdout or "", "timed out", -1
        sender_out = sender_out.decode() if isinstance(sender_out, bytes) else sender_out
    out.seconds = time.monotonic() - started
    sent = next((json.loads(line) for line in sender_out.splitlines() if line.startswith("{")), {})
    got = receiver.finish()
    out.sender, out.receiver = sent, got
    out.check(sender_rc == 0 and sent.get("error_count") == 0,
              f"the sender ran without an error (exit {sender_rc}; {sent.get('errors', sender_err[-500:])})")
    kinds = ", ".join(f"{got.get(k)} {what}" for k, what in (
        ("heartbeats_inside_corked", "heartbeats inside TCP_CORK messages"),
        ("heartbeats_inside_more", "inside MSG_MORE messages"),
        ("heartbeats_inside_other", "inside other frames"),
        ("stray_heartbeats", "stray heartbeats (plain connections, or before the first frame)"),
        ("failed_streams", "streams broken otherwise")) if got.get(k))
    out.check(got.get("error_count") == 0,
              f"the receiver found every stream intact ({got.get('error_count')} errors" +
              (f": {kinds}" if kinds else "") + f"; first: {got.get('errors', [])[:3]})")
    if not sent or not got:
        return out
    child_frames, child_bytes = sent["child_frames"], sent["child_bytes"]
    if got["failed_streams"] == 0:
        out.check(got["frames"] == sent["frames"] + child_frames,
                  f"every frame arrived: {got['frames']} received, {sent['frames']} + {child_frames} (children) sent")
        out.check(got["app_bytes"] == sent["bytes"] + child_bytes,
                  f"every byte arrived: {got['app_bytes']} received, {sent['bytes']} + {child_bytes} (children) sent")
    else:
        out.note(f"frame and byte totals not comparable: the check of {got['failed_streams']} streams stopped at an "
                 f"error")
    out.check(sent["signals"] > 1000 and sent["exec_children"] > 0 and sent["children"] and
              sent["racing_writes"] > 0 and sent["fd_reuses"] > 0 and sent["cork_pauses"] > 0 and
              sent["more_pauses"] > 0 and sent["partial_writes"] > 0 and sent["eagain"] > 0,
              f"the awkward cases happened: {sent['signals']} signals, {sent['eintr']} EINTR, "
              f"{sent['partial_writes']} partial writes, {sent['eagain']} EAGAIN, {sent['cork_pauses']} corked and "
              f"{sent['more_pauses']} MSG_MORE messages paused inside, {sent['exec_children']} fork+exec, "
              f"{len(sent['children'])} children writing to an inherited connection, {sent['close_races']} close "
              f"races ({sent['racing_writes']} during a write), {sent['fd_reuses']} fd numbers reused at once")

    # What the shim recorded, per process.
    broken = []
    records_by_pid = {}
    for path in sorted(glob.glob(os.path.join(work, "*.jsonl"))):
        records, bad = read_records(path)
        broken += [f"{os.path.basename(path)}: {line}" for line in bad]
        for record in records:
            records_by_pid.setdefault(record.get("pid"), []).append(record)
    summaries = {pid: r for pid, rs in records_by_pid.items() for r in rs if r.get("event") == "summary"}
    out.summaries = summaries
    out.check(not broken, f"every log line is one JSON object ({len(broken)} are not: {broken[:3]})")
    if not variant.sender_shim:
        out.check(got["heartbeats"] == 0, f"no heartbeat without the shim ({got['heartbeats']})")
        return out

    out.check(got["heartbeats"] > 0 and got["connections_with_heartbeats"] > 0,
              f"keep-warm fired: {got['heartbeats']} heartbeats on {got['connections_with_heartbeats']} connections")
    summary = summaries.get(sent["pid"])
    out.check(summary is not None, "the sender's log has its summary record")
    summary = summary or {}
    exact = summary.get("bytes") == sent["bytes"] and summary.get("writes") == sent["writes"]
    out.check(summary.get("connections") == sent["connections"],
              f"summary connections {summary.get('connections')} = {sent['connections']} opened")
    # A write racing close() on another thread counts in its rule's totals (the close moves the
    # slot's generation on before taking its snapshot). Only a write whose accounting falls in the
    # few nanoseconds between its own generation check and its counters can still be missed:
    # allow one such write.
    out.check(sent["writes"] - min(1, sent["racing_writes"]) <= summary.get("writes", -1) <= sent["writes"],
              f"summary writes {summary.get('writes')} = {sent['writes']} made"
              + ("" if exact else " (less at most one write racing a close)"))
    out.check(sent["bytes"] - sent["racing_bytes"] <= summary.get("bytes", -1) <= sent["bytes"] and
              (summary.get("writes") != sent["writes"] or summary.get("bytes") == sent["bytes"]),
              f"summary bytes {summary.get('bytes')} = {sent['bytes']} written"
              + ("" if exact else " (less the bytes of the one write racing a close)"))
    # A burst of closes may outrun the worker: a conn_close record may then be dropped, but
    # counted, and its connection still counts in the totals above.
    closes = sum(1 for r in records_by_pid.get(sent["pid"], []) if r.get("event") == "conn_close")
    out.check(summary.get("dropped_records") == sent["connections"] - closes,
              f"every conn_close record is written ({closes}) or counted in dropped_records "
              f"({summary.get('dropped_records')}) for {sent['connections']} connections")
    # Only the sender keeps connections warm: its children and the programs they exec never do.
    out.check(summary.get("heartbeats") == got["heartbeats"],
              f"the summary counts the heartbeats the receiver saw ({summary.get('heartbeats')} logged, "
              f"{got['heartbeats']} received)")
    missed = sent["bytes"] - summary.get("bytes", 0)  # allowed only for writes racing a close
    logged_bytes = summary.get("bytes", 0) + child_bytes + summary.get("heartbeats", 0)
    out.check(0 <= missed <= sent["racing_bytes"] and got["bytes"] == logged_bytes + missed,
              f"bytes received {got['bytes']} = bytes logged {summary.get('bytes')} + children's {child_bytes} "
              f"+ heartbeat bytes {summary.get('heartbeats')}"
              + (f" + {missed} bytes of writes racing a close that the summary missed" if missed else ""))
    if missed or summary.get("writes") != sent["writes"]:
        out.note(f"{sent['writes'] - summary.get('writes', 0)} of the {sent['racing_writes']} writes racing close() "
                 f"on another thread ({missed} bytes) are missing from the summary: such a write is counted on "
                 f"the connection that holds the fd number when it returns, or nowhere")
    prometheus = prometheus_totals(os.path.join(work, f"sender-{sent['pid']}.prom"))
    out.check(prometheus.get("tcptune_write_bytes_total") == summary.get("bytes") and
              prometheus.get("tcptune_heartbeats_total") == summary.get("heartbeats") and
              prometheus.get("tcptune_connections_total") == summary.get("connections"),
              f"the Prometheus textfile agrees with the summary (bytes {prometheus.get('tcptune_write_bytes_total')}, "
              f"heartbeats {prometheus.get('tcptune_heartbeats_total')}, connections "
              f"{prometheus.get('tcptune_connections_total')})")
    # A forked child summarizes what it did itself, never the connections it inherited.
    wrong = []
    for child in sent["children"]:
        s = summaries.get(child["pid"])
        if s is None or (s.get("connections"), s.get("writes"), s.get("bytes")) != (
                child["connections"], child["writes"], child["bytes"]):
            wrong.append(f"pid {child['pid']}: " + (
                "no summary" if s is None else
                f"connections {s.get('connections')}, writes {s.get('writes')}, bytes {s.get('bytes')} where it "
                f"opened {child['connections']}, wrote {child['writes']} calls, {child['bytes']} bytes"))
    out.check(not wrong, f"each of {len(sent['children'])} forked children summarizes only its own connection"
              + (f" ({len(wrong)} do not; {wrong[:2]})" if wrong else ""))
    receiver_pid = receiver.process.pid
    known = {sent["pid"], receiver_pid} | {c["pid"] for c in sent["children"]}
    # An exec'd program adopts the connected sockets it inherited (and summarizes them); it
    # must write nothing on them, nor keep them warm while the parent writes.
    strangers = [f"pid {pid}: {s.get('writes')} writes, {s.get('heartbeats')} heartbeats" for pid, s in
                 summaries.items() if pid not in known and (s.get("writes") or s.get("heartbeats"))]
    out.check(not strangers, f"no exec'd program writes to or heartbeats on what it inherited ({strangers[:5]})")
    warm_elsewhere = sorted({r["pid"] for pid, rs in records_by_pid.items() if pid not in (sent["pid"], receiver_pid)
                             for r in rs if r.get("event") == "conn_open" and any(
                                 o.get("name") == "keep_warm" and o.get("effective") == "on"
                                 for o in r.get("options", []))})
    out.check(not warm_elsewhere, f"no child keeps a connection warm ({warm_elsewhere[:5]})")
    if variant.receiver_shim:
        r = summaries.get(receiver_pid, {})
        out.check(r.get("connections") == got["connections"] and r.get("writes") == 0 and r.get("heartbeats") == 0,
                  f"the receiver's summary: {r.get('connections')} connections (accepted {got['connections']}), "
                  f"{r.get('writes')} writes, {r.get('heartbeats')} heartbeats")
    return out


@dataclass
class ScaleOutcome:
    checks: list = field(default_factory=list)
    runs: dict = field(default_factory=dict)  # "without" / "with" -> the scale program's JSON
    at_once: int = 0
    rounds: int = 1
    summary: dict = field(default_factory=dict)
    per_connection_bytes: float = 0.0

    def check(self, ok, message):
        self.checks.append((bool(ok), f"scale: {message}"))

    @property
    def failed(self):
        return [message for ok, message in self.checks if ok is False]


def connections_possible(wanted):
    """At most what RLIMIT_NOFILE lets one process hold, less room for its other descriptors
    (the hard limit can be raised only with CAP_SYS_RESOURCE, which this process may lack)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, hard, wanted + 100),) * 2)
        hard = max(hard, wanted + 100)
    except (ValueError, OSError):
        pass
    return min(wanted, hard - 100)


def run_scale(stress, shim, work_dir, connections, payload=100, rounds=1):
    """N connections at once without and with the shim (the stress policy, keep-warm rule
    included), `rounds` times: memory per connection, and a summary exact to the connection
    after N x rounds closes, each round's N in one loop."""
    out = ScaleOutcome()
    work = os.path.join(work_dir, "scale")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    at_once = connections_possible(connections)
    out.at_once, out.rounds = at_once, rounds
    connections = at_once * rounds
    for arm in ("without", "with"):
        receiver = Receiver(stress, 1, clean_env(), signals=False, max_connections=at_once)
        receiver.start()
        policy = os.path.join(work, "policy.toml")
        with open(policy, "w") as f:
            f.write(POLICY.format(nodelay="force", plain_port=receiver.plain_port, interval=HEARTBEAT_INTERVAL_MS,
                                  prometheus=os.path.join(work, "scale-{pid}.prom")))
        log = os.path.join(work, "scale-{pid}.jsonl")
        env = shim_env(shim, policy, log) if arm == "with" else clean_env()
        done = subprocess.run([stress, "scale", "--port", str(receiver.warm_port), "--port2",
                               str(receiver.plain_port), "--connections",
                               str(at_once), "--rounds", str(rounds), "--payload", str(payload)],
                              env=env, capture_output=True, text=True, timeout=300)
        got = receiver.finish(timeout=120)
        run = next((json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")), {})
        out.runs[arm] = run
        out.check(done.returncode == 0 and run.get("connections") == connections,
                  f"{arm} the shim: {run.get('at_once')} connections open at once, {rounds} time(s), no crash "
                  f"(exit {done.returncode}{', ' + done.stderr.strip()[-300:] if done.returncode else ''})")
        out.check(got.get("error_count") == 0 and got.get("frames") == connections,
                  f"{arm} the shim: the receiver got {got.get('frames')} whole frames of {connections} "
                  f"({got.get('error_count')} errors {got.get('errors', [])[:3]})")
        if arm == "with" and run:
            records, _ = read_records(log.replace("{pid}", str(run["pid"]))) if os.path.exists(
                log.replace("{pid}", str(run["pid"]))) else ([], [])
            summary = next((r for r in records if r.get("event") == "summary"), {})
            out.summary = summary
            closes = sum(1 for r in records if r.get("event") == "conn_close")
            expected = (run["connections"], run["writes"], run["bytes"])
            logged = (summary.get("connections"), summary.get("writes"), summary.get("bytes"))
            out.check(logged == expected,
                      f"records exact after {connections} closes ({rounds} x {at_once} in one loop): summary "
                      f"connections, writes, bytes {logged} = {expected}")
            out.check(summary.get("dropped_records") == run["connections"] - closes,
                      f"every conn_close record is written ({closes}) or counted in dropped_records "
                      f"({summary.get('dropped_records')}) for {run['connections']} connections")
    if "with" in out.runs and "without" in out.runs and out.runs["with"] and out.runs["without"]:
        grown = {arm: run["rss_open"] - run["rss_before"] for arm, run in out.runs.items()}
        out.per_connection_bytes = (grown["with"] - grown["without"]) / at_once
    return out
