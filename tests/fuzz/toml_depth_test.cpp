// The nesting bound in front of toml++ (kMaxTomlDepth, toml_input_guard.hpp): every way to nest
// is accepted at the limit and refused one level past it with the position of that level, and
// the deepest accepted inputs fit the private stack the policy is parsed on with a wide margin.
// Past the limit toml++ 3.3's recursion has no bound: 150,000 dotted key parts crashed every
// program under the shim before main.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "tcptune/config/policy_loader.hpp"
#include "tcptune/config/toml_input_guard.hpp"

namespace tcptune::config {
namespace {

constexpr int kMax = static_cast<int>(kMaxTomlDepth);

std::string repeat(std::string_view text, int times) {
  std::string out;
  for (int i = 0; i < times; ++i) {
    out += text;
  }
  return out;
}

// "a.a.a": `parts` key parts.
std::string dotted(int parts) {
  return "a" + repeat(".a", parts - 1);
}

// One shape of nesting, `levels` deep by the guard's count.
struct Shape {
  const char* name;
  std::string (*text)(int levels);
  const char* past_limit;  // the start of the message one level past it, after the source name
};

const Shape shapes[] = {
    {"DottedKey", [](int levels) { return dotted(levels) + " = 1\n"; },
     "1:129: nested deeper than 64 levels at this key part"},
    {"QuotedDottedKey", [](int levels) { return "'a'" + repeat(" . \"a\"", levels - 1) + " = 1\n"; },
     "1:385: nested deeper than 64 levels at this key part"},
    {"TableHeader", [](int levels) { return "[" + dotted(levels) + "]\n"; },
     "1:130: nested deeper than 64 levels at this table header part"},
    {"KeyBelowHeader",
     [](int levels) { return "[" + dotted(levels / 2) + "]\n" + dotted(levels - levels / 2) + " = 1\n"; },
     "2:65: nested deeper than 64 levels at this key part"},
    {"ArraysOfTables",
     [](int levels) {
       std::string text;
       for (int parts = 1; parts < levels; ++parts) {
         text += "[[" + dotted(parts) + "]]\nk = 1\n";  // k one level below the header
       }
       return text;
     },
     "128:1: nested deeper than 64 levels at this key part"},
    {"Arrays", [](int levels) { return "a = " + repeat("[", levels - 1) + repeat("]", levels - 1) + "\n"; },
     "1:68: nested deeper than 64 levels at this array"},
    {"InlineTables",
     [](int levels) {
       // key, then per inline table its level and its key's: levels = 1 + 2n (+1 for an odd count)
       const int tables = (levels - 1) / 2;
       const std::string innermost = (levels - 1) % 2 == 1 ? "[]" : "1";
       return "a = " + repeat("{ a = ", tables) + innermost + repeat(" }", tables) + "\n";
     },
     "1:193: nested deeper than 64 levels at this key part"},
    {"DottedKeysInInlineTables",
     [](int levels) {
       // key a.a, then per inline table one level and two key parts
       const int tables = (levels - 2) / 3;
       const std::string innermost = repeat("[", (levels - 2) % 3) + "1" + repeat("]", (levels - 2) % 3);
       return "a.a = " + repeat("{ a.a = ", tables) + innermost + repeat(" }", tables) + "\n";
     },
     "1:171: nested deeper than 64 levels at this key part"},
    {"ArraysOfInlineTables",
     [](int levels) {
       // key, then per element an array, an inline table and its key
       const int rounds = (levels - 1) / 3;
       const std::string innermost = repeat("[", (levels - 1) % 3) + repeat("]", (levels - 1) % 3);
       return "a = " + repeat("[{a = ", rounds) + (innermost.empty() ? "1" : innermost) + repeat("}]", rounds) + "\n";
     },
     "1:131: nested deeper than 64 levels at this array"},
};

bool is_depth_error(const PolicyError& error) {
  return error.message.find("nested deeper than") != std::string::npos;
}

TEST(TomlDepth, EachShapeLoadsAtTheLimitAndIsRefusedPastIt) {
  for (const Shape& shape : shapes) {
    const std::string at_limit = shape.text(kMax);
    const auto accepted = find_toml_input_problem(at_limit);
    EXPECT_FALSE(accepted.has_value()) << shape.name << ": " << accepted->message;
    const LoadResult loaded = load_policy_text(at_limit, "deep.toml");
    // toml++ parses it; the policy's reader then refuses the unknown key 'a' (or "k").
    ASSERT_FALSE(loaded.ok()) << shape.name;
    EXPECT_FALSE(is_depth_error(loaded.error())) << shape.name << ": " << loaded.error().to_string();
    EXPECT_EQ(loaded.error().message.find("invalid TOML"), std::string::npos)
        << shape.name << ": " << loaded.error().to_string();

    const LoadResult refused = load_policy_text(shape.text(kMax + 1), "deep.toml");
    ASSERT_FALSE(refused.ok()) << shape.name;
    EXPECT_EQ(refused.error().to_string(), std::string("deep.toml:") + shape.past_limit +
                                               " (table header parts, dotted key parts, arrays and inline tables "
                                               "count together)")
        << shape.name;
  }
}

// The inputs of the report that crashed every program (SIGSEGV in update_region_ends): refused
// at the 65th level, whatever follows.
TEST(TomlDepth, ReportedCrashesAreRefused) {
  const LoadResult key = load_policy_text(dotted(149'999) + ".b = 1\n", "key.toml");
  ASSERT_FALSE(key.ok());
  EXPECT_TRUE(key.error().to_string().starts_with("key.toml:1:129: nested deeper than 64 levels at this key part "))
      << key.error().to_string();
  const LoadResult header = load_policy_text("[" + dotted(199'999) + ".b]\n", "header.toml");
  ASSERT_FALSE(header.ok());
  EXPECT_TRUE(header.error().to_string().starts_with(
      "header.toml:1:130: nested deeper than 64 levels at this table header part "))
      << header.error().to_string();
}

TEST(TomlDepth, PolicySchemaNestsWellBelowTheLimit) {
  const LoadResult loaded = load_policy_text(
      "version = 1\n[[rule]]\nmatch = { port = [1, \"8000-8100\"] }\n"
      "sockopt = [ { level = \"IPPROTO_TCP\", name = \"TCP_MAXSEG\", value = 1400 } ]\n"
      "keep_warm = { protocol = \"lines\" }\n",
      "p.toml");
  EXPECT_TRUE(loaded.ok()) << loaded.error().to_string();
}

// The deepest and widest inputs the guard lets through, on the 1 MiB private stack: what each
// touched is printed, and must stay under half of the stack, the fuzz target's bound too (a
// release build needs 76 KiB at most, ASan builds 212 KiB).
TEST(TomlDepth, WorstCasesFitThePrivateStack) {
  struct Case {
    const char* name;
    std::string text;
  };
  std::string wide;  // an array of tables at every level, each with 1500 keys (about 700 KB)
  for (int parts = 1; parts < kMax; ++parts) {
    wide += "[[" + dotted(parts) + "]]\n";
    for (int key = 0; key < 1500; ++key) {
      wide += "k" + std::to_string(key) + " = 1\n";
    }
  }
  const Case cases[] = {
      {"63 nested arrays", "a = " + repeat("[", kMax - 1) + repeat("]", kMax - 1) + "\n"},
      {"63 nested arrays, unfinished", "a = " + repeat("[", kMax - 1) + "x\n"},
      {"31 nested inline tables",
       "a = " + repeat("{ a = ", (kMax - 1) / 2) + "[]" + repeat(" }", (kMax - 1) / 2) + "\n"},
      {"21 arrays of inline tables",
       "a = " + repeat("[{a = ", (kMax - 1) / 3) + "1" + repeat("}]", (kMax - 1) / 3) + "\n"},
      {"64 key parts", dotted(kMax) + " = 1\n"},
      {"64 header parts", "[" + dotted(kMax) + "]\n"},
      {"63 levels of arrays of tables, 1500 keys each", wide},
  };
  ASSERT_LE(wide.size(), kMaxPolicyBytes);
  for (const Case& input : cases) {
    std::size_t used = 0;
    const LoadResult loaded = load_policy_text(input.text, "deep.toml", &used);
    ASSERT_FALSE(loaded.ok()) << input.name;
    EXPECT_FALSE(is_depth_error(loaded.error())) << input.name << ": " << loaded.error().to_string();
    std::printf("%-48s %7zu bytes of the private stack\n", input.name, used);
    EXPECT_GT(used, 0U) << input.name;
    EXPECT_LE(used, kPolicyStackBytes / 2) << input.name;
  }
}

}  // namespace
}  // namespace tcptune::config
