#!/usr/bin/env python3
"""A script whose #! interpreter is setuid root, run by nobody under `tcptune run --supervise`
when tcptune lacks CAP_SYS_ADMIN (so no_new_privs is set): the kernel would give the interpreter
its owner's ids, no_new_privs takes them away, and, as for a setuid program run directly, one
line must name what runs without its privileges (root only; exits 77 otherwise).

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

        control = run(NOBODY + [script])
        if "euid=0" not in control.stdout:
            print("skipped: the setuid bit does not work here (a nosuid mount?)", flush=True)
            sys.exit(SKIP)
        done = run(WITHOUT_SYS_ADMIN + [args.tcptune, "run", "--supervise", "--no-log", "-q", "--", "/bin/sh", "-c",
                                        'exec "$@"', "sh"] + NOBODY + [script])
        stripped = "euid=65534" in done.stdout
        named = [line for line in done.stderr.splitlines() if interpreter in line or script in line]
        checks.check(not stripped or len(named) == 1,
                     f"the script's setuid interpreter runs without its privileges ({done.stdout.strip()}): "
                     f"one line names it ({named})")
    finally:
        shutil.rmtree(shared, ignore_errors=True)
    checks.finish()


main()
