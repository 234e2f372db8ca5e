// TOML text for the policy `tcptune advise` writes: strings, and program names as globs that
// match only themselves.
#pragma once

#include <string>
#include <string_view>

namespace tcptune::cli {

// A TOML basic string: quoted, with ", \ and control characters escaped.
std::string toml_string(std::string_view text);
// A program name as an fnmatch(3) glob matching only that name: *, ?, [ and \ escaped.
std::string literal_glob(std::string_view name);

}  // namespace tcptune::cli
