#!/usr/bin/env python3
"""[log] rotate_size and keep: the log moves to FILE.1 .. FILE.keep between whole records, the
oldest beyond `keep` is dropped, and every file still parses line by line."""
import glob
import json
import os

from testlib import Checks, clean_env, parse_args, run


def main():
    args = parse_args()
    checks = Checks()
    log = os.path.join(args.work_dir, "rotating.jsonl")
    for old in glob.glob(log + "*"):
        os.remove(old)
    policy = os.path.join(args.work_dir, "rotate.toml")
    with open(policy, "w") as f:
        f.write('version = 1\n[log]\nformat = "jsonl"\ntrace_writes = true\nrotate_size = "8KiB"\nkeep = 3\n')
    done = run([args.probe, "writes", "--count", "400", "--size", "100"],
               clean_env(LD_PRELOAD=args.shim, TCPTUNE_POLICY=policy, TCPTUNE_LOG=log))
    checks.check(done.returncode == 0, "probe ran")
    files = sorted(glob.glob(log + "*"))
    names = [os.path.basename(f) for f in files]
    checks.check(names == ["rotating.jsonl", "rotating.jsonl.1", "rotating.jsonl.2", "rotating.jsonl.3"],
                 f"the log and keep = 3 rotated files, no more ({names})")
    whole = True
    records = 0
    for path in files:
        for line in open(path):
            try:
                json.loads(line)
                records += 1
            except json.JSONDecodeError:
                whole = False
    checks.check(whole and records > 0, f"every line of every file is a whole JSON record ({records})")
    sizes = [os.path.getsize(f) for f in files[1:]]
    checks.check(all(8192 <= size < 8192 + 1024 for size in sizes), f"rotated files are just past 8 KiB ({sizes})")
    current = [json.loads(line) for line in open(log)]
    checks.check(current and current[-1]["event"] == "summary", "the newest file ends with the summary")
    checks.finish()


if __name__ == "__main__":
    main()
