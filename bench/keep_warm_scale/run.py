#!/usr/bin/env python3
"""Keep-warm at scale: the shim's worker CPU, heartbeats and memory with N idle kept-warm
connections on loopback.

    bench/keep_warm_scale/run.py [--build build/release] [--counts 100,1000,10000] [--idle 10]
                                 [--rounds 3] [--cpus CLIENT,SINK]
                                 [--strace-at 1000] [--perf-at N] [--no-log] [--nice -10]
                                 [--quiet-wait 300] [--baseline-counts 100,1000] [--baseline-tick-ms 0]
                                 [--baseline-phases warmup|even]
                                 [--out bench/results]
    bench/keep_warm_scale/run.py --quick --check     # the ctest smoke run: 50 connections, 3 s idle

For each N, four arms, each a fresh client (tcptune_keep_warm_scale client, the app) and sink:
  none       the client without the shim;
  shim       under the shim with a client rule (congestion "reno", a jsonl log unless --no-log),
             no keep_warm;
  keep_warm  the same rule with keep_warm = { heartbeat_hex = "0a" } (interval "auto");
  baseline   the client without the shim (tcptune_keep_warm_scale baseline), whose own thread
             sends the heartbeats: the floor under the worker's cost per heartbeat (below).
The client opens N connections to the sink, then writes a 64 KiB warm-up on each (one blocking
send, 1448-byte segments, so the congestion window grows past the initial 10 segments that the
shim leaves alone: to about 40; 5,000 warm-ups a second), waits until all is acknowledged and
then writes nothing. In the keep_warm arm the run then waits a settle time and measures an idle
window (--idle seconds) once a second: the heartbeats the sink received (it checks every byte
of every stream: exactly the warm-up, then whole heartbeats only; and it times the gaps between
arrivals on each connection) and the CPU time of the shim's worker thread (the thread named
"tcptune", /proc/<pid>/task/<tid>/schedstat: nanoseconds on a CPU, its system calls and the
kernel's loopback delivery done in its context included). The client reports how many
windows are kept at the window's start and end: above 10 segments and last sent within the RTO.
A send after more than an RTO of silence restarts the window (halved per RTO, down to 10), so a
connection the worker reached too late is lost: the shim sends it nothing more (TCP_INFO still
shows its old window until the app's next send restarts it). Memory: the client's resident set
(smaps_rollup Rss and Pss) after the idle window minus before it opened any connection, with
the shim and keep_warm minus without the shim (and minus the shim without keep_warm), over N;
and over the connections added from one N to the next, which leaves the fixed costs out.
At --strace-at N (0: never) the worker's system calls per heartbeat are counted after the
window for --strace-seconds, by the kernel's tracepoints (perf stat) and then by `strace -c`
(which slows the worker enough for heartbeats to come late at 1,000 connections: the JSON says
how many windows were kept after it); at --perf-at N, `perf record` samples
the worker for where its time goes.
The baseline: on loopback a send() also does the receiver's share (the kernel delivers the
byte to the sink's socket and wakes the sink in the sender's context), so the worker's CPU per
heartbeat is compared with the system calls a heartbeat cannot avoid, measured in the same run
and the same way (the thread's schedstat over the heartbeats the sink received). After the
keep_warm arm, the same N connections, warm-up and sink, no shim; one thread walks the
connections in turn at the rate per connection the worker achieved in the keep_warm window,
waking as often as the worker did (--baseline-tick-ms 0; within 1 to 20 ms) and sending the
heartbeats due. Each connection's heartbeats keep the place in the period where its warm-up
ended, as the worker's do (its first is due an interval after the connection's last data): at
100 connections the warm-ups take 20 ms, so the heartbeats come in a burst every period, during
which the sink stays awake, and a send costs less than when it has to wake the sink
(--baseline-phases even spreads them evenly). Two variants alternate over the --idle window,
in slices of about a second (whole periods):
  send             only send(fd, "\\n", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
  getsockopt+send  getsockopt(TCP_INFO), and the send if the connection is established with
                   nothing unacknowledged or unsent: the least a correct heartbeat must do.
The table's ratio is the worker's µs per heartbeat over the bare send's; the sink checks these
streams too. --baseline-counts limits the N it runs at.
Rounds (--rounds, default 3): the keep_warm arm and its baseline run for every N in turn, then
again, so that a machine whose speed drifts moves both arms of a ratio alike; the table gives
the median over the rounds of each figure per second and per heartbeat and of the ratio, and
prints each round's ratio with the load average (/proc/loadavg) around its arms. The arms
without keep_warm (memory only) and the strace and perf looks run in the first round. On this
kind of VM a loopback send costs 20% more or less from one arm to the next (where the scheduler
puts the sender and the sink, and time the hypervisor takes, which a guest without steal
accounting counts as the thread's): --cpus pins the client and the sink to one CPU each in
every arm.
On a machine shared with other work, --quiet-wait waits for it to be idle before each keep_warm
and baseline arm and --nice runs the client and the sink ahead of it; the JSON records the CPU
the rest of the machine used during each window.

Heartbeats flow only where the kernel restarts a window after idle: the policy sets reno (the
default here may be bbr, which does not restart), and net.ipv4.tcp_slow_start_after_idle must
be 1. As root the run unshares a fresh network namespace (loopback only, the sysctl set to 1,
gone when the run ends); otherwise it runs in the current one if the sysctl is 1 and the
congestion control is allowed, and exits 77 if not.

Prints a table and writes everything to <out>/keep-warm-scale-<UTC time>.json. --check exits 1
unless every stream arrived whole (warm-up then only heartbeat bytes, nothing lost or
corrupted), every connection of the keep_warm and baseline arms received heartbeats (in the
baseline exactly those its thread sent), the arms without either received none, every client
exited normally and the JSON has every field.
"""
import argparse
import ctypes
import datetime
import json
import os
import platform
import select
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WARMUP_BYTES = 64 * 1024  # opens reno's window to about 40 segments of 1448 bytes
MSS = 1448
# Warm-ups per second: 10,000 connections go idle over 2 s, not all at once with the client and
# the sink taking both CPUs meanwhile (--warmup-rate 0 shows that transient).
WARMUP_RATE = 5000
LISTENERS = 4          # the sink's ports: connect()'s search for a free local port stays short
SETTLE_S = 1.0         # after the warm-up is acknowledged, before the window
PLAIN_IDLE_S = 1.0     # the arms without keep_warm: only their memory and stream matter
MAX_IDLE_S = 60        # keep_warm's default max_idle: the whole run of an arm stays below it
ARMS = ("none", "shim", "keep_warm")
TABLE_FIELDS = ("connections", "heartbeats_per_s", "heartbeats_per_connection_per_s", "worker_cpu_percent",
                "worker_us_per_heartbeat", "shim_bytes_per_connection")
BASELINE_FIELDS = ("bare_send_us_per_heartbeat", "getsockopt_send_us_per_heartbeat",
                   "worker_us_per_heartbeat_over_bare_send")
# The baseline's two variants, alternated in slices of about a second in one client (run_baseline).
VARIANTS = ("send", "getsockopt+send")
# The baseline thread's wake-up period when it matches the worker's: within these bounds (ms).
TICK_MS_BOUNDS = (1.0, 20.0)


