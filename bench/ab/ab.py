#!/usr/bin/env python3
"""A/B runner for the field stories of docs/field-stories.md.

For each scenario and link setting it runs three arms, interleaved, N runs each:
  off        the legacy app as it is, no shim;
  tuned      the same app under `tcptune run --policy P`, P a shipped preset (config/presets)
             or a policy a user would write (bench/ab/policies);
  reference  the best fix a privileged admin or the app's author could make
             (tcp_slow_start_after_idle=0 in the namespace, TCP_NODELAY in the app,
             no pinned receive buffer).
It prints each arm's median and range, the ratios tuned/off and tuned/reference, whether the
issue's target is met, and writes the raw results as JSON under bench/results/.

  bench/ab/ab.py [--scenario bursty,bursty-nagle,bursty-push,bursty-bbr,bursty-go,rpc-loopback,rpc-wan,bulk]
                 [--runs 3] [--quick]
                 [--build build/release] [--out bench/results] [--assert]

Scenarios over the emulated link need root and /dev/net/tun (bench/linkem); without them only
rpc-loopback runs, and the runner says why. bursty-go's sender is a Go program
(bench/scenarios/bursty_send.go), built here with `go build`; without go it is skipped.
--assert exits 1 unless tuned beats off by margins wide enough to be unambiguous (the ctest
short runs use it).
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRESETS = ROOT / "config" / "presets"
BENCH_POLICIES = ROOT / "bench" / "ab" / "policies"
NS_SENDER = "tcptune-a"
NS_RECEIVER = "tcptune-b"
SENDER_ADDRESS = "198.18.0.1"
RECEIVER_ADDRESS = "198.18.0.2"


class Scenario:
    """One story: how to run each arm, which number to compare, and the issue's target."""

    def __init__(self, name, link, metric, unit, lower_is_better, policy, target, assertion, push=False,
                 nagle_left_on=False, go_sender=False):
        self.name = name
        self.link = link            # linkem options, or None for loopback
        self.metric = metric        # dotted path into the result JSON
        self.unit = unit
        self.lower_is_better = lower_is_better
        self.policy = policy        # a shipped preset (config/presets) or a bench policy (bench/ab/policies)
        self.target = target        # (description, predicate(medians, link_rate_mbit, medians_by_metric))
        self.assertion = assertion  # (description, predicate(medians)) for --assert
        self.push = push            # bursty only: the sender listens and the receiver connects
        self.nagle_left_on = nagle_left_on  # neither app nor policy sets TCP_NODELAY: the shim must not either
        # bursty only: the sender is the Go program, which tcptune run supervises (LD_PRELOAD cannot
        # reach it); the receiver is the C++ one, untuned in every arm
        self.go_sender = go_sender

    @property
    def policy_path(self):
        shipped = PRESETS / self.policy
        return shipped if shipped.exists() else BENCH_POLICIES / self.policy

    @property
    def keeps_warm(self):
        return self.name.startswith("bursty") and self.name not in ("bursty-bbr", "bursty-go")

    @property
    def tuned_sides(self):
        return ("sender",) if self.go_sender else ("receiver", "sender")


def bursty_args(quick, gap):
    # Gaps of 3 s as in the field story: long enough for cwnd to decay to the initial window.
    return ["--gap", gap, "--count", "4" if quick else "10"]


BURSTY_LINK = {"rtt": "180ms", "rate": "0", "congestion": "cubic"}
P50 = "latency_ms.p50"


def within_sysctl_fix(m, rate, by_metric):
    """p99 within 5% + 10 ms of the sysctl fix, and p50 within 5%."""
    p50 = by_metric[P50]
    return m["tuned"] <= 1.05 * m["reference"] + 10 and p50["tuned"] <= 1.05 * p50["reference"]


