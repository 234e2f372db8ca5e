#include "netns_setup.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "subprocess.hpp"

namespace tcptune::linkem {

namespace {

std::string netns_path(std::string_view name) {
  return "/run/netns/" + std::string(name);
}

}  // namespace

bool netns_exists(std::string_view name) {
  struct stat info {};
  return stat(netns_path(name).c_str(), &info) == 0;
}

bool netns_add(std::string_view name, std::string& error) {
  const std::vector<std::string> argv = {"ip", "netns", "add", std::string(name)};
  const CommandResult result = run_command(argv);
  if (!result.ok()) {
    error = command_line(argv) + " failed: " + result.output;
    return false;
  }
  return true;
}

bool netns_delete(std::string_view name, std::string& error) {
  if (!netns_exists(name)) {
    return true;
  }
  const std::vector<std::string> argv = {"ip", "netns", "delete", std::string(name)};
  const CommandResult result = run_command(argv);
  if (!result.ok() && netns_exists(name)) {
    error = command_line(argv) + " failed: " + result.output;
    return false;
  }
  return true;
}

ScopedNetns::~ScopedNetns() {
  if (home_fd_ >= 0) {
    // Failing to return would leave later work in the wrong namespace; nothing sane remains to do then.
    if (setns(home_fd_, CLONE_NEWNET) != 0) {
      std::abort();
    }
    close(home_fd_);
  }
}

bool ScopedNetns::enter(std::string_view name, std::string& error) {
  if (home_fd_ < 0) {
    home_fd_ = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (home_fd_ < 0) {
      error = std::string("open /proc/thread-self/ns/net: ") + std::strerror(errno);
      return false;
    }
  }
  const std::string path = netns_path(name);
  const int target_fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (target_fd < 0) {
    error = "network namespace " + std::string(name) + ": " + std::strerror(errno);
    return false;
  }
  const int rc = setns(target_fd, CLONE_NEWNET);
  const int saved_errno = errno;
  close(target_fd);
  if (rc != 0) {
    error = "setns into " + std::string(name) + ": " + std::strerror(saved_errno);
    return false;
  }
  return true;
}

}  // namespace tcptune::linkem
