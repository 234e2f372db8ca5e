"""A musl program (built here with Debian's musl-tools) under LD_PRELOAD=libtcptune.so runs as it
does without it: the same output, the same exit status, nothing on stderr; the first stage is
loaded into it and the core (built for glibc) is not, even under TCPTUNE_STRICT=1 with a policy
or a TCP socket inherited at start. Skipped (77) without musl-gcc."""
import os
import shutil
import socket
import subprocess

from testlib import Checks, SKIP, clean_env, parse_args, run

POLICY = 'version = 1\n[defaults]\nnodelay = "on"\n'


def main():
    args = parse_args()
    if shutil.which("musl-gcc") is None:
        print("skipped: musl-gcc missing (Debian's musl-tools)")
        raise SystemExit(SKIP)
    checks = Checks()
    program = os.path.join(args.work_dir, "musl_program")
    source = os.path.join(args.source_dir, "tests", "preload", "musl_program.c")
    built = subprocess.run(["musl-gcc", "-O2", "-Wall", "-o", program, source], capture_output=True, text=True)
    if not checks.check(built.returncode == 0, f"musl-gcc builds the program ({built.stderr.strip()[:300]})"):
        checks.finish()

    control = run([program], clean_env())
    checks.check(control.returncode == 3 and "client received pong" in control.stdout
                 and "the tuning core is mapped: no" in control.stdout,
                 f"control without the shim: exit {control.returncode}, {control.stdout.strip()[-200:]!r}")

    cases = {
        "the built-in default": {},
        "a policy and TCPTUNE_STRICT=1": {"TCPTUNE_POLICY_TOML": POLICY, "TCPTUNE_STRICT": "1",
                                         "TCPTUNE_LOG": os.path.join(args.work_dir, "strict.log")},
        "a policy that does not parse": {"TCPTUNE_POLICY_TOML": "[defaults\n"},
    }
    for name, extra in cases.items():
        shimmed = run([program], clean_env(LD_PRELOAD=args.shim, **extra))
        checks.check(shimmed.returncode == control.returncode and shimmed.stdout == control.stdout
                     and shimmed.stderr == control.stderr,
                     f"under the shim with {name}: exit {shimmed.returncode}, the same output "
                     f"({shimmed.stdout.strip()[-160:]!r}; stderr {shimmed.stderr.strip()[:300]!r})")

    # A TCP socket inherited at start: under glibc the core is loaded for it at once.
    with socket.create_server(("127.0.0.1", 0)) as listener:
        inherited = socket.create_connection(listener.getsockname())
        result = subprocess.run([program, "maps"], env=clean_env(LD_PRELOAD=args.shim), capture_output=True,
                                text=True, timeout=60, pass_fds=[inherited.fileno()])
        inherited.close()
    mapped = result.stdout
    checks.check(result.returncode == 0 and "libtcptune.so" in mapped and "libtcptune-core.so" not in mapped
                 and result.stderr == "",
                 f"with a TCP socket inherited at start: the first stage is mapped, the core is not "
                 f"(exit {result.returncode}; {mapped.strip()[:300]!r}; stderr {result.stderr.strip()[:200]!r})")
    checks.finish()


if __name__ == "__main__":
    main()
