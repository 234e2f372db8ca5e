#include "scenario_socket.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tcptune::bench {
namespace {

struct ParsedEndpoint {
  sockaddr_storage address{};
  socklen_t length = 0;
};

ParsedEndpoint parse_endpoint(const std::string& endpoint) {
  ParsedEndpoint out;
  const auto colon = endpoint.rfind(':');
  if (colon == std::string::npos) {
    std::fprintf(stderr, "scenario: endpoint '%s' needs ADDRESS:PORT\n", endpoint.c_str());
    std::exit(2);
  }
  std::string host = endpoint.substr(0, colon);
  const int port = std::atoi(endpoint.c_str() + colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  auto* v4 = reinterpret_cast<sockaddr_in*>(&out.address);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&out.address);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<std::uint16_t>(port));
    out.length = sizeof(sockaddr_in);
  } else if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<std::uint16_t>(port));
    out.length = sizeof(sockaddr_in6);
  } else {
    std::fprintf(stderr, "scenario: '%s' is not an IP address\n", host.c_str());
    std::exit(2);
  }
  return out;
}

[[noreturn]] void die(const char* what, const std::string& endpoint) {
  std::fprintf(stderr, "scenario: %s %s: %s\n", what, endpoint.c_str(), std::strerror(errno));
  std::exit(1);
}

}  // namespace

int connect_to(const std::string& endpoint) {
  const ParsedEndpoint parsed = parse_endpoint(endpoint);
  // The receiver may still be starting in its namespace: retry refused connects for a while.
  for (int attempt = 0;; ++attempt) {
    const int fd = socket(parsed.address.ss_family, SOCK_STREAM, 0);
    if (fd < 0) {
      die("socket for", endpoint);
    }
    if (connect(fd, reinterpret_cast<const sockaddr*>(&parsed.address), parsed.length) == 0) {
      return fd;
    }
    if (errno != ECONNREFUSED || attempt >= 100) {
      die("connect to", endpoint);
    }
    close(fd);
    sleep_seconds(0.05);
  }
}

int listen_on(const std::string& endpoint, int rcvbuf) {
  const ParsedEndpoint parsed = parse_endpoint(endpoint);
  const int fd = socket(parsed.address.ss_family, SOCK_STREAM, 0);
  const int one = 1;
  if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0) {
    die("socket for", endpoint);
  }
  if (rcvbuf > 0 && setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf) != 0) {
    die("SO_RCVBUF on", endpoint);
  }
  if (bind(fd, reinterpret_cast<const sockaddr*>(&parsed.address), parsed.length) != 0 || listen(fd, 16) != 0) {
    die("listen on", endpoint);
  }
  return fd;
}

int accept_one(int listener) {
  const int fd = accept(listener, nullptr, nullptr);
  if (fd < 0) {
    die("accept on", "listener");
  }
  return fd;
}

void set_nodelay(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

bool read_exactly(int fd, void* buffer, std::size_t size) {
  auto* bytes = static_cast<char*>(buffer);
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = read(fd, bytes + done, size - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

bool write_all(int fd, const void* buffer, std::size_t size) {
  const auto* bytes = static_cast<const char*>(buffer);
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = write(fd, bytes + done, size - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

long long monotonic_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<long long>(now.tv_sec) * 1'000'000'000LL + now.tv_nsec;
}

void sleep_seconds(double seconds) {
  timespec duration{};
  duration.tv_sec = static_cast<time_t>(seconds);
  duration.tv_nsec = static_cast<long>((seconds - static_cast<double>(duration.tv_sec)) * 1e9);
  while (nanosleep(&duration, &duration) != 0 && errno == EINTR) {
  }
}

}  // namespace tcptune::bench
