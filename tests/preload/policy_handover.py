"""A process loads the policy an earlier one compiled, rather than parse the TOML again.

The first process that loads the core with a policy writes its compiled snapshot to a directory of
the user's own; the next ones, children included, load it (their start record says
"policy_from": "snapshot"). A changed policy is parsed anew; a snapshot that was damaged, belongs
to another user, is a symbolic link or may be written by others is ignored with one line on
stderr, and the TOML is parsed; no descriptor of the shim's is left in the app; a child with no
TCPTUNE_* variable but the policy's (env -i) finds a store of its own; `tcptune run`'s children
load what its first process compiled."""
import argparse
import os
import shutil
import stat
import subprocess
import sys

from testlib import Checks, Listener, clean_env, records

PYTHON = "/usr/bin/python3"
POLICY = '''version = 1
[defaults]
nodelay = "on"
[[rule]]
match = { port = 6379 }
'''
# Opens one TCP connection, then prints where each of its descriptors leads.
APP = r'''
import os, socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
for fd in sorted(int(n) for n in os.listdir("/proc/self/fd")):
    try:
        print(fd, os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        pass
'''
# Opens one TCP connection, then runs APP as a child.
PARENT = r'''
import socket, subprocess, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
sys.exit(subprocess.run([sys.executable, "-c", sys.argv[2], sys.argv[1]]).returncode)
'''


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shim", required=True)
    parser.add_argument("--tcptune", required=True)
    parser.add_argument("--work-dir", required=True)
    args = parser.parse_args()
    shutil.rmtree(args.work_dir, ignore_errors=True)
    os.makedirs(args.work_dir)
    return args


class Case:
    def __init__(self, args, listener):
        self.args = args
        self.listener = listener
        self.cache = os.path.join(args.work_dir, "cache")
        self.policy = os.path.join(args.work_dir, "policy.toml")
        with open(self.policy, "w") as f:
            f.write(POLICY)
        self.count = 0

    def run(self, env=None, argv=None):
        """(start records, stderr, stdout) of APP under the shim with the policy file."""
        self.count += 1
        log = os.path.join(self.args.work_dir, f"run-{self.count}.jsonl")
        if env is None:
            env = clean_env(LD_PRELOAD=self.args.shim, TCPTUNE_POLICY=self.policy, TCPTUNE_POLICY_CACHE=self.cache)
        env = dict(env, TCPTUNE_LOG=log)
        argv = argv or [PYTHON, "-c", APP, str(self.listener.port)]
        result = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
        if result.returncode != 0:
            print(f"exit {result.returncode}: {result.stderr.strip()[-300:]}", flush=True)
        starts = [r for r in records(log) if r.get("event") == "start"]
        return starts, result.stderr, result.stdout


def first(starts):
    return starts[0] if starts else {}


