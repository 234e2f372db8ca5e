#!/usr/bin/env python3
"""Garbage in TCPTUNE_LOG_LEVEL, TCPTUNE_LOG_FORMAT or TCPTUNE_STRICT is ignored without a word.

A bad policy gets one line on stderr naming the problem ("running untuned"); a bad log path
gets "cannot open log file ...; logging disabled". But TCPTUNE_LOG_LEVEL=debgu,
TCPTUNE_LOG_FORMAT=json (not jsonl) or TCPTUNE_STRICT=yes are silently dropped: the operator
believes the log is at debug level, in JSON, or that a bad policy will stop the program, and
nothing says otherwise (the jsonl reader `tcptune report` then skips every line of the text log).
Correct: the program runs (it does), and stderr has one line "tcptune: TCPTUNE_LOG_LEVEL:
'debgu' is not one of trace, debug, info, warn, error, off; ..." or similar, naming the variable.
The program opens a TCP socket: the shim reads its variables when it loads its core, then.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from robustlib import Checks, clean_env, fresh, parse_args, run  # noqa: E402


def main():
    args = parse_args()
    checks = Checks()
    for name, value in (("TCPTUNE_LOG_LEVEL", "debgu"), ("TCPTUNE_LOG_FORMAT", "json"), ("TCPTUNE_STRICT", "yes")):
        log = fresh(os.path.join(args.work_dir, f"{name}.log"))
        done = run([sys.executable, "-c", "import socket; socket.socket(); print('ran')"],
                   clean_env(LD_PRELOAD=args.shim, TCPTUNE_LOG=log, **{name: value}), timeout=30)
        checks.check(done.returncode == 0 and done.stdout.strip() == "ran", f"{name}={value}: the program runs")
        lines = [line for line in done.stderr.splitlines() if line.startswith("tcptune:")]
        checks.check(len(lines) == 1 and name in lines[0],
                     f"{name}={value}: one 'tcptune:' line on stderr naming {name} (stderr: {done.stderr.strip()!r})")
    checks.finish()


if __name__ == "__main__":
    main()
