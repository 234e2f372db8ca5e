#include "textfile_merge.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

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

// What an ended process left beside the file (see the header): its identity, the shares it
// had added in the file's generation `generation` (if any), and its last ones.
constexpr std::string_view kLeftoverInfix = ".leftover.";
constexpr std::string_view kLeftoverHeader = "# tcptune-leftover ";
constexpr std::string_view kLeftoverCurrent = "# tcptune-leftover-current\n";

struct Leftover {
  std::string generation;
  ProcessIdentity process;
  std::optional<Exposition> previous;
  Exposition current;
};

std::optional<Leftover> parse_leftover(std::string_view text) {
  const std::size_t header_end = text.find('\n');
  const std::size_t split = text.find(kLeftoverCurrent);
  if (!text.starts_with(kLeftoverHeader) || header_end == std::string_view::npos || split == std::string_view::npos ||
      split <= header_end) {
    return std::nullopt;
  }
  Leftover leftover;
  std::string_view fields = text.substr(kLeftoverHeader.size(), header_end - kLeftoverHeader.size());
  while (!fields.empty()) {
    const std::size_t space = std::min(fields.find(' '), fields.size());
    const std::string_view field = fields.substr(0, space);
    fields.remove_prefix(std::min(space + 1, fields.size()));
    const std::size_t equals = field.find('=');
    if (equals == std::string_view::npos) {
      return std::nullopt;
    }
    const std::string_view name = field.substr(0, equals);
    const std::string value(field.substr(equals + 1));
    try {
      if (name == "generation") {
        leftover.generation = value;
      } else if (name == "pid") {
        leftover.process.pid = std::stol(value);
      } else if (name == "start") {
        leftover.process.start_ticks = std::stoull(value);
      } else if (name == "ns") {
        leftover.process.pid_namespace = std::stoull(value);
      }
    } catch (const std::logic_error&) {
      return std::nullopt;
    }
  }
  std::string why;
  const std::string_view previous = text.substr(header_end + 1, split - header_end - 1);
  if (!previous.empty()) {
    leftover.previous = parse_exposition(previous, why);
    if (!leftover.previous) {
      return std::nullopt;
    }
  }
  auto current = parse_exposition(text.substr(split + kLeftoverCurrent.size()), why);
  if (!current) {
    return std::nullopt;
  }
  leftover.current = std::move(*current);
  return leftover;
}

// The leftovers beside `path`, in name order (never one still being written: those are
// renamed into place whole).
std::vector<std::string> leftover_paths(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  const std::string directory = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  const std::string prefix = (slash == std::string::npos ? path : path.substr(slash + 1)) + std::string(kLeftoverInfix);
  std::vector<std::string> found;
  DIR* listing = ::opendir(directory.c_str());
  if (listing == nullptr) {
    return found;
  }
  while (const dirent* entry = ::readdir(listing)) {
    const std::string_view name = entry->d_name;
    if (name.starts_with(prefix) && name.find(".tmp.") == std::string_view::npos) {
      found.push_back((slash == std::string::npos ? std::string() : path.substr(0, slash + 1)) + std::string(name));
    }
  }
  ::closedir(listing);
  std::sort(found.begin(), found.end());
  return found;
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

MergedTextfile::Result MergedTextfile::leave_aside(const std::string& path, const std::string& contribution) {
  Result result;
  const ProcessIdentity me = own_process_identity(calls_);
  const bool previous_there = path == previous_path_ && !previous_generation_.empty();
  std::string text = std::string(kLeftoverHeader) + "generation=" + (previous_there ? previous_generation_ : "") +
                     " pid=" + std::to_string(me.pid) + " start=" + std::to_string(me.start_ticks) +
                     " ns=" + std::to_string(me.pid_namespace) + "\n";
  if (previous_there) {
    text += render_exposition(previous_);
  }
  text += kLeftoverCurrent;
  text += contribution;
  timespec now{};
  (void)clock_gettime(CLOCK_MONOTONIC, &now);
  const std::string aside = path + std::string(kLeftoverInfix) + std::to_string(getpid()) + "-" +
                            std::to_string(now.tv_sec * 1000000000LL + now.tv_nsec);
  result.error = write_file_atomically(aside, text, calls_);
  result.outcome = result.error.empty() ? Outcome::left_aside : Outcome::failed;
  return result;
}

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
      if (leaving) {
        return leave_aside(path, contribution);
      }
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
  const ProcessIdentity me = own_process_identity(calls_);
  const auto running = [&](const ProcessIdentity& other) { return may_be_running(other, me, calls_); };
  // What ended processes left aside, folded in as their last writes would have been.
  std::vector<std::string> folded;
  for (std::string& aside : leftover_paths(path)) {
    std::string ignored;
    const auto text = read_file(aside, calls_, ignored);
    if (const std::optional<Leftover> leftover = text ? parse_leftover(*text) : std::nullopt) {
      const bool previous_in_file = leftover->previous.has_value() && file.has_value() &&
                                    !leftover->generation.empty() && file->generation == leftover->generation;
      file = merge_contribution(file, previous_in_file ? &*leftover->previous : nullptr, leftover->current,
                                leftover->process, true, running, new_generation_token());
    }
    folded.push_back(std::move(aside));  // one that does not parse is no use to anyone either
  }
  const bool previous_there = file.has_value() && path == previous_path_ && !previous_generation_.empty() &&
                              file->generation == previous_generation_;
  const Exposition merged = merge_contribution(file, previous_there ? &previous_ : nullptr, *current, me, leaving,
                                               running, new_generation_token());
  result.error = write_file_atomically(path, render_exposition(merged), calls_);
  if (result.error.empty()) {
    for (const std::string& aside : folded) {
      (void)::unlink(aside.c_str());
    }
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
