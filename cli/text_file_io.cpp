#include "text_file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <system_error>

namespace tcptune::cli {

namespace {

std::string errno_text(int error) {
  return std::generic_category().message(error);
}

}  // namespace

std::optional<std::string> read_text_file(const std::string& path, std::string& error, std::size_t max_bytes) {
  // O_NONBLOCK: a FIFO in the way is not waited on (and is refused below).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    error = errno_text(errno);
    return std::nullopt;
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    error = "not a regular file";
    (void)::close(fd);
    return std::nullopt;
  }
  std::string text;
  char buffer[8192];
  while (true) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got < 0) {
      error = errno_text(errno);
      (void)::close(fd);
      return std::nullopt;
    }
    if (got == 0) {
      break;
    }
    text.append(buffer, static_cast<std::size_t>(got));
    if (text.size() > max_bytes) {
      error = "larger than " + std::to_string(max_bytes) + " bytes";
      (void)::close(fd);
      return std::nullopt;
    }
  }
  (void)::close(fd);
  return text;
}

bool write_file_atomically(const std::string& path, const std::string& text, std::string& error) {
  const std::string temporary = path + ".tcptune-new";
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    error = "cannot create " + temporary + ": " + errno_text(errno);
    return false;
  }
  bool ok = ::fchmod(fd, 0644) == 0;  // whatever the umask
  std::size_t done = 0;
  while (ok && done < text.size()) {
    const ssize_t wrote = ::write(fd, text.data() + done, text.size() - done);
    if (wrote < 0 && errno == EINTR) {
      continue;
    }
    ok = wrote > 0;
    done += ok ? static_cast<std::size_t>(wrote) : 0;
  }
  ok = ok && ::fsync(fd) == 0;
  int saved = errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    saved = errno;
  }
  if (ok && ::rename(temporary.c_str(), path.c_str()) != 0) {
    ok = false;
    saved = errno;
  }
  if (!ok) {
    (void)::unlink(temporary.c_str());
    error = "cannot write " + path + ": " + errno_text(saved);
  }
  return ok;
}

}  // namespace tcptune::cli
