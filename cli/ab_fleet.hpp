// `tcptune ab --prometheus URL`: two arms of a fleet already running (told apart by a label,
// TCPTUNE_ARM or the scrape's), compared from what Prometheus scraped of the shim's metrics
// over a time window, with the statistics of the runs-based ab: each arm's samples are its
// values in the window's steps (increases of counters and histogram buckets per step; the
// steps do not overlap), judged by the Mann-Whitney U test, a bootstrap interval of the ratio
// of medians and advice; the same table, summary.txt, summary.json and report.html. Beside the
// verdict, what observing costs the off arm.
#pragma once

#include "command_line.hpp"

namespace tcptune::cli {

int ab_fleet_command(const AbOptions& options);

}  // namespace tcptune::cli
