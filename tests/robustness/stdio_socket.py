#!/usr/bin/env python3
"""Writes through stdio on a socket (fdopen + fprintf + fflush) go past the hooks: glibc's stdio
calls its internal write, not the interposable write(). The shim cannot gate them against
heartbeats, so a socket wrapped in a FILE is not kept warm: a message flushed in two parts with
a pause between (longer than the heartbeat interval) must arrive whole. (Such writes are not
measured either; docs/robustness.md says so.)"""
import os
import socket
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from robustlib import Checks, clean_env, compile_c, fresh, parse_args, run  # noqa: E402

SOURCE = r'''
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
int main(int c, char** v) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(v[1]))};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int mss = 1400;  /* before connect: segments small enough that the burst grows the window */
  setsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, sizeof mss);
  if (connect(fd, (void*)&a, sizeof a)) return 2;
  static char block[256 * 1024];
  memset(block, 'x', sizeof block);
  for (int i = 0; i < 8; i++) {
    if (write(fd, block, sizeof block) != (ssize_t)sizeof block) return 4;
    usleep(50000);
  }
  usleep(300000);
  FILE* f = fdopen(fd, "w");
  fprintf(f, "<HEAD>");
  fflush(f);
  usleep(600000);
  fprintf(f, "<BODY>");
  return fclose(f) == 0 ? 0 : 3;
}
'''


def main():
    args = parse_args()
    checks = Checks()
    exe = compile_c(args, "stdio_client", SOURCE)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    received = []

    def serve():
        conn, _ = listener.accept()
        data = bytearray()
        while chunk := conn.recv(1 << 20):
            data += chunk
        received.append(bytes(data))
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    policy = os.path.join(args.work_dir, "stdio.toml")
    with open(policy, "w") as f:
        f.write('version = 1\n[defaults]\ncongestion = "reno"\nkeep_warm = { heartbeat = "#", interval = "10ms" }\n')
    log = fresh(os.path.join(args.work_dir, "stdio.jsonl"))
    done = run([exe, str(listener.getsockname()[1])],
               clean_env(LD_PRELOAD=args.shim, TCPTUNE_POLICY=policy, TCPTUNE_LOG=log, TCPTUNE_LOG_FORMAT="jsonl"),
               timeout=30)
    thread.join(timeout=30)
    data = received[0] if received else b""
    checks.check(done.returncode == 0 and data.endswith(b"<BODY>"), f"the program ran ({done.returncode})")
    head_at = data.find(b"<HEAD>")
    inside = data[head_at + 6:data.find(b"<BODY>")] if head_at >= 0 else b"?"
    checks.check(inside == b"", f"the message flushed in two parts arrived whole (between them: {inside[:40]!r})")
    checks.check(data.count(b"#") > 0, f"heartbeats did reach the idle connection before fdopen ({data.count(b'#')})")
    checks.finish()


if __name__ == "__main__":
    main()
