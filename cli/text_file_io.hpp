// Whole small text files (unit files, drop-ins, environment files): read with a size bound, and
// written so that a reader (systemd at daemon-reload) sees the old file or the new, never half.
#pragma once

#include <optional>
#include <string>

namespace tcptune::cli {

// The file's text, or nothing with the reason in `error` ("No such file or directory").
// A file larger than `max_bytes` is an error, as is anything but a regular file.
std::optional<std::string> read_text_file(const std::string& path, std::string& error,
                                          std::size_t max_bytes = std::size_t{1} << 22);

// Writes `text` to a temporary file beside `path` (mode 0644), syncs it and renames it over
// `path`. False with the reason in `error`.
bool write_file_atomically(const std::string& path, const std::string& text, std::string& error);

}  // namespace tcptune::cli
