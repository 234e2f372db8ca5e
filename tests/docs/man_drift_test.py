"""The man pages cannot drift from the code: every subcommand and option CLI11 defines appears in
tcptune(1) under its command's heading (and every option listed there exists), every key the
policy loader accepts and every keep_warm protocol appears in tcptune-policy(5) as an entry of
its section, every hooked function (shim/next/hook_table.def) appears in libtcptune(7), every
preset of config/presets in tcptune(1)'s PRESETS, and every TCPTUNE_ variable the sources name in
tcptune(1)'s ENVIRONMENT.

What the command line and the policy define is read from the build (tcptune_cli_reference json,
which walks the same CLI11 definition and key tables the command uses); the pages are read as
man(1) renders them. A command documented before it exists is marked in the page's source with
a "; drift: pending COMMAND" comment; once the command exists the test fails until its entry has
been checked against the real options and the mark removed."""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

p = argparse.ArgumentParser()
for a in ("--reference", "--man-dir", "--source-dir"):
    p.add_argument(a, required=True)
args = p.parse_args()

if shutil.which("man") is None or shutil.which("groff") is None:
    print("SKIP: man or groff is not installed (apt-get install man-db groff-base)")
    sys.exit(77)

failures = []
checked = 0


def check(ok, what):
    global checked
    checked += 1
    if not ok:
        failures.append(what)
        print("FAIL " + what, flush=True)


def render(page):
    """The page as man shows it, on lines long enough that no name is broken."""
    env = dict(os.environ, MANWIDTH="400", LC_ALL="C.UTF-8")
    out = subprocess.run(["man", "--no-hyphenation", "--no-justification", "-l", page], capture_output=True,
                         text=True, env=env, timeout=60, check=True).stdout
    return out.splitlines()


def sections(lines):
    """{SECTION: lines}, a section running from its heading (at column 0) to the next."""
    out, name = {}, None
    for line in lines:
        if line and not line[0].isspace():
            name = line.strip()
            out.setdefault(name, [])
        elif name is not None:
            out[name].append(line)
    return out


def subsections(lines):
    """{SUBSECTION: lines}, headings indented by three spaces."""
    out, name = {}, None
    for line in lines:
        m = re.match(r"^ {3}(\S.*)$", line)
        if m:
            name = m.group(1).strip()
            out.setdefault(name, [])
        elif name is not None:
            out[name].append(line)
    return out


ENTRY = re.compile(r"^ {7}(\S.*)$")
NAME = re.compile(r"[-\w]+")


def entry_names(lines):
    """The names entries start with. An entry is a term line at the section's indent followed by
    its indented body (a paragraph is followed by a blank line): "-q, --quiet" gives -q and
    --quiet, "--policy FILE" --policy, "CMD [ARGS...]" CMD, "nodelay = ..." nodelay."""
    names = set()
    for line, following in zip(lines, lines[1:] + [""]):
        m = ENTRY.match(line)
        if not m or not re.match(r"^ {8,}\S", following):
            continue
        for part in m.group(1).split(", "):
            word = NAME.match(part)
            if word:
                names.add(word.group(0))
            if " " in part.strip():
                break  # "--policy FILE, ..." : what follows the first space is no name
    return names


reference = json.loads(subprocess.run([args.reference, "json"], capture_output=True, text=True, check=True,
                                      timeout=60).stdout)

# -- tcptune(1): commands and their options ----------------------------------------------------
page = os.path.join(args.man_dir, "man1", "tcptune.1")
with open(os.path.join(args.source_dir, "docs", "man", "tcptune.1.scd"), encoding="utf-8") as f:
    pending = set(re.findall(r"^; drift: pending (\S+)$", f.read(), re.M))
tcptune_sections = sections(render(page))
commands = subsections(tcptune_sections.get("COMMANDS", []))
documented = {heading.split(" ", 1)[1]: lines for heading, lines in commands.items() if heading.startswith("tcptune ")}
defined = {command["name"]: command for command in reference["commands"]}
check(defined, "the reference lists no command: tcptune_cli_reference json is broken")

top_names = {name for option in reference["top"]["options"] for name in option["names"]}
everywhere = subsections(tcptune_sections.get("COMMANDS", [])).get("Options of every command", [])
for name in sorted(top_names):
    check(name in entry_names(everywhere), f"tcptune(1): tcptune's own option {name} has no entry under "
          "COMMANDS, 'Options of every command'")

