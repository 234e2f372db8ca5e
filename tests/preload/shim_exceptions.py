"""A C++ exception thrown inside the preloaded libtcptune.so is caught there: the library's own
unwinder (static libgcc) finds its frames through the library's _dl_find_object
(shim/compat/find_object.c). fail_first_shim_alloc.so makes the first allocation of the shim
fail, at start-up, inside the try block around the policy load: std::bad_alloc is thrown, caught,
and the program runs untuned. Were the unwinder unable to find the frames, std::terminate would
abort the program (checked once with a _dl_find_object that always fails: SIGABRT)."""
import argparse
import os
import signal
import subprocess
import sys

from testlib import Checks, clean_env


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shim", required=True)
    parser.add_argument("--probe", required=True)
    parser.add_argument("--fault", required=True, help="fail_first_shim_alloc.so")
    parser.add_argument("--policy", required=True, help="a policy that turns TCP_NODELAY on")
    parser.add_argument("--work-dir", required=True)
    args = parser.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    checks = Checks()

    def run(preload, client, server):
        env = clean_env(LD_PRELOAD=preload, TCPTUNE_POLICY=args.policy, TCPTUNE_LOG=os.path.join(args.work_dir, "shim.log"))
        return subprocess.run([args.probe, "nodelay", "--client", str(client), "--server", str(server)], env=env,
                              capture_output=True, text=True, timeout=60)

    # Control: without the fault the policy tunes both ends.
    tuned = run(args.shim, 1, 1)
    checks.check(tuned.returncode == 0, f"without the fault the policy turns TCP_NODELAY on (status {tuned.returncode})"
                 f"\n{tuned.stdout}{tuned.stderr}")

    faulted = run(f"{args.fault}:{args.shim}", 0, 0)
    checks.check("malloc(" in faulted.stderr and "of the shim fails" in faulted.stderr,
                 f"an allocation of the shim failed ({faulted.stderr.strip()!r})")
    checks.check(faulted.returncode != -signal.SIGABRT and "terminate called" not in faulted.stderr,
                 f"the program is not aborted (status {faulted.returncode})")
    checks.check(faulted.returncode == 0,
                 f"std::bad_alloc was caught in the shim: the program ran to its end, untuned (status "
                 f"{faulted.returncode})\n{faulted.stdout}")
    checks.finish()


if __name__ == "__main__":
    os.environ.pop("LD_PRELOAD", None)
    sys.exit(main())
