#!/usr/bin/env python3
"""TCPTUNE_LOG=stderr: the shim's records on the app's own stderr, as containers and journald
collect it. stderr_app (stderr_app.c) makes the connections and writes its own lines; each case:

  interleave        records and the app's own lines (up to 4000 bytes, from another thread) in one
                    pipe read as fast as it comes: every line whole, every app line there once, no
                    record lost, fd 2's file status flags unchanged (seen by the app and by the
                    test's own copy of the pipe's description)
  interleave_relay  the same as another user, whose pipe is root's (it cannot open it again):
                    records go through the relay; lines whole, drops counted where the pipe was full
  unread            a pipe nobody reads: the app exits promptly, the drops are in the Prometheus
                    textfile, what the pipe holds is whole records
  unread_relay      the same through the relay (another user)
  behind            the reader stops, then reads again: a "dropped" record says how many records
                    were lost, and the summary's log_records_dropped counts the same
  summary_behind    the pipe full as the app exits, its reader back soon after: the summary waits
                    for room and arrives
  summary_forked    the reader drained the pipe once, then stopped: children forked since, each
                    exiting with the pipe full, do not each wait for it (the parent saw it drain,
                    they did not)
  reader_gone       the reader closes its end while the app runs: the next records meet EPIPE, and
                    the app, whose SIGPIPE is not ignored, runs on and exits 0
  reader_gone_relay the same through the relay (another user)
  closed_by_app     the app closes fd 2 and its next socket takes number 2: the pipe's reader sees
                    its end while the app still runs, and no record goes into that connection
  unix_socket       stderr a unix socket connected to a listener (journald's stream): records and
                    the app's line arrive whole
  network_socket    stderr a TCP connection (inetd-style): the peer gets the app's line only
  too_long          a rule named with 5000 characters: its records leave the name out ("omitted"),
                    every line within PIPE_BUF; in text format such lines are dropped and counted
  quiet_process     /bin/true and a shell that writes to stderr: nothing of the shim's
  fork_relay        a parent and its forked child both log through the relay: lines whole, both there
Root-only cases (another user) exit 77 elsewhere.
"""
import argparse
import fcntl
import json
import os
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from testlib import SKIP, Checks, clean_env, parse_exposition  # noqa: E402

PIPE_BUF = 4096
NOBODY = 65534


def app_line(i):
    """stderr_app's line i, as it writes it."""
    head = f"app line {i} ".encode()
    return head + bytes([ord("a") + i % 26]) * ((i * 397) % 3980)


class PipeReader:
    """Reads a pipe on a thread until its end (or until paused), keeping every byte."""

    def __init__(self, fd, paused=False):
        self.fd, self.data, self.eof_at = fd, bytearray(), None
        self.go = threading.Event()
        if not paused:
            self.go.set()
        self.thread = threading.Thread(target=self.read_all, daemon=True)
        self.thread.start()

    def read_all(self):
        self.go.wait()
        while True:
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                self.eof_at = time.monotonic()
                return
            self.data += chunk

    def join(self, timeout):
        self.thread.join(timeout)
        return not self.thread.is_alive()


def as_nobody():
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def classify(data, checks, what):
    """(app lines, records) of stderr's bytes; every line must be one or the other, whole."""
    lines = bytes(data).split(b"\n")
    checks.check(lines[-1] == b"", f"{what}: stderr ends with a whole line")
    app, records, torn = [], [], []
    for line in lines[:-1]:
        if line.startswith(b"app line "):
            app.append(line)
            continue
        try:
            record = json.loads(line)
            if isinstance(record, dict) and "event" in record and len(line) + 1 <= PIPE_BUF:
                records.append(record)
                continue
        except ValueError:
            pass
        torn.append(line[:120])
    checks.check(not torn, f"{what}: every line is the app's or a whole record of at most {PIPE_BUF} bytes "
                           f"({len(torn)} others: {torn[:3]})")
    return app, records


