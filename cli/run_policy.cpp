#include "run_policy.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <system_error>
#include <utility>
#include <variant>

#include "program_launch.hpp"

namespace tcptune::cli {

namespace {

std::string errno_text(int error) {
  return std::generic_category().message(error);
}

bool write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t wrote = ::write(fd, text.data() + done, text.size() - done);
    if (wrote < 0 && errno == EINTR) {
      continue;
    }
    if (wrote <= 0) {
      return false;
    }
    done += static_cast<std::size_t>(wrote);
  }
  return true;
}

}  // namespace

bool put_policy_text_in_environment(const std::string& text, const std::string& name) {
  if (text.size() > kMaxPolicyInEnvironment || text.find('\0') != std::string::npos) {
    return false;
  }
  // An empty policy as a lone newline, which means the same: an empty variable counts as unset.
  setenv("TCPTUNE_POLICY_TOML", text.empty() ? "\n" : text.c_str(), 1);
  setenv("TCPTUNE_POLICY_NAME", name.c_str(), 1);
  unsetenv("TCPTUNE_POLICY");
  return true;
}

config::LoadResult RunPolicy::load(const std::string& file) {
  config::PolicySource source = config::discover_policy_source(false);
  if (!file.empty()) {
    source = {config::PolicySource::Kind::env_path, file, absolute(file)};
  }
  if (source.kind != config::PolicySource::Kind::env_path) {
    // Inline: every process gets the same text already. /etc/tcptune/policy.toml: read by each
    // process, as without run (setuid ones read it whatever run passes).
    return config::load_discovered(source);
  }
  std::variant<std::string, config::PolicyError> read = config::read_policy_file(source.path_or_text);
  if (read.index() == 1) {
    return config::LoadResult{
        std::variant<config::Policy, config::PolicyError>(std::in_place_index<1>, std::get<1>(std::move(read)))};
  }
  const std::string name = source.name.empty() ? source.path_or_text : source.name;
  // Messages about --policy name the file as given; records, as before, its absolute path.
  config::LoadResult loaded = config::load_policy_text(std::get<0>(read), file.empty() ? name : file);
  if (loaded.ok()) {
    text_ = std::get<0>(std::move(read));
    name_ = name;
    loaded.policy().source = name_;
  }
  return loaded;
}

config::LoadResult RunPolicy::load_text(const std::string& text, const std::string& name) {
  config::LoadResult loaded = config::load_policy_text(text, name);
  if (loaded.ok()) {
    text_ = text;
    name_ = name;
    loaded.policy().source = name_;
  }
  return loaded;
}

std::string RunPolicy::pass_on() {
  if (name_.empty()) {
    return {};
  }
  if (put_policy_text_in_environment(text_, name_)) {
    return {};
  }
  // Too large for the environment: a copy in a directory only this user can enter, which an
  // edit of the original does not reach.
  const char* tmpdir = std::getenv("TMPDIR");
  std::string dir = std::string(tmpdir != nullptr && *tmpdir == '/' ? tmpdir : "/tmp") + "/tcptune-policy-XXXXXX";
  std::string problem;
  if (::mkdtemp(dir.data()) == nullptr) {
    problem = "cannot create a directory for a copy of the policy in " + dir + ": " + errno_text(errno);
  } else {
    copy_dir_ = dir;
    copy_file_ = dir + "/policy.toml";
    const int fd = ::open(copy_file_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0400);
    bool written = fd >= 0 && write_all(fd, text_);
    int error = errno;
    if (fd >= 0 && ::close(fd) != 0 && written) {
      written = false;
      error = errno;
    }
    if (!written) {
      problem = "cannot write a copy of the policy to " + copy_file_ + ": " + errno_text(error);
      remove_copy();
    }
  }
  if (!problem.empty()) {
    setenv("TCPTUNE_POLICY", name_.c_str(), 1);
    unsetenv("TCPTUNE_POLICY_NAME");
    return problem;
  }
  setenv("TCPTUNE_POLICY", copy_file_.c_str(), 1);
  setenv("TCPTUNE_POLICY_NAME", name_.c_str(), 1);
  unsetenv("TCPTUNE_POLICY_TOML");
  return {};
}

void RunPolicy::remove_copy() {
  if (copy_dir_.empty()) {
    return;
  }
  (void)::unlink(copy_file_.c_str());
  (void)::rmdir(copy_dir_.c_str());
  copy_dir_.clear();
  copy_file_.clear();
}

}  // namespace tcptune::cli
