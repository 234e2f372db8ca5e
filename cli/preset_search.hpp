// `--preset NAME`: a policy of config/presets found by its name, in the presets directory beside
// this tcptune: PREFIX/share/tcptune/presets for PREFIX/bin/tcptune, in an install tree and in the
// build tree alike (the build links build/DIR/share/tcptune/presets to the source's config/presets).
#pragma once

#include <string>
#include <vector>

namespace tcptune::cli {

// BINDIR/../share/tcptune/presets, BINDIR holding this tcptune (/proc/self/exe); empty if unknown.
std::string installed_presets_directory();

// The names of the presets in `directory` (FILE.toml gives FILE), sorted.
std::vector<std::string> preset_names(const std::string& directory);

struct PresetLookup {
  std::string path;     // the preset's file, when found
  std::string problem;  // otherwise one line: why, and which names there are
};

// NAME (or NAME.toml) in `directory`. A name is never a path: "a/b" and ".." are refused.
PresetLookup find_preset(const std::string& directory, const std::string& name);

}  // namespace tcptune::cli