def shim_env(args, work, policy="", **extra):
    env = clean_env(LD_PRELOAD=args.shim, TCPTUNE_LOG="stderr", **extra)
    if policy:
        path = os.path.join(work, "policy.toml")
        with open(path, "w") as f:
            f.write(policy)
        os.chmod(path, 0o644)
        env["TCPTUNE_POLICY"] = path
    return env


def work_dir(args, name):
    path = os.path.join(args.work_dir, name)
    os.makedirs(path, exist_ok=True)
    os.chmod(path, 0o777)  # another user's app writes its textfile here
    for old in os.listdir(path):
        os.remove(os.path.join(path, old))
    return path


def read_prometheus(path):
    try:
        with open(path) as f:
            return parse_exposition(f.read())
    except (OSError, ValueError):
        return {}


def drops_in(samples, reason):
    for (name, labels), value in samples.items():
        if name == "tcptune_log_records_dropped_total" and dict(labels).get("reason") == reason:
            return value
    return None


def interleave(args, checks, other_user):
    what = "interleave" + (" (relay, another user)" if other_user else "")
    connections, lines = 300, 2000
    r, w = os.pipe()
    flags_before = fcntl.fcntl(w, fcntl.F_GETFL)
    reader = PipeReader(r)
    app = subprocess.run([args.app, "interleave", str(connections), str(lines)], env=shim_env(args, args.work_dir),
                         stdout=subprocess.PIPE, stderr=w, text=True, timeout=120,
                         preexec_fn=as_nobody if other_user else None)
    flags_after = fcntl.fcntl(w, fcntl.F_GETFL)
    os.close(w)
    checks.check(reader.join(30), f"{what}: stderr ends when the app has exited")
    os.close(r)
    checks.check(app.returncode == 0, f"{what}: the app exits 0 ({app.returncode})")
    seen = app.stdout.split()
    checks.check(len(seen) == 3 and seen[1] == seen[2],
                 f"{what}: fd 2's flags (F_GETFL) are the same before and after the records ({app.stdout.strip()})")
    checks.check(flags_before == flags_after and not flags_after & os.O_NONBLOCK,
                 f"{what}: the pipe's description shared with the app keeps its flags ({flags_before} {flags_after})")
    app_lines, records = classify(reader.data, checks, what)
    expected = [app_line(i) for i in range(lines)]
    checks.check(sorted(app_lines) == sorted(expected),
                 f"{what}: each of the app's {lines} lines arrives once, intact ({len(app_lines)})")
    # The app's lines keep the pipe full (its writes wait, the shim's do not): what found it full
    # is dropped, and counted.
    closes = [r for r in records if r.get("event") == "conn_close"]
    summary = [r for r in records if r.get("event") == "summary"]
    dropped = summary[0].get("log_records_dropped") if summary else None
    behind = summary[0].get("dropped_records", 0) if summary else 0  # the worker's, not stderr's
    checks.check(summary and dropped is not None and len(closes) <= 2 * connections <= len(closes) + dropped + behind,
                 f"{what}: every conn_close arrived or was counted as dropped "
                 f"({len(closes)} + {dropped} by stderr + {behind} by the worker for {2 * connections})")
    if not other_user:
        every_record_arrives(args, checks, connections)


def every_record_arrives(args, checks, connections):
    """Without the app's flood of lines, and a pipe of 1 MiB read as it fills, nothing is dropped."""
    r, w = os.pipe()
    fcntl.fcntl(w, 1031, 1 << 20)  # F_SETPIPE_SZ
    reader = PipeReader(r)
    app = subprocess.run([args.app, "say", str(connections)], env=shim_env(args, args.work_dir),
                         stdout=subprocess.PIPE, stderr=w, text=True, timeout=120)
    os.close(w)
    reader.join(30)
    os.close(r)
    app_lines, records = classify(reader.data.replace(b"app says hi\n", b""), checks, "say")
    closes = [r for r in records if r.get("event") == "conn_close"]
    summary = [r for r in records if r.get("event") == "summary"]
    dropped = summary[0].get("log_records_dropped") if summary else None
    # A close burst can outrun the worker's snapshot pool (dropped_records, stderr or not).
    behind = summary[0].get("dropped_records", 0) if summary else 0
    checks.check(app.returncode == 0 and dropped == 0 and len(closes) + behind == 2 * connections,
                 f"say: every conn_close record the worker made and the summary arrive, none dropped by stderr "
                 f"({len(closes)} + {behind} the worker dropped, log_records_dropped {dropped})")


