// A latency CDF plot, one curve per arm, drawn as SVG (svg_chart.hpp) on a log time axis. Values
// only known to be below the measurement's resolution fill a shaded band left of it, counted in
// the legend, never drawn at 0; a curve that cannot be drawn says why in the legend. The points
// also go to BASE.dat (a block per curve, as gnuplot's `index` reads them).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ab_results.hpp"
#include "log_summary.hpp"

namespace tcptune::cli {

struct CdfCurve {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (ms, fraction at or below), ascending
  double below_resolution = 0;                    // fraction only known to be below the resolution
  std::uint64_t count = 0;                        // values in all
  std::string missing;                            // why there is no curve, when there is none
};

// An empirical CDF of values in ms (at most a few hundred points, at evenly spaced fractions).
CdfCurve cdf_of_values(const std::string& name, std::vector<double> ms, const std::string& missing_if_empty);
// A CDF of merged histogram buckets (ns, each point at its bucket's upper bound), after
// `below_resolution` values known only to be below the resolution.
CdfCurve cdf_of_histogram(const std::string& name, const MergedHistogram& histogram, std::uint64_t below_resolution,
                          const std::string& missing_if_empty);

struct CdfPlotSpec {
  std::vector<std::string> title;  // the first line bold: what, the command; then the arms
  std::string what;                // "request latency": the x axis says "<what> (log scale)"
  std::string counted;             // "requests": the y axis says "fraction of <counted> at or below"
  double resolution_ms = 0;        // > 0: the resolution below which values are not timed
  std::vector<CdfCurve> curves;
};

// Writes DIRECTORY/NAME.svg and DIRECTORY/NAME.dat; returns the plot for the report.
AbPlot write_cdf_plot(const std::string& directory, const std::string& name, const CdfPlotSpec& spec);

}  // namespace tcptune::cli
