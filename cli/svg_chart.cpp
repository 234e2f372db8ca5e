#include "svg_chart.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tcptune/config/utf8.hpp"

namespace tcptune::cli {

namespace {

std::string coordinate(double value) {
  char text[32];
  (void)std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

std::string short_number(double value) {
  char text[32];
  (void)std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

}  // namespace

std::string xml_escaped(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t pos = 0; pos < text.size();) {
    const char c = text[pos];
    const config::Utf8Character character = config::utf8_character_at(text, pos);
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default:
        if (character.length == 0) {
          out += "\xef\xbf\xbd";  // U+FFFD: a byte that is not UTF-8 (an argument in raw bytes) is no XML
        } else if (static_cast<unsigned char>(c) < 0x20 && c != '\t') {
          out += ' ';  // control characters are not allowed in XML 1.0 text
        } else {
          out.append(text, pos, character.length);
        }
    }
    pos += character.length == 0 ? 1 : character.length;
  }
  return out;
}

SvgChart::SvgChart(std::vector<std::string> title, ChartAxis x, ChartAxis y)
    : title_(std::move(title)),
      x_(std::move(x)),
      y_(std::move(y)),
      top_(16 + kTitleLine * static_cast<double>(title_.size())) {}

double SvgChart::px(double x) const {
  double fraction = 0;
  if (x_.log_scale) {
    fraction = (std::log10(std::max(x, x_.low)) - std::log10(x_.low)) / (std::log10(x_.high) - std::log10(x_.low));
  } else {
    fraction = (x - x_.low) / (x_.high - x_.low);
  }
  return kLeft + std::clamp(fraction, 0.0, 1.0) * (plot_right() - kLeft);
}

double SvgChart::py(double y) const {
  const double fraction = (y - y_.low) / (y_.high - y_.low);
  return plot_bottom() - std::clamp(fraction, 0.0, 1.0) * kPlotHeight;
}

void SvgChart::polyline(const std::vector<std::pair<double, double>>& points, const std::string& colour, double width,
                        const std::string& dash) {
  body_ << R"(<polyline fill="none" stroke=")" << colour << R"(" stroke-width=")" << width << '"';
  if (!dash.empty()) {
    body_ << R"( stroke-dasharray=")" << dash << '"';
  }
  body_ << R"( points=")";
  for (const auto& [x, y] : points) {
    body_ << coordinate(px(x)) << ',' << coordinate(py(y)) << ' ';
  }
  body_ << "\"/>\n";
}

void SvgChart::dot(double x, double y, const std::string& colour) {
  body_ << R"(<circle cx=")" << coordinate(px(x)) << R"(" cy=")" << coordinate(py(y)) << R"(" r="4" fill=")" << colour
        << R"(" fill-opacity="0.8"/>)"
        << "\n";
}

void SvgChart::band(double x_low, double x_high, const std::string& label) {
  const double left = px(x_low);
  const double right = px(x_high);
  body_ << R"(<rect x=")" << coordinate(left) << R"(" y=")" << coordinate(plot_top()) << R"(" width=")"
        << coordinate(right - left) << R"(" height=")" << coordinate(kPlotHeight) << R"(" fill="#eee"/>)"
        << "\n";
  text((left + right) / 2, plot_top() + 14, label, "middle", "#555");
}

void SvgChart::text(double x, double y, const std::string& content, const std::string& anchor,
                    const std::string& colour) {
  body_ << R"(<text x=")" << coordinate(x) << R"(" y=")" << coordinate(y) << R"(" text-anchor=")" << anchor
        << R"(" fill=")" << colour << R"(">)" << xml_escaped(content) << "</text>\n";
}

void SvgChart::legend(const std::string& colour, const std::string& label, const std::string& dash) {
  legend_.push_back({colour, label, dash});
}

