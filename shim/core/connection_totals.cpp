#include "connection_totals.hpp"

namespace tcptune::shim {

namespace {

std::size_t row_of(std::int16_t rule_index) {
  return static_cast<std::size_t>(rule_index + 2);
}

}  // namespace

ConnectionTotals::ConnectionTotals(std::size_t rule_count)
    : rows_(rule_count + 2), unrecorded_(std::make_unique<Unrecorded[]>(rule_count + 2)) {}

const Totals* ConnectionTotals::rule(std::int16_t rule_index) const noexcept {
  const std::size_t index = row_of(rule_index);
  return index >= 1 && index < rows_.size() ? &rows_[index] : nullptr;
}

void ConnectionTotals::add_closed(const ConnectionSnapshot& snapshot, const telemetry::AckLatency& acks) {
  const auto add = [&](Totals& totals) {
    ++totals.connections;
    totals.counters += snapshot.counters;
    if (snapshot.write_latency != nullptr) {
      totals.write_latency.merge(*snapshot.write_latency);
    }
    totals.acks += acks;
  };
  add(rows_[0]);
  if (const std::size_t index = row_of(snapshot.rule_index); index >= 1 && index < rows_.size()) {
    add(rows_[index]);
  }
}

ConnectionTotals::Unrecorded* ConnectionTotals::unrecorded_for(std::int16_t rule_index) noexcept {
  const std::size_t index = row_of(rule_index);
  return index >= 1 && index < rows_.size() ? &unrecorded_[index] : nullptr;
}

void ConnectionTotals::count_unrecorded(std::int16_t rule_index,
                                        const telemetry::ConnectionCounters& counters) noexcept {
  if (Unrecorded* found = unrecorded_for(rule_index)) {
    found->connections.fetch_add(1, std::memory_order_relaxed);
    found->counters.add(counters);
    unrecorded_pending_.store(true, std::memory_order_release);
  }
}

void ConnectionTotals::count_write_after_close(std::int16_t rule_index, ssize_t result, std::size_t offered,
                                               int error) noexcept {
  if (Unrecorded* found = unrecorded_for(rule_index)) {
    found->counters.count_write(result, offered, error);
    unrecorded_pending_.store(true, std::memory_order_release);
  }
}

void ConnectionTotals::absorb_unrecorded() {
  if (!unrecorded_pending_.exchange(false, std::memory_order_acq_rel)) {
    return;
  }
  for (std::size_t i = 1; i < rows_.size(); ++i) {
    const std::uint64_t connections = unrecorded_[i].connections.exchange(0, std::memory_order_relaxed);
    const telemetry::ConnectionCounters counters = unrecorded_[i].counters.take();
    for (Totals* totals : {&rows_[0], &rows_[i]}) {
      totals->connections += connections;
      totals->counters += counters;
    }
  }
}

void ConnectionTotals::reset() noexcept {
  for (Totals& totals : rows_) {
    totals = Totals();
  }
  for (std::size_t i = 0; i < rows_.size(); ++i) {
    unrecorded_[i].connections.store(0, std::memory_order_relaxed);
    unrecorded_[i].counters.reset();
  }
  unrecorded_pending_.store(false, std::memory_order_relaxed);
}

}  // namespace tcptune::shim
