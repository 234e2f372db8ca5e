#include "service_pid_variables.hpp"

#include <unistd.h>

#include <cstring>
#include <string>

extern char** environ;  // NOLINT(readability-redundant-declaration): unistd.h declares it only with _GNU_SOURCE

namespace tcptune::cli {

void ServicePidVariables::prepare() {
  count_ = 0;
  const std::string self = std::to_string(getpid());
  for (const char* name : {"LISTEN_PID=", "WATCHDOG_PID="}) {
    const std::size_t length = std::strlen(name);
    for (std::size_t i = 0; environ != nullptr && environ[i] != nullptr; ++i) {
      if (std::strncmp(environ[i], name, length) == 0 && self == environ[i] + length) {
        Entry& entry = entries_[count_++];
        std::memcpy(entry.text.data(), name, length);
        entry.name_length = length;
        entry.environ_index = i;
        break;
      }
    }
  }
}

void ServicePidVariables::retarget_in_child() noexcept {
  char reversed[24];
  std::size_t digits = 0;
  auto pid = static_cast<unsigned long>(getpid());
  do {
    reversed[digits++] = static_cast<char>('0' + pid % 10);
    pid /= 10;
  } while (pid != 0);
  for (std::size_t i = 0; i < count_; ++i) {
    Entry& entry = entries_[i];
    std::size_t at = entry.name_length;
    for (std::size_t k = digits; k > 0; --k) {
      entry.text[at++] = reversed[k - 1];
    }
    entry.text[at] = '\0';
    environ[entry.environ_index] = entry.text.data();
  }
}

}  // namespace tcptune::cli