std::string SvgChart::str() const {
  const double height = plot_bottom() + 56 + kLegendLine * static_cast<double>(legend_.size()) + 8;
  std::ostringstream svg;
  svg << R"(<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width=")" << kWidth << R"(" height=")"
      << coordinate(height) << R"(" viewBox="0 0 )" << kWidth << ' ' << coordinate(height)
      << R"(" font-family="sans-serif" font-size="12">)"
      << "\n";
  svg << R"(<rect width="100%" height="100%" fill="white"/>)"
      << "\n";
  for (std::size_t line = 0; line < title_.size(); ++line) {
    svg << R"(<text x=")" << kWidth / 2 << R"(" y=")" << coordinate(20 + kTitleLine * static_cast<double>(line))
        << R"(" text-anchor="middle")" << (line == 0 ? R"( font-weight="bold" font-size="14")" : "") << '>'
        << xml_escaped(title_[line]) << "</text>\n";
  }
  // Grid and tick labels.
  for (const auto& [value, label] : x_.ticks) {
    const double x = px(value);
    svg << R"(<line x1=")" << coordinate(x) << R"(" y1=")" << coordinate(plot_top()) << R"(" x2=")" << coordinate(x)
        << R"(" y2=")" << coordinate(plot_bottom()) << R"(" stroke="#ddd"/>)"
        << R"(<text x=")" << coordinate(x) << R"(" y=")" << coordinate(plot_bottom() + 16)
        << R"(" text-anchor="middle">)" << xml_escaped(label) << "</text>\n";
  }
  for (const auto& [value, label] : y_.ticks) {
    const double y = py(value);
    svg << R"(<line x1=")" << kLeft << R"(" y1=")" << coordinate(y) << R"(" x2=")" << coordinate(plot_right())
        << R"(" y2=")" << coordinate(y) << R"(" stroke="#ddd"/>)"
        << R"(<text x=")" << kLeft - 6 << R"(" y=")" << coordinate(y + 4) << R"(" text-anchor="end">)"
        << xml_escaped(label) << "</text>\n";
  }
  svg << R"(<rect x=")" << kLeft << R"(" y=")" << coordinate(plot_top()) << R"(" width=")"
      << coordinate(plot_right() - kLeft) << R"(" height=")" << kPlotHeight << R"(" fill="none" stroke="#888"/>)"
      << "\n";
  svg << body_.str();
  // Axis labels: what each axis measures.
  svg << R"(<text x=")" << coordinate((kLeft + plot_right()) / 2) << R"(" y=")" << coordinate(plot_bottom() + 36)
      << R"(" text-anchor="middle">)" << xml_escaped(x_.label) << "</text>\n";
  const double middle = (plot_top() + plot_bottom()) / 2;
  svg << R"(<text x="18" y=")" << coordinate(middle) << R"(" transform="rotate(-90 18 )" << coordinate(middle)
      << R"svg()" text-anchor="middle">)svg" << xml_escaped(y_.label) << "</text>\n";
  double legend_y = plot_bottom() + 60;
  for (const auto& [colour, label, dash] : legend_) {
    if (!colour.empty()) {
      svg << R"(<line x1=")" << kLeft << R"(" y1=")" << coordinate(legend_y - 4) << R"(" x2=")" << kLeft + 24
          << R"(" y2=")" << coordinate(legend_y - 4) << R"(" stroke=")" << colour << R"(" stroke-width="3")";
      if (!dash.empty()) {
        svg << R"( stroke-dasharray=")" << dash << '"';
      }
      svg << "/>";
    }
    svg << R"(<text x=")" << kLeft + 30 << R"(" y=")" << coordinate(legend_y) << "\">" << xml_escaped(label)
        << "</text>\n";
    legend_y += kLegendLine;
  }
  svg << "</svg>\n";
  return svg.str();
}

std::vector<std::pair<double, std::string>> decade_ticks(double low, double high,
                                                         const std::function<std::string(double)>& label) {
  std::vector<std::pair<double, std::string>> ticks;
  const auto first = static_cast<int>(std::ceil(std::log10(low) - 1e-9));
  const auto last = static_cast<int>(std::floor(std::log10(high) + 1e-9));
  for (int decade = first; decade <= last; ++decade) {
    const double value = std::pow(10, decade);
    ticks.emplace_back(value, label(value));
  }
  return ticks;
}

std::vector<std::pair<double, std::string>> linear_ticks(double high) {
  std::vector<std::pair<double, std::string>> ticks;
  if (!(high > 0)) {
    return {{0, "0"}};
  }
  const double rough = high / 5;
  const double magnitude = std::pow(10, std::floor(std::log10(rough)));
  double step = magnitude;
  for (double factor : {1.0, 2.0, 5.0, 10.0}) {
    step = factor * magnitude;
    if (step >= rough) {
      break;
    }
  }
  for (int i = 0; ticks.empty() || ticks.back().first < high; ++i) {  // the last tick at or above high
    ticks.emplace_back(i * step, short_number(i * step));
  }
  return ticks;
}

std::string duration_label(double ms) {
  if (ms >= 1000) {
    return short_number(ms / 1000) + " s";
  }
  if (ms >= 1) {
    return short_number(ms) + " ms";
  }
  if (ms >= 1e-3) {
    return short_number(ms * 1000) + " us";
  }
  return short_number(ms * 1e6) + " ns";
}

}  // namespace tcptune::cli
