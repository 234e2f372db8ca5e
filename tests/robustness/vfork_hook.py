#!/usr/bin/env python3
"""Programs that call vfork() run under the shim's vfork() hook as they do without it.

The hook runs libc's own vfork(), whose child returns first and reuses the stack: the program's
return address must survive in a place no libc's vfork uses. It was kept in %rdx, which musl's
vfork (and glibc's before 2.25) uses for its own: a musl program's vfork() never returned
(it jumped to itself). vfork_hook_app.c (200 vfork() children that each close the parent's
connection and vfork() a child of their own; a SIGALRM handler that vforks every 300 us) is
built with each compiler found (cc, cc -fcf-protection=full -O0, clang, musl-gcc) and run with
and without the shim: the same output and exit status within the time bound; under glibc the
log's conn_close of the parent's connection counts both its writes (the children's closes left
it alone). Compilers not installed are left out; none at all: 77.
"""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from robustlib import SKIP, Checks, clean_env, fresh, parse_args, records  # noqa: E402

BUILDS = {
    "cc": ["cc", "-O2"],
    "cc-cet-O0": ["cc", "-O0", "-fcf-protection=full"],
    "clang": ["clang", "-O2"],
    "musl-gcc": ["musl-gcc", "-O2"],
}
EXPECTED = "rounds 200 handler 1 connection 1\n"


def run_bounded(cmd, env):
    try:
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=15)
    except subprocess.TimeoutExpired:
        return None


def main():
    args = parse_args()
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vfork_hook_app.c")
    checks = Checks()
    built_any = False
    for name, compiler in BUILDS.items():
        if shutil.which(compiler[0]) is None:
            print(f"left out: {name} ({compiler[0]} not installed)")
            continue
        exe = os.path.join(args.work_dir, f"vfork_hook_app.{name}")
        built = subprocess.run([*compiler, "-o", exe, source], capture_output=True, text=True)
        if not checks.check(built.returncode == 0, f"{name}: builds ({built.stderr.strip()[:300]})"):
            continue
        built_any = True
        control = run_bounded([exe], clean_env())
        checks.check(control is not None and control.returncode == 0 and control.stdout == EXPECTED,
                     f"{name}: control without the shim ({control and control.stdout!r})")
        log = fresh(os.path.join(args.work_dir, f"{name}.jsonl"))
        shimmed = run_bounded([exe], clean_env(LD_PRELOAD=args.shim, TCPTUNE_LOG=log, TCPTUNE_LOG_FORMAT="jsonl"))
        checks.check(shimmed is not None and shimmed.returncode == 0 and shimmed.stdout == EXPECTED,
                     f"{name}: under the shim, the same output and status within 15 s "
                     f"({'timed out' if shimmed is None else (shimmed.returncode, shimmed.stdout, shimmed.stderr[-200:])})")
        if name != "musl-gcc":  # the core, which writes the log, is not loaded into musl programs
            clients = [r for r in records(log) if r.get("event") == "conn_close" and r.get("role") == "client"]
            checks.check(len(clients) == 1 and clients[0].get("writes") == 2,
                         f"{name}: the parent's connection kept, both writes counted "
                         f"({[(r.get('fd'), r.get('writes')) for r in clients]})")
    if not built_any:
        print("skipped: no C compiler")
        raise SystemExit(SKIP)
    checks.finish()


if __name__ == "__main__":
    main()
