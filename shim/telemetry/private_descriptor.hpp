// Where the shim keeps a descriptor of its own (the log, the log on stderr): at a number the app
// is not handed, as far as RLIMIT_NOFILE allows. The kernel hands out the lowest free number
// below the soft limit, so each number the shim holds there is one the app can lose: at a limit
// of 4, the app's first socket would get EMFILE. Raw system calls only, no allocation.
#pragma once

namespace tcptune::telemetry {

// A close-on-exec copy of `fd`:
// - at `floor` or above, where the soft limit is higher (the app reaches it only after every
//   number below);
// - else at the soft limit itself, where the hard limit is higher: the soft limit is raised by a
//   few numbers for the moment of the copy and put back (the kernel keeps a descriptor above a
//   lowered limit, and never hands the app a number at or above it);
// - else -1 with errno EMFILE: the hard limit is the soft one, at or under `floor`, and every
//   number the shim could hold is one the app may need.
// `fd` itself is left open. Another thread's setrlimit during the copy is kept.
int copy_out_of_app_range(int fd, int floor) noexcept;

}  // namespace tcptune::telemetry
