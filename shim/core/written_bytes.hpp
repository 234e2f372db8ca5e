// Where the bytes of one write-family call are, so that keep-warm's framer can follow them
// once the kernel has accepted `accepted` of them. The kernel read those bytes itself, so
// they are the app's valid memory; nothing is read of a call that failed. Each kind says
// whether its source may run dry: a sendfile or splice that moves fewer bytes than asked may
// have reached the end of its file or pipe, where a write that does must have met a full
// socket buffer.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>

#include "message_framer.hpp"

namespace tcptune::shim {

// write, send, sendto.
struct BufferBytes {
  static constexpr bool kSourceMayRunDry = false;
  const void* data = nullptr;
};

// writev, sendmsg.
struct IovecBytes {
  static constexpr bool kSourceMayRunDry = false;
  const iovec* iov = nullptr;
  std::size_t count = 0;
};

// sendmsg: its header is read only once the kernel accepted the call (a bad one fails it).
struct MessageBytes {
  static constexpr bool kSourceMayRunDry = false;
  const msghdr* message = nullptr;
};

// sendmmsg: `sent` messages went, each its msg_len.
struct MultiMessageBytes {
  static constexpr bool kSourceMayRunDry = false;
  const mmsghdr* messages = nullptr;
  const int* sent = nullptr;
};

// sendfile: read back from the file with pread (offset: the app's, updated by the call, or
// nullptr for the file position).
struct FileBytes {
  static constexpr bool kSourceMayRunDry = true;
  int in_fd = -1;
  const off_t* offset = nullptr;
};

// splice from a pipe: bytes the shim cannot see.
struct PipeBytes {
  static constexpr bool kSourceMayRunDry = true;
  int in_fd = -1;
};

void feed_framer(MessageFramer& framer, const BufferBytes& bytes, std::size_t accepted) noexcept;
void feed_framer(MessageFramer& framer, const IovecBytes& bytes, std::size_t accepted) noexcept;
void feed_framer(MessageFramer& framer, const MessageBytes& bytes, std::size_t accepted) noexcept;
void feed_framer(MessageFramer& framer, const MultiMessageBytes& bytes, std::size_t accepted) noexcept;
void feed_framer(MessageFramer& framer, const FileBytes& bytes, std::size_t accepted) noexcept;
void feed_framer(MessageFramer& framer, const PipeBytes& bytes, std::size_t accepted) noexcept;

// After a call that moved fewer bytes than asked: true when its source has nothing
// left (the file's end reached, the pipe empty), so the call ended what the app had to send; a
// send timeout, a signal or a full non-blocking socket stops it short of that. Errno preserved.
bool source_ran_dry(const FileBytes& bytes) noexcept;
bool source_ran_dry(const PipeBytes& bytes) noexcept;
}  // namespace tcptune::shim
