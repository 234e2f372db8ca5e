#!/usr/bin/env python3
"""A log that cannot grow (`ulimit -f`, or a full 64 KiB tmpfs) in preload mode: the program
runs on and exits 0 (SIGXFSZ never reaches it, its own disposition, mask and pending set stay
as they were), the log holds only whole JSON lines, stderr has exactly one line naming the log
and the error, and `tcptune run` still prints its table, the log's path and that it was cut
short. --case ulimit | tmpfs (root: mounts a tmpfs; 77 otherwise)."""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile

from testlib import SKIP, Checks, clean_env, run

# A C program (Python ignores SIGXFSZ itself, which would hide the signal): 300 connections to
# its own listener, each logged (conn_open, conn_close), far more than 64 KiB of records; at the
# end it reports its SIGXFSZ disposition, mask and pending set, all still the defaults.
APP = r"""
#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
static int listener;
static void* serve(void* unused) {
  char buffer[4096];
  for (;;) {
    int c = accept(listener, 0, 0);
    while (read(c, buffer, sizeof buffer) > 0) {}
    close(c);
  }
  return unused;
}
int main(void) {
  struct sockaddr_in a = {.sin_family = AF_INET};
  socklen_t n = sizeof a;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  listener = socket(AF_INET, SOCK_STREAM, 0);
  if (bind(listener, (void*)&a, sizeof a) || listen(listener, 64) || getsockname(listener, (void*)&a, &n)) return 2;
  pthread_t t;
  pthread_create(&t, 0, serve, 0);
  char data[100];
  memset(data, 'x', sizeof data);
  for (int i = 0; i < 300; i++) {
    int c = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(c, (void*)&a, sizeof a) || write(c, data, sizeof data) != sizeof data) return 3;
    close(c);
  }
  struct sigaction action;
  sigset_t mask, pending;
  sigaction(SIGXFSZ, 0, &action);
  pthread_sigmask(SIG_BLOCK, 0, &mask);
  sigpending(&pending);
  printf("disposition default %d blocked %d pending %d\n", action.sa_handler == SIG_DFL,
         sigismember(&mask, SIGXFSZ), sigismember(&pending, SIGXFSZ));
  return 0;
}
"""
LIMIT = 64 * 1024


def whole_json_lines(path):
    """(lines, True if every line is a whole JSON object ending in a newline)."""
    data = open(path, "rb").read()
    lines = data.split(b"\n")
    if lines[-1] != b"":
        return len(lines), False
    try:
        return len(lines) - 1, all(isinstance(json.loads(line), dict) for line in lines[:-1])
    except ValueError:
        return len(lines) - 1, False


def limit_file_size():
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


def cases(checks, args, directories, preexec):
    """directories(): a fresh directory for each of the two runs."""
    source = os.path.join(args.work_dir, f"app_{args.case}.c")
    app = os.path.join(args.work_dir, f"app_{args.case}")
    with open(source, "w") as f:
        f.write(APP)
    # Built beside and renamed over: an exiting run of the last test may still hold the old file.
    if subprocess.run(["cc", "-pthread", "-o", app + ".new", source]).returncode != 0:
        print("SKIP: no C compiler")
        sys.exit(SKIP)
    os.replace(app + ".new", app)
    cli = os.path.join(os.path.dirname(args.probe), "tcptune")
    # Preloaded directly.
    log = os.path.join(directories(), "direct.jsonl")
    done = run([app], clean_env(LD_PRELOAD=args.shim, TCPTUNE_LOG=log, TCPTUNE_LOG_FORMAT="jsonl"),
               timeout=60, preexec_fn=preexec)
    checks.check(done.returncode == 0, f"the program exits 0 ({done.returncode}; {done.stderr.strip()[-300:]})")
    checks.check("disposition default 1 blocked 0 pending 0" in done.stdout,
                 f"its SIGXFSZ disposition, mask and pending set are its own ({done.stdout.strip()})")
    lines, whole = whole_json_lines(log)
    checks.check(whole and 0 < os.path.getsize(log) <= LIMIT,
                 f"the log is {lines} whole JSON lines ({os.path.getsize(log)} bytes)")
    said = done.stderr.splitlines()
    checks.check(len(said) == 1 and said[0].startswith(f"tcptune: log {log}: ") and "later records are lost" in said[0],
                 f"exactly one line on stderr, naming the log ({said})")
    # Under tcptune run.
    log = os.path.join(directories(), "run.jsonl")
    done = run([cli, "run", "--log", log, "--", app], clean_env(), timeout=60, preexec_fn=preexec)
    checks.check(done.returncode == 0, f"tcptune run: the program exits 0 ({done.returncode})")
    lines, whole = whole_json_lines(log)
    checks.check(whole, f"tcptune run: the log is {lines} whole JSON lines")
    said = done.stderr.splitlines()
    checks.check(len([line for line in said if line.startswith(f"tcptune: log {log}: ")]) == 1,
                 "tcptune run: one line from the shim naming the log")
    checks.check(any(line.startswith("total ") for line in said), f"tcptune run prints its table ({said[-4:]})")
    checks.check(f"tcptune: log {log} (tcptune report {log})" in said, "tcptune run names the log")
    checks.check(any(line.startswith("tcptune: the log was cut short (") for line in said),
                 f"tcptune run says the log was cut short ({said[-3:]})")


def main():
    parser = argparse.ArgumentParser()
    for option in ("--shim", "--probe", "--source-dir", "--work-dir"):
        parser.add_argument(option, required=True)
    parser.add_argument("--case", required=True, choices=("ulimit", "tmpfs"))
    args = parser.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    checks = Checks()
    if args.case == "ulimit":
        cases(checks, args, lambda: tempfile.mkdtemp(dir=args.work_dir), limit_file_size)
    else:
        if os.geteuid() != 0:
            print("SKIP: mounting a tmpfs needs root")
            sys.exit(SKIP)
        mounted = []

        def fresh_tmpfs():
            directory = tempfile.mkdtemp(dir=args.work_dir)
            if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={LIMIT}", "tmpfs", directory]).returncode != 0:
                print("SKIP: cannot mount a tmpfs")
                sys.exit(SKIP)
            mounted.append(directory)
            return directory
        try:
            cases(checks, args, fresh_tmpfs, None)
        finally:
            for directory in mounted:
                subprocess.run(["umount", directory])
    checks.finish()


if __name__ == "__main__":
    main()
