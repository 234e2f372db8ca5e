"""tcptune enable / disable on unit files under a temporary --root, read back the way systemd reads
them (a small reader of its own here, independent of tcptune's) and the resulting service started
as systemd would start it (its environment and ExecStart=, without systemd):

- a unit without LD_PRELOAD: the service's program has the shim mapped; the unit file is untouched;
- a unit that preloads a library itself (a continued, quoted Environment= line): both are mapped;
- a drop-in that replaces the unit's LD_PRELOAD: the drop-in's library is kept, the unit's is not;
- enable twice: the same bytes ("unchanged"); after the unit's drop-in changes, enable refreshes;
- disable restores the tree exactly (paths, bytes, modes), whether enable made UNIT.d or not;
  disable when enable never ran changes nothing; a zz-tcptune.conf tcptune did not write stays;
- a static program (Type=notify) and a Go program: ExecStart= is wrapped in tcptune run, which
  runs it supervised; NotifyAccess=all, KillMode=mixed; every command of a oneshot with its
  prefixes kept;
- a template, an instance (reading the template's drop-in), an EnvironmentFile= that sets
  LD_PRELOAD, --policy (valid, invalid: 78 and nothing written), and the refusals (a socket unit,
  a missing or masked unit, Type=forking for a static program);
- enable again keeps the --policy and --supervise of the drop-in it refreshes (disable drops them);
- a name with systemd-escape's backslash (a-b\\x2dc.service): the commands printed, pasted in a
  shell, name the unit; a template's journalctl -u names every instance.

With --verify, each result is also checked by `systemd-analyze verify --root` (exit 77 when
systemd-analyze is missing or cannot run here)."""
import argparse
import os
import shlex
import shutil
import stat
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "preload"))
from testlib import Checks, clean_env, skip  # noqa: E402

BOUND = 30
DROPIN = "zz-tcptune.conf"

p = argparse.ArgumentParser()
for a in ("--tcptune", "--shim", "--static-hello", "--marker", "--work-dir"):
    p.add_argument(a, required=True)
p.add_argument("--verify", action="store_true")
args = p.parse_args()
shutil.rmtree(args.work_dir, ignore_errors=True)
os.makedirs(args.work_dir)
checks = Checks()
check = checks.check
shim = os.path.realpath(args.shim)
tcptune = os.path.realpath(args.tcptune)

if args.verify:
    if shutil.which("systemd-analyze") is None:
        skip("no systemd-analyze")
    probe = os.path.join(args.work_dir, "probe")
    os.makedirs(os.path.join(probe, "etc/systemd/system"))
    with open(os.path.join(probe, "etc/systemd/system/probe.service"), "w", encoding="utf-8") as f:
        f.write("[Unit]\nDefaultDependencies=no\n[Service]\nExecStart=/bin/true\n")
    os.makedirs(os.path.join(probe, "bin"))
    shutil.copy("/bin/true", os.path.join(probe, "bin/true"))
    try:
        r = subprocess.run(["systemd-analyze", "verify", f"--root={probe}", "probe.service"], capture_output=True,
                           text=True, timeout=BOUND)
    except (OSError, subprocess.TimeoutExpired) as error:
        skip(f"systemd-analyze cannot run here: {error}")
    if r.returncode != 0:
        skip(f"systemd-analyze verify does not work here: {r.stderr.strip()}")


# ---- a reader of unit files, as systemd.syntax(7) and systemd.exec(5) describe them ----------

def assignments(text):
    """(section, key, value) in order: comments, continuations (comment lines inside skipped)."""
    out, section, pending = [], None, None
    for raw in text.split("\n"):
        if pending is not None and raw.strip()[:1] in ("#", ";"):
            continue
        line = raw if pending is None else pending + raw
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending = line[:-1] + " "
            continue
        pending = None
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            section = line[1:-1]
            continue
        key, _, value = line.partition("=")
        out.append((section, key.strip(), value.strip()))
    return out


