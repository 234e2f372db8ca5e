// Socket calls from a signal handler while the interrupted thread allocates and makes the same
// calls. POSIX lists socket, connect, accept, setsockopt, send, write, close (and more) as
// async-signal-safe, so an app may call them from a handler; a hook behind them must not
// allocate, lock or format there. A timer fires SIGALRM every `--interval-us`; the handler
// opens a connection to a listener of its own, accepts it, writes through write/send/writev
// and closes both. The main thread does the same in a loop between bursts of malloc/free and
// string building, for `--seconds`, then exits 0. A deadlock or a crash is the failure; the
// harness bounds the time.
#include <pthread.h>
#include <signal.h>
#include <sys/time.h>
#include <sys/uio.h>

#include <atomic>
#include <csignal>
#include <string>
#include <thread>
#include <vector>

#include "robust_util.hpp"

namespace {

int g_main_listener = -1;     // accepted by a thread (SIGALRM blocked there)
int g_handler_listener = -1;  // non-blocking, accepted by the handler itself
sockaddr_in g_main_addr{};
sockaddr_in g_handler_addr{};
std::int64_t g_deadline_ns = 0;  // set before the timer starts
volatile sig_atomic_t g_handler_runs = 0;
volatile sig_atomic_t g_handler_failures = 0;

// One short connection, as an app would make it; only async-signal-safe calls.
void one_connection(const sockaddr_in& addr, int accept_from) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) {
    g_handler_failures = g_handler_failures + 1;
    return;
  }
  const int rcvbuf = 32 * 1024;  // before connect: the shim holds buffer options then
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  const linger reset{1, 0};  // close with a reset: no TIME_WAIT, so the ports never run out
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) {
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int accepted = -1;
    if (accept_from >= 0) {
      accepted = accept(accept_from, nullptr, nullptr);
    }
    static const char payload[] = "0123456789abcdef";
    (void)write(fd, payload, 16);
    (void)send(fd, payload, 8, MSG_NOSIGNAL);
    iovec parts[2] = {{const_cast<char*>(payload), 4}, {const_cast<char*>(payload) + 4, 4}};
    (void)writev(fd, parts, 2);
    if (accepted >= 0) {
      close(accepted);
    }
  }
  close(fd);
}

void on_alarm(int /*signal*/) {
  const int saved_errno = errno;
  // Past the deadline the handler does nothing, so a slow machine, where handlers could take
  // longer than the timer's interval, still lets the main thread reach its deadline check.
  if (robust::now_ns() >= g_deadline_ns) {
    errno = saved_errno;
    return;
  }
  one_connection(g_handler_addr, g_handler_listener);
  g_handler_runs = g_handler_runs + 1;
  errno = saved_errno;
}

void accept_and_close(std::atomic<bool>& stop) {
  while (!stop.load()) {
    const int fd = accept(g_main_listener, nullptr, nullptr);
    if (fd >= 0) {
      close(fd);
    } else if (errno != EINTR && errno != ECONNABORTED) {
      return;  // shut down
    }
  }
}

// Allocation that keeps malloc's locks and free lists busy, as an app's own work would.
std::size_t churn_heap(unsigned& seed) {
  std::vector<std::string> strings;
  std::size_t total = 0;
  for (int i = 0; i < 64; ++i) {
    seed = seed * 1103515245U + 12345U;
    strings.emplace_back(16 + seed % 4096, static_cast<char>('a' + i % 26));
    void* block = std::malloc(32 + seed % 65536);
    total += strings.back().size() + (block != nullptr ? 1 : 0);
    std::free(block);
  }
  return total;
}

}  // namespace

int main(int argc, char** argv) {
  const robust::Args args = robust::parse_args(argc, argv, 1);
  const long seconds = robust::arg_long(args, "seconds", 4);
  const long interval_us = robust::arg_long(args, "interval-us", 300);
  std::signal(SIGPIPE, SIG_IGN);

  g_main_listener = robust::listen_loopback(4096);
  g_handler_listener = robust::listen_loopback(64, SOCK_NONBLOCK);
  g_main_addr = robust::loopback(robust::port_of(g_main_listener));
  g_handler_addr = robust::loopback(robust::port_of(g_handler_listener));

  // Only the main thread takes SIGALRM: the acceptor is started with it blocked.
  sigset_t alarm_only;
  sigemptyset(&alarm_only);
  sigaddset(&alarm_only, SIGALRM);
  pthread_sigmask(SIG_BLOCK, &alarm_only, nullptr);
  std::atomic<bool> stop{false};
  std::thread acceptor(accept_and_close, std::ref(stop));
  pthread_sigmask(SIG_UNBLOCK, &alarm_only, nullptr);

  struct sigaction action {};
  action.sa_handler = on_alarm;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGALRM, &action, nullptr);
  g_deadline_ns = robust::now_ns() + seconds * 1'000'000'000L;
  itimerval timer{};
  timer.it_interval.tv_usec = interval_us;
  timer.it_value.tv_usec = interval_us;
  setitimer(ITIMER_REAL, &timer, nullptr);

  unsigned seed = 1;
  long main_connections = 0;
  std::size_t heap_bytes = 0;
  while (robust::now_ns() < g_deadline_ns) {
    heap_bytes += churn_heap(seed);
    one_connection(g_main_addr, -1);
    ++main_connections;
  }

  const itimerval off{};
  setitimer(ITIMER_REAL, &off, nullptr);
  stop.store(true);
  shutdown(g_main_listener, SHUT_RDWR);  // wakes the acceptor's accept()
  acceptor.join();
  std::printf("handler connections %d (failed %d), main connections %ld, heap churned %zu bytes\n",
              static_cast<int>(g_handler_runs), static_cast<int>(g_handler_failures), main_connections, heap_bytes);
  return 0;
}
