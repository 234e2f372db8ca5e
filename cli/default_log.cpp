#include "default_log.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <system_error>

namespace tcptune::cli {

namespace {

std::string absolute_variable(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && value[0] == '/' ? std::string(value) : std::string();
}

// mkdir -p: the missing parents with `parent_mode`, the directory itself with `mode`. Each must
// end up a directory; empty, or why not.
std::string make_directories(const std::string& path, mode_t parent_mode, mode_t mode) {
  for (std::size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
    const std::string part = path.substr(0, slash);
    const bool last = slash == std::string::npos || slash + 1 == path.size();
    if (!part.empty() && ::mkdir(part.c_str(), last ? mode : parent_mode) != 0 && errno != EEXIST) {
      return "cannot create " + part + ": " + std::generic_category().message(errno);
    }
    if (last) {
      break;
    }
  }
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    return path + " is not a directory";
  }
  return {};
}

}  // namespace

std::string default_log_directory(std::string& problem) {
  const uid_t uid = ::geteuid();
  std::string directory;
  std::string error;
  if (const std::string state = absolute_variable("XDG_STATE_HOME"); !state.empty()) {
    directory = state + "/tcptune";
    error = make_directories(directory, 0700, 0700);
  } else if (uid == 0) {
    directory = "/var/log/tcptune";
    error = make_directories(directory, 0755, 0755);
  } else if (const std::string home = absolute_variable("HOME"); !home.empty() && home != "/") {
    directory = home + "/.local/state/tcptune";
    error = make_directories(directory, 0700, 0700);
  } else {
    // No home: a directory of this user's own in the temporary directory, never one that
    // another user made there first (it could read the logs, or swap them).
    const std::string tmp = absolute_variable("TMPDIR");
    directory = (tmp.empty() ? std::string("/tmp") : tmp) + "/tcptune-" + std::to_string(uid);
    if (::mkdir(directory.c_str(), 0700) != 0 && errno != EEXIST) {
      error = "cannot create " + directory + ": " + std::generic_category().message(errno);
    }
    struct stat info {};
    if (error.empty() && (::lstat(directory.c_str(), &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != uid ||
                          (info.st_mode & 0077) != 0)) {
      error = directory + " is not a private directory of this user";
    }
  }
  if (!error.empty()) {
    problem = error;
    return {};
  }
  return directory;
}

std::string default_log_path(const std::string& program, long pid, std::string& problem) {
  const std::string directory = default_log_directory(problem);
  if (directory.empty()) {
    return {};
  }
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  (void)::localtime_r(&now, &local);
  char stamp[32];
  (void)std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &local);
  return directory + "/" + program + "-" + stamp + "-" + std::to_string(pid) + ".jsonl";
}

}  // namespace tcptune::cli
