// `tcptune kube-inject`: Kubernetes manifests in, the same manifests with tcptune added (or, with
// --uninject, taken out) on stdout. No cluster: a text transform, as `istioctl kube-inject` and
// `linkerd inject --manual` are. Nothing is written when the input is refused.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "commands.hpp"
#include "manifest_transform.hpp"
#include "yaml_outline.hpp"

namespace tcptune::cli {

namespace {

bool read_all(const std::string& file, std::string& text) {
  if (file == "-") {
    std::ostringstream buffer;
    buffer << std::cin.rdbuf();
    text = buffer.str();
    return !std::cin.bad();
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    return false;
  }
  text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

bool write_all(const std::string& file, const std::string& text) {
  if (file == "-") {
    return std::fwrite(text.data(), 1, text.size(), stdout) == text.size() && std::fflush(stdout) == 0;
  }
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  return !out.fail();
}

}  // namespace

int kube_inject_command(const KubeInjectOptions& options) {
  const std::string where = options.file == "-" ? "<stdin>" : options.file;
  std::string input;
  if (!read_all(options.file, input)) {
    (void)std::fprintf(stderr, "tcptune kube-inject: cannot read %s: %s\n", where.c_str(), std::strerror(errno));
    return 1;
  }
  InjectOptions inject;
  inject.image = options.image;
  inject.policy_configmap = options.policy_configmap;
  inject.policy_key = options.policy_key;
  std::vector<std::string> notes;
  std::string output;
  try {
    output = transform_manifests(input, options.uninject, inject, notes);
  } catch (const ManifestError& error) {
    (void)std::fprintf(stderr, "tcptune kube-inject: %s: %s\n", where.c_str(), error.what());
    return 1;
  }
  if (!options.quiet) {
    for (const std::string& note : notes) {
      (void)std::fprintf(stderr, "tcptune kube-inject: %s: %s\n", where.c_str(), note.c_str());
    }
  }
  if (!write_all(options.output, output)) {
    (void)std::fprintf(stderr, "tcptune kube-inject: cannot write %s: %s\n",
                       options.output == "-" ? "<stdout>" : options.output.c_str(), std::strerror(errno));
    return 1;
  }
  return 0;
}

}  // namespace tcptune::cli