class Helper:
    """One tcptune_keep_warm_scale process: a command per stdin line, one JSON line back."""

    def __init__(self, argv, env, name, nice=0, cpu=None):
        self.name = name
        self.proc = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, bufsize=0,
                                     preexec_fn=(lambda: place(nice, cpu)) if nice or cpu is not None else None)
        self.pending = b""

    @property
    def pid(self):
        return self.proc.pid

    def read(self, timeout):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"{self.name}: no answer within {timeout:g} s")
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
                if not chunk:
                    err = self.proc.stderr.read().decode(errors="replace").strip()
                    raise RuntimeError(f"{self.name} exited ({self.proc.wait()}): {err[-500:]}")
                self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return json.loads(line)

    def ask(self, command, timeout=30):
        self.proc.stdin.write(command.encode() + b"\n")
        self.proc.stdin.flush()
        return self.read(timeout)

    def finish(self, timeout=30):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def place(nice, cpu):
    """In the child before exec: its niceness (renice), and the one CPU it and its threads run on."""
    if nice:
        renice(nice)
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})


def renice(nice):
    """In the child before exec: a session of its own and its niceness, for the process and, where
    the kernel groups processes by session (sched_autogroup), for its group, since niceness alone
    does not count against other sessions there."""
    os.setsid()
    os.setpriority(os.PRIO_PROCESS, 0, nice)
    try:
        Path("/proc/self/autogroup").write_text(f"{nice}\n")
    except OSError:
        pass


def read_text(path, default=""):
    try:
        return Path(path).read_text().strip()
    except OSError:
        return default


def clean_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith("TCPTUNE_") and k != "LD_PRELOAD"}
    env["LC_ALL"] = "C"
    return env


def enter_fresh_netns():
    """Unshares a network namespace for this process and its children: loopback up, the
    sysctl that makes a connection restart its window after idle set to 1. It disappears with
    the last process in it."""
    libc = ctypes.CDLL(None, use_errno=True)
    clone_newnet = 0x40000000
    if libc.unshare(clone_newnet) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNET)")
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    Path("/proc/sys/net/ipv4/tcp_slow_start_after_idle").write_text("1\n")


def choose_namespace(congestion):
    """Where to run, or None (with the reason) when heartbeats could not flow here."""
    if os.geteuid() == 0:
        try:
            enter_fresh_netns()
            return "fresh network namespace (unshare)", None
        except (OSError, subprocess.CalledProcessError) as error:
            return None, f"cannot set up a network namespace: {error}"
    if read_text("/proc/sys/net/ipv4/tcp_slow_start_after_idle") != "1":
        return None, "net.ipv4.tcp_slow_start_after_idle is 0 here and only root can run in a namespace of its own"
    allowed = read_text("/proc/sys/net/ipv4/tcp_allowed_congestion_control").split()
    if congestion not in allowed:
        return None, f"congestion control {congestion} is not in tcp_allowed_congestion_control ({' '.join(allowed)})"
    return "current network namespace", None


def policy_text(congestion, heartbeat_hex, keep_warm):
    lines = ["[[rule]]", 'name = "warm"', 'match = { role = "client" }', f'congestion = "{congestion}"']
    if keep_warm:
        lines.append(f'keep_warm = {{ heartbeat_hex = "{heartbeat_hex}" }}')
    return "\n".join(lines) + "\n"


def worker_tid(pid):
    """The shim's worker: the thread it names "tcptune"."""
    for task in sorted(Path(f"/proc/{pid}/task").iterdir()):
        if read_text(task / "comm") == "tcptune":
            return int(task.name)
    return None


def thread_cpu(pid, tid):
    """(ns on a CPU and ns waiting on a run queue from schedstat, utime+stime in clock ticks,
    voluntary context switches)."""
    schedstat = read_text(f"/proc/{pid}/task/{tid}/schedstat", "0 0 0").split()
    stat = read_text(f"/proc/{pid}/task/{tid}/stat")
    fields = stat[stat.rfind(")") + 2:].split() if stat else []
    ticks = int(fields[11]) + int(fields[12]) if len(fields) > 12 else 0
    switches = 0
    for line in read_text(f"/proc/{pid}/task/{tid}/status").splitlines():
        if line.startswith("voluntary_ctxt_switches:"):
            switches = int(line.split()[1])
    return int(schedstat[0]), int(schedstat[1]), ticks, switches


def process_cpu_ns(pid):
    """utime+stime of a whole process, in ns (clock-tick resolution)."""
    stat = read_text(f"/proc/{pid}/stat")
    fields = stat[stat.rfind(")") + 2:].split() if stat else []
    if len(fields) < 13:
        return 0
    return (int(fields[11]) + int(fields[12])) * 1_000_000_000 // os.sysconf("SC_CLK_TCK")


def system_idle_ns(field="idle"):
    """Idle + iowait time of all CPUs (or the time stolen by the hypervisor), in ns, from /proc/stat."""
    for line in read_text("/proc/stat").splitlines():
        if line.startswith("cpu "):
            values = [int(v) for v in line.split()[1:]]
            ticks = values[7] if field == "steal" else values[3] + values[4]
            return ticks * 1_000_000_000 // os.sysconf("SC_CLK_TCK")
    return 0


def load_average():
    """The one-minute load average (the run queue over the last minute, /proc/loadavg)."""
    try:
        return float(read_text("/proc/loadavg", "0").split()[0])
    except ValueError:
        return 0.0


def wait_for_quiet(max_wait_s, busy_cpus):
    """Waits (at most max_wait_s) until the other processes on this machine leave it nearly idle
    for a second: fewer than `busy_cpus` CPUs busy. Returns (seconds waited, busy CPUs last seen)."""
    start = time.monotonic()
    busy = None
    while True:
        idle, t = system_idle_ns(), time.monotonic()
        time.sleep(1.0)
        busy = os.cpu_count() - (system_idle_ns() - idle) / ((time.monotonic() - t) * 1e9)
        if busy < busy_cpus or time.monotonic() - start >= max_wait_s:
            return time.monotonic() - start, busy


def parse_strace_summary(path):
    """strace -c's table: {syscall: {"calls", "errors", "seconds"}}."""
    calls = {}
    for line in read_text(path).splitlines():
        parts = line.split()
        if len(parts) < 5 or not parts[0][0].isdigit() or parts[-1] == "total":
            continue
        try:
            seconds, count = float(parts[1]), int(parts[3])
        except ValueError:
            continue
        errors = int(parts[4]) if len(parts) == 6 else 0
        calls[parts[-1]] = {"calls": count, "errors": errors, "seconds": seconds}
    return calls


def gap_summary(gaps, bucket_ms):
    """The gaps between arrivals on a connection (after its warm-up) as the sink saw them:
    count, quantiles (lower edges of 5 ms buckets) and how many were at least 200 ms (the RTO
    floor: a send after that long restarts the window; the RTO here is a few ms above it)."""
    total = sum(gaps.values())
    out = {"count": total, "bucket_ms": bucket_ms, "histogram": sorted([b * bucket_ms, c] for b, c in gaps.items())}
    if not total:
        return out
    ordered = sorted(gaps.items())
    for name, q in (("p50_ms", 0.5), ("p90_ms", 0.9), ("p99_ms", 0.99), ("p999_ms", 0.999)):
        seen = 0
        for bucket, count in ordered:
            seen += count
            if seen >= q * total:
                out[name] = bucket * bucket_ms
                break
    out["max_ms_at_least"] = ordered[-1][0] * bucket_ms
    out["at_least_200ms"] = sum(c for b, c in ordered if b * bucket_ms >= 200)
    return out


