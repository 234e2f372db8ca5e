// Bytes from a policy shown on one terminal line: in error messages, `tcptune check` and the log.
#pragma once

#include <string>
#include <string_view>

namespace tcptune::config {

// Control characters become \n, \r, \t or \xNN. With `escape_non_ascii` every byte from 0x80
// does too (binary payloads); without, such bytes pass unchanged (UTF-8 text).
std::string escape_for_display(std::string_view text, bool escape_non_ascii);

}  // namespace tcptune::config
