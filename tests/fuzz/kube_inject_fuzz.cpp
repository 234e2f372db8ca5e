// Fuzz target: `tcptune kube-inject` over arbitrary bytes as a manifest stream (cli/manifest_*,
// cli/yaml_*, cli/text_edits.cpp). The input is refused with a ManifestError, or else:
//   - the injected stream is YAML that libyaml reads to its end;
//   - injecting it again gives it back unchanged (twice equals once);
//   - uninjecting it gives back the input with any earlier injection taken out (what --uninject
//     of the input gives), byte for byte, and so the same parse; for an input that holds no
//     injection, that is the input itself; and that is YAML that libyaml reads too.
// Any other exception (an edit computed out of range, an overlap) is a finding. The size picks
// the options: with a policy ConfigMap or without.
#include <yaml.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "manifest_transform.hpp"
#include "yaml_outline.hpp"

using namespace tcptune::cli;

namespace {

// What a YAML stream means, event by event: kinds, anchors, tags, scalar values, and whether a
// scalar is plain (a plain "true" is a boolean, a quoted one a string). Layout and the style of
// collections are left out. nullopt: libyaml refuses the text.
std::optional<std::string> meaning(std::string_view text) {
  // A UTF-8 byte order mark, which the manifests keep, is not given to libyaml: told the
  // encoding, it reads the mark as a character of the first line (as read_yaml_outline does).
  if (text.starts_with("\xEF\xBB\xBF")) {
    text.remove_prefix(3);
  }
  yaml_parser_t parser;
  if (yaml_parser_initialize(&parser) == 0) {
    std::abort();
  }
  const char* const input = text.data() != nullptr ? text.data() : "";  // libyaml asserts non-null
  yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(input), text.size());
  yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING);
  std::string out;
  const auto text_of = [](const yaml_char_t* value) {
    return value == nullptr ? std::string("-") : std::string(reinterpret_cast<const char*>(value));
  };
  bool done = false;
  bool refused = false;
  while (!done) {
    yaml_event_t event;
    if (yaml_parser_parse(&parser, &event) == 0) {
      refused = true;
      break;
    }
    out += std::to_string(static_cast<int>(event.type));
    switch (event.type) {
      case YAML_SCALAR_EVENT:
        out += " " + text_of(event.data.scalar.anchor) + " " + text_of(event.data.scalar.tag) +
               (event.data.scalar.style == YAML_PLAIN_SCALAR_STYLE ? " plain " : " quoted ") +
               std::to_string(event.data.scalar.length) + ":" +
               std::string(reinterpret_cast<const char*>(event.data.scalar.value), event.data.scalar.length);
        break;
      case YAML_ALIAS_EVENT: out += " " + text_of(event.data.alias.anchor); break;
      case YAML_SEQUENCE_START_EVENT:
        out += " " + text_of(event.data.sequence_start.anchor) + " " + text_of(event.data.sequence_start.tag);
        break;
      case YAML_MAPPING_START_EVENT:
        out += " " + text_of(event.data.mapping_start.anchor) + " " + text_of(event.data.mapping_start.tag);
        break;
      case YAML_STREAM_END_EVENT: done = true; break;
      default: break;
    }
    out += "\n";
    yaml_event_delete(&event);
  }
  yaml_parser_delete(&parser);
  return refused ? std::nullopt : std::optional<std::string>(std::move(out));
}

[[noreturn]] void fail(const char* invariant, std::string_view output) {
  (void)std::fprintf(stderr, "kube_inject_fuzz: %s\n--- output (%zu bytes)\n%.*s\n---\n", invariant, output.size(),
                     static_cast<int>(output.size()), output.data());
  std::abort();
}

}  // namespace

// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  InjectOptions options;
  options.image = "registry.example/tcptune-init:0.1.0";
  if (size % 2 == 1) {
    options.policy_configmap = "tcptune-policy";
  }
  std::vector<std::string> notes;
  std::string injected;
  std::string plain;
  try {
    injected = transform_manifests(input, false, options, notes);
    plain = transform_manifests(input, true, options, notes);
  } catch (const ManifestError&) {
    return 0;  // refused, with one line saying where and why
  }
  // From here on the input was accepted: nothing may be refused any more.
  const std::optional<std::string> injected_meaning = meaning(injected);
  if (!injected_meaning.has_value()) {
    fail("the injected stream is not YAML that libyaml reads", injected);
  }
  std::string again;
  std::string back;
  try {
    again = transform_manifests(injected, false, options, notes);
    back = transform_manifests(injected, true, options, notes);
  } catch (const ManifestError& error) {
    (void)std::fprintf(stderr, "kube_inject_fuzz: %s\n", error.what());
    fail("the injected stream is refused when injected again or uninjected", injected);
  }
  if (again != injected) {
    fail("injecting twice differs from injecting once", again);
  }
  // Byte for byte, so also the same parse (an input without injection: plain is the input).
  if (back != plain) {
    fail("uninjecting the injected stream does not give back the uninjected input", back);
  }
  if (!meaning(plain).has_value()) {
    fail("the uninjected stream is not YAML that libyaml reads", plain);
  }
  return 0;
}
