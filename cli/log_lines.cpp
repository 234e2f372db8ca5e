#include "log_lines.hpp"

#include <algorithm>
#include <cstring>

namespace tcptune::cli {

namespace {

constexpr std::size_t kBlockBytes = std::size_t{64} * 1024;

}  // namespace

LogLines::LogLines(std::istream& in, std::chrono::steady_clock::time_point deadline)
    : in_(in), deadline_(deadline), block_(kBlockBytes) {}

bool LogLines::fill() {
  if (deadline_ != kNoDeadline && std::chrono::steady_clock::now() >= deadline_) {
    stopped_ = true;
    return false;
  }
  in_.read(block_.data(), static_cast<std::streamsize>(block_.size()));
  begin_ = 0;
  end_ = static_cast<std::size_t>(in_.gcount());
  return end_ != 0;
}

bool LogLines::next(std::string& line, bool& cut) {
  line.clear();
  cut = false;
  bool any = false;
  for (;;) {
    if (begin_ == end_ && !fill()) {
      return any && !stopped_;  // the last line, without a newline
    }
    any = true;
    const char* start = block_.data() + begin_;
    const auto* newline = static_cast<const char*>(std::memchr(start, '\n', end_ - begin_));
    const std::size_t length = newline != nullptr ? static_cast<std::size_t>(newline - start) : end_ - begin_;
    const std::size_t kept = std::min(length, kMostLineBytes - std::min(line.size(), kMostLineBytes));
    line.append(start, kept);
    cut = cut || kept < length;
    begin_ += length + (newline != nullptr ? 1 : 0);
    if (newline != nullptr) {
      return true;
    }
  }
}

}  // namespace tcptune::cli
