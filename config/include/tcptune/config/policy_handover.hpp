// A process's policy, handed over by the processes before it: the snapshot an earlier process
// compiled from exactly this text (policy_snapshot_store.hpp) when there is one, else the text
// parsed as before, and then kept for the processes after it. Any problem with a snapshot falls
// back to parsing: a policy that fails to parse is never kept, so its errors are as before.
#pragma once

#include <string>
#include <string_view>

#include "tcptune/config/policy_loader.hpp"
#include "tcptune/config/policy_snapshot_store.hpp"

namespace tcptune::config {

struct HandedOverPolicy {
  enum class From { builtin, text, snapshot };
  LoadResult loaded;
  From from = From::builtin;
  std::string snapshot;   // the snapshot file read, or written after parsing; empty: neither
  std::string note;       // why no snapshot was read or written (for the start record)
  std::string complaint;  // one line for stderr, without "tcptune: ", when a snapshot or its directory was refused
};

// `build_id` empty: snapshots are not used (a core without one cannot tell its own from
// another build's).
HandedOverPolicy load_handed_over(const PolicySource& source, std::string_view build_id,
                                  const SnapshotStorePlace& place);

// "built-in", "toml" or "snapshot", as the start record says.
std::string_view from_name(HandedOverPolicy::From from);

}  // namespace tcptune::config
