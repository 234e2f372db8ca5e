#!/usr/bin/env python3
"""No shipped preset puts a keep_warm heartbeat on an accepted (server-side) socket, whose
client may read the byte as the start of a reply (HTTP/1.1 keep-alive, RESP): checked on the
conn_open records of a real client and server connection under every preset in
config/presets. bursty-wan.toml still keeps its client connections warm."""
import glob
import json
import os

from testlib import Checks, clean_env, parse_args, run


def conn_opens(log):
    with open(log, encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    return [r for r in records if r.get("event") == "conn_open"]


def main():
    args = parse_args()
    checks = Checks()
    presets = sorted(glob.glob(os.path.join(args.source_dir, "config/presets/*.toml")))
    checks.check(len(presets) >= 5, f"the presets are there ({len(presets)})")
    for preset in presets:
        name = os.path.basename(preset)
        log = os.path.join(args.work_dir, name + ".jsonl")
        if os.path.exists(log):
            os.remove(log)
        env = clean_env(LD_PRELOAD=args.shim, TCPTUNE_POLICY=preset, TCPTUNE_LOG=log, TCPTUNE_LOG_FORMAT="jsonl")
        # TCP_NODELAY is on in every preset, for clients and servers alike.
        result = run([args.probe, "nodelay", "--client", "1", "--server", "1"], env, timeout=30)
        checks.check(result.returncode == 0 and result.stderr == "",
                     f"{name}: the probe ran under the preset ({result.returncode}: {result.stderr.strip()})")
        records = conn_opens(log) if os.path.exists(log) else []
        warm = {r.get("role"): any(o.get("name") == "keep_warm" for o in r.get("options", [])) for r in records}
        checks.check("client" in warm and "server" in warm, f"{name}: a client and an accepted socket ({sorted(warm)})")
        checks.check(not warm.get("server", True), f"{name}: no keep_warm on the accepted socket")
        if name == "bursty-wan.toml":
            checks.check(warm.get("client", False), f"{name}: keep_warm on the client connection (the bursty sender)")
    checks.finish()


if __name__ == "__main__":
    main()