WITHIN_SYSCTL_FIX = "tuned p50 within 5% and p99 within 5% + 10 ms of reference"
SCENARIOS = {
    "bursty": Scenario(
        "bursty", BURSTY_LINK, "latency_ms.p99", "ms", True, "bursty-wan.toml",
        ("tuned p99 within 5% of reference p99", lambda m, rate, by: m["tuned"] <= 1.05 * m["reference"]),
        ("off p99 > 2 x tuned p99", lambda m: m["off"] > 2 * m["tuned"])),
    # Neither the app nor the policy touches TCP_NODELAY: Nagle stays on.
    "bursty-nagle": Scenario(
        "bursty-nagle", BURSTY_LINK, "latency_ms.p99", "ms", True, "keep-warm-nagle.toml",
        (WITHIN_SYSCTL_FIX, within_sysctl_fix), ("off p99 > 2 x tuned p99", lambda m: m["off"] > 2 * m["tuned"]),
        nagle_left_on=True),
    # The server pushes to a subscriber: the accepted side sends and is kept warm.
    "bursty-push": Scenario(
        "bursty-push", BURSTY_LINK, "latency_ms.p99", "ms", True, "keep-warm-server-push.toml",
        (WITHIN_SYSCTL_FIX, within_sysctl_fix), ("off p99 > 2 x tuned p99", lambda m: m["off"] > 2 * m["tuned"]),
        push=True, nagle_left_on=True),
    "bursty-bbr": Scenario(
        "bursty-bbr", BURSTY_LINK, "latency_ms.p99", "ms", True, "bursty-wan-bbr.toml",
        ("tuned p99 below half of off p99 (BBR, no heartbeat)", lambda m, rate, by: 2 * m["tuned"] < m["off"]),
        ("off p99 > 2 x tuned p99", lambda m: m["off"] > 2 * m["tuned"])),
    # A Go sender, which tcptune run supervises from outside: BBR, the remedy without a payload.
    "bursty-go": Scenario(
        "bursty-go", BURSTY_LINK, "latency_ms.p99", "ms", True, "bursty-wan-bbr.toml",
        ("tuned p99 below half of off p99 (Go sender supervised, BBR)", lambda m, rate, by: 2 * m["tuned"] < m["off"]),
        ("off p99 > 2 x tuned p99", lambda m: m["off"] > 2 * m["tuned"]), go_sender=True),
    "rpc-loopback": Scenario(
        "rpc-loopback", None, "latency_ms.p50", "ms", True, "low-latency-rpc.toml",
        ("tuned p50 at least 100x better than off", lambda m, rate, by: m["off"] >= 100 * m["tuned"]),
        ("off p50 > 10 x tuned p50", lambda m: m["off"] > 10 * m["tuned"])),
    "rpc-wan": Scenario(
        "rpc-wan", {"rtt": "20ms", "rate": "0", "congestion": "cubic"}, "latency_ms.p50", "ms", True,
        "low-latency-rpc.toml",
        ("tuned p50 within 5% of reference p50", lambda m, rate, by: m["tuned"] <= 1.05 * m["reference"]),
        ("off p50 > 1.5 x tuned p50", lambda m: m["off"] > 1.5 * m["tuned"])),
    "bulk": Scenario(
        "bulk", {"rtt": "100ms", "rate": "100Mbit", "congestion": "cubic"}, "goodput_mbit", "Mbit/s", False,
        "wan-bulk.toml",
        ("tuned goodput at least 90% of the link rate", lambda m, rate, by: m["tuned"] >= 0.9 * rate),
        ("tuned goodput > 3 x off", lambda m: m["tuned"] > 3 * m["off"])),
}
ARMS = ("off", "tuned", "reference")


def dig(record, path):
    for key in path.split("."):
        record = record[key]
    return float(record)


def rate_mbit(text):
    for suffix, scale in (("Gbit", 1000.0), ("Mbit", 1.0), ("Kbit", 0.001)):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * scale
    return float(text) / 1e6 if float(text) else 0.0


