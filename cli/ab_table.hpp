// The rows of `tcptune ab`'s table: each metric's median and range per arm, and their ratio.
#pragma once

#include <string>
#include <vector>

namespace tcptune::cli {

struct Spread {
  double median = 0;
  double low = 0;
  double high = 0;
};

// Median (the mean of the middle two for an even count), min and max; zeros for no values.
Spread spread_of(std::vector<double> values);
// "name  observe [low-high]  tuned [low-high]  tuned/observe" with its newline; "-" for the
// ratio when the observe-only median is 0.
std::string metric_row(const std::string& name, const Spread& observe, const Spread& tuned);

}  // namespace tcptune::cli
