#include "prometheus_textfile.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <system_error>

#include "exposition.hpp"

namespace tcptune::telemetry {

namespace {

constexpr int kFirstBucketOctave = 10;
constexpr int kLastBucketOctave = 35;

std::string number(double value) {
  char text[40];
  (void)std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

void header(std::string& out, const char* name, const char* type, const char* help) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void histogram(std::string& out, const std::string& name, const std::string& labels, const LatencyHistogram& values,
               std::uint64_t sum_ns) {
  // Every kBucketsPerOctave-th bucket of the layout starts at a power of two: cumulative counts there are exact.
  std::uint64_t cumulative = 0;
  int bucket = 0;
  for (int octave = kFirstBucketOctave; octave <= kLastBucketOctave; ++octave) {
    const double bound = static_cast<double>(std::uint64_t{1} << octave);
    for (; bucket < HistogramLayout::kBuckets && HistogramLayout::upper_bound(bucket) <= bound; ++bucket) {
      cumulative += values.bucket_count(bucket);
    }
    out.append(name).append("_bucket{").append(labels).append(",le=\"").append(number(bound / 1e9));
    out.append("\"} ").append(std::to_string(cumulative)).append("\n");
  }
  out.append(name).append("_bucket{").append(labels).append(",le=\"+Inf\"} ");
  out.append(std::to_string(values.count())).append("\n");
  out.append(name).append("_sum{").append(labels).append("} ");
  out.append(format_sample_value(sample_value_from_ns(sum_ns))).append("\n");
  out.append(name).append("_count{").append(labels).append("} ");
  out.append(std::to_string(values.count())).append("\n");
}

}  // namespace

std::string render_prometheus(const std::vector<MetricsRow>& rows, const MetricsContext& context) {
  const bool supervised = context.source == MetricsSource::supervisor;
  std::string out;
  std::string program_label = "program=\"" + escape_label_value(context.program) + "\"";
  if (!context.arm.empty()) {
    program_label += ",arm=\"" + escape_label_value(context.arm) + "\"";
  }
  auto rule_labels = [&](const std::string& rule) {
    return program_label + ",rule=\"" + escape_label_value(rule) + "\"";
  };
  auto labels = [&](const MetricsRow& row) { return rule_labels(row.rule); };
  header(out, "tcptune_processes", "gauge",
         "Live processes of the program writing this file: each preloaded process once it measures a connection, "
         "and each supervisor.");
  out += "tcptune_processes{" + program_label + "} 1\n";
  if (!supervised) {
    header(out, "tcptune_rule_keeps_warm", "gauge",
           "Live processes whose policy keeps this rule's connections warm (the rule sets keep_warm).");
    for (const std::string& rule : context.keep_warm_rules) {
      out += "tcptune_rule_keeps_warm{" + rule_labels(rule) + "} 1\n";
    }
  }
  header(out, "tcptune_connections_total", "counter",
         supervised ? "TCP connections followed by the supervisor (open and closed)."
                    : "TCP connections measured by the shim (open and closed).");
  for (const MetricsRow& row : rows) {
    out += "tcptune_connections_total{" + labels(row) + "} " + std::to_string(row.connections) + "\n";
  }
  for (const CounterField& counter : kCounterFields) {
    if (counter.prometheus_name == nullptr) {
      continue;
    }
    // Idle restarts are the one exported counter the supervisor sees without the writes.
    const bool idle_restarts = counter.member == &ConnectionCounters::idle_restarts;
    if (supervised && !idle_restarts) {
      continue;
    }
    header(out, counter.prometheus_name, "counter",
           supervised ? "Congestion windows found restarted after idle between two polls of the connections."
                      : counter.help);
    for (const MetricsRow& row : rows) {
      out += std::string(counter.prometheus_name) + "{" + labels(row) + "} " +
             std::to_string(row.counters.*counter.member) + "\n";
    }
  }
  if (!supervised) {
    header(out, "tcptune_write_latency_seconds", "histogram", "How long write-family calls took.");
    for (const MetricsRow& row : rows) {
      histogram(out, "tcptune_write_latency_seconds", labels(row), row.write_latency,
                static_cast<std::uint64_t>(row.write_latency.estimated_sum_ns()));
    }
    header(out, "tcptune_ack_latency_seconds", "histogram",
           "From a sampled write's return to the peer's acknowledgement of its last byte (1 ms resolution).");
    for (const MetricsRow& row : rows) {
      histogram(out, "tcptune_ack_latency_seconds", labels(row), row.acks.histogram, row.acks.sum_ns);
    }
    // Not in the histogram, which holds timed samples only; with it, a reader can rank the
    // fast acks below every timed one, as tcptune ab does.
    header(out, "tcptune_acks_before_first_poll_total", "counter",
           "Sampled writes acknowledged before the ack sampler's first poll (faster than its 1 ms resolution): "
           "counted, not timed.");
    for (const MetricsRow& row : rows) {
      out += "tcptune_acks_before_first_poll_total{" + labels(row) + "} " +
             std::to_string(row.acks.acked_before_first_poll) + "\n";
    }
  }
  header(out, "tcptune_options_not_as_requested_total", "counter",
         "Options of a rule that did not take effect as asked, once per connection: refused, not_permitted, "
         "unavailable (not in this kernel) or capped (by a sysctl).");
  for (const OptionMiss& miss : context.option_misses) {
    out += "tcptune_options_not_as_requested_total{" + rule_labels(miss.rule) + ",option=\"" +
           escape_label_value(miss.option) + "\",outcome=\"" + escape_label_value(miss.outcome) + "\"} " +
           std::to_string(miss.count) + "\n";
  }
  header(out, "tcptune_dropped_records_total", "counter",
         supervised ? "Records lost because the supervisor's records thread fell behind."
                    : "Records lost because the telemetry worker fell behind.");
  out += "tcptune_dropped_records_total{" + program_label + "} " + std::to_string(context.dropped_records) + "\n";
  if (context.log_on_stderr) {
    header(out, "tcptune_log_records_dropped_total", "counter",
           "Log records stderr could not take: its pipe was full (its reader is behind or reads nothing), or "
           "one was too long for a single write of PIPE_BUF bytes.");
    out += "tcptune_log_records_dropped_total{" + program_label + ",reason=\"stderr_full\"} " +
           std::to_string(context.log_drops.full) + "\n";
    out += "tcptune_log_records_dropped_total{" + program_label + ",reason=\"too_long\"} " +
           std::to_string(context.log_drops.too_long) + "\n";
  }
  return out;
}

FileCalls plain_file_calls() noexcept {
  return {[](int fd, void* data, std::size_t size) { return ::read(fd, data, size); },
          [](int fd, const void* data, std::size_t size) { return ::write(fd, data, size); },
          [](int fd) { return ::close(fd); }};
}

std::string write_file_atomically(const std::string& path, const std::string& text, const FileCalls& calls) {
  const std::string temporary = path + ".tmp." + std::to_string(getpid());
  // A fresh regular file every time: whatever was left at that name (a FIFO, whose open would
  // block the exiting thread; a symbolic link; a dead process's file) goes first, and O_EXCL
  // creates the file or fails, never opening something else.
  (void)::unlink(temporary.c_str());
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    return "cannot write " + temporary + ": " + std::generic_category().message(errno);
  }
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t written = calls.write(fd, text.data() + done, text.size() - done);
    if (written <= 0) {
      if (written < 0 && errno == EINTR) {
        continue;
      }
      calls.close(fd);
      (void)::unlink(temporary.c_str());
      return "cannot write " + temporary + ": " + std::generic_category().message(errno);
    }
    done += static_cast<std::size_t>(written);
  }
  calls.close(fd);
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    (void)::unlink(temporary.c_str());
    return "cannot rename " + temporary + " to " + path + ": " + std::generic_category().message(errno);
  }
  return {};
}

}  // namespace tcptune::telemetry
