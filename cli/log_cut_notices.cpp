#include "log_cut_notices.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <random>

#include "tcptune/config/log_cut_notice.hpp"

namespace tcptune::cli {

LogCutNotices::LogCutNotices() {
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    return;
  }
  // Unguessable, so that another user's process is unlikely to speak into it by chance.
  std::random_device random;
  char name[64];
  (void)std::snprintf(name, sizeof name, "tcptune-run-%d-%08x%08x", static_cast<int>(getpid()), random(), random());
  sockaddr_un address{};
  socklen_t length = 0;
  if (!config::log_cut_notice_address(name, address, length) ||
      bind(fd, reinterpret_cast<const sockaddr*>(&address), length) != 0) {
    close(fd);
    return;
  }
  fd_ = fd;
  name_ = name;
}

LogCutNotices::~LogCutNotices() {
  if (fd_ >= 0) {
    close(fd_);
  }
}

std::vector<std::pair<std::string, std::string>> LogCutNotices::take() {
  std::vector<std::pair<std::string, std::string>> notices;
  char text[8192];
  for (ssize_t got = 0; fd_ >= 0 && (got = recv(fd_, text, sizeof text, 0)) > 0;) {
    const std::string notice(text, static_cast<std::size_t>(got));
    const std::size_t tab = notice.find('\t');
    notices.emplace_back(notice.substr(0, tab), tab == std::string::npos ? std::string() : notice.substr(tab + 1));
  }
  return notices;
}

}  // namespace tcptune::cli
