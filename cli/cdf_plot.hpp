// A latency CDF plot of merged histograms: PNG through gnuplot when it is installed (Debian's
// gnuplot-nox), else an SVG drawn here. The data points go to BASE.dat either way.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "log_summary.hpp"

namespace tcptune::cli {

using CdfSeries = std::pair<std::string, const MergedHistogram*>;

// Writes BASE.dat and BASE.png (gnuplot) or BASE.svg; returns the plot's path. Empty series
// are left out of the plot.
std::string write_cdf_plot(const std::string& base, const std::vector<CdfSeries>& series);

}  // namespace tcptune::cli
