// `tcptune install DIR`: copies the directory holding this tcptune (in the init image, /tcptune:
// tcptune and the shim's files) into DIR. kube-inject's init container runs it to fill the pod's
// emptyDir: the image is FROM scratch, so there is no cp to do it.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <system_error>

#include "commands.hpp"

namespace tcptune::cli {

int install_command(const InstallOptions& options) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  if (error) {
    (void)std::fprintf(stderr, "tcptune install: cannot find this tcptune (/proc/self/exe): %s\n",
                       error.message().c_str());
    return 1;
  }
  const fs::path source = self.parent_path();
  const fs::path destination(options.destination);
  fs::create_directories(destination, error);
  if (error) {
    (void)std::fprintf(stderr, "tcptune install: cannot create %s: %s\n", destination.c_str(), error.message().c_str());
    return 1;
  }
  int copied = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(source, error)) {
    const fs::path target = destination / entry.path().filename();
    // Permissions come along (copy_file keeps the mode): tcptune stays executable.
    fs::copy(entry.path(), target,
             fs::copy_options::recursive | fs::copy_options::overwrite_existing | fs::copy_options::copy_symlinks,
             error);
    if (error) {
      (void)std::fprintf(stderr, "tcptune install: cannot copy %s to %s: %s\n", entry.path().c_str(), target.c_str(),
                         error.message().c_str());
      return 1;
    }
    ++copied;
  }
  if (error) {
    (void)std::fprintf(stderr, "tcptune install: cannot read %s: %s\n", source.c_str(), error.message().c_str());
    return 1;
  }
  (void)std::printf("tcptune install: copied %d entries of %s into %s\n", copied, source.c_str(), destination.c_str());
  return 0;
}

}  // namespace tcptune::cli
