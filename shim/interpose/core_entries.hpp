// The core's entry for each hook, as tcptune_core_attach hands them to the first stage.
#pragma once

#include "core_interface.h"

namespace tcptune::shim {

const tcptune_core_entries& core_entries() noexcept;

}  // namespace tcptune::shim