def run_strace(pid, tid, sink, seconds, out_path):
    """strace -c attached to the worker thread for `seconds`, and the heartbeats meanwhile."""
    before = sink.ask("snap")
    tracer = subprocess.Popen(["strace", "-c", "-o", str(out_path), "-p", str(tid)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(seconds)
    tracer.send_signal(signal.SIGINT)
    try:
        tracer.wait(timeout=30)
    except subprocess.TimeoutExpired:
        tracer.kill()
        tracer.wait()
    after = sink.ask("snap")
    heartbeats = after["heartbeats"] - before["heartbeats"]
    calls = parse_strace_summary(out_path)
    return {
        "seconds": seconds,
        "heartbeats": heartbeats,
        "syscalls": calls,
        "per_heartbeat": {name: round(c["calls"] / heartbeats, 3) for name, c in calls.items()} if heartbeats else {},
        "total_per_heartbeat": round(sum(c["calls"] for c in calls.values()) / heartbeats, 3) if heartbeats else None,
        "note": "strace slows the worker; counts per heartbeat hold, its CPU figures do not",
    }


SYSCALL_TRACEPOINTS = ("sendto", "sendmsg", "getsockopt", "ioctl", "newfstat", "newfstatat", "futex", "poll",
                       "clock_nanosleep")


def count_syscalls(tid, sink, seconds):
    """The worker's system calls for `seconds`, counted by the kernel's tracepoints (perf stat:
    a few hundred ns each, the worker keeps its pace, unlike under strace)."""
    if subprocess.run(["which", "perf"], capture_output=True).returncode != 0:
        return {"skipped": "perf is not installed"}
    events = ["raw_syscalls:sys_enter"] + [f"syscalls:sys_enter_{name}" for name in SYSCALL_TRACEPOINTS]
    before = sink.ask("snap")
    counted = subprocess.run(["perf", "stat", "-x", ",", "-e", ",".join(events), "-t", str(tid), "--", "sleep",
                              str(seconds)], capture_output=True, text=True, timeout=seconds + 60)
    after = sink.ask("snap")
    heartbeats = after["heartbeats"] - before["heartbeats"]
    calls = {}
    for line in counted.stderr.splitlines():
        fields = line.split(",")
        if len(fields) > 2 and fields[0].isdigit():
            name = fields[2].split(":")[-1].replace("sys_enter_", "")
            calls["all" if name == "sys_enter" else name] = int(fields[0])
    if "all" not in calls:
        return {"skipped": f"perf stat counted nothing: {counted.stderr.strip()[-300:]}"}
    calls["other"] = calls["all"] - sum(v for k, v in calls.items() if k != "all")
    # perf counts from the moment it has attached, a little after the first snapshot: the
    # heartbeats it saw are its send() or sendmsg() calls (one per heartbeat of a few bytes).
    sent = calls.get("sendto", 0) + calls.get("sendmsg", 0)
    return {"seconds": seconds, "heartbeats_at_the_sink": heartbeats, "heartbeats": sent, "syscalls": calls,
            "per_heartbeat": {k: round(v / sent, 3) for k, v in calls.items() if v} if sent else {}}


def run_perf(tid, seconds, data_path):
    """perf record (cpu-clock, call graphs) on the worker thread for `seconds`: where its time
    goes, as the share of samples per symbol, the kernel's included."""
    if subprocess.run(["which", "perf"], capture_output=True).returncode != 0:
        return {"skipped": "perf is not installed"}
    record = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-g", "-t", str(tid), "-o", str(data_path),
                             "--", "sleep", str(seconds)], capture_output=True, text=True, timeout=seconds + 60)
    if record.returncode != 0:
        return {"skipped": f"perf record failed: {record.stderr.strip()[-300:]}"}
    out = {"seconds": seconds, "event": "cpu-clock", "data": str(data_path)}
    for key, sort in (("self_by_symbol", "sym"), ("self_by_dso", "dso")):
        report = subprocess.run(["perf", "report", "-i", str(data_path), "--stdio", "--no-children", "-g", "none",
                                 "--sort", sort, "--percent-limit", "0.5"], capture_output=True, text=True, timeout=120)
        rows = []
        for line in report.stdout.splitlines():
            parts = line.split(None, 1)
            if len(parts) == 2 and parts[0].endswith("%") and not line.startswith("#"):
                rows.append([float(parts[0].rstrip("%")), parts[1].strip()])
        out[key] = rows[:40]
    report = subprocess.run(["perf", "report", "-i", str(data_path), "--stdio", "--children", "-g", "none",
                             "--sort", "sym", "--percent-limit", "2"], capture_output=True, text=True, timeout=120)
    rows = []
    for line in report.stdout.splitlines():
        parts = line.split(None, 2)
        if len(parts) == 3 and parts[0].endswith("%") and parts[1].endswith("%") and not line.startswith("#"):
            rows.append([float(parts[0].rstrip("%")), float(parts[1].rstrip("%")), parts[2].strip()])
    out["with_children_by_symbol"] = rows[:60]
    # The shares that say where a heartbeat's time goes (samples with the symbol on the stack),
    # by the kernel's entry point of each system call: libc's wrappers are not always resolved
    # (glibc's fstat and syscall() share addresses in some builds). The system call's entry and
    # exit, before and after these, are in none of them.
    named = {"send() or sendmsg()": ("__sys_sendto", "__sys_sendmsg"),
             "send(): loopback delivery to the receiver (softirq)": ("net_rx_action",),
             "getsockopt() (TCP_INFO)": ("__sys_getsockopt",), "ioctl() (SIOCOUTQ)": ("sock_ioctl",),
             "fstat()": ("vfs_fstat",), "poll()": ("do_sys_poll",), "futex() (sleeping, waking)": ("do_futex",)}
    report = subprocess.run(["perf", "report", "-i", str(data_path), "--stdio", "--children", "-g", "none",
                             "--sort", "sym", "--percent-limit", "0"], capture_output=True, text=True, timeout=120)
    shares = {label: 0.0 for label in named}
    for line in report.stdout.splitlines():
        parts = line.split(None, 3)
        if len(parts) == 4 and parts[0].endswith("%") and not line.startswith("#"):
            for label, symbols in named.items():
                if parts[3].strip() in symbols:
                    shares[label] = round(shares[label] + float(parts[0].rstrip("%")), 2)
    dsos = dict((name, share) for share, name in out.get("self_by_dso", []))
    # The shim's code is in its core (libtcptune-core.so); the first stage only forwards.
    shares["the shim's own code (self)"] = round(sum(share for name, share in dsos.items() if "libtcptune" in name), 2)
    out["shares_percent"] = shares
    return out


def read_log(path):
    records = []
    if os.path.exists(path):
        for line in Path(path).read_text().splitlines():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return records


