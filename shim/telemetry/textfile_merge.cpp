#include "textfile_merge.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <unordered_map>
#include <utility>

#include "process_identity.hpp"
#include "prometheus_textfile.hpp"

namespace tcptune::telemetry {

namespace {

// A file larger than this is not one tcptune wrote: started over rather than read whole.
constexpr std::size_t kLargestFile = 64U << 20U;

// Where each series of an exposition is, by key, so that a merge of thousands of series is
// not quadratic. Samples are only ever appended, so positions stay valid.
class SeriesIndex {
 public:
  explicit SeriesIndex(Exposition& exposition) : exposition_(exposition) {
    for (std::size_t f = 0; f < exposition.families.size(); ++f) {
      for (std::size_t s = 0; s < exposition.families[f].samples.size(); ++s) {
        positions_.emplace(exposition.families[f].samples[s].key, std::pair{f, s});
      }
    }
  }

  Sample* find(const std::string& key) {
    const auto it = positions_.find(key);
    return it == positions_.end() ? nullptr : &exposition_.families[it->second.first].samples[it->second.second];
  }

  // The series in `family` (a family of this exposition), appended with a zero value if new.
  // A new series comes with its whole group (a histogram's buckets, sum and count) from one
  // contribution, so appending keeps each group's lines together and in order.
  Sample& find_or_add(Family& family, const Sample& like) {
    if (Sample* found = find(like.key)) {
      return *found;
    }
    Sample& added = family.samples.emplace_back(like);
    added.value = {};
    positions_.emplace(like.key, std::pair{static_cast<std::size_t>(&family - exposition_.families.data()),
                                           family.samples.size() - 1});
    return added;
  }

  void forget_family(const Family& family) {
    for (const Sample& sample : family.samples) {
      positions_.erase(sample.key);
    }
  }

 private:
  Exposition& exposition_;
  std::unordered_map<std::string, std::pair<std::size_t, std::size_t>> positions_;
};

std::string message_of(int error) {
  return std::generic_category().message(error);
}

std::string new_generation_token() {
  timespec now{};
  (void)clock_gettime(CLOCK_REALTIME, &now);
  return std::to_string(getpid()) + "-" + std::to_string(now.tv_sec) + "." + std::to_string(now.tv_nsec);
}

// The file's text; nullopt with `why` when it cannot be read (missing: nullopt, `why` empty).
std::optional<std::string> read_file(const std::string& path, const FileCalls& calls, std::string& why) {
  // O_NONBLOCK: a FIFO left at the name must not hang the writer; it reads as empty.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno != ENOENT) {
      why = "cannot read it: " + message_of(errno);
    }
    return std::nullopt;
  }
  std::string text;
  char buffer[16384];
  for (;;) {
    const ssize_t got = calls.read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got < 0 && errno != EAGAIN) {
      why = "cannot read it: " + message_of(errno);
      calls.close(fd);
      return std::nullopt;
    }
    if (got <= 0) {
      break;
    }
    text.append(buffer, static_cast<std::size_t>(got));
    if (text.size() > kLargestFile) {
      why = "it is larger than 64 MiB";
      calls.close(fd);
      return std::nullopt;
    }
  }
  calls.close(fd);
  return text;
}

}  // namespace