def summary_behind(args, checks):
    """A one-page pipe: filled while nobody reads, drained once (records go in again), filled again
    by the app's last records; the reader comes back 100 ms later, as the app exits. The summary,
    written at exit, waits for room rather than being dropped."""
    app, r, reader = flood_unread(args, checks, "summary_behind", 50, PIPE_BUF)  # one page: a few records
    os.set_blocking(r, False)
    try:
        while True:
            reader.data += os.read(r, 1 << 16)
    except BlockingIOError:
        pass
    os.set_blocking(r, True)
    app.stdin.write("go on\n")  # 10 connections more: the first records find room, the rest a full pipe
    app.stdin.flush()
    app.stdin.close()
    time.sleep(0.1)  # the app has made them and is exiting, its summary waiting for room (200 ms at most)
    reader.go.set()
    checks.check(app.wait(60) == 0, f"summary_behind: the app exits 0 ({app.returncode})")
    checks.check(reader.join(30), "summary_behind: stderr ends")
    os.close(r)
    _, records = classify(reader.data, checks, "summary_behind")
    summary = [r for r in records if r.get("event") == "summary"]
    checks.check(len(summary) == 1 and summary[0].get("log_records_dropped", 0) > 0,
                 f"summary_behind: the summary arrives, counting the records dropped "
                 f"({summary[0].get('log_records_dropped') if summary else None}; {len(records)} records)")


def unread(args, checks, other_user):
    what = "unread" + (" (relay, another user)" if other_user else "")
    work = work_dir(args, "unread_relay" if other_user else "unread")
    textfile = os.path.join(work, "stderr_app.prom")
    env = shim_env(args, work, f'[log]\nprometheus_textfile = "{textfile}"\ninterval = "100ms"\n')
    r, w = os.pipe()
    started = time.monotonic()
    try:
        app = subprocess.run([args.app, "flood", "3000"], env=env, stdout=subprocess.PIPE, stderr=w, text=True,
                             timeout=60, preexec_fn=as_nobody if other_user else None)
    except subprocess.TimeoutExpired:
        checks.check(False, f"{what}: the app exits while nobody reads its stderr (still running after 60 s)")
        return
    took = time.monotonic() - started
    os.close(w)
    checks.check(app.returncode == 0 and app.stdout.strip() == "done",
                 f"{what}: the app makes its 3000 connections and exits 0 in {took:.1f} s ({app.returncode})")
    os.set_blocking(r, False)
    held = bytearray()
    while True:
        try:
            chunk = os.read(r, 1 << 20)
        except BlockingIOError:
            break
        if not chunk:
            break
        held += chunk
    os.close(r)
    _, records = classify(held, checks, what)
    checks.check(0 < len(held) <= 1 << 20 and records, f"{what}: the pipe holds whole records ({len(held)} bytes)")
    samples = read_prometheus(textfile)
    full = drops_in(samples, "stderr_full")
    checks.check(full is not None and full > 1000,
                 f"{what}: the textfile counts the records stderr could not take "
                 f"(tcptune_log_records_dropped_total{{reason=\"stderr_full\"}} {full})")


def flood_unread(args, checks, what, connections, pipe_size):
    """stderr_app flood CONNECTIONS pause on a pipe of `pipe_size` bytes that nobody reads until the
    app has made its connections and waits on stdin: the app, the pipe's read end, and its reader,
    paused (reader.go starts it)."""
    r, w = os.pipe()
    fcntl.fcntl(w, 1031, pipe_size)  # F_SETPIPE_SZ
    reader = PipeReader(r, paused=True)
    app = subprocess.Popen([args.app, "flood", str(connections), "pause"], env=shim_env(args, args.work_dir),
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=w, text=True)
    os.close(w)
    ready, _, _ = select.select([app.stdout], [], [], 60)
    paused = app.stdout.readline().strip() if ready else ""
    checks.check(paused == "paused", f"{what}: the app made its connections with nobody reading ({paused!r})")
    return app, r, reader


