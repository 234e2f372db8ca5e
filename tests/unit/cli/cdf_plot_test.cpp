#include "cdf_plot.hpp"

#include <gtest/gtest.h>

#include "svg_chart.hpp"

namespace tcptune::cli {
namespace {

TEST(CdfPlot, CurveOfValuesCountsTiesAtOrBelow) {
  const CdfCurve curve = cdf_of_values("tuned", {3, 1, 2, 2}, "none");
  EXPECT_EQ(curve.count, 4U);
  EXPECT_TRUE(curve.missing.empty());
  EXPECT_EQ(curve.points, (std::vector<std::pair<double, double>>{{1, 0.25}, {2, 0.75}, {3, 1.0}}));
  const CdfCurve empty = cdf_of_values("tuned", {}, "the program handed over no latency");
  EXPECT_TRUE(empty.points.empty());
  EXPECT_EQ(empty.missing, "the program handed over no latency");
}

TEST(CdfPlot, ManyValuesAreThinnedToEvenFractions) {
  std::vector<double> ms;
  for (int i = 1; i <= 100000; ++i) {
    ms.push_back(i * 0.001);
  }
  const CdfCurve curve = cdf_of_values("observe-only", ms, "");
  EXPECT_EQ(curve.count, 100000U);
  EXPECT_LE(curve.points.size(), 400U);
  EXPECT_EQ(curve.points.back(), (std::pair<double, double>{100.0, 1.0}));
}

TEST(CdfPlot, HistogramAfterValuesBelowTheResolution) {
  MergedHistogram histogram;
  histogram.buckets[{42e6, 47e6}] = 2;  // ns
  histogram.buckets[{47e6, 53e6}] = 1;
  const CdfCurve curve = cdf_of_histogram("observe-only", histogram, 7, "");
  EXPECT_EQ(curve.count, 10U);
  EXPECT_DOUBLE_EQ(curve.below_resolution, 0.7);
  ASSERT_EQ(curve.points.size(), 2U);
  EXPECT_DOUBLE_EQ(curve.points[0].first, 47.0) << "a bucket's upper bound, in ms";
  EXPECT_DOUBLE_EQ(curve.points[0].second, 0.9);
  EXPECT_DOUBLE_EQ(curve.points[1].second, 1.0);
  EXPECT_EQ(cdf_of_histogram("tuned", MergedHistogram{}, 0, "no write sampled for its ack").missing,
            "no write sampled for its ack");
}

TEST(SvgChart, AxisLabelsCarryTheirUnit) {
  EXPECT_EQ(duration_label(0.01), "10 us");
  EXPECT_EQ(duration_label(1), "1 ms");
  EXPECT_EQ(duration_label(2500), "2.5 s");
  EXPECT_EQ(duration_label(0.0001), "100 ns");
  const auto ticks = decade_ticks(0.1, 100, duration_label);
  ASSERT_EQ(ticks.size(), 4U);
  EXPECT_EQ(ticks.front().second, "100 us");
  EXPECT_EQ(ticks.back().second, "100 ms");
  const auto linear = linear_ticks(0.97);
  EXPECT_EQ(linear.back().first, 1.0) << "the last tick at or above the highest value";
  EXPECT_EQ(xml_escaped("a<b & \"c\">"), "a&lt;b &amp; &quot;c&quot;&gt;");
  // A command's argument in raw bytes: what is not UTF-8 becomes U+FFFD, so the SVG stays XML.
  EXPECT_EQ(xml_escaped("echo \xff\xfe \x01x \xc3\xa9"), "echo \xef\xbf\xbd\xef\xbf\xbd  x \xc3\xa9");
}

}  // namespace
}  // namespace tcptune::cli
