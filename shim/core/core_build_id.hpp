// The GNU build id of the object this code is linked into (libtcptune-core.so in a preloaded
// process): what tells the core's compiled policies from another build's.
#pragma once

#include <string_view>

namespace tcptune::shim {

// The id's bytes; empty when the object has none (linked without --build-id). Computed once:
// call it first outside a signal handler (it walks the loaded objects with dl_iterate_phdr).
std::string_view core_build_id();

}  // namespace tcptune::shim
