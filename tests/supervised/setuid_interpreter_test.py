#!/usr/bin/env python3
"""Setuid programs reached in ways other than their path, run by nobody under `tcptune run
--supervise` when tcptune lacks CAP_SYS_ADMIN (so no_new_privs is set): the kernel would give the
program its owner's ids, no_new_privs takes them away, and, as for a setuid program run by its
path, one line must name what runs without its privileges (root only; exits 77 otherwise).
  interpreter  a script whose #! interpreter is the setuid program
  proc_fd      the setuid program opened on descriptor 7 and run as /proc/self/fd/7 (what
               fexecve does where execveat is missing; /dev/fd/7 is the same)

A control run without tcptune shows the interpreter gets euid 0 here."""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "preload"))
from testlib import SKIP, Checks, clean_env, seccomp_listener_available  # noqa: E402

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
WITHOUT_SYS_ADMIN = ["setpriv", "--inh-caps=-sys_admin", "--bounding-set=-sys_admin", "--"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tcptune", required=True)
    p.add_argument("--print-ids", required=True)
    p.add_argument("--case", required=True, choices=("interpreter", "proc_fd"))
    args = p.parse_args()
    if os.geteuid() != 0 or shutil.which("setpriv") is None or not seccomp_listener_available():
        print("skipped: needs root, setpriv and seccomp user notification", flush=True)
        sys.exit(SKIP)
    checks = Checks()
    shared = tempfile.mkdtemp(prefix="tcptune-setuid-interp-")
    try:
        os.chmod(shared, 0o755)
        interpreter = os.path.join(shared, "ids_interpreter")
        shutil.copy(args.print_ids, interpreter)
        os.chown(interpreter, 0, 0)
        os.chmod(interpreter, 0o4755)
        script = os.path.join(shared, "script")
        with open(script, "w", encoding="ascii") as f:
            f.write(f"#!{interpreter}\n")
        os.chmod(script, 0o755)

        def run(argv):
            done = subprocess.run(argv, env=clean_env(), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                  timeout=20, check=False)
            print(f"$ {' '.join(argv)}\n-> {done.returncode}\nstdout: {done.stdout}stderr: {done.stderr}", flush=True)
            return done

        if args.case == "interpreter":
            target = [script]
        else:
            target = ["/bin/sh", "-c", f"exec 7<{interpreter}; exec /proc/self/fd/7"]
        control = run(NOBODY + target)
        if "euid=0" not in control.stdout:
            print("skipped: the setuid bit does not work here (a nosuid mount?)", flush=True)
            sys.exit(SKIP)
        done = run(WITHOUT_SYS_ADMIN + [args.tcptune, "run", "--supervise", "--no-log", "-q", "--", "/bin/sh", "-c",
                                        'exec "$@"', "sh"] + NOBODY + target)
        stripped = "euid=65534" in done.stdout
        named = [line for line in done.stderr.splitlines()
                 if "setuid" in line and any(name in line for name in (interpreter, script, "/proc/self/fd/7"))]
        checks.check(not stripped or len(named) == 1,
                     f"{args.case}: the setuid program runs without its privileges ({done.stdout.strip()}): "
                     f"one line names it ({named})")
    finally:
        shutil.rmtree(shared, ignore_errors=True)
    checks.finish()


main()
