// One textfile for every process of a program. node_exporter refuses the same series from two
// files, and a file per process would outlive its process, so all the processes that expand
// [log] prometheus_textfile to one path share that file: each rewrite, under a lock, takes the
// file's sums, removes what this process added last time, adds what it counts now, and
// renames a new file into place. Counters and histograms therefore sum every process, the
// ended ones included (totals never go down, no series per pid); gauges are the sum of the
// live processes' shares, each kept in a comment line with who wrote it, so that a process's
// share leaves with its last write, or, when it died without one, at the next write of
// another process that sees it gone.
//
// A process whose last write finds the file locked past its wait (many processes ending at
// once) leaves its last shares beside the file, in PATH.leftover.PID-NS (node_exporter reads
// only *.prom), rather than lose them; the next merge of any process folds them in and removes
// them. (A merger killed between its rename and those removals counts them twice.)
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "exposition.hpp"
#include "file_calls.hpp"

namespace tcptune::telemetry {

// The merge itself, without files. `file`: what the file holds (nullopt: nothing, or nothing
// usable); `previous`: what this process added to it last time, or nullptr when the file no
// longer holds it (another generation); `current`: what it counts now; `leaving`: its last
// write, whose gauges go. `running` says whether another live entry's process may still run.
// The result keeps the file's generation, or takes `new_generation` when it has none.
Exposition merge_contribution(const std::optional<Exposition>& file, const Exposition* previous,
                              const Exposition& current, const ProcessIdentity& me, bool leaving,
                              const std::function<bool(const ProcessIdentity&)>& running,
                              const std::string& new_generation);

// Not empty when `pattern` ([log] prometheus_textfile) gives each process a file of its own:
// what to say, once.
std::string per_process_pattern_warning(const std::string& pattern);

class MergedTextfile {
 public:
  explicit MergedTextfile(const FileCalls& calls);

  // left_aside: a last write that found the file locked, its shares left beside it for the
  // next merge.
  enum class Outcome : std::uint8_t { written, busy, failed, left_aside };
  struct Result {
    Outcome outcome = Outcome::failed;
    std::string error;         // failed: why
    std::string started_over;  // written over a file that could not be used: why (say it once)
  };

  // Merges `contribution` (render_prometheus's text for this process) into `path`, under an
  // flock on `path`.lock (released by the kernel if this process dies holding it), waiting at
  // most `wait` for another process's merge to finish (busy otherwise: nothing changed; when
  // `leaving`, left_aside instead). Folds in what ended processes left aside.
  Result write(const std::string& path, const std::string& contribution, bool leaving, std::chrono::milliseconds wait);

  // The lock's descriptor while a write holds it, else -1. A child forked in the middle of a
  // write shares the lock through it, and closes it.
  [[nodiscard]] int lock_held() const noexcept { return lock_fd_.load(std::memory_order_acquire); }

 private:
  Result leave_aside(const std::string& path, const std::string& contribution);

  FileCalls calls_;
  std::atomic<int> lock_fd_{-1};
  // What this process added to the file last time, and where.
  std::string previous_path_;
  std::string previous_generation_;
  Exposition previous_;
};

}  // namespace tcptune::telemetry
