#!/usr/bin/env python3
"""At a very low RLIMIT_NOFILE (4 and 5: stdin, stdout, stderr and one or two numbers more) a
program behaves under the shim exactly as without it: the same connections made before EMFILE,
at the same descriptor numbers, the same writes, the same EMFILE for a file, the same numbers
open below its limit (nofile_app.c prints them). The log's descriptor is never one of the
program's:
- where the hard limit is higher, it sits at the soft limit itself, which the kernel never hands
  the program, and every record is written;
- where the hard limit is the soft one, the log holds no descriptor between writes (each opens
  the file): the lines that find no number free (the conn_open records, while the program holds
  every number) wait, and are written once the program has closed its connections.
The same again where the program's first socket() (the call that loads the shim's core) comes
while it holds every number below the soft limit (`full`): where the hard limit is higher, the
core is loaded all the same (the soft limit is raised for the load and put back) and the
connections made after are measured; where it is not, the core cannot load, which is said in one
line, and the program runs untuned, its view unchanged."""
import argparse
import json
import os
import resource
import subprocess

from testlib import Checks, Listener, clean_env


def parse_args():
    parser = argparse.ArgumentParser()
    for name in ("--shim", "--app", "--work-dir"):
        parser.add_argument(name, required=True)
    args = parser.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    return args


def run_limited(cmd, env, soft, hard):
    def limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=30, preexec_fn=limit)


def cases(system_hard):
    """(soft, hard, mode) for soft limits 4 and 5, each with the hard limit at the soft one and above it."""
    for mode in ("", "full"):
        for soft in (4, 5):
            for hard in (soft, min(system_hard, 4096)):
                yield soft, hard, mode


def main():
    args = parse_args()
    checks = Checks()
    _, system_hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    listener = Listener()
    try:
        for soft, hard, mode in cases(system_hard):
            name = f"soft {soft}, hard {hard}{', ' + mode if mode else ''}"
            cmd = [args.app, str(listener.port)] + ([mode] if mode else [])
            without = run_limited(cmd, clean_env(), soft, hard)
            lines = without.stdout.splitlines()
            connected = sum(1 for line in lines if line.endswith("connect 0"))
            checks.check(without.returncode == 0 and connected == soft - 3 and "open EMFILE" in lines,
                         f"{name}, without the shim: {connected} connections, then EMFILE ({lines})")
            log = os.path.join(args.work_dir, f"soft{soft}-hard{hard}{mode}.jsonl")
            if os.path.exists(log):
                os.remove(log)
            under = run_limited(cmd, clean_env(LD_PRELOAD=args.shim, TCPTUNE_LOG=log), soft, hard)
            under_lines = under.stdout.splitlines()
            checks.check(under.returncode == 0 and under_lines[:-1] == lines[:-1],
                         f"{name}, under the shim: the program's view is the same ({under_lines[:-1]})")
            if mode and hard == soft:
                checks.check(under.stderr.endswith("Too many open files; running untuned\n") and
                             under.stderr.count("\n") == 1 and not os.path.exists(log),
                             f"{name}: the core cannot load, said in one line, nothing logged ({under.stderr!r})")
                continue
            checks.check(under.stderr == "", f"{name}: nothing on stderr ({under.stderr.strip()[:300]!r})")
            above = under_lines[-1].split()[1:] if under_lines else None
            with open(log, encoding="utf-8") as f:
                text = f.read()
            records = [json.loads(line) for line in text.splitlines()]
            checks.check(text.endswith("\n"), f"{name}: the log is whole jsonl ({len(records)} records)")
            summaries = [r for r in records if r["event"] == "summary"]
            closes = [r for r in records if r["event"] == "conn_close"]
            checks.check(len(summaries) == 1 and summaries[0]["connections"] == connected and
                         summaries[0]["writes"] == connected and len(closes) == connected,
                         f"{name}: conn_close and summary for the {connected} connections, written at exit")
            opens = [r for r in records if r["event"] == "conn_open"]
            checks.check(len(opens) == connected and all("log_lines_without_descriptor" not in s for s in summaries),
                         f"{name}: every record is written ({len(opens)} conn_open)")
            if hard > soft and mode:
                # Opened while the limit was raised for the load: above the soft limit, out of the program's range.
                checks.check(len(above) == 1 and int(above[0]) > soft,
                             f"{name}: the log's descriptor is one above the soft limit ({above})")
            elif hard > soft:
                checks.check(above == [str(soft)], f"{name}: the log's descriptor is at the soft limit ({above})")
            else:
                checks.check(above == [], f"{name}: the log holds no descriptor ({above})")
    finally:
        listener.close()
    checks.finish()


if __name__ == "__main__":
    main()
