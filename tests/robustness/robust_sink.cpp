// The receiving end for the telemetry tests, run without the shim: accepts every connection
// on `--listeners` loopback ports, reads until EOF or reset, and counts what arrived. It prints
// the ports (comma-separated) on the first line, then, once `--expect` connections have ended (or after
// `--max-seconds`), one JSON line: connections, bytes, newlines (the keep-warm heartbeats: the programs that write to
// it never send a newline of their own) and resets.
#include <sys/epoll.h>

#include <algorithm>
#include <csignal>
#include <vector>

#include "robust_util.hpp"

namespace {

volatile std::sig_atomic_t g_stop = 0;
void on_term(int /*signal*/) {
  g_stop = 1;
}

}  // namespace

int main(int argc, char** argv) {
  const robust::Args args = robust::parse_args(argc, argv, 1);
  const long expect = robust::arg_long(args, "expect", -1);
  const long max_seconds = robust::arg_long(args, "max-seconds", 60);
  std::signal(SIGTERM, on_term);
  std::signal(SIGPIPE, SIG_IGN);

  const long listener_count = robust::arg_long(args, "listeners", 1);
  const int poller = epoll_create1(EPOLL_CLOEXEC);
  std::vector<int> listeners;
  for (long i = 0; i < listener_count; ++i) {
    const int listener = robust::listen_loopback(4096, SOCK_NONBLOCK | SOCK_CLOEXEC);
    std::printf("%s%d", i == 0 ? "" : ",", robust::port_of(listener));
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.fd = listener;
    epoll_ctl(poller, EPOLL_CTL_ADD, listener, &event);
    listeners.push_back(listener);
  }
  std::printf("\n");
  std::fflush(stdout);

  long ended = 0;
  long resets = 0;
  std::uint64_t bytes = 0;
  std::uint64_t newlines = 0;
  std::vector<char> buffer(1 << 20);
  std::vector<epoll_event> ready(256);
  const std::int64_t deadline = robust::now_ns() + max_seconds * 1'000'000'000L;
  while (g_stop == 0 && (expect < 0 || ended < expect) && robust::now_ns() < deadline) {
    const int count = epoll_wait(poller, ready.data(), static_cast<int>(ready.size()), 100);
    for (int i = 0; i < count; ++i) {
      const int fd = ready[static_cast<std::size_t>(i)].data.fd;
      if (std::find(listeners.begin(), listeners.end(), fd) != listeners.end()) {
        int accepted = 0;
        while ((accepted = accept4(fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
          epoll_event conn{};
          conn.events = EPOLLIN | EPOLLRDHUP;
          conn.data.fd = accepted;
          epoll_ctl(poller, EPOLL_CTL_ADD, accepted, &conn);
        }
        continue;
      }
      for (;;) {
        const ssize_t n = read(fd, buffer.data(), buffer.size());
        if (n > 0) {
          bytes += static_cast<std::uint64_t>(n);
          for (ssize_t k = 0; k < n; ++k) {
            newlines += buffer[static_cast<std::size_t>(k)] == '\n' ? 1 : 0;
          }
          continue;
        }
        if (n < 0 && errno == EINTR) {
          continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
          break;
        }
        resets += n < 0 ? 1 : 0;
        epoll_ctl(poller, EPOLL_CTL_DEL, fd, nullptr);
        close(fd);
        ++ended;
        break;
      }
    }
  }
  std::printf("{\"connections\":%ld,\"bytes\":%llu,\"newlines\":%llu,\"resets\":%ld}\n", ended,
              static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(newlines), resets);
  return 0;
}