def run_arm(arm, count, args, paths, work, want_strace, want_perf):
    """One client and one sink: the client's memory, and for keep_warm the measured window."""
    heartbeat_hex = args.heartbeat_hex
    sink = Helper([paths["helper"], "sink", "--connections", str(count), "--warmup", str(args.warmup),
                   "--heartbeat-hex", heartbeat_hex, "--listeners", str(LISTENERS)], clean_env(), "sink", args.nice,
                  args.sink_cpu)
    client = None
    started = time.monotonic()
    try:
        ports = sink.read(10)["ports"]
        env = clean_env()
        log_path = work / f"{arm}-{count}.jsonl"
        if arm != "none":
            policy = work / f"{arm}.toml"
            policy.write_text(policy_text(args.congestion, heartbeat_hex, arm == "keep_warm"))
            if log_path.exists():
                log_path.unlink()
            env.update(LD_PRELOAD=paths["shim"], TCPTUNE_POLICY=str(policy))
            if args.log:
                env.update(TCPTUNE_LOG=str(log_path), TCPTUNE_LOG_FORMAT="jsonl")
        client = Helper([paths["helper"], "client", "--ports", ",".join(map(str, ports)), "--connections",
                         str(count), "--warmup", str(args.warmup), "--mss", str(MSS), "--warmup-rate", str(args.warmup_rate)], env, f"client ({arm})", args.nice,
                        args.client_cpu)
        ready = client.read(180)
        result = {"arm": arm, "connections": count, "client_pid": client.pid, "ready": ready}
        tid = worker_tid(client.pid) if arm != "none" else None
        result["worker_tid"] = tid
        idle = args.idle if arm == "keep_warm" else PLAIN_IDLE_S
        time.sleep(SETTLE_S if arm == "keep_warm" else 0)
        result["window_start"] = client.ask("info")
        samples = []

        def sample():
            snap = sink.ask("snap")
            cpu = thread_cpu(client.pid, tid) if tid else (0, 0, 0, 0)
            samples.append({"t": time.monotonic(), "heartbeats": snap["heartbeats"], "worker_ns": cpu[0],
                            "gaps": {b: c for b, c in snap["gaps"]}, "gap_bucket_ms": snap["gap_bucket_ms"],
                            "silent": snap["silent_longer_than_late_ms"],
                            "worker_wait_ns": cpu[1], "worker_ticks": cpu[2], "worker_switches": cpu[3],
                            "client_cpu_ns": process_cpu_ns(client.pid), "sink_cpu_ns": process_cpu_ns(sink.pid),
                            "system_idle_ns": system_idle_ns(), "steal_ns": system_idle_ns("steal"),
                            "with_heartbeat": snap["with_heartbeat"]})

        sample()
        end = samples[0]["t"] + idle
        while True:
            left = end - time.monotonic()
            if left <= 0:
                break
            time.sleep(min(1.0, left))
            sample()
        first, last = samples[0], samples[-1]
        window = last["t"] - first["t"]
        heartbeats = last["heartbeats"] - first["heartbeats"]
        worker_ns = last["worker_ns"] - first["worker_ns"]
        sink_bucket_ms = first["gap_bucket_ms"]
        gaps = {b: c - first["gaps"].get(b, 0) for b, c in last["gaps"].items() if c - first["gaps"].get(b, 0)}
        result["window"] = {
            "seconds": window,
            "heartbeat_gaps": gap_summary(gaps, sink_bucket_ms),
            "heartbeat_gaps_before": gap_summary(first["gaps"], sink_bucket_ms),
            "connections_silent_over_200ms": [s["silent"] for s in samples],
            "heartbeats": heartbeats,
            "worker_cpu_ns": worker_ns,
            "worker_cpu_ticks": last["worker_ticks"] - first["worker_ticks"],
            "worker_runqueue_wait_ns": last["worker_wait_ns"] - first["worker_wait_ns"],
            "worker_wakeups": last["worker_switches"] - first["worker_switches"],
            "client_cpu_ns": last["client_cpu_ns"] - first["client_cpu_ns"],
            "sink_cpu_ns": last["sink_cpu_ns"] - first["sink_cpu_ns"],
            "system_busy_cpus": (os.cpu_count() * window * 1e9 - (last["system_idle_ns"] - first["system_idle_ns"]))
            / (window * 1e9) if window > 0 else None,
            "stolen_cpus": (last["steal_ns"] - first["steal_ns"]) / (window * 1e9) if window > 0 else None,
            "per_second": [{"t": round(s["t"] - first["t"], 3), "heartbeats": s["heartbeats"] - first["heartbeats"],
                            "worker_cpu_ns": s["worker_ns"] - first["worker_ns"],
                            "worker_runqueue_wait_ns": s["worker_wait_ns"] - first["worker_wait_ns"]} for s in samples],
        }
        result["after_idle"] = client.ask("info")
        # Tracepoints and perf first: strace slows the worker enough for heartbeats to come late.
        if want_strace and tid:
            result["syscalls_traced"] = count_syscalls(tid, sink, args.strace_seconds)
        if want_perf and tid:
            result["perf"] = run_perf(tid, args.perf_seconds, work / f"perf-{count}.data")
        if want_strace and tid:
            if subprocess.run(["which", "strace"], capture_output=True).returncode == 0:
                result["strace"] = run_strace(client.pid, tid, sink, args.strace_seconds, work / f"strace-{count}.txt")
                after = client.ask("info")["tcp_info"]
                result["strace"]["windows_above_10_after"] = after["cwnd_above_10"]
                result["strace"]["windows_kept_after"] = after["cwnd_above_10_sent_within_rto"]
            else:
                result["strace"] = {"skipped": "strace is not installed"}
        result["arm_seconds_before_close"] = time.monotonic() - started
        closed = client.ask("close", timeout=60)
        result["client_exit"] = client.finish(60)
        result["client_closed"] = closed.get("event") == "closed"
        final = sink.ask("final", timeout=60)
        sink.finish(10)
        per_connection = final.pop("heartbeats_per_connection")
        final["connections_without_heartbeat"] = sum(1 for h in per_connection if h == 0)
        final["heartbeats_per_connection"] = {"min": min(per_connection, default=0),
                                              "max": max(per_connection, default=0)}
        result["sink"] = final
        result["window"]["connections_with_heartbeat"] = last["with_heartbeat"]
        if arm != "none" and args.log:
            records = read_log(str(log_path))
            summary = next((r for r in records if r.get("event") == "summary"), {})
            opens = [r for r in records if r.get("event") == "conn_open"]
            kw = [o for r in opens for o in r.get("options", []) if o.get("name") == "keep_warm"]
            result["shim_log"] = {
                "path": str(log_path),
                "summary_heartbeats": summary.get("heartbeats"),
                "summary_connections": summary.get("connections"),
                "dropped_records": summary.get("dropped_records"),
                "conn_close_records": sum(1 for r in records if r.get("event") == "conn_close"),
                "conn_open_records": len(opens),
                "keep_warm_on": sum(1 for o in kw if o.get("effective") == "on"),
                "keep_warm_notes": sorted({o.get("note", "") for o in kw if o.get("effective") != "on"}),
                "congestion_effective": sorted({o.get("effective") for r in opens for o in r.get("options", [])
                                                if o.get("name") == "congestion"}),
                "warnings": [r.get("message") for r in records if r.get("event") == "warning"][:5],
            }
        return result
    finally:
        for helper in (client, sink):
            if helper:
                helper.kill()


def baseline_tick_ms(args, keep_warm):
    """The baseline thread's wake-up period: --baseline-tick-ms, or (0) as often as the shim's
    worker woke in the keep_warm window, so both send their heartbeats in batches of the same
    size (a loopback send finds the sink awake more often within a batch)."""
    if args.baseline_tick_ms > 0:
        return args.baseline_tick_ms
    window = keep_warm["window"]
    wakeups_per_s = window["worker_wakeups"] / window["seconds"] if window["seconds"] > 0 else 0
    if wakeups_per_s <= 0:
        return TICK_MS_BOUNDS[1]
    return min(max(1000.0 / wakeups_per_s, TICK_MS_BOUNDS[0]), TICK_MS_BOUNDS[1])


