#!/usr/bin/env python3
"""Supervised mode where pidfd_getfd is refused, as Docker's and containerd's default seccomp
profiles do without CAP_SYS_PTRACE: `tcptune run --supervise` runs under container_profile,
creates each TCP socket the program asks for and hands it over (SECCOMP_ADDFD_FLAG_SEND).
hand_over_probe makes the calls; each case runs it without tcptune first and compares every
result (R lines) with the run under tcptune. One --case per ctest:

  creation   socket() with SOCK_CLOEXEC and SOCK_NONBLOCK in every combination, the lowest free
             number after a hole, errors the kernel gives (an unknown family or flag, a protocol
             that is not TCP), the program's RLIMIT_NOFILE reached (EMFILE): all as without
  reuse      a number tcptune handed a socket over at, closed and given to an inherited socket:
             its connect is not tuned (and a warning says why); then a new socket at the same
             number is tuned, and the conn_open record names that socket's inode
  again      a nonblocking connect polled, then connect called again: tuned at the first, the
             second goes on as without tcptune, and no warning (the socket is tcptune's)
  rebind     bind, close, socket, bind the same port at once: free at once (the held reference
             is dropped at the trapped socket(), before the kernel makes the socket); a port bound
             and closed is free for another process within the documented bound (20 ms; checked
             at 500 ms)
  binds      binds of UDP, unix and netlink sockets are not trapped: a run making 100 of each
             has tcptune answer exactly as many calls (supervisor_summary's trapped_calls) as
             one making none; the results are those without tcptune, the TCP socket is tuned
  setuid     (root) the program switches to uid 65534: its sockets run untuned, with a warning
             naming the uid and the fix
  netns      (root) the program unshares its network namespace: untuned, with a warning

--user unprivileged runs the case as nobody (no CAP_SYS_ADMIN: no_new_privs)."""
import argparse
import os
import re
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "preload"))
from testlib import SKIP, Checks, clean_env, records, seccomp_listener_available  # noqa: E402

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
BOUND = 20  # seconds: any single run
RELEASE_BOUND_S = 0.5  # the documented 20 ms, with a margin of 25


def skip(why):
    print(f"skipped: {why}", flush=True)
    sys.exit(SKIP)


def kernel_at_least(major, minor):
    found = re.match(r"(\d+)\.(\d+)", os.uname().release)
    return found is not None and (int(found.group(1)), int(found.group(2))) >= (major, minor)


def lines(text, kind):
    """The KIND lines: {name: the rest}."""
    out = {}
    for line in text.splitlines():
        parts = line.split(maxsplit=2)
        if len(parts) >= 2 and parts[0] == kind:
            out[parts[1]] = parts[2] if len(parts) > 2 else ""
    return out


class Sink:
    """A loopback listener that accepts and keeps every connection until closed."""

    def __init__(self):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.accepted = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                self.accepted.append(self.listener.accept()[0])
            except OSError:
                return


