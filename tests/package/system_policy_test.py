#!/usr/bin/env python3
"""The example /etc/tcptune/policy.toml (config/system-policy.toml) changes nothing until edited:
`tcptune check` explains it exactly as it explains the built-in default, line for line after the
line that names the policy."""
import argparse
import subprocess
import sys

parser = argparse.ArgumentParser()
parser.add_argument("--tcptune", required=True)
parser.add_argument("--policy", required=True)
args = parser.parse_args()


def explained(*argv):
    r = subprocess.run([args.tcptune, "check", *argv], capture_output=True, text=True, timeout=60,
                       env={"PATH": "/usr/bin:/bin"})
    lines = r.stdout.splitlines()
    # The built-in default's explanation is preceded by a line saying no file was given.
    start = next((i for i, line in enumerate(lines) if ": valid, " in line), None)
    return r.returncode, lines[start + 1:] if start is not None else lines


example_status, example = explained(args.policy)
builtin_status, builtin = explained()
ok = example_status == 0 and builtin_status == 0 and example == builtin and len(example) > 1
print(("ok   " if ok else "FAIL ") + f"{args.policy} is explained as the built-in default is")
if not ok:
    print("example:", example_status, example, "\nbuilt-in:", builtin_status, builtin)
print(f"{int(ok)} passed, {int(not ok)} failed")
sys.exit(0 if ok else 1)
