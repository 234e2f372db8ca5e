#!/usr/bin/env python3
"""Observe, advise, prove, over the emulated link: each bench story runs with both ends under the
shim observing only (nodelay = "keep", nothing else), `tcptune advise` reads both logs, and the
story runs again with both ends under the advised policy; that run must meet the target the
hand-written preset meets in bench/ab (docs/benchmarks.md), measured the same way here. A healthy
bulk transfer must get no finding, and then no policy file.

  rpc    20 ms RTT: a 10-byte header and a 100-byte body as two writes -> nodelay on the client;
         p50 within 25% of the app fixed by its author (--nodelay) or of low-latency-rpc.toml.
  bursty 180 ms RTT, cubic: 60 KB after 1 s silences -> congestion bbr on the sender (no
         keep_warm preset for its port); p99 below half of observe's, as bursty-wan-bbr.toml.
  bulk   100 ms RTT, 100 Mbit/s, the receiver pins SO_RCVBUF 64 KiB -> override_app_buffers on the
         receiver (the peer of the sender whose records show the window); goodput at least 80%
         of wan-bulk.toml's and 3x observe's.
  healthy bulk, the receiver not pinning (--no-pin): no finding.

  advise_stories.py --bin BUILD/bin --work-dir DIR [--story rpc,bursty,bulk,healthy]
Root and /dev/net/tun, else exit 77."""
import argparse
import json
import os
import subprocess
import sys

parser = argparse.ArgumentParser()
parser.add_argument("--bin", required=True)
parser.add_argument("--work-dir", required=True)
parser.add_argument("--story", default="rpc,bursty,bulk,healthy")
args = parser.parse_args()
if os.geteuid() != 0 or not os.path.exists("/dev/net/tun"):
    print("skipped: needs root and /dev/net/tun for the emulated link")
    sys.exit(77)
os.makedirs(args.work_dir, exist_ok=True)
TCPTUNE = os.path.join(args.bin, "tcptune")
LINKEM = os.path.join(args.bin, "tcptune-linkem")
OBSERVE = os.path.join(args.work_dir, "observe.toml")
PRESETS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "config", "presets")
PRESET_WAN_BULK = os.path.join(PRESETS, "wan-bulk.toml")
PRESET_RPC = os.path.join(PRESETS, "low-latency-rpc.toml")
with open(OBSERVE, "w") as f:
    f.write('[defaults]\nnodelay = "keep"\n')
failed = 0


def check(ok, what):
    global failed
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    failed += not ok
    return ok


