"""The generated zsh completion (_tcptune), in a zsh of its own started on a pseudo-terminal with
compinit (no rc file): completing `tcptune ` offers the subcommands, `tcptune run --` run's
options, `--preset ` the presets beside that tcptune, `--by ` its choices, and nothing of
tcptune's after the program. Each candidate is read from compadd, which the test's shell wraps
(the way zsh-capture-completion does). Skipped (77) without zsh."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

p = argparse.ArgumentParser()
for a in ("--completion-dir", "--tcptune", "--reference", "--source-dir"):
    p.add_argument(a, required=True)
args = p.parse_args()
if shutil.which("zsh") is None:
    print("SKIP: zsh is not installed")
    sys.exit(77)
failures = []

# Runs in `zsh -f`: starts an interactive zsh on a pty whose rc files (in RCDIR, the test's
# temporary directory: ZDOTDIR, no global rc file) load compsys with FPATH_DIR first, its dump in
# RCDIR, and wrap compadd to print each candidate between << >>. Once the line editor reads (input
# typed earlier may be discarded when it starts) it types LINE and a tab, and prints what came
# between the two NUL lines the pre- and post-completion hooks write.
CAPTURE = r'''
zmodload zsh/zpty || exit 77
local rc=$3
print -r -- 'setopt no_global_rcs' > $rc/.zshenv
cat > $rc/.zshrc <<RC
PROMPT=''; RPROMPT=''
fpath=(${(q)1} \$fpath)
autoload -Uz compinit && compinit -u -d ${(q)rc}/.zcompdump
zstyle ':completion:*' list-grouped false
zstyle ':completion:*' menu no
compadd () {
  if [[ \${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "\$@"; return \$?; fi
  typeset -a __hits
  builtin compadd -A __hits "\$@"
  local h; for h in \$__hits; do print -r -- "<<\$h>>"; done
}
bindkey '^I' complete-word
null-line () { echo -E - \$'\0'; }
compprefuncs=( null-line ); comppostfuncs=( null-line exit )
zle-line-init () { (( \$+__ready )) || { typeset -g __ready=1; print -r -- LINE''READY; } }
zle -N zle-line-init
RC
zpty z env ZDOTDIR=$rc zsh -i
local line
while zpty -r z line; do [[ $line == *LINEREADY* ]] && break; done
zpty -n -w z "$2"$'\t'
integer seen=0
while zpty -r z line; do
  [[ $line == *$'\0'* ]] && (( seen++ )) && exit 0
  (( seen )) && [[ $line == *'<<'*'>>'* ]] && print -r -- "${${line#*<<}%>>*}"
done
exit 1
'''


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def complete(line, cwd=None):
    """The candidates zsh offers for `line` (the cursor at its end), sorted; None if it failed."""
    with tempfile.TemporaryDirectory() as rc:
        script = os.path.join(rc, "capture.zsh")
        with open(script, "w", encoding="utf-8") as f:
            f.write(CAPTURE)
        try:
            r = subprocess.run(["zsh", "-f", script, args.completion_dir, line, rc], capture_output=True, text=True,
                               timeout=90, cwd=cwd, env=dict(os.environ, TERM="dumb"))
        except subprocess.TimeoutExpired:
            print(f"zsh took over 90 s to complete {line!r}")
            return None
    if r.returncode != 0:
        print(f"zsh exited {r.returncode}: {r.stdout!r} {r.stderr!r}")
        return None
    return sorted(set(w for w in r.stdout.split("\n") if w))


reference = json.loads(subprocess.run([args.reference, "json"], capture_output=True, text=True, check=True,
                                      timeout=60).stdout)
commands = {c["name"]: c for c in reference["commands"]}
tcptune = args.tcptune
presets = sorted(f[:-len(".toml")] for f in os.listdir(os.path.join(args.source_dir, "config", "presets"))
                 if f.endswith(".toml"))

got = complete(f"{tcptune} ")
check(got == sorted(commands), f"'tcptune ' offers the subcommands: {got}")
for name in ("run", "ab", "report", "kube-inject"):
    long_options = sorted(n for o in commands[name]["options"] for n in o["names"] if n.startswith("--"))
    got = complete(f"{tcptune} {name} --")
    check(got == long_options, f"'tcptune {name} --' offers {name}'s options {long_options}: {got}")
got = complete(f"{tcptune} run --preset ")
check(got == presets, f"'tcptune run --preset ' offers the presets beside this tcptune {presets}: {got}")
# Through a link to tcptune, the presets beside the file it links to, as tcptune finds them.
links = tempfile.mkdtemp()
os.symlink(os.path.abspath(tcptune), os.path.join(links, "tcptune"))
got = complete(f"{os.path.join(links, 'tcptune')} run --preset ")
shutil.rmtree(links)
check(got == presets, f"through a link to tcptune, '--preset ' offers the presets beside the file it links to: {got}")
by = next(o for o in commands["report"]["options"] if "--by" in o["names"])
got = complete(f"{tcptune} report --by ")
check(len(by["choices"]) >= 4 and got == sorted(by["choices"]), f"'tcptune report --by ' offers {by['choices']}: {got}")
if shutil.which("systemctl") and "enable" in commands:
    listed = subprocess.run(["systemctl", "list-unit-files", "--type=service", "--no-legend", "--no-pager"],
                            capture_output=True, text=True, timeout=30).stdout
    services = sorted(line.split()[0] for line in listed.splitlines() if line.strip())
    got = complete(f"{tcptune} enable ")
    check(got == services, f"'tcptune enable ' offers the {len(services)} services systemctl lists: {(got or [])[:5]}...")
with tempfile.TemporaryDirectory() as work:
    for name in ("policy-a.toml", "policy-b.toml"):
        open(os.path.join(work, name), "w").close()
    got = complete(f"{tcptune} check pol", cwd=work)
    check(got == ["policy-a.toml", "policy-b.toml"], f"'tcptune check pol' offers files: {got}")
    got = complete(f"{tcptune} run -- sh --", cwd=work)
    check(got is not None and "--preset" not in got, f"'tcptune run -- sh --': none of tcptune's options: {got}")

print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
