"""The generated bash completion, sourced in a plain bash (no bash-completion package, no rc file):
completing `tcptune ` offers the subcommands, `tcptune run --` run's options, an option's value
its kind (the installed presets, --by's choices, files), and a program's words are never taken
for tcptune's. The expected words come from the command line's definition (tcptune_cli_reference
json) and config/presets, never from a list written here."""
import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

p = argparse.ArgumentParser()
for a in ("--completion", "--tcptune", "--reference", "--source-dir"):
    p.add_argument(a, required=True)
args = p.parse_args()
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def complete(words, cwd=None):
    """COMPREPLY for the command line `words`, the last being the word under the cursor."""
    script = (f"source {shlex.quote(args.completion)} || exit 3\n"
              f"COMP_WORDS=({' '.join(shlex.quote(w) for w in words)})\n"
              f"COMP_CWORD={len(words) - 1}\n"
              "_tcptune\n"
              "printf '%s\\n' \"${COMPREPLY[@]}\"\n")
    r = subprocess.run(["bash", "--norc", "--noprofile", "-c", script], capture_output=True, text=True, timeout=30,
                       cwd=cwd)
    if r.returncode != 0:
        return None
    return sorted(w for w in r.stdout.split("\n") if w)


reference = json.loads(subprocess.run([args.reference, "json"], capture_output=True, text=True, check=True,
                                      timeout=60).stdout)
commands = {c["name"]: c for c in reference["commands"]}
top = sorted(n for o in reference["top"]["options"] for n in o["names"])
tcptune = args.tcptune  # COMP_WORDS[0]: the presets are found beside it

got = complete([tcptune, ""])
check(got == sorted(list(commands) + top), f"'tcptune ' offers the subcommands and tcptune's options: {got}")
got = complete([tcptune, "ch"])
check(got == ["check"], f"'tcptune ch' completes to check: {got}")

for name in ("run", "ab", "report", "kube-inject"):
    long_options = sorted(n for o in commands[name]["options"] for n in o["names"] if n.startswith("--"))
    got = complete([tcptune, name, "--"])
    check(got == long_options, f"'tcptune {name} --' offers {name}'s options {long_options}: {got}")
check(len(commands["run"]["options"]) >= 7 and "--preset" in complete([tcptune, "run", "--"]),
      "run's options include --preset")

presets = sorted(f[:-len(".toml")] for f in os.listdir(os.path.join(args.source_dir, "config", "presets"))
                 if f.endswith(".toml"))
got = complete([tcptune, "run", "--preset", ""])
check(got == presets, f"'tcptune run --preset ' offers the presets beside this tcptune {presets}: {got}")
# tcptune reached through a link (/usr/local/bin/tcptune -> /opt/tcptune/bin/tcptune) finds its
# presets beside the file it links to (/proc/self/exe): so does the completion.
with tempfile.TemporaryDirectory() as links:
    os.symlink(os.path.abspath(tcptune), os.path.join(links, "tcptune"))
    got = complete([os.path.join(links, "tcptune"), "run", "--preset", ""])
    check(got == presets, f"through a link to tcptune, '--preset ' offers the presets beside the file it links to: {got}")
got = complete([tcptune, "check", "--preset", "bursty-wan-"])
check(got == [p for p in presets if p.startswith("bursty-wan-")], f"'tcptune check --preset bursty-wan-': {got}")
got = complete([tcptune, "ab", "--preset", "=", ""])
check(got == presets, f"'tcptune ab --preset=' offers the presets: {got}")

by = next(o for o in commands["report"]["options"] if "--by" in o["names"])
got = complete([tcptune, "report", "--by", ""])
check(len(by["choices"]) >= 4 and got == sorted(by["choices"]), f"'tcptune report --by ' offers {by['choices']}: {got}")

# A systemd service for enable and disable: the unit files systemctl lists (no running systemd needed).
if shutil.which("systemctl") and "enable" in commands:
    listed = subprocess.run(["systemctl", "list-unit-files", "--type=service", "--no-legend", "--no-pager"],
                            capture_output=True, text=True, timeout=30).stdout
    services = sorted(line.split()[0] for line in listed.splitlines() if line.strip())
    got = complete([tcptune, "enable", ""])
    check(got == services, f"'tcptune enable ' offers the {len(services)} services systemctl lists: {(got or [])[:5]}...")
    got = complete([tcptune, "disable", "some.service", "--"])
    check(got == sorted(n for o in commands["disable"]["options"] for n in o["names"] if n.startswith("--")),
          f"'tcptune disable UNIT --' offers disable's options: {got}")

with tempfile.TemporaryDirectory() as work:
    for name in ("policy-a.toml", "policy-b.toml", "notes.txt"):
        open(os.path.join(work, name), "w").close()
    os.mkdir(os.path.join(work, "logs"))
    got = complete([tcptune, "run", "--policy", "pol"], cwd=work)
    check(got == ["policy-a.toml", "policy-b.toml"], f"'tcptune run --policy pol' offers files: {got}")
    got = complete([tcptune, "install", ""], cwd=work)
    check(got == ["logs"], f"'tcptune install ' offers directories only: {got}")
    # After an option's value, options again; after the program, never tcptune's.
    got = complete([tcptune, "run", "--policy", "policy-a.toml", "--q"], cwd=work)
    check(got == ["--quiet"], f"'tcptune run --policy FILE --q' offers --quiet: {got}")
    got = complete([tcptune, "run", "--", "sh", "--q"], cwd=work)
    check(got is not None and "--quiet" not in got, f"'tcptune run -- sh --q': not tcptune's options: {got}")
    got = complete([tcptune, "run", "-v", "sh", "no"], cwd=work)
    check(got == ["notes.txt"], f"'tcptune run -v sh no': the program's arguments are files: {got}")
    got = complete([tcptune, "run", "--", "bas"], cwd=work)
    check(got is not None and "bash" in got, f"'tcptune run -- bas' offers commands: {(got or [])[:5]}")

print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