for name, command in defined.items():
    if name in pending:
        check(False, f"tcptune(1): '{name}' now exists but its entry is still marked '; drift: pending {name}' in "
              "docs/man/tcptune.1.scd: check the entry against `tcptune " + name + " --help`, then remove the mark")
    lines = documented.get(name)
    check(lines is not None, f"tcptune(1): command '{name}' has no subsection 'tcptune {name}' under COMMANDS")
    if lines is None:
        continue
    names = entry_names(lines)
    for option in command["options"] + command["positionals"]:
        for option_name in option["names"]:
            if option_name in top_names:
                continue  # -h, --help: documented once, under 'Options of every command'
            check(option_name in names, f"tcptune(1): 'tcptune {name}' has no entry for {option_name}")
    known = {n for option in command["options"] + command["positionals"] for n in option["names"]}
    for stale in sorted(n for n in names if n.startswith("-") and n not in known):
        check(False, f"tcptune(1): 'tcptune {name}' documents {stale}, which the command does not have")

for name in sorted(documented):
    check(name in defined or name in pending,
          f"tcptune(1): documents 'tcptune {name}', which is no command (and is not marked pending)")

# The presets tcptune installs, each an entry of PRESETS.
preset_files = sorted(f[:-len(".toml")] for f in os.listdir(os.path.join(args.source_dir, "config", "presets"))
                      if f.endswith(".toml"))
check(preset_files, "config/presets holds no preset")
preset_entries = entry_names(tcptune_sections.get("PRESETS", []))
for preset in preset_files:
    check(preset in preset_entries, f"tcptune(1): preset '{preset}' has no entry under PRESETS")
for stale in sorted(preset_entries - set(preset_files)):
    check(False, f"tcptune(1): PRESETS documents '{stale}', which config/presets does not have")

# -- tcptune-policy(5): every key, in its section ----------------------------------------------
policy_sections = sections(render(os.path.join(args.man_dir, "man5", "tcptune-policy.5")))
keys = reference["policy"]
where = [("top_level", "TOP LEVEL"), ("rule", "RULES AND MATCHING"), ("match", "RULES AND MATCHING"),
         ("tuning", "TUNING KEYS"), ("log", "LOG KEYS"), ("keep_warm_protocols", "TUNING KEYS")]
for kind, section in where:
    check(keys.get(kind), f"the reference lists no {kind} key")
    names = entry_names(policy_sections.get(section, []))
    for key in keys.get(kind, []):
        check(key in names, f"tcptune-policy(5): {kind} key '{key}' has no entry under {section}")

# -- libtcptune(7): every hooked function ------------------------------------------------------
with open(os.path.join(args.source_dir, "shim", "next", "hook_table.def"), encoding="utf-8") as f:
    hooks = re.findall(r"^\s*TCPTUNE_HOOK_\w+\((\w+)", f.read(), re.M)
check(len(hooks) > 20, f"shim/next/hook_table.def: {len(hooks)} hooks read, expected the table")
hooked = set()
for line in sections(render(os.path.join(args.man_dir, "man7", "libtcptune.7"))).get("WHAT IS HOOKED", []):
    if ENTRY.match(line):
        hooked.update(re.findall(r"[A-Za-z_]\w*", line))
for hook in hooks:
    check(hook in hooked, f"libtcptune(7): hooked function '{hook}' is not named under WHAT IS HOOKED")

# -- every TCPTUNE_ variable the code reads, in tcptune(1)'s ENVIRONMENT ---------------------------
variables = set()
for part in ("shim", "config", "cli", "supervisor"):
    for root, _, files in os.walk(os.path.join(args.source_dir, part)):
        for name in files:
            if name.endswith((".c", ".h", ".cpp", ".hpp")):
                with open(os.path.join(root, name), encoding="utf-8", errors="replace") as f:
                    variables.update(re.findall(r'"(TCPTUNE_[A-Z0-9_]+)"', f.read()))
check(len(variables) >= 8, f"the sources name the environment variables: {sorted(variables)}")
environment = set()
for line in tcptune_sections.get("ENVIRONMENT", []):
    if ENTRY.match(line):
        environment.update(re.findall(r"TCPTUNE_[A-Z0-9_]+", line))
for variable in sorted(variables):
    check(variable in environment, f"tcptune(1): environment variable {variable} has no entry under ENVIRONMENT")

print(f"{checked} checks, {len(failures)} failed")
sys.exit(1 if failures else 0)
