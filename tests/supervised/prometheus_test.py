#!/usr/bin/env python3
"""[log] prometheus_textfile in supervised mode: connect_probe (static) connects to two loopback
listeners under `tcptune run --supervise`, one port matched by a rule, the other left to the
defaults, and holds some connections open until its stdin closes. Checked: the file at the
path the policy names ({program} and {pid} expanded, pid the program's), rewritten while the
program runs, parsed by the strict exposition-format parser; tcptune_connections_total per rule
equals the connections the program made under it, and the conn_close records in the log; no
family counted from the program's writes; tcptune_dropped_records_total is there. Two runs at
once under `{program}.prom` share one file: the connections summed, tcptune_processes 2 while
both run and 0 after. A last run points the file into a missing directory: the program still runs and exits 0, and the error is
reported once on stderr and once as a supervisor_warning record."""
import argparse
import os
import select
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "preload"))
from testlib import Checks, Listener, clean_env, parse_exposition, records, seccomp_listener_available, skip, value  # noqa: E402

RULE = "prom-rule"
COUNTS = {RULE: 4, "(defaults)": 3}  # connections made by the probe under each rule
WRITE_FAMILIES = ("tcptune_writes_total", "tcptune_write_bytes_total", "tcptune_heartbeats_total",
                  "tcptune_write_latency_seconds", "tcptune_ack_latency_seconds")
BOUND_S = 20  # any single wait; ctest's TIMEOUT bounds the whole test


def read_line(stream, timeout_s):
    ready, _, _ = select.select([stream], [], [], timeout_s)
    return stream.readline() if ready else ""


def write_policy(path, textfile, port):
    with open(path, "w", encoding="utf-8") as f:
        f.write(f'version = 1\n[log]\nformat = "jsonl"\nprometheus_textfile = "{textfile}"\ninterval = "100ms"\n'
                f'[[rule]]\nname = "{RULE}"\nmatch = {{ port = {port} }}\nnodelay = "force"\n')


