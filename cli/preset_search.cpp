#include "preset_search.hpp"

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace tcptune::cli {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kSuffix = ".toml";

bool ends_with_suffix(const std::string& text) {
  return text.size() > kSuffix.size() && text.compare(text.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) {
    out += (out.empty() ? "" : ", ") + name;
  }
  return out;
}

}  // namespace

std::string installed_presets_directory() {
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  if (error) {
    return {};
  }
  return fs::weakly_canonical(self.parent_path() / ".." / "share" / "tcptune" / "presets", error).string();
}

std::vector<std::string> preset_names(const std::string& directory) {
  std::vector<std::string> names;
  std::error_code error;
  for (fs::directory_iterator entry(directory, error), end; !error && entry != end; entry.increment(error)) {
    const std::string file = entry->path().filename().string();
    if (ends_with_suffix(file) && file.front() != '.' && entry->is_regular_file(error)) {
      names.push_back(file.substr(0, file.size() - kSuffix.size()));
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

PresetLookup find_preset(const std::string& directory, const std::string& name) {
  const std::string base = ends_with_suffix(name) ? name.substr(0, name.size() - kSuffix.size()) : name;
  if (base.empty() || base.front() == '.' || base.find('/') != std::string::npos) {
    return {{}, "'" + name + "' is not a preset name (a file is given with --policy FILE)"};
  }
  if (directory.empty()) {
    return {{}, "cannot find the presets directory (this tcptune's path is unknown); give the file with --policy FILE"};
  }
  std::error_code error;
  const fs::path file = fs::path(directory) / (base + std::string(kSuffix));
  if (fs::is_regular_file(file, error)) {
    return {file.string(), {}};
  }
  if (!fs::is_directory(directory, error)) {
    return {{},
            "no presets directory " + directory +
                " (tcptune looks in PREFIX/share/tcptune/presets beside "
                "PREFIX/bin/tcptune); give the file with --policy FILE"};
  }
  const std::vector<std::string> names = preset_names(directory);
  return {{},
          "no preset '" + base + "' in " + directory + " (" +
              (names.empty() ? std::string("it has none") : "the presets: " + joined(names)) + ")"};
}

}  // namespace tcptune::cli
