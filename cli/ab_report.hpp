// What `tcptune ab --out DIR` keeps besides the logs: summary.txt (the table as printed),
// summary.json (the same for machines) and report.html, one self-contained file with the table,
// the verdicts, the plots inlined as SVG, the arms' policies, every run and how to reproduce it:
// the file to attach to a ticket.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "ab_results.hpp"

namespace tcptune::cli {

nlohmann::json ab_summary_json(const AbResults& results);
std::string ab_report_html(const AbResults& results);

// Makes `directory` (its parent must exist) unless it is one already, and checks that files can
// be made in it; false (and `error`, naming the directory) otherwise, before anything is run.
bool make_out_directory(const std::string& directory, std::string& error);

// Writes summary.txt, summary.json and report.html into `directory`; false (and `error`) when
// one cannot be written. `more_json`'s fields are added to summary.json's (a fleet A/B's source
// and what observing costs).
bool write_ab_report(const std::string& directory, const AbResults& results, std::string& error,
                     const nlohmann::json* more_json = nullptr);

}  // namespace tcptune::cli
