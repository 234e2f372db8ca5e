#!/usr/bin/env python3
"""[log] format = "jsonl": every line of the log is one complete JSON object with the
documented common fields, and conn_open carries each option requested and effective."""
import json
import os

from testlib import Checks, clean_env, parse_args, run

POLICY = """version = 1
[log]
format = "jsonl"
level = "info"
[defaults]
nodelay = "force"
"""


def main():
    args = parse_args()
    checks = Checks()
    policy = os.path.join(args.work_dir, "jsonl.toml")
    with open(policy, "w") as f:
        f.write(POLICY)
    log = os.path.join(args.work_dir, "probe.jsonl")
    if os.path.exists(log):
        os.remove(log)
    # The app tries to re-enable Nagle: the veto is logged too.
    env = clean_env(LD_PRELOAD=args.shim, TCPTUNE_POLICY=policy, TCPTUNE_LOG=log)
    done = run([args.probe, "force", "--nodelay", "1", "--cork", "0"], env)
    checks.check(done.returncode == 0, f"probe ran under the shim ({done.stdout.strip()[-200:]})")
    lines = open(log).read().splitlines() if os.path.exists(log) else []
    records = []
    for line in lines:
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as error:
            checks.check(False, f"line is JSON: {line[:120]} ({error})")
    checks.check(len(lines) >= 3 and len(records) == len(lines), f"all {len(lines)} lines parse as JSON")
    common = {"ts", "level", "pid", "program", "event"}
    checks.check(all(common <= set(r) for r in records), "every record has ts, level, pid, program, event")
    checks.check(all(r["program"] == "probe" and r["pid"] > 0 for r in records), "program and pid are right")
    checks.check(all(r["ts"].endswith("Z") and "T" in r["ts"] for r in records), "ts is UTC ISO 8601")
    events = [r["event"] for r in records]
    checks.check(events[0] == "start" and records[0].get("rules") == 0, f"the first record is start ({events[:1]})")
    opens = [r for r in records if r["event"] == "conn_open"]
    checks.check(any(r["role"] == "client" for r in opens) and any(r["role"] == "server" for r in opens),
                 "conn_open for the client and the accepted socket")
    for r in opens[:1]:
        checks.check({"fd", "role", "rule", "phase", "options"} <= set(r), f"conn_open fields ({sorted(r)})")
        nodelay = [o for o in r["options"] if o["name"] == "nodelay"]
        checks.check(nodelay and nodelay[0]["requested"] == "force" and nodelay[0]["effective"] == "1",
                     f"conn_open's options carry requested and effective ({r['options']})")
    checks.check(any(r["event"] == "log" and "ignored" in r.get("message", "") for r in records),
                 "free-form messages (the veto) are records too")
    checks.finish()


if __name__ == "__main__":
    main()
