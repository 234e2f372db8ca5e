// A report is kept once for all the connections that have it: equal ones share it, different
// ones do not, threads interning the same one at once get one copy, and past the table's size
// a PendingOpen owns its own.
#include "interned_reports.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <thread>
#include <vector>

#include "pending_open.hpp"

namespace tcptune::shim {
namespace {

ApplyReport report_with(const std::string& effective) {
  ApplyReport report;
  OptionReport option;
  option.name = "nodelay";
  option.requested = "on-wait";
  option.effective = effective;
  option.note = "Nagle stays on; what it holds back is pushed when a thread that wrote waits for input";
  report.options.push_back(option);
  return report;
}

TEST(InternedReports, EqualReportsShareOneCopyAndDifferentOnesDoNot) {
  const ApplyReport* first = intern_report(report_with("0"));
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(*first, report_with("0"));
  EXPECT_EQ(intern_report(report_with("0")), first);
  const ApplyReport* other = intern_report(report_with("1"));
  ASSERT_NE(other, nullptr);
  EXPECT_NE(other, first);
  ApplyReport noted = report_with("0");
  noted.options[0].note += ".";  // any field makes it another report
  EXPECT_NE(intern_report(noted), first);
  EXPECT_EQ(intern_report(report_with("1")), other);
}

TEST(InternedReports, ThreadsInterningTheSameReportGetOneCopy) {
  std::vector<const ApplyReport*> got(8);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < got.size(); ++i) {
    threads.emplace_back([&got, i] { got[i] = intern_report(report_with("same")); });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  EXPECT_EQ(std::set<const ApplyReport*>(got.begin(), got.end()).size(), 1U);
  EXPECT_NE(got[0], nullptr);
}

TEST(InternedReports, PastTheTableAPendingOpenOwnsItsReport) {
  // Other tests of this process may have kept some already: new ones fill it within its size.
  int kept = 0;
  while (kept <= kMostInternedReports && intern_report(report_with("fill " + std::to_string(kept))) != nullptr) {
    ++kept;
  }
  ASSERT_GT(kept, 3);
  ASSERT_LE(kept, kMostInternedReports);
  EXPECT_EQ(intern_report(report_with("one too many")), nullptr);
  EXPECT_NE(intern_report(report_with("fill 3")), nullptr) << "kept ones are still found";

  PendingOpen open;
  keep_report(open, report_with("one too many"));
  EXPECT_TRUE(open.owns_report);
  EXPECT_EQ(open.options(), report_with("one too many"));
  PendingOpen shared;
  keep_report(shared, report_with("fill 3"));
  EXPECT_FALSE(shared.owns_report);
  EXPECT_EQ(shared.options(), report_with("fill 3"));
  release_report(shared);  // nothing to free
  release_report(open);    // frees its own (the sanitizer builds check)
  EXPECT_TRUE(PendingOpen{}.options().options.empty()) << "no report: an empty one";
}

}  // namespace
}  // namespace tcptune::shim
