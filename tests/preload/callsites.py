#!/usr/bin/env python3
"""callsite = true: conn_open and slow_write records carry the app's backtrace (module+offset,
which addr2line resolves), libunwind is mapped only then, never otherwise."""
import json
import os
import subprocess

from testlib import Checks, clean_env, parse_args, run


def main():
    args = parse_args()
    checks = Checks()
    policy = os.path.join(args.work_dir, "callsite.toml")
    with open(policy, "w") as f:
        f.write('version = 1\n[log]\nformat = "jsonl"\ncallsite = true\nslow_write = "1us"\n')
    log = os.path.join(args.work_dir, "callsite.jsonl")
    if os.path.exists(log):
        os.remove(log)
    done = run([args.probe, "writes", "--count", "20", "--size", "100", "--print-maps", "1"],
               clean_env(LD_PRELOAD=args.shim, TCPTUNE_POLICY=policy, TCPTUNE_LOG=log))
    checks.check(done.returncode == 0 and "libunwind mappings: 0" not in done.stdout,
                 "with callsite = true the shim loads libunwind")
    records = [json.loads(line) for line in open(log)] if os.path.exists(log) else []
    client = [r for r in records if r["event"] == "conn_open" and r["role"] == "client"]
    frames = client[0].get("callsite", []) if client else []
    checks.check(bool(frames) and frames[0].startswith("probe+0x"), f"conn_open names the app's frames ({frames[:3]})")
    checks.check(not any("libtcptune" in frame for frame in frames), "without the shim's own frames")
    if frames:
        offset = frames[0].split("+")[1].split()[0]
        where = subprocess.run(["addr2line", "-f", "-C", "-e", args.probe, offset], capture_output=True, text=True)
        checks.check("connect_to" in where.stdout or "make_pair" in where.stdout,
                     f"addr2line resolves it to the probe's connect ({where.stdout.splitlines()[:1]})")
    slow = [r for r in records if r["event"] == "slow_write"]
    checks.check(bool(slow) and all(r.get("callsite", [""])[0].startswith("probe+0x") for r in slow),
                 "slow_write records carry the writer's call site")

    log = os.path.join(args.work_dir, "plain.jsonl")
    done = run([args.probe, "writes", "--count", "20", "--size", "100", "--print-maps", "1"],
               clean_env(LD_PRELOAD=args.shim, TCPTUNE_LOG=log, TCPTUNE_LOG_FORMAT="jsonl"))
    checks.check("libunwind mappings: 0" in done.stdout, "without callsite, libunwind is never mapped")
    records = [json.loads(line) for line in open(log)] if os.path.exists(log) else []
    checks.check(records and not any("callsite" in r for r in records), "and no record has a call site")
    checks.finish()


if __name__ == "__main__":
    main()
