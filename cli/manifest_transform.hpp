// `tcptune kube-inject` over a whole YAML stream: what is injected is first taken out, so that
// injecting again with other options replaces the injection, and injecting twice equals once.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "manifest_injection.hpp"

namespace tcptune::cli {

// The injected (or, with `uninject`, the uninjected) stream. Documents of other kinds, comments
// and layout outside the edits are kept byte for byte. What a manifest cannot show goes to
// `notes`, one line each. Throws ManifestError for a stream it will not edit.
std::string transform_manifests(std::string_view text, bool uninject, const InjectOptions& options,
                                std::vector<std::string>& notes);

}  // namespace tcptune::cli
