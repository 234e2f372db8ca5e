#!/usr/bin/env python3
"""A program linked against musl (option_probe.c built by Debian's musl-tools, `musl-gcc`: its
program interpreter is /lib/ld-musl-x86_64.so.1), where the shim's tuning core, built for
glibc, never runs. Each case connects to a loopback listener under a rule with nodelay = "force";
the same program alone has TCP_NODELAY off.

  --case run: plain `tcptune run` (no --supervise) picks supervised mode, says why in one line
    naming musl and the interpreter, and tunes it (the probe's own getsockopt, the log's
    conn_open); with the shim in an inherited LD_PRELOAD (a container's environment) the shim
    stays (harmless under musl: preload.musl_program), nothing is said of it, and the program
    runs tuned from outside.
  --case entrypoint: examples/container-entrypoint.sh with tcptune and the shim copied in gives
    the musl program supervision (and says why) and a glibc program (option_probe_dynamic) the
    shim, without supervision; with tcptune alone (no shim in the image) it supervises both.

Exits 77 without musl-gcc or seccomp."""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "preload"))
from testlib import Checks, Listener, build_with_musl, clean_env, records, seccomp_listener_available, skip  # noqa: E402

RULE = "musl-rule"
BOUND_S = 30  # any single command; ctest's TIMEOUT bounds the whole test


def interpreter(path):
    """The PT_INTERP path of an ELF64 little-endian file, or None."""
    with open(path, "rb") as f:
        data = f.read(1 << 16)
    phoff = int.from_bytes(data[0x20:0x28], "little")
    phentsize = int.from_bytes(data[0x36:0x38], "little")
    for i in range(int.from_bytes(data[0x38:0x3a], "little")):
        entry = data[phoff + i * phentsize:phoff + (i + 1) * phentsize]
        if int.from_bytes(entry[0:4], "little") == 3:
            offset = int.from_bytes(entry[8:16], "little")
            size = int.from_bytes(entry[32:40], "little")
            return data[offset:offset + size].rstrip(b"\0").decode()
    return None



def run(argv, env):
    result = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=BOUND_S)
    got = {}
    for line in result.stdout.splitlines():
        if line.startswith("{"):
            got = json.loads(line)
    return result, got


def tuned_records(log):
    """The nodelay options of the conn_open records under RULE, and the start records' modes."""
    entries = records(log)
    options = [o for r in entries if r.get("event") == "conn_open" and r.get("rule") == RULE
               for o in r.get("options", []) if o.get("name") == "nodelay"]
    modes = [r.get("mode") for r in entries if r.get("event") == "start"]
    return options, modes


def case_run(args, checks, musl_probe, client_args, policy_env):
    musl_line = f"{musl_probe} is linked against musl (program interpreter {interpreter(musl_probe)})"
    for label, extra in (("plain", {}), ("shim in LD_PRELOAD", {"LD_PRELOAD": f"/lib/other.so:{args.shim}"})):
        log = os.path.join(args.work_dir, f"run-{len(extra)}.jsonl")
        if os.path.exists(log):
            os.unlink(log)
        result, got = run([args.tcptune, "run", "--log", log, "--", musl_probe] + client_args,
                          clean_env(**policy_env, **extra))
        print(result.stderr.rstrip(), flush=True)
        checks.check(result.returncode == 0 and got.get("nodelay") == 1,
                     f"{label}: tuned from outside, TCP_NODELAY 1 ({result.returncode}, {got.get('nodelay')})")
        lines = result.stderr.splitlines()
        checks.check(sum(musl_line in line for line in lines) == 1,
                     f"{label}: one line says why: '{musl_line}...'")
        checks.check(f"tuning {musl_probe} from outside: supervised mode" in result.stderr
                     and "--supervise" not in result.stderr, f"{label}: supervised mode chosen, not asked for")
        options, modes = tuned_records(log)
        checks.check(modes == ["supervised"] and options == [{"name": "nodelay", "requested": "force",
                                                              "effective": "1"}],
                     f"{label}: the log has the connection under {RULE}, effective 1 ({modes}, {options})")
        checks.check("LD_PRELOAD" not in result.stderr, f"{label}: LD_PRELOAD left as it is, and nothing said of it")


