#include "key_places.hpp"

#include <vector>

#include "tcptune/config/did_you_mean.hpp"
#include "tcptune/config/tuning_keys.hpp"

namespace tcptune::config {

namespace {

struct Place {
  std::string_view where;  // as check_keys's callers name the table
  std::string_view put_it;
  std::vector<std::string_view> keys;
};

std::vector<std::string_view> tuning_key_names() {
  std::vector<std::string_view> names;
  for (const TuningKey& key : tuning_keys()) {
    names.push_back(key.name);
  }
  return names;
}

const std::vector<Place>& places() {
  static const std::vector<Place> all = {
      {"the policy", "at the top of the policy", {std::begin(kTopKeys), std::end(kTopKeys)}},
      {"[defaults]", "under [defaults] (every socket) or in a [[rule]]", tuning_key_names()},
      {"[[rule]]", "in a [[rule]]", {std::begin(kRuleOwnKeys), std::end(kRuleOwnKeys)}},
      {"[log]", "under [log]", {std::begin(kLogKeys), std::end(kLogKeys)}},
      {"match", "in a rule's match = { ... }", {std::begin(kMatchKeys), std::end(kMatchKeys)}},
      {"buffers", "in buffers = { ... }", {std::begin(kBufferKeys), std::end(kBufferKeys)}},
      {"keepalive", "in keepalive = { ... }", {std::begin(kKeepaliveKeys), std::end(kKeepaliveKeys)}},
      {"keep_warm", "in keep_warm = { ... }", {std::begin(kKeepWarmKeys), std::end(kKeepWarmKeys)}},
      {"sockopt", "in a sockopt = [{ ... }] entry", {std::begin(kSockoptKeys), std::end(kSockoptKeys)}},
  };
  return all;
}

// "under [log] or in keepalive = { ... }": the other tables that take `key`, or "".
std::string where_it_belongs(std::string_view key, std::string_view where) {
  std::vector<std::string_view> found;
  for (const Place& place : places()) {
    // A [[rule]] takes the tuning keys too: [defaults]'s wording names both.
    if (place.where == where || (where == "[[rule]]" && place.where == "[defaults]")) {
      continue;
    }
    for (const std::string_view candidate : place.keys) {
      if (candidate == key) {
        found.push_back(place.put_it);
        break;
      }
    }
  }
  std::string out;
  for (std::size_t i = 0; i < found.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == found.size() ? " or " : ", ") + std::string(found[i]);
  }
  return out;
}

}  // namespace

std::string unknown_key_message(std::string_view key, std::string_view where,
                                std::span<const std::string_view> allowed) {
  std::string out = "unknown key '" + std::string(key) + "' in " + std::string(where);
  if (const std::string belongs = where_it_belongs(key, where); !belongs.empty()) {
    return out + "; put it " + belongs;
  }
  if (const std::string near = did_you_mean(key, allowed); !near.empty()) {
    return out + near;
  }
  // A misspelling of another table's key: the nearest one, and where it goes.
  std::string_view best;
  std::size_t best_distance = 3;
  for (const Place& place : places()) {
    for (const std::string_view candidate : place.keys) {
      if (const std::size_t distance = edit_distance(key, candidate); distance < best_distance) {
        best_distance = distance;
        best = candidate;
      }
    }
  }
  if (best.empty()) {
    return out;
  }
  return out + "; did you mean '" + std::string(best) + "', " + where_it_belongs(best, where) + "?";
}

}  // namespace tcptune::config
