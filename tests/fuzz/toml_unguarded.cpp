// toml++ 3.3 alone, without the guard in front of it (docs/architecture.md), to see what toml++
// itself does with an input. As a libFuzzer target (fuzz_toml_unguarded) it finds toml++'s
// asserts and undefined behaviour again within seconds; as a program (toml_unguarded FILE...) it
// prints toml++'s verdict on each file in the build at hand. Neither runs in CI: on the
// regression inputs both fail by design, the fuzzer and a debug build of the program alike.
#include <toml++/toml.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)toml::parse(std::string_view(reinterpret_cast<const char*>(data), size), std::string_view("fuzz.toml"));
  return 0;
}

#ifndef TCPTUNE_FUZZ_ENGINE
int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::ifstream file(argv[i], std::ios::binary);
    std::stringstream text;
    text << file.rdbuf();
    const toml::parse_result parsed = toml::parse(text.str(), std::string_view(argv[i]));
    if (parsed) {
      (void)std::printf("%s: parsed\n", argv[i]);
      continue;
    }
    std::string description(parsed.error().description());
    for (char& c : description) {
      c = c == '\n' ? ' ' : c;  // one line per file
    }
    (void)std::printf("%s:%u:%u: %s\n", argv[i], parsed.error().source().begin.line,
                      parsed.error().source().begin.column, description.c_str());
  }
  return 0;
}
#endif
