// A compiled policy as bytes: what one process parsed and validated, for the processes after it
// to load without parsing TOML again (policy_snapshot_store.hpp keeps them in files).
//
// A snapshot names what it was compiled from (the policy's name and its whole text) and the
// build that compiled it (the core's GNU build id): it is used only by that build, for exactly
// that text under that name, and anything else (another build, a changed text, a damaged or
// truncated file) is refused with the reason, never half-read.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "tcptune/config/policy.hpp"

namespace tcptune::config {

// What a snapshot is of. The name matters as well as the text: messages and records name the
// policy, and its rules' positions name the file.
struct SnapshotKey {
  std::string_view build_id;  // the compiling build's identity (bytes), at most kMaxSnapshotBuildId
  std::string_view source_name;
  std::string_view text;
};

inline constexpr std::size_t kMaxSnapshotBuildId = 64;

// The bytes of `policy`, compiled from `key`.
std::string encode_policy_snapshot(const Policy& policy, const SnapshotKey& key);

// The policy in `bytes` when they are a whole snapshot of `key`, else why not (one phrase, e.g.
// "compiled by another build of the core"). Never reads past `bytes`, whatever they hold.
std::variant<Policy, std::string> decode_policy_snapshot(std::string_view bytes, const SnapshotKey& key);

// 64 bits that name `key` (FNV-1a over its three parts, each with its length): the snapshot's
// file name. Only a name: decode_policy_snapshot compares the parts themselves.
std::uint64_t snapshot_key_hash(const SnapshotKey& key);

// FNV-1a 64 of `bytes`, the checksum a snapshot carries over its body (exposed for tests that
// damage a snapshot behind its checksum).
std::uint64_t snapshot_checksum(std::string_view bytes);

}  // namespace tcptune::config
