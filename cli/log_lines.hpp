// The lines of a log, read in blocks with a bound on each line's length and, optionally, on the
// time spent: a file with a gigabyte-long "line" (a hole a crash left, or not a log at all) is
// skipped over, never held in memory, and a deadline is looked at between blocks, however long
// the lines.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <istream>
#include <string>
#include <vector>

namespace tcptune::cli {

// Reading without a deadline.
constexpr std::chrono::steady_clock::time_point kNoDeadline = std::chrono::steady_clock::time_point::max();

class LogLines {
 public:
  // No record of tcptune's is near this long.
  static constexpr std::size_t kMostLineBytes = std::size_t{1} << 20;

  explicit LogLines(std::istream& in, std::chrono::steady_clock::time_point deadline = kNoDeadline);

  // The next line, without its newline, in `line`; false at the end of the file or at the deadline
  // (stopped()). A line longer than kMostLineBytes comes back cut there, with `cut` set.
  bool next(std::string& line, bool& cut);
  [[nodiscard]] bool stopped() const noexcept { return stopped_; }

 private:
  bool fill();

  std::istream& in_;
  std::chrono::steady_clock::time_point deadline_;
  std::vector<char> block_;
  std::size_t begin_ = 0;
  std::size_t end_ = 0;
  bool stopped_ = false;
};

}  // namespace tcptune::cli