def effective(root, name):
    """The service's environment and ExecStart= commands from its unit and drop-ins."""
    template = name.split("@")[0] + "@.service" if "@" in name else None
    unit_file = None
    for base in ("etc/systemd/system", "usr/lib/systemd/system"):
        for candidate in filter(None, (name, template)):
            path = os.path.join(root, base, candidate)
            if unit_file is None and os.path.exists(path):
                unit_file = path
    dropins = {}
    for base in ("etc/systemd/system", "usr/lib/systemd/system"):
        for candidate in filter(None, (name, template)):
            d = os.path.join(root, base, candidate + ".d")
            if os.path.isdir(d):
                for f in os.listdir(d):
                    if f.endswith(".conf"):
                        dropins.setdefault(f, os.path.join(d, f))
    env, execs = {}, []
    for path in [unit_file] + [dropins[k] for k in sorted(dropins)]:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for section, key, value in assignments(text):
            if section != "Service":
                continue
            if key == "Environment":
                if not value:
                    env = {}
                for word in shlex.split(value):
                    k, _, v = word.partition("=")
                    env[k] = v.replace("%%", "%")
            elif key == "ExecStart":
                execs = [] if not value else execs + [value]
            elif key in ("Type", "NotifyAccess", "KillMode"):
                env["@" + key] = value
    return env, execs


def start(root, name, env_extra=None):
    """Each ExecStart= command run with the service's environment; (status, stdout, stderr) each."""
    env, execs = effective(root, name)
    run_env = clean_env(**{k: v for k, v in env.items() if not k.startswith("@")})
    run_env.update(env_extra or {})
    results = []
    for line in execs:
        words = shlex.split(line)
        words[0] = words[0].lstrip("-:+!@")
        # Programs named inside the root run from there.
        words = [os.path.join(root, w[1:]) if w.startswith("/usr/bin/") else w for w in words]
        r = subprocess.run(words, env=run_env, capture_output=True, text=True, timeout=BOUND)
        results.append((r.returncode, r.stdout, r.stderr))
    return results


# ---- fixtures --------------------------------------------------------------------------------

