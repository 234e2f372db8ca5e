// A temporary jsonl log for the tests, removed when it goes out of scope.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace tcptune::cli {

class TempLog {
 public:
  explicit TempLog(const std::string& text) {
    std::string pattern = "/tmp/tcptune-cli-test-XXXXXX";
    const int fd = mkstemp(pattern.data());
    if (fd >= 0) {
      (void)close(fd);
    }
    path_ = pattern;
    std::ofstream(path_, std::ios::binary) << text;
  }
  ~TempLog() { (void)unlink(path_.c_str()); }
  TempLog(const TempLog&) = delete;
  TempLog& operator=(const TempLog&) = delete;
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace tcptune::cli
