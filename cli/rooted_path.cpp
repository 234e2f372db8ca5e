#include "rooted_path.hpp"

#include <filesystem>
#include <system_error>
#include <vector>

namespace tcptune::cli {

namespace fs = std::filesystem;

namespace {

constexpr int kMaxLinks = 40;  // the kernel's MAXSYMLINKS

bool is_this_system(const std::string& root) {
  return root.empty() || root == "/";
}

std::string joined(const std::vector<std::string>& parts) {
  std::string path;
  for (const std::string& part : parts) {
    path += "/" + part;
  }
  return path.empty() ? "/" : path;
}

// Queues the components of `path` so that the first is walked next.
void queue_components(std::vector<std::string>& pending, const fs::path& path) {
  std::vector<std::string> parts;
  for (const fs::path& part : path.relative_path()) {
    parts.push_back(part.string());
  }
  pending.insert(pending.end(), parts.rbegin(), parts.rend());
}

}  // namespace

std::string under_root(const std::string& root, const std::string& path) {
  if (is_this_system(root)) {
    return path;
  }
  std::string base = root;
  while (base.size() > 1 && base.back() == '/') {
    base.pop_back();
  }
  return base + (path.starts_with('/') ? path : "/" + path);
}

std::string resolve_in_root(const std::string& root, const std::string& path) {
  std::vector<std::string> pending;  // components still to walk, the next one last
  std::vector<std::string> done;     // those walked: a path of the root, never above it
  queue_components(pending, path);
  int links = 0;
  bool following = true;
  while (!pending.empty()) {
    std::string name = std::move(pending.back());
    pending.pop_back();
    if (name.empty() || name == ".") {
      continue;
    }
    if (name == "..") {
      if (!done.empty()) {
        done.pop_back();
      }
      continue;
    }
    done.push_back(std::move(name));
    if (!following) {
      continue;
    }
    const std::string here = under_root(root, joined(done));
    std::error_code error;
    const fs::file_status status = fs::symlink_status(here, error);
    if (error || !fs::exists(status)) {
      following = false;  // nothing there: the rest cannot be links
      continue;
    }
    if (!fs::is_symlink(status)) {
      continue;
    }
    const fs::path target = fs::read_symlink(here, error);
    if (error || ++links > kMaxLinks) {
      following = false;
      continue;
    }
    done.pop_back();
    if (target.is_absolute()) {
      done.clear();
    }
    queue_components(pending, target.is_absolute() ? target : fs::path("/") / target);
  }
  return under_root(root, joined(done));
}

}  // namespace tcptune::cli
