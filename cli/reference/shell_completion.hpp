// bash and zsh completion for tcptune, written from the command line's reference (command_reference.hpp),
// so that it offers exactly the subcommands and options the command has.
#pragma once

#include <string>

#include "command_reference.hpp"

namespace tcptune::cli {

// A script for share/bash-completion/completions/tcptune: `complete -F _tcptune tcptune`.
std::string bash_completion(const CommandLineReference& reference);

// A script for share/zsh/vendor-completions/_tcptune: `#compdef tcptune`, through _arguments.
std::string zsh_completion(const CommandLineReference& reference);

}  // namespace tcptune::cli
