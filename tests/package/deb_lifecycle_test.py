#!/usr/bin/env python3
"""The Debian package through its life on this system, with dpkg: built by scripts/package (lintian
without an error), installed, installed again over itself, removed, purged. Checked on the way:
its fields (Depends on libc6 alone, at the shim's glibc floor read from the installed objects) and
conffile; the layout, stripped; the installed tcptune tunes a child (run, LD_PRELOAD with the path
users write, the container entrypoint, `tcptune install DIR`); the example /etc/tcptune/policy.toml
is read and changes nothing until edited, an edit survives the upgrade and the removal; after the
purge nothing the package installed or made is left (the conffile and run's /var/log/tcptune
included). Two services enabled with the installed tcptune (preloaded, wrapped): their drop-ins name
the installed files, survive the upgrade, are named by dpkg --remove (the wrapped one would not
start) and go with the purge. A newer version that changes the conffile, installed without a
terminal with --force-confdef --force-confold, keeps the admin's file. Whatever happens, the
package is purged on the way out.

Root only; exit 77 without root, without dpkg-deb or lintian, or where the package would replace
something (a tcptune package or a file of its own already there, logs in /var/log/tcptune)."""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "preload"))
import testlib  # noqa: E402

PACKAGE = "tcptune"
BUILD_SECONDS = 1500  # scripts/package compiles the product in build/package when it is not built
STEP_SECONDS = 120
# Before ctest's TIMEOUT (1800 s), which kills without a word: the purge on the way out still runs.
DEADLINE = time.monotonic() + 1700
SHIMDIR = "/usr/lib/x86_64-linux-gnu/tcptune"
SHIM = SHIMDIR + "/libtcptune.so"
CORE = SHIMDIR + "/libtcptune-core.so"
POLICY = "/etc/tcptune/policy.toml"
LOG_DIR = "/var/log/tcptune"
# Two services `tcptune enable` tunes with the installed tcptune (their unit files made by the test
# in /etc/systemd/system): one preloaded, one wrapped in tcptune run (--supervise).
UNIT_DIR = "/etc/systemd/system"
UNITS = {"tcptune-lifecycle-preloaded.service": [], "tcptune-lifecycle-wrapped.service": ["--supervise"]}

parser = argparse.ArgumentParser()
parser.add_argument("--source-dir", required=True)
parser.add_argument("--probe", required=True)
parser.add_argument("--nodelay-policy", required=True, help="a policy with nodelay = \"on\"")
parser.add_argument("--work-dir", required=True)
args = parser.parse_args()
args.probe, args.nodelay_policy = os.path.abspath(args.probe), os.path.abspath(args.nodelay_policy)

if os.geteuid() != 0:
    testlib.skip("installs a package with dpkg: root only")
for tool in ("dpkg", "dpkg-deb", "lintian", "readelf"):
    if shutil.which(tool) is None:
        testlib.skip(f"{tool} is not installed (scripts/deps.sh test installs it)")


def run(cmd, timeout=STEP_SECONDS, **kwargs):
    timeout = max(5, min(timeout, DEADLINE - time.monotonic()))
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kwargs)
    except subprocess.TimeoutExpired as expired:
        return subprocess.CompletedProcess(cmd, -1, expired.stdout or "", f"timed out after {timeout} s")
    except OSError as error:
        return subprocess.CompletedProcess(cmd, 127, "", str(error))


def package_state():
    r = run(["dpkg-query", "-W", "-f=${Status}", PACKAGE])
    return r.stdout.strip() if r.returncode == 0 else ""


if package_state() not in ("", "unknown ok not-installed"):
    testlib.skip(f"a {PACKAGE} package is on this system ({package_state()}): the test does not replace it")
if os.path.isdir(LOG_DIR) and os.listdir(LOG_DIR):
    testlib.skip(f"{LOG_DIR} holds logs, which purging the package would remove")