def behind(args, checks):
    app, r, reader = flood_unread(args, checks, "behind", 1500, 1 << 20)  # once read again, the last records fit
    reader.go.set()
    time.sleep(0.5)  # the reader empties the pipe
    app.stdin.write("go on\n")
    app.stdin.flush()
    out, _ = app.communicate(timeout=60)
    checks.check(reader.join(30) and app.returncode == 0, f"behind: the app exits 0 ({app.returncode})")
    os.close(r)
    _, records = classify(reader.data, checks, "behind")
    # The stderr's drops; a "dropped" record without stderr_full is the worker's own (a close burst).
    notices = [r for r in records if r.get("event") == "dropped" and "stderr_full" in r]
    reported = sum(n.get("records", 0) for n in notices)
    summary = [r for r in records if r.get("event") == "summary"]
    checks.check(notices and all(n.get("level") == "warning" and n.get("stderr_full", 0) > 0 for n in notices),
                 f"behind: a dropped record says stderr was full ({notices[:1]})")
    checks.check(summary and summary[0].get("log_records_dropped") == reported > 0,
                 f"behind: the summary's log_records_dropped is what the dropped records say "
                 f"({summary[0].get('log_records_dropped') if summary else None}, {reported})")
    closes = [r for r in records if r.get("event") == "conn_close"]
    checks.check(len(closes) < 2 * 1510, f"behind: records were lost while nobody read ({len(closes)} conn_close)")


def reader_gone(args, checks, other_user):
    what = "reader_gone" + (" (relay, another user)" if other_user else "")
    r, w = os.pipe()
    app = subprocess.Popen([args.app, "flood", "20", "pause"], env=shim_env(args, args.work_dir),
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=w, text=True,
                           preexec_fn=as_nobody if other_user else None)
    os.close(w)
    ready, _, _ = select.select([app.stdout], [], [], 60)
    paused = app.stdout.readline().strip() if ready else ""
    os.close(r)  # the last reader: the app's stderr now gives EPIPE (and SIGPIPE)
    app.stdin.write("go on\n")
    app.stdin.flush()
    out, _ = app.communicate(timeout=60)
    checks.check(paused == "paused" and app.returncode == 0 and out.strip() == "done",
                 f"{what}: records meeting a pipe without a reader raise no SIGPIPE in the app ({app.returncode})")


def closed_by_app(args, checks):
    server = socket.create_server(("127.0.0.1", 0))
    r, w = os.pipe()
    reader = PipeReader(r)
    app = subprocess.Popen([args.app, "close_stderr", str(server.getsockname()[1])], env=shim_env(args, args.work_dir),
                           stdout=subprocess.PIPE, stderr=w, text=True)
    os.close(w)
    server.settimeout(30)
    connection, _ = server.accept()
    connection.settimeout(30)
    received = b""
    while True:
        chunk = connection.recv(65536)
        if not chunk:
            break
        received += chunk
    ended = reader.join(10)
    running_at_end = ended and app.poll() is None
    out, _ = app.communicate(timeout=30)
    os.close(r)
    checks.check(app.returncode == 0 and out.strip() == "fd 2",
                 f"closed_by_app: the app's connection took fd 2 and it exits 0 ({out.strip()}, {app.returncode})")
    checks.check(received == b"payload from the app\n",
                 f"closed_by_app: the connection on fd 2 carries the app's bytes only ({received[:200]!r})")
    checks.check(running_at_end, "closed_by_app: the pipe's reader sees its end while the app still runs")
    _, records = classify(reader.data, checks, "closed_by_app")
    checks.check(any(r.get("event") == "conn_open" for r in records),
                 f"closed_by_app: records came before fd 2 was closed ({len(records)})")
    server.close()


