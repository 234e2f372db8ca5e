#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "commands.hpp"
#include "executable_inspector.hpp"
#include "tcptune/config/policy_loader.hpp"

namespace tcptune::cli {

namespace {

namespace fs = std::filesystem;

// libtcptune.so next to this binary: the build tree (bin/ and lib/) or an install tree.
// TCPTUNE_SHIM overrides the search; it must name a file, or the run would go untuned silently.
std::string locate_shim(std::string& problem) {
  std::error_code error;
  if (const char* explicit_path = std::getenv("TCPTUNE_SHIM"); explicit_path != nullptr && *explicit_path != '\0') {
    if (!fs::is_regular_file(explicit_path, error)) {
      problem = std::string("TCPTUNE_SHIM=") + explicit_path + " is not a file";
      return {};
    }
    return fs::weakly_canonical(explicit_path, error).string();
  }
  problem = "cannot find libtcptune.so next to this tcptune (set TCPTUNE_SHIM=/path/libtcptune.so)";
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  if (error) {
    return {};
  }
  const fs::path dir = self.parent_path();
  for (const fs::path& candidate :
       {dir / "libtcptune.so", dir / "../lib/libtcptune.so", dir / "../lib/" TCPTUNE_MULTIARCH "/libtcptune.so",
        dir / "../lib64/libtcptune.so", dir / "../lib/tcptune/libtcptune.so"}) {
    if (fs::exists(candidate, error)) {
      return fs::weakly_canonical(candidate, error).string();
    }
  }
  return {};
}

// Like execvp's search: the path CMD will run from, or empty. `found_not_executable` is set
// when only a non-executable file of that name was found (the shell's 126, not 127).
std::string resolve_command(const std::string& command, bool& found_not_executable) {
  found_not_executable = false;
  if (command.find('/') != std::string::npos) {
    return command;
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const std::size_t end = dirs.find(':', start);
    std::string dir = dirs.substr(start, end == std::string::npos ? std::string::npos : end - start);
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + command;
    struct stat info {};
    if (::stat(candidate.c_str(), &info) == 0 && S_ISREG(info.st_mode)) {
      if (access(candidate.c_str(), X_OK) == 0) {
        return candidate;
      }
      found_not_executable = true;
    }
    if (end == std::string::npos) {
      break;
    }
    start = end + 1;
  }
  return {};
}

std::string absolute(const std::string& path) {
  std::error_code error;
  const fs::path result = fs::absolute(path, error);
  return error ? path : result.string();
}

// ld.so separates LD_PRELOAD entries with colons or spaces. The shim goes first, once, so
// its hooks see every call before the other interposers.
std::string preload_with_shim_first(const std::string& shim, const char* existing) {
  std::string preload = shim;
  const std::string current = existing != nullptr ? existing : "";
  std::size_t start = 0;
  while (start < current.size()) {
    const std::size_t end = current.find_first_of(": ", start);
    const std::string entry = current.substr(start, end == std::string::npos ? std::string::npos : end - start);
    std::error_code error;
    const bool is_shim = !entry.empty() && (entry == shim || fs::weakly_canonical(entry, error).string() == shim);
    if (!entry.empty() && !is_shim) {
      preload += ":" + entry;
    }
    if (end == std::string::npos) {
      break;
    }
    start = end + 1;
  }
  return preload;
}

int usage() {
  (void)std::fputs("usage: tcptune run [--policy FILE] [--log FILE] [-v] -- CMD ARGS...\n", stderr);
  return kExitUsage;
}

}  // namespace

int run_command(const std::vector<std::string>& args) {
  std::string policy;
  std::string log;
  bool verbose = false;
  std::size_t i = 0;
  for (; i < args.size(); ++i) {
    if (args[i] == "--") {
      ++i;
      break;
    }
    if ((args[i] == "--policy" || args[i] == "--log") && i + 1 < args.size()) {
      (args[i] == "--policy" ? policy : log) = args[i + 1];
      ++i;
    } else if (args[i] == "-v" || args[i] == "--verbose") {
      verbose = true;
    } else if (args[i].rfind('-', 0) == 0) {
      (void)std::fprintf(stderr, "tcptune run: unknown option '%s'\n", args[i].c_str());
      return usage();
    } else {
      break;  // the command itself, without "--"
    }
  }
  if (i >= args.size()) {
    return usage();
  }
  std::string problem;
  const std::string shim = locate_shim(problem);
  if (shim.empty()) {
    (void)std::fprintf(stderr, "tcptune run: %s\n", problem.c_str());
    return 1;
  }
  if (!policy.empty()) {
    const config::LoadResult loaded = config::load_policy_file(policy);
    if (!loaded.ok()) {
      (void)std::fprintf(stderr, "tcptune: %s\n", loaded.error().to_string().c_str());
      return kExitConfig;
    }
    setenv("TCPTUNE_POLICY", absolute(policy).c_str(), 1);
  }
  if (!log.empty()) {
    setenv("TCPTUNE_LOG", absolute(log).c_str(), 1);
  }
  if (verbose) {
    setenv("TCPTUNE_LOG_LEVEL", "debug", 1);
  }
  const std::string preload = preload_with_shim_first(shim, std::getenv("LD_PRELOAD"));
  setenv("LD_PRELOAD", preload.c_str(), 1);

  const std::string& command = args[i];
  bool found_not_executable = false;
  const std::string resolved = resolve_command(command, found_not_executable);
  if (resolved.empty()) {
    (void)std::fprintf(stderr, "tcptune run: %s: %s\n", command.c_str(),
                       found_not_executable ? "permission denied" : "command not found");
    return found_not_executable ? 126 : 127;
  }
  for (const std::string& reason : preload_obstacles(resolved)) {
    (void)std::fprintf(stderr, "tcptune: warning: %s; it will run untuned\n", reason.c_str());
  }
  std::vector<char*> argv;
  for (std::size_t j = i; j < args.size(); ++j) {
    argv.push_back(const_cast<char*>(args[j].c_str()));
  }
  argv.push_back(nullptr);
  execv(resolved.c_str(), argv.data());
  int error = errno;
  if (error == ENOEXEC) {
    // A script without "#!": run it with /bin/sh, as execvp and the shell do.
    argv.insert(argv.begin(), const_cast<char*>("/bin/sh"));
    argv[1] = const_cast<char*>(resolved.c_str());
    execv("/bin/sh", argv.data());
    error = errno;
  }
  (void)std::fprintf(stderr, "tcptune run: %s: %s\n", command.c_str(), std::strerror(error));
  return error == ENOENT ? 127 : 126;
}

}  // namespace tcptune::cli
