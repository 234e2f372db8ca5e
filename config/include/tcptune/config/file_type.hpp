// Names for the kinds of file that are not regular files, for the one-line errors about a
// policy or log path that names a FIFO, a directory or a device.
#pragma once

#include <sys/types.h>

#include <string>

namespace tcptune::config {

// "a FIFO, not a regular file", "a character device, not a regular file", ... for `st_mode`.
std::string not_a_regular_file(mode_t mode);

}  // namespace tcptune::config
