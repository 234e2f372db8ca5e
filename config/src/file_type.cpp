#include "tcptune/config/file_type.hpp"

#include <sys/stat.h>

namespace tcptune::config {

std::string not_a_regular_file(mode_t mode) {
  const char* kind = S_ISDIR(mode)    ? "a directory"
                     : S_ISFIFO(mode) ? "a FIFO"
                     : S_ISCHR(mode)  ? "a character device"
                     : S_ISBLK(mode)  ? "a block device"
                     : S_ISSOCK(mode) ? "a socket"
                                      : "a special file";
  return std::string(kind) + ", not a regular file";
}

}  // namespace tcptune::config