def build_go_sender(build):
    """go build of bench/scenarios/bursty_send.go into BUILD/bench/scenarios/go/bursty_send:
    static (CGO_ENABLED=0), offline, with its cache under the build tree. Returns its path."""
    go_dir = Path(build) / "bench" / "scenarios" / "go"
    sender = go_dir / "bursty_send"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TCPTUNE_") and k != "LD_PRELOAD"}
    for variable, sub in (("GOCACHE", "cache"), ("GOPATH", "gopath"), ("HOME", "home")):
        (go_dir / sub).mkdir(parents=True, exist_ok=True)
        env[variable] = str(go_dir / sub)
    env.update(GOPROXY="off", GOFLAGS="", CGO_ENABLED="0")
    partial = go_dir / f"bursty_send.{os.getpid()}.tmp"
    source = ROOT / "bench" / "scenarios" / "bursty_send.go"
    done = subprocess.run([shutil.which("go"), "build", "-o", str(partial), str(source)], cwd=go_dir,
                          env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        raise RuntimeError(f"go build of {source} failed: {done.stderr.strip()}")
    os.replace(partial, sender)  # atomic: a concurrent build finds a whole binary
    return sender


class Runner:
    def __init__(self, options):
        self.build = Path(options.build).resolve()
        self.bin = self.build / "bin"
        self.tcptune = self.bin / "tcptune"
        self.linkem = self.bin / "tcptune-linkem"
        self.quick = options.quick
        self.bursty_gap = options.bursty_gap
        self.log_dir = Path(options.out).resolve() / "logs"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.port = 15000
        self.go_dir = self.build / "bench" / "scenarios" / "go"
        self.go_sender = self.go_dir / "bursty_send"

    # -- the Go sender ---------------------------------------------------------------------
    def build_go_sender(self):
        build_go_sender(self.build)

    # -- link ------------------------------------------------------------------------------
    def link_up(self, link):
        command = [str(self.linkem), "up", "--rtt", link["rtt"], "--rate", link["rate"],
                   "--congestion", link["congestion"], "--slow-start-after-idle", "1"]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed: {done.stderr.strip()}")
        return json.loads(done.stdout.strip().splitlines()[-1])

    def link_down(self):
        subprocess.run([str(self.linkem), "down"], capture_output=True, timeout=60)

    @staticmethod
    def set_slow_start_after_idle(value):
        for namespace in (NS_SENDER, NS_RECEIVER):
            subprocess.run(["ip", "netns", "exec", namespace, "sysctl", "-qw",
                            f"net.ipv4.tcp_slow_start_after_idle={value}"], check=True)

    # -- one run ---------------------------------------------------------------------------
    def wrap(self, command, arm, scenario, side, run):
        """The command as this arm runs it: under the shim for tuned, as it is otherwise."""
        if arm != "tuned" or side not in scenario.tuned_sides:
            return command
        log = self.log_dir / f"{scenario.name}-{side}-{run}.log"
        if scenario.go_sender:
            log.unlink(missing_ok=True)  # its conn_open is checked: none may come from an earlier run
        return [str(self.tcptune), "run", "--policy", str(scenario.policy_path), "--log", str(log), "--"] + command

    def in_namespace(self, namespace, command, scenario):
        return command if scenario.link is None else ["ip", "netns", "exec", namespace] + command

    def commands(self, scenario, arm, port):
        """(receiver, sender, which one prints the result) for this scenario and arm."""
        listener_address = SENDER_ADDRESS if scenario.push else RECEIVER_ADDRESS
        host = "127.0.0.1" if scenario.link is None else listener_address
        endpoint = f"{host}:{port}"
        nodelay = ["--nodelay"] if arm == "reference" else []
        if scenario.name.startswith("bursty"):
            receive, send = ("--connect", "--listen") if scenario.push else ("--listen", "--connect")
            sender = self.go_sender if scenario.go_sender else self.bin / "bursty"
            return ([str(self.bin / "bursty"), "receive", receive, endpoint],
                    [str(sender), "send", send, endpoint] + bursty_args(self.quick, self.bursty_gap), "receiver")
        if scenario.name.startswith("rpc"):
            requests = "30" if self.quick else "100"
            return ([str(self.bin / "rpc"), "serve", "--listen", endpoint] + nodelay,
                    [str(self.bin / "rpc"), "call", "--connect", endpoint, "--requests", requests] + nodelay, "sender")
        pin = ["--no-pin"] if arm == "reference" else []
        # Long enough that slow start (about 1 s at 100 ms RTT) weighs little in the average.
        duration = "5s" if self.quick else "20s"
        return ([str(self.bin / "bulk"), "receive", "--listen", endpoint] + pin,
                [str(self.bin / "bulk"), "send", "--connect", endpoint, "--duration", duration], "receiver")

    def run_once(self, scenario, arm, run):
        self.port += 1
        receiver, sender, reporter = self.commands(scenario, arm, self.port)
        receiver = self.in_namespace(NS_RECEIVER, self.wrap(receiver, arm, scenario, "receiver", run), scenario)
        sender = self.in_namespace(NS_SENDER, self.wrap(sender, arm, scenario, "sender", run), scenario)
        if scenario.name.startswith("bursty") and arm == "reference":
            self.set_slow_start_after_idle(0)
        # The side that listens starts first; the other retries refused connects.
        listening, connecting = (sender, receiver) if scenario.push else (receiver, sender)
        try:
            started = subprocess.Popen(listening, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            connected = subprocess.run(connecting, capture_output=True, text=True, timeout=300)
            started_out, started_err = started.communicate(timeout=300)
        finally:
            if scenario.name.startswith("bursty") and arm == "reference":
                self.set_slow_start_after_idle(1)
        outputs = {"listening": (started.returncode, started_out, started_err),
                   "connecting": (connected.returncode, connected.stdout, connected.stderr)}
        failed = {side: (code, err.strip()) for side, (code, _, err) in outputs.items() if code != 0}
        if failed:
            raise RuntimeError(f"{scenario.name}/{arm} run {run} failed: {failed}")
        receiver_side = "connecting" if scenario.push else "listening"
        sender_side = "listening" if scenario.push else "connecting"
        reporting = receiver_side if reporter == "receiver" else sender_side
        record = json.loads(outputs[reporting][1].strip().splitlines()[-1])
        if scenario.name.startswith("bursty"):
            record["sender"] = json.loads(outputs[sender_side][1].strip().splitlines()[-1])
        if scenario.go_sender:
            record["supervised"] = self.check_go_sender(scenario, arm, run, record["sender"], outputs[sender_side][2])
        return record

    def check_go_sender(self, scenario, arm, run, sender, stderr):
        """That the arm ran as meant: off and reference with the link's congestion control, tuned
        supervised (plain `tcptune run` chose the mode for the Go binary) with the policy's, in
        effect on the socket (the sender's TCP_CONGESTION) and logged (conn_open)."""
        where = f"{scenario.name}/{arm} run {run}"
        if arm != "tuned":
            if sender["congestion"] != scenario.link["congestion"]:
                raise RuntimeError(f"{where}: the Go sender used {sender['congestion']}, "
                                   f"not the link's {scenario.link['congestion']}")
            return None
        with open(scenario.policy_path, "rb") as f:
            wanted = tomllib.load(f)["defaults"]["congestion"]
        log = self.log_dir / f"{scenario.name}-sender-{run}.log"
        records = []
        for line in log.read_text().splitlines() if log.exists() else []:
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                pass
        opens = [r for r in records if r.get("event") == "conn_open" and r.get("role") == "client"]
        effective = [o.get("effective") for r in opens for o in r.get("options", []) if o.get("name") == "congestion"]
        problems = []
        if "supervised mode" not in stderr:
            problems.append(f"tcptune run did not choose supervised mode ({stderr.strip()!r})")
        # One conn_open per connect: a refused one (the receiver not yet listening) is retried.
        if not any(r.get("supervised") for r in opens) or set(effective) != {wanted}:
            problems.append(f"{log} has no supervised conn_open with congestion effective {wanted} "
                            f"(client conn_open records: {len(opens)}, congestion effective {effective})")
        if sender["congestion"] != wanted:
            problems.append(f"the Go sender's socket used {sender['congestion']}, not {wanted}")
        if problems:
            raise RuntimeError(f"{where}: " + "; ".join(problems))
        return {"mode": "supervised", "conn_open": len(opens), "congestion_effective": wanted, "log": log.name}

    def run_scenario(self, scenario, runs):
        link_info = None
        if scenario.go_sender:
            self.build_go_sender()
        if scenario.link is not None:
            link_info = self.link_up(scenario.link)
        try:
            results = {arm: [] for arm in ARMS}
            for run in range(runs):
                # Interleaved, so drift on the machine hits every arm alike.
                for arm in ARMS:
                    record = self.run_once(scenario, arm, run)
                    results[arm].append(record)
                    print(f"  {scenario.name:<13} run {run + 1}/{runs} {arm:<9} "
                          f"{dig(record, scenario.metric):10.3f} {scenario.unit}", file=sys.stderr, flush=True)
        finally:
            if scenario.link is not None:
                self.link_down()
        return link_info, results


def describe_link(scenario, link_info):
    if scenario.link is None:
        return "loopback"
    link = scenario.link
    rate = "unlimited" if rate_mbit(link["rate"]) == 0 else link["rate"]
    backend = link_info.get("backend", "?") if link_info else "?"
    return f"{link['rtt']} RTT, {rate}, {link['congestion']} ({backend})"


def heartbeat_rates(scenario, results):
    """Heartbeats the tuned arm's receiver counted, per second and per RTO of the sender's idle
    time, beside the floor (one per RTO: the kernel restarts after one RTO without payload)."""
    if not scenario.keeps_warm:
        return None
    runs = []
    for record in results["tuned"]:
        sender = record["sender"]
        per_s = record["heartbeats"] / sender["idle_s"] if sender["idle_s"] > 0 else 0.0
        runs.append({"heartbeats": record["heartbeats"], "idle_s": sender["idle_s"], "rto_ms": sender["rto_ms"],
                     "per_s": per_s, "per_rto": per_s * sender["rto_ms"] / 1000.0,
                     "floor_per_s": 1000.0 / sender["rto_ms"], "nodelay": sender["nodelay"],
                     "cwnd_before": sender.get("cwnd_before", [])})
    return {"per_s": statistics.median(r["per_s"] for r in runs),
            "per_rto": statistics.median(r["per_rto"] for r in runs),
            "max_per_rto": max(r["per_rto"] for r in runs),
            "floor_per_s": statistics.median(r["floor_per_s"] for r in runs),
            # RFC 2861 validation would shrink the window during heartbeat-only silence.
            "cwnd_before_min": min((c for r in runs for c in r["cwnd_before"]), default=None),
            "runs": runs}


def summarize(scenario, link_info, results):
    values = {arm: [dig(r, scenario.metric) for r in results[arm]] for arm in ARMS}
    medians = {arm: statistics.median(v) for arm, v in values.items()}
    by_metric = {scenario.metric: medians}
    if scenario.name.startswith("bursty"):
        by_metric[P50] = {arm: statistics.median(dig(r, P50) for r in results[arm]) for arm in ARMS}
    link_rate = rate_mbit(scenario.link["rate"]) if scenario.link else 0.0
    target_text, target = scenario.target
    assertion_text, assertion = scenario.assertion
    heartbeats = heartbeat_rates(scenario, results)
    target_met = bool(target(medians, link_rate, by_metric))
    assertion_met = bool(assertion(medians))
    if scenario.nagle_left_on:
        # The Nagle push sets TCP_NODELAY for a moment: the app must find it off at the end.
        assertion_text += "; the sender's TCP_NODELAY still off under the shim"
        assertion_met = assertion_met and not any(r["sender"]["nodelay"] for r in results["tuned"])
    if heartbeats is not None:
        target_text += "; at most 1.5 heartbeats per RTO of idle"
        target_met = target_met and heartbeats["max_per_rto"] <= 1.5
    return {
        "scenario": scenario.name,
        "link": describe_link(scenario, link_info),
        "linkem": link_info,
        "metric": scenario.metric,
        "unit": scenario.unit,
        "lower_is_better": scenario.lower_is_better,
        "policy": str(scenario.policy_path.relative_to(ROOT)),
        "values": values,
        "median": medians,
        "median_by_metric": by_metric,
        "heartbeats": heartbeats,
        "range": {arm: [min(v), max(v)] for arm, v in values.items()},
        "tuned_over_off": medians["tuned"] / medians["off"] if medians["off"] else None,
        "tuned_over_reference": medians["tuned"] / medians["reference"] if medians["reference"] else None,
        "target": target_text,
        "target_met": target_met,
        "assertion": assertion_text,
        "assertion_met": assertion_met,
        "runs": results,
    }


def print_table(summaries, out=sys.stdout):
    header = (f"| scenario | link | metric | off | tuned | reference | tuned/off | tuned/ref | "
              f"heartbeats/s (per RTO; floor/s), window before messages | target |")
    print(header, file=out)
    print("|" + "---|" * 10, file=out)
    for s in summaries:
        cells = []
        for arm in ARMS:
            low, high = s["range"][arm]
            cells.append(f"{s['median'][arm]:.3g} [{low:.3g}-{high:.3g}]")
        met = "met" if s["target_met"] else "NOT met"
        beats = s["heartbeats"]
        rates = "-" if beats is None else (f"{beats['per_s']:.2f} ({beats['per_rto']:.2f}; {beats['floor_per_s']:.2f}), "
                                           f"cwnd >= {beats['cwnd_before_min']}")
        print(f"| {s['scenario']} | {s['link']} | {s['metric']} ({s['unit']}) | {' | '.join(cells)} | "
              f"{s['tuned_over_off']:.3g} | {s['tuned_over_reference']:.3g} | {rates} | {s['target']}: {met} |",
              file=out)
        if P50 in s["median_by_metric"] and P50 != s["metric"]:
            p50 = s["median_by_metric"][P50]
            print(f"|  | | {P50} (ms) | {p50['off']:.3g} | {p50['tuned']:.3g} | {p50['reference']:.3g} | "
                  f"{p50['tuned'] / p50['off']:.3g} | {p50['tuned'] / p50['reference']:.3g} | | |", file=out)


def machine_info():
    """The machine, kernel and commit a bench result was measured on (bench/*/run.py use it too)."""
    def read(path):
        try:
            return Path(path).read_text().strip()
        except OSError:
            return None
    cpu = next((line.split(":", 1)[1].strip() for line in (read("/proc/cpuinfo") or "").splitlines()
                if line.startswith("model name")), None)
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout
    return {
        "hostname": platform.node(), "kernel": platform.release(), "machine": platform.machine(),
        "cpu": cpu, "cpus": os.cpu_count(),
        "congestion_default": read("/proc/sys/net/ipv4/tcp_congestion_control"),
        "congestion_allowed": read("/proc/sys/net/ipv4/tcp_allowed_congestion_control"),
        "rmem_max": read("/proc/sys/net/core/rmem_max"), "tcp_rmem": read("/proc/sys/net/ipv4/tcp_rmem"),
        "commit": commit or None, "uncommitted_changes": bool(dirty.strip()),
    }


def can_emulate_links(linkem):
    if os.geteuid() != 0:
        return "not root"
    if not os.path.exists("/dev/net/tun"):
        return "/dev/net/tun is missing"
    if shutil.which("ip") is None:
        return "iproute2's ip is missing"
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", default=",".join(SCENARIOS))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="shorter runs (4 messages, 30 requests, 5 s bulk)")
    parser.add_argument("--bursty-gap", default="3s", help="silence before each bursty message (default 3s)")
    parser.add_argument("--build", default=str(ROOT / "build" / "release"))
    parser.add_argument("--out", default=str(ROOT / "bench" / "results"))
    parser.add_argument("--assert", dest="check", action="store_true",
                        help="exit 1 unless tuned beats off by an unambiguous margin")
    parser.add_argument("--fallback-loopback", action="store_true",
                        help="when links cannot be emulated, run rpc-loopback instead of skipping")
    options = parser.parse_args()
    runner = Runner(options)

    wanted = [name.strip() for name in options.scenario.split(",") if name.strip()]
    unknown = [name for name in wanted if name not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenario {', '.join(unknown)}; choose from {', '.join(SCENARIOS)}")
    why_not = can_emulate_links(runner.linkem)
    if why_not:
        emulated = [name for name in wanted if SCENARIOS[name].link is not None]
        if emulated:
            print(f"ab: skipping {', '.join(emulated)}: the emulated link needs root and /dev/net/tun ({why_not})",
                  file=sys.stderr)
        wanted = [name for name in wanted if SCENARIOS[name].link is None]
        if not wanted and options.fallback_loopback:
            print("ab: running rpc-loopback instead", file=sys.stderr)
            wanted = ["rpc-loopback"]
        if not wanted:
            return 77
    if shutil.which("go") is None:
        needing_go = [name for name in wanted if SCENARIOS[name].go_sender]
        if needing_go:
            print(f"ab: skipping {', '.join(needing_go)}: the Go sender needs the go toolchain (golang-go)",
                  file=sys.stderr)
        wanted = [name for name in wanted if not SCENARIOS[name].go_sender]
        if not wanted:
            return 77

    if any(SCENARIOS[name].link is not None for name in wanted) and not runner.linkem.exists():
        print(f"ab: {runner.linkem} is not built (cmake --build --preset release --target tcptune-linkem)",
              file=sys.stderr)
        return 1
    started = time.time()
    summaries = []
    for name in wanted:
        link_info, results = runner.run_scenario(SCENARIOS[name], options.runs)
        summaries.append(summarize(SCENARIOS[name], link_info, results))
    sys.stderr.flush()
    print()
    print(f"{options.runs} interleaved run(s) per arm; median [min-max]:")
    print_table(summaries)

    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = Path(options.out) / f"ab-{stamp}.json"
    document = {
        "command": " ".join(sys.argv), "started": stamp, "seconds": round(time.time() - started, 1),
        "runs_per_arm": options.runs, "quick": options.quick, "machine": machine_info(), "scenarios": summaries,
    }
    out.write_text(json.dumps(document, indent=1) + "\n")
    print(f"\nraw results: {out}")
    if options.check:
        failed = [s for s in summaries if not s["assertion_met"]]
        for s in failed:
            print(f"ab: {s['scenario']}: expected {s['assertion']}; medians {s['median']}", file=sys.stderr)
        return 1 if failed else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