def read_socket_until_end(sock, timeout):
    sock.settimeout(timeout)
    data = bytearray()
    while True:
        chunk = sock.recv(1 << 20)
        if not chunk:
            return data
        data += chunk


def unix_socket(args, checks):
    # journald's stream: a unix stream socket connected to a listener, unnamed on the app's side.
    path = os.path.join(tempfile.mkdtemp(prefix="tcptune-stderr-"), "stdout")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.connect(path)
    journal, _ = listener.accept()
    app = subprocess.Popen([args.app, "say", "20"], env=shim_env(args, args.work_dir), stdout=subprocess.PIPE,
                           stderr=client.fileno(), text=True)
    client.close()
    data = read_socket_until_end(journal, 30)
    out, _ = app.communicate(timeout=30)
    checks.check(app.returncode == 0, f"unix_socket: the app exits 0 ({app.returncode})")
    lines = bytes(data).split(b"\n")
    checks.check(b"app says hi" in lines, "unix_socket: the app's own line arrives whole")
    kept = bytearray(b"\n".join(line for line in lines if line != b"app says hi"))
    _, records = classify(kept, checks, "unix_socket")
    closes = [r for r in records if r.get("event") == "conn_close"]
    checks.check(len(closes) == 40, f"unix_socket: all 40 conn_close records arrive ({len(closes)})")
    journal.close()
    listener.close()
    os.remove(path)


def network_socket(args, checks):
    server = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(server.getsockname())
    peer, _ = server.accept()
    app = subprocess.Popen([args.app, "say", "20"], env=shim_env(args, args.work_dir), stdout=subprocess.PIPE,
                           stderr=client.fileno(), text=True)
    client.close()
    data = read_socket_until_end(peer, 30)
    out, _ = app.communicate(timeout=30)
    checks.check(app.returncode == 0 and out.strip() == "done", f"network_socket: the app exits 0 ({app.returncode})")
    checks.check(data == b"app says hi\n", f"network_socket: the connection carries the app's line only ({data[:200]!r})")
    peer.close()
    server.close()


def too_long(args, checks):
    name = "r" * 5000
    work = work_dir(args, "too_long")
    textfile = os.path.join(work, "stderr_app.prom")
    policy = (f'[log]\nprometheus_textfile = "{textfile}"\n'
              f'[[rule]]\nname = "{name}"\nmatch = {{ role = "client" }}\nnodelay = "on"\n')
    for form in ("jsonl", "text"):
        r, w = os.pipe()
        reader = PipeReader(r)
        app = subprocess.run([args.app, "say", "10"], env=shim_env(args, work, policy, TCPTUNE_LOG_FORMAT=form),
                             stdout=subprocess.PIPE, stderr=w, text=True, timeout=60)
        os.close(w)
        reader.join(30)
        os.close(r)
        lines = bytes(reader.data).split(b"\n")[:-1]
        checks.check(app.returncode == 0 and lines and all(len(line) + 1 <= PIPE_BUF for line in lines),
                     f"too_long ({form}): every line on stderr is at most {PIPE_BUF} bytes ({len(lines)} lines)")
        checks.check(not any(name.encode() in line for line in lines), f"too_long ({form}): no line carries the name")
        if form == "jsonl":
            opens = [json.loads(line) for line in lines if b'"conn_open"' in line and b'"client"' in line]
            checks.check(len(opens) == 10 and all("rule" not in r and "rule" in r.get("omitted", []) for r in opens),
                         f"too_long: the clients' conn_open records leave the rule's name out, named in omitted "
                         f"({[r.get('omitted') for r in opens[:2]]})")
            checks.check(all(r.get("options") for r in opens), "too_long: their other fields are there")
        else:
            samples = read_prometheus(textfile)
            count = drops_in(samples, "too_long")
            checks.check(count is not None and count >= 20,
                         f"too_long (text): the lines too long for one write are dropped and counted ({count})")