def case_entrypoint(args, checks, musl_probe, client_args, policy_file):
    empty = os.path.join(args.work_dir, "empty")
    os.makedirs(empty, exist_ok=True)
    missing_shim = os.path.join(empty, "libtcptune.so")
    for label, shim in (("tcptune and the shim", args.shim), ("tcptune alone", missing_shim)):
        env = clean_env(TCPTUNE_BIN=args.tcptune, TCPTUNE_SHIM=shim, TCPTUNE_POLICY=policy_file)
        result, got = run([args.entrypoint, musl_probe] + client_args, env)
        print(result.stderr.rstrip(), flush=True)
        checks.check(result.returncode == 0 and got.get("nodelay") == 1,
                     f"{label}, musl: tuned, TCP_NODELAY 1 ({result.returncode}, {got.get('nodelay')})")
        checks.check(f"{musl_probe} is linked against musl" in result.stderr and "supervised mode" in result.stderr,
                     f"{label}, musl: supervised, and says why")
        result, got = run([args.entrypoint, args.probe_dynamic] + client_args, env)
        print(result.stderr.rstrip(), flush=True)
        checks.check(result.returncode == 0 and got.get("nodelay") == 1,
                     f"{label}, glibc: tuned, TCP_NODELAY 1 ({result.returncode}, {got.get('nodelay')})")
        supervised = "supervised mode" in result.stderr
        checks.check(supervised == (shim == missing_shim),
                     f"{label}, glibc: {'supervised (no shim to preload)' if shim == missing_shim else 'the shim'}"
                     f" ({result.stderr.strip()!r})")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tcptune", required=True)
    parser.add_argument("--shim", required=True)
    parser.add_argument("--probe-source", required=True, help="option_probe.c")
    parser.add_argument("--probe-dynamic", required=True, help="option_probe_dynamic (glibc)")
    parser.add_argument("--entrypoint", required=True)
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--case", required=True, choices=("run", "entrypoint"))
    args = parser.parse_args()
    if not seccomp_listener_available():
        skip("no seccomp in this kernel or sandbox")
    args.work_dir = os.path.abspath(args.work_dir)
    os.makedirs(args.work_dir, exist_ok=True)
    musl_probe = build_with_musl(args.probe_source, os.path.join(args.work_dir, "option_probe_musl"))
    checks = Checks()
    loader = interpreter(musl_probe)
    checks.check(loader is not None and os.path.basename(loader).startswith("ld-musl-"),
                 f"musl-gcc gives a program interpreted by musl's loader ({loader})")
    listener = Listener()
    try:
        client_args = ["client", "127.0.0.1", str(listener.port), "10"]
        control, got = run([musl_probe] + client_args, clean_env())
        checks.check(control.returncode == 0 and got.get("nodelay") == 0,
                     f"control, the musl program alone: TCP_NODELAY off ({control.returncode}, {got.get('nodelay')}, "
                     f"{control.stderr.strip()!r})")
        policy = (f'version = 1\n[[rule]]\nname = "{RULE}"\nmatch = {{ port = {listener.port} }}\n'
                  'nodelay = "force"\n')
        if args.case == "run":
            case_run(args, checks, musl_probe, client_args, {"TCPTUNE_POLICY_TOML": policy})
        else:
            policy_file = os.path.join(args.work_dir, "policy.toml")
            with open(policy_file, "w", encoding="utf-8") as f:
                f.write(policy)
            case_entrypoint(args, checks, musl_probe, client_args, policy_file)
    finally:
        listener.close()
    checks.finish()


if __name__ == "__main__":
    main()
