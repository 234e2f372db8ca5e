#!/usr/bin/env python3
"""Supervised mode (`tcptune run --supervise`) under faults, and against calls the kernel must
answer itself. fault_probe makes the calls; this driver runs it with and without tcptune and
judges from outside. One --case per ctest:

  kill_self, kill_outside   the program is SIGKILLed while its threads' connects are trapped:
                            tcptune dies by SIGKILL too, at once, and leaves no process behind
  exec_storm                the program execs while its other threads' connects are trapped
  signal_<restart|norestart>_<retry|posix>, signal_norestart_nonblocking
                            a 100 us SIGALRM during 2000 connects (handler with or without
                            SA_RESTART; EINTR handled by retrying, or as POSIX says: the connection
                            goes on, poll and read SO_ERROR; or nonblocking connects, EINPROGRESS
                            then poll): every connection made, its bytes intact, tuned; the same
                            program without tcptune is the control
  nondumpable_root, nondumpable_unprivileged
                            PR_SET_DUMPABLE 0 before connecting: tuned as root; as nobody it runs
                            untuned and tcptune says so in one line naming it
  own_seccomp_plain, own_seccomp_listener, own_seccomp_strict, nested
                            a filter of the program's own (its ERRNO wins, the rest is tuned; a
                            second listener is EBUSY in the program; strict mode is EINVAL);
                            tcptune under tcptune
  exit_status, sigterm, daemon
                            the program's status; SIGINT ignored, SIGTERM passed on; a daemon
                            that connects after the program exited is answered and waited for
  log_fifo                  --log naming a FIFO nobody reads: no hang, logging off, still tuned
  attack_on, attack_force   descriptors, pointers, lengths, families, shared and passed sockets,
                            vfork, other ABIs: every result as without tcptune
  race, threads             connect racing close on reused descriptor numbers; 300 threads at once
"""
import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "preload"))
from testlib import SKIP, Checks, records, seccomp_listener_available  # noqa: E402

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
BOUND = 25  # seconds: any single run; ctest's TIMEOUT bounds the whole case


def skip(why):
    print(f"skipped: {why}", flush=True)
    sys.exit(SKIP)


def clean_env():
    return {k: v for k, v in os.environ.items() if not k.startswith("TCPTUNE_") and k != "LD_PRELOAD"}


class Run:
    """One process in its own session, with its exit status, output and duration."""

    def __init__(self, argv, cwd, user_drop=(), stdout_lines=False):
        self.argv = [*user_drop, *argv]
        self.started = time.monotonic()
        self.proc = subprocess.Popen(self.argv, cwd=cwd, env=clean_env(), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     start_new_session=True)
        self.stdout_lines = []
        self.stderr = ""
        self._ready = threading.Event()
        self._readers = [threading.Thread(target=self._read_out, daemon=True),
                         threading.Thread(target=self._read_err, daemon=True)]
        for reader in self._readers:
            reader.start()
        self.elapsed = None
        self.status = None

    def _read_out(self):
        for line in self.proc.stdout:
            self.stdout_lines.append(line.rstrip("\n"))
            self._ready.set()
        self._ready.set()

    def _read_err(self):
        self.stderr = self.proc.stderr.read()

    def wait_line(self, timeout):
        """True once the program printed a line (within `timeout`)."""
        return self._ready.wait(timeout) and bool(self.stdout_lines)

    def finish(self, timeout=BOUND):
        """The exit status (negative: a signal), None if it had to be killed after `timeout`."""
        try:
            self.status = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            print(f"still running after {timeout} s: {' '.join(self.argv)}; killed", flush=True)
            self.kill()
            self.status = None
        self.elapsed = time.monotonic() - self.started
        for reader in self._readers:
            reader.join(timeout=5)
        return self.status

    def kill(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=10)

    @property
    def out(self):
        return "\n".join(self.stdout_lines)


def session_members(sid):
    """Pids (and states) of the processes left in session `sid`."""
    left = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[3]) == sid:  # state ppid pgrp session
            left.append((int(entry), fields[0]))
    return left


