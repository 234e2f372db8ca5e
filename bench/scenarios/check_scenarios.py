#!/usr/bin/env python3
"""Each scenario app runs on loopback and prints one valid JSON line with its documented fields.

  check_scenarios.py BIN_DIR
"""
import json
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.argv[1])
PORT = [16100]


def pair(name, receiver_args, sender_args, reporter):
    PORT[0] += 1
    endpoint = f"127.0.0.1:{PORT[0]}"
    receiver_role, sender_role = receiver_args[0], sender_args[0]
    receiving = subprocess.Popen([BIN / name, receiver_role, "--listen", endpoint] + receiver_args[1:],
                                 stdout=subprocess.PIPE, text=True)
    sending = subprocess.run([BIN / name, sender_role, "--connect", endpoint] + sender_args[1:],
                             capture_output=True, text=True, timeout=60)
    received, _ = receiving.communicate(timeout=60)
    assert sending.returncode == 0 and receiving.returncode == 0, (name, sending.stderr)
    lines = (received if reporter == "receiver" else sending.stdout).strip().splitlines()
    assert len(lines) == 1, (name, lines)
    record = json.loads(lines[0])
    assert record["scenario"] == name, record
    return record


def check_latency(summary, count):
    assert summary["count"] == count, summary
    assert 0 < summary["min"] <= summary["p50"] <= summary["p90"] <= summary["p99"] <= summary["max"], summary


bursty = pair("bursty", ["receive"], ["send", "--gap", "20ms", "--count", "4", "--warmup", "2", "--size", "8KiB"],
              "receiver")
check_latency(bursty["latency_ms"], 4)
assert bursty["size"] == 8192 and len(bursty["samples_ms"]) == 4, bursty

# The server pushes: the sender listens, the receiver connects; the sender reports its idle
# time, RTO and TCP_NODELAY (left off: nothing here sets it).
PORT[0] += 1
pushing = subprocess.Popen([BIN / "bursty", "send", "--listen", f"127.0.0.1:{PORT[0]}", "--gap", "20ms", "--count",
                            "3", "--warmup", "1", "--size", "8KiB"], stdout=subprocess.PIPE, text=True)
subscriber = subprocess.run([BIN / "bursty", "receive", "--connect", f"127.0.0.1:{PORT[0]}"], capture_output=True,
                            text=True, timeout=60)
pushed, _ = pushing.communicate(timeout=60)
assert pushing.returncode == 0 and subscriber.returncode == 0, subscriber.stderr
check_latency(json.loads(subscriber.stdout)["latency_ms"], 3)
sender = json.loads(pushed)
assert sender["role"] == "send" and sender["idle_s"] >= 0.06 and sender["rto_ms"] >= 200 and sender["nodelay"] is False, sender

rpc = pair("rpc", ["serve", "--nodelay"], ["call", "--requests", "20", "--nodelay"], "sender")
check_latency(rpc["latency_ms"], 20)
assert rpc["requests"] == 20 and rpc["requests_per_s"] > 0, rpc

bulk = pair("bulk", ["receive"], ["send", "--duration", "1500ms"], "receiver")
assert bulk["bytes"] > 0 and bulk["goodput_mbit"] > 0 and bulk["steady_goodput_mbit"] > 0, bulk
assert bulk["rcvbuf_pinned"] == 65536, bulk
# The kernel doubles a pinned SO_RCVBUF: the legacy habit really took effect.
assert bulk["rcvbuf_effective"] == 2 * 65536, bulk

# A mistyped option is refused, not ignored.
typo = subprocess.run([BIN / "bulk", "send", "--duraton", "1s"], capture_output=True, text=True)
assert typo.returncode == 2 and "unknown option --duraton" in typo.stderr, typo.stderr
print("scenarios ok")
