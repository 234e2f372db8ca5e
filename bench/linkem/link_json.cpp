#include "link_json.hpp"

#include <cstdio>

#include "units.hpp"

namespace tcptune::linkem {

namespace {

std::string ms(std::int64_t ns) {
  return format_decimal(static_cast<double>(ns) / 1e6);
}

std::string direction_json(const LinkParams& params, const DirectionCounters* counters) {
  std::string json = "{\"delay_ms\":" + ms(params.delay_ns) +
                     ",\"rate_mbit\":" + format_decimal(static_cast<double>(params.rate_bps) / 1e6, 6) +
                     ",\"queue_packets\":" + std::to_string(params.queue_packets) +
                     ",\"loss_pct\":" + format_decimal(params.loss_pct, 6) + ",\"jitter_ms\":" + ms(params.jitter_ns);
  if (counters != nullptr) {
    json += ",\"counters\":" + format_counters_json(*counters);
  }
  return json + "}";
}

}  // namespace

std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buffer[8];
      (void)std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned>(c));
      out += buffer;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string format_counters_json(const DirectionCounters& c) {
  const double mean_us =
      c.packets == 0 ? 0.0 : static_cast<double>(c.lateness_sum_ns) / static_cast<double>(c.packets) / 1e3;
  return "{\"packets_in\":" + std::to_string(c.packets_in) + ",\"packets\":" + std::to_string(c.packets) +
         ",\"bytes\":" + std::to_string(c.bytes) + ",\"drops_queue\":" + std::to_string(c.drops_queue) +
         ",\"drops_loss\":" + std::to_string(c.drops_loss) + ",\"drops_pool\":" + std::to_string(c.drops_pool) +
         ",\"write_errors\":" + std::to_string(c.write_errors) +
         ",\"max_lateness_us\":" + format_decimal(static_cast<double>(c.max_lateness_ns) / 1e3, 1) +
         ",\"mean_lateness_us\":" + format_decimal(mean_us, 1) +
         ",\"p50_lateness_us\":" + format_decimal(c.packets == 0 ? 0 : c.lateness_quantile_us(0.5), 1) +
         ",\"p99_lateness_us\":" + format_decimal(c.packets == 0 ? 0 : c.lateness_quantile_us(0.99), 1) +
         ",\"late_over_500us\":" + std::to_string(c.late_over_500us) + "}";
}

std::string format_link_json(const LinkDescription& link) {
  const LinkConfig& config = *link.config;
  const bool with_counters = link.a_to_b != nullptr && link.b_to_a != nullptr;
  std::string json = "{\"backend\":" + json_string(link.backend) +
                     ",\"rtt_ms\":" + ms(config.a_to_b.delay_ns + config.b_to_a.delay_ns) +
                     ",\"a_to_b\":" + direction_json(config.a_to_b, with_counters ? link.a_to_b : nullptr) +
                     ",\"b_to_a\":" + direction_json(config.b_to_a, with_counters ? link.b_to_a : nullptr) +
                     ",\"congestion\":" + json_string(link.sysctls.congestion) +
                     ",\"slow_start_after_idle\":" + std::to_string(link.sysctls.slow_start_after_idle) +
                     ",\"seed\":" + std::to_string(config.seed);
  if (link.daemon_pid > 0) {
    json += ",\"pid\":" + std::to_string(link.daemon_pid);
  }
  return json + "}";
}

}  // namespace tcptune::linkem
