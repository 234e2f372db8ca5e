#!/usr/bin/env python3
"""After a signal handler is left by siglongjmp, every later hook called from deeper on the
stack believes it is still inside the handler: the socket is left untuned, unmeasured, and
the summary record is missing.

docs/policy.md ("Respecting the app"): "A handler left by siglongjmp is noticed from the stack
pointer." signal_context.cpp decides "still inside" when the hook's frame is *below* the
trampoline's frame. After siglongjmp the program often runs deeper than the handler did: the
classic alarm()+siglongjmp timeout around a blocking call, then a connect() from a function
with a 16 KiB local buffer (a signal frame is only a few KiB). The C helper (compiled here):
SIGALRM via signal(), sigsetjmp, a 10 ms timer, pause(), the handler siglongjmps out; then
deep_client() connects to loopback, reads TCP_NODELAY and writes 1000 bytes. Control: the same
program without the timeout episode.

Correct: both runs the same: the policy's TCP_NODELAY=1 (nodelay = "on"), a conn_open record, and a
summary with connections=1, writes=1, bytes=1000, and no untuned_in_signal_handlers.
"""
import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from robustlib import Checks, clean_env, compile_c, discarding_listener, fresh, parse_args, records, run  # noqa: E402

SOURCE = r'''
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

static sigjmp_buf env;
static void on_alarm(int sig) { (void)sig; siglongjmp(env, 1); }
static int port;

__attribute__((noinline)) static int deep_client(void) {
  volatile char buffer[16384];
  memset((char*)buffer, 'x', sizeof buffer);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr*)&a, sizeof a) != 0) { perror("connect"); exit(2); }
  int nodelay = -1; socklen_t len = sizeof nodelay;
  getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, &len);
  if (write(fd, (char*)buffer, 1000) != 1000) { perror("write"); exit(2); }
  close(fd);
  return nodelay;
}

__attribute__((noinline)) static void wait_for_timeout(void) {
  struct itimerval t = {{0, 0}, {0, 10000}};
  setitimer(ITIMER_REAL, &t, NULL);
  for (;;) pause();
}

int main(int argc, char** argv) {
  port = atoi(argv[1]);
  int longjmp_first = atoi(argv[2]);
  signal(SIGALRM, on_alarm);
  if (longjmp_first && sigsetjmp(env, 1) == 0) wait_for_timeout();
  printf("nodelay=%d\n", deep_client());
  return 0;
}
'''


def main():
    args = parse_args()
    checks = Checks()
    exe = compile_c(args, "longjmp_depth", SOURCE, "-O1")
    port = discarding_listener()

    for longjmp_first in ("0", "1"):
        name = "after a handler left by siglongjmp" if longjmp_first == "1" else "control (no signal)"
        log = fresh(os.path.join(args.work_dir, f"run{longjmp_first}.jsonl"))
        env = clean_env(LD_PRELOAD=args.shim, TCPTUNE_LOG=log, TCPTUNE_LOG_FORMAT="jsonl",
                        TCPTUNE_POLICY_TOML='version = 1\n[defaults]\nnodelay = "on"\n')
        done = run([exe, str(port), longjmp_first], env, timeout=30)
        checks.check(done.returncode == 0, f"{name}: the program ran ({done.stderr.strip()})")
        checks.check(done.stdout.strip() == "nodelay=1",
                     f"{name}: the policy set TCP_NODELAY on the connection ({done.stdout.strip()})")
        recs = records(log)
        checks.check(any(r.get("event") == "conn_open" for r in recs), f"{name}: a conn_open record")
        summary = [r for r in recs if r.get("event") == "summary"]
        s = summary[-1] if summary else {}
        checks.check(s.get("connections") == 1 and s.get("writes") == 1 and s.get("bytes") == 1000
                     and "untuned_in_signal_handlers" not in s,
                     f"{name}: summary connections=1 writes=1 bytes=1000, nothing untuned "
                     f"({ {k: s.get(k) for k in ('connections', 'writes', 'bytes', 'untuned_in_signal_handlers')} if s else 'no summary record'})")
    checks.finish()


if __name__ == "__main__":
    main()
