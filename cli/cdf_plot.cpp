#include "cdf_plot.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "program_launch.hpp"

namespace tcptune::cli {

namespace {

// (latency in us at a bucket's upper bound, fraction of values at or below it)
using Curve = std::vector<std::pair<double, double>>;

Curve curve_of(const MergedHistogram& histogram) {
  std::uint64_t total = 0;
  for (const auto& [bounds, count] : histogram.buckets) {
    total += count;
  }
  Curve curve;
  std::uint64_t seen = 0;
  for (const auto& [bounds, count] : histogram.buckets) {
    seen += count;
    curve.emplace_back(bounds.second / 1000.0, static_cast<double>(seen) / static_cast<double>(total));
  }
  return curve;
}

bool run_gnuplot(const std::string& script) {
  bool not_executable = false;
  const std::string gnuplot = resolve_command("gnuplot", not_executable);
  if (gnuplot.empty()) {
    return false;
  }
  const pid_t child = fork();
  if (child == 0) {
    execl(gnuplot.c_str(), "gnuplot", script.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  return child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::string svg_plot(const std::string& path, const std::vector<std::pair<std::string, Curve>>& curves) {
  constexpr double kWidth = 800;
  constexpr double kHeight = 480;
  constexpr double kLeft = 70;
  constexpr double kRight = 20;
  constexpr double kTop = 20;
  constexpr double kBottom = 50;
  static constexpr const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e"};
  double low = 1e300;
  double high = 0;
  for (const auto& [name, curve] : curves) {
    for (const auto& [x, y] : curve) {
      low = std::min(low, x);
      high = std::max(high, x);
    }
  }
  const double decade_low = std::floor(std::log10(std::max(low, 1e-3)));
  const double decade_high = std::max(decade_low + 1, std::ceil(std::log10(std::max(high, 1e-3))));
  auto px = [&](double us) {
    const double fraction = (std::log10(std::max(us, 1e-3)) - decade_low) / (decade_high - decade_low);
    return kLeft + fraction * (kWidth - kLeft - kRight);
  };
  auto py = [&](double y) { return kTop + (1 - y) * (kHeight - kTop - kBottom); };
  std::ostringstream svg;
  svg << R"(<svg xmlns="http://www.w3.org/2000/svg" width=")" << kWidth << R"(" height=")" << kHeight
      << R"(" font-family="sans-serif" font-size="12">)"
      << "\n";
  svg << R"(<rect width="100%" height="100%" fill="white"/>)"
      << "\n";
  for (double decade = decade_low; decade <= decade_high; ++decade) {
    const double x = px(std::pow(10, decade));
    svg << R"(<line x1=")" << x << R"(" y1=")" << py(0) << R"(" x2=")" << x << R"(" y2=")" << py(1)
        << R"(" stroke="#ddd"/>)"
        << R"(<text x=")" << x << R"(" y=")" << py(0) + 18 << R"(" text-anchor="middle">)" << std::pow(10, decade)
        << "</text>\n";
  }
  for (int tenth = 0; tenth <= 10; tenth += 2) {
    const double y = py(tenth / 10.0);
    svg << R"(<line x1=")" << kLeft << R"(" y1=")" << y << R"(" x2=")" << kWidth - kRight << R"(" y2=")" << y
        << R"(" stroke="#ddd"/>)"
        << R"(<text x=")" << kLeft - 8 << R"(" y=")" << y + 4 << R"(" text-anchor="end">)" << tenth / 10.0
        << "</text>\n";
  }
  svg << R"(<text x=")" << (kLeft + kWidth - kRight) / 2 << R"(" y=")" << kHeight - 12
      << R"(" text-anchor="middle">latency (us, log scale)</text>)"
      << "\n";
  svg << R"(<text x="16" y=")" << (kTop + kHeight - kBottom) / 2 << R"(" transform="rotate(-90 16 )"
      << (kTop + kHeight - kBottom) / 2 << R"svg()" text-anchor="middle">fraction at or below</text>)svg"
      << "\n";
  std::size_t index = 0;
  for (const auto& [name, curve] : curves) {
    const char* colour = kColours[index % 4];
    svg << R"(<polyline fill="none" stroke=")" << colour << R"(" stroke-width="2" points=")";
    double previous = 0;
    for (const auto& [x, y] : curve) {
      svg << px(x) << "," << py(previous) << " " << px(x) << "," << py(y) << " ";  // a step per bucket
      previous = y;
    }
    svg << "\"/>\n";
    const double legend_y = kTop + 16 + 16 * static_cast<double>(index);
    svg << R"(<line x1=")" << kLeft + 12 << R"(" y1=")" << legend_y - 4 << R"(" x2=")" << kLeft + 36 << R"(" y2=")"
        << legend_y - 4 << R"(" stroke=")" << colour << R"(" stroke-width="2"/>)"
        << R"(<text x=")" << kLeft + 42 << R"(" y=")" << legend_y << R"(">)" << name << "</text>\n";
    ++index;
  }
  svg << "</svg>\n";
  std::ofstream(path) << svg.str();
  return path;
}

}  // namespace

std::string write_cdf_plot(const std::string& base, const std::vector<CdfSeries>& series) {
  std::vector<std::pair<std::string, Curve>> curves;
  for (const auto& [name, histogram] : series) {
    if (Curve curve = curve_of(*histogram); !curve.empty()) {
      curves.emplace_back(name, std::move(curve));
    }
  }
  std::ofstream data(base + ".dat");
  for (const auto& [name, curve] : curves) {
    data << "# " << name << "\n";
    for (const auto& [x, y] : curve) {
      data << x << " " << y << "\n";
    }
    data << "\n\n";  // a gnuplot data block per series
  }
  data.close();
  if (!curves.empty()) {
    std::ofstream script(base + ".gp");
    script << "set terminal pngcairo size 800,480\nset output '" << base << ".png'\nset logscale x\n"
           << "set xlabel 'latency (us, log scale)'\nset ylabel 'fraction at or below'\nset yrange [0:1]\n"
           << "set key bottom right\nplot ";
    for (std::size_t i = 0; i < curves.size(); ++i) {
      script << (i == 0 ? "" : ", ") << "'" << base << ".dat' index " << i << " with steps title '" << curves[i].first
             << "'";
    }
    script << "\n";
    script.close();
    if (run_gnuplot(base + ".gp")) {
      return base + ".png";
    }
  }
  return svg_plot(base + ".svg", curves);
}

}  // namespace tcptune::cli
