#!/usr/bin/env python3
"""A connected socket inherited across exec is not re-tuned under its other owner's data.

inherit_parent sends "<HEAD>" with MSG_MORE on a connection whose window a burst opened, then
runs `sleep 0.6` with the socket inherited, then sends "<BODY>". When the helper runs under the
shim (nodelay = "on", reno, a 10 ms newline heartbeat) it adopts the socket at start-up; it
must not set TCP_NODELAY (that pushes the parent's held bytes out) nor send heartbeats (they
land inside the parent's message). Judged from outside: the other end gets the message whole
with nothing inside, no byte of it within 150 ms of the MSG_MORE send (the kernel alone holds
it 200 ms), and the parent reads the TCP_NODELAY it had. Parents without and with the shim; the
controls run the helper without the shim.
"""
import os

from robustlib import Checks, clean_env, fresh, parse_args, program, records, require_keep_warm_host, run, write_policy


def parse(out):
    values = {}
    for line in out.splitlines():
        key, _, value = line.partition(" ")
        values[key] = value
    return values


def main():
    args = parse_args()
    require_keep_warm_host()
    checks = Checks()
    warm = write_policy(args, "keep-warm", '[defaults]\nnodelay = "on"\ncongestion = "reno"\n'
                                           'keep_warm = { heartbeat = "\\n", interval = "10ms" }\n')
    plain = write_policy(args, "nodelay-on", '[defaults]\nnodelay = "on"\ncongestion = "reno"\n')

    def run_parent(name, parent_policy, helper_preload, helper_policy):
        """parent_policy None: the parent runs without the shim."""
        log = fresh(os.path.join(args.work_dir, name + ".jsonl"))
        env = clean_env(TCPTUNE_POLICY=parent_policy or helper_policy, TCPTUNE_LOG=log, TCPTUNE_LOG_FORMAT="jsonl",
                        ROBUST_HELPER_PRELOAD=helper_preload, ROBUST_HELPER_POLICY=helper_policy)
        if parent_policy:
            env["LD_PRELOAD"] = args.shim
        done = run([program(args, "inherit_parent"), "--sleep", "0.6"], env, timeout=60)
        values = parse(done.stdout)
        checks.check(done.returncode == 0 and values.get("helper_status") == "0",
                     f"{name}: parent and helper ran ({done.stdout.strip()!r} {done.stderr.strip()[-300:]})")
        return values, records(log)

    def judge(name, values, early=True):
        checks.check(values.get("newlines_inside") == "0" and values.get("stream_ok") == "1",
                     f"{name}: the parent's message arrived whole, no heartbeat inside "
                     f"({values.get('newlines_inside')} newlines; after the burst: {values.get('after_burst')})")
        if early:
            checks.check(values.get("head_bytes_early") == "0",
                         f"{name}: the parent's MSG_MORE bytes were not pushed out while the helper ran "
                         f"({values.get('head_bytes_early')} bytes within 150 ms)")
        checks.check(values.get("nodelay_after") == values.get("nodelay_before"),
                     f"{name}: the parent reads the TCP_NODELAY it had after the helper exits "
                     f"({values.get('nodelay_before')} -> {values.get('nodelay_after')})")

    # Controls: the helper without the shim. The kernel holds the MSG_MORE bytes past 150 ms
    # with TCP_NODELAY off and on, so the early check fails only when something pushes them.
    values, _ = run_parent("control", None, "", warm)
    judge("control (no shim)", values)
    values, _ = run_parent("control-shim-parent", plain, "", warm)
    judge("control (parent under the shim, nodelay on; helper without it)", values)

    values, log = run_parent("plain-parent", None, args.shim, warm)
    adopted = [r for r in log if r.get("event") == "conn_open" and r.get("role") == "unknown"]
    # Informational: how the helper's shim treated the socket (adopting it is fine, re-tuning it is not).
    print(f"info: the helper logged {len(adopted)} conn_open record(s) for the inherited socket: "
          f"{[(r.get('phase'), r.get('options')) for r in adopted]}")
    judge("parent without the shim, helper with it", values)

    values, _ = run_parent("shim-parent", plain, args.shim, warm)
    judge("parent under the shim (nodelay on), helper with keep_warm", values)

    # One policy for both, keep_warm included. The parent's own heartbeats before the message
    # may draw an ACK that lets the kernel send the held bytes, so only the stream and
    # TCP_NODELAY are judged here.
    values, _ = run_parent("shim-parent-same-policy", warm, args.shim, warm)
    judge("parent and helper under the shim with the same keep_warm policy", values, early=False)
    checks.finish()


if __name__ == "__main__":
    main()
