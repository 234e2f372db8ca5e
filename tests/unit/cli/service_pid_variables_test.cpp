// LISTEN_PID and WATCHDOG_PID that name this process name the child after the fork; others stay.
#include "service_pid_variables.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace tcptune::cli {
namespace {

TEST(ServicePidVariables, NameTheChildWhereTheyNamedTheParent) {
  setenv("LISTEN_PID", std::to_string(getpid()).c_str(), 1);
  setenv("WATCHDOG_PID", "1", 1);  // another process's: left alone
  ServicePidVariables variables;
  variables.prepare();
  int report[2];
  ASSERT_EQ(pipe(report), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    variables.retarget_in_child();
    const std::string seen = std::string(getenv("LISTEN_PID")) + " " + getenv("WATCHDOG_PID");
    (void)!write(report[1], seen.data(), seen.size());
    _exit(0);
  }
  close(report[1]);
  char buffer[64] = {};
  const ssize_t got = read(report[0], buffer, sizeof buffer - 1);
  close(report[0]);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_GT(got, 0);
  EXPECT_EQ(std::string(buffer), std::to_string(child) + " 1");
  EXPECT_EQ(std::string(getenv("LISTEN_PID")), std::to_string(getpid()));  // the parent's unchanged
  unsetenv("LISTEN_PID");
  unsetenv("WATCHDOG_PID");
}

}  // namespace
}  // namespace tcptune::cli