def children_of(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="utf-8") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def results(text):
    """The "R" lines: {name: the rest}."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "R":
            out[parts[1]] = " ".join(parts[2:])
    return out


def tuning(text):
    """The "T" lines: {name: nodelay}."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "T" and parts[2].startswith("nodelay="):
            out[parts[1]] = int(parts[2].split("=", 1)[1])
    return out


def json_line(run):
    for line in reversed(run.stdout_lines):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                return None
    return None


class Harness:
    def __init__(self, args):
        self.args = args
        self.checks = Checks()
        self.work = args.work_dir
        os.makedirs(self.work, exist_ok=True)
        os.chmod(self.work, 0o1777)  # the unprivileged cases write their logs here

    def policy(self, name, text):
        path = os.path.join(self.work, name + ".toml")
        with open(path, "w", encoding="utf-8") as f:
            f.write("version = 1\n" + text)
        os.chmod(path, 0o644)
        return path

    def supervised(self, program_args, policy_text='[defaults]\nnodelay = "on"\n', log_name="tcptune.jsonl",
                   extra=()):
        """tcptune run --supervise ... -- PROGRAM_ARGS, and the log's path."""
        log = os.path.join(self.work, log_name)
        if os.path.exists(log):
            os.remove(log)
        policy = self.policy(log_name.rsplit(".", 1)[0], policy_text)
        return [*self.args.under, self.args.tcptune, "run", "--supervise", *extra, "--policy", policy, "--log", log,
                "-q", "--", *program_args], log

    def probe(self, *more):
        return [self.args.probe, *more]

    def finish_bounded(self, run, what, timeout=BOUND):
        status = run.finish(timeout)
        self.checks.check(status is not None, f"{what}: ends within {timeout} s ({run.elapsed:.2f} s)")
        return status

    def no_leftovers(self, run, what):
        time.sleep(0.05)
        left = session_members(run.proc.pid)
        self.checks.check(not left, f"{what}: no process left in tcptune's session ({left})")

    # ---- 1: SIGKILL while connects are trapped ----------------------------------------------

    def case_kill_self(self):
        for attempt in range(4):
            delay = random.choice((1, 5, 50, 200))
            argv, _ = self.supervised(self.probe("storm", "8", str(delay)), log_name=f"kill_self{attempt}.jsonl")
            run = Run(argv, self.work)
            status = self.finish_bounded(run, f"run {attempt} (self-kill {delay} ms after the first connects)")
            self.checks.check(status == -signal.SIGKILL,
                              f"run {attempt}: tcptune dies by SIGKILL ({status}; {run.out[-200:]!r} "
                              f"{run.stderr.strip()[-300:]!r})")
            self.checks.check("ready" in run.out, f"run {attempt}: the storm was connecting ({run.out[-80:]!r})")
            self.no_leftovers(run, f"run {attempt}")

    def case_kill_outside(self):
        for attempt in range(6):
            argv, _ = self.supervised(self.probe("storm", "8", "0"), log_name=f"kill_outside{attempt}.jsonl")
            run = Run(argv, self.work)
            if not run.wait_line(BOUND):
                self.checks.check(False, f"run {attempt}: the storm started ({run.stderr.strip()[-300:]!r})")
                run.kill()
                continue
            time.sleep(random.uniform(0, 0.3))
            program = children_of(run.proc.pid)
            self.checks.check(len(program) == 1, f"run {attempt}: tcptune has one child, the program ({program})")
            for pid in program:
                os.kill(pid, signal.SIGKILL)
            status = self.finish_bounded(run, f"run {attempt} (killed from outside)", timeout=10)
            self.checks.check(status == -signal.SIGKILL,
                              f"run {attempt}: tcptune dies by SIGKILL ({status}; {run.stderr.strip()[-300:]!r})")
            self.no_leftovers(run, f"run {attempt}")

    def case_exec_storm(self):
        for attempt in range(4):
            delay = random.choice((1, 20, 100))
            argv, _ = self.supervised(self.probe("storm", "8", str(-delay)), log_name=f"exec{attempt}.jsonl")
            run = Run(argv, self.work)
            status = self.finish_bounded(run, f"run {attempt} (exec {delay} ms after the first connects)")
            self.checks.check(status == 3, f"run {attempt}: the exec'd sh's status 3 comes through ({status}; "
                              f"{run.stderr.strip()[-300:]!r})")
            self.no_leftovers(run, f"run {attempt}")

    # ---- 2: signals during trapped connects -------------------------------------------------

    def case_signal(self, restart, handling):
        count, size = 2000, 3000
        program = self.probe("signals", restart, handling, str(count), str(size))
        control = Run(program, self.work)
        self.finish_bounded(control, "control without tcptune")
        base = json_line(control)
        print(f"control: {base}")
        self.checks.check(base is not None and control.status == 0 and base["connected"] == count
                          and base["intact"] == count and base["broken"] == 0,
                          f"control: {count} connections made and their bytes intact")
        congestion = pick_congestion()
        policy = '[defaults]\nnodelay = "on"\n' + (f'congestion = "{congestion}"\n' if congestion else "")
        for attempt in range(2):
            argv, log = self.supervised(program, policy, log_name=f"signal{attempt}.jsonl")
            run = Run(argv, self.work)
            status = self.finish_bounded(run, f"run {attempt}")
            got = json_line(run)
            print(f"run {attempt}: {got}")
            self.checks.check(status == 0 and got is not None, f"run {attempt}: exits 0 with a report ({status}; "
                              f"{run.stderr.strip()[-300:]!r})")
            if got is None:
                continue
            self.checks.check(got["signals"] > 100, f"run {attempt}: the timer interrupted it ({got['signals']} signals)")
            self.checks.check(got["connected"] == count and got["errors"] == 0,
                              f"run {attempt}: every connect succeeded as in the control ({got['connected']}/{count}, "
                              f"{got['errors']} errors, {got['eintr']} EINTR; {got['first_error']})")
            self.checks.check(got["failed_writes"] == 0 and got["intact"] == count and got["broken"] == 0,
                              f"run {attempt}: no connection lost, every byte stream intact (writes failed "
                              f"{got['failed_writes']}, intact {got['intact']}, broken {got['broken']}; "
                              f"{got['first_error']})")
            self.checks.check(got["tuned"] == got["connected"],
                              f"run {attempt}: every connected socket tuned (TCP_NODELAY 1 on {got['tuned']} of "
                              f"{got['connected']})")

    # ---- 3: a program that is not dumpable --------------------------------------------------

    def case_nondumpable(self, unprivileged):
        drop = []
        if unprivileged:
            if os.geteuid() != 0:
                skip("needs root to drop privileges to nobody")
            if shutil.which("setpriv") is None:
                skip("setpriv missing")
            drop = NOBODY
        control = Run(self.probe("nondumpable"), self.work, drop)
        self.finish_bounded(control, "control")
        self.checks.check(control.status == 0 and results(control.out).get("dumpable") == "0",
                          f"control: not dumpable, connects ({control.status}; {control.out!r})")
        argv, log = self.supervised(self.probe("nondumpable"), log_name="nondumpable.jsonl")
        run = Run(argv, self.work, drop)
        status = self.finish_bounded(run, "supervised")
        print(f"stdout: {run.out!r}\nstderr: {run.stderr!r}")
        self.checks.check(status == 0, f"the program exits 0 under tcptune ({status})")
        self.checks.check(results(run.out) == results(control.out),
                          f"its calls answer as in the control ({results(run.out)})")
        nodelay = tuning(run.out)
        lines = [line for line in run.stderr.splitlines() if "dumpable" in line]
        if unprivileged:
            self.checks.check(nodelay.get("nondumpable") == 0 and nodelay.get("nondumpable-again") == 0,
                              f"as nobody its sockets run untuned ({nodelay})")
            self.checks.check(len(lines) == 1 and "fault_probe" in lines[0] and "PR_SET_DUMPABLE" in lines[0],
                              f"tcptune says so in one line naming the program and the cause ({lines})")
        else:
            self.checks.check(nodelay.get("nondumpable") == 1 and nodelay.get("nondumpable-again") == 1,
                              f"as root (CAP_SYS_PTRACE) its sockets are tuned ({nodelay})")
            self.checks.check(not lines, f"as root no warning ({lines})")

    # ---- 4: seccomp in the program, and tcptune under tcptune -------------------------------

    def case_own_seccomp(self, kind):
        control = Run(self.probe("own_seccomp", kind), self.work)
        self.finish_bounded(control, "control")
        print(f"control: {control.out!r}")
        self.checks.check(control.status == 0 and f"own_filter {kind} 0" in control.out,
                          f"control: the program installs its filter ({control.status})")
        argv, _ = self.supervised(self.probe("own_seccomp", kind), log_name=f"own_{kind}.jsonl")
        run = Run(argv, self.work)
        status = self.finish_bounded(run, "supervised")
        print(f"supervised: {run.out!r} {run.stderr.strip()!r}")
        self.checks.check(status == 0, f"exits 0 under tcptune ({status})")
        expected = "own_filter plain 0" if kind == "plain" else "own_filter listener -1 Device or resource busy"
        self.checks.check(expected in run.out, f"the program's own seccomp() answers: {expected!r}")
        self.checks.check(results(run.out) == results(control.out),
                          f"its filter's EACCES and the allowed connect answer as in the control ({results(run.out)})")
        self.checks.check(tuning(run.out).get("own_filter_allowed") == 1,
                          f"the allowed connect is tuned ({tuning(run.out)})")

    def case_own_seccomp_strict(self):
        control = Run(self.probe("strict"), self.work)
        self.finish_bounded(control, "control")
        print(f"control: {control.out!r}")
        self.checks.check(control.status == 0 and "strict entered" in control.out and "child exit 0" in control.out,
                          "control: the child enters strict mode")
        argv, _ = self.supervised(self.probe("strict"), log_name="strict.jsonl")
        run = Run(argv, self.work)
        status = self.finish_bounded(run, "supervised")
        print(f"supervised: {run.out!r}")
        # The kernel refuses strict mode over any filter: the program sees EINVAL (a limit of
        # supervised mode, as of any seccomp sandbox), and neither it nor tcptune hangs.
        self.checks.check(status == 0 and f"strict refused {22}" in run.out and "child exit 1" in run.out,
                          f"under tcptune strict mode is refused with EINVAL, the program goes on ({status})")

    def case_nested(self):
        inner, _ = self.supervised(["/bin/sh", "-c", '"$0" connect; exit 5', self.args.probe], log_name="inner.jsonl")
        outer, _ = self.supervised(inner, log_name="outer.jsonl")
        run = Run(outer, self.work)
        status = self.finish_bounded(run, "tcptune run --supervise -- tcptune run --supervise -- sh", timeout=15)
        print(f"stdout: {run.out!r}\nstderr: {run.stderr!r}")
        self.checks.check(status == 5, f"the exit status comes through both ({status})")
        self.checks.check(results(run.out).get("connect") == "connect 0 0", f"the connect succeeds ({run.out!r})")
        refusal = [line for line in run.stderr.splitlines() if "cannot supervise" in line]
        self.checks.check(len(refusal) == 1 and "listener is already in place" in refusal[0]
                          and "outer tcptune" in refusal[0],
                          f"the inner tcptune says why it cannot supervise, in one line ({refusal})")
        # The outer filter is inherited by everything below it: the outer supervisor still tunes.
        self.checks.check(tuning(run.out).get("connect") == 1,
                          f"the outer supervisor tunes the socket ({tuning(run.out)})")
        self.no_leftovers(run, "nested")

    # ---- 5: exit status, signals, daemons ---------------------------------------------------

    def case_exit_status(self):
        for script, expected in (("exit 7", 7), ("exit 0", 0), ("kill -9 $$", -9), ("kill -TERM $$", -15)):
            argv, _ = self.supervised(["/bin/sh", "-c", script], log_name="exit.jsonl")
            run = Run(argv, self.work)
            status = self.finish_bounded(run, f"sh -c {script!r}", timeout=10)
            self.checks.check(status == expected,
                              f"sh -c {script!r}: tcptune ends with {expected} (negative: by that signal) ({status})")
        argv, _ = self.supervised(["/nonexistent/program"], log_name="exit.jsonl")
        run = Run(argv, self.work)
        status = self.finish_bounded(run, "a missing program", timeout=10)
        self.checks.check(status == 127, f"a missing program: 127 ({status}; {run.stderr.strip()!r})")

    def case_sigterm(self):
        argv, _ = self.supervised(self.probe("term"), log_name="term.jsonl")
        run = Run(argv, self.work)
        if not self.checks.check(run.wait_line(10), "the program is ready"):
            run.kill()
            return
        os.kill(run.proc.pid, signal.SIGINT)
        time.sleep(0.3)
        self.checks.check(run.proc.poll() is None, "SIGINT to tcptune alone: tcptune ignores it and keeps running")
        os.kill(run.proc.pid, signal.SIGTERM)
        status = self.finish_bounded(run, "after SIGTERM", timeout=10)
        self.checks.check(status == 42, f"SIGTERM to tcptune reaches the program (its handler exits 42: {status})")
        # A program that does not handle it dies of it, and so does tcptune.
        argv, _ = self.supervised(["/bin/sh", "-c", "echo ready; exec sleep 20"], log_name="term.jsonl")
        run = Run(argv, self.work)
        run.wait_line(10)
        time.sleep(0.2)
        os.kill(run.proc.pid, signal.SIGTERM)
        status = self.finish_bounded(run, "sleep after SIGTERM", timeout=10)
        self.checks.check(status == -signal.SIGTERM, f"an unhandled SIGTERM: tcptune dies by it too ({status})")

    def case_daemon(self):
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        port = listener.getsockname()[1]
        result = os.path.join(self.work, "daemon.result")
        if os.path.exists(result):
            os.remove(result)
        delay_ms = 800
        argv, log = self.supervised(self.probe("daemon", str(port), result, str(delay_ms)), log_name="daemon.jsonl")
        run = Run(argv, self.work)
        # SIGTERM once the program has exited and only the daemon is left: there is no program to
        # pass it to, and tcptune goes on answering the daemon until it ends.
        time.sleep(0.3)
        os.kill(run.proc.pid, signal.SIGTERM)
        status = self.finish_bounded(run, "tcptune with a daemon", timeout=15)
        listener.close()
        text = open(result, encoding="utf-8").read().strip() if os.path.exists(result) else ""
        print(f"daemon: {text!r}; tcptune exited after {run.elapsed:.2f} s; stderr {run.stderr.strip()!r}")
        fields = dict(word.split("=", 1) for word in text.split())
        self.checks.check(status == 0, f"tcptune exits with the program's status 0 ({status})")
        self.checks.check(fields.get("connect") == "0" and fields.get("errno") == "0",
                          f"the daemon's connect after the program exited is answered, not ENOSYS ({text!r})")
        self.checks.check(fields.get("nodelay") == "1", f"and tuned ({text!r})")
        self.checks.check(fields.get("ppid") == str(run.proc.pid),
                          f"the orphaned daemon is tcptune's (subreaper) child ({fields.get('ppid')} vs {run.proc.pid})")
        self.checks.check(run.elapsed >= delay_ms / 1000,
                          f"tcptune waits for the daemon ({run.elapsed:.2f} s >= {delay_ms} ms)")
        opens = [r for r in records(log) if r.get("event") == "conn_open"]
        self.checks.check(len(opens) == 1, f"the log has the daemon's conn_open ({len(opens)})")

    def case_log_fifo(self):
        fifo = os.path.join(self.work, "log.fifo")
        if os.path.exists(fifo):
            os.remove(fifo)
        os.mkfifo(fifo)
        argv, _ = self.supervised(self.probe("connect"), log_name="fifo.jsonl")
        argv[argv.index("--log") + 1] = fifo  # a FIFO nobody reads
        run = Run(argv, self.work)
        status = self.finish_bounded(run, "--log naming a FIFO without a reader", timeout=10)
        print(f"stdout: {run.out!r}\nstderr: {run.stderr!r}")
        self.checks.check(status == 0, f"the program runs and exits 0 ({status})")
        self.checks.check(results(run.out).get("connect") == "connect 0 0" and tuning(run.out).get("connect") == 1,
                          f"its connect is answered and tuned ({run.out!r})")
        self.checks.check("logging disabled" in run.stderr and "regular file" in run.stderr,
                          "tcptune says the log is not a regular file and logs nothing")

    # ---- attacks ----------------------------------------------------------------------------

    def case_attack(self, nodelay):
        unix_path = os.path.join(self.work, f"attack-{nodelay}.sock")
        control = Run(self.probe("attack", unix_path), self.work)
        self.finish_bounded(control, "control")
        base = results(control.out)
        self.checks.check(control.status == 0 and len(base) > 40, f"control: {len(base)} results")
        text = '[defaults]\nnodelay = "%s"\n' % nodelay
        if nodelay == "force":
            text += 'keepalive = { idle = "40s", interval = "5s", count = 3 }\n'
        argv, log = self.supervised(self.probe("attack", unix_path), text, log_name=f"attack-{nodelay}.jsonl")
        run = Run(argv, self.work)
        status = self.finish_bounded(run, "supervised")
        got = results(run.out)
        self.checks.check(status == 0, f"exits 0 under tcptune ({status}; {run.stderr.strip()[-300:]!r})")
        for name in sorted(set(base) | set(got)):
            self.checks.check(base.get(name) == got.get(name),
                              f"{name}: {got.get(name)} (without tcptune: {base.get(name)})")
        tuned = tuning(run.out)
        print(f"tuning under tcptune: {tuned}")
        for name in ("after_refusals", "ipv6_connect", "ipv4_mapped_connect", "nonblocking", "fork_shared",
                     "fork_concurrent", "scm_rights_connect", "vfork_exec_connect", "vfork_child_connect",
                     "unshared_files_connect", "fastopen", "fastopen_sendmsg"):
            if name in tuning(control.out):
                self.checks.check(tuned.get(name) == 1, f"{name}: tuned (TCP_NODELAY {tuned.get(name)})")
        if "unshared_files_other_socket" in tuned:
            self.checks.check(tuned["unshared_files_other_socket"] == 0,
                              "the socket the process (not the unshared thread) has under the same number is left "
                              f"alone (TCP_NODELAY {tuned['unshared_files_other_socket']})")
        for name in ("ia32_connect", "ia32_socketcall_connect", "x32_connect"):
            if name in tuned:
                print(f"observed: {name} under tcptune: TCP_NODELAY {tuned[name]} "
                      f"({'tuned' if tuned[name] == 1 else 'untuned: not a native connect(), which is all the filter traps'})")

    def case_race(self):
        argv, _ = self.supervised(self.probe("race", "2"), log_name="race.jsonl")
        run = Run(argv, self.work)
        status = self.finish_bounded(run, "race")
        got = json_line(run)
        print(f"race: {got}; {run.out!r}")
        self.checks.check(status == 0, f"exits 0 ({status}; {run.stderr.strip()[-300:]!r})")
        self.checks.check(got is not None and got["unexpected"] == 0,
                          f"every connect answered with a result the kernel gives for such a race ({got})")
        self.checks.check(got is not None and got["ok"] > 0, "some connects succeeded")
        self.checks.check(tuning(run.out).get("after_race") == 1, "a socket made afterwards is tuned")

    def case_threads(self):
        count = 300
        argv, log = self.supervised(self.probe("threads", str(count)), log_name="threads.jsonl")
        run = Run(argv, self.work)
        status = self.finish_bounded(run, f"{count} threads")
        got = json_line(run)
        self.checks.check(status == 0 and got is not None, f"exits 0 ({status}; {run.stderr.strip()[-300:]!r})")
        if got is not None:
            self.checks.check(got["connected"] == count, f"all {count} connected ({got['connected']})")
            self.checks.check(got["tuned"] == count, f"all {count} tuned ({got['tuned']})")
        logged = records(log)
        opens = [r for r in logged if r.get("event") == "conn_open" and r.get("role") == "client"]
        self.checks.check(len(opens) == count, f"{count} client conn_open records ({len(opens)})")
        # Each names the probe's process (its pid, not a thread's) and program, though most
        # of its threads are gone before their records are written.
        started = [r.get("pid") for r in logged if r.get("event") == "start"]
        owners = {(r.get("pid"), r.get("program")) for r in opens}
        self.checks.check(len(started) == 1 and owners == {(started[0], "fault_probe")},
                          f"every conn_open names the probe's pid {started} and program ({sorted(owners)[:5]})")

    def case_log_size_limit(self):
        # `ulimit -f` below what the log needs: tcptune must not die of SIGXFSZ (the program's
        # later connects would fail with ENOSYS); the log ends, with one line, and that is all.
        count, limit = 300, 16384
        argv, log = self.supervised(self.probe("threads", str(count)), log_name="fsize.jsonl")
        run = Run(argv, self.work, user_drop=("prlimit", f"--fsize={limit}", "--"))
        status = self.finish_bounded(run, f"{count} threads under a {limit}-byte file size limit")
        got = json_line(run)
        self.checks.check(status == 0 and got is not None, f"exits 0 ({status}; {run.stderr.strip()[-300:]!r})")
        if got is not None:
            self.checks.check(got["connected"] == count and got["tuned"] == count,
                              f"all {count} connected and tuned ({got})")
        lost = [line for line in run.stderr.splitlines() if "later records are lost" in line]
        self.checks.check(len(lost) == 1, f"one line says the log ended ({lost})")
        size = os.path.getsize(log) if os.path.exists(log) else -1
        self.checks.check(0 < size <= limit, f"the log stops within the limit ({size} bytes)")
        text = open(log, encoding="utf-8").read() if size > 0 else ""
        whole = text.endswith("\n") and all(parses(line) for line in text.splitlines())
        self.checks.check(whole, "what was written is whole JSON lines")


