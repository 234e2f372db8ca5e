"""tcptune ends as the program it ran: a program killed by a signal makes tcptune die by the same
signal (a parent sees -N, not 128+N) in every mode: `run --no-log` (exec), `run` (preloaded, with
the table), `run --supervise` and plain `run` of a static program (supervised), and `ab`. The
table and the log path are printed first, and tcptune leaves no core dump of its own.

kill_self (dynamic and static) connects to a listener of this test, waits until its conn_close is
in the log, moves to its own directory and dies by SIGTERM, SIGKILL or SIGSEGV; tcptune runs in a
directory of its own with RLIMIT_CORE unlimited. With a relative core_pattern ("core"), a core in
tcptune's directory would be tcptune's; the program's own SIGSEGV core in its directory shows that
cores are written here at all. Other core_patterns (a pipe to a handler, an absolute path) skip
that sub-check, with a note. Also: SIGTERM sent to tcptune itself reaches the program, and tcptune
then dies by it too; the program starts with the signal dispositions tcptune was started with
(each run of ab; SIGHUP ignored under nohup)."""
import argparse
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "preload"))
from testlib import Checks, clean_env, seccomp_listener_available  # noqa: E402

BOUND = 30

p = argparse.ArgumentParser()
for a in ("--tcptune", "--shim", "--dynamic", "--static", "--work-dir"):
    p.add_argument(a, required=True)
args = p.parse_args()
shutil.rmtree(args.work_dir, ignore_errors=True)
os.makedirs(args.work_dir)
checks = Checks()

with open("/proc/sys/kernel/core_pattern", encoding="utf-8") as f:
    core_pattern = f.read().strip()
cores_in_cwd = not core_pattern.startswith("|") and "/" not in core_pattern
if not cores_in_cwd:
    print(f"note: core_pattern is {core_pattern!r}, not a file in the crashing process's directory: "
          "the no-core-of-tcptune sub-check is skipped (tcptune is made not dumpable, which also stops "
          "a pipe handler)", flush=True)


def cores_unlimited():
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    except (ValueError, OSError):
        hard = resource.getrlimit(resource.RLIMIT_CORE)[1]
        resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))


listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(128)
port = listener.getsockname()[1]

supervision = seccomp_listener_available()
if not supervision:
    print("note: no seccomp listener here: the supervised modes are skipped", flush=True)

# mode: (argv before the program, program, table heading or None, on stdout or stderr)
MODES = {
    "exec": (["run", "--no-log", "--"], args.dynamic, None),
    "preload": (["run", "--log", "{log}", "--"], args.dynamic, "connections measured by the shim"),
    "supervise": (["run", "--supervise", "--log", "{log}", "--"], args.static, "connections tuned from outside"),
    "auto_supervised": (["run", "--log", "{log}", "--"], args.static, "connections tuned from outside"),
    "ab": (["ab", "--runs", "2", "--out", "{out}", "--"], args.dynamic, "run(s) per arm"),
}
SIGNALS = {"term": signal.SIGTERM, "kill": signal.SIGKILL, "segv": signal.SIGSEGV}


def start(mode, how, name):
    """tcptune in MODE running kill_self HOW, in a fresh directory; the Popen and its paths."""
    before, program, _ = MODES[mode]
    home = os.path.join(args.work_dir, name)
    program_dir = os.path.join(home, "program")
    logs = os.path.join(args.work_dir, name + ".logs")
    os.makedirs(program_dir)
    os.makedirs(logs)
    log = os.path.join(logs, "run.jsonl")
    argv = [args.tcptune, *(a.format(log=log, out=os.path.join(logs, "ab")) for a in before), program, how,
            str(port), program_dir]
    proc = subprocess.Popen(argv, cwd=home, env=clean_env(TCPTUNE_SHIM=args.shim), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=cores_unlimited, start_new_session=True)
    return proc, home, program_dir, log


def finish(proc):
    try:
        out, err = proc.communicate(timeout=BOUND)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        print(f"still running after {BOUND} s; killed", flush=True)
    return proc.returncode, out, err