def run_baseline(count, args, paths, rate, tick_ms):
    """The floor under a heartbeat, measured like the worker: the same client without the shim
    (same connections, warm-up and sink) runs a thread of its own that walks the connections in
    turn at `rate` heartbeats per connection per second (the worker's, from the keep_warm arm)
    and does only the system calls of a heartbeat. Its two variants (VARIANTS: a bare send(), and
    getsockopt(TCP_INFO) then send()) alternate in slices of about a second over the --idle
    window, so both see the same machine; per variant, the thread's schedstat CPU over the heartbeats the
    sink received."""
    sink = Helper([paths["helper"], "sink", "--connections", str(count), "--warmup", str(args.warmup),
                   "--heartbeat-hex", args.heartbeat_hex, "--listeners", str(LISTENERS)], clean_env(), "sink", args.nice,
                  args.sink_cpu)
    client = None
    started = time.monotonic()
    try:
        ports = sink.read(10)["ports"]
        client = Helper([paths["helper"], "baseline", "--ports", ",".join(map(str, ports)), "--connections",
                         str(count), "--warmup", str(args.warmup), "--mss", str(MSS), "--warmup-rate",
                         str(args.warmup_rate), "--rate", f"{rate:.6f}", "--tick-us", str(round(tick_ms * 1000)),
                         "--phases", args.baseline_phases, "--heartbeat-hex", args.heartbeat_hex], clean_env(), "client (baseline)",
                        args.nice, args.client_cpu)
        ready = client.read(180)
        tid = ready["baseline"]["tid"]
        result = {"arm": "baseline", "connections": count, "client_pid": client.pid, "ready": ready, "worker_tid": tid,
                  "rate_per_connection_per_s": rate, "tick_ms": tick_ms, "phases": args.baseline_phases}
        time.sleep(SETTLE_S)
        result["window_start"] = client.ask("info")

        def sample():
            snap = sink.ask("snap")
            cpu = thread_cpu(client.pid, tid)
            return {"t": time.monotonic(), "heartbeats": snap["heartbeats"], "cpu_ns": cpu[0], "wait_ns": cpu[1],
                    "switches": cpu[3], "system_idle_ns": system_idle_ns(), "steal_ns": system_idle_ns("steal"),
                    "client_cpu_ns": process_cpu_ns(client.pid), "sink_cpu_ns": process_cpu_ns(sink.pid),
                    "with_heartbeat": snap["with_heartbeat"]}

        # Slices of whole periods (about a second each): at 100 connections the heartbeats come in
        # one burst per period, and a slice holds as many bursts as the next.
        period_s = 1.0 / rate
        slice_s = max(1, round(1.0 / period_s)) * period_s if period_s < 1.0 else period_s
        slices = max(2, round(args.idle / slice_s))
        totals = {v: {"seconds": 0.0, "heartbeats": 0, "cpu_ns": 0, "runqueue_wait_ns": 0, "wakeups": 0,
                      "other_busy_ns": 0.0, "stolen_ns": 0, "slices": 0} for v in VARIANTS}
        per_slice = []
        last = None
        for i in range(slices):
            variant = VARIANTS[i % len(VARIANTS)]
            client.ask(f"variant {variant}")  # answered once the thread runs this variant
            first = sample()
            time.sleep(slice_s)
            last = sample()
            seconds = last["t"] - first["t"]
            busy_ns = os.cpu_count() * seconds * 1e9 - (last["system_idle_ns"] - first["system_idle_ns"])
            part = {"variant": variant, "seconds": seconds, "heartbeats": last["heartbeats"] - first["heartbeats"],
                    "cpu_ns": last["cpu_ns"] - first["cpu_ns"], "runqueue_wait_ns": last["wait_ns"] - first["wait_ns"],
                    "wakeups": last["switches"] - first["switches"],
                    "other_busy_ns": busy_ns - (last["client_cpu_ns"] - first["client_cpu_ns"])
                    - (last["sink_cpu_ns"] - first["sink_cpu_ns"]),
                    "stolen_ns": last["steal_ns"] - first["steal_ns"]}
            per_slice.append(part)
            total = totals[variant]
            total["slices"] += 1
            for key in ("seconds", "heartbeats", "cpu_ns", "runqueue_wait_ns", "wakeups", "other_busy_ns", "stolen_ns"):
                total[key] += part[key]
        for total in totals.values():
            seconds = total["seconds"]
            total["heartbeats_per_s"] = total["heartbeats"] / seconds
            total["heartbeats_per_connection_per_s"] = total["heartbeats"] / seconds / count
            total["cpu_percent"] = 100.0 * total["cpu_ns"] / (seconds * 1e9)
            total["us_per_heartbeat"] = total["cpu_ns"] / 1000 / total["heartbeats"] if total["heartbeats"] else None
            total["wakeups_per_s"] = total["wakeups"] / seconds
            total["runqueue_wait_percent"] = 100.0 * total["runqueue_wait_ns"] / (seconds * 1e9)
            total["other_busy_cpus"] = total.pop("other_busy_ns") / (seconds * 1e9)
            total["stolen_cpus"] = total.pop("stolen_ns") / (seconds * 1e9)
        result["window"] = {"slice_s": slice_s, "variants": totals, "slices": per_slice,
                            "connections_with_heartbeat": last["with_heartbeat"]}
        result["after_idle"] = client.ask("info")
        result["arm_seconds_before_close"] = time.monotonic() - started
        closed = client.ask("close", timeout=60)
        result["thread_counts"] = closed.get("counts")  # after the thread stopped, before the close
        result["client_exit"] = client.finish(60)
        result["client_closed"] = closed.get("event") == "closed"
        final = sink.ask("final", timeout=60)
        sink.finish(10)
        per_connection = final.pop("heartbeats_per_connection")
        final["connections_without_heartbeat"] = sum(1 for h in per_connection if h == 0)
        final["heartbeats_per_connection"] = {"min": min(per_connection, default=0),
                                              "max": max(per_connection, default=0)}
        result["sink"] = final
        return result
    finally:
        for helper in (client, sink):
            if helper:
                helper.kill()


def memory_growth(result):
    """Resident growth in bytes from before the first connection to the end of the window."""
    ready, after = result["ready"], result["after_idle"]
    return {"rss": (after["rss_kb"] - ready["rss_before_kb"]) * 1024,
            "pss": (after["pss_kb"] - ready["pss_before_kb"]) * 1024}


def summarize(count, arms):
    warm = arms["keep_warm"]
    window = warm["window"]
    seconds = window["seconds"]
    growth = {arm: memory_growth(result) for arm, result in arms.items()}
    row = {
        "connections": count,
        "heartbeats_per_s": window["heartbeats"] / seconds,
        "heartbeats_per_connection_per_s": window["heartbeats"] / seconds / count,
        "worker_cpu_percent": 100.0 * window["worker_cpu_ns"] / (seconds * 1e9),
        "worker_us_per_heartbeat": window["worker_cpu_ns"] / 1000 / window["heartbeats"] if window["heartbeats"] else None,
        "shim_bytes_per_connection": (growth["keep_warm"]["rss"] - growth["none"]["rss"]) / count,
        "shim_pss_bytes_per_connection": (growth["keep_warm"]["pss"] - growth["none"]["pss"]) / count,
        "keep_warm_bytes_per_connection": (growth["keep_warm"]["rss"] - growth["shim"]["rss"]) / count,
        "rto_ms_median": warm["ready"]["tcp_info"]["rto_us"]["median"] / 1000,
        "cwnd_median_warmed": warm["ready"]["tcp_info"]["cwnd"]["median"],
        "cwnd_median_window_start": warm["window_start"]["tcp_info"]["cwnd"]["median"],
        "cwnd_median_window_end": warm["after_idle"]["tcp_info"]["cwnd"]["median"],
        # A heartbeat the worker sent late keeps the window the restart left (halved once per
        # RTO of silence beyond the first): the smallest window shows it.
        "cwnd_min_window_end": warm["after_idle"]["tcp_info"]["cwnd"]["min"],
        "windows_above_10_warmed": warm["ready"]["tcp_info"]["cwnd_above_10"],
        "windows_above_10_window_start": warm["window_start"]["tcp_info"]["cwnd_above_10"],
        "windows_above_10_window_end": warm["after_idle"]["tcp_info"]["cwnd_above_10"],
        # Above 10 segments and last sent within the RTO: a window left silent for longer still
        # shows its old size in TCP_INFO until the next send restarts it.
        "windows_kept_window_start": warm["window_start"]["tcp_info"]["cwnd_above_10_sent_within_rto"],
        "windows_kept_window_end": warm["after_idle"]["tcp_info"]["cwnd_above_10_sent_within_rto"],
        "worker_wakeups_per_s": window["worker_wakeups"] / seconds,
        "worker_runqueue_wait_percent": 100.0 * window["worker_runqueue_wait_ns"] / (seconds * 1e9),
        "sink_cpu_percent": 100.0 * window["sink_cpu_ns"] / (seconds * 1e9),
        "system_busy_cpus": window["system_busy_cpus"],
        "stolen_cpus": window["stolen_cpus"],
        "other_busy_cpus": window["system_busy_cpus"] - (window["client_cpu_ns"] + window["sink_cpu_ns"]) / (seconds * 1e9)
        if window["system_busy_cpus"] is not None else None,
        "resident_growth_bytes": growth,
    }
    row["heartbeats_per_rto"] = row["heartbeats_per_connection_per_s"] * row["rto_ms_median"] / 1000
    base = arms.get("baseline")
    if base:
        variants = base["window"]["variants"]
        bare, checked = variants["send"], variants["getsockopt+send"]
        worker = row["worker_us_per_heartbeat"]
        row.update({
            "bare_send_us_per_heartbeat": bare["us_per_heartbeat"],
            "getsockopt_send_us_per_heartbeat": checked["us_per_heartbeat"],
            "worker_us_per_heartbeat_over_bare_send": worker / bare["us_per_heartbeat"]
            if worker and bare["us_per_heartbeat"] else None,
            "worker_us_per_heartbeat_over_getsockopt_send": worker / checked["us_per_heartbeat"]
            if worker and checked["us_per_heartbeat"] else None,
            "baseline_rate_per_connection_per_s": base["rate_per_connection_per_s"],
            "baseline_heartbeats_per_connection_per_s": {v: variants[v]["heartbeats_per_connection_per_s"] for v in VARIANTS},
            "baseline_tick_ms": base["tick_ms"],
            "baseline_phases": base["phases"],
            "baseline_wakeups_per_s": {v: variants[v]["wakeups_per_s"] for v in VARIANTS},
            "baseline_runqueue_wait_percent": {v: variants[v]["runqueue_wait_percent"] for v in VARIANTS},
            "baseline_other_busy_cpus": {v: variants[v]["other_busy_cpus"] for v in VARIANTS},
            "baseline_skipped_by_getsockopt": (base["thread_counts"] or {}).get("getsockopt+send", {}).get("skipped"),
        })
    return row


