#!/usr/bin/env python3
"""tcptune alone in an image without glibc: a chroot holding only the tcptune binary and a static
program (option_probe_static), with /proc mounted in a private mount namespace (unshare -m) and
nothing else: no /etc, /lib, /usr, /dev or /tmp. `tcptune --version` runs there, and
`tcptune run --supervise --log /tcptune.jsonl -- /option_probe_static client ...` connects to a
loopback listener with TCP_NODELAY set by the supervisor (the same program alone in the chroot
has it off), records the connection under the policy's rule, and leaves no file but its log.

Also checked: the binary has no program interpreter and no NSS code (glibc's NSS brings
"/etc/nsswitch.conf" and "libnss_" with it; the link fails on its warning anyway), and, where
strace is installed, that tcptune opens nothing in the chroot but its own files, /proc, and two
files it looks for and does without (/etc/tcptune/policy.toml, /etc/localtime).
Root only (chroot, mount); exits 77 otherwise."""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "preload"))
from testlib import Checks, Listener, clean_env, records, seccomp_listener_available, skip  # noqa: E402

RULE = "chroot-rule"
BOUND_S = 30  # any single command; ctest's TIMEOUT bounds the whole test
LOG = "/tcptune.jsonl"
# Files tcptune looks for and runs without: the system policy, the time zone (UTC without it).
OPTIONAL_LOOKUPS = {"/etc/tcptune/policy.toml", "/etc/localtime"}
FILE_CALL = re.compile(r'^\d+\s+(?:<\.\.\. )?(\w+)\((?:[^"]*?)"((?:[^"\\]|\\.)*)"')


def has_interpreter(data):
    """Whether an ELF64 little-endian image has a PT_INTERP program header."""
    phoff = int.from_bytes(data[0x20:0x28], "little")
    phentsize = int.from_bytes(data[0x36:0x38], "little")
    phnum = int.from_bytes(data[0x38:0x3a], "little")
    return any(int.from_bytes(data[phoff + i * phentsize:phoff + i * phentsize + 4], "little") == 3
               for i in range(phnum))


def in_chroot(root, command, env, with_proc, trace=None):
    """`command` run by chroot(8) in `root`, in a mount namespace of its own where /proc is
    mounted (and unmounted after) when `with_proc`: the mount never shows outside, even if the
    test is killed. `trace`: a file for strace's record of the file calls, through the chroot."""
    inner = ["chroot", root] + command
    if trace:
        inner = ["strace", "-f", "-qq", "-s", "256", "-e", "trace=%file", "-o", trace] + inner
    script = 'mount -t proc proc "$1/proc" || exit 90; shift; "$@"; s=$?; umount "$ROOT/proc"; exit $s'
    if not with_proc:
        script = 'shift; exec "$@"'
    argv = ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", root] + inner
    return subprocess.run(argv, env=dict(env, ROOT=root), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=BOUND_S)


def probe_line(stdout):
    for line in stdout.splitlines():
        if line.startswith("{"):
            return json.loads(line)
    return {}