def check_end(what, mode, status, out, err, number, log, home, program_dir):
    checks.check(status == -number, f"{what}: the parent sees tcptune die by signal {number} ({status}; "
                                    f"stderr {err.strip()[-300:]!r})")
    heading = MODES[mode][2]
    if heading is not None:
        where = out if mode == "ab" else err
        checks.check(heading in where, f"{what}: the table is printed ({where.strip()[-300:]!r})")
        if mode == "ab":
            checks.check("logs in " in out and f"killed by signal {number}" in err,
                         f"{what}: ab names its logs and the run the signal ended ({err.strip()[-200:]!r})")
            report = os.path.join(os.path.dirname(log), "ab", "report.html")
            checks.check(os.path.exists(report) and f"killed by signal {number}" in open(report).read(),
                         f"{what}: ab writes the report of the runs so far, naming the run the signal ended")
        else:
            checks.check(f"tcptune: log {log} (tcptune report {log})" in err, f"{what}: the log path is printed")
    if cores_in_cwd:
        left = sorted(os.listdir(home))
        checks.check(left == ["program"], f"{what}: no core of tcptune in its directory ({left})")


for mode in MODES:
    if "supervis" in mode and not supervision:
        continue
    for how, number in SIGNALS.items():
        name = f"{mode}-{how}"
        proc, home, program_dir, log = start(mode, how, name)
        status, out, err = finish(proc)
        check_end(f"{mode}, program killed by {how}", mode, status, out, err, number, log, home, program_dir)
        if how == "segv" and cores_in_cwd and mode in ("exec", "preload"):
            # The program's own core shows that a core of tcptune would have been written too.
            checks.check(any(n.startswith("core") for n in os.listdir(program_dir)),
                         f"{name}: the program's own core is written in its directory, so cores are written here "
                         f"({os.listdir(program_dir)})")

# SIGTERM to tcptune itself is passed on; the program dies by it, and so does tcptune.
for mode in ("preload", "supervise"):
    if mode == "supervise" and not supervision:
        continue
    name = f"{mode}-sigterm-to-tcptune"
    proc, home, program_dir, log = start(mode, "wait", name)
    ready = proc.stdout.readline()
    checks.check(ready == "ready\n", f"{name}: the program is ready ({ready!r})")
    proc.send_signal(signal.SIGTERM)
    status, out, err = finish(proc)
    check_end(f"{mode}, SIGTERM sent to tcptune", mode, status, out, err, signal.SIGTERM, log, home, program_dir)

# The program starts with the signal dispositions tcptune was given: the second run of ab does not
# inherit the SIGINT tcptune ignores while the first runs, and nohup's ignored SIGHUP stays ignored.
DEFAULT = "SIGINT default SIGQUIT default SIGTERM default SIGHUP default blocked none"
proc, home, program_dir, log = start("ab", "report", "ab-report")
status, out, err = finish(proc)
reports = [line for line in out.splitlines() if line.startswith("SIGINT")]
checks.check(status == 0 and reports == [DEFAULT] * 4,
             f"ab: each of its 4 runs starts with the default dispositions ({status}; {reports})")


def ignore_sighup():
    cores_unlimited()
    signal.signal(signal.SIGHUP, signal.SIG_IGN)


for mode in ("preload", "supervise"):
    if mode == "supervise" and not supervision:
        continue
    before, program, _ = MODES[mode]
    home = os.path.join(args.work_dir, f"{mode}-nohup")
    os.makedirs(home)
    argv = [args.tcptune, *(a.format(log=os.path.join(home, "run.jsonl")) for a in before), program, "report",
            str(port), home]
    r = subprocess.run(argv, cwd=home, env=clean_env(TCPTUNE_SHIM=args.shim), stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=BOUND, preexec_fn=ignore_sighup)
    checks.check(r.returncode == 0 and r.stdout == DEFAULT.replace("SIGHUP default", "SIGHUP ignored") + "\n",
                 f"{mode} under nohup: the program starts with SIGHUP ignored, as tcptune did ({r.returncode}; "
                 f"{r.stdout.strip()!r})")

# A program's plain exit status still passes through, with the table.
proc = subprocess.run([args.tcptune, "run", "--log", os.path.join(args.work_dir, "exit3.jsonl"), "--", "/bin/sh",
                       "-c", "exit 3"], env=clean_env(TCPTUNE_SHIM=args.shim), capture_output=True, text=True,
                      timeout=BOUND, cwd=args.work_dir)
checks.check(proc.returncode == 3, f"an exit status passes through ({proc.returncode})")
checks.finish()
