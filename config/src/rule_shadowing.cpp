#include "tcptune/config/rule_shadowing.hpp"

#include <algorithm>
#include <string>

#include "tcptune/config/rule_matcher.hpp"

namespace tcptune::config {

namespace {

bool role_covers(Role earlier, Role later) {
  return earlier == Role::any || earlier == later;
}

// Sorted, with overlapping and adjacent ranges joined (8000-8099 and 8100-8200: 8000-8200).
std::vector<PortRange> merged_ports(std::vector<PortRange> ports) {
  std::sort(ports.begin(), ports.end(), [](const PortRange& a, const PortRange& b) { return a.first < b.first; });
  std::vector<PortRange> merged;
  for (const PortRange& range : ports) {
    if (!merged.empty() && static_cast<unsigned>(range.first) <= static_cast<unsigned>(merged.back().last) + 1U) {
      merged.back().last = std::max(merged.back().last, range.last);
    } else {
      merged.push_back(range);
    }
  }
  return merged;
}

// Each of `later`'s ranges inside the union of the earlier rule's (given merged).
bool ports_cover(const std::vector<PortRange>& earlier_merged, const std::vector<PortRange>& later) {
  if (earlier_merged.empty()) {
    return true;
  }
  return !later.empty() && std::all_of(later.begin(), later.end(), [&](const PortRange& range) {
    return std::any_of(earlier_merged.begin(), earlier_merged.end(),
                       [&](const PortRange& m) { return m.first <= range.first && range.last <= m.last; });
  });
}

// `outer` holds every address of `inner`: the same family, a prefix no longer, the same leading bits.
bool cidr_covers(const Cidr& outer, const Cidr& inner) {
  if (outer.family != inner.family || outer.prefix_len > inner.prefix_len) {
    return false;
  }
  for (int bit = 0; bit < outer.prefix_len; ++bit) {
    const auto byte = static_cast<std::size_t>(bit / 8);
    const unsigned mask = 0x80U >> (bit % 8);
    if ((outer.bytes[byte] & mask) != (inner.bytes[byte] & mask)) {
      return false;
    }
  }
  return true;
}

bool peers_cover(const std::vector<Cidr>& earlier, const std::vector<Cidr>& later) {
  if (earlier.empty()) {
    return true;
  }
  return !later.empty() && std::all_of(later.begin(), later.end(), [&](const Cidr& inner) {
    return std::any_of(earlier.begin(), earlier.end(), [&](const Cidr& outer) { return cidr_covers(outer, inner); });
  });
}

bool has_wildcard(const std::string& pattern) {
  return pattern.find_first_of("*?[\\") != std::string::npos;
}

bool programs_cover(const std::vector<std::string>& earlier, const std::vector<std::string>& later) {
  if (earlier.empty()) {
    return true;
  }
  return !later.empty() && std::all_of(later.begin(), later.end(), [&](const std::string& inner) {
    return std::any_of(earlier.begin(), earlier.end(), [&](const std::string& outer) {
      return outer == inner || outer == "*" || (!has_wildcard(inner) && glob_match(outer, inner));
    });
  });
}

// With the earlier rule's ports merged once (a policy may have 4096 rules).
bool covers(const Match& earlier, const std::vector<PortRange>& earlier_ports, const Match& later) {
  return role_covers(earlier.role, later.role) && peers_cover(earlier.peers, later.peers) &&
         programs_cover(earlier.programs, later.programs) && ports_cover(earlier_ports, later.ports);
}

}  // namespace

bool match_covers(const Match& earlier, const Match& later) {
  return covers(earlier, merged_ports(earlier.ports), later);
}

std::vector<ShadowedRule> shadowed_rules(const Policy& policy) {
  std::vector<std::vector<PortRange>> ports;
  for (const Rule& rule : policy.rules) {
    ports.push_back(merged_ports(rule.match.ports));
  }
  std::vector<ShadowedRule> out;
  for (std::size_t later = 1; later < policy.rules.size(); ++later) {
    for (std::size_t earlier = 0; earlier < later; ++earlier) {
      if (covers(policy.rules[earlier].match, ports[earlier], policy.rules[later].match)) {
        out.push_back(ShadowedRule{later, earlier});
        break;
      }
    }
  }
  return out;
}

}  // namespace tcptune::config