def paths_opened_after_exec(trace, program):
    """Every path a file system call named after `program` was exec'd, from strace's output."""
    paths = set()
    started = False
    with open(trace, encoding="utf-8", errors="replace") as f:
        for line in f:
            match = FILE_CALL.match(line)
            if not match:
                continue
            call, path = match.groups()
            if call == "execve" and path == program:
                started = True
            if started and path:
                paths.add(path)
    return paths


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tcptune", required=True)
    parser.add_argument("--probe", required=True, help="option_probe_static")
    parser.add_argument("--work-dir", required=True)
    args = parser.parse_args()
    if os.geteuid() != 0:
        skip("chroot and mount need root")
    for tool in ("unshare", "chroot", "mount", "umount"):
        if shutil.which(tool) is None:
            skip(f"{tool} is not installed")
    if not seccomp_listener_available():
        skip("no seccomp in this kernel or sandbox")
    checks = Checks()

    with open(args.tcptune, "rb") as f:
        binary = f.read()
    checks.check(binary[:6] == b"\x7fELF\x02\x01" and not has_interpreter(binary),
                 f"{args.tcptune} has no program interpreter: statically linked")
    nss = [marker for marker in (b"nsswitch.conf", b"libnss_") if marker in binary]
    checks.check(not nss, f"no NSS code linked in (markers found: {nss})")
    if shutil.which("file"):
        described = subprocess.run(["file", "-b", args.tcptune], capture_output=True, text=True, timeout=BOUND_S)
        checks.check("static" in described.stdout, f"file(1): {described.stdout.strip()[:90]}")

    root = os.path.join(os.path.abspath(args.work_dir), "root")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(os.path.join(root, "proc"))
    shutil.copy2(args.tcptune, os.path.join(root, "tcptune"))
    probe = "/" + os.path.basename(args.probe)
    shutil.copy2(args.probe, root + probe)
    shipped = sorted(os.listdir(root))
    print(f"chroot {root}: {shipped} (proc: an empty mount point)", flush=True)

    version = in_chroot(root, ["/tcptune", "--version"], clean_env(), with_proc=False)
    checks.check(version.returncode == 0 and version.stdout.startswith("tcptune "),
                 f"tcptune --version in the chroot, without /proc: {version.returncode} "
                 f"{(version.stdout + version.stderr).strip()!r}")

    listener = Listener()
    try:
        client = [probe, "client", "127.0.0.1", str(listener.port), "10"]
        control = in_chroot(root, client, clean_env(), with_proc=False)
        got = probe_line(control.stdout)
        checks.check(control.returncode == 0 and got.get("nodelay") == 0,
                     f"control, the program alone: TCP_NODELAY off ({control.returncode}, {got.get('nodelay')}, "
                     f"{control.stderr.strip()!r})")

        # The policy in the environment: the chroot holds no policy file either.
        policy = (f'version = 1\n[[rule]]\nname = "{RULE}"\nmatch = {{ port = {listener.port} }}\n'
                  'nodelay = "force"\n')
        env = clean_env(TCPTUNE_POLICY_TOML=policy)
        command = ["/tcptune", "run", "--supervise", "--log", LOG, "--"] + client
        tuned = in_chroot(root, command, env, with_proc=True)
        got = probe_line(tuned.stdout)
        print(tuned.stderr.rstrip(), flush=True)
        checks.check(tuned.returncode == 0, f"tcptune run --supervise in the chroot exits 0 ({tuned.returncode})")
        checks.check(got.get("nodelay") == 1, f"supervised: TCP_NODELAY set from outside ({got.get('nodelay')})")
        checks.check("supervised mode" in tuned.stderr, "tcptune says it tunes from outside")
        checks.check(os.listdir(os.path.join(root, "proc")) == [], "/proc is not left mounted in the chroot")

        log = records(root + LOG)
        start = [r for r in log if r.get("event") == "start"]
        opened = [r for r in log if r.get("event") == "conn_open"]
        summary = [r for r in log if r.get("event") == "supervisor_summary"]
        checks.check(len(start) == 1 and start[0].get("mode") == "supervised",
                     f"the log starts in supervised mode ({start})")
        nodelay = [o for r in opened for o in r.get("options", []) if o.get("name") == "nodelay"]
        checks.check(len(opened) == 1 and opened[0].get("rule") == RULE and opened[0].get("supervised") is True
                     and nodelay == [{"name": "nodelay", "requested": "force", "effective": "1"}],
                     f"conn_open under {RULE} with nodelay force, effective 1 ({opened})")
        checks.check(len(summary) == 1 and summary[0].get("sockets_tuned") == 1,
                     f"supervisor_summary: one socket tuned ({summary})")
        left = sorted(set(os.listdir(root)) - set(shipped))
        checks.check(left == [LOG.lstrip("/")], f"nothing created in the chroot but the log ({left})")

        if shutil.which("strace") is None:
            print("strace is not installed: what tcptune opens in the chroot is not audited", flush=True)
        else:
            trace = os.path.join(os.path.abspath(args.work_dir), "strace.txt")
            traced = in_chroot(root, command, env, with_proc=True, trace=trace)
            checks.check(traced.returncode == 0 and probe_line(traced.stdout).get("nodelay") == 1,
                         f"under strace too: exit 0, TCP_NODELAY 1 ({traced.returncode}, {traced.stderr.strip()[-200:]!r})")
            paths = paths_opened_after_exec(trace, "/tcptune")
            mine = {"/tcptune", probe, LOG}
            outside = sorted(p for p in paths
                             if p not in mine and p not in OPTIONAL_LOOKUPS and not p.startswith("/proc/"))
            checks.check(bool(paths) and not outside,
                         f"tcptune opens only its files, /proc and {sorted(OPTIONAL_LOOKUPS)} "
                         f"({len(paths)} paths; others: {outside})")
    finally:
        listener.close()
    checks.finish()


if __name__ == "__main__":
    main()