log_dir_was_there = os.path.isdir(LOG_DIR)
if any(os.path.lexists(os.path.join(UNIT_DIR, name + suffix)) for name in UNITS for suffix in ("", ".d")):
    testlib.skip(f"a unit of the test's names is in {UNIT_DIR} already: {sorted(UNITS)}")

checks = testlib.Checks()
check = checks.check
os.makedirs(args.work_dir, exist_ok=True)
work = tempfile.mkdtemp(dir=args.work_dir)

built = run([os.path.join(args.source_dir, "scripts/package")], timeout=BUILD_SECONDS)
if not check(built.returncode == 0, "scripts/package builds the package, and lintian reports no error"):
    print(built.stdout[-3000:], built.stderr[-3000:])
    checks.finish()
deb = os.path.abspath(os.path.join(args.source_dir, built.stdout.strip().splitlines()[-1]))
lintian_tags = re.findall(r"^([EWIPX]): tcptune[^:]*: (\S+)", built.stdout, re.M)
print("lintian:", ", ".join(f"{kind}: {tag}" for kind, tag in lintian_tags) or "nothing", flush=True)
check(re.fullmatch(r".*/dist/tcptune_[0-9][^_]*_amd64\.deb", deb) is not None, f"the package is dist/tcptune_VERSION_amd64.deb ({deb})")

contents = [line.split(None, 5)[5].split(" -> ")[0].lstrip(".") for line in
            run(["dpkg-deb", "-c", deb]).stdout.splitlines()]
files = [path.rstrip("/") for path in contents if not path.endswith("/")]
dirs = [path.rstrip("/") for path in contents if path.endswith("/") and path != "/"]
clashes = [path for path in files + [POLICY] if os.path.lexists(path)]
if clashes:
    testlib.skip(f"files the package installs are already here: {clashes[:5]}")
dirs_before = {path for path in dirs + ["/etc/tcptune"] if os.path.isdir(path)}


def purge_on_exit():
    """The system as it was: the package purged, /var/log/tcptune as it was found (empty or absent)."""
    if package_state() not in ("", "unknown ok not-installed"):
        run(["dpkg", "--purge", PACKAGE])
    if log_dir_was_there and not os.path.isdir(LOG_DIR):
        os.makedirs(LOG_DIR, mode=0o755)
    for name in UNITS:
        shutil.rmtree(os.path.join(UNIT_DIR, name + ".d"), ignore_errors=True)
        if os.path.lexists(os.path.join(UNIT_DIR, name)):
            os.unlink(os.path.join(UNIT_DIR, name))


class Stop(Exception):
    """Ends the checks early: the package is purged on the way out all the same."""


def on_signal(number, _frame):
    raise Stop(f"stopped by signal {number}")


signal.signal(signal.SIGTERM, on_signal)
signal.signal(signal.SIGINT, on_signal)


def env(**extra):
    """No tcptune variable and no XDG_STATE_HOME: root's default log directory is /var/log/tcptune."""
    e = testlib.clean_env(**extra)
    e.pop("XDG_STATE_HOME", None)
    return e


def nodelay(expected):
    """The probe's arguments: it checks TCP_NODELAY on a client and an accepted socket, exit 0 if as expected."""
    return [args.probe, "nodelay", "--client", str(expected), "--server", str(expected)]


def glibc_floor(paths):
    """The newest GLIBC_x.y version the objects need (their version references), as a tuple."""
    versions = set()
    for path in paths:
        versions |= {tuple(int(n) for n in v.split(".")) for v in
                     re.findall(r"Name: GLIBC_([0-9.]+)", run(["readelf", "-W", "-V", path]).stdout)}
    return max(versions) if versions else None


def sections(path):
    return set(re.findall(r"\]\s+(\.\S+)", run(["readelf", "-W", "-S", path]).stdout))


