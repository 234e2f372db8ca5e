#include "subprocess.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>

namespace tcptune::linkem {

std::string command_line(const std::vector<std::string>& argv) {
  std::string line;
  for (const std::string& arg : argv) {
    line += (line.empty() ? "" : " ") + arg;
  }
  return line;
}

CommandResult run_command(const std::vector<std::string>& argv) {
  CommandResult result;
  int output_pipe[2];
  if (pipe2(output_pipe, O_CLOEXEC) != 0) {
    result.output = std::string("pipe: ") + std::strerror(errno);
    return result;
  }
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& arg : argv) {
    args.push_back(const_cast<char*>(arg.c_str()));
  }
  args.push_back(nullptr);
  const pid_t child = fork();
  if (child < 0) {
    result.output = std::string("fork: ") + std::strerror(errno);
    close(output_pipe[0]);
    close(output_pipe[1]);
    return result;
  }
  if (child == 0) {
    const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd >= 0) {
      dup2(null_fd, STDIN_FILENO);
    }
    dup2(output_pipe[1], STDOUT_FILENO);
    dup2(output_pipe[1], STDERR_FILENO);
    execvp(args[0], args.data());
    const std::string message = std::string(args[0]) + ": " + std::strerror(errno) + "\n";
    (void)!write(STDERR_FILENO, message.data(), message.size());
    _exit(127);
  }
  close(output_pipe[1]);
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(output_pipe[0], buffer, sizeof buffer);
    if (n > 0) {
      result.output.append(buffer, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  close(output_pipe[0]);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  while (!result.output.empty() && (result.output.back() == '\n' || result.output.back() == '\r')) {
    result.output.pop_back();
  }
  return result;
}

}  // namespace tcptune::linkem
