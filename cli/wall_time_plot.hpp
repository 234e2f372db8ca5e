// Each run's wall time, a dot per run in its arm's column with the arm's median as a bar, drawn
// as SVG (svg_chart.hpp): what a user of the program waits for, run by run.
#pragma once

#include <string>
#include <vector>

#include "ab_results.hpp"

namespace tcptune::cli {

struct WallTimeColumn {
  std::string name;             // "observe-only: observe-only.toml"
  std::vector<double> seconds;  // in run order
};

// Writes DIRECTORY/NAME.svg and DIRECTORY/NAME.dat; returns the plot for the report.
AbPlot write_wall_time_plot(const std::string& directory, const std::string& name, std::vector<std::string> title,
                            const std::vector<WallTimeColumn>& columns);

}  // namespace tcptune::cli
