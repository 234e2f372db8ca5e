#include "written_bytes.hpp"

#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <optional>

#include "app_memory.hpp"
#include "errno_saver.hpp"

namespace tcptune::shim {

namespace {

// Where a sendfile stopped reading: the app's offset or the file position, both moved past
// what was sent; -1 when neither can be read.
off_t file_end_after(const FileBytes& bytes) noexcept {
  if (bytes.offset != nullptr) {
    return read_app_object<off_t>(bytes.offset).value_or(-1);
  }
  return lseek(bytes.in_fd, 0, SEEK_CUR);
}

// The first `accepted` bytes of an iovec array.
void feed_iovecs(MessageFramer& framer, const iovec* iov, std::size_t count, std::size_t accepted) noexcept {
  for (std::size_t i = 0; i < count && accepted > 0; ++i) {
    const std::size_t take = std::min(accepted, iov[i].iov_len);
    framer.consume(static_cast<const char*>(iov[i].iov_base), take);
    accepted -= take;
  }
}

}  // namespace

void feed_framer(MessageFramer& framer, const BufferBytes& bytes, std::size_t accepted) noexcept {
  framer.consume(static_cast<const char*>(bytes.data), accepted);
}

void feed_framer(MessageFramer& framer, const IovecBytes& bytes, std::size_t accepted) noexcept {
  feed_iovecs(framer, bytes.iov, bytes.count, accepted);
}

void feed_framer(MessageFramer& framer, const MessageBytes& bytes, std::size_t accepted) noexcept {
  feed_iovecs(framer, bytes.message->msg_iov, bytes.message->msg_iovlen, accepted);
}

void feed_framer(MessageFramer& framer, const MultiMessageBytes& bytes, std::size_t /*accepted*/) noexcept {
  for (int i = 0; i < *bytes.sent; ++i) {
    const msghdr& header = bytes.messages[i].msg_hdr;
    feed_iovecs(framer, header.msg_iov, header.msg_iovlen, bytes.messages[i].msg_len);
  }
}

void feed_framer(MessageFramer& framer, const FileBytes& bytes, std::size_t accepted) noexcept {
  const off_t end = file_end_after(bytes);
  if (end < static_cast<off_t>(accepted)) {
    framer.lose(FramingLoss::unseen_bytes);
    return;
  }
  off_t position = end - static_cast<off_t>(accepted);
  // Small: a signal handler's stack may be, too.
  char chunk[512];
  while (accepted > 0 && framer.loss() == FramingLoss::none) {
    // Declared lengths are counted down without reading the file.
    if (const std::size_t skipped = framer.skippable(accepted); skipped > 0) {
      framer.skip(skipped);
      accepted -= skipped;
      position += static_cast<off_t>(skipped);
      continue;
    }
    const ssize_t got = pread(bytes.in_fd, chunk, std::min(accepted, sizeof chunk), position);
    if (got <= 0) {
      framer.lose(FramingLoss::unseen_bytes);  // not readable back (a pipe, a file cut short since)
      return;
    }
    framer.consume(chunk, static_cast<std::size_t>(got));
    accepted -= static_cast<std::size_t>(got);
    position += got;
  }
}

void feed_framer(MessageFramer& framer, const PipeBytes& /*bytes*/, std::size_t accepted) noexcept {
  framer.skip(accepted);  // within a declared length it is counted; anywhere else the framing is lost
}

bool source_ran_dry(const FileBytes& bytes) noexcept {
  const ErrnoSaver saver;
  struct stat file {};
  const off_t end = file_end_after(bytes);
  return end >= 0 && fstat(bytes.in_fd, &file) == 0 && S_ISREG(file.st_mode) && end >= file.st_size;
}

bool source_ran_dry(const PipeBytes& bytes) noexcept {
  const ErrnoSaver saver;
  int left = 0;
  return ioctl(bytes.in_fd, FIONREAD, &left) == 0 && left == 0;
}

}  // namespace tcptune::shim
