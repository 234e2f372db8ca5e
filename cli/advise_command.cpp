// tcptune advise LOG... [--output FILE] [--json]: the causes the records show of what TCP costs
// the programs that wrote them, each with the rule that fixes it, and the policy of those rules.
#include <sys/stat.h>

#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "advise_detectors.hpp"
#include "advise_policy_writer.hpp"
#include "advise_report.hpp"
#include "commands.hpp"
#include "log_summary.hpp"
#include "report_json.hpp"
#include "tcptune/config/policy_loader.hpp"
#include "text_file_io.hpp"

namespace tcptune::cli {

namespace {

// The policy of the findings' rules to `path`, loaded as `tcptune check` loads it first. Nothing
// is written when no finding has a rule.
bool write_policy(const std::string& path, const std::vector<Finding>& findings, const std::vector<std::string>& logs,
                  std::FILE* notes) {
  const std::string policy = advised_policy(findings, logs);
  if (policy.empty()) {
    (void)std::fprintf(notes, "nothing to change: %s not written\n", path.c_str());
    return true;
  }
  const config::LoadResult loaded = config::load_policy_text(policy, path);
  if (!loaded.ok()) {
    (void)std::fprintf(stderr, "tcptune advise: the advised policy does not load (%s); %s not written\n",
                       loaded.error().to_string().c_str(), path.c_str());
    return false;
  }
  std::string error;
  if (!write_file_atomically(path, policy, error)) {
    (void)std::fprintf(stderr, "tcptune advise: cannot write %s: %s\n", path.c_str(), error.c_str());
    return false;
  }
  (void)std::fprintf(notes, "wrote %s (%zu rule(s)); tcptune check %s explains it\n", path.c_str(),
                     advised_rules(findings).size(), path.c_str());
  return true;
}

// A line that is not a record is left out; said, since what it held may have been a finding's
// evidence. A file with no record at all is named by say_files_without_records.
void say_skipped_lines(const Observations& observations) {
  for (const auto& [index, line] : observations.first_skipped_line) {
    const FileRead& read = observations.files[index];
    if (read.records == 0) {
      continue;
    }
    const std::uint64_t skipped = read.lines - read.records;
    const std::string what =
        skipped == 1 && line == read.lines
            ? "the last line is not a whole JSON record, left out (a process killed while "
              "writing it?)"
            : "not a JSON record, left out (" + std::to_string(skipped) + " such line(s) in the file)";
    (void)std::fprintf(stderr, "tcptune advise: warning: %s:%llu: %s\n", read.path.c_str(),
                       static_cast<unsigned long long>(line), what.c_str());
  }
}

// A regular file's device and inode: two names of one file have the same.
std::optional<std::pair<dev_t, ino_t>> regular_file_identity(const std::string& path) {
  struct stat status {};
  if (::stat(path.c_str(), &status) != 0 || !S_ISREG(status.st_mode)) {
    return std::nullopt;
  }
  return std::make_pair(status.st_dev, status.st_ino);
}

// The logs with each file once: a file given twice (a glob that also takes a log named on its own,
// a link to it) would count its connections twice, and double every finding's evidence and gain.
std::vector<std::string> distinct_logs(const std::vector<std::string>& logs) {
  std::vector<std::string> out;
  std::map<std::pair<dev_t, ino_t>, std::string> seen;
  for (const std::string& log : logs) {
    if (const auto identity = regular_file_identity(log)) {
      const auto [found, added] = seen.emplace(*identity, log);
      if (!added) {
        (void)std::fprintf(stderr, "tcptune advise: warning: %s is %s again: read once\n", log.c_str(),
                           found->second.c_str());
        continue;
      }
    }
    out.push_back(log);
  }
  return out;
}

}  // namespace

int advise_command(const AdviseOptions& options) {
  // The policy written over a log would destroy the evidence it came from.
  if (const auto output = regular_file_identity(options.output)) {
    for (const std::string& log : options.logs) {
      if (regular_file_identity(log) == output) {
        (void)std::fprintf(stderr, "tcptune advise: --output %s is the log %s: the policy would replace it\n",
                           options.output.c_str(), log.c_str());
        return kExitUsage;
      }
    }
  }
  Observations observations;
  std::string error;
  const std::vector<std::string> logs = distinct_logs(options.logs);
  if (!read_observations(logs, observations, error)) {
    (void)std::fprintf(stderr, "tcptune advise: %s\n", error.c_str());
    return 1;
  }
  if (!say_files_without_records("advise", observations.files)) {
    return 1;
  }
  say_skipped_lines(observations);
  const std::string policy_file = options.output.empty() ? "advised.toml" : options.output;
  const std::vector<Finding> findings = find_all({observations, policy_file, options.heartbeat});
  if (options.json) {
    std::puts(to_json_line(findings_json(findings, observations)).c_str());
  } else {
    print_findings(stdout, findings, observations);
  }
  if (!options.output.empty()) {
    (void)std::fflush(stdout);
    return write_policy(options.output, findings, logs, options.json ? stderr : stdout) ? 0 : 1;
  }
  return 0;
}

}  // namespace tcptune::cli
