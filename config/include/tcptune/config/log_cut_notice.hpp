// How `tcptune run` learns that a log was cut short (a full disk, `ulimit -f`) by the process
// that cut it, which has already said so on its own stderr: run binds an abstract unix datagram
// socket and names it in TCPTUNE_LOG_CUT_NOTICE, and the shim or the supervisor that ends a
// log sends it one datagram, "PATH\tREASON". Abstract: no file on the full disk, and no
// descriptor in the app; the name is gone with run. Best effort: a program that clears its
// environment, or moves into another network namespace, is not heard.
#pragma once

#include <sys/socket.h>
#include <sys/un.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

namespace tcptune::config {

inline constexpr const char* kLogCutNoticeEnv = "TCPTUNE_LOG_CUT_NOTICE";

// The abstract address (a leading NUL, then `name`); false if `name` is empty or too long.
inline bool log_cut_notice_address(std::string_view name, sockaddr_un& address, socklen_t& length) {
  address = {};
  address.sun_family = AF_UNIX;
  if (name.empty() || name.size() + 1 > sizeof address.sun_path) {
    return false;
  }
  std::memcpy(address.sun_path + 1, name.data(), name.size());
  length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return true;
}

// The datagram: the log's path, a tab, and the reason.
inline std::string log_cut_notice(std::string_view path, std::string_view reason) {
  std::string text(path);
  text += '\t';
  text += reason;
  return text;
}

}  // namespace tcptune::config
