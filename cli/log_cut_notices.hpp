// tcptune run's ear for a log cut short by the process writing it (a full disk, `ulimit -f`):
// an abstract unix datagram socket named in TCPTUNE_LOG_CUT_NOTICE (tcptune/config/
// log_cut_notice.hpp), read once the program has exited.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tcptune::cli {

class LogCutNotices {
 public:
  // Binds a fresh name; when that fails nothing is heard (name() is empty).
  LogCutNotices();
  ~LogCutNotices();
  LogCutNotices(const LogCutNotices&) = delete;
  LogCutNotices& operator=(const LogCutNotices&) = delete;

  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  // The notices received so far, as (log path, reason).
  std::vector<std::pair<std::string, std::string>> take();

 private:
  int fd_ = -1;
  std::string name_;
};

}  // namespace tcptune::cli
