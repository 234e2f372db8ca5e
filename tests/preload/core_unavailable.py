#!/usr/bin/env python3
"""libtcptune.so without its core beside it (a copy that left libtcptune-core.so behind): the
first stage says so on stderr in one line, once, and the program runs untuned. That line is
written as the log on stderr would write it: never blocking, never into a network socket.

  file          stderr a regular file: the line is there, once, naming the missing core
  full_pipe     stderr a pipe nobody reads, already full: the program is not held up (before, its
                first TCP socket blocked in the write for as long as nobody read)
  reader_gone   stderr a pipe whose reader is gone, SIGPIPE at its default: the program is not
                killed by the line
  network       stderr a TCP connection (an inetd-style program's stderr is its connection):
                nothing of tcptune's goes into it"""
import fcntl
import os
import shutil
import socket
import subprocess
import sys

from testlib import Checks, clean_env

BOUND_S = 20


def main():
    import argparse
    parser = argparse.ArgumentParser()
    parser.add_argument("--shim", required=True)
    parser.add_argument("--app", required=True)
    parser.add_argument("--work-dir", required=True)
    options = parser.parse_args()
    lonely = os.path.join(options.work_dir, "nocore")
    os.makedirs(lonely, exist_ok=True)
    stage = os.path.join(lonely, "libtcptune.so")
    shutil.copy(options.shim, stage)
    env = clean_env(LD_PRELOAD=stage)
    checks = Checks()

    def run(stderr, what):
        try:
            result = subprocess.run([options.app], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr,
                                    env=env, timeout=BOUND_S)
        except subprocess.TimeoutExpired:
            checks.check(False, f"{what}: the program ends (it hung for {BOUND_S} s)")
            return None
        ran = b"plain C client:" in result.stdout
        checks.check(ran and result.returncode >= 0,
                     f"{what}: the program ran through, untuned (exit {result.returncode}, {result.stdout!r})")
        return result

    # file
    log = os.path.join(options.work_dir, "stderr.txt")
    with open(log, "wb") as f:
        run(f, "file")
    text = open(log, "rb").read()
    checks.check(text.count(b"tcptune: cannot load the tuning core") == 1 and b"libtcptune-core.so" in text,
                 f"file: one line names the missing core ({text!r})")

    # full_pipe: filled through a nonblocking description of its own, the program's end blocking.
    read_end, write_end = os.pipe()
    filler = os.open(f"/proc/self/fd/{write_end}", os.O_WRONLY | os.O_NONBLOCK)
    try:
        while True:
            os.write(filler, b"f" * 4096)
    except BlockingIOError:
        pass
    os.close(filler)
    checks.check(fcntl.fcntl(write_end, fcntl.F_GETFL) & os.O_NONBLOCK == 0, "full_pipe: the program's stderr blocks")
    run(write_end, "full_pipe")
    os.close(write_end)
    os.close(read_end)

    # reader_gone
    read_end, write_end = os.pipe()
    os.close(read_end)
    result = run(write_end, "reader_gone")
    os.close(write_end)
    if result is not None:
        checks.check(result.returncode != -13, f"reader_gone: no SIGPIPE (exit {result.returncode})")

    # network
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    connection = socket.create_connection(listener.getsockname())
    peer, _ = listener.accept()
    run(connection.fileno(), "network")
    connection.close()
    peer.settimeout(5)
    received = b""
    while True:
        chunk = peer.recv(4096)
        if not chunk:
            break
        received += chunk
    checks.check(b"tcptune" not in received, f"network: nothing of tcptune's in the connection ({received!r})")
    peer.close()
    listener.close()
    checks.finish()


if __name__ == "__main__":
    main()