# The figures of one round (a keep_warm arm and the baseline after it) that the table gives as
# the median over the rounds.
ROUND_MEDIAN_FIELDS = ("heartbeats_per_s", "heartbeats_per_connection_per_s", "worker_cpu_percent",
                       "worker_us_per_heartbeat", "bare_send_us_per_heartbeat", "getsockopt_send_us_per_heartbeat",
                       "worker_us_per_heartbeat_over_bare_send", "worker_us_per_heartbeat_over_getsockopt_send",
                       "other_busy_cpus", "load_average", "windows_kept_window_end", "heartbeats_per_rto")


def round_figures(count, arms):
    """One round's figures: its keep_warm arm, and its own baseline for the ratios."""
    row = summarize(count, arms)
    loads = [arm.get(key) for arm in (arms.get("keep_warm"), arms.get("baseline")) if arm
             for key in ("load_before", "load_after") if arm.get(key) is not None]
    figures = {key: row.get(key) for key in ROUND_MEDIAN_FIELDS if key != "load_average"}
    figures["load_average"] = sum(loads) / len(loads) if loads else None
    return figures


def checks_for(count, arms):
    """The unambiguous facts of a run: (ok, message)."""
    out = []
    for arm, result in arms.items():
        sink = result["sink"]
        out.append((sink["accepted"] == count and sink["whole_streams"] == count and sink["error_bytes"] == 0
                    and sink["eof"] == count,
                    f"N={count} {arm}: {sink['whole_streams']} of {count} streams whole (the {result['ready']['warmup_bytes']}"
                    f"-byte warm-up, then only whole heartbeats; {sink['error_bytes']} stray bytes, "
                    f"{sink['eof']} closed){' ' + json.dumps(sink['broken'][:3]) if sink['broken'] else ''}"))
        out.append((result.get("client_exit") == 0 and result.get("client_closed"),
                    f"N={count} {arm}: the client exited normally ({result.get('client_exit')})"))
        if arm == "baseline":
            counts = result["thread_counts"] or {v: {"sent": -1, "failed": -1} for v in VARIANTS}
            sent = sum(counts[v]["sent"] for v in VARIANTS)
            failed = sum(counts[v]["failed"] for v in VARIANTS)
            out.append((sink["connections_without_heartbeat"] == 0 and failed == 0 and sink["heartbeats"] == sent,
                        f"N={count} baseline: heartbeats on {count - sink['connections_without_heartbeat']} of {count} "
                        f"connections, {sink['heartbeats']} at the sink, {sent} sent by the thread, {failed} sends failed"))
        elif arm == "keep_warm":
            with_hb = result["window"]["connections_with_heartbeat"]
            beats = result["window"]["heartbeats"]
            opened = result["ready"]["tcp_info"]["cwnd_above_10"]
            out.append((with_hb == count and beats > 0,
                        f"N={count} keep_warm: heartbeats on {with_hb} of {count} connections, {beats} in the window "
                        f"({opened} windows above 10 segments after the warm-up)"))
        else:
            out.append((sink["heartbeats"] == 0, f"N={count} {arm}: no heartbeat without keep_warm ({sink['heartbeats']})"))
    return out


def missing_fields(results):
    required = {"started", "seconds", "command", "machine", "setup", "rows", "arms", "checks"}
    missing = sorted(required - set(results))
    for row in results.get("rows", []):
        missing += [f"rows[{row.get('connections')}].{f}" for f in TABLE_FIELDS if row.get(f) is None]
        if row.get("baseline_measured"):
            missing += [f"rows[{row.get('connections')}].{f}" for f in BASELINE_FIELDS if row.get(f) is None]
    for key in ("kernel", "nproc", "rto_ms", "commit"):
        if key not in results.get("machine", {}):
            missing.append(f"machine.{key}")
    return missing


def source_commit(build):
    source = ""
    for line in read_text(Path(build) / "CMakeCache.txt").splitlines():
        if line.startswith("CMAKE_HOME_DIRECTORY:"):
            source = line.split("=", 1)[1]
    if not source:
        return {"source": None, "commit": None}
    git = ["git", "-C", source]
    commit = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(git + ["status", "--porcelain", "--", "shim", "config", "bench/keep_warm_scale"],
                           capture_output=True, text=True)
    return {"source": source, "commit": commit.stdout.strip() or None,
            "uncommitted_shim_config_or_bench_changes": bool(dirty.stdout.strip()) if commit.returncode == 0 else None}


