#include "observe_policy.hpp"

#include <sstream>

#include <toml++/toml.h>

namespace tcptune::cli {

std::string observe_policy_logging_as(const std::string& policy_text) {
  toml::parse_result parsed = toml::parse(policy_text);
  if (!parsed) {
    return kObservePolicyText;
  }
  const toml::table* log = parsed.table()["log"].as_table();
  if (log == nullptr || log->empty()) {
    return kObservePolicyText;
  }
  // The table as toml++ writes it back, whatever form FILE gave it (a [log] section, dotted
  // keys, an inline table): the same keys and values.
  toml::table only_log;
  only_log.insert("log", *log);
  std::ostringstream text;
  text << kObservePolicyText << toml::toml_formatter(only_log) << "\n";
  return text.str();
}

}  // namespace tcptune::cli