def tree(root):
    """Every path under root with its type, mode and bytes: what disable must give back."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            path = os.path.join(dirpath, n)
            st = os.lstat(path)
            content = None
            if stat.S_ISREG(st.st_mode):
                with open(path, "rb") as f:
                    content = f.read()
            elif stat.S_ISLNK(st.st_mode):
                content = os.readlink(path)
            out[os.path.relpath(path, root)] = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), content)
    return out


def new_root(name):
    root = os.path.join(args.work_dir, name)
    for d in ("etc/systemd/system", "usr/lib/systemd/system", "usr/bin", "usr/lib/preload"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    shutil.copy("/usr/bin/cat", os.path.join(root, "usr/bin/dyn-app"))
    shutil.copy(args.static_hello, os.path.join(root, "usr/bin/static-app"))
    # The same library under two names, so that which of them is preloaded shows in the maps.
    for lib in ("libmarker-unit.so", "libmarker-dropin.so"):
        shutil.copy(args.marker, os.path.join(root, "usr/lib/preload", lib))
    # tcptune itself where a wrapped ExecStart= names it, for systemd-analyze verify.
    inside = os.path.join(root, tcptune.lstrip("/"))
    os.makedirs(os.path.dirname(inside), exist_ok=True)
    try:
        os.link(tcptune, inside)
    except OSError:
        shutil.copy(tcptune, inside)
    return root


def write(root, path, text):
    full = os.path.join(root, path.lstrip("/"))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w", encoding="utf-8") as f:
        f.write(text)


def tool(*argv):
    return subprocess.run([args.tcptune, *argv], env=clean_env(), capture_output=True, text=True, timeout=BOUND)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def dropin_path(root, name):
    return os.path.join(root, "etc/systemd/system", name + ".d", DROPIN)


def marker(root, lib):
    return os.path.join(root, "usr/lib/preload", lib)


def verify(root, name, what):
    if not args.verify:
        return
    r = subprocess.run(["systemd-analyze", "verify", f"--root={root}", name], capture_output=True, text=True,
                       timeout=BOUND)
    ours = [line for line in r.stderr.splitlines() if DROPIN in line]
    check(r.returncode == 0 and not ours, f"{what}: systemd-analyze verify accepts it ({r.stderr.strip()!r})")


UNIT_HEAD = "[Unit]\nDescription=test\nDefaultDependencies=no\n\n[Service]\n"

# ---- a dynamic program: LD_PRELOAD -----------------------------------------------------------

root = new_root("plain")
unit_text = UNIT_HEAD + "ExecStart=/usr/bin/dyn-app /proc/self/maps\n"
write(root, "/usr/lib/systemd/system/app.service", unit_text)
before = tree(root)
r = tool("enable", "app", "--root", root)
check(r.returncode == 0, f"enable app: exit 0 ({r.returncode}; {r.stderr.strip()})")
check(os.path.exists(dropin_path(root, "app.service")), "the drop-in is app.service.d/zz-tcptune.conf in /etc")
check("systemctl daemon-reload" in r.stdout and "systemctl restart app.service" in r.stdout,
      f"enable prints daemon-reload and restart ({r.stdout!r})")
check("snapshot" in r.stdout and "tcptune enable app again" in r.stdout, "enable says the drop-in is a snapshot")
check("journalctl -u app.service" in r.stdout, "enable says where the log goes")
check(read(os.path.join(root, "usr/lib/systemd/system/app.service")) == unit_text, "the unit file is untouched")
env, _ = effective(root, "app.service")
check(env.get("LD_PRELOAD") == shim, f"LD_PRELOAD is the shim found as tcptune run finds it ({env.get('LD_PRELOAD')})")
check(env.get("TCPTUNE_LOG") == "stderr", "TCPTUNE_LOG=stderr: the journal, never the working directory")
(status, maps, _), = start(root, "app.service")
check(status == 0 and shim in maps, "the service's program has the shim mapped")
verify(root, "app.service", "a dynamic program's drop-in")
mode = stat.S_IMODE(os.stat(dropin_path(root, "app.service")).st_mode)
check(mode == 0o644, f"the drop-in is 0644 ({oct(mode)})")
r = tool("disable", "app.service", "--root", root)
check(r.returncode == 0 and "removed" in r.stdout and "systemctl daemon-reload" in r.stdout,
      f"disable: exit 0, removed, daemon-reload ({r.stdout!r})")
check(tree(root) == before, "disable gives the tree back exactly (the directory enable made removed)")
r = tool("disable", "app.service", "--root", root)
check(r.returncode == 0 and "nothing to do" in r.stdout and tree(root) == before,
      "disable when enable never ran: exit 0, nothing to do, nothing changed")

# ---- the unit's own preload, then a drop-in that replaces it ---------------------------------

root = new_root("preloads")
write(root, "/usr/lib/systemd/system/app.service",
      UNIT_HEAD + "# a comment\nEnvironment=\"GREETING=a b\" \\\n# inside the continuation\n"
      f"  LD_PRELOAD={marker(root, 'libmarker-unit.so')}\nExecStart=/usr/bin/dyn-app /proc/self/maps\n")
r = tool("enable", "app.service", "--root", root)
env, _ = effective(root, "app.service")
check(r.returncode == 0 and env.get("LD_PRELOAD") == shim + ":" + marker(root, "libmarker-unit.so"),
      f"the unit's LD_PRELOAD is kept after the shim ({env.get('LD_PRELOAD')})")
check(env.get("GREETING") == "a b", "the unit's other variables are left as they are")
(status, maps, _), = start(root, "app.service")
check(status == 0 and shim in maps and "libmarker-unit.so" in maps, "both the shim and the unit's library are mapped")
verify(root, "app.service", "a unit with its own LD_PRELOAD")
tool("disable", "app.service", "--root", root)

write(root, "/etc/systemd/system/app.service.d/override.conf",
      f"[Service]\nEnvironment=LD_PRELOAD={marker(root, 'libmarker-dropin.so')}\n")
before = tree(root)
r = tool("enable", "app.service", "--root", root)
env, _ = effective(root, "app.service")
check(r.returncode == 0 and env.get("LD_PRELOAD") == shim + ":" + marker(root, "libmarker-dropin.so"),
      f"a drop-in's LD_PRELOAD (which replaced the unit's) is the one kept ({env.get('LD_PRELOAD')})")
(status, maps, _), = start(root, "app.service")
check(shim in maps and "libmarker-dropin.so" in maps and "libmarker-unit.so" not in maps,
      "the shim and the drop-in's library are mapped, the unit's (replaced) is not")
first = read(dropin_path(root, "app.service"))
r = tool("enable", "app.service", "--root", root)
check(r.returncode == 0 and "unchanged" in r.stdout and read(dropin_path(root, "app.service")) == first,
      "enable twice: the same drop-in, byte for byte, and it says unchanged")
write(root, "/etc/systemd/system/app.service.d/override.conf",
      f"[Service]\nEnvironment=LD_PRELOAD={marker(root, 'libmarker-unit.so')}\n")
r = tool("enable", "app.service", "--root", root)
env, _ = effective(root, "app.service")
check(r.returncode == 0 and "refreshed" in r.stdout and env.get("LD_PRELOAD") == shim + ":" + marker(root, "libmarker-unit.so"),
      f"after the override changes, enable again refreshes the snapshot ({env.get('LD_PRELOAD')})")
write(root, "/etc/systemd/system/app.service.d/override.conf",
      f"[Service]\nEnvironment=LD_PRELOAD={marker(root, 'libmarker-dropin.so')}\n")
r = tool("disable", "app.service", "--root", root)
check(r.returncode == 0 and tree(root) == before,
      "disable gives the tree back exactly (UNIT.d, which enable did not make, stays with override.conf)")

# A file of that name that tcptune did not write is left alone, by disable and by enable.
write(root, "/etc/systemd/system/app.service.d/" + DROPIN, "[Service]\nEnvironment=MINE=1\n")
r = tool("disable", "app.service", "--root", root)
check(r.returncode == 1 and "not written by tcptune enable" in r.stderr and os.path.exists(dropin_path(root, "app.service")),
      "disable leaves a zz-tcptune.conf it did not write (exit 1)")
r = tool("enable", "app.service", "--root", root)
check(r.returncode == 1 and read(dropin_path(root, "app.service")) == "[Service]\nEnvironment=MINE=1\n",
      "enable does not overwrite it either (exit 1)")

# ---- programs the loader does not preload into: ExecStart= wrapped in tcptune run ------------

root = new_root("static")
write(root, "/usr/lib/systemd/system/app.service",
      UNIT_HEAD + "Type=notify\nExecStart=-/usr/bin/static-app --flag \"two words\"\n")
before = tree(root)
r = tool("enable", "app.service", "--root", root)
check(r.returncode == 0 and "statically linked" in r.stdout and "wrapped in tcptune run" in r.stdout,
      f"a static program: enable says it wraps ExecStart= and why ({r.stdout!r})")
env, execs = effective(root, "app.service")
check(len(execs) == 1 and shlex.split(execs[0])[:5] == ["-" + tcptune, "run", "-q", "--", "/usr/bin/static-app"]
      and shlex.split(execs[0])[5:] == ["--flag", "two words"],
      f"ExecStart= is reset and wraps the program, its prefix and arguments kept ({execs})")
check(env.get("@NotifyAccess") == "all" and env.get("@KillMode") == "mixed",
      "Type=notify: NotifyAccess=all (the program notifies as a child); KillMode=mixed (one SIGTERM, passed on)")
check("LD_PRELOAD" not in env, "no LD_PRELOAD for a program that ignores it")
check("$MAINPID is tcptune run while it supervises" in r.stdout, "enable says what $MAINPID now is")
(status, out, err), = start(root, "app.service")
check(status == 0 and "hello" in out and "supervised mode" in err,
      f"the wrapped command runs the program, supervised ({status}; {err.strip()!r})")
verify(root, "app.service", "a wrapped static program")
tool("disable", "app.service", "--root", root)
check(tree(root) == before, "disable gives the tree back exactly (wrapped)")

# A Go program (a .note.go.buildid section is what marks one).
note = os.path.join(args.work_dir, "go-note")
with open(note, "wb") as f:
    f.write(b"go build id")
subprocess.run(["objcopy", f"--add-section=.note.go.buildid={note}", "/usr/bin/true",
                os.path.join(root, "usr/bin/go-app")], check=True)
write(root, "/usr/lib/systemd/system/goapp.service", UNIT_HEAD + "ExecStart=/usr/bin/go-app\n")
r = tool("enable", "goapp.service", "--root", root)
_, execs = effective(root, "goapp.service")
check(r.returncode == 0 and "Go program" in r.stdout and len(execs) == 1 and "run -q -- /usr/bin/go-app" in execs[0],
      f"a Go program: ExecStart= wrapped ({execs})")
verify(root, "goapp.service", "a wrapped Go program")

# A oneshot with two ExecStart= lines: one static, one dynamic; every command wrapped, prefixes kept.
write(root, "/usr/lib/systemd/system/batch.service",
      UNIT_HEAD + "Type=oneshot\nExecStart=-/usr/bin/static-app\nExecStart=:/usr/bin/dyn-app /proc/self/maps\n")
r = tool("enable", "batch", "--root", root)
env, execs = effective(root, "batch.service")
check(r.returncode == 0 and len(execs) == 2 and execs[0].startswith("-" + tcptune) and execs[1].startswith(":" + tcptune),
      f"a oneshot: both commands wrapped, each with its prefix ({execs})")
check("@NotifyAccess" not in env, "no NotifyAccess= for a service that does not notify")
results = start(root, "batch.service")
check(results[0][0] == 0 and "supervised mode" in results[0][2], "the static command runs supervised")
check(results[1][0] == 0 and shim in results[1][1], "the dynamic command runs with the shim preloaded by tcptune run")
verify(root, "batch.service", "a wrapped oneshot")

# Type=forking cannot be wrapped; the refusal writes nothing.
write(root, "/usr/lib/systemd/system/forker.service", UNIT_HEAD + "Type=forking\nExecStart=/usr/bin/static-app\n")
r = tool("enable", "forker", "--root", root)
check(r.returncode == 1 and "forking" in r.stderr and not os.path.exists(dropin_path(root, "forker.service")),
      f"Type=forking with a static program: refused, nothing written ({r.stderr.strip()})")

# An EnvironmentFile= that sets LD_PRELOAD would replace the drop-in's: wrapped instead.
write(root, "/etc/default/envapp", "# settings\nLD_PRELOAD=" + marker(root, "libmarker-unit.so") + "\n")
write(root, "/usr/lib/systemd/system/envapp.service",
      UNIT_HEAD + "EnvironmentFile=-/etc/default/envapp\nExecStart=/usr/bin/dyn-app /proc/self/maps\n")
r = tool("enable", "envapp", "--root", root)
_, execs = effective(root, "envapp.service")
check(r.returncode == 0 and "EnvironmentFile=/etc/default/envapp sets LD_PRELOAD" in r.stdout and "run -q" in execs[0],
      f"EnvironmentFile= with LD_PRELOAD: ExecStart= wrapped, and said why ({r.stdout!r})")

# ---- templates, instances, policies, refusals ------------------------------------------------

root = new_root("templates")
write(root, "/usr/lib/systemd/system/web@.service", UNIT_HEAD + "ExecStart=/usr/bin/dyn-app /proc/self/maps\n")
r = tool("enable", "web@.service", "--root", root)
check(r.returncode == 0 and os.path.exists(dropin_path(root, "web@.service")) and "'web@*.service'" in r.stdout,
      f"a template: web@.service.d, and every running instance to restart ({r.stdout!r})")
verify(root, "web@one.service", "a template's drop-in, verified on an instance")
tool("disable", "web@.service", "--root", root)
write(root, "/etc/systemd/system/web@.service.d/override.conf",
      f"[Service]\nEnvironment=LD_PRELOAD={marker(root, 'libmarker-dropin.so')}\n")
r = tool("enable", "web@one.service", "--root", root)
env, _ = effective(root, "web@one.service")
check(r.returncode == 0 and os.path.exists(dropin_path(root, "web@one.service"))
      and env.get("LD_PRELOAD") == shim + ":" + marker(root, "libmarker-dropin.so"),
      f"an instance: its own drop-in, keeping what the template's drop-in preloads ({env.get('LD_PRELOAD')})")
(status, maps, _), = start(root, "web@one.service")
check(shim in maps and "libmarker-dropin.so" in maps, "the instance's program has both mapped")

# A static template enabled, then one of its instances: the instance's drop-in (same name, more
# specific) masks the template's, so it wraps the program itself, not the template's wrapper.
write(root, "/usr/lib/systemd/system/job@.service", UNIT_HEAD + "ExecStart=/usr/bin/static-app %i\n")
tool("enable", "job@.service", "--root", root)
r = tool("enable", "job@two.service", "--root", root)
_, execs = effective(root, "job@two.service")
check(r.returncode == 0 and len(execs) == 1 and shlex.split(execs[0])[3:] == ["--", "/usr/bin/static-app", "%i"],
      f"template and instance both enabled: the instance wraps the program once ({execs})")

write(root, "/etc/tcptune/web.toml", "version = 1\n[defaults]\nnodelay = \"on\"\n")
write(root, "/usr/lib/systemd/system/pol.service", UNIT_HEAD + "ExecStart=/usr/bin/dyn-app\n")
r = tool("enable", "pol", "--root", root, "--policy", "/etc/tcptune/web.toml")
env, _ = effective(root, "pol.service")
check(r.returncode == 0 and env.get("TCPTUNE_POLICY") == "/etc/tcptune/web.toml",
      f"--policy: TCPTUNE_POLICY, the path the service reads ({env.get('TCPTUNE_POLICY')}; {r.stderr.strip()})")
write(root, "/etc/tcptune/bad.toml", "version = 1\n[defaults]\nnodelay = \"sometimes\"\n")
tool("disable", "pol", "--root", root)
before = tree(root)
r = tool("enable", "pol", "--root", root, "--policy", "/etc/tcptune/bad.toml")
check(r.returncode == 78 and "bad.toml" in r.stderr and tree(root) == before,
      f"an invalid --policy: exit 78, the error named, nothing written ({r.stderr.strip()})")

# ---- enable again, as the drop-in asks after the unit changes: what enable was told is kept ---

r = tool("enable", "pol", "--root", root, "--policy", "/etc/tcptune/web.toml")
r = tool("enable", "pol", "--root", root)
env, _ = effective(root, "pol.service")
check(r.returncode == 0 and env.get("TCPTUNE_POLICY") == "/etc/tcptune/web.toml" and "kept" in r.stdout,
      f"enable again without --policy keeps the drop-in's TCPTUNE_POLICY, and says so ({env.get('TCPTUNE_POLICY')}; "
      f"{r.stdout!r})")
tool("disable", "pol", "--root", root)
r = tool("enable", "pol", "--root", root)
env, _ = effective(root, "pol.service")
check(r.returncode == 0 and "TCPTUNE_POLICY" not in env,
      f"after disable, enable without --policy writes none ({env.get('TCPTUNE_POLICY')})")
tool("disable", "pol", "--root", root)
write(root, "/usr/lib/systemd/system/sup.service", UNIT_HEAD + "ExecStart=/usr/bin/dyn-app\n")
tool("enable", "sup", "--root", root, "--supervise")
r = tool("enable", "sup", "--root", root)
env, execs = effective(root, "sup.service")
check(r.returncode == 0 and len(execs) == 1 and "--supervise" in shlex.split(execs[0]) and "LD_PRELOAD" not in env,
      f"enable again without --supervise keeps the wrapping --supervise asked for ({execs})")
tool("disable", "sup", "--root", root)
r = tool("enable", "sup", "--root", root)
env, execs = effective(root, "sup.service")
check(r.returncode == 0 and execs == ["/usr/bin/dyn-app"] and env.get("LD_PRELOAD") == shim,
      f"after disable, enable without --supervise preloads ({execs}, {env.get('LD_PRELOAD')})")
tool("disable", "sup", "--root", root)

# ---- names with systemd-escape's backslash: the commands printed work when pasted in a shell ----


def typed_after(text, command):
    """The word after COMMAND on the first line that has it, as a shell reads the line."""
    for line in text.splitlines():
        if command in line:
            words = shlex.split(line[line.index(command):])
            return words[len(command.split())]
    return None


escaped = "a-b\\x2dc.service"
write(root, "/usr/lib/systemd/system/" + escaped, UNIT_HEAD + "ExecStart=/usr/bin/dyn-app /proc/self/maps\n")
r = tool("enable", escaped, "--root", root)
dropin = read(dropin_path(root, escaped)) if os.path.exists(dropin_path(root, escaped)) else ""
check(r.returncode == 0 and typed_after(r.stdout, "systemctl restart") == escaped
      and typed_after(r.stdout, "journalctl -u") == escaped and typed_after(r.stdout, "run tcptune enable") == escaped
      and typed_after(dropin, "tcptune disable") == escaped and typed_after(dropin, "run tcptune enable") == escaped,
      f"{escaped}: restart, journalctl, enable again and disable, as printed, name the unit in a shell ({r.stdout!r})")
(status, maps, _), = start(root, escaped)
check(status == 0 and shim in maps, f"{escaped}: the program has the shim mapped")
verify(root, escaped, f"{escaped}'s drop-in")
r = tool("disable", typed_after(dropin, "tcptune disable"), "--root", root)
check(r.returncode == 0 and not os.path.exists(os.path.dirname(dropin_path(root, escaped)))
      and typed_after(r.stdout, "systemctl restart") == escaped,
      f"{escaped}: disable as the drop-in says removes it ({r.stdout!r})")
write(root, "/usr/lib/systemd/system/web@.service", UNIT_HEAD + "ExecStart=/usr/bin/dyn-app %i\n")
r = tool("enable", "web@", "--root", root)
check(r.returncode == 0 and typed_after(r.stdout, "journalctl -u") == "web@*.service",
      f"a template: journalctl -u for every instance, quoted for the shell ({r.stdout!r})")
tool("disable", "web@", "--root", root)

for argv, expected, what in (
        (["enable", "app.socket"], "not a service", "a socket unit"),
        (["enable", "absent"], "no unit file absent.service", "a missing unit"),
        (["enable", "masked"], "masked", "a masked unit"),
        (["disable", "app.timer"], "not a service", "disable of a timer")):
    if what == "a masked unit":
        os.symlink("/dev/null", os.path.join(root, "etc/systemd/system/masked.service"))
    r = tool(*argv, "--root", root)
    check(r.returncode == 1 and expected in r.stderr and len(r.stderr.strip().splitlines()) == 1,
          f"{what}: exit 1 and one clear line ({r.stderr.strip()!r})")

checks.finish()
