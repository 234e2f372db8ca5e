// Where `tcptune run` writes its log when neither --log, TCPTUNE_LOG nor the policy's [log] path
// names one: never the working directory (a source checkout; `/` under systemd), but
//   $XDG_STATE_HOME/tcptune/                 when XDG_STATE_HOME is an absolute path (0700),
//   /var/log/tcptune/                        otherwise for root (created 0755),
//   $HOME/.local/state/tcptune/              otherwise (the XDG default; created 0700),
//   $TMPDIR/tcptune-UID/ or /tmp/tcptune-UID/ without a HOME (0700, and only if it is this
//                                            user's own directory),
// as PROGRAM-YYYYMMDD-HHMMSS-PID.jsonl, so that runs never append to each other's files.
// No user database is read (no NSS): HOME, XDG_STATE_HOME, TMPDIR and the uid only.
#pragma once

#include <string>

namespace tcptune::cli {

// The directory, created if missing; empty with the reason in `problem` when it cannot be.
std::string default_log_directory(std::string& problem);

// DIRECTORY/PROGRAM-YYYYMMDD-HHMMSS-PID.jsonl, or empty with the reason in `problem`.
std::string default_log_path(const std::string& program, long pid, std::string& problem);

}  // namespace tcptune::cli
