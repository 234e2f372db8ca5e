"""`tcptune --help` and every subcommand's --help end with an example of that command and where
the manual is (CLI11 footers); the subcommands are read from the command line's definition
(tcptune_cli_reference json), so a command added later is held to it too."""
import argparse
import json
import subprocess
import sys

p = argparse.ArgumentParser()
p.add_argument("--tcptune", required=True)
p.add_argument("--reference", required=True)
args = p.parse_args()
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


commands = [c["name"] for c in json.loads(subprocess.run([args.reference, "json"], capture_output=True, text=True,
                                                          check=True, timeout=60).stdout)["commands"]]
check(len(commands) >= 7, f"the reference lists the commands ({len(commands)})")
for argv, example in [(["--help"], "Example: tcptune "), *[([c, "--help"], f"Example: tcptune {c}") for c in commands]]:
    shown = "tcptune " + " ".join(argv)
    r = subprocess.run([args.tcptune, *argv], capture_output=True, text=True, timeout=30)
    check(r.returncode == 0 and r.stderr == "", f"{shown}: exit 0, nothing on stderr (got {r.returncode}, {r.stderr!r})")
    tail = r.stdout.rstrip().splitlines()[-2:]
    check(len(tail) == 2 and tail[0].startswith(example), f"{shown}: the last lines give an example, {example!r}...: "
          f"{tail}")
    check(len(tail) == 2 and "man tcptune" in tail[1] and "man tcptune-policy" in tail[1] and "man libtcptune" in tail[1],
          f"{shown}: the last line names the man pages: {tail[-1:]}")
print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
