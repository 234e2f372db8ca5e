// The core's static destructors, held back until the core's own destructor (see the .cpp).
#pragma once

namespace tcptune::shim {

// Runs the destructors registered so far, last registered first; once.
void run_deferred_destructors() noexcept;

}  // namespace tcptune::shim
