// The variables an EnvironmentFile= sets, as far as `tcptune enable` needs them: a variable set
// there overrides Environment= (systemd.exec(5)), so an LD_PRELOAD in it would replace the shim's.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tcptune::cli {

// The names assigned in the text of an environment file: NAME=VALUE lines ("export " allowed),
// comments ('#', ';') and blank lines skipped, a value's quoted or backslash-continued lines
// not taken for assignments.
std::vector<std::string> environment_file_names(std::string_view text);

}  // namespace tcptune::cli