def main():
    args = parse_args()
    checks = Checks()
    listener = Listener()
    case = Case(args, listener)
    try:
        starts, err, _ = case.run()
        start = first(starts)
        snapshot = start.get("policy_snapshot", "")
        checks.check(start.get("policy_from") == "toml" and snapshot.startswith(case.cache + "/") and err == "",
                     f"the first process parses the TOML and writes its snapshot ({start.get('policy_from')!r}, "
                     f"{snapshot!r}, stderr {err.strip()!r})")
        mode = os.stat(snapshot).st_mode if os.path.exists(snapshot) else 0
        dir_mode = os.stat(case.cache).st_mode if os.path.exists(case.cache) else 0
        checks.check(stat.S_IMODE(mode) == 0o600 and stat.S_IMODE(dir_mode) == 0o700,
                     f"the snapshot is 0600 ({oct(stat.S_IMODE(mode))}) in a 0700 directory ({oct(stat.S_IMODE(dir_mode))})")

        starts, err, out = case.run()
        start = first(starts)
        checks.check(start.get("policy_from") == "snapshot" and start.get("policy_snapshot") == snapshot and
                     start.get("policy") == case.policy and start.get("rules") == 1 and err == "",
                     f"the next process loads the snapshot: {start}")
        leaked = [line for line in out.splitlines() if case.cache in line or line.endswith(case.policy)]
        checks.check(out != "" and not leaked, f"no descriptor of the shim's left in the app ({leaked or out.split()})")

        # A child of a process under the shim.
        starts, err, _ = case.run(argv=[PYTHON, "-c", PARENT, str(listener.port), APP])
        froms = sorted(s.get("policy_from") for s in starts)
        checks.check(froms == ["snapshot", "snapshot"] and err == "",
                     f"parent and child both load the snapshot ({froms}, stderr {err.strip()!r})")

        # A changed policy: parsed anew, applied, and no line said.
        with open(case.policy, "a") as f:
            f.write('[[rule]]\nname = "web"\nmatch = { port = 80 }\nnodelay = "off"\n')
        starts, err, _ = case.run()
        start = first(starts)
        checks.check(start.get("policy_from") == "toml" and start.get("rules") == 2 and
                     start.get("policy_snapshot") != snapshot and err == "",
                     f"an edited policy file is parsed again, not taken from the old snapshot: {start}")
        snapshot = start.get("policy_snapshot", "")
        checks.check(first(case.run()[0]).get("policy_from") == "snapshot", "and its own snapshot serves the next one")

        # Damaged: one line, the TOML parsed, the snapshot written anew.
        with open(snapshot, "r+b") as f:
            f.seek(-1, os.SEEK_END)
            last = f.read(1)
            f.seek(-1, os.SEEK_END)
            f.write(bytes([last[0] ^ 0xFF]))
        starts, err, _ = case.run()
        expected = (f"tcptune: ignoring the compiled policy {snapshot}: its checksum does not match: changed or damaged "
                    f"since it was written; parsing {case.policy}\n")
        checks.check(first(starts).get("policy_from") == "toml" and err == expected,
                     f"a damaged snapshot is ignored with one line ({err!r}) and the TOML parsed")
        starts, err, _ = case.run()
        checks.check(first(starts).get("policy_from") == "snapshot" and err == "",
                     "the snapshot written in its place serves the next process")

        # A symbolic link in its place, to a good snapshot: not followed.
        elsewhere = os.path.join(args.work_dir, "elsewhere")
        shutil.copy(snapshot, elsewhere)
        os.unlink(snapshot)
        os.symlink(elsewhere, snapshot)
        starts, err, _ = case.run()
        checks.check(first(starts).get("policy_from") == "toml" and err.count("\n") == 1 and
                     f"{snapshot}: a symbolic link; parsing" in err,
                     f"a symbolic link is not followed ({err.strip()!r})")

        os.chmod(snapshot, 0o600)
        os.chmod(snapshot, 0o622)
        starts, err, _ = case.run()
        checks.check(first(starts).get("policy_from") == "toml" and "writable by others than its owner (mode 0622)" in err
                     and err.count("\n") == 1, f"a snapshot others may write is ignored ({err.strip()!r})")

        if os.geteuid() == 0:
            os.chown(snapshot, 65534, 65534)
            os.chmod(snapshot, 0o600)
            starts, err, _ = case.run()
            checks.check(first(starts).get("policy_from") == "toml" and err.count("\n") == 1 and
                         "owned by uid 65534, not by this user (uid 0)" in err,
                         f"a snapshot of another user is ignored ({err.strip()!r})")
            os.chown(case.cache, 65534, 65534)
            starts, err, _ = case.run()
            checks.check(first(starts).get("policy_from") == "toml" and err.count("\n") == 1 and
                         f"not using {case.cache} for compiled policies: owned by uid 65534" in err,
                         f"a directory of another user is not used ({err.strip()!r})")
            os.chown(case.cache, 0, 0)
        else:
            print("skipped: the snapshot and directory of another user (needs root)", flush=True)

        # Snapshots off: parsed, nothing said.
        starts, err, _ = case.run(env=clean_env(LD_PRELOAD=args.shim, TCPTUNE_POLICY=case.policy,
                                                TCPTUNE_POLICY_CACHE="off"))
        start = first(starts)
        checks.check(start.get("policy_from") == "toml" and "policy_snapshot" not in start and err == "",
                     f"TCPTUNE_POLICY_CACHE=off parses every time: {start}")

        # env -i: no XDG_RUNTIME_DIR, no TCPTUNE_POLICY_CACHE; a store of its own in TMPDIR (or /run/user/UID).
        tmp = os.path.join(args.work_dir, "tmp")
        os.makedirs(tmp)
        bare = {"LD_PRELOAD": args.shim, "TCPTUNE_POLICY": case.policy, "TMPDIR": tmp}
        runs = [case.run(env=bare) for _ in range(2)]
        where = [first(r[0]).get("policy_snapshot", "") for r in runs]
        homes = (f"/run/user/{os.geteuid()}/tcptune/", f"{tmp}/tcptune-{os.geteuid()}/")
        checks.check([first(r[0]).get("policy_from") for r in runs] == ["toml", "snapshot"] and
                     where[0] == where[1] and where[0].startswith(homes) and all(r[1] == "" for r in runs),
                     f"a child started with env -i finds its own store ({where})")
        if where[0].startswith("/run/user/"):
            os.unlink(where[0])

        # tcptune run: the program's child loads what the program compiled.
        log = os.path.join(args.work_dir, "run.jsonl")
        result = subprocess.run([args.tcptune, "run", "--quiet", "--policy", case.policy, "--log", log, "--",
                                 PYTHON, "-c", PARENT, str(listener.port), APP],
                                env=clean_env(TCPTUNE_SHIM=args.shim, TCPTUNE_POLICY_CACHE=os.path.join(args.work_dir, "run-cache")),
                                capture_output=True, text=True, timeout=60)
        froms = [r.get("policy_from") for r in records(log) if r.get("event") == "start"]
        checks.check(result.returncode == 0 and froms == ["toml", "snapshot"],
                     f"under tcptune run, the program parses and its child loads the snapshot ({froms}; exit "
                     f"{result.returncode}; {result.stderr.strip()[-200:]!r})")
    finally:
        listener.close()
    checks.finish()


if __name__ == "__main__":
    sys.exit(main())
