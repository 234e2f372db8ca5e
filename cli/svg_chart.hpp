// A small SVG chart for `tcptune ab`'s plots: a plot area with titled axes, a title of one or
// more lines, a legend, and lines and dots in data coordinates. Self-contained SVG 1.1 text,
// the same on every host, that a browser shows inline in report.html or from its own file.
#pragma once

#include <functional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace tcptune::cli {

// Text made safe for XML and HTML (&, <, >, ").
std::string xml_escaped(const std::string& text);

struct ChartAxis {
  std::string label;  // what it measures, with its unit
  double low = 0;
  double high = 1;
  bool log_scale = false;
  std::vector<std::pair<double, std::string>> ticks;  // (value, label)
};

class SvgChart {
 public:
  static constexpr double kWidth = 760;

  SvgChart(std::vector<std::string> title, ChartAxis x, ChartAxis y);

  // Data coordinates to the drawing's.
  [[nodiscard]] double px(double x) const;
  [[nodiscard]] double py(double y) const;
  [[nodiscard]] double plot_left() const { return kLeft; }
  [[nodiscard]] double plot_right() const { return kWidth - kRight; }
  [[nodiscard]] double plot_top() const { return top_; }
  [[nodiscard]] double plot_bottom() const { return top_ + kPlotHeight; }

  // A line through (x, y) points in data coordinates.
  void polyline(const std::vector<std::pair<double, double>>& points, const std::string& colour, double width = 2,
                const std::string& dash = "");
  void dot(double x, double y, const std::string& colour);
  // A shaded band between two x values in data coordinates, with a label at its top.
  void band(double x_low, double x_high, const std::string& label);
  // Text at drawing coordinates.
  void text(double x, double y, const std::string& content, const std::string& anchor = "start",
            const std::string& colour = "#000");
  // A legend entry (a short line in `colour`, dashed as `dash`, or none when `colour` is empty)
  // below the plot.
  void legend(const std::string& colour, const std::string& label, const std::string& dash = "");

  [[nodiscard]] std::string str() const;

 private:
  static constexpr double kLeft = 80;
  static constexpr double kRight = 24;
  static constexpr double kPlotHeight = 300;
  static constexpr double kTitleLine = 18;
  static constexpr double kLegendLine = 18;

  std::vector<std::string> title_;
  ChartAxis x_;
  ChartAxis y_;
  double top_;
  std::ostringstream body_;
  struct LegendEntry {
    std::string colour;
    std::string label;
    std::string dash;
  };
  std::vector<LegendEntry> legend_;
};

// Decade ticks for a log axis over [low, high] (> 0), labelled by `label`.
std::vector<std::pair<double, std::string>> decade_ticks(double low, double high,
                                                         const std::function<std::string(double)>& label);
// About five round ticks from 0, the last at or above `high`.
std::vector<std::pair<double, std::string>> linear_ticks(double high);
// A duration in milliseconds as a tick label: "10 us", "1 ms", "2 s".
std::string duration_label(double ms);

}  // namespace tcptune::cli