def detail(r):
    """What a failed command said, for the check's line; nothing when it succeeded."""
    if r.returncode == 0:
        return ""
    said = " ".join((r.stdout.strip()[-200:] + " " + r.stderr.strip()[-300:]).split())
    return f" (exit {r.returncode}: {said})"


def newer_package_changing_the_policy():
    """The package again as version VERSION+test1, its /etc/tcptune/policy.toml changed (a comment
    added): an upgrade in which both the admin and the package changed the conffile."""
    tree = os.path.join(work, "newer")
    r = run(["dpkg-deb", "-R", deb, tree])
    if r.returncode != 0:
        return None, r
    with open(os.path.join(tree, POLICY.lstrip("/")), "a", encoding="utf-8") as f:
        f.write("# A line a newer version of the package added.\n")
    control = os.path.join(tree, "DEBIAN", "control")
    text = open(control, encoding="utf-8").read()
    with open(control, "w", encoding="utf-8") as f:
        f.write(re.sub(r"^Version: (.*)$", r"Version: \1+test1", text, flags=re.M))
    sums = os.path.join(tree, "DEBIAN", "md5sums")
    policy_sum = run(["md5sum", POLICY.lstrip("/")], cwd=tree).stdout
    lines = [line for line in open(sums, encoding="utf-8").read().splitlines() if not line.endswith(POLICY.lstrip("/"))]
    with open(sums, "w", encoding="utf-8") as f:
        f.write("\n".join(lines + [policy_sum.strip()]) + "\n")
    newer = os.path.join(work, "tcptune-newer.deb")
    r = run(["dpkg-deb", "--root-owner-group", "-b", tree, newer])
    return (newer if r.returncode == 0 else None), r


def enabled_units_work(when):
    """The drop-ins tcptune enable wrote name the installed shim and tcptune."""
    for name, options in UNITS.items():
        dropin = os.path.join(UNIT_DIR, name + ".d", "zz-tcptune.conf")
        text = open(dropin, encoding="utf-8").read() if os.path.isfile(dropin) else ""
        wanted = "ExecStart=/usr/bin/tcptune run -q --supervise -- " if options else f"Environment=LD_PRELOAD={SHIM}\n"
        check(wanted in text, f"{when}: {name}'s drop-in has {wanted.strip()!r}")


def installed_and_tuning(when):
    """The installed tcptune tunes a child, and the example policy is in place."""
    r = run(["/usr/bin/tcptune", "run", "--policy", args.nodelay_policy, "--", *nodelay(1)], env=env(), cwd=work)
    check(r.returncode == 0, f"{when}: /usr/bin/tcptune run finds its shim and sets TCP_NODELAY in the child"
                             f"{detail(r)}")
    return r


