// `tcptune disable UNIT`: removes the drop-in `tcptune enable` wrote, and the directory when
// enable made it and nothing else is in it. A file of that name tcptune did not write stays.
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "commands.hpp"
#include "rooted_path.hpp"
#include "service_dropin.hpp"
#include "service_unit_name.hpp"
#include "systemctl_steps.hpp"
#include "tcptune/config/escape.hpp"
#include "text_file_io.hpp"
#include "unit_lookup.hpp"

namespace tcptune::cli {

namespace {

namespace fs = std::filesystem;

std::string shown(const std::string& text) {
  return config::escape_for_display(text, false);
}

}  // namespace

int disable_command(const DisableOptions& options) {
  std::string problem;
  const std::optional<ServiceUnitName> given = parse_service_unit_name(options.unit, problem);
  if (!given.has_value()) {
    (void)std::fprintf(stderr, "tcptune disable: %s\n", shown(problem).c_str());
    return 1;
  }
  const std::string root = options.root == "/" ? std::string() : options.root;
  std::error_code error;
  if (!root.empty() && !fs::is_directory(root, error)) {
    (void)std::fprintf(stderr, "tcptune disable: --root %s is not a directory\n", shown(options.root).c_str());
    return 1;
  }
  // enable wrote an alias's drop-in under the name it is an alias of.
  ServiceUnitName unit = *given;
  if (const UnitFiles files = find_unit_files(root, *given); !files.real_name.empty()) {
    if (std::optional<ServiceUnitName> real = parse_service_unit_name(files.real_name, problem)) {
      unit = std::move(*real);
    }
  }
  const std::string directory = under_root(root, std::string(kAdminUnitPath) + "/" + unit.name + ".d");
  const std::string path = directory + "/" + kDropinFileName;
  std::string read_error;
  const std::optional<std::string> text = read_text_file(path, read_error);
  if (!text.has_value()) {
    if (read_error == std::generic_category().message(ENOENT)) {
      (void)std::printf("tcptune disable: %s has no drop-in of tcptune enable (%s): nothing to do\n", unit.name.c_str(),
                        shown(path).c_str());
      return 0;
    }
    (void)std::fprintf(stderr, "tcptune disable: cannot read %s: %s\n", shown(path).c_str(), read_error.c_str());
    return 1;
  }
  if (!is_tcptune_dropin(*text)) {
    (void)std::fprintf(stderr, "tcptune disable: %s was not written by tcptune enable: left alone\n",
                       shown(path).c_str());
    return 1;
  }
  if (!fs::remove(path, error) || error) {
    (void)std::fprintf(stderr, "tcptune disable: cannot remove %s: %s\n", shown(path).c_str(), error.message().c_str());
    return 1;
  }
  (void)std::printf("tcptune disable: removed %s\n", shown(path).c_str());
  if (dropin_made_directory(*text)) {
    if (fs::is_empty(directory, error) && !error && fs::remove(directory, error)) {
      (void)std::printf("tcptune disable: removed %s, which tcptune enable made\n", shown(directory).c_str());
    } else {
      (void)std::printf("tcptune disable: kept %s, which tcptune enable made: other files are in it now\n",
                        shown(directory).c_str());
    }
  }
  print_systemctl_steps(stdout, unit, root);
  return 0;
}

}  // namespace tcptune::cli
