#include "unit_lookup.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <system_error>

#include "rooted_path.hpp"

namespace tcptune::cli {

namespace fs = std::filesystem;

const std::vector<std::string>& system_unit_paths() {
  static const std::vector<std::string> paths{
      "/etc/systemd/system.control",   "/run/systemd/system.control",  "/run/systemd/transient",
      "/run/systemd/generator.early",  "/etc/systemd/system",          "/etc/systemd/system.attached",
      "/run/systemd/system",           "/run/systemd/system.attached", "/run/systemd/generator",
      "/usr/local/lib/systemd/system", "/usr/lib/systemd/system",      "/lib/systemd/system",
      "/run/systemd/generator.late"};
  return paths;
}

namespace {

constexpr int kMaxAliasLinks = 8;

bool exists(const std::string& path) {
  std::error_code error;
  return fs::exists(fs::symlink_status(path, error));
}

// A unit file `name` in one search directory: where it leads (following links inside the
// root), whether to /dev/null, and the name of what it links to.
struct Found {
  std::string file;
  bool masked = false;
  std::string target_name;
};

Found look_in(const std::string& root, const std::string& dir, const std::string& name) {
  Found found;
  std::string path = dir + "/" + name;
  for (int hop = 0; hop < kMaxAliasLinks; ++hop) {
    std::error_code error;
    const std::string here = under_root(root, path);
    if (!fs::is_symlink(fs::symlink_status(here, error))) {
      break;
    }
    const fs::path target = fs::read_symlink(here, error);
    if (error) {
      break;
    }
    path = target.is_absolute() ? target.string() : (fs::path(path).parent_path() / target).string();
    if (path == "/dev/null") {
      found.masked = true;
      return found;
    }
    if (target.filename() != name) {
      found.target_name = target.filename().string();
    }
  }
  found.file = resolve_in_root(root, path);
  return found;
}

// systemd's unit_file_find_dirs: NAME.d, then the template's (for an instance), then each
// dash prefix ("a-b-c.service": a-b-.service.d, a-.service.d), most specific first.
void find_dropin_dirs(const std::string& root, const std::string& dir, const std::string& name,
                      std::vector<std::string>& dirs) {
  const std::string here = resolve_in_root(root, dir + "/" + name + ".d");
  std::error_code error;
  if (fs::is_directory(here, error)) {
    dirs.push_back(here);
  }
  if (is_instance_name(name)) {
    find_dropin_dirs(root, dir, template_of(name), dirs);
  }
  std::string prefix = prefix_of(name);
  bool chopped = false;
  while (true) {
    const std::size_t dash = prefix.rfind('-');
    if (dash == std::string::npos || dash == 0) {
      return;
    }
    if (dash + 1 != prefix.size() || chopped) {
      prefix.resize(dash + 1);
      break;
    }
    prefix.resize(dash);  // a trailing dash: chop it once and look again
    chopped = true;
  }
  const std::string instance = instance_of(name);
  const std::string suffix = name.substr(name.rfind('.'));
  find_dropin_dirs(root, dir, prefix + (is_instance_name(name) ? "@" + instance : "") + suffix, dirs);
}

}  // namespace

UnitFiles find_unit_files(const std::string& root, const ServiceUnitName& unit) {
  UnitFiles files;
  std::vector<std::string> names{unit.name};
  if (unit.is_instance) {
    names.push_back(unit.template_name());
  }
  for (const std::string& name : names) {
    for (const std::string& dir : system_unit_paths()) {
      if (!exists(under_root(root, std::string(dir).append("/").append(name)))) {
        continue;
      }
      const Found found = look_in(root, dir, name);
      files.masked = found.masked;
      files.unit_file = found.file;
      if (!found.target_name.empty() && found.target_name != name) {
        files.real_name = found.target_name;
      }
      break;
    }
    if (!files.unit_file.empty() || files.masked) {
      break;
    }
  }
  // The drop-in directories of every name the unit has, then the top-level "service.d".
  std::vector<std::string> dirs;
  std::vector<std::string> all_names{unit.name};
  if (!files.real_name.empty()) {
    all_names.insert(all_names.begin(), files.real_name);
  }
  for (const std::string& name : all_names) {
    for (const std::string& dir : system_unit_paths()) {
      find_dropin_dirs(root, dir, name, dirs);
    }
  }
  for (const std::string& dir : system_unit_paths()) {
    const std::string here = resolve_in_root(root, dir + "/service.d");
    std::error_code error;
    if (fs::is_directory(here, error)) {
      dirs.push_back(here);
    }
  }
  // The same directory reached twice (/lib is /usr/lib) counts once.
  std::vector<std::string> unique;
  for (const std::string& dir : dirs) {
    if (std::find(unique.begin(), unique.end(), dir) == unique.end()) {
      unique.push_back(dir);
    }
  }
  std::map<std::string, std::string> by_name;  // sorted as systemd sorts them; the first found wins
  for (const std::string& dir : unique) {
    std::error_code error;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
      const std::string file_name = entry.path().filename().string();
      if (!file_name.ends_with(".conf") || by_name.contains(file_name)) {
        continue;
      }
      std::error_code type_error;
      if (!entry.is_regular_file(type_error) && !entry.is_symlink(type_error)) {
        continue;
      }
      by_name.emplace(file_name, entry.path().string());
    }
  }
  for (const auto& [file_name, path] : by_name) {
    std::error_code error;
    if (!fs::is_symlink(fs::symlink_status(path, error))) {
      files.dropins.push_back(path);
      continue;
    }
    const fs::path target = fs::read_symlink(path, error);
    if (error || target == "/dev/null") {
      continue;  // masks the drop-ins of that name further down the path
    }
    // A link inside the root leads where it leads there.
    files.dropins.push_back(target.is_absolute() ? resolve_in_root(root, target.string())
                                                 : (fs::path(path).parent_path() / target).string());
  }
  return files;
}

}  // namespace tcptune::cli