class Harness:
    def __init__(self, args):
        self.args = args
        self.checks = Checks()
        self.work = args.work_dir
        os.makedirs(self.work, exist_ok=True)
        os.chmod(self.work, 0o1777)  # the unprivileged cases write their logs here
        self.drop = NOBODY if args.user == "unprivileged" else []
        self.sink = Sink()

    def supervised(self, name, probe_args):
        """The command under the profile and tcptune, and its log's path."""
        log = os.path.join(self.work, name + ".jsonl")
        if os.path.exists(log):
            os.remove(log)
        policy = os.path.join(self.work, name + ".toml")
        with open(policy, "w", encoding="utf-8") as f:
            f.write('version = 1\n[defaults]\nnodelay = "on"\n')
        os.chmod(policy, 0o644)
        return [*self.drop, self.args.container_profile, self.args.tcptune, "run", "--supervise", "--policy", policy,
                "--log", log, "-q", "--", self.args.probe, *probe_args], log

    def run(self, argv, what, pass_fds=()):
        try:
            done = subprocess.run(argv, cwd=self.work, env=clean_env(), capture_output=True, text=True, timeout=BOUND,
                                  pass_fds=pass_fds, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            self.checks.check(False, f"{what}: ends within {BOUND} s")
            self.checks.finish()
        print(f"--- {what}: exit {done.returncode}\n{done.stdout}{done.stderr}", flush=True)
        if done.returncode == 77:
            skip(f"{what}: the probe cannot do this here")
        return done

    def handed_over(self, log, stderr, what):
        """The run took the hand-over path, and said so."""
        starts = [r for r in records(log) if r.get("event") == "start"]
        self.checks.check(bool(starts) and starts[0].get("sockets") == "handed_over",
                          f"{what}: the start record says the sockets are handed over ({starts[:1]})")
        self.checks.check("pidfd_getfd is refused here" in stderr and "seccomp profile" in stderr,
                          f"{what}: tcptune says pidfd_getfd is refused by a seccomp profile")

    def same_results(self, control, tuned, what):
        base, got = lines(control.stdout, "R"), lines(tuned.stdout, "R")
        self.checks.check(len(base) > 0, f"{what}: the control printed results ({len(base)})")
        for name in sorted(set(base) | set(got)):
            self.checks.check(base.get(name) == got.get(name),
                              f"{what} {name}: {got.get(name)} (without tcptune: {base.get(name)})")

    def case_creation(self):
        control = self.run([*self.drop, self.args.probe, "creation"], "without tcptune")
        argv, log = self.supervised("creation", ["creation"])
        tuned = self.run(argv, "under tcptune")
        self.checks.check(control.returncode == 0 and tuned.returncode == 0,
                          f"both exit 0 ({control.returncode}, {tuned.returncode})")
        self.handed_over(log, tuned.stderr, "creation")
        self.same_results(control, tuned, "creation")

    def case_reuse(self):
        results = []
        for what in ("without tcptune", "under tcptune"):
            inherited = socket.socket()
            number = os.dup2(inherited.fileno(), 40)  # kept by the probe across exec
            probe_args = ["reuse", str(self.sink.port), str(number)]
            if what == "without tcptune":
                argv, log = [*self.drop, self.args.probe, *probe_args], None
            else:
                argv, log = self.supervised("reuse", probe_args)
            results.append((self.run(argv, what, pass_fds=(number,)), log))
            os.close(number)
            inherited.close()
        (control, _), (tuned, log) = results
        self.handed_over(log, tuned.stderr, "reuse")
        self.same_results(control, tuned, "reuse")
        base, got = lines(control.stdout, "T"), lines(tuned.stdout, "T")
        self.checks.check(base.get("reused") == "nodelay=0" and base.get("reissued") == "nodelay=0",
                          f"control: neither socket has TCP_NODELAY ({base})")
        self.checks.check(got.get("reused") == "nodelay=0",
                          f"the inherited socket at a number tcptune had handed a socket over at is not tuned ({got})")
        self.checks.check(got.get("reissued") == "nodelay=1", f"a new socket of the program's at that number is ({got})")
        inodes = lines(tuned.stdout, "I")
        opened = {r.get("inode") for r in records(log) if r.get("event") == "conn_open"}
        self.checks.check(opened == {int(inodes.get("reissued", "0"))},
                          f"conn_open records name the new socket only (inodes {opened}; the program's {inodes})")
        self.checks.check("a TCP socket tcptune did not create" in tuned.stderr and "SYS_PTRACE" in tuned.stderr,
                          "a warning says the inherited socket runs untuned, why, and the fix")

    def case_again(self):
        port = str(self.sink.port)
        control = self.run([*self.drop, self.args.probe, "again", port], "without tcptune")
        argv, log = self.supervised("again", ["again", port])
        tuned = self.run(argv, "under tcptune")
        self.handed_over(log, tuned.stderr, "again")
        self.same_results(control, tuned, "again")
        self.checks.check(lines(tuned.stdout, "T").get("again") == "nodelay=1",
                          f"tuned at its first connect ({lines(tuned.stdout, 'T')})")
        opened = [r for r in records(log) if r.get("event") == "conn_open"]
        self.checks.check(len(opened) == 1, f"one conn_open ({len(opened)})")
        self.checks.check("did not create" not in tuned.stderr, "no warning about the second connect")

    def case_rebind(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        elapsed = {}
        runs = {}
        for what in ("without tcptune", "under tcptune"):
            if what == "without tcptune":
                argv, log = [*self.drop, self.args.probe, "rebind", str(port)], None
            else:
                argv, log = self.supervised("rebind", ["rebind", str(port)])
            proc = subprocess.Popen(argv, cwd=self.work, env=clean_env(), stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            out = []
            for line in proc.stdout:
                out.append(line)
                if line.strip() == "closed":
                    break
            # The program lives on; the port it bound and closed must be free for this process.
            started = time.monotonic()
            free = False
            while time.monotonic() - started < 2:
                with socket.socket() as s:
                    try:
                        s.bind(("127.0.0.1", port))
                        free = True
                        break
                    except OSError:
                        time.sleep(0.002)
            elapsed[what] = time.monotonic() - started if free else None
            rest, err = proc.communicate("\n", timeout=BOUND)
            out.append(rest)
            runs[what] = (subprocess.CompletedProcess(argv, proc.returncode, "".join(out), err), log)
            print(f"--- {what}: exit {proc.returncode}, port free for another process after "
                  f"{elapsed[what]} s\n{''.join(out)}{err}", flush=True)
        (control, _), (tuned, log) = runs["without tcptune"], runs["under tcptune"]
        self.handed_over(log, tuned.stderr, "rebind")
        self.same_results(control, tuned, "rebind")
        self.checks.check(lines(tuned.stdout, "R").get("bind_again", "").startswith("0 "),
                          "the program binds the port it bound and closed again at once")
        self.checks.check(elapsed["under tcptune"] is not None and elapsed["under tcptune"] < RELEASE_BOUND_S,
                          f"another process binds it within {RELEASE_BOUND_S} s ({elapsed['under tcptune']} s)")

    def case_binds(self):
        port = str(self.sink.port)
        trapped = {}
        for count in ("0", "100"):
            control = self.run([*self.drop, self.args.probe, "binds", count, port], f"{count} binds without tcptune")
            argv, log = self.supervised("binds" + count, ["binds", count, port])
            tuned = self.run(argv, f"{count} binds under tcptune")
            what = f"{count} binds of each kind"
            self.handed_over(log, tuned.stderr, what)
            self.same_results(control, tuned, what)
            self.checks.check(lines(control.stdout, "R").get("udp_binds") == count,
                              f"{what}: each bind succeeds without tcptune ({lines(control.stdout, 'R')})")
            self.checks.check(lines(tuned.stdout, "T").get("tcp") == "nodelay=1",
                              f"{what}: the TCP socket is tuned ({lines(tuned.stdout, 'T')})")
            summaries = [r for r in records(log) if r.get("event") == "supervisor_summary"]
            trapped[count] = summaries[0].get("trapped_calls") if summaries else None
        self.checks.check(isinstance(trapped["0"], int) and trapped["0"] > 0,
                          f"the run without binds has its TCP socket() and connect trapped ({trapped['0']})")
        self.checks.check(trapped["100"] == trapped["0"],
                          f"300 binds add no trapped call ({trapped['100']} calls, without them {trapped['0']})")

    def case_identity(self, how, expected):
        if os.geteuid() != 0:
            skip("not root: the program cannot switch user or network namespace")
        port = str(self.sink.port)
        control = self.run([self.args.probe, how, port], "without tcptune")
        argv, log = self.supervised(how, [how, port])
        tuned = self.run(argv, "under tcptune")
        self.handed_over(log, tuned.stderr, how)
        self.same_results(control, tuned, how)
        self.checks.check(lines(tuned.stdout, "T").get(how) == "nodelay=0",
                          f"the socket runs untuned ({lines(tuned.stdout, 'T')})")
        self.checks.check(expected in tuned.stderr and "SYS_PTRACE" in tuned.stderr,
                          f"a warning names the cause ({expected!r}) and the fix")
        self.checks.check(not any(r.get("event") == "conn_open" for r in records(log)), "no conn_open record")


def main():
    p = argparse.ArgumentParser()
    for a in ("--tcptune", "--probe", "--container-profile", "--work-dir"):
        p.add_argument(a, required=True)
    p.add_argument("--case", required=True, choices=("creation", "reuse", "again", "rebind", "binds", "setuid", "netns"))
    p.add_argument("--user", choices=("current", "unprivileged"), default="current")
    args = p.parse_args()
    for name in ("tcptune", "probe", "container_profile", "work_dir"):
        setattr(args, name, os.path.abspath(getattr(args, name)))
    if not seccomp_listener_available():
        skip("this kernel has no seccomp user notification")
    if not kernel_at_least(5, 14):
        skip(f"kernel {os.uname().release}: SECCOMP_ADDFD_FLAG_SEND needs 5.14")
    if args.user == "unprivileged" and os.geteuid() != 0:
        skip("not root: cannot drop to nobody")
    h = Harness(args)
    {
        "creation": h.case_creation,
        "reuse": h.case_reuse,
        "again": h.case_again,
        "rebind": h.case_rebind,
        "binds": h.case_binds,
        "setuid": lambda: h.case_identity("setuid", "runs as uid 65534"),
        "netns": lambda: h.case_identity("netns", "another network namespace"),
    }[args.case]()
    h.checks.finish()


if __name__ == "__main__":
    main()
