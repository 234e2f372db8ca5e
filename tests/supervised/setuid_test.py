#!/usr/bin/env python3
"""Setuid programs under supervision (root only; exits 77 otherwise).

setuid_probe (static) is copied setuid root into a fresh 0755 directory; it prints its ids and
the TCP_NODELAY of a loopback connection (1 when tuned by the policy, 0 untuned). A supervised
shell drops to nobody with setpriv and runs it, as a program that runs sudo or ping would:

  kept           tcptune as root (CAP_SYS_ADMIN): no no_new_privs, the probe's euid is 0 as
                 without tcptune, and its connect, made after the setuid exec, is tuned.
  program_itself plain `tcptune run`, as root, of a copy setuid to nobody: supervised (the
                 loader would ignore LD_PRELOAD, and supervision keeps its ids), tuned.
  stripped       tcptune as root without CAP_SYS_ADMIN (setpriv --bounding-set=-sys_admin):
                 one line at start says no_new_privs is set; the probe runs twice with euid
                 65534 and one line names it (once); /bin/true is not named; the run exits 0.
  stripped_kinds the same for a setgid copy run by a path relative to the working directory,
                 and a copy with file capabilities (setcap cap_net_raw+ep) run by fexecve
                 (execveat of a descriptor): each named once, by what it would gain.
  already_set    no_new_privs set before tcptune (setpriv --no-new-privs): the probe runs
                 stripped as without tcptune, and tcptune, which takes nothing away, says nothing.
  refused        tcptune as nobody, `run --supervise` of the setuid probe itself: refused with
                 its reason, the probe runs untuned with its privileges.
  no_ptrace      tcptune as root without CAP_SYS_PTRACE: the setuid probe keeps euid 0, but
                 tcptune may not inspect it (not dumpable, other uid): its connect goes on
                 untuned and one line says so; the run exits 0.

A control run without tcptune first shows the setuid bit works there (euid 0 as nobody) and
the connection is untuned (nodelay 0)."""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "preload"))
from testlib import SKIP, Checks, clean_env, records, seccomp_listener_available  # noqa: E402

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
BOUND_S = 20
CAP_SYS_ADMIN = 21
CAP_SYS_PTRACE = 19


def skip(why):
    print(f"skipped: {why}", flush=True)
    sys.exit(SKIP)


def has_capability(number):
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("CapEff:"):
                return (int(line.split()[1], 16) >> number) & 1 == 1
    return False


