// Where compiled policies (policy_snapshot.hpp) are kept for one user, so that a process loads
// what an earlier process parsed and validated rather than parse the TOML again.
//
// A directory of the effective user's own, one file per (core build, policy name, text), named by
// their hash: TCPTUNE_POLICY_CACHE when set (`off`: none), else $XDG_RUNTIME_DIR/tcptune, else
// /run/user/EUID/tcptune, else ${TMPDIR:-/tmp}/tcptune-EUID. A directory or file is used only when
// it belongs to the effective user and no one else may write to it, and it is opened without
// following a symbolic link; every descriptor is close-on-exec and closed before returning.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

#include "tcptune/config/policy.hpp"
#include "tcptune/config/policy_snapshot.hpp"

namespace tcptune::config {

// The largest snapshot file read or written (a 1 MiB policy compiles to less).
inline constexpr std::size_t kMaxSnapshotBytes = std::size_t{8} << 20;

// The environment the store's place comes from (each nullptr when unset).
struct SnapshotStorePlace {
  const char* setting = nullptr;      // TCPTUNE_POLICY_CACHE
  const char* runtime_dir = nullptr;  // XDG_RUNTIME_DIR
  const char* tmp_dir = nullptr;      // TMPDIR
  uid_t euid = 0;
  const char* run_user = "/run/user";  // where the runtime directories are, when XDG_RUNTIME_DIR is unset
};

struct OpenedSnapshotStore;

class PolicySnapshotStore {
 public:
  // The store's directory, created (0700) when missing.
  friend OpenedSnapshotStore open_snapshot_store(const SnapshotStorePlace& place);

  PolicySnapshotStore(PolicySnapshotStore&& other) noexcept;
  PolicySnapshotStore& operator=(PolicySnapshotStore&&) = delete;
  PolicySnapshotStore(const PolicySnapshotStore&) = delete;
  PolicySnapshotStore& operator=(const PolicySnapshotStore&) = delete;
  ~PolicySnapshotStore();

  struct Found {
    std::optional<Policy> policy;  // set: the snapshot of the key, checked
    std::string refused;           // why a snapshot that is there was not used; empty: none there
  };
  [[nodiscard]] Found find(const SnapshotKey& key) const;

  // Writes the snapshot (a new file renamed over the name, so a reader sees the old or the new
  // whole). Empty, or why it could not.
  [[nodiscard]] std::string publish(const Policy& policy, const SnapshotKey& key) const;

  [[nodiscard]] const std::string& directory() const { return directory_; }
  [[nodiscard]] std::string file_for(const SnapshotKey& key) const;

 private:
  PolicySnapshotStore(std::string directory, int fd, uid_t euid)
      : directory_(std::move(directory)), fd_(fd), euid_(euid) {}
  [[nodiscard]] static std::string name_for(const SnapshotKey& key);

  std::string directory_;
  int fd_ = -1;  // the directory, opened and checked once
  uid_t euid_ = 0;
};

// Without a store, `why` says why: `complain` when it is worth a line on stderr (a directory that
// is not the user's own, a setting that is not one), else only for the start record (snapshots
// off, nowhere writable).
struct OpenedSnapshotStore {
  std::optional<PolicySnapshotStore> store;
  std::string why;
  bool complain = false;
};
OpenedSnapshotStore open_snapshot_store(const SnapshotStorePlace& place);

}  // namespace tcptune::config
