#include "tcptune/config/policy_handover.hpp"

#include <utility>
#include <variant>

namespace tcptune::config {

std::string_view from_name(HandedOverPolicy::From from) {
  switch (from) {
    case HandedOverPolicy::From::builtin: return "built-in";
    case HandedOverPolicy::From::text: return "toml";
    case HandedOverPolicy::From::snapshot: return "snapshot";
  }
  return "toml";
}

HandedOverPolicy load_handed_over(const PolicySource& source, std::string_view build_id,
                                  const SnapshotStorePlace& place) {
  HandedOverPolicy out{LoadResult{builtin_default_policy()}, HandedOverPolicy::From::builtin, {}, {}, {}};
  if (source.kind == PolicySource::Kind::builtin) {
    return out;
  }
  out.from = HandedOverPolicy::From::text;
  std::variant<PolicyText, PolicyError> read = read_discovered(source);
  if (read.index() == 1) {
    out.loaded = LoadResult{std::variant<Policy, PolicyError>(std::in_place_index<1>, std::get<1>(std::move(read)))};
    return out;
  }
  const PolicyText& text = std::get<0>(read);
  if (build_id.empty() || build_id.size() > kMaxSnapshotBuildId) {
    out.note = "the core has no build id to tell its snapshots by";
    out.loaded = load_policy_text(text.text, text.name);
    return out;
  }
  OpenedSnapshotStore opened = open_snapshot_store(place);
  if (!opened.store.has_value()) {
    out.note = opened.why;
    if (opened.complain) {
      out.complaint = opened.why + "; parsing " + text.name;
    }
    out.loaded = load_policy_text(text.text, text.name);
    return out;
  }
  const SnapshotKey key{build_id, text.name, text.text};
  const PolicySnapshotStore& store = *opened.store;
  PolicySnapshotStore::Found found = store.find(key);
  if (found.policy.has_value()) {
    out.from = HandedOverPolicy::From::snapshot;
    out.snapshot = store.file_for(key);
    out.loaded = LoadResult{std::variant<Policy, PolicyError>(std::in_place_index<0>, std::move(*found.policy))};
    return out;
  }
  if (!found.refused.empty()) {
    out.complaint =
        "ignoring the compiled policy " + store.file_for(key) + ": " + found.refused + "; parsing " + text.name;
    out.note = "refused " + store.file_for(key) + ": " + found.refused;
  }
  out.loaded = load_policy_text(text.text, text.name);
  if (out.loaded.ok()) {
    if (const std::string problem = store.publish(out.loaded.policy(), key); !problem.empty()) {
      out.note += (out.note.empty() ? "" : "; ") + problem;
    } else {
      out.snapshot = store.file_for(key);
    }
  }
  return out;
}

}  // namespace tcptune::config