def probe_lines(stdout):
    """The probe's JSON lines."""
    out = []
    for line in stdout.splitlines():
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tcptune", required=True)
    parser.add_argument("--probe", required=True)
    parser.add_argument("--case", required=True,
                        choices=("kept", "program_itself", "stripped", "stripped_kinds", "already_set", "refused",
                                 "no_ptrace"))
    args = parser.parse_args()
    if os.geteuid() != 0:
        skip("needs root (a setuid-root copy of the probe, and setpriv)")
    if shutil.which("setpriv") is None:
        skip("setpriv missing")
    if not seccomp_listener_available():
        skip("this kernel has no seccomp")
    if args.case in ("kept", "program_itself", "no_ptrace") and not has_capability(CAP_SYS_ADMIN):
        skip("this root has no CAP_SYS_ADMIN (a container?)")

    checks = Checks()
    private = tempfile.mkdtemp(prefix="tcptune-setuid-")  # 0700: the policy and the log
    shared = tempfile.mkdtemp(prefix="tcptune-setuid-bin-")
    listener = socket.socket()
    try:
        os.chmod(shared, 0o755)  # nobody may run the probe, and nothing else is here
        probe = os.path.join(shared, "setuid_probe")
        shutil.copy(args.probe, probe)
        os.chown(probe, 0, 0)
        os.chmod(probe, 0o4755)
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        port = str(listener.getsockname()[1])
        policy = os.path.join(private, "policy.toml")
        with open(policy, "w", encoding="utf-8") as f:
            f.write('version = 1\n[defaults]\nnodelay = "keep"\n'
                    '[[rule]]\nname = "setuid-probe"\nmatch = { program = "*_probe" }\nnodelay = "on"\n')
        log = os.path.join(private, "log.jsonl")
        env = clean_env()

        def run(argv):
            done = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                  timeout=BOUND_S)
            print(f"$ {' '.join(argv)}\n-> {done.returncode}\nstdout: {done.stdout}stderr: {done.stderr}", flush=True)
            return done

        control = run(NOBODY + [probe, port])
        seen = probe_lines(control.stdout)
        if control.returncode != 0 or not seen or seen[0]["euid"] != 0:
            skip(f"the setuid bit does not work here (a nosuid mount?): {control.stdout!r} {control.stderr!r}")
        checks.check(seen[0] == {"ruid": 65534, "euid": 0, "nodelay": 0},
                     f"control, without tcptune: euid 0 as nobody, nodelay 0 ({seen[0]})")

        tcptune = [args.tcptune, "run", "--supervise", "--policy", policy, "--log", log, "-q", "--"]
        through_nobody = ["/bin/sh", "-c", 'exec "$@"', "sh"] + NOBODY + [probe, port]
        nnp_line = "no_new_privs is set"

        if args.case == "kept":
            done = run(tcptune + through_nobody)
            seen = probe_lines(done.stdout)
            checks.check(done.returncode == 0 and seen == [{"ruid": 65534, "euid": 0, "nodelay": 1}],
                         f"the setuid probe run by nobody keeps euid 0 and is tuned after its exec ({seen})")
            checks.check(nnp_line not in done.stderr, "no no_new_privs line")
            start = [r for r in records(log) if r.get("event") == "start"]
            checks.check(start and start[0].get("no_new_privs") is False,
                         f"the start record says no_new_privs false ({start})")
            tuned = [r for r in records(log) if r.get("event") == "conn_open" and r.get("program") == "setuid_probe"]
            checks.check(len(tuned) == 1 and tuned[0].get("rule") == "setuid-probe",
                         f"its connection is logged under the rule for *_probe ({tuned})")
        elif args.case == "program_itself":
            # Setuid to nobody, run by root: a change of ids (secure execution), as a setuid-root
            # program run by a user is.
            to_nobody = os.path.join(shared, "setuid_nobody_probe")
            shutil.copy(args.probe, to_nobody)
            os.chown(to_nobody, 65534, 65534)
            os.chmod(to_nobody, 0o4755)
            done = run([args.tcptune, "run", "--policy", policy, "--log", log, "-q", "--", to_nobody, port])
            seen = probe_lines(done.stdout)
            checks.check("is setuid" in done.stderr and "supervised mode" in done.stderr
                         and "not supervised" not in done.stderr, "plain tcptune run supervises the setuid program")
            checks.check(done.returncode == 0 and seen == [{"ruid": 0, "euid": 65534, "nodelay": 1}],
                         f"it runs with its ids and is tuned ({seen})")
        elif args.case == "stripped":
            without_sys_admin = ["setpriv", "--inh-caps=-sys_admin", "--bounding-set=-sys_admin", "--"]
            twice = ["/bin/sh", "-c", '"$@"; /bin/true; "$@"', "sh"] + NOBODY + [probe, port]
            done = run(without_sys_admin + tcptune + twice)
            seen = probe_lines(done.stdout)
            said = done.stderr.splitlines()
            checks.check(done.returncode == 0 and seen == [{"ruid": 65534, "euid": 65534, "nodelay": 1}] * 2,
                         f"the probe runs, twice, tuned, without its privileges ({seen})")
            at_start = [i for i, line in enumerate(said) if nnp_line in line]
            named = [line for line in said if probe in line]
            checks.check(len(at_start) == 1 and named and said.index(named[0]) > at_start[0],
                         f"one line, before any program is named, says no_new_privs is set ({at_start})")
            checks.check(len(named) == 1 and "setuid (owner uid 0)" in named[0] and "no_new_privs" in named[0],
                         f"one line names the setuid probe, once ({named})")
            checks.check(not any("/bin/true" in line for line in said), "an ordinary program is not named")
            warnings = [r for r in records(log) if r.get("event") == "supervisor_warning"]
            checks.check(len(warnings) == 1 and probe in warnings[0].get("message", ""),
                         f"the log has the same warning ({warnings})")
        elif args.case == "stripped_kinds":
            # setgid, run by a path relative to the working directory; file capabilities, run by
            # fexecve (execveat of a descriptor).
            setgid_probe = os.path.join(shared, "setgid_probe")
            caps_probe = os.path.join(shared, "caps_probe")
            for copy in (setgid_probe, caps_probe):
                shutil.copy(args.probe, copy)
                os.chown(copy, 0, 0)
            os.chmod(setgid_probe, 0o2755)
            os.chmod(caps_probe, 0o755)
            if shutil.which("setcap") is None or subprocess.run(["setcap", "cap_net_raw+ep", caps_probe]).returncode:
                skip("setcap missing or refused here")
            fexecve = "import os, sys; os.execve(os.open(sys.argv[1], os.O_RDONLY), sys.argv[1:], {})"
            nobody = " ".join(NOBODY)
            script = f'cd "$1" && {nobody} ./setgid_probe "$2"; {nobody} /usr/bin/python3 -c "$3" "$4" "$2"'
            without_sys_admin = ["setpriv", "--inh-caps=-sys_admin", "--bounding-set=-sys_admin", "--"]
            done = run(without_sys_admin + tcptune + ["/bin/sh", "-c", script, "sh", shared, port, fexecve, caps_probe])
            seen = probe_lines(done.stdout)
            checks.check(done.returncode == 0 and seen == [{"ruid": 65534, "euid": 65534, "nodelay": 1}] * 2,
                         f"both probes run, tuned ({seen})")
            said = done.stderr.splitlines()
            named_setgid = [line for line in said if "./setgid_probe is setgid (group gid 0)" in line]
            named_caps = [line for line in said if f"{caps_probe} has file capabilities" in line]
            checks.check(len(named_setgid) == 1, f"one line names the setgid probe by its relative path ({said})")
            checks.check(len(named_caps) == 1, f"one line names the file-capability probe run by fexecve ({said})")
        elif args.case == "already_set":
            done = run(["setpriv", "--no-new-privs", "--"] + tcptune + through_nobody)
            seen = probe_lines(done.stdout)
            checks.check(done.returncode == 0 and seen == [{"ruid": 65534, "euid": 65534, "nodelay": 1}],
                         f"under no_new_privs set before tcptune the probe runs stripped, tuned ({seen})")
            checks.check(nnp_line not in done.stderr and probe not in done.stderr,
                         "tcptune, which takes nothing away, says nothing of it")
        elif args.case == "refused":
            done = run(NOBODY + [args.tcptune, "run", "--supervise", "--no-log", "-q", "--", probe, port])
            seen = probe_lines(done.stdout)
            checks.check("setuid" in done.stderr and "strip its privileges" in done.stderr
                         and "CAP_SYS_ADMIN" in done.stderr, "the refusal gives its reason")
            checks.check(done.returncode == 0 and seen == [{"ruid": 65534, "euid": 0, "nodelay": 0}],
                         f"the probe runs untuned with its privileges ({seen})")
        elif args.case == "no_ptrace":
            without_sys_ptrace = ["setpriv", "--inh-caps=-sys_ptrace", "--bounding-set=-sys_ptrace", "--"]
            done = run(without_sys_ptrace + tcptune + through_nobody)
            seen = probe_lines(done.stdout)
            checks.check(done.returncode == 0 and seen == [{"ruid": 65534, "euid": 0, "nodelay": 0}],
                         f"the probe keeps euid 0 and runs, untuned ({seen})")
            checks.check("may not be inspected" in done.stderr, "one line says it could not be inspected")
        checks.finish()
    finally:
        listener.close()
        shutil.rmtree(shared, ignore_errors=True)
        shutil.rmtree(private, ignore_errors=True)


if __name__ == "__main__":
    main()
