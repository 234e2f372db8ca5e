// How tcptune ends after the program it ran: as the program did. A parent (a shell, a service
// manager, Python's subprocess) then sees the same end with tcptune in between as without it,
// in every mode: an exit status, or death by the signal that killed the program.
#pragma once

namespace tcptune::cli {

// The exit status a shell gives a wait status: the program's own, or 128+N for signal N.
int shell_exit_status(int wait_status);

// For a program that exited: its exit status, to return from main. For one killed by signal N:
// stdio is flushed and this process dies by N too, without a core dump of its own (the program's
// core, if any, is the only one); 128+N where N does not end a process by default.
int end_as_program(int wait_status);

}  // namespace tcptune::cli
