#include "process_identity.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <string>
#include <string_view>

namespace tcptune::telemetry {

namespace {

struct StatFields {
  long pid = 0;
  char state = '?';
  std::uint64_t start_ticks = 0;
};

// /proc/PID/stat's state (field 3) and starttime (field 22); the command name before them is
// in parentheses and may hold spaces, so the fields are counted from its last ')'.
bool read_stat(const std::string& path, const FileCalls& calls, StatFields& out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return false;
  }
  char text[1024];
  std::size_t size = 0;
  for (;;) {
    const ssize_t got = calls.read(fd, text + size, sizeof text - 1 - size);
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got <= 0) {
      break;
    }
    size += static_cast<std::size_t>(got);
    if (size == sizeof text - 1) {
      break;
    }
  }
  calls.close(fd);
  std::string_view stat(text, size);
  (void)std::from_chars(stat.data(), stat.data() + stat.size(), out.pid);
  const std::size_t paren = stat.rfind(')');
  if (paren == std::string_view::npos) {
    return false;
  }
  stat.remove_prefix(paren + 1);
  constexpr int kStartTimeAfterParen = 20;  // field 22: the 20th after the name
  for (int field = 1; field <= kStartTimeAfterParen; ++field) {
    const std::size_t begin = stat.find_first_not_of(' ');
    if (begin == std::string_view::npos) {
      return false;
    }
    stat.remove_prefix(begin);
    const std::size_t end = std::min(stat.find(' '), stat.size());
    const std::string_view value = stat.substr(0, end);
    if (field == 1) {
      out.state = value.empty() ? '?' : value[0];
    } else if (field == kStartTimeAfterParen) {
      const auto [ptr, error] = std::from_chars(value.data(), value.data() + value.size(), out.start_ticks);
      return error == std::errc() && ptr == value.data() + value.size();
    }
    stat.remove_prefix(end);
  }
  return false;
}

// The inode in /proc/self/ns/pid's target, "pid:[4026531836]".
std::uint64_t pid_namespace_inode() {
  char target[64];
  const ssize_t size = ::readlink("/proc/self/ns/pid", target, sizeof target);
  if (size <= 0) {
    return 0;
  }
  const std::string_view text(target, static_cast<std::size_t>(size));
  const std::size_t open = text.find('[');
  std::uint64_t inode = 0;
  if (open == std::string_view::npos || !text.ends_with(']')) {
    return 0;
  }
  const std::string_view digits = text.substr(open + 1, text.size() - open - 2);
  const auto [ptr, error] = std::from_chars(digits.data(), digits.data() + digits.size(), inode);
  return error == std::errc() && ptr == digits.data() + digits.size() ? inode : 0;
}

}  // namespace

ProcessIdentity own_process_identity(const FileCalls& calls) {
  ProcessIdentity me;
  me.pid = ::getpid();
  StatFields stat;
  // A /proc of another pid namespace (not remounted in a container) numbers processes
  // otherwise: then no pid in it can be checked.
  if (read_stat("/proc/self/stat", calls, stat) && stat.pid == me.pid) {
    me.start_ticks = stat.start_ticks;
    me.pid_namespace = pid_namespace_inode();
  }
  return me;
}

bool may_be_running(const ProcessIdentity& other, const ProcessIdentity& me, const FileCalls& calls) {
  if (me.pid_namespace == 0 || other.pid_namespace != me.pid_namespace || other.pid <= 0) {
    return true;  // its pid means nothing here, or there is no telling
  }
  // kill(0) sees every process, even where /proc hides other users' (hidepid).
  if (::kill(static_cast<pid_t>(other.pid), 0) != 0 && errno == ESRCH) {
    return false;
  }
  StatFields stat;
  if (!read_stat("/proc/" + std::to_string(other.pid) + "/stat", calls, stat)) {
    return true;
  }
  if (stat.state == 'Z' || stat.state == 'X') {
    return false;  // ended, not yet reaped
  }
  return other.start_ticks == 0 || stat.start_ticks == other.start_ticks;
}

}  // namespace tcptune::telemetry
