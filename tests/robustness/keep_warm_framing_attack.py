#!/usr/bin/env python3
"""keep_warm puts no heartbeat inside a message, however the app's bytes reach the socket.

keep_warm_framing_attack_app.c (under the shim: reno, 1400-byte MSS, a 10 ms heartbeat)
sends a 5 MiB message that opens the window, then --case's messages, pausing inside them
(until everything sent is acknowledged, then 150 ms: fifteen heartbeat intervals). It writes
the bytes it meant to send, message by message, to a file; the receiver here (not under the
shim) checks that what arrived is exactly those messages, with heartbeat bytes only between
two of them. Each case runs once without the shim (the control: the check can fail only
through the shim) and once under it, where heartbeats must also have gone out between
messages (so keep-warm was on and the pauses were long enough for one), unless keep-warm
ended on the connection where the shim could no longer follow its bytes (keep_warm_ended).

Cases, by protocol preset:
  dprintf_lines, pwritev2_lines,  lines: a line begun by dprintf(), pwritev2() or aio_write(),
  aio_lines                       libc calls that write to the socket past the write family's
                                  hooks
  system_lines, popen_lines,      lines: a line written, with a pause inside, by a child that
  vfork_lines, subprocess_lines,  system(), popen(), vfork(), _Fork() or Python's subprocess
  fork_without_handlers_lines     (vfork inside) started with the socket inherited: none of
                                  them runs fork handlers
  adopted_lines                   lines: a connection made by raw system calls and adopted at
                                  the app's first setsockopt, in the middle of a line
  http_obsfold_length/_chunked    http1-client: Content-Length or Transfer-Encoding continued
                                  on an obs-fold line (RFC 9112 5.2: a server may unfold it)
  http_te_trailing_comma,         http1-client: "Transfer-Encoding: chunked," and a second,
  http_te_empty_field             empty Transfer-Encoding field: empty list elements, which a
                                  recipient ignores (RFC 9110 5.6.1; haproxy takes both as chunked)
  http_edges                      http1-client: pipelining, chunk extensions and trailers, odd
                                  whitespace and case, GET/HEAD with bodies, Expect:
                                  100-continue, LF-only lines, a 60 kB header, bodies that
                                  look like requests or empty lines
  http_splice                     http1-client: a body spliced from a pipe in two parts, a
                                  request by sendfile() (a count of -1 first: EINVAL), then a head
                                  spliced in part: keep-warm must end there (unseen_bytes)
  resp_edges                      redis-client: inline commands with quotes, empty, null and
                                  CRLF-filled bulk strings, cuts inside lengths
  stomp_edges                     stomp: content-length bodies with NULs, CRLF heads, frames
                                  without content-length, a repeated content-length
  threads_lines                   lines: two threads and a SIGALRM handler write whole lines
                                  at once, without a lock; every line must arrive whole
  shapes_lines                    lines: writev of 600 iovecs, sendmsg with MSG_MORE, sendmmsg,
                                  sendfile with and without an offset; bad pointers (EFAULT
                                  unchanged)
"""
import os
import re
import socket
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from robustlib import (Checks, StreamReceiver, clean_env, compile_c, fresh, heartbeats_sent,  # noqa: E402
                       keep_warm_rule_policy, parse_args, records, require_keep_warm_host, run, shim_env)

PRESETS = {
    "dprintf_lines": ("lines", b"\n"),
    "pwritev2_lines": ("lines", b"\n"),
    "aio_lines": ("lines", b"\n"),
    "adopted_lines": ("lines", b"\n"),
    "system_lines": ("lines", b"\n"),
    "popen_lines": ("lines", b"\n"),
    "vfork_lines": ("lines", b"\n"),
    "fork_without_handlers_lines": ("lines", b"\n"),
    "subprocess_lines": ("lines", b"\n"),
    "http_obsfold_length": ("http1-client", b"\r\n"),
    "http_obsfold_chunked": ("http1-client", b"\r\n"),
    "http_te_trailing_comma": ("http1-client", b"\r\n"),
    "http_te_empty_field": ("http1-client", b"\r\n"),
    "http_edges": ("http1-client", b"\r\n"),
    "http_splice": ("http1-client", b"\r\n"),
    "resp_edges": ("redis-client", b"\r\n"),
    "stomp_edges": ("stomp", b"\n"),
    "shapes_lines": ("lines", b"\n"),
    "threads_lines": ("lines", b"\n"),
}


# subprocess_lines: Python's subprocess.run(pass_fds=...) starts its child with vfork().
SUBPROCESS_APP = r"""
import socket, subprocess, sys, time
sock = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
burst = b"x" * ((5 << 20) - 1) + b"\n"
sock.sendall(burst)
time.sleep(0.3)
fd = sock.fileno()
subprocess.run(["sh", "-c", f"printf 'partial ' >&{fd}; sleep 0.3; printf 'rest\\n' >&{fd}"], pass_fds=[fd], check=True)
time.sleep(0.2)
with open(sys.argv[2], "wb") as f:
    for message in (burst, b"partial rest\n"):
        f.write(b"%d\n" % len(message) + message)
sock.close()
"""


