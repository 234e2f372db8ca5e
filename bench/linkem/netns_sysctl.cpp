#include "netns_sysctl.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <sstream>

#include "netns_setup.hpp"

namespace tcptune::linkem {

namespace {

constexpr const char* kCongestion = "/proc/sys/net/ipv4/tcp_congestion_control";
constexpr const char* kAllowedCongestion = "/proc/sys/net/ipv4/tcp_allowed_congestion_control";
constexpr const char* kAvailableCongestion = "/proc/sys/net/ipv4/tcp_available_congestion_control";
constexpr const char* kSlowStartAfterIdle = "/proc/sys/net/ipv4/tcp_slow_start_after_idle";

bool list_contains(const std::string& list, std::string_view name) {
  std::istringstream words(list);
  std::string word;
  while (words >> word) {
    if (word == name) {
      return true;
    }
  }
  return false;
}

// Puts the host's allowed list back as it was when destroyed (after adding an algorithm to it).
class AllowedListRestorer {
 public:
  explicit AllowedListRestorer(std::string previous) : previous_(std::move(previous)) {}
  AllowedListRestorer(const AllowedListRestorer&) = delete;
  AllowedListRestorer& operator=(const AllowedListRestorer&) = delete;
  ~AllowedListRestorer() {
    std::string error;
    std::string now;
    if (!write_sysctl(kAllowedCongestion, previous_, error) || !read_sysctl(kAllowedCongestion, now, error) ||
        now != previous_) {
      // Not fatal for the link, but the host is left changed: say so loudly.
      (void)std::fprintf(stderr, "tcptune-linkem: warning: could not restore %s to \"%s\" (%s)\n", kAllowedCongestion,
                         previous_.c_str(), error.empty() ? ("it reads \"" + now + "\"").c_str() : error.c_str());
    }
  }

 private:
  std::string previous_;
};

bool write_in_netns(std::string_view netns, const char* path, std::string_view value, std::string& error) {
  ScopedNetns inside;
  if (!inside.enter(netns, error)) {
    return false;
  }
  if (!write_sysctl(path, value, error)) {
    error = std::string(netns) + ": " + error;
    return false;
  }
  return true;
}

}  // namespace

bool read_sysctl(const std::string& path, std::string& value, std::string& error) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = "open " + path + ": " + std::strerror(errno);
    return false;
  }
  char buffer[512];
  const ssize_t n = read(fd, buffer, sizeof buffer - 1);
  const int saved_errno = errno;
  close(fd);
  if (n < 0) {
    error = "read " + path + ": " + std::strerror(saved_errno);
    return false;
  }
  value.assign(buffer, static_cast<std::size_t>(n));
  while (!value.empty() && (value.back() == '\n' || value.back() == ' ' || value.back() == '\t')) {
    value.pop_back();
  }
  return true;
}

bool write_sysctl(const std::string& path, std::string_view value, std::string& error) {
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    error = "open " + path + ": " + std::strerror(errno);
    return false;
  }
  const std::string line = std::string(value) + "\n";
  const ssize_t n = write(fd, line.data(), line.size());
  const int saved_errno = errno;
  close(fd);
  if (n != static_cast<ssize_t>(line.size())) {
    error =
        "write \"" + std::string(value) + "\" to " + path + ": " + (n < 0 ? std::strerror(saved_errno) : "short write");
    return false;
  }
  return true;
}

bool read_netns_sysctls(std::string_view netns, NetnsSysctls& sysctls, std::string& error) {
  ScopedNetns inside;
  if (!inside.enter(netns, error)) {
    return false;
  }
  std::string slow_start;
  if (!read_sysctl(kCongestion, sysctls.congestion, error) || !read_sysctl(kSlowStartAfterIdle, slow_start, error)) {
    return false;
  }
  sysctls.slow_start_after_idle = slow_start == "0" ? 0 : 1;
  return true;
}

bool apply_netns_sysctls(std::span<const std::string_view> namespaces, const SysctlChange& change, std::string& error) {
  if (change.congestion) {
    const std::string& name = *change.congestion;
    std::string allowed;
    if (!read_sysctl(kAllowedCongestion, allowed, error)) {
      return false;
    }
    std::optional<AllowedListRestorer> restorer;
    if (!list_contains(allowed, name)) {
      std::string available;
      if (!read_sysctl(kAvailableCongestion, available, error)) {
        return false;
      }
      if (!list_contains(available, name)) {
        error = "congestion control \"" + name + "\" is not available (tcp_available_congestion_control: " + available +
                ")";
        return false;
      }
      // From here on, every return (error or not) restores the list, through the destructor.
      restorer.emplace(allowed);
      if (!write_sysctl(kAllowedCongestion, allowed + " " + name, error)) {
        return false;
      }
    }
    for (const std::string_view netns : namespaces) {
      if (!write_in_netns(netns, kCongestion, name, error)) {
        return false;
      }
    }
  }
  if (change.slow_start_after_idle) {
    for (const std::string_view netns : namespaces) {
      if (!write_in_netns(netns, kSlowStartAfterIdle, std::to_string(*change.slow_start_after_idle), error)) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace tcptune::linkem
