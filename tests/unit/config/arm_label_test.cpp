#include "tcptune/config/arm_label.hpp"

#include <gtest/gtest.h>

#include <string>

namespace tcptune::config {
namespace {

TEST(ArmLabel, NamesThatAreArms) {
  for (const char* name : {"on", "off", "A", "canary-2", "v1.8_tuned", "0", "abcdefghijabcdefghijabcdefghijab"}) {
    EXPECT_EQ(arm_name_problem(name), "") << name;
  }
}

TEST(ArmLabel, NamesThatAreNotSayWhy) {
  EXPECT_EQ(arm_name_problem(""), "'' is not an arm name: it is empty");
  EXPECT_EQ(arm_name_problem("-on"), "'-on' is not an arm name: it must start with a letter or a digit");
  EXPECT_EQ(arm_name_problem(".."), "'..' is not an arm name: it must start with a letter or a digit");
  EXPECT_EQ(arm_name_problem("on arm"),
            "'on arm' is not an arm name: only letters, digits, '_', '-' and '.' may follow");
  EXPECT_NE(arm_name_problem("on\"}"), "");
  EXPECT_NE(arm_name_problem("a/b"), "");
  EXPECT_EQ(arm_name_problem(std::string(33, 'a')),
            "'" + std::string(33, 'a') + "' is not an arm name: longer than 32 characters");
  // A control character is shown escaped, so the line stays one line.
  const std::string problem = arm_name_problem("on\n");
  EXPECT_EQ(problem.find('\n'), std::string::npos) << problem;
}

TEST(ArmLabel, FromTheEnvironment) {
  EXPECT_EQ(arm_from_environment(nullptr).arm, "");
  EXPECT_EQ(arm_from_environment(nullptr).problem, "");
  EXPECT_EQ(arm_from_environment("").problem, "");  // set empty: no arm, nothing to say
  EXPECT_EQ(arm_from_environment("on").arm, "on");
  EXPECT_EQ(arm_from_environment("on").problem, "");
  const ArmFromEnvironment bad = arm_from_environment("on arm");
  EXPECT_EQ(bad.arm, "");
  EXPECT_EQ(bad.problem,
            "TCPTUNE_ARM='on arm' is not an arm name: only letters, digits, '_', '-' and '.' may follow; ignored, no "
            "arm label");
}

}  // namespace
}  // namespace tcptune::config
