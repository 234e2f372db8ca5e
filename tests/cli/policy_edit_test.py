"""Every process of one `tcptune run` uses the policy run validated, whatever happens to the file
afterwards. The program, once started, cuts the policy file short and rewrites it as garbage (an
editor's truncate-then-write, interrupted), then starts three children: none prints an error, each
is tuned by the validated rule (TCP_NODELAY forced on a connection to this test's port: the child
reads it back, and its conn_open record names the rule), and under TCPTUNE_STRICT=1 none exits 78.
Cases: run with its table (tcptune waits), run -q (tcptune execs the program), a policy over
64 KiB (a private copy instead of the environment, removed at the end), --supervise, and each run
of `tcptune ab`. Also: a policy passed as text keeps its file's name in messages
(TCPTUNE_POLICY_NAME)."""
import argparse
import glob
import os
import shutil
import socket
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "preload"))
from testlib import Checks, clean_env, records, seccomp_listener_available  # noqa: E402

BOUND = 60

p = argparse.ArgumentParser()
for a in ("--tcptune", "--shim", "--work-dir"):
    p.add_argument(a, required=True)
args = p.parse_args()
shutil.rmtree(args.work_dir, ignore_errors=True)
os.makedirs(args.work_dir)
checks = Checks()

listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(128)
port = listener.getsockname()[1]

POLICY = f'version = 1\n[defaults]\nnodelay = "keep"\n[[rule]]\nname = "validated"\nmatch = {{ port = {port} }}\n' \
         'nodelay = "force"\n'
# Connects to the test's port and prints what TCP_NODELAY the connection has.
CHILD = ("import socket, sys\n"
         f"s = socket.create_connection(('127.0.0.1', {port}))\n"
         "print('child', sys.argv[1], 'nodelay', s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0)\n"
         "s.close()\n")
# The program: the policy file cut short, then garbage, then the children, started after the edit.
SCRIPT = ('if [ -n "${TCPTUNE_POLICY_TOML-}" ]; then echo "passed as text"; '
          'elif [ -r "$TCPTUNE_POLICY" ]; then echo "passed as a copy in ${TCPTUNE_POLICY%/*/*}"; fi\n'
          ': > "$POLICY_FILE"\n'
          'printf "[[rule\\nname = " > "$POLICY_FILE"\n'
          'for i in 1 2 3; do /usr/bin/python3 -c "$CHILD" $i || echo "child $i exit $?"; done\n')


def run_case(name, extra=(), strict=False, padding=0):
    work = os.path.join(args.work_dir, name)
    tmp = os.path.join(work, "tmp")
    os.makedirs(tmp)
    policy = os.path.join(work, "policy.toml")
    with open(policy, "w", encoding="utf-8") as f:
        f.write(POLICY + ("# padding to make the policy large\n" * (padding // 35 + 1) if padding else ""))
    log = os.path.join(work, "run.jsonl")
    env = clean_env(TCPTUNE_SHIM=args.shim, POLICY_FILE=policy, CHILD=CHILD, TMPDIR=tmp)
    if strict:
        env["TCPTUNE_STRICT"] = "1"
    r = subprocess.run([args.tcptune, "run", *extra, "--policy", policy, "--log", log, "--", "/bin/sh", "-c", SCRIPT],
                       env=env, capture_output=True, text=True, timeout=BOUND, cwd=work)
    with open(policy, encoding="utf-8") as f:
        checks.check(f.read().startswith("[[rule"), f"{name}: the program rewrote the policy file as garbage")
    checks.check(r.returncode == 0, f"{name}: the run exits 0 ({r.returncode})")
    complaints = [line for line in r.stderr.splitlines() if "tcptune:" in line and "connections" not in line and
                  not line.startswith(("tcptune: log ", "tcptune: tuning /bin/sh from outside"))]
    checks.check(not complaints, f"{name}: no child complains about the policy ({complaints[:3]})")
    lines = r.stdout.splitlines()
    passed = "passed as a copy in " + tmp if padding else "passed as text"
    checks.check(lines[:1] == [passed], f"{name}: the program gets the policy {passed} ({lines[:1]})")
    checks.check(lines[1:] == [f"child {i} nodelay True" for i in (1, 2, 3)],
                 f"{name}: each child started after the edit has TCP_NODELAY forced by the rule ({lines})")
    tuned = {rec.get("pid") for rec in records(log) if rec.get("rule") == "validated"}
    checks.check(len(tuned) >= 3, f"{name}: the records of three children name the validated rule ({len(tuned)} pids)")
    # tcptune-UID is where the processes keep compiled policies (TMPDIR when there is no runtime
    # directory); it outlives runs by design.
    left = [name for name in os.listdir(tmp) if name != f"tcptune-{os.geteuid()}"]
    checks.check(not left, f"{name}: no copy of the policy is left behind ({left})")
    return r


run_case("table")
run_case("exec", extra=("-q",))
run_case("strict", strict=True)
run_case("strict_exec", extra=("-q",), strict=True)
run_case("large", padding=100 * 1024)
run_case("large_exec_strict", extra=("-q",), strict=True, padding=100 * 1024)
if seccomp_listener_available():
    run_case("supervise", extra=("--supervise",))
else:
    print("note: no seccomp listener here: the supervised case is skipped", flush=True)



def ab_case(name, padding=0):
    """ab: each run of the tuned arm gets the text ab validated, though the first run rewrote the file."""
    work = os.path.join(args.work_dir, name)
    os.makedirs(work)
    policy = os.path.join(work, "policy.toml")
    with open(policy, "w", encoding="utf-8") as f:
        f.write(POLICY + ("# padding to make the policy large\n" * (padding // 35 + 1) if padding else ""))
    r = subprocess.run([args.tcptune, "ab", "--runs", "2", "--policy", policy, "--out", os.path.join(work, "out"),
                        "--", "/bin/sh", "-c", SCRIPT],
                       env=clean_env(TCPTUNE_SHIM=args.shim, POLICY_FILE=policy, CHILD=CHILD),
                       capture_output=True, text=True, timeout=BOUND, cwd=work)
    complaints = [line for line in r.stderr.splitlines() if "policy" in line or "TOML" in line or "untuned" in line]
    checks.check(r.returncode == 0 and not complaints,
                 f"{name}: no run complains about the policy ({r.returncode}, {complaints[:2]})")
    for run in (1, 2):
        log = os.path.join(work, "out", f"tuned-{run}.jsonl")
        tuned = {rec.get("pid") for rec in records(log) if rec.get("rule") == "validated"}
        checks.check(len(tuned) >= 3,
                     f"{name}: tuned run {run}: three children tuned by the validated rule ({len(tuned)})")


ab_case("ab")
ab_case("ab_large", padding=100 * 1024)

# Direct LD_PRELOAD users name the policy's file for messages about its text (read by a program
# when it opens a TCP socket).
env = clean_env(LD_PRELOAD=args.shim, TCPTUNE_POLICY_TOML="nodelay = \"sometimes\"\n",
                TCPTUNE_POLICY_NAME="/etc/example/policy.toml")
r = subprocess.run([sys.executable, "-c", "import socket; socket.socket()"], env=env, capture_output=True, text=True,
                   timeout=BOUND)
checks.check(r.stderr.startswith("tcptune: /etc/example/policy.toml:1:"),
             f"TCPTUNE_POLICY_NAME names an inline policy in its messages, with line and column ({r.stderr.strip()!r})")
checks.finish()