Exposition merge_contribution(const std::optional<Exposition>& file, const Exposition* previous,
                              const Exposition& current, const ProcessIdentity& me, bool leaving,
                              const std::function<bool(const ProcessIdentity&)>& running,
                              const std::string& new_generation) {
  Exposition out = file.value_or(Exposition{});
  if (out.generation.empty()) {
    out.generation = new_generation;
  }
  SeriesIndex index(out);
  // Counters and histograms: the file's sums, less this process's last shares, plus its current ones.
  if (previous != nullptr) {
    for (const Family& family : previous->families) {
      const Family* merged = out.find_family(family.name);
      if (family.type == "gauge" || merged == nullptr || merged->type != family.type) {
        continue;
      }
      for (const Sample& sample : family.samples) {
        if (Sample* found = index.find(sample.key)) {
          found->value -= sample.value;
        }
      }
    }
  }
  for (const Family& family : current.families) {
    Family* merged = out.find_family(family.name);
    if (merged == nullptr) {
      merged = &out.families.emplace_back(Family{family.name, family.type, family.help, {}});
    } else if (merged->type != family.type) {
      // The file's family is of another type (written by hand?): this family starts over.
      index.forget_family(*merged);
      *merged = Family{family.name, family.type, family.help, {}};
    } else if (merged->help.empty()) {
      merged->help = family.help;
    }
    for (const Sample& sample : family.samples) {
      Sample& target = index.find_or_add(*merged, sample);
      if (family.type != "gauge") {
        target.value += sample.value;
      }
    }
  }
  // Gauges: the live processes' shares. This process's own are replaced (or, leaving, taken
  // out), and those of processes seen to have ended go.
  std::erase_if(out.live, [&](const LiveEntry& entry) { return entry.process == me || !running(entry.process); });
  if (!leaving) {
    for (const Family& family : current.families) {
      if (family.type == "gauge") {
        for (const Sample& sample : family.samples) {
          out.live.push_back({me, sample});
        }
      }
    }
  }
  for (Family& family : out.families) {
    if (family.type == "gauge") {
      for (Sample& sample : family.samples) {
        sample.value = {};
      }
    }
  }
  for (const LiveEntry& entry : out.live) {
    Family* family = out.find_family(entry.sample.name);
    if (family == nullptr) {
      family = &out.families.emplace_back(Family{entry.sample.name, "gauge", {}, {}});
    }
    if (family->type == "gauge") {
      index.find_or_add(*family, entry.sample).value += entry.sample.value;
    }
  }
  return out;
}

std::string per_process_pattern_warning(const std::string& pattern) {
  if (pattern.find("{pid}") == std::string::npos) {
    return {};
  }
  return "[log] prometheus_textfile \"" + pattern +
         "\" names {pid}: a file per process, whose series node_exporter drops as duplicates of each other "
         "and keeps exporting after the process ends; \"{program}.prom\" is one file that every process of the "
         "program adds to";
}

MergedTextfile::MergedTextfile(const FileCalls& calls) : calls_(calls) {}

MergedTextfile::Result MergedTextfile::write(const std::string& path, const std::string& contribution, bool leaving,
                                             std::chrono::milliseconds wait) {
  Result result;
  std::string why;
  const auto current = parse_exposition(contribution, why);
  if (!current) {
    result.error = "cannot merge into " + path + ": this process's own metrics do not parse (" + why + ")";
    return result;
  }
  const std::string lock_path = path + ".lock";
  // Read-only is enough for flock, so processes of one program running as different users
  // (who can all write the directory) share the lock.
  const int lock = ::open(lock_path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0644);
  if (lock < 0) {
    result.error = "cannot open " + lock_path + ": " + message_of(errno);
    return result;
  }
  lock_fd_.store(lock, std::memory_order_release);
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    if (::flock(lock, LOCK_EX | LOCK_NB) == 0) {
      break;
    }
    const int error = errno;
    if (error != EWOULDBLOCK && error != EINTR) {
      lock_fd_.store(-1, std::memory_order_release);
      calls_.close(lock);
      result.error = "cannot lock " + lock_path + ": " + message_of(error);
      return result;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      lock_fd_.store(-1, std::memory_order_release);
      calls_.close(lock);
      result.outcome = Outcome::busy;
      return result;
    }
    const timespec pause{0, 2'000'000};  // another process's merge takes about a millisecond
    (void)nanosleep(&pause, nullptr);
  }
  std::optional<Exposition> file;
  std::string unusable;
  if (const auto text = read_file(path, calls_, unusable)) {
    file = parse_exposition(*text, why);
    if (!file) {
      unusable = "it does not parse (" + why + ")";
    }
  }
  const bool previous_there = file.has_value() && path == previous_path_ && !previous_generation_.empty() &&
                              file->generation == previous_generation_;
  const ProcessIdentity me = own_process_identity(calls_);
  const Exposition merged = merge_contribution(
      file, previous_there ? &previous_ : nullptr, *current, me, leaving,
      [&](const ProcessIdentity& other) { return may_be_running(other, me, calls_); }, new_generation_token());
  result.error = write_file_atomically(path, render_exposition(merged), calls_);
  if (result.error.empty()) {
    result.outcome = Outcome::written;
    if (!unusable.empty()) {
      result.started_over = path + " could not be used: " + unusable + "; started over";
    }
    previous_path_ = path;
    previous_generation_ = merged.generation;
    previous_ = *current;
  }
  lock_fd_.store(-1, std::memory_order_release);
  calls_.close(lock);  // releases the lock
  return result;
}

}  // namespace tcptune::telemetry
