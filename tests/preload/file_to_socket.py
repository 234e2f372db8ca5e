#!/usr/bin/env python3
"""The built-in default (nodelay = "on-wait") keeps Nagle's coalescing for a program that streams
a file to a socket in small chunks (read(file, 64), write(socket, 64)): reading a regular file is
no wait for input, so it must not push the socket's held tail.

file_to_socket (1 MiB in 64-byte chunks) runs without the shim and under the shim with
nodelay = "keep" (for the record: the data segments each sent), then under the built-in default
traced by strace: it must make no TCP_NODELAY call, as preload.nagle_default's stream of writes
that never waits makes none (a push at each read of the file makes thousands, and sends 3-7x
the segments of "keep"). Exits 77 without strace."""
import argparse
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from testlib import Checks, clean_env  # noqa: E402

p = argparse.ArgumentParser()
for a in ("--shim", "--program", "--work-dir"):
    p.add_argument(a, required=True)
args = p.parse_args()
shutil.rmtree(args.work_dir, ignore_errors=True)
os.makedirs(args.work_dir)
checks = Checks()

data = os.path.join(args.work_dir, "data.bin")
with open(data, "wb") as f:
    f.write(os.urandom(1024 * 1024))
keep = os.path.join(args.work_dir, "keep.toml")
with open(keep, "w", encoding="utf-8") as f:
    f.write('[defaults]\nnodelay = "keep"\n')


def segments(env, trace=None):
    traced = ["strace", "-f", "-qq", "-e", "trace=setsockopt", "-o", trace] if trace else []
    done = subprocess.run(traced + [args.program, data, "64"], env=env, capture_output=True, text=True, timeout=60,
                          check=False)
    print(f"-> {done.returncode}: {done.stdout.strip()} {done.stderr.strip()}", flush=True)
    fields = done.stdout.split()
    return int(fields[3]) if done.returncode == 0 and len(fields) == 4 else None


if shutil.which("strace") is None:
    print("skipped: strace missing", flush=True)
    sys.exit(77)
without = segments(clean_env())
kept = segments(clean_env(LD_PRELOAD=args.shim, TCPTUNE_POLICY=keep))
trace = os.path.join(args.work_dir, "default.strace")
default = segments(clean_env(LD_PRELOAD=args.shim), trace)
checks.check(None not in (without, kept, default), "the three runs completed")
with open(trace, encoding="utf-8") as f:
    pushes = sum(1 for line in f if "TCP_NODELAY" in line)
checks.check(pushes == 0, f"built-in default: {pushes} TCP_NODELAY calls while reading a file "
             f"({default} segments; nodelay = \"keep\": {kept}; without the shim: {without})")
checks.finish()
