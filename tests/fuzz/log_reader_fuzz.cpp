// Fuzz target: what `tcptune report` and `tcptune run` read, a jsonl log (cli/log_record.cpp,
// cli/log_summary.cpp). The input is parsed as one record, then read as a log file through
// summarize_logs (grouped by rule, peer or program) and summarize_slow_writes, and printed as the
// summary table and as report --json's object (cli/report_json.cpp).
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "log_record.hpp"
#include "log_summary.hpp"
#include "report_json.hpp"

using namespace tcptune::cli;

namespace {

// The readers take file names: one in-memory file, rewritten for every input.
struct LogFile {
  int fd = memfd_create("fuzz-log", 0);
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  std::FILE* table_out = std::fopen("/dev/null", "w");
};

}  // namespace

// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const LogFile log;
  if (log.fd < 0 || log.table_out == nullptr) {
    std::abort();
  }
  (void)parse_log_record(std::string_view(reinterpret_cast<const char*>(data), size));

  if (ftruncate(log.fd, 0) != 0 || pwrite(log.fd, data, size, 0) != static_cast<ssize_t>(size)) {
    std::abort();
  }
  // One grouping per input (the size picks it): each pass rereads the whole log.
  const char* const by = std::array{"rule", "peer", "program"}[size % 3];
  std::string error;
  LogSummary summary;
  if (!summarize_logs({log.path}, by, summary, error)) {
    std::abort();
  }
  print_summary_table(log.table_out, summary, by);
  (void)std::fputs(to_json_line(summary_json(summary, by)).c_str(), log.table_out);
  std::map<std::string, SlowWriteSite> sites;
  std::uint64_t without_callsite = 0;
  std::vector<FileRead> reads;
  if (!summarize_slow_writes({log.path}, sites, without_callsite, reads, error)) {
    std::abort();
  }
  return 0;
}
