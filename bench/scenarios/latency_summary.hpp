// Percentiles of a latency sample, written as the JSON object every scenario prints.
#pragma once

#include <string>
#include <vector>

namespace tcptune::bench {

// Nearest-rank percentile (p in [0, 100]) of an unsorted sample; 0 for an empty one.
double percentile(std::vector<double> sample, double p);
// {"count":N,"min":..,"p50":..,"p90":..,"p99":..,"max":..} in the sample's unit.
std::string summary_json(const std::vector<double>& sample);

}  // namespace tcptune::bench
