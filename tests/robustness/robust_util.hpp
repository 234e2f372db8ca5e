// Small helpers shared by the robustness programs. They know nothing of tcptune: they open
// loopback connections the way an app would, so the same code runs with and without the shim.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

namespace robust {

[[noreturn]] inline void die(const char* what) {
  std::fprintf(stderr, "%s: %s\n", what, std::strerror(errno));
  std::exit(2);
}

inline std::int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

inline void sleep_ms(int ms) {
  timespec ts{ms / 1000, static_cast<long>(ms % 1000) * 1'000'000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

inline sockaddr_in loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

// A listener on 127.0.0.1 with a kernel-chosen port; `flags` go to socket() (SOCK_CLOEXEC...).
inline int listen_loopback(int backlog, int flags = 0) {
  const int fd = socket(AF_INET, SOCK_STREAM | flags, 0);
  if (fd < 0) {
    die("socket");
  }
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr = loopback(0);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd, backlog) != 0) {
    die("bind/listen");
  }
  return fd;
}

inline int port_of(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.sin_port);
}

inline int connect_loopback(int fd, int port) {
  const sockaddr_in addr = loopback(port);
  return connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
}

inline int int_option(int fd, int level, int name) {
  int value = -1;
  socklen_t len = sizeof value;
  return getsockopt(fd, level, name, &value, &len) == 0 ? value : -1000 - errno;
}

inline int set_int(int fd, int level, int name, int value) {
  return setsockopt(fd, level, name, &value, sizeof value);
}

// Congestion window in segments (tcpi_snd_cwnd; glibc's struct tcp_info has it).
inline unsigned congestion_window(int fd) {
  tcp_info info{};
  socklen_t len = sizeof info;
  return getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) == 0 ? info.tcpi_snd_cwnd : 0;
}

// Bytes written and not yet acknowledged.
inline int unacknowledged(int fd) {
  int queued = 0;
  return ioctl(fd, SIOCOUTQ, &queued) == 0 ? queued : -1;
}

inline bool wait_until_acknowledged(int fd, int limit_ms) {
  const std::int64_t deadline = now_ns() + static_cast<std::int64_t>(limit_ms) * 1'000'000;
  while (unacknowledged(fd) != 0) {
    if (now_ns() > deadline) {
      return false;
    }
    sleep_ms(1);
  }
  return true;
}

inline bool write_all(int fd, const void* data, std::size_t size, int flags = MSG_NOSIGNAL) {
  const char* at = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = send(fd, at, size, flags);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return false;
    }
    at += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// Resident set size in bytes, from /proc/self/statm (second field, in pages).
inline long resident_bytes() {
  FILE* statm = std::fopen("/proc/self/statm", "r");
  long pages_total = 0;
  long pages_resident = 0;
  if (statm == nullptr || std::fscanf(statm, "%ld %ld", &pages_total, &pages_resident) != 2) {
    die("/proc/self/statm");
  }
  std::fclose(statm);
  return pages_resident * sysconf(_SC_PAGESIZE);
}

// --key value pairs after the subcommand.
using Args = std::map<std::string, std::string>;
inline Args parse_args(int argc, char** argv, int first) {
  Args args;
  for (int i = first; i + 1 < argc; i += 2) {
    if (std::strncmp(argv[i], "--", 2) != 0) {
      std::fprintf(stderr, "unexpected argument %s\n", argv[i]);
      std::exit(2);
    }
    args[argv[i] + 2] = argv[i + 1];
  }
  return args;
}
inline long arg_long(const Args& args, const std::string& key, long fallback) {
  const auto found = args.find(key);
  return found == args.end() ? fallback : std::strtol(found->second.c_str(), nullptr, 10);
}
inline std::string arg_str(const Args& args, const std::string& key, const std::string& fallback = "") {
  const auto found = args.find(key);
  return found == args.end() ? fallback : found->second;
}

}  // namespace robust
