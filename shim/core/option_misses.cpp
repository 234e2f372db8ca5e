#include "option_misses.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <string>

#include "tcptune/config/rule_matcher.hpp"

namespace tcptune::shim {

namespace {

constexpr std::size_t kOptionNameSize = 32;
constexpr std::size_t kEntries = 64;

// One (rule, option, outcome): claimed by a compare-exchange of its key, then its fields are
// written and `ready` published; the counts may run ahead of `ready` and are read after it.
struct MissEntry {
  std::atomic<std::uint64_t> key{0};
  std::atomic<bool> ready{false};
  std::int16_t rule = 0;
  OptionStatus outcome = OptionStatus::applied;
  char option[kOptionNameSize] = {};
  std::atomic<std::uint64_t> count{0};
};

std::array<MissEntry, kEntries> g_entries;

// FNV-1a over the option's name, the rule and the outcome; never 0 (an empty entry).
std::uint64_t key_of(int rule, const std::string& option, OptionStatus outcome) noexcept {
  std::uint64_t hash = 14695981039346656037ULL;
  auto mix = [&](unsigned char byte) {
    hash ^= byte;
    hash *= 1099511628211ULL;
  };
  for (const char c : option) {
    mix(static_cast<unsigned char>(c));
  }
  mix(static_cast<unsigned char>(rule & 0xff));
  mix(static_cast<unsigned char>((rule >> 8) & 0xff));
  mix(static_cast<unsigned char>(outcome));
  return hash == 0 ? 1 : hash;
}

void count(int rule, const std::string& option, OptionStatus outcome) noexcept {
  const std::uint64_t key = key_of(rule, option, outcome);
  for (std::size_t probe = 0; probe < kEntries; ++probe) {
    MissEntry& entry = g_entries[(key + probe) % kEntries];
    std::uint64_t found = entry.key.load(std::memory_order_acquire);
    if (found == 0 && entry.key.compare_exchange_strong(found, key, std::memory_order_acq_rel)) {
      entry.rule = static_cast<std::int16_t>(rule);
      entry.outcome = outcome;
      const std::size_t size = std::min(option.size(), kOptionNameSize - 1);
      std::memcpy(entry.option, option.data(), size);
      entry.option[size] = '\0';
      entry.count.fetch_add(1, std::memory_order_relaxed);
      entry.ready.store(true, std::memory_order_release);
      return;
    }
    if (found == key) {
      entry.count.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
}

}  // namespace

void count_option_misses(int rule, const ApplyReport& report) noexcept {
  for (const OptionReport& option : report.options) {
    if (option.missed()) {
      count(rule, option.name, option.status);
    }
  }
}

std::vector<telemetry::OptionMiss> option_misses(const config::Policy& policy) {
  std::vector<telemetry::OptionMiss> out;
  for (const MissEntry& entry : g_entries) {
    if (!entry.ready.load(std::memory_order_acquire)) {
      continue;
    }
    out.push_back({std::string(config::rule_name(policy, entry.rule)), entry.option, status_name(entry.outcome),
                   entry.count.load(std::memory_order_relaxed)});
  }
  return out;
}

void option_misses_after_fork_in_child() noexcept {
  for (MissEntry& entry : g_entries) {
    entry.ready.store(false, std::memory_order_relaxed);
    entry.count.store(0, std::memory_order_relaxed);
    entry.key.store(0, std::memory_order_relaxed);
  }
}

}  // namespace tcptune::shim
