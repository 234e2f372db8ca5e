#include "wall_time_plot.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "ab_statistics.hpp"
#include "svg_chart.hpp"

namespace tcptune::cli {

namespace {

constexpr const char* kColours[] = {"#1f77b4", "#d62728"};

}  // namespace

AbPlot write_wall_time_plot(const std::string& directory, const std::string& name, std::vector<std::string> title,
                            const std::vector<WallTimeColumn>& columns) {
  AbPlot plot;
  plot.file = name + ".svg";
  plot.title = title.empty() ? name : title.front();
  double high = 0;
  for (const WallTimeColumn& column : columns) {
    for (double seconds : column.seconds) {
      high = std::max(high, seconds);
    }
  }
  std::vector<std::pair<double, std::string>> ticks = linear_ticks(high * 1.1);
  const double top = ticks.back().first > 0 ? ticks.back().first : 1;
  // The x axis holds one column per arm, at 1, 2, ...; its ticks carry no number.
  const auto column_count = static_cast<double>(columns.size());
  ChartAxis x_axis{"arm (one dot per run; bar: median)", 0.5, column_count + 0.5, false, {}};
  ChartAxis y_axis{"wall time per run (s)", 0, top, false, ticks};
  SvgChart chart(std::move(title), x_axis, y_axis);
  std::ofstream data(directory + "/" + name + ".dat");
  data << "# wall time per run, in seconds; a block per arm, runs in order\n";
  for (std::size_t index = 0; index < columns.size(); ++index) {
    const WallTimeColumn& column = columns[index];
    const std::string colour = kColours[index % 2];
    const double centre = static_cast<double>(index + 1);
    data << "# " << column.name << "\n";
    for (std::size_t run = 0; run < column.seconds.size(); ++run) {
      // Spread across the column by run order so that equal times stay visible.
      const double offset = column.seconds.size() > 1
                                ? -0.2 + 0.4 * static_cast<double>(run) / static_cast<double>(column.seconds.size() - 1)
                                : 0;
      chart.dot(centre + offset, column.seconds[run], colour);
      data << run + 1 << ' ' << column.seconds[run] << '\n';
    }
    data << "\n\n";
    if (column.seconds.empty()) {
      plot.notes.push_back(column.name + ": no run");
      chart.text(chart.px(centre), chart.py(top / 2), "no run", "middle", "#555");
    } else {
      const double median = median_of(column.seconds);
      chart.polyline({{centre - 0.3, median}, {centre + 0.3, median}}, colour, 3);
      char label[32];
      (void)std::snprintf(label, sizeof label, "median %.4g s", median);
      chart.text(chart.px(centre), chart.py(median) - 8, label, "middle", colour);
    }
    chart.text(chart.px(centre), chart.plot_bottom() + 16, column.name, "middle");
    chart.legend(colour, column.name + ": " + std::to_string(column.seconds.size()) + " run(s)");
  }
  plot.svg = chart.str();
  std::ofstream(directory + "/" + plot.file) << plot.svg;
  return plot;
}

}  // namespace tcptune::cli
