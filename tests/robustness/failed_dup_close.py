#!/usr/bin/env python3
"""dup2/dup3/close_range calls that close nothing (dup2(fd, fd), or a call the kernel rejects)
still end the connection in the shim: its telemetry is then counted twice, or lost.

before_dup_onto() and before_close_range() end the target's connection (conn_close record,
counts folded into the summary) *before* the real call, whatever the call then does:
 - dup2(fd, fd): the kernel returns fd and closes nothing (inetd-style code does
   dup2(sock, 0) unconditionally, with sock often already 0);
 - dup3(fd, fd, 0): EINVAL; dup2(12345, fd): EBADF; dup3(0, fd, 0x1234): EINVAL — fd untouched;
 - close_range(fd, fd, 0x40): EINVAL (unknown flag) — nothing closed.
The C helper (compiled here) connects to loopback, writes 100 bytes, makes one of those calls,
writes 100 bytes twice more, closes. Correct (docs/records-and-metrics.md "What the shim logs": "connections
measured (exact...)"): every variant gives one connection, 3 writes, 300 bytes, one conn_close
record (3 writes, 300 bytes), exactly like the variant without the extra call. Found: the
dup variants report 2 connections, 4 writes, 400 bytes and two conn_close records (the first
100 bytes counted twice); close_range with a bad flag reports 1 write, 100 bytes (the
connection's later writes are lost). Return values and errno are the kernel's in every case.
"""
import json
import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from robustlib import Checks, clean_env, compile_c, discarding_listener, fresh, parse_args, records, run  # noqa: E402

SOURCE = r'''
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
int close_range(unsigned int, unsigned int, int);
int main(int argc, char** argv) {
  int port = atoi(argv[1]); const char* op = argv[2];
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr*)&a, sizeof a)) return 2;
  char buf[100]; memset(buf, 'a', sizeof buf);
  if (write(fd, buf, 100) != 100) return 3;
  int r = 0; errno = 0;
  if (!strcmp(op, "dup2-same")) r = dup2(fd, fd);
  else if (!strcmp(op, "dup3-same")) r = dup3(fd, fd, 0);
  else if (!strcmp(op, "dup2-badsrc")) r = dup2(12345, fd);
  else if (!strcmp(op, "dup3-badflags")) r = dup3(0, fd, 0x1234);
  else if (!strcmp(op, "close_range-badflags")) r = close_range(fd, fd, 0x40);
  printf("%d %d\n", r, r < 0 ? errno : 0);
  if (write(fd, buf, 100) != 100) return 4;
  if (write(fd, buf, 100) != 100) return 5;
  close(fd);
  return 0;
}
'''

OPS = ["none", "dup2-same", "dup3-same", "dup2-badsrc", "dup3-badflags", "close_range-badflags"]


def main():
    args = parse_args()
    checks = Checks()
    exe = compile_c(args, "dup_noop", SOURCE)
    port = discarding_listener()

    for op in OPS:
        bare = run([exe, str(port), op], clean_env(), timeout=20)
        log = fresh(os.path.join(args.work_dir, f"{op}.jsonl"))
        shim = run([exe, str(port), op], clean_env(LD_PRELOAD=args.shim, TCPTUNE_LOG=log, TCPTUNE_LOG_FORMAT="jsonl"),
                   timeout=20)
        checks.check(shim.returncode == 0 and bare.returncode == 0 and shim.stdout == bare.stdout,
                     f"{op}: return value and errno as without the shim ({bare.stdout.strip()} / {shim.stdout.strip()})")
        recs = records(log)
        summary = [r for r in recs if r.get("event") == "summary"]
        s = summary[-1] if summary else {}
        closes = [(r.get("writes"), r.get("bytes")) for r in recs if r.get("event") == "conn_close"]
        got = (s.get("connections"), s.get("writes"), s.get("bytes"))
        checks.check(got == (1, 3, 300) and closes == [(3, 300)],
                     f"{op}: summary (connections, writes, bytes) = (1, 3, 300) and one conn_close (3, 300) "
                     f"(got {got}, conn_close {closes})")
    checks.finish()


if __name__ == "__main__":
    main()