def start(args, policy, log, ports):
    command = [args.tcptune, "run", "--supervise", "--policy", policy, "--log", log, "-q", "--", args.probe,
               str(ports[RULE]), str(COUNTS[RULE]), str(ports["(defaults)"]), str(COUNTS["(defaults)"])]
    return subprocess.Popen(command, env=clean_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def parse_or_none(path):
    try:
        with open(path, encoding="utf-8") as f:
            return parse_exposition(f.read())
    except (OSError, ValueError):
        return None


def families(samples):
    return {name for name, _ in samples}


def check_counts(checks, samples, when):
    for rule, count in COUNTS.items():
        got = value(samples, "tcptune_connections_total", program="connect_probe", rule=rule)
        checks.check(got == count, f"{when}: tcptune_connections_total{{rule=\"{rule}\"}} is {count} ({got})")
        checks.check(value(samples, "tcptune_idle_restarts_total", program="connect_probe", rule=rule) is not None,
                     f"{when}: tcptune_idle_restarts_total{{rule=\"{rule}\"}} is there")
    present = [f for f in WRITE_FAMILIES if any(name.startswith(f) for name in families(samples))]
    checks.check(not present, f"{when}: no family counted from the program's writes ({present})")
    checks.check(value(samples, "tcptune_dropped_records_total", program="connect_probe") == 0,
                 f"{when}: tcptune_dropped_records_total is 0")


def main():
    p = argparse.ArgumentParser()
    for a in ("--tcptune", "--probe", "--work-dir"):
        p.add_argument(a, required=True)
    args = p.parse_args()
    args.tcptune, args.probe, args.work_dir = (os.path.abspath(x) for x in (args.tcptune, args.probe, args.work_dir))
    os.makedirs(args.work_dir, exist_ok=True)
    if not seccomp_listener_available():
        skip("this kernel has no seccomp")
    checks = Checks()
    listeners = {RULE: Listener(), "(defaults)": Listener()}
    ports = {rule: listener.port for rule, listener in listeners.items()}
    try:
        for name in os.listdir(args.work_dir):
            if ".prom" in name or name.endswith(".jsonl"):
                os.remove(os.path.join(args.work_dir, name))
        policy = os.path.join(args.work_dir, "policy.toml")
        log = os.path.join(args.work_dir, "run.jsonl")
        write_policy(policy, f"{args.work_dir}/{{program}}-{{pid}}.prom", ports[RULE])
        process = start(args, policy, log, ports)
        try:
            ready = read_line(process.stdout, BOUND_S).split()
            checks.check(len(ready) == 2 and ready[0] == "ready", f"the probe connected and waits ({ready})")
            if len(ready) != 2:
                checks.finish()
            path = os.path.join(args.work_dir, f"connect_probe-{ready[1]}.prom")
            # Rewritten every 100 ms: the counts appear while the probe still holds its connections.
            deadline = time.monotonic() + BOUND_S
            live = None
            while time.monotonic() < deadline:
                live = parse_or_none(path)
                if live is not None and all(value(live, "tcptune_connections_total", program="connect_probe",
                                                  rule=rule) == count for rule, count in COUNTS.items()):
                    break
                time.sleep(0.05)
            checks.check(live is not None and process.poll() is None,
                         f"while the program runs, {os.path.basename(path)} is written and parses "
                         "(the program's pid in its name)")
            if live is None:
                checks.finish()
            check_counts(checks, live, "while running")
            process.stdin.close()
            process.wait(timeout=BOUND_S)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        stderr = process.stderr.read()
        checks.check(process.returncode == 0, f"the probe exits 0 under supervision ({process.returncode}, "
                                              f"stderr {stderr.strip()!r})")
        pid_warnings = [line for line in stderr.splitlines() if "names {pid}" in line]
        checks.check(len(pid_warnings) == 1 and "{program}.prom" in pid_warnings[0],
                     f"a file per process ({{pid}} in the path) is warned about once ({pid_warnings})")
        final = parse_or_none(path)
        checks.check(final is not None, "at exit the file is rewritten and parses")
        if final is not None:
            check_counts(checks, final, "at exit")
        closes = {}
        for record in records(log):
            if record.get("event") == "conn_close":
                closes[record.get("rule")] = closes.get(record.get("rule"), 0) + 1
        checks.check(closes == COUNTS, f"as many conn_close records per rule as connections counted ({closes})")
        checks.check(not [n for n in os.listdir(args.work_dir) if ".prom.tmp." in n], "no temporary file is left")

        # Two supervised runs of one program share `{program}.prom`: each supervisor merges its
        # share, as the preloaded shim does (textfile_merge.hpp).
        shared_dir = os.path.join(args.work_dir, "shared")
        os.makedirs(shared_dir, exist_ok=True)
        shared = os.path.join(shared_dir, "connect_probe.prom")
        if os.path.exists(shared):
            os.remove(shared)  # a previous run's counts, which this run would add to
        write_policy(policy, f"{shared_dir}/{{program}}.prom", ports[RULE])
        runs = [start(args, policy, os.path.join(args.work_dir, f"shared-{i}.jsonl"), ports) for i in range(2)]
        try:
            for run_ in runs:
                read_line(run_.stdout, BOUND_S)
            deadline = time.monotonic() + BOUND_S
            both = None
            while time.monotonic() < deadline:
                both = parse_or_none(shared)
                if both is not None and value(both, "tcptune_processes", program="connect_probe") == 2 and all(
                        value(both, "tcptune_connections_total", program="connect_probe", rule=rule) == 2 * count
                        for rule, count in COUNTS.items()):
                    break
                time.sleep(0.05)
            checks.check(both is not None and value(both, "tcptune_processes", program="connect_probe") == 2,
                         "two supervisors of one program: one file, tcptune_processes is 2 while both run")
            for rule, count in COUNTS.items():
                got = value(both or {}, "tcptune_connections_total", program="connect_probe", rule=rule)
                checks.check(got == 2 * count, f"and connections under {rule} are summed ({got}, {2 * count})")
            for run_ in runs:
                run_.stdin.close()
                run_.wait(timeout=BOUND_S)
        finally:
            for run_ in runs:
                if run_.poll() is None:
                    run_.kill()
                    run_.wait()
        after = parse_or_none(shared) or {}
        checks.check(value(after, "tcptune_processes", program="connect_probe") == 0 and all(
            value(after, "tcptune_connections_total", program="connect_probe", rule=rule) == 2 * count
            for rule, count in COUNTS.items()), "after both exit: the sums stay, tcptune_processes is 0")

        # A file that cannot be written: reported once, never fatal.
        missing = os.path.join(args.work_dir, "missing", "x.prom")
        write_policy(policy, missing, ports[RULE])
        bad_log = os.path.join(args.work_dir, "unwritable.jsonl")
        process = start(args, policy, bad_log, ports)
        try:
            read_line(process.stdout, BOUND_S)
            time.sleep(0.5)  # several intervals, each a failed rewrite
            _, stderr = process.communicate(input="", timeout=BOUND_S)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        reported = [line for line in stderr.splitlines() if "x.prom" in line]
        checks.check(process.returncode == 0, f"an unwritable textfile: the probe still exits 0 ({process.returncode})")
        checks.check(len(reported) == 1 and reported[0].startswith("tcptune: ") and
                     reported[0].endswith("(logged once)"), f"the error is on stderr once ({reported})")
        warnings = [r for r in records(bad_log)
                    if r.get("event") == "supervisor_warning" and "x.prom" in r.get("message", "")]
        checks.check(len(warnings) == 1, f"and once as a supervisor_warning record ({len(warnings)})")
    finally:
        for listener in listeners.values():
            listener.close()
    checks.finish()


if __name__ == "__main__":
    main()