def expected_messages(path):
    """The messages the app meant to send, in order."""
    data = open(path, "rb").read()
    messages = []
    at = 0
    while at < len(data):
        newline = data.index(b"\n", at)
        size = int(data[at:newline])
        messages.append(data[newline + 1:newline + 1 + size])
        at = newline + 1 + size
    return messages


def heartbeat_inside(received, messages, heartbeat):
    """None when `received` is `messages` with `heartbeat` only between (and after) them;
    else where it differs."""
    at = 0
    for index, message in enumerate(messages):
        while received.startswith(heartbeat, at) and not received.startswith(message, at):
            at += len(heartbeat)
        if received[at:at + len(message)] != message:
            got = bytes(received[at:at + len(message)])
            first = next((i for i in range(min(len(got), len(message))) if got[i] != message[i]),
                         min(len(got), len(message)))
            return (f"message {index} ({len(message)} bytes) differs at its byte {first}: "
                    f"expected {message[max(0, first - 20):first + 20]!r}, got {got[max(0, first - 20):first + 20]!r}")
        at += len(message)
    rest = bytes(received[at:])
    if rest.replace(heartbeat, b""):
        return f"{len(rest)} bytes after the last message that are not heartbeats: {rest[:60]!r}"
    return None


def broken_lines(received, messages, written):
    """threads_lines: after the burst, lines in any order, each "<tag><id>-<seq>-<size>-a..."
    of its own size; None when all `written` arrived whole, else what is wrong."""
    burst = messages[0]
    if not received.startswith(burst):
        return "the burst did not arrive first"
    lines = [line for line in bytes(received[len(burst):]).split(b"\n") if line]
    bad = [line[:40] for line in lines
           if not re.fullmatch(rb"[TS]\d+-\d+-(\d+)-a*", line) or int(line.split(b"-")[2]) != len(line) + 1]
    if bad or len(lines) != written:
        return f"{len(lines)} lines of {written}, {len(bad)} broken: {bad[:3]}"
    return None


def main():
    args = parse_args()
    require_keep_warm_host()
    if args.case not in PRESETS:
        print(f"unknown --case {args.case!r}")
        sys.exit(2)
    protocol, heartbeat = PRESETS[args.case]
    source = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "keep_warm_framing_attack_app.c")).read()
    app = compile_c(args, "keep_warm_framing_attack_app", source, "-O2", "-pthread")
    # An adopted connection's role is unknown: it is matched by its peer.
    match = 'peer = "127.0.0.1/32"' if args.case == "adopted_lines" else 'role = "client"'
    policy = keep_warm_rule_policy(args, args.case, match, f'protocol = "{protocol}"')
    checks = Checks()
    for shim in (False, True):
        name = f"{args.case}, " + ("under the shim" if shim else "control without the shim")
        log = fresh(os.path.join(args.work_dir, f"{args.case}-{int(shim)}.jsonl"))
        expected = fresh(os.path.join(args.work_dir, f"{args.case}-{int(shim)}.expected"))
        env = shim_env(args, policy, log) if shim else clean_env()
        receiver = StreamReceiver()
        if args.case == "subprocess_lines":
            command = ["/usr/bin/python3", "-c", SUBPROCESS_APP, str(receiver.port), expected]
        else:
            command = [app, args.case, str(receiver.port), expected]
        done = run(command, env, timeout=40)
        receiver.thread.join(timeout=30)
        checks.check(done.returncode == 0, f"{name}: the app ran ({done.returncode}; {done.stderr.strip()[-300:]})")
        if done.returncode != 0:
            continue
        if args.case == "threads_lines":
            problem = broken_lines(receiver.data, expected_messages(expected), int(done.stdout.split()[-1]))
        else:
            problem = heartbeat_inside(receiver.data, expected_messages(expected), heartbeat)
        checks.check(problem is None, f"{name}: every message arrived whole, heartbeats only between them"
                     + (f" ({problem})" if problem else ""))
        if shim:
            count = heartbeats_sent(log)
            ended = [r.get("keep_warm_ended_by") for r in records(log)
                     if r.get("event") == "conn_close" and r.get("keep_warm_ended")]
            # Keep-warm was on: heartbeats went out, or it ended where the shim could no longer
            # follow the bytes (counted only on a kept-warm connection).
            checks.check(count > 0 or bool(ended), f"{name}: keep-warm was on: heartbeats went out, or keep-warm "
                         f"ended ({count} in conn_close; keep-warm ended by: {ended})")
            if args.case == "http_splice":
                checks.check(ended == ["unseen_bytes"], f"{name}: keep-warm ended at the spliced head ({ended})")
    checks.finish()


if __name__ == "__main__":
    main()