try:
    # The control: the probe's check fails without the shim, so a pass below is the shim's doing.
    r = run(nodelay(1), env=env())
    check(r.returncode != 0, "control: without tcptune the probe's sockets have no TCP_NODELAY")

    r = run(["dpkg", "--install", deb])
    if not check(r.returncode == 0, f"dpkg --install{detail(r)}"):
        raise Stop("nothing to check without the package installed")

    fields = {name: run(["dpkg-deb", "-f", deb, name]).stdout.strip() for name in ("Package", "Depends", "Version")}
    floor = glibc_floor([SHIM, CORE])
    floor_text = ".".join(map(str, floor)) if floor else "?"
    check(floor is not None and floor <= (2, 17) and fields["Depends"] == f"libc6 (>= {floor_text})",
          f"Depends is libc6 alone, at the shim's glibc floor {floor_text} ({fields['Depends']})")
    conffiles = run(["dpkg-query", "-W", "-f=${Conffiles}", PACKAGE]).stdout.split()
    check(POLICY in conffiles, f"{POLICY} is a conffile ({conffiles})")

    expected = ["/usr/bin/tcptune", SHIM, CORE, "/usr/share/tcptune/container-entrypoint.sh",
                "/usr/share/tcptune/presets/nodelay.toml", POLICY, "/usr/share/doc/tcptune/copyright",
                "/usr/share/doc/tcptune/changelog.gz", "/usr/share/doc/tcptune/install.md"]
    missing = [path for path in expected if not os.path.isfile(path)]
    check(not missing, f"the installed layout (missing: {missing})")
    check(os.access("/usr/bin/tcptune", os.X_OK) and os.access("/usr/share/tcptune/container-entrypoint.sh", os.X_OK),
          "tcptune and the entrypoint are executable")
    unstripped = {path: sorted(s for s in sections(path) if s == ".symtab" or s.startswith(".debug"))
                  for path in ("/usr/bin/tcptune", SHIM, CORE)}
    check(all(".text" in sections(path) for path in unstripped) and not any(unstripped.values()),
          f"tcptune and the shim are stripped (left: {unstripped})")
    check(".text" in sections("/usr/bin/tcptune") and ".interp" not in sections("/usr/bin/tcptune"),
          "/usr/bin/tcptune is static (no .interp)")

    r = installed_and_tuning("installed")
    logs = os.listdir(LOG_DIR) if os.path.isdir(LOG_DIR) else []
    check(len(logs) == 1 and f"tcptune: log {LOG_DIR}/" in r.stderr,
          f"run as root logs to {LOG_DIR} by default ({logs})")

    # The path users write in LD_PRELOAD; the example policy is read (the start record names it),
    # and as installed it is the built-in default: Nagle stays on.
    preload_log = os.path.join(work, "preload.jsonl")
    r = run(nodelay(0), env=env(LD_PRELOAD=SHIM, TCPTUNE_LOG=preload_log))
    starts = [rec for rec in testlib.records(preload_log) if rec.get("event") == "start"]
    check(r.returncode == 0 and starts and all(rec.get("policy") == POLICY for rec in starts),
          f"LD_PRELOAD={SHIM}: the shim reads {POLICY}, which leaves TCP_NODELAY as the built-in default does "
          f"({r.returncode}, {starts[:1]})")
    r = run(nodelay(1), env=env(LD_PRELOAD=SHIM, TCPTUNE_POLICY=args.nodelay_policy))
    check(r.returncode == 0, f"LD_PRELOAD={SHIM} with TCPTUNE_POLICY tunes{detail(r)}")

    r = run(["/usr/share/tcptune/container-entrypoint.sh", *nodelay(1)],
            env=env(TCPTUNE_POLICY=args.nodelay_policy))
    check(r.returncode == 0, f"the installed container entrypoint runs the command under the installed tcptune"
                             f"{detail(r)}")

    copy = os.path.join(work, "copy")
    r = run(["/usr/bin/tcptune", "install", copy])
    copied = sorted(os.listdir(copy)) if os.path.isdir(copy) else []
    check(r.returncode == 0 and copied == ["libtcptune-core.so", "libtcptune.so", "tcptune"],
          f"tcptune install DIR copies tcptune, the shim and its core, nothing else ({copied}: {r.stderr.strip()})")
    r = run([os.path.join(copy, "tcptune"), "run", "--no-log", "--policy", args.nodelay_policy, "--", *nodelay(1)],
            env=env())
    check(r.returncode == 0, f"... and the copy tunes a child with the shim beside it{detail(r)}")

    # tcptune enable with the installed tcptune, on this system's /etc/systemd/system.
    for name, options in UNITS.items():
        with open(os.path.join(UNIT_DIR, name), "w", encoding="utf-8") as f:
            f.write(f"[Service]\nExecStart={shutil.which('cat') or '/usr/bin/cat'} /proc/self/maps\n")
        r = run(["/usr/bin/tcptune", "enable", name, *options], env=env())
        check(r.returncode == 0, f"tcptune enable {name} {' '.join(options)}{detail(r)}")
    enabled_units_work("enabled")

    presets = sorted(os.listdir("/usr/share/tcptune/presets"))
    bad = [name for name in presets if run(["/usr/bin/tcptune", "check", f"/usr/share/tcptune/presets/{name}"],
                                           env=env()).returncode != 0]
    check(presets and not bad, f"tcptune check accepts every installed preset ({presets}; refused: {bad})")

    # An edit of the conffile takes effect, and dpkg keeps it across an upgrade over itself.
    with open(POLICY, "a", encoding="utf-8") as f:
        f.write('\n[[rule]]\nname = "edited by the admin"\nnodelay = "on"\n')
    edited = open(POLICY, encoding="utf-8").read()
    r = run(nodelay(1), env=env(LD_PRELOAD=SHIM))
    check(r.returncode == 0, f"the edited {POLICY} tunes a preloaded program{detail(r)}")

    r = run(["dpkg", "--install", deb])
    check(r.returncode == 0 and package_state() == "install ok installed",
          f"dpkg --install over itself (upgrade) ({package_state()}){detail(r)}")
    check(open(POLICY, encoding="utf-8").read() == edited, f"the upgrade keeps the admin's {POLICY}")
    installed_and_tuning("after the upgrade")

    enabled_units_work("after the upgrade")

    # A newer version that changes the conffile too, installed without a terminal as a fleet does:
    # with --force-confdef --force-confold (docs/install.md) dpkg keeps the admin's file, puts the
    # package's beside it as policy.toml.dpkg-dist, and does not stop to ask.
    newer, r = newer_package_changing_the_policy()
    if check(newer is not None, f"a newer package whose policy.toml changed, repacked{detail(r)}"):
        r = run(["dpkg", "--force-confdef", "--force-confold", "--install", newer], stdin=subprocess.DEVNULL)
        check(r.returncode == 0 and package_state() == "install ok installed",
              f"dpkg --force-confdef --force-confold --install NEWER, stdin closed ({package_state()}){detail(r)}")
        check(open(POLICY, encoding="utf-8").read() == edited and os.path.isfile(POLICY + ".dpkg-dist"),
              f"... keeps the admin's {POLICY}, the package's beside it as {POLICY}.dpkg-dist")
        installed_and_tuning("after the upgrade to a newer version")

    r = run(["dpkg", "--remove", PACKAGE])
    warned = [name for name in UNITS if name in r.stderr]
    check(r.returncode == 0 and sorted(warned) == sorted(UNITS) and "will fail to start" in r.stderr,
          f"dpkg --remove names each service tcptune enable tuned, the wrapped one as failing to start ({r.stderr!r})")
    check(all(os.path.isfile(os.path.join(UNIT_DIR, name + ".d", "zz-tcptune.conf")) for name in UNITS),
          "... and keeps their drop-ins, as configuration stays on removal")
    left = [path for path in files if path != POLICY and os.path.lexists(path)]
    check(r.returncode == 0 and not left and package_state() == "deinstall ok config-files",
          f"dpkg --remove removes every file but the conffile ({package_state()}; left: {left})")
    check(os.path.isfile(POLICY) and open(POLICY, encoding="utf-8").read() == edited,
          f"... and keeps the edited {POLICY}")

    r = run(["dpkg", "--purge", PACKAGE])
    check(r.returncode == 0 and package_state() == "", f"dpkg --purge{detail(r)}")
    made = [os.path.join(UNIT_DIR, name + ".d") for name in UNITS]
    left = [path for path in files + sorted(set(dirs) - dirs_before) + [POLICY, "/etc/tcptune", LOG_DIR] + made
            if os.path.lexists(path)]
    check(not left, f"after the purge nothing the package installed or made is left, tcptune enable's drop-ins "
                    f"included ({left})")
except Stop as stop:
    check(False, str(stop))
finally:
    purge_on_exit()
    shutil.rmtree(work, ignore_errors=True)
checks.finish()
