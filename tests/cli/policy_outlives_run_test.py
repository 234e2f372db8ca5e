"""A process of a run that outlives the program tcptune started (a daemon, `cmd &` in a shell
script) and execs later must still get the policy run validated. Under 64 KiB the text travels in
the environment; over 64 KiB run hands a private copy's path, removed when the program ends: the
later children then print "cannot read" and run untuned, or exit 78 under TCPTUNE_STRICT=1.

The program is a shell that starts a background subshell and exits at once; the subshell waits
until the program has ended (tcptune run has returned) and then runs python3, which prints
whether it started and its status."""
import argparse
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "preload"))
from testlib import Checks, clean_env  # noqa: E402

p = argparse.ArgumentParser()
for a in ("--tcptune", "--shim", "--work-dir"):
    p.add_argument(a, required=True)
args = p.parse_args()
shutil.rmtree(args.work_dir, ignore_errors=True)
os.makedirs(args.work_dir)
checks = Checks()

for size, comment_lines in (("small", 10), ("over 64 KiB", 1200)):
    policy = os.path.join(args.work_dir, f"policy-{comment_lines}.toml")
    with open(policy, "w", encoding="utf-8") as f:
        f.write('[defaults]\nnodelay = "on"\n' + ("# " + "x" * 60 + "\n") * comment_lines)
    out = os.path.join(args.work_dir, f"later-child-{comment_lines}.out")
    go = os.path.join(args.work_dir, f"go-{comment_lines}")
    script = (f"(while [ ! -e {go} ]; do sleep 0.05; done; {sys.executable} -c 'print(\"child ran\")'; "
              f"echo \"child status $?\") > {out} 2>&1 &")
    r = subprocess.run([args.tcptune, "run", "-q", "--policy", policy, "--", "/bin/sh", "-c", script],
                       cwd=args.work_dir, env=clean_env(TCPTUNE_SHIM=args.shim, TCPTUNE_STRICT=1),
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30, check=False)
    checks.check(r.returncode == 0, f"{size}: the run ends at once ({r.returncode})")
    with open(go, "w", encoding="utf-8"):
        pass
    deadline = time.monotonic() + 20
    text = ""
    while time.monotonic() < deadline and "child status" not in text:
        time.sleep(0.1)
        if os.path.exists(out):
            with open(out, encoding="utf-8") as f:
                text = f.read()
    checks.check("child ran" in text and "child status 0" in text and "cannot read" not in text,
                 f"{size}: a child exec'd after the program ended gets the validated policy: {text.strip()!r}")

checks.finish()
