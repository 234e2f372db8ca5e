#include "ab_table.hpp"

#include <algorithm>
#include <cstdio>

namespace tcptune::cli {

Spread spread_of(std::vector<double> values) {
  if (values.empty()) {
    return {};
  }
  std::sort(values.begin(), values.end());
  return {(values[(values.size() - 1) / 2] + values[values.size() / 2]) / 2, values.front(), values.back()};
}

std::string metric_row(const std::string& name, const Spread& observe, const Spread& tuned) {
  char ratio[32] = "-";
  if (observe.median != 0) {
    (void)std::snprintf(ratio, sizeof ratio, "%.3g", tuned.median / observe.median);
  }
  char row[256];
  (void)std::snprintf(row, sizeof row, "%-24s %12.4g [%.4g-%.4g] %12.4g [%.4g-%.4g] %10s\n", name.c_str(),
                      observe.median, observe.low, observe.high, tuned.median, tuned.low, tuned.high, ratio);
  return row;
}

}  // namespace tcptune::cli
