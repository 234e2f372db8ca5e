#!/usr/bin/env python3
"""`tcptune run --observe`, preloaded and supervised: measured, and nothing changed.

- Every option observe_probe reads back with getsockopt (every option a policy can set, at each
  step of each connection, and the window scales chosen at the handshake) is what it reads
  without tcptune: preloaded (dynamic probe), supervised (static probe, and the dynamic one with
  --supervise). A run under `nodelay = "on"` differs, so the comparison can fail.
- Every conn_open and conn_close of a connection names both ends as the program itself sees
  them (its ENDPOINTS_FILE): blocking and non-blocking connects (SO_ERROR asked or not), the
  accepted ends, IPv6 and an IPv4-mapped peer (printed as IPv4), a connection still open at exit;
  a refused connect names its peer and, preloaded, the error. Supervised, accepted sockets are
  found by dumps, so the one closed at once ("brief") has no record, as documented.
- The records carry the measurements: write counts and latency, ack latency, the summary (shim);
  TCP_INFO at close (supervised); the start record names the observe-only policy, and no
  conn_open reports an option set.
- With --policy FILE, only FILE's [log] is used: its textfile is written, its nodelay = "on" is not
  applied; an invalid FILE exits 78.
"""
import argparse
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "preload"))
from testlib import Checks, clean_env, records, seccomp_listener_available  # noqa: E402

p = argparse.ArgumentParser()
for a in ("--tcptune", "--shim", "--dynamic", "--static", "--work-dir"):
    p.add_argument(a, required=True)
args = p.parse_args()
shutil.rmtree(args.work_dir, ignore_errors=True)
os.makedirs(args.work_dir)
checks = Checks()
OBSERVE_POLICY = "observe-only (tcptune run --observe)"
LONG_LIVED = ("blocking", "so_error", "write_only", "ipv6", "mapped", "left_open")


def path(name):
    return os.path.join(args.work_dir, name)


def probe(name, program, *tcptune, hold_ms=100):
    """Runs the probe (under `tcptune ARGS --` when given): its option dump, its ends, its log."""
    ends, log = path(name + ".ends"), path(name + ".jsonl")
    command = [program, ends, str(hold_ms)]
    if tcptune:
        command = [args.tcptune, *tcptune, "--log", log, "--", *command]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                          env=clean_env(TCPTUNE_SHIM=args.shim))
    checks.check(done.returncode == 0, f"{name}: the probe ran (exit {done.returncode}) {done.stderr[-300:]!r}")
    return done.stdout.splitlines(), read_ends(ends), records(log), done.stderr


def read_ends(file):
    ends = {}
    if os.path.exists(file):
        with open(file, encoding="utf-8") as f:
            for line in f:
                name, role, local, peer = line.split()
                ends[(name, role)] = (None if local == "-" else local, peer)
    return ends


def same_options(name, baseline, observed):
    differing = [(a, b) for a, b in zip(baseline, observed) if a != b]
    checks.check(len(baseline) > 20 and len(baseline) == len(observed) and not differing,
                 f"{name}: every option read back is as without tcptune ({len(observed)} lines; "
                 f"first difference: {differing[:1]})")


def is_end(text):
    """An address and a port, not the unspecified address or port 0."""
    if not text:
        return False
    host, _, port = text.rpartition(":")
    return port.isdigit() and int(port) != 0 and host not in ("0.0.0.0", "[::]", "")


