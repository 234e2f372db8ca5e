#!/usr/bin/env python3
"""One tuner per process in a supervised run that preloads: a musl program (chain_probe built by
musl-gcc) is supervised by plain `tcptune run`, the shim stays in its inherited LD_PRELOAD, and the
glibc programs it starts are preloaded and under the inherited seccomp filter at once. The chain,
every link connecting to a loopback listener under a rule with nodelay = "force":

  musl (1 connection) -> runs glibc (2, and a forked child 1) -> which execs musl again (1)

  --case shim: the shim's core loads in the glibc process and its forked child and announces
    itself: each of their connections has exactly one conn_open, the shim's (no "supervised"),
    and each musl connection, the one before and the one after the exec (same pid), exactly one,
    the supervisor's. Every connection has TCP_NODELAY 1 from its own getsockopt. The glibc
    process's start record has "supervisor_defers", the supervisor_summary
    "processes_left_to_shim": 2.
  --case core_missing: the shim in LD_PRELOAD without its core beside it: the glibc processes
    run untuned by the shim (it says why), and the supervisor tunes every connection, once.
  --case hand_over: as shim, under container_profile (pidfd_getfd refused: the supervisor makes
    the TCP sockets of the processes it tunes, and leaves the preloaded ones' socket() alone).

Exits 77 without musl-gcc or seccomp user notification."""
import argparse
import collections
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "preload"))
from testlib import Checks, Listener, build_with_musl, clean_env, records, seccomp_listener_available, skip  # noqa: E402

RULE = "chain-rule"
BOUND_S = 60  # the whole chain; ctest's TIMEOUT bounds the test



