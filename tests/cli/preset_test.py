"""`--preset NAME` (run, check, ab): the policy PREFIX/share/tcptune/presets/NAME.toml beside
PREFIX/bin/tcptune. In the build tree that directory links to config/presets; a copy of tcptune
in a prefix of its own finds that prefix's presets, and says where it looked when there are none.
A bad name is a usage error (exit 2) naming the presets there; --preset and --policy (check:
FILE) exclude each other."""
import argparse
import os
import shutil
import subprocess
import sys

p = argparse.ArgumentParser()
for a in ("--tcptune", "--source-dir", "--work-dir"):
    p.add_argument(a, required=True)
args = p.parse_args()
os.makedirs(args.work_dir, exist_ok=True)
failures = []
presets_dir = os.path.join(args.source_dir, "config", "presets")
presets = sorted(f[:-len(".toml")] for f in os.listdir(presets_dir) if f.endswith(".toml"))


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def tcptune(*argv, binary=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TCPTUNE_") and k != "LD_PRELOAD"}
    return subprocess.run([binary or args.tcptune, *argv], capture_output=True, text=True, env=env, timeout=60)


check(len(presets) >= 5, f"config/presets holds the presets: {presets}")

# check --preset explains the preset's file, as check FILE does.
for name in presets:
    by_name = tcptune("check", "--preset", name)
    by_file = tcptune("check", os.path.join(presets_dir, name + ".toml"))
    check(by_name.returncode == 0, f"check --preset {name}: exit 0 ({by_name.returncode}: {by_name.stderr.strip()})")
    first = by_name.stdout.split("\n", 1)[0]
    check(first.startswith(os.path.realpath(os.path.join(presets_dir, name + ".toml")) + ": valid"),
          f"check --preset {name} names the preset's file: {first!r}")
    check(by_name.stdout.split("\n", 1)[1:] == by_file.stdout.split("\n", 1)[1:],
          f"check --preset {name} explains what check FILE does")
r = tcptune("check", "--preset", presets[0] + ".toml")
check(r.returncode == 0, f"check --preset {presets[0]}.toml: the suffix may be given ({r.stderr.strip()})")

# Bad names: exit 2, one message naming the option and the presets there.
r = tcptune("check", "--preset", "no-such-preset")
check(r.returncode == 2 and "--preset" in r.stderr and "no preset 'no-such-preset'" in r.stderr
      and all(name in r.stderr for name in presets), f"an unknown preset: exit 2 and the names: {r.stderr!r}")
for bad in ("../presets/nodelay", "/etc/passwd", ".hidden", ""):
    r = tcptune("run", "--preset", bad, "--", "true")
    check(r.returncode == 2 and "not a preset name" in r.stderr, f"--preset {bad!r} is no name: {r.stderr!r}")
r = tcptune("check", os.path.join(presets_dir, "nodelay.toml"), "--preset", "nodelay")
check(r.returncode == 2 and "excludes" in r.stderr, f"check FILE --preset: exit 2: {r.stderr!r}")
r = tcptune("run", "--policy", "p.toml", "--preset", "nodelay", "--", "true")
check(r.returncode == 2 and "excludes" in r.stderr, f"run --policy --preset: exit 2: {r.stderr!r}")
r = tcptune("ab", "--preset", "no-such-preset", "--", "true")
check(r.returncode == 2 and "no preset" in r.stderr, f"ab --preset checks the name: {r.stderr!r}")

# run hands the preset's text to the program, named by its file, as --policy does.
probe = ("import os, sys; sys.stdout.write(os.environ.get('TCPTUNE_POLICY_NAME', '') + '\\n' + "
         "os.environ.get('TCPTUNE_POLICY_TOML', ''))")
r = tcptune("run", "--no-log", "--preset", "low-latency-rpc", "--", sys.executable, "-c", probe)
name, _, text = r.stdout.partition("\n")
with open(os.path.join(presets_dir, "low-latency-rpc.toml"), encoding="utf-8") as f:
    expected = f.read()
check(r.returncode == 0 and name == os.path.realpath(os.path.join(presets_dir, "low-latency-rpc.toml"))
      and text == expected, f"run --preset low-latency-rpc passes that file's policy: {name!r}, {len(text)} bytes")

# The help lists the presets found beside this tcptune.
r = tcptune("run", "--help")
check(r.returncode == 0 and "--preset NAME:{" + ",".join(presets) + "}" in r.stdout,
      "run --help lists the presets: " + next((line for line in r.stdout.splitlines() if "--preset" in line), ""))

# A tcptune of its own prefix: that prefix's presets, or where it looked.
prefix = os.path.join(args.work_dir, "prefix")
shutil.rmtree(prefix, ignore_errors=True)
os.makedirs(os.path.join(prefix, "bin"))
copy = os.path.join(prefix, "bin", "tcptune")
shutil.copy2(args.tcptune, copy)
r = tcptune("check", "--preset", "nodelay", binary=copy)
own_dir = os.path.join(os.path.realpath(prefix), "share", "tcptune", "presets")
check(r.returncode == 2 and "no presets directory " + own_dir in r.stderr,
      f"no presets beside the copy: exit 2, naming {own_dir}: {r.stderr!r}")
os.makedirs(own_dir)
with open(os.path.join(own_dir, "site.toml"), "w", encoding="utf-8") as f:
    f.write('version = 1\n[defaults]\nnodelay = "force"\n')
r = tcptune("check", "--preset", "site", binary=copy)
check(r.returncode == 0 and r.stdout.startswith(os.path.join(own_dir, "site.toml") + ": valid")
      and "force" in r.stdout, f"the copy finds its prefix's preset: {r.stdout[:120]!r} {r.stderr!r}")
r = tcptune("check", "--preset", "nodelay", binary=copy)
check(r.returncode == 2 and "the presets: site" in r.stderr, f"and names only those: {r.stderr!r}")

print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
