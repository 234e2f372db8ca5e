// `tcptune install DIR`: copies this tcptune and the shim into DIR, flat, as kube-inject's init
// container needs them (the image is FROM scratch, so there is no cp to do it). Where the shim is
// beside tcptune (the init image's /tcptune) the whole directory is copied; from the installed
// layout (bin/tcptune, lib/<multiarch>/tcptune/) or the build tree, tcptune, libtcptune.so and
// the core it loads from beside itself.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "commands.hpp"
#include "program_launch.hpp"

namespace tcptune::cli {

namespace {

namespace fs = std::filesystem;

// The first stage loads DIR/libtcptune.so's core as DIR/libtcptune-core.so (shim/stage/core_loader.c).
fs::path core_beside(const fs::path& shim) {
  return shim.parent_path() / (shim.stem().string() + "-core.so");
}

bool copy_entry(const fs::path& from, const fs::path& to) {
  std::error_code error;
  // Permissions come along (copy_file keeps the mode): tcptune stays executable.
  fs::copy(from, to,
           fs::copy_options::recursive | fs::copy_options::overwrite_existing | fs::copy_options::copy_symlinks, error);
  if (error) {
    (void)std::fprintf(stderr, "tcptune install: cannot copy %s to %s: %s\n", from.c_str(), to.c_str(),
                       error.message().c_str());
    return false;
  }
  return true;
}

}  // namespace

int install_command(const InstallOptions& options) {
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  if (error) {
    (void)std::fprintf(stderr, "tcptune install: cannot find this tcptune (/proc/self/exe): %s\n",
                       error.message().c_str());
    return 1;
  }
  const fs::path source = self.parent_path();
  std::string problem;
  const std::string shim = locate_shim(problem);
  const bool flat = shim.empty() || fs::equivalent(fs::path(shim).parent_path(), source, error);

  std::vector<fs::path> sources;
  if (flat) {
    for (const fs::directory_entry& entry : fs::directory_iterator(source, error)) {
      sources.push_back(entry.path());
    }
    if (error) {
      (void)std::fprintf(stderr, "tcptune install: cannot read %s: %s\n", source.c_str(), error.message().c_str());
      return 1;
    }
  } else {
    const fs::path core = core_beside(shim);
    if (!fs::is_regular_file(core, error)) {
      (void)std::fprintf(stderr, "tcptune install: %s has no %s beside it\n", shim.c_str(), core.filename().c_str());
      return 1;
    }
    sources = {self, fs::path(shim), core};
  }

  const fs::path destination(options.destination);
  fs::create_directories(destination, error);
  if (error) {
    (void)std::fprintf(stderr, "tcptune install: cannot create %s: %s\n", destination.c_str(), error.message().c_str());
    return 1;
  }
  for (const fs::path& from : sources) {
    if (!copy_entry(from, destination / from.filename())) {
      return 1;
    }
  }
  if (flat) {
    (void)std::printf("tcptune install: copied %zu entries of %s into %s\n", sources.size(), source.c_str(),
                      destination.c_str());
  } else {
    (void)std::printf("tcptune install: copied %s, %s and %s into %s\n", self.c_str(), shim.c_str(), sources[2].c_str(),
                      destination.c_str());
  }
  return 0;
}

}  // namespace tcptune::cli