def quiet_process(args, checks):
    env = shim_env(args, args.work_dir)
    for command, expected in ((["/bin/true"], ""), (["/bin/sh", "-c", "echo from the shell >&2"], "from the shell\n")):
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=30)
        checks.check(done.returncode == 0 and done.stderr == expected,
                     f"quiet_process: {command[-1]} leaves stderr as it wrote it ({done.stderr!r})")


FORK_APP = """
import os, socket, sys
s = socket.create_server(("127.0.0.1", 0))
child = os.fork()
for i in range(150):
    c = socket.create_connection(s.getsockname()); a, _ = s.accept(); c.send(b"x"); c.close(); a.close()
if child:
    os.waitpid(child, 0)
else:
    os._exit(0)
"""


def summary_forked(args, checks):
    """Children forked after the parent saw its reader drain the pipe, the reader gone quiet since:
    25 of them (stderr_app forked_exits), each of which would wait 200 ms at its exit for that
    reader; without waiting an exit takes a few milliseconds."""
    r, w = os.pipe()
    fcntl.fcntl(w, 1031, PIPE_BUF)  # F_SETPIPE_SZ: one page, a few records
    children = 25
    app = subprocess.run([args.app, "forked_exits", str(children)], env=shim_env(args, args.work_dir),
                         stdout=subprocess.PIPE, stderr=w, text=True, timeout=120, pass_fds=(r,),
                         preexec_fn=lambda: os.dup2(r, 3))
    os.close(w)
    os.close(r)
    checks.check(app.returncode == 0, f"summary_forked: the app exits 0 ({app.returncode})")
    longest = float(app.stdout.strip() or "inf")
    checks.check(longest < 0.1, f"summary_forked: none of {children} children waits at its exit for a reader "
                                f"that stopped (the longest exit {longest} s; a wait is 0.2 s)")


def fork_relay(args, checks):
    r, w = os.pipe()
    reader = PipeReader(r)
    app = subprocess.run(["/usr/bin/python3", "-c", FORK_APP], env=shim_env(args, args.work_dir), stdout=subprocess.PIPE,
                         stderr=w, text=True, timeout=120, preexec_fn=as_nobody)
    os.close(w)
    reader.join(30)
    os.close(r)
    checks.check(app.returncode == 0, f"fork_relay: parent and child exit 0 ({app.returncode})")
    _, records = classify(reader.data, checks, "fork_relay")
    pids = {r.get("pid") for r in records if r.get("event") == "conn_close"}
    checks.check(len(pids) == 2, f"fork_relay: records of both processes arrive ({pids})")


ROOT_ONLY = {"interleave_relay", "unread_relay", "fork_relay", "reader_gone_relay"}


def main():
    parser = argparse.ArgumentParser()
    for name in ("--shim", "--app", "--work-dir", "--case"):
        parser.add_argument(name, required=True)
    args = parser.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    if args.case in ROOT_ONLY and os.geteuid() != 0:
        print(f"{args.case}: needs root (to run the app as another user)")
        sys.exit(SKIP)
    if args.case in ROOT_ONLY:
        os.chmod(args.work_dir, 0o777)
    checks = Checks()
    cases = {
        "interleave": lambda: interleave(args, checks, False),
        "interleave_relay": lambda: interleave(args, checks, True),
        "unread": lambda: unread(args, checks, False),
        "unread_relay": lambda: unread(args, checks, True),
        "behind": lambda: behind(args, checks),
        "summary_behind": lambda: summary_behind(args, checks),
        "reader_gone": lambda: reader_gone(args, checks, False),
        "reader_gone_relay": lambda: reader_gone(args, checks, True),
        "closed_by_app": lambda: closed_by_app(args, checks),
        "unix_socket": lambda: unix_socket(args, checks),
        "network_socket": lambda: network_socket(args, checks),
        "too_long": lambda: too_long(args, checks),
        "quiet_process": lambda: quiet_process(args, checks),
        "fork_relay": lambda: fork_relay(args, checks),
        "summary_forked": lambda: summary_forked(args, checks),
    }
    cases[args.case]()
    checks.finish()


if __name__ == "__main__":
    main()
