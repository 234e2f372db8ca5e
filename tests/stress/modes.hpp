// The stress program's three modes (stress.cpp dispatches on the first argument).
#pragma once

#include "util.hpp"

namespace tcptune::stress {

int run_receiver(const Args& args);  // receive: check every frame, print one JSON line
int run_sender(const Args& args);    // send: the mixed workload, print one JSON line
int run_scale(const Args& args);     // scale: many connections at once, their memory and records

}  // namespace tcptune::stress
