// The calls that read, write and close the telemetry's own files. Plain system calls by
// default; the preloaded shim passes libc's next definitions, so that its own hooks are not
// re-entered.
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace tcptune::telemetry {

struct FileCalls {
  ssize_t (*read)(int fd, void* data, std::size_t size);
  ssize_t (*write)(int fd, const void* data, std::size_t size);
  int (*close)(int fd);
};
FileCalls plain_file_calls() noexcept;

}  // namespace tcptune::telemetry