def check_records(name, ends, log, supervised):
    conns = [r for r in log if r.get("event") in ("conn_open", "conn_close") and r.get("role") in ("client", "server")]
    checks.check(conns and all(is_end(r.get("peer")) for r in conns),
                 f"{name}: every conn_open and conn_close of a connection has a peer ({len(conns)} records)")
    refused_peer = ends.get(("refused", "client"), (None, None))[1]
    unnamed = [r for r in conns if not is_end(r.get("local")) and r.get("peer") != refused_peer]
    checks.check(not unnamed, f"{name}: each has its local end, but the refused connect's ({unnamed[:1]})")
    for role in ("client", "server"):
        wanted = {v for (n, r), v in ends.items() if r == role and n != "refused"}
        if supervised and role == "server":
            wanted = {v for (n, r), v in ends.items() if r == role and n in LONG_LIVED}
        for event in ("conn_open", "conn_close"):
            if supervised and role == "server" and event == "conn_open":
                continue  # supervised mode writes none for accepted sockets
            seen = [(r.get("local"), r.get("peer")) for r in conns if r["event"] == event and r["role"] == role]
            missing = wanted - set(seen)
            checks.check(not missing and all(s in set(ends.values()) for s in seen),
                         f"{name}: the {role}s' {event} records name the ends the program saw "
                         f"({len(seen)} records; missing {sorted(missing)[:2]})")
    refused = [r for r in log if r.get("event") == "conn_open" and r.get("peer") == "127.0.0.1:1"]
    checks.check(len(refused) == 1 and "local" not in refused[0] and
                 (supervised or refused[0].get("connect_error") == "ECONNREFUSED"),
                 f"{name}: the refused connect's conn_open names its peer, no local end"
                 f"{'' if supervised else ', and the error'} ({refused[:1]})")
    left = ends.get(("left_open", "client"))
    at_exit = [r for r in log if r.get("event") == "conn_close" and (r.get("local"), r.get("peer")) == left]
    checks.check(len(at_exit) == 1 and (supervised or at_exit[0]["open_at_exit"] is True),
                 f"{name}: the connection open at exit has its conn_close, with both ends ({at_exit[:1]})")
    starts = [r for r in log if r.get("event") == "start"]
    checks.check(starts and all(r.get("policy") == OBSERVE_POLICY for r in starts),
                 f"{name}: the start record names the observe-only policy ({[r.get('policy') for r in starts]})")
    opens = [r for r in log if r.get("event") == "conn_open"]
    # What the app set itself is reported (status left_alone, requested "app ..."), never set.
    set_by_tcptune = [o for r in opens for o in r.get("options", [])
                      if o.get("status") != "left_alone" or not o.get("requested", "").startswith("app ")]
    checks.check(opens and not set_by_tcptune,
                 f"{name}: no conn_open reports an option set ({set_by_tcptune[:1]})")
    app_buffers = [o["name"] for r in opens for o in r.get("options", []) if o.get("requested", "").startswith("app ")]
    checks.check({"rcvbuf", "sndbuf"} <= set(app_buffers),
                 f"{name}: the app's own SO_RCVBUF and SO_SNDBUF are reported as its own ({sorted(set(app_buffers))})")


def check_shim_measurements(name, ends, log):
    blocking = ends.get(("blocking", "client"))
    closes = [r for r in log if r.get("event") == "conn_close" and (r.get("local"), r.get("peer")) == blocking]
    if not checks.check(len(closes) == 1, f"{name}: the blocking client's conn_close"):
        return
    close = closes[0]
    checks.check(close["writes"] == 3 and close["bytes"] == 600 and close["write_latency_us"]["count"] == 3,
                 f"{name}: its three 200-byte requests, each write timed ({close['writes']} writes, "
                 f"{close['bytes']} bytes, {close['write_latency_us']['count']} timed)")
    acks = close.get("ack_latency_us", {})
    checks.check(acks.get("count", 0) + acks.get("acked_before_first_poll", 0) >= 1,
                 f"{name}: its writes' acks were sampled ({acks})")
    checks.check({"rtt_us", "cwnd", "retransmits"} <= set(close.get("tcp_info", {})), f"{name}: the final TCP_INFO")
    summaries = [r for r in log if r.get("event") == "summary"]
    connections = len([k for k in ends if k[0] != "refused"]) + 1  # the refused socket counts too
    checks.check(len(summaries) == 1 and summaries[0]["connections"] == connections,
                 f"{name}: the summary counts every connection "
                 f"({summaries[0]['connections'] if summaries else None} of {connections})")


# Without tcptune: the options as the kernel leaves them.
dynamic_baseline, _, _, _ = probe("bare-dynamic", args.dynamic)
static_baseline, _, _, _ = probe("bare-static", args.static)

