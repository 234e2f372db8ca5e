#include "service_program.hpp"

#include <unistd.h>

#include <array>
#include <cctype>
#include <filesystem>
#include <system_error>

#include "executable_inspector.hpp"
#include "rooted_path.hpp"

namespace tcptune::cli {

namespace fs = std::filesystem;

namespace {

// Where systemd looks for an ExecStart= program given by name (DEFAULT_PATH, with /sbin and
// /bin for systems whose /bin is not /usr/bin).
constexpr std::array<const char*, 6> kSearchPath{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin",
                                                 "/usr/bin",        "/sbin",          "/bin"};

bool is_executable_file(const std::string& path) {
  std::error_code error;
  return fs::is_regular_file(path, error) && ::access(path.c_str(), X_OK) == 0;
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

// systemd-escape's reverse (unit_name_unescape): "-" is "/", "\xHH" a byte.
std::string unescape_unit_name_part(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '-') {
      out += '/';
    } else if (text[i] == '\\' && i + 3 < text.size() && text[i + 1] == 'x' &&
               std::isxdigit(static_cast<unsigned char>(text[i + 2])) != 0 &&
               std::isxdigit(static_cast<unsigned char>(text[i + 3])) != 0) {
      out += static_cast<char>(std::stoi(text.substr(i + 2, 2), nullptr, 16));
      i += 3;
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace

bool expand_name_specifiers(const ServiceUnitName& unit, std::string& text) {
  const std::string stem = unit.name.substr(0, unit.name.rfind('.'));
  const std::string prefix = prefix_of(unit.name);
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 1 >= text.size()) {
      return false;
    }
    const char specifier = text[++i];
    switch (specifier) {
      case '%': out += '%'; break;
      case 'n': out += unit.name; break;
      case 'N': out += stem; break;
      case 'p': out += prefix; break;
      case 'P': out += unescape_unit_name_part(prefix); break;
      case 'j': out += prefix.substr(prefix.rfind('-') + 1); break;
      case 'J': out += unescape_unit_name_part(prefix.substr(prefix.rfind('-') + 1)); break;
      case 'i':
      case 'I':
        if (!unit.is_instance) {
          return false;
        }
        out += specifier == 'i' ? unit.instance : unescape_unit_name_part(unit.instance);
        break;
      default: return false;
    }
  }
  text = out;
  return true;
}

ServiceProgram inspect_service_program(const std::string& root, const ServiceUnitName& unit,
                                       const ExecCommand& command) {
  ServiceProgram checked;
  checked.program = command.program;
  std::string program = command.program;
  if (!expand_name_specifiers(unit, program)) {
    checked.note = "its path has a specifier that the unit's name does not settle";
    return checked;
  }
  std::string located;
  if (program.starts_with('/')) {
    located = resolve_in_root(root, program);
  } else if (program.find('/') == std::string::npos) {
    for (const char* dir : kSearchPath) {
      if (const std::string candidate = resolve_in_root(root, std::string(dir) + "/" + program);
          is_executable_file(candidate)) {
        located = candidate;
        break;
      }
    }
  }
  if (located.empty() || !is_executable_file(located)) {
    checked.note = root.empty() ? "not found" : "not found under " + root;
    return checked;
  }
  checked.found = true;
  const PreloadObstacles obstacles = preload_obstacles(located, root);
  checked.bypasses_loader = obstacles.bypasses_loader;
  for (std::string reason : obstacles.reasons) {
    replace_all(reason, located, program);  // as the service sees it
    checked.reasons.push_back(std::move(reason));
  }
  return checked;
}

}  // namespace tcptune::cli