def shim_without_core(shim, work_dir):
    """A copy of the first stage alone in a directory: its core cannot be loaded."""
    directory = os.path.join(work_dir, "no_core")
    os.makedirs(directory, exist_ok=True)
    copy = os.path.join(directory, "libtcptune.so")
    shutil.copyfile(shim, copy)
    return copy


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tcptune", required=True)
    parser.add_argument("--shim", required=True)
    parser.add_argument("--chain-source", required=True, help="chain_probe.c")
    parser.add_argument("--chain-glibc", required=True, help="chain_probe built against glibc")
    parser.add_argument("--container-profile", required=True)
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--case", required=True, choices=("shim", "core_missing", "hand_over"))
    args = parser.parse_args()
    if not seccomp_listener_available():
        skip("no seccomp user notification in this kernel or sandbox")
    args.work_dir = os.path.abspath(args.work_dir)
    os.makedirs(args.work_dir, exist_ok=True)
    musl_chain = build_with_musl(args.chain_source, os.path.join(args.work_dir, "chain_probe_musl"))
    checks = Checks()
    listener = Listener()
    try:
        port = str(listener.port)
        chain = [musl_chain, port, "1", "0", "run",
                 args.chain_glibc, port, "2", "1", "exec",
                 musl_chain, port, "1", "0"]
        # The chain alone first: every connection has Nagle on, so TCP_NODELAY 1 below is tuning.
        control = subprocess.run(chain, env=clean_env(), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                 timeout=BOUND_S)
        untuned = [json.loads(line) for line in control.stdout.splitlines() if line.startswith("{")]
        checks.check(control.returncode == 0 and len(untuned) == 5 and all(c["nodelay"] == 0 for c in untuned),
                     f"control: the chain alone makes 5 connections, TCP_NODELAY 0 ({control.returncode}, {untuned}, "
                     f"{control.stderr.strip()!r})")

        shim = shim_without_core(args.shim, args.work_dir) if args.case == "core_missing" else args.shim
        log = os.path.join(args.work_dir, "run.jsonl")
        if os.path.exists(log):
            os.unlink(log)
        policy = f'version = 1\n[[rule]]\nname = "{RULE}"\nmatch = {{ port = {port} }}\nnodelay = "force"\n'
        # The glibc process waits for its records before its exec (chain_probe.c says why).
        env = clean_env(TCPTUNE_POLICY_TOML=policy, LD_PRELOAD=shim, CHAIN_PROBE_LOG=log)
        command = [args.tcptune, "run", "--log", log, "--"] + chain
        if args.case == "hand_over":
            command = [args.container_profile] + command
        result = subprocess.run(command, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                timeout=BOUND_S)
        print(result.stderr.rstrip(), flush=True)
        if args.case == "hand_over" and result.returncode == 77:
            skip("the kernel refuses container_profile's filter")
        made = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
        checks.check(result.returncode == 0 and len(made) == 5,
                     f"the chain ran under tcptune run: 5 connections ({result.returncode}, {len(made)})")
        checks.check(f"tuning {musl_chain} from outside: supervised mode" in result.stderr,
                     "plain tcptune run chose supervised mode for the musl program")
        if args.case == "hand_over":
            checks.check("pidfd_getfd is refused here" in result.stderr,
                         "under container_profile the sockets are handed over")
        kinds = collections.Counter((c["libc"], c["forked"]) for c in made)
        checks.check(kinds == {("musl", 0): 2, ("glibc", 0): 2, ("glibc", 1): 1},
                     f"two musl connections, two of the glibc process and one of its forked child ({dict(kinds)})")
        pids = {c["pid"] for c in made if c["libc"] == "glibc" and not c["forked"]}
        checks.check(len(pids) == 1 and pids == {c["pid"] for c in made if c["libc"] == "musl"} - {made[0]["pid"]},
                     "the glibc process execs the second musl program in place (one pid)")
        for c in made:
            checks.check(c["nodelay"] == 1, f"{c['libc']} pid {c['pid']} fd {c['fd']}: tuned, TCP_NODELAY 1 ({c})")

        entries = records(log)
        opens = [r for r in entries if r.get("event") == "conn_open" and r.get("rule") == RULE]
        # Who tunes each connection: the supervisor a musl one (and, without the core, a glibc one),
        # the shim a glibc one. A process's connections are all open at once, so (pid, fd, tuner)
        # names one connection, even across the exec.
        shim_tunes_glibc = args.case != "core_missing"
        expected = collections.Counter(
            (c["pid"], c["fd"], "shim" if c["libc"] == "glibc" and shim_tunes_glibc else "supervisor") for c in made)
        got = collections.Counter((r.get("pid"), r.get("fd"), "supervisor" if r.get("supervised") else "shim")
                                  for r in opens)
        checks.check(got == expected, f"exactly one conn_open per connection, by its one tuner "
                                      f"(expected {sorted(expected.items())}, got {sorted(got.items())})")
        checks.check(len(opens) == len(made), f"as many conn_open records as connections ({len(opens)}, {len(made)})")
        effective = {o.get("effective") for r in opens for o in r.get("options", []) if o.get("name") == "nodelay"}
        checks.check(effective == {"1"}, f"every conn_open has nodelay effective 1 ({effective})")

        glibc_pid = next(iter(pids)) if pids else None
        starts = [r for r in entries if r.get("event") == "start" and r.get("pid") == glibc_pid
                  and r.get("mode") != "supervised"]
        summaries = [r for r in entries if r.get("event") == "supervisor_summary"]
        left = summaries[0].get("processes_left_to_shim") if len(summaries) == 1 else "no single summary"
        if args.case == "core_missing":
            checks.check("cannot load the tuning core" in result.stderr,
                         "without its core the shim says so, once per glibc process")
            checks.check(starts == [] and left is None,
                         f"no shim start record, nothing left to the shim ({starts}, {left})")
        else:
            checks.check(len(starts) == 1 and starts[0].get("supervisor_defers") is True,
                         f"the glibc process's start record: supervisor_defers ({starts})")
            checks.check(left == 2, f"supervisor_summary: processes_left_to_shim 2, the glibc process and its "
                                    f"forked child ({left})")
    finally:
        listener.close()
    checks.finish()


if __name__ == "__main__":
    main()