# The comparison can fail: nodelay = "on" shows in TCP_NODELAY.
control_policy = path("nodelay-on.toml")
with open(control_policy, "w", encoding="utf-8") as f:
    f.write('version = 1\n[defaults]\nnodelay = "on"\n')
control, _, _, _ = probe("control-nodelay-on", args.dynamic, "run", "--policy", control_policy)
checks.check(control != dynamic_baseline and any("TCP_NODELAY=1" in line for line in control),
             "control: under nodelay = \"on\" the options read back differ")

observed, ends, log, stderr = probe("preloaded", args.dynamic, "run", "--observe")
same_options("preloaded", dynamic_baseline, observed)
check_records("preloaded", ends, log, supervised=False)
check_shim_measurements("preloaded", ends, log)
checks.check("connections observed by the shim (no option set)" in stderr, "preloaded: the table says observed")

# --observe excludes a run without a log.
done = subprocess.run([args.tcptune, "run", "--observe", "--no-log", "--", "/bin/true"], capture_output=True,
                      text=True, timeout=30, env=clean_env(TCPTUNE_SHIM=args.shim))
checks.check(done.returncode != 0 and "excludes" in done.stderr,
             f"--observe with --no-log is refused ({done.returncode}: {done.stderr.strip()[:120]})")

# --observe --policy FILE (a fleet A/B's off arm): FILE's [log] only, here its textfile, and none
# of its options, although FILE sets nodelay = "on".
textfiles = path("observe-textfile")
os.makedirs(textfiles)
logging_policy = path("nodelay-on-with-textfile.toml")
with open(logging_policy, "w", encoding="utf-8") as f:
    f.write(f'version = 1\n[defaults]\nnodelay = "on"\n[log]\nprometheus_textfile = "{textfiles}/{{program}}.prom"\n'
            'interval = "100ms"\n')
observed, _, log, _ = probe("preloaded-policy-log", args.dynamic, "run", "--observe", "--policy", logging_policy)
same_options("--observe --policy FILE", dynamic_baseline, observed)
starts = [r.get("policy") for r in log if r.get("event") == "start"]
checks.check(starts and all(p == f"{OBSERVE_POLICY}, [log] of {logging_policy}" for p in starts),
             f"--observe --policy FILE: the start record names the observe-only policy with FILE's [log] ({starts})")
checks.check(any(n.endswith(".prom") for n in os.listdir(textfiles)),
             f"--observe --policy FILE: FILE's Prometheus textfile is written ({os.listdir(textfiles)})")
bad_policy = path("invalid.toml")
with open(bad_policy, "w", encoding="utf-8") as f:
    f.write('version = 1\n[defaults]\nnodelay = "sometimes"\n')
done = subprocess.run([args.tcptune, "run", "--observe", "--policy", bad_policy, "--", "/bin/true"],
                      capture_output=True, text=True, timeout=30, env=clean_env(TCPTUNE_SHIM=args.shim))
checks.check(done.returncode == 78 and "nodelay" in done.stderr,
             f"--observe --policy FILE validates FILE first ({done.returncode}: {done.stderr.strip()[:120]})")

if not seccomp_listener_available():
    print("no seccomp here: the supervised half is skipped")
else:
    for name, program, baseline in (("supervised-static", args.static, static_baseline),
                                    ("supervised-dynamic", args.dynamic, dynamic_baseline)):
        observed, ends, log, stderr = probe(name, program, "run", "--supervise", "--observe", hold_ms=700)
        same_options(name, baseline, observed)
        check_records(name, ends, log, supervised=True)
        closes = [r for r in log if r.get("event") == "conn_close" and r.get("role") == "server"]
        checks.check(closes and all(r.get("supervised") is True and "tcp_info" in r for r in closes),
                     f"{name}: the accepted ends' conn_close carry the last TCP_INFO seen")
        checks.check("connections observed from outside" in stderr, f"{name}: the table says observed")

checks.finish()