def link_up(rtt, rate):
    done = subprocess.run([LINKEM, "up", "--rtt", rtt, "--rate", rate, "--congestion", "cubic",
                           "--slow-start-after-idle", "1"], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        print(f"skipped: tcptune-linkem up failed: {done.stderr.strip()}")
        sys.exit(77)


def link_down():
    subprocess.run([LINKEM, "down"], capture_output=True, timeout=60)


def in_ns(namespace, command):
    return ["ip", "netns", "exec", namespace] + command


def under(policy, log, command):
    """The command under tcptune run with `policy`, its log to `log`; as it is without a policy."""
    if policy is None:
        return command
    if os.path.exists(log):
        os.remove(log)
    return [TCPTUNE, "run", "--quiet", "--policy", policy, "--log", log, "--"] + command


def run_pair(name, listen, connect, policy, reporter):
    """Listener in tcptune-b, connector in tcptune-a, both under `policy`; the reporter's JSON."""
    logs = [os.path.join(args.work_dir, f"{name}-listen.jsonl"), os.path.join(args.work_dir, f"{name}-connect.jsonl")]
    listening = subprocess.Popen(in_ns("tcptune-b", under(policy, logs[0], listen)), stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
    connecting = subprocess.run(in_ns("tcptune-a", under(policy, logs[1], connect)), capture_output=True, text=True,
                                timeout=120)
    listen_out, listen_err = listening.communicate(timeout=60)
    ok = check(listening.returncode == 0 and connecting.returncode == 0,
               f"{name}: both ends ran ({listen_err.strip()[-200:]} {connecting.stderr.strip()[-200:]})")
    out = listen_out if reporter == "listen" else connecting.stdout
    result = json.loads(out.strip().splitlines()[-1]) if ok and out.strip() else {}
    return result, logs


def advise(name, logs):
    """tcptune advise --json --output; the findings and the policy path (None when not written)."""
    policy = os.path.join(args.work_dir, f"{name}-advised.toml")
    if os.path.exists(policy):
        os.remove(policy)
    done = subprocess.run([TCPTUNE, "advise", "--json", "--output", policy] + logs, capture_output=True, text=True,
                          timeout=60)
    check(done.returncode == 0, f"{name}: advise ran ({done.stderr.strip()})")
    findings = json.loads(done.stdout)["findings"] if done.returncode == 0 else []
    print(f"     {name}: {[finding['id'] for finding in findings]}")
    for finding in findings:
        print(f"     {finding['id']}: {finding['evidence']['summary']}")
        if finding["fix"]["rule"] is not None:
            print("     " + finding["fix"]["rule"]["toml"].replace("\n", "\n     "))
    if os.path.exists(policy):
        checked = subprocess.run([TCPTUNE, "check", policy], capture_output=True, text=True, timeout=60)
        check(checked.returncode == 0, f"{name}: tcptune check passes the advised policy ({checked.stderr.strip()})")
    return findings, (policy if os.path.exists(policy) else None)


def story_rpc():
    link_up("20ms", "0")
    try:
        endpoint = "198.18.0.2:16101"
        listen = [os.path.join(args.bin, "rpc"), "serve", "--listen", endpoint]
        connect = [os.path.join(args.bin, "rpc"), "call", "--connect", endpoint, "--requests", "40"]
        observed, logs = run_pair("rpc-observe", listen, connect, OBSERVE, "connect")
        findings, policy = advise("rpc", logs)
        check([f["cause_code"] for f in findings] == ["nagle-delayed-ack"], "rpc: one finding, Nagle with delayed ACK")
        check(policy is not None, "rpc: a policy was written")
        if not findings or policy is None:
            return
        check(findings[0]["evidence"]["roles"] == ["client"], "rpc: on the client, which writes its request in two")
        advised, _ = run_pair("rpc-advised", listen, connect, policy, "connect")
        reference, _ = run_pair("rpc-reference", listen + ["--nodelay"], connect + ["--nodelay"], None, "connect")
        preset, _ = run_pair("rpc-preset", listen, connect, PRESET_RPC, "connect")
        off, advised_p50, ref, hand = (r.get("latency_ms", {}).get("p50", 0)
                                       for r in (observed, advised, reference, preset))
        print(f"     rpc p50: observe {off} ms, advised {advised_p50} ms, app with TCP_NODELAY {ref} ms, "
              f"low-latency-rpc.toml {hand} ms")
        # Against the app fixed by its author and the hand-written preset, in the same run: the link
        # is a user-space mover, so a loaded machine moves single runs by 10-20%; the untuned p50
        # is 4x away (the benchmark, bench/, holds the 5% target).
        check(0 < advised_p50 <= 1.25 * max(ref, hand),
              "rpc: advised p50 within 25% of the app fixed by its author (or of the preset, when it misses that)")
        check(off > 1.5 * advised_p50, "rpc: observe p50 more than 1.5x advised")
    finally:
        link_down()


def story_bursty():
    link_up("180ms", "0")
    try:
        endpoint = "198.18.0.2:16102"
        listen = [os.path.join(args.bin, "bursty"), "receive", "--listen", endpoint]
        connect = [os.path.join(args.bin, "bursty"), "send", "--connect", endpoint, "--gap", "1s", "--count", "4"]
        observed, logs = run_pair("bursty-observe", listen, connect, OBSERVE, "listen")
        findings, policy = advise("bursty", logs)
        check([f["cause_code"] for f in findings] == ["slow-start-after-idle"],
              "bursty: one finding, slow start after idle")
        if not findings or policy is None:
            return
        check("congestion" in findings[0]["fix"]["rule"]["keys"], "bursty: BBR (no keep_warm preset for the port)")
        advised, _ = run_pair("bursty-advised", listen, connect, policy, "listen")
        off, tuned = (r.get("latency_ms", {}).get("p99", 0) for r in (observed, advised))
        print(f"     bursty p99: observe {off} ms, advised {tuned} ms")
        check(0 < tuned < off / 2, "bursty: advised p99 below half of observe's")
    finally:
        link_down()


def bulk(name, pin):
    endpoint = "198.18.0.2:16103"
    listen = [os.path.join(args.bin, "bulk"), "receive", "--listen", endpoint] + ([] if pin else ["--no-pin"])
    connect = [os.path.join(args.bin, "bulk"), "send", "--connect", endpoint, "--duration", "5s"]
    return listen, connect


def story_bulk():
    link_up("100ms", "100Mbit")
    try:
        listen, connect = bulk("bulk", True)
        observed, logs = run_pair("bulk-observe", listen, connect, OBSERVE, "listen")
        findings, policy = advise("bulk", logs)
        check([f["cause_code"] for f in findings] == ["receive-window-limited"],
              "bulk: one finding, the receive window")
        if not findings or policy is None:
            return
        check(findings[0]["tune"] == "peer", "bulk: the fix is the receiver's, the peer of the sender")
        advised, _ = run_pair("bulk-advised", listen, connect, policy, "listen")
        preset, _ = run_pair("bulk-preset", listen, connect, PRESET_WAN_BULK, "listen")
        off, tuned, hand = (r.get("goodput_mbit", 0) for r in (observed, advised, preset))
        steady = advised.get("steady_goodput_mbit", 0)
        print(f"     bulk goodput: observe {off} Mbit/s, advised {tuned} Mbit/s (after the first second {steady}), "
              f"wan-bulk.toml {hand} Mbit/s")
        # bench/ab's target (90% of the link) is over 20 s; over these 5 s the first second's slow
        # start weighs too, in every arm. The preset's goodput in the same run is the reference: a loaded machine slows the
        # user-space link for both alike (the benchmark, bench/, holds the 90%-of-link target).
        check(tuned >= 0.8 * hand, "bulk: advised goodput at least 80% of the hand-written preset's")
        check(tuned > 3 * off, "bulk: advised goodput more than 3x observe's")
    finally:
        link_down()


def story_healthy():
    link_up("100ms", "100Mbit")
    try:
        listen, connect = bulk("healthy", False)
        _, logs = run_pair("healthy-observe", listen, connect, OBSERVE, "listen")
        findings, policy = advise("healthy", logs)
        check(findings == [], "healthy bulk: no finding")
        check(policy is None, "healthy bulk: no policy written")
    finally:
        link_down()


STORIES = {"rpc": story_rpc, "bursty": story_bursty, "bulk": story_bulk, "healthy": story_healthy}
for story in args.story.split(","):
    STORIES[story]()
print(f"{'FAILED' if failed else 'passed'}: {failed} check(s) failed")
sys.exit(1 if failed else 0)
