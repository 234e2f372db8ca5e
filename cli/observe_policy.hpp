// The observe-only policy, one text for `tcptune run --observe` and the first arm of `tcptune ab`:
// every connection is measured (conn_open with the options as the program left them, write and
// ack latency, idle restarts, conn_close with TCP_INFO, the summary) and no socket option is
// set. nodelay "keep" overrides the built-in default ("on-wait"); no other key is set, so the
// shim sets nothing, holds none of the program's buffer calls back (a policy without buffers
// lets them through), and the supervisor traps no setsockopt.
#pragma once

#include <string>

namespace tcptune::cli {

inline constexpr const char* kObservePolicyText = "version = 1\n[defaults]\nnodelay = \"keep\"\n";

// How records and messages name it when no file holds it (`tcptune run --observe`).
inline constexpr const char* kObservePolicyName = "observe-only (tcptune run --observe)";

// The observe-only policy with the [log] table of `policy_text` (a policy that loads), and
// nothing else of it: what `tcptune run --observe --policy FILE` runs, so that the off arm of
// a fleet A/B logs and exports its Prometheus textfile exactly as the on arm, which runs FILE,
// does. The observe-only text itself when FILE has no [log].
std::string observe_policy_logging_as(const std::string& policy_text);

}  // namespace tcptune::cli
