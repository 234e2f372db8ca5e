#include "cdf_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "svg_chart.hpp"

namespace tcptune::cli {

namespace {

constexpr std::size_t kMaxPoints = 400;
constexpr const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e"};

std::string percent(double fraction) {
  char text[16];
  (void)std::snprintf(text, sizeof text, "%.0f%%", fraction * 100);
  return text;
}

std::string legend_of(const CdfCurve& curve, const CdfPlotSpec& spec) {
  if (!curve.missing.empty()) {
    return curve.name + ": not drawn: " + curve.missing;
  }
  std::string label = curve.name + " (n = " + std::to_string(curve.count);
  if (curve.below_resolution > 0) {
    label += "; " + percent(curve.below_resolution) + " below the " + duration_label(spec.resolution_ms) +
             " resolution, shaded";
  }
  return label + ")";
}

}  // namespace

CdfCurve cdf_of_values(const std::string& name, std::vector<double> ms, const std::string& missing_if_empty) {
  CdfCurve curve;
  curve.name = name;
  curve.count = ms.size();
  if (ms.empty()) {
    curve.missing = missing_if_empty;
    return curve;
  }
  std::sort(ms.begin(), ms.end());
  const std::size_t steps = std::min(kMaxPoints, ms.size());
  const auto total = static_cast<double>(ms.size());
  for (std::size_t step = 1; step <= steps; ++step) {
    // The last value at or below the step's fraction (nearest rank).
    const auto rank =
        static_cast<std::size_t>(std::ceil(static_cast<double>(step) / static_cast<double>(steps) * total - 1e-9));
    std::size_t index = std::clamp<std::size_t>(rank, 1, ms.size()) - 1;
    while (index + 1 < ms.size() && ms[index + 1] == ms[index]) {
      ++index;  // ties: the fraction at or below counts them all
    }
    const std::pair<double, double> point{ms[index], static_cast<double>(index + 1) / total};
    if (curve.points.empty() || curve.points.back() != point) {
      curve.points.push_back(point);
    }
  }
  return curve;
}

CdfCurve cdf_of_histogram(const std::string& name, const MergedHistogram& histogram, std::uint64_t below_resolution,
                          const std::string& missing_if_empty) {
  CdfCurve curve;
  curve.name = name;
  std::uint64_t total = below_resolution;
  for (const auto& [bounds, count] : histogram.buckets) {
    total += count;
  }
  curve.count = total;
  if (total == 0) {
    curve.missing = missing_if_empty;
    return curve;
  }
  curve.below_resolution = static_cast<double>(below_resolution) / static_cast<double>(total);
  std::uint64_t seen = below_resolution;
  for (const auto& [bounds, count] : histogram.buckets) {
    seen += count;
    curve.points.emplace_back(bounds.second / 1e6, static_cast<double>(seen) / static_cast<double>(total));
  }
  return curve;
}

AbPlot write_cdf_plot(const std::string& directory, const std::string& name, const CdfPlotSpec& spec) {
  AbPlot plot;
  plot.file = name + ".svg";
  plot.title = spec.title.empty() ? name : spec.title.front();
  double low = 1e300;
  double high = 0;
  for (const CdfCurve& curve : spec.curves) {
    for (const auto& [x, y] : curve.points) {
      if (x > 0) {
        low = std::min(low, x);
        high = std::max(high, x);
      }
    }
    if (curve.below_resolution > 0) {
      low = std::min(low, spec.resolution_ms / 10);  // room for the band
      high = std::max(high, spec.resolution_ms);
    }
    if (!curve.missing.empty()) {
      plot.notes.push_back(curve.name + ": " + curve.missing);
    }
  }
  if (high == 0) {  // nothing to draw: an empty axis of one decade, and the reasons
    low = 0.1;
    high = 1;
  }
  low = std::pow(10, std::floor(std::log10(low)));
  high = std::max(low * 10, std::pow(10, std::ceil(std::log10(high))));
  ChartAxis x_axis{spec.what + " (log scale)", low, high, true, decade_ticks(low, high, duration_label)};
  ChartAxis y_axis{"fraction of " + spec.counted + " at or below", 0, 1, false, {}};
  for (int tenth = 0; tenth <= 10; tenth += 2) {
    char label[8];
    (void)std::snprintf(label, sizeof label, "%.1f", tenth / 10.0);
    y_axis.ticks.emplace_back(tenth / 10.0, label);
  }
  SvgChart chart(spec.title, x_axis, y_axis);
  bool band_drawn = false;
  std::size_t index = 0;
  std::ofstream data(directory + "/" + name + ".dat");
  data << "# " << spec.what << " CDF: latency in ms, fraction of " << spec.counted << " at or below\n";
  for (const CdfCurve& curve : spec.curves) {
    const std::string colour = kColours[index % 4];
    // The second curve dashed, so that where the two coincide both stay visible.
    const std::string dash = index++ % 2 == 1 ? "6,4" : "";
    if (curve.below_resolution > 0 && !band_drawn) {
      chart.band(low, spec.resolution_ms, "below " + duration_label(spec.resolution_ms));
      band_drawn = true;
    }
    data << "# " << curve.name << (curve.missing.empty() ? "" : ": not drawn: " + curve.missing) << "\n";
    if (curve.below_resolution > 0) {
      data << "# " << curve.below_resolution << " of them below the resolution (" << spec.resolution_ms << " ms)\n";
    }
    std::vector<std::pair<double, double>> steps;
    double previous = curve.below_resolution;
    if (curve.below_resolution > 0) {
      steps.emplace_back(spec.resolution_ms, previous);  // the curve starts at the band's edge
    } else if (!curve.points.empty()) {
      steps.emplace_back(curve.points.front().first, 0);  // and rises from 0 at the first value
    }
    for (const auto& [x, y] : curve.points) {
      if (!steps.empty()) {
        steps.emplace_back(x, previous);
      }
      steps.emplace_back(x, y);
      previous = y;
      data << x << ' ' << y << '\n';
    }
    data << "\n\n";
    if (!steps.empty()) {
      steps.emplace_back(high, previous);  // flat to the right edge: all values are at or below
      chart.polyline(steps, colour, 2, dash);
    }
    chart.legend(curve.missing.empty() ? colour : "", legend_of(curve, spec), dash);
  }
  plot.svg = chart.str();
  std::ofstream(directory + "/" + plot.file) << plot.svg;
  return plot;
}

}  // namespace tcptune::cli