def parses(line):
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def pick_congestion():
    with open("/proc/sys/net/ipv4/tcp_congestion_control", encoding="ascii") as f:
        default = f.read().split()[0]
    with open("/proc/sys/net/ipv4/tcp_available_congestion_control", encoding="ascii") as f:
        available = f.read().split()
    for name in ("reno", "cubic"):
        if name != default and name in available and os.geteuid() == 0:
            return name
    return None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tcptune", required=True)
    p.add_argument("--probe", required=True)
    p.add_argument("--work-dir", required=True)
    p.add_argument("--case", required=True)
    p.add_argument("--container-profile", default=None,
                   help="run tcptune under this launcher (container_profile: pidfd_getfd refused, as Docker's and "
                        "containerd's default seccomp profiles do), so that sockets are handed over")
    args = p.parse_args()
    args.under = [os.path.abspath(args.container_profile)] if args.container_profile else []
    args.tcptune = os.path.abspath(args.tcptune)
    args.probe = os.path.abspath(args.probe)
    args.work_dir = os.path.abspath(args.work_dir)
    if not seccomp_listener_available():
        skip("this kernel has no seccomp")
    h = Harness(args)
    cases = {
        "kill_self": h.case_kill_self,
        "kill_outside": h.case_kill_outside,
        "exec_storm": h.case_exec_storm,
        "signal_restart_retry": lambda: h.case_signal("restart", "retry"),
        "signal_norestart_retry": lambda: h.case_signal("norestart", "retry"),
        "signal_restart_posix": lambda: h.case_signal("restart", "posix"),
        "signal_norestart_posix": lambda: h.case_signal("norestart", "posix"),
        "signal_norestart_nonblocking": lambda: h.case_signal("norestart", "nonblocking"),
        "nondumpable_root": lambda: h.case_nondumpable(False),
        "nondumpable_unprivileged": lambda: h.case_nondumpable(True),
        "own_seccomp_plain": lambda: h.case_own_seccomp("plain"),
        "own_seccomp_listener": lambda: h.case_own_seccomp("listener"),
        "own_seccomp_strict": h.case_own_seccomp_strict,
        "nested": h.case_nested,
        "exit_status": h.case_exit_status,
        "sigterm": h.case_sigterm,
        "daemon": h.case_daemon,
        "log_fifo": h.case_log_fifo,
        "attack_on": lambda: h.case_attack("on"),
        "attack_force": lambda: h.case_attack("force"),
        "race": h.case_race,
        "threads": h.case_threads,
        "log_size_limit": h.case_log_size_limit,
    }
    if args.case not in cases:
        print(f"unknown case {args.case}; known: {', '.join(cases)}")
        sys.exit(2)
    if args.case == "nondumpable_root" and os.geteuid() != 0:
        skip("not root")
    cases[args.case]()
    h.checks.finish()


if __name__ == "__main__":
    main()