def fmt(value, spec):
    return "-" if value is None else format(value, spec)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=str(ROOT / "build" / "release"), help="build tree (default build/release)")
    parser.add_argument("--counts", default="100,1000,10000", help="comma-separated connection counts")
    parser.add_argument("--idle", type=float, default=10.0, help="measured idle window in seconds")
    parser.add_argument("--warmup", type=int, default=WARMUP_BYTES, help="bytes written on each connection first")
    parser.add_argument("--warmup-rate", type=int, default=WARMUP_RATE,
                        help="warm-ups per second (0: as fast as they go)")
    parser.add_argument("--heartbeat-hex", default="0a", help="the heartbeat payload (default a newline)")
    parser.add_argument("--congestion", default="reno", help="the rule's congestion control (not bbr)")
    parser.add_argument("--strace-at", type=int, default=1000, help="N at which strace -c watches the worker (0: never)")
    parser.add_argument("--strace-seconds", type=float, default=3.0)
    parser.add_argument("--perf-at", type=int, default=0, help="N at which perf record samples the worker (0: never)")
    parser.add_argument("--perf-seconds", type=float, default=3.0)
    parser.add_argument("--quiet-wait", type=float, default=0,
                        help="before each keep_warm arm, wait up to this many seconds for the machine to be idle")
    parser.add_argument("--quiet-cpus", type=float, default=0.3,
                        help="idle enough: fewer CPUs than this busy over a second (with --quiet-wait)")
    parser.add_argument("--nice", type=int, default=0,
                        help="niceness of the client and the sink, each in a session of its own (negative, as root: "
                             "ahead of other work on the machine)")
    parser.add_argument("--baseline-counts", default=None,
                        help="the N at which the baseline arm runs after the keep_warm arm (default: every N; "
                             "'' for none)")
    parser.add_argument("--baseline-tick-ms", type=float, default=0,
                        help="the baseline thread's wake-up period (0: as often as the shim's worker woke, "
                             f"{TICK_MS_BOUNDS[0]:g} to {TICK_MS_BOUNDS[1]:g} ms)")
    parser.add_argument("--baseline-phases", choices=("warmup", "even"), default="warmup",
                        help="where each connection's baseline heartbeats fall in the period: where its warm-up "
                             "ended, as the worker's (default), or evenly spread")
    parser.add_argument("--no-log", dest="log", action="store_false",
                        help="run the shim without a log (no write timing, ack sampling or records; no cross-check)")
    parser.add_argument("--cpus", default="",
                        help="CLIENT,SINK: the CPU the client (with the shim's worker, or the baseline's thread) and "
                             "the one the sink run on, in every arm (default: where the scheduler puts them, which "
                             "changes what a loopback send costs from one arm to the next)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds of the keep_warm and baseline arms, every N in turn in each (the table gives "
                             "medians)")
    parser.add_argument("--quick", action="store_true", help="50 connections, 3 s idle, no strace, one round")
    parser.add_argument("--check", action="store_true", help="exit 1 unless the unambiguous checks hold")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results"), help="directory of the JSON")
    args = parser.parse_args()
    if args.quick:
        args.counts, args.idle, args.strace_at, args.perf_at, args.rounds = "50", 3.0, 0, 0, 1
    counts = [int(c) for c in args.counts.split(",") if c.strip()]
    args.client_cpu, args.sink_cpu = None, None
    if args.cpus:
        try:
            args.client_cpu, args.sink_cpu = (int(c) for c in args.cpus.split(","))
        except ValueError:
            sys.exit(f"--cpus {args.cpus}: two CPU numbers, CLIENT,SINK")
    baseline_counts = counts if args.baseline_counts is None else \
        [int(c) for c in args.baseline_counts.split(",") if c.strip()]
    if SETTLE_S + args.idle + 2 * args.strace_seconds + args.perf_seconds >= MAX_IDLE_S - 15:
        sys.exit(f"--idle {args.idle:g} is too long: the window must end well before keep_warm's max_idle "
                 f"({MAX_IDLE_S} s)")
    build = Path(args.build).resolve()
    paths = {"helper": str(build / "bin" / "tcptune_keep_warm_scale"), "shim": str(build / "lib" / "libtcptune.so")}
    for path in paths.values():
        if not os.path.exists(path):
            sys.exit(f"{path} is missing: cmake --build {build} --target tcptune tcptune_keep_warm_scale")
    where, reason = choose_namespace(args.congestion)
    if where is None:
        print(f"skipped: {reason}")
        return 77

    started = datetime.datetime.now(datetime.timezone.utc)
    clock = time.monotonic()
    stamp = started.strftime("%Y%m%dT%H%M%SZ")
    work = build / "bench-keep-warm-scale" / stamp
    work.mkdir(parents=True, exist_ok=True)
    uname = os.uname()
    results = {
        "started": started.isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:]),
        "machine": {
            "kernel": uname.release, "uname": " ".join(uname), "nproc": os.cpu_count(),
            "cpu": next((l.split(":", 1)[1].strip() for l in read_text("/proc/cpuinfo").splitlines()
                         if l.startswith("model name")), platform.processor()),
            **source_commit(build),
        },
        "setup": {
            "namespace": where, "loopback": True, "warmup_bytes": args.warmup, "mss": MSS,
            "heartbeat_hex": args.heartbeat_hex, "congestion": args.congestion, "interval": "auto",
            "warmup_rate": args.warmup_rate, "settle_s": SETTLE_S, "nice": args.nice, "cpus": args.cpus or None, "shim_log": args.log, "idle_s": args.idle, "idle_s_without_keep_warm": PLAIN_IDLE_S,
            "tcp_slow_start_after_idle": read_text("/proc/sys/net/ipv4/tcp_slow_start_after_idle"),
            "policy_keep_warm": policy_text(args.congestion, args.heartbeat_hex, True),
            "nofile_limit": list(__import__("resource").getrlimit(__import__("resource").RLIMIT_NOFILE)),
        },
        "rows": [], "arms": {}, "checks": [],
        "rounds": args.rounds, "load_average": {"start": load_average()},
    }
    failures = []
    # Rounds, interleaved: each round runs every N in turn, the keep_warm arm and then its
    # baseline, so that a machine whose speed drifts (other work on it) moves both arms of a
    # ratio alike; the table takes each figure's median over the rounds. The arms without
    # keep_warm (memory only) run in the first round.
    per_count = {count: [] for count in counts}
    for round_index in range(args.rounds):
        for count in counts:
            arms = {}
            first_round = round_index == 0
            for arm in ARMS if first_round else ("keep_warm",):
                print(f"-- round {round_index + 1}/{args.rounds} N={count} {arm} (load {load_average():.2f}) ...",
                      flush=True)
                measured = arm == "keep_warm"
                if measured and args.quiet_wait > 0:
                    waited, busy = wait_for_quiet(args.quiet_wait, args.quiet_cpus)
                    results.setdefault("quiet_wait", []).append({"round": round_index + 1, "connections": count,
                                                                 "arm": arm, "waited_s": round(waited, 1),
                                                                 "busy_cpus_before": round(busy, 2)})
                    print(f"   waited {waited:.0f} s for the machine to quieten: {busy:.2f} CPUs busy", flush=True)
                load_before = load_average()
                arms[arm] = run_arm(arm, count, args, paths, work,
                                    want_strace=first_round and measured and count == args.strace_at,
                                    want_perf=first_round and measured and count == args.perf_at)
                arms[arm].update(load_before=load_before, load_after=load_average())
            if count in baseline_counts:
                window = arms["keep_warm"]["window"]
                rate = window["heartbeats"] / window["seconds"] / count
                tick_ms = baseline_tick_ms(args, arms["keep_warm"])
                print(f"-- round {round_index + 1}/{args.rounds} N={count} baseline (no shim; {rate:.2f} heartbeats per "
                      f"connection per s, a wake-up every {tick_ms:.1f} ms; {' and '.join(VARIANTS)} alternating; "
                      f"load {load_average():.2f}) ...", flush=True)
                if args.quiet_wait > 0:
                    waited, busy = wait_for_quiet(args.quiet_wait, args.quiet_cpus)
                    results.setdefault("quiet_wait", []).append({"round": round_index + 1, "connections": count,
                                                                 "arm": "baseline", "waited_s": round(waited, 1),
                                                                 "busy_cpus_before": round(busy, 2)})
                    print(f"   waited {waited:.0f} s for the machine to quieten: {busy:.2f} CPUs busy", flush=True)
                load_before = load_average()
                arms["baseline"] = run_baseline(count, args, paths, rate, tick_ms) if rate > 0 else None
                if arms["baseline"] is not None:
                    arms["baseline"].update(load_before=load_before, load_after=load_average())
                if arms["baseline"] is None:
                    arms.pop("baseline")
                    failures.append(f"N={count} round {round_index + 1}: no baseline, the keep_warm arm sent no heartbeat")
            per_count[count].append(arms)
            for ok, message in checks_for(count, arms):
                message = f"round {round_index + 1} {message}" if args.rounds > 1 else message
                results["checks"].append({"ok": ok, "message": message})
                if not ok:
                    failures.append(message)
            log = arms["keep_warm"].get("shim_log", {})
            sink_total = arms["keep_warm"]["sink"]["heartbeats"]
            if log.get("summary_heartbeats") != sink_total:
                print(f"   note: the shim's summary counts {log.get('summary_heartbeats')} heartbeats, the sink "
                      f"received {sink_total}")
            if log.get("keep_warm_on") != count:
                print(f"   note: keep_warm on for {log.get('keep_warm_on')} of {count} connections "
                      f"{log.get('keep_warm_notes')}")

    for count in counts:
        rounds = per_count[count]
        first = rounds[0]
        results["arms"][str(count)] = first
        row = summarize(count, first)
        row["baseline_measured"] = "baseline" in first
        # Every round's own figures (its keep_warm arm over its baseline), then their medians in
        # the row: the memory arms of the first round stand in for the rounds without them.
        row["rounds"] = [round_figures(count, {**first, **arms}) for arms in rounds]
        for key in ROUND_MEDIAN_FIELDS:
            values = [figures[key] for figures in row["rounds"] if figures.get(key) is not None]
            if values:
                row[key] = statistics.median(values)
                row[f"{key}_range"] = [min(values), max(values)]
        log = first["keep_warm"].get("shim_log", {})
        row["shim_summary_heartbeats"] = log.get("summary_heartbeats")
        row["sink_heartbeats_total"] = first["keep_warm"]["sink"]["heartbeats"]
        results["rows"].append(row)
    if args.rounds > 1:
        results["later_rounds_arms"] = [{str(count): per_count[count][r] for count in counts}
                                        for r in range(1, args.rounds)]

    # Memory per connection without the fixed costs (the worker thread, its buffers): the growth
    # between one N and the next, over the connections added.
    previous = None
    for row in results["rows"]:
        shim_growth = row["resident_growth_bytes"]["keep_warm"]["rss"] - row["resident_growth_bytes"]["none"]["rss"]
        row["shim_bytes_per_added_connection"] = None
        if previous and row["connections"] > previous[0]:
            row["shim_bytes_per_added_connection"] = (shim_growth - previous[1]) / (row["connections"] - previous[0])
        previous = (row["connections"], shim_growth)
    rtos = sorted({row["rto_ms_median"] for row in results["rows"]})
    results["machine"]["rto_ms"] = rtos[0] if len(rtos) == 1 else rtos
    results["seconds"] = round(time.monotonic() - clock, 1)
    results["load_average"]["end"] = load_average()
    missing = missing_fields(results)
    if missing:
        failures.append(f"the JSON lacks {', '.join(missing)}")
    results["checks"].append({"ok": not missing, "message": f"every field present{': missing ' + ', '.join(missing) if missing else ''}"})

    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    out_path = out_dir / f"keep-warm-scale-{stamp}.json"
    out_path.write_text(json.dumps(results, indent=1) + "\n")

    print()
    print(f"keep_warm at scale, loopback, {args.congestion}, interval auto (RTO {results['machine']['rto_ms']} ms), "
          f"{args.idle:g} s idle window, {os.cpu_count()} CPUs, kernel {uname.release}; figures per second and per "
          f"heartbeat are medians over {args.rounds} round(s); load average {results['load_average']['start']:.2f} "
          f"at the start, {results['load_average']['end']:.2f} at the end")
    print(f"{'N':>6} {'heartbeats/s':>13} {'per conn/s':>10} {'worker CPU %':>12} {'worker us/hb':>12} "
          f"{'shim B/conn':>11} {'(added)':>8} {'windows kept start/end':>23} {'cwnd median':>11} {'cwnd min':>8} {'others busy':>11} "
          f"{'bare send us':>12} {'getsockopt+send us':>18} {'worker/bare send':>16}")
    for row in results["rows"]:
        print(f"{row['connections']:>6} {row['heartbeats_per_s']:>13,.0f} {row['heartbeats_per_connection_per_s']:>10.2f} "
              f"{row['worker_cpu_percent']:>12.1f} {fmt(row['worker_us_per_heartbeat'], '.2f'):>12} "
              f"{row['shim_bytes_per_connection']:>11,.0f} {fmt(row['shim_bytes_per_added_connection'], ',.0f'):>8} "
              f"{str(row['windows_kept_window_start']) + '/' + str(row['windows_kept_window_end']):>23} "
              f"{str(row['cwnd_median_window_start']) + '->' + str(row['cwnd_median_window_end']):>11} "
              f"{row['cwnd_min_window_end']:>8} "
              f"{fmt(row['other_busy_cpus'], '.2f'):>11} {fmt(row.get('bare_send_us_per_heartbeat'), '.2f'):>12} "
              f"{fmt(row.get('getsockopt_send_us_per_heartbeat'), '.2f'):>18} "
              f"{fmt(row.get('worker_us_per_heartbeat_over_bare_send'), '.2f'):>16}")
    for row in results["rows"]:
        if row.get("baseline_measured"):
            per_round = ", ".join(f"{fmt(r['worker_us_per_heartbeat_over_bare_send'], '.3f')} "
                                  f"({fmt(r['worker_us_per_heartbeat'], '.2f')}/{fmt(r['bare_send_us_per_heartbeat'], '.2f')} us, "
                                  f"load {fmt(r['load_average'], '.1f')})" for r in row["rounds"])
            print(f"worker / bare send at N={row['connections']}, each round: {per_round}; median "
                  f"{fmt(row['worker_us_per_heartbeat_over_bare_send'], '.3f')}")
    for count, arms in results["arms"].items():
        trace = arms["keep_warm"].get("strace")
        if trace and trace.get("per_heartbeat"):
            calls = ", ".join(f"{name} {value:g}" for name, value in
                              sorted(trace["per_heartbeat"].items(), key=lambda kv: -kv[1]))
            print(f"system calls per heartbeat at N={count} (strace -c, {trace['heartbeats']} heartbeats, "
                  f"{trace['windows_kept_after']} windows kept after it): {trace['total_per_heartbeat']:g} ({calls})")
        traced = arms["keep_warm"].get("syscalls_traced")
        if traced and traced.get("per_heartbeat"):
            calls = ", ".join(f"{name} {value:g}" for name, value in traced["per_heartbeat"].items() if name != "all")
            print(f"system calls per heartbeat at N={count} (perf stat tracepoints, {traced['heartbeats']} send() calls): "
                  f"{traced['per_heartbeat'].get('all', 0):g} ({calls})")
        profile = arms["keep_warm"].get("perf")
        if profile and profile.get("shares_percent"):
            shares = ", ".join(f"{name} {value:g}%" for name, value in profile["shares_percent"].items())
            print(f"where the worker's time goes at N={count} (perf, cpu-clock): {shares}")
    for row in results["rows"]:
        if row.get("baseline_measured"):
            rates = ", ".join(f"{v} {r:.2f}" for v, r in row["baseline_heartbeats_per_connection_per_s"].items())
            wakeups = ", ".join(f"{v} {w:.0f}" for v, w in row["baseline_wakeups_per_s"].items())
            print(f"baseline at N={row['connections']}: asked {row['baseline_rate_per_connection_per_s']:.2f} heartbeats "
                  f"per connection per s, got {rates}; wake-ups per s {wakeups} (worker "
                  f"{row['worker_wakeups_per_s']:.0f}); worker / getsockopt+send "
                  f"{fmt(row['worker_us_per_heartbeat_over_getsockopt_send'], '.2f')}")
    for message in failures:
        print(f"FAILED: {message}")
    print(f"{len(results['checks']) - len(failures)} of {len(results['checks'])} checks met; "
          f"{results['seconds']:g} s; {out_path}")
    return 1 if failures and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
