"""`cmake --install` into a fresh prefix puts the man pages, the bash and zsh completion and the
presets where man(1), bash-completion, zsh and --preset look: MANPATH=PREFIX/share/man finds each
page, PREFIX/bin/tcptune --preset finds PREFIX/share/tcptune/presets, and the installed completion
offers those presets. The shim is where the man pages tell users to preload it from. The installed
tcptune run through a link finds its shim and presets; a copy elsewhere says it finds no shim; a
prefix with a space (which LD_PRELOAD cannot hold) is warned of and refused in one line."""
import argparse
import os
import shlex
import shutil
import subprocess
import sys

p = argparse.ArgumentParser()
for a in ("--build-dir", "--source-dir", "--work-dir", "--configured-prefix"):
    p.add_argument(a, required=True)
args = p.parse_args()
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


prefix = os.path.join(args.work_dir, "prefix")
shutil.rmtree(prefix, ignore_errors=True)
r = subprocess.run(["cmake", "--install", args.build_dir, "--prefix", prefix], capture_output=True, text=True,
                   timeout=300)
check(r.returncode == 0, f"cmake --install --prefix {prefix}: {r.stderr.strip()[-500:]}")

pages = {"tcptune": "1", "tcptune-policy": "5", "libtcptune": "7"}
for page, section in pages.items():
    path = os.path.join(prefix, "share", "man", "man" + section, f"{page}.{section}")
    check(os.path.isfile(path) and os.path.getsize(path) > 1000, f"{path} installed")
    if shutil.which("man"):
        r = subprocess.run(["man", "-w", section, page], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, MANPATH=os.path.join(prefix, "share", "man")))
        check(r.returncode == 0 and r.stdout.strip() == path, f"MANPATH=PREFIX/share/man man -w {section} {page}: "
              f"{r.stdout.strip()} {r.stderr.strip()}")

presets = sorted(f[:-len(".toml")] for f in os.listdir(os.path.join(args.source_dir, "config", "presets"))
                 if f.endswith(".toml"))
installed = os.path.join(prefix, "share", "tcptune", "presets")
check(sorted(f[:-len(".toml")] for f in os.listdir(installed)) == presets, f"the presets in {installed}")
tcptune = os.path.join(prefix, "bin", "tcptune")
r = subprocess.run([tcptune, "check", "--preset", "bursty-wan"], capture_output=True, text=True, timeout=60)
check(r.returncode == 0 and r.stdout.startswith(os.path.join(os.path.realpath(installed), "bursty-wan.toml") + ": valid"),
      f"PREFIX/bin/tcptune check --preset bursty-wan reads the installed preset: {r.stdout[:100]!r} {r.stderr!r}")

completion = os.path.join(prefix, "share", "bash-completion", "completions", "tcptune")
check(os.path.isfile(completion), f"{completion} installed")
script = (f"source {shlex.quote(completion)} || exit 3\n"
          f"COMP_WORDS=({shlex.quote(tcptune)} run --preset '')\nCOMP_CWORD=3\n_tcptune\n"
          "printf '%s\\n' \"${COMPREPLY[@]}\"\n")
r = subprocess.run(["bash", "--norc", "--noprofile", "-c", script], capture_output=True, text=True, timeout=30)
check(sorted(w for w in r.stdout.split("\n") if w) == presets,
      f"the installed completion offers the installed presets: {r.stdout.split()} {r.stderr.strip()}")

zsh_completion = os.path.join(prefix, "share", "zsh", "vendor-completions", "_tcptune")
check(os.path.isfile(zsh_completion), f"{zsh_completion} installed")

# The shim's path as the pages give it (made for the configured prefix), under this prefix.
if shutil.which("man"):
    page = os.path.join(prefix, "share", "man", "man7", "libtcptune.7")
    text = subprocess.run(["man", "-l", page], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, MANWIDTH="400")).stdout
    named = sorted({w for w in text.split() if w.endswith("/libtcptune.so") and w.startswith(args.configured_prefix)})
    check(len(named) == 1, f"libtcptune(7) names one path for libtcptune.so under {args.configured_prefix}: {named}")
    for path in named:
        installed_shim = os.path.join(prefix, os.path.relpath(path, args.configured_prefix))
        check(os.path.isfile(installed_shim) and os.path.isfile(os.path.join(os.path.dirname(installed_shim),
                                                                               "libtcptune-core.so")),
              f"the shim and its core are installed where the pages say, {path}")

# The installed tcptune run through a link from elsewhere (/usr/local/bin/tcptune -> PREFIX/bin):
# it finds its shim and presets beside the file it links to. A copy elsewhere finds neither and
# says so in one line.
links = os.path.join(args.work_dir, "links")
shutil.rmtree(links, ignore_errors=True)
os.makedirs(links)
os.symlink(tcptune, os.path.join(links, "tcptune"))
shutil.copy(tcptune, os.path.join(links, "tcptune-copy"))
r = subprocess.run([os.path.join(links, "tcptune"), "run", "--", "/bin/sh", "-c", 'echo "$LD_PRELOAD"'],
                   capture_output=True, text=True, timeout=60, env=dict(os.environ, TCPTUNE_LOG="stderr"))
check(r.returncode == 0 and r.stdout.strip().startswith(os.path.realpath(prefix) + "/")
      and r.stdout.strip().endswith("/tcptune/libtcptune.so") and os.path.isfile(r.stdout.strip()),
      f"run through a link preloads the installed shim: {r.stdout.strip()} {r.stderr.strip()[-200:]}")
r = subprocess.run([os.path.join(links, "tcptune"), "check", "--preset", "nodelay"], capture_output=True, text=True,
                   timeout=60)
check(r.returncode == 0 and r.stdout.startswith(os.path.join(os.path.realpath(installed), "nodelay.toml")),
      f"check --preset through a link reads the installed preset: {r.stdout[:100]!r} {r.stderr.strip()!r}")
r = subprocess.run([os.path.join(links, "tcptune-copy"), "run", "--", "/bin/true"], capture_output=True, text=True,
                   timeout=60)
check(r.returncode == 1 and "cannot find libtcptune.so" in r.stderr and len(r.stderr.strip().splitlines()) == 1,
      f"a copy elsewhere: exit 1, one line saying the shim is not found ({r.returncode}: {r.stderr.strip()!r})")

# A prefix with a space: the loader cannot preload from there; the install says so, and the
# installed tcptune run refuses in one line rather than run untuned behind ld.so's errors.
spaced = os.path.join(args.work_dir, "a prefix")
shutil.rmtree(spaced, ignore_errors=True)
r = subprocess.run(["cmake", "--install", args.build_dir, "--prefix", spaced], capture_output=True, text=True,
                   timeout=300)
check(r.returncode == 0 and "LD_PRELOAD cannot hold" in r.stderr,
      f"cmake --install into a prefix with a space warns: {r.stderr.strip()[-300:]!r}")
r = subprocess.run([os.path.join(spaced, "bin", "tcptune"), "run", "--", "/bin/true"], capture_output=True, text=True,
                   timeout=60)
check(r.returncode == 1 and "LD_PRELOAD cannot hold" in r.stderr and "cannot be preloaded" not in r.stderr,
      f"its tcptune run refuses in one line ({r.returncode}: {r.stderr.strip()!r})")
shutil.rmtree(spaced, ignore_errors=True)

print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
