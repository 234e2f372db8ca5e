#!/usr/bin/env python3
"""A preset is sent only from the side its protocol allows. One loopback connection, both ends
in one program under the shim with reno and a rule that matches every socket:
  - http1-client (client side only): the end that connect()ed sends heartbeats, the accepted
    end does not (conn_open says why), and the client end receives nothing but the server's bytes;
  - stomp (both sides), the control: the accepted end sends them too, so the check above can fail.

  side.py --shim LIB --source-dir SRC --work-dir DIR
Needs tcp_slow_start_after_idle = 1 (else exit 77: there is no restart to prevent)."""
import argparse
import json
import os
import subprocess
import sys

parser = argparse.ArgumentParser()
for option in ("--shim", "--source-dir", "--work-dir"):
    parser.add_argument(option, required=True)
args = parser.parse_args()
os.makedirs(args.work_dir, exist_ok=True)
if open("/proc/sys/net/ipv4/tcp_slow_start_after_idle").read().strip() != "1":
    print("skipped: tcp_slow_start_after_idle is 0 here, so keep_warm sends nothing")
    sys.exit(77)
failed = 0


def check(ok, what):
    global failed
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    failed += not ok


def run(preset):
    policy = os.path.join(args.work_dir, f"{preset}.toml")
    with open(policy, "w") as f:
        f.write(f'version = 1\n[log]\nformat = "jsonl"\n[[rule]]\nname = "every-socket"\ncongestion = "reno"\n'
                f'keep_warm = {{ protocol = "{preset}" }}\n')
    log = os.path.join(args.work_dir, f"{preset}.jsonl")
    if os.path.exists(log):
        os.remove(log)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TCPTUNE_") and k != "LD_PRELOAD"}
    env.update(LD_PRELOAD=args.shim, TCPTUNE_POLICY=policy, TCPTUNE_LOG=log)
    done = subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "side_app.py"),
                           "--protocol", preset],
                          env=env, capture_output=True, text=True, timeout=60)
    result = json.loads(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else {}
    records = [json.loads(line) for line in open(log)] if os.path.exists(log) else []
    ends = {}
    for role in ("client", "server"):
        opened = [r for r in records if r["event"] == "conn_open" and r["role"] == role]
        closed = [r for r in records if r["event"] == "conn_close" and r["role"] == role]
        option = [o for r in opened for o in r["options"] if o["name"] == "keep_warm"]
        ends[role] = {"keep_warm": option[0] if option else {}, "close": closed[0] if closed else {}}
    check(done.returncode == 0 and not result.get("errors") and result.get("client_received_whole") and
          result.get("server_received_whole"),
          f"{preset}: both ends received every byte in order ({result}, {done.stderr.strip()[-300:]})")
    return result, ends


result, ends = run("http1-client")
client, server = ends["client"], ends["server"]
check(client["keep_warm"].get("effective") == "on" and client["close"].get("heartbeats", 0) > 0,
      f"http1-client: the end that connected sends heartbeats ({client['close'].get('heartbeats')})")
check(server["keep_warm"].get("effective") == "off" and
      server["keep_warm"].get("note") ==
      "http1-client heartbeats are only valid from the client; not kept warm on accepted sockets",
      f"http1-client: the accepted end's conn_open says keep_warm is off, and why ({server['keep_warm']})")
check(server["close"].get("heartbeats", -1) == 0 and result.get("client_received_extra") == 0,
      f"http1-client: the accepted end sent none; the client received only the server's bytes "
      f"({server['close'].get('heartbeats')}, {result.get('client_received_extra')} extra bytes)")
check(result.get("server_received_extra") == client["close"].get("heartbeat_bytes", -1),
      f"http1-client: the server end received exactly the client's heartbeat bytes "
      f"({result.get('server_received_extra')} = {client['close'].get('heartbeat_bytes')})")

result, ends = run("stomp")
client, server = ends["client"], ends["server"]
check(server["keep_warm"].get("effective") == "on" and server["close"].get("heartbeats", 0) > 0 and
      client["close"].get("heartbeats", 0) > 0,
      f"stomp (valid from both sides): both ends send heartbeats ({client['close'].get('heartbeats')}, "
      f"{server['close'].get('heartbeats')})")
check(result.get("client_received_extra") == server["close"].get("heartbeat_bytes", -1) and
      result.get("server_received_extra") == client["close"].get("heartbeat_bytes", -1),
      f"stomp: each end received exactly the other's heartbeat bytes ({result})")
print(f"{failed} failed")
sys.exit(1 if failed else 0)
