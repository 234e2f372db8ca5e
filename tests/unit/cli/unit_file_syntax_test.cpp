// systemd's unit file syntax as tcptune enable reads it: sections, continuations, comments,
// quoting and escapes of Environment= and ExecStart=, resets, the search for drop-ins.
#include "unit_file_syntax.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "environment_file_names.hpp"
#include "exec_command_line.hpp"
#include "rooted_path.hpp"
#include "service_settings.hpp"
#include "service_unit_name.hpp"
#include "unit_lookup.hpp"
#include "unit_words.hpp"

namespace tcptune::cli {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> texts(const UnitWords& split) {
  std::vector<std::string> out;
  for (const UnitWord& word : split.words) {
    out.push_back(word.text);
  }
  return out;
}

TEST(UnitFileSyntax, SectionsAssignmentsAndComments) {
  const UnitFileText parsed = parse_unit_file(
      "\xEF\xBB\xBF# comment\nOutside=ignored\n[Unit]\nDescription = a b \n; other comment\n\n"
      "[Service]\n  ExecStart=/bin/x\r\nEnvironment=\n");
  ASSERT_TRUE(parsed.error.empty()) << parsed.error;
  ASSERT_EQ(parsed.assignments.size(), 3U);
  EXPECT_EQ(parsed.assignments[0].section, "Unit");
  EXPECT_EQ(parsed.assignments[0].key, "Description");
  EXPECT_EQ(parsed.assignments[0].value, "a b");
  EXPECT_EQ(parsed.assignments[1].section, "Service");
  EXPECT_EQ(parsed.assignments[1].value, "/bin/x");
  EXPECT_EQ(parsed.assignments[1].line, 8);
  EXPECT_EQ(parsed.assignments[2].key, "Environment");
  EXPECT_EQ(parsed.assignments[2].value, "");
}

TEST(UnitFileSyntax, BackslashContinuesTheLineAndSkipsCommentsInBetween) {
  const UnitFileText parsed = parse_unit_file(
      "[Service]\nExecStart=/bin/x \\\n  --one \\\n# a comment inside\n; another\n  --two\nKey=a\\\\\nNext=b\n");
  ASSERT_TRUE(parsed.error.empty()) << parsed.error;
  ASSERT_EQ(parsed.assignments.size(), 3U);
  EXPECT_EQ(parsed.assignments[0].value, "/bin/x    --one    --two");
  EXPECT_EQ(parsed.assignments[0].line, 2);
  // An escaped backslash at the end does not continue the line.
  EXPECT_EQ(parsed.assignments[1].value, "a\\\\");
  EXPECT_EQ(parsed.assignments[2].key, "Next");
  // A file ending in a backslash: the line is taken as it is.
  const UnitFileText last = parse_unit_file("[Service]\nA=b \\");
  ASSERT_EQ(last.assignments.size(), 1U);
  EXPECT_EQ(last.assignments[0].value, "b");
}

TEST(UnitFileSyntax, WhatSystemdRefusesIsAnError) {
  EXPECT_NE(parse_unit_file("[Service\nA=b\n").error.find("line 1"), std::string::npos);
  EXPECT_NE(parse_unit_file("[Service]\nno equals sign\n").error.find("missing '='"), std::string::npos);
}

TEST(UnitWords, QuotesAnywhereAndCEscapes) {
  const UnitWords split = split_unit_words(R"(A="b c" "D=e f" G='h "i"' J=k\x41\n X=a"b c"d %i)", false);
  ASSERT_TRUE(split.error.empty()) << split.error;
  EXPECT_EQ(texts(split), (std::vector<std::string>{"A=b c", "D=e f", "G=h \"i\"", "J=kA\n", "X=ab cd", "%i"}));
  // Escapes work inside single quotes too (systemd's rule, not the shell's).
  EXPECT_EQ(texts(split_unit_words(R"('a\tb')", false)), (std::vector<std::string>{"a\tb"}));
  EXPECT_EQ(split.words[0].begin, 0U);
  EXPECT_EQ(split.words[0].end, 7U);
}

TEST(UnitWords, ErrorsStopWhereSystemdStops) {
  const UnitWords unbalanced = split_unit_words("A=1 B=\"2", false);
  EXPECT_EQ(texts(unbalanced), (std::vector<std::string>{"A=1"}));
  EXPECT_NE(unbalanced.error.find("unbalanced"), std::string::npos);
  const UnitWords unknown = split_unit_words("A=1 B=\\q C=3", false);
  EXPECT_EQ(texts(unknown), (std::vector<std::string>{"A=1"}));
  EXPECT_FALSE(unknown.error.empty());
  // ExecStart= keeps an unknown escape as written.
  EXPECT_EQ(texts(split_unit_words("a \\; b", true)), (std::vector<std::string>{"a", "\\;", "b"}));
}

TEST(UnitWords, QuotedWordsSplitBackToThemselves) {
  for (const std::string text : {"plain", "with space", "q\"uo'te", "back\\slash", "tab\tnl\n", "", "50%", "$HOME"}) {
    const std::string quoted = quote_unit_word(text, false);
    const UnitWords split = split_unit_words(quoted, false);
    ASSERT_EQ(split.words.size(), 1U) << quoted;
    EXPECT_EQ(split.words[0].text, text) << quoted;
  }
  EXPECT_EQ(quote_unit_word("/a%b", true), "\"/a%%b\"");
  EXPECT_EQ(quote_unit_word("/a$b", false, true), "\"/a$$b\"");
}

TEST(ServiceSettings, LaterAssignmentsOverrideAndEmptyOnesReset) {
  ServiceSettings settings;
  settings.apply("unit", parse_unit_file("[Service]\nType=notify\nEnvironment=A=1 LD_PRELOAD=/u.so\n"
                                         "Environment=\"B=2 3\"\nExecStart=/bin/a\nExecStart=/bin/b\n"
                                         "EnvironmentFile=-/etc/default/x\n[Install]\nEnvironment=Z=not-service\n"));
  ASSERT_EQ(settings.environment.size(), 3U);
  EXPECT_EQ(settings.environment_entry("B")->value, "2 3");
  EXPECT_EQ(settings.environment_entry("Z"), nullptr);
  EXPECT_EQ(settings.exec_start.size(), 2U);
  settings.apply("dropin", parse_unit_file("[Service]\nEnvironment=LD_PRELOAD=/d.so\nExecStart=\nExecStart=/bin/c\n"
                                           "Type=\nEnvironmentFile=\n"));
  // Replaced where it was, as systemd does.
  EXPECT_EQ(settings.environment[1].name, "LD_PRELOAD");
  EXPECT_EQ(settings.environment[1].value, "/d.so");
  EXPECT_EQ(settings.environment[1].origin.to_string(), "dropin:2");
  ASSERT_EQ(settings.exec_start.size(), 1U);
  EXPECT_EQ(settings.exec_start[0].value, "/bin/c");
  EXPECT_EQ(settings.service_type(), "simple");
  EXPECT_TRUE(settings.environment_files.empty());
  settings.apply("reset", parse_unit_file("[Service]\nEnvironment=\nEnvironment=1BAD=x C=4\n"));
  ASSERT_EQ(settings.environment.size(), 1U);
  EXPECT_EQ(settings.environment[0].name, "C");
  EXPECT_EQ(settings.ignored.size(), 1U);
}

TEST(ExecCommandLine, PrefixesProgramArgumentsAndSemicolons) {
  const ExecCommands parsed = parse_exec_value(R"(-:/usr/bin/a "x y" $VAR %i ; @/bin/b b-name \; ;  +!"/opt/c d/e")");
  ASSERT_TRUE(parsed.error.empty()) << parsed.error;
  ASSERT_EQ(parsed.commands.size(), 3U);
  EXPECT_EQ(parsed.commands[0].prefixes, "-:");
  EXPECT_EQ(parsed.commands[0].program, "/usr/bin/a");
  EXPECT_EQ(parsed.commands[0].arguments, R"("x y" $VAR %i)");
  EXPECT_FALSE(parsed.commands[0].expands_variables());
  EXPECT_TRUE(parsed.commands[1].sets_argv0());
  EXPECT_EQ(parsed.commands[1].arguments, R"(b-name \;)");
  EXPECT_EQ(parsed.commands[2].prefixes, "+!");
  EXPECT_EQ(parsed.commands[2].program, "/opt/c d/e");
  EXPECT_EQ(parsed.commands[2].arguments, "");
  EXPECT_FALSE(parse_exec_value("/bin/a \"unbalanced").error.empty());
}

TEST(ServiceUnitName, ServicesTemplatesInstancesAndWhatIsNotAService) {
  std::string problem;
  const auto plain = parse_service_unit_name("nginx", problem);
  ASSERT_TRUE(plain.has_value()) << problem;
  EXPECT_EQ(plain->name, "nginx.service");
  const auto templ = parse_service_unit_name("getty@.service", problem);
  ASSERT_TRUE(templ.has_value());
  EXPECT_TRUE(templ->is_template);
  EXPECT_EQ(templ->template_name(), "getty@.service");
  const auto instance = parse_service_unit_name("getty@tty1.service", problem);
  ASSERT_TRUE(instance.has_value());
  EXPECT_TRUE(instance->is_instance);
  EXPECT_EQ(instance->instance, "tty1");
  EXPECT_EQ(instance->template_name(), "getty@.service");
  EXPECT_FALSE(parse_service_unit_name("nginx.socket", problem).has_value());
  EXPECT_NE(problem.find("socket unit, not a service"), std::string::npos) << problem;
  EXPECT_FALSE(parse_service_unit_name("a@b@c.service", problem).has_value());
  EXPECT_FALSE(parse_service_unit_name("/etc/systemd/system/x.service", problem).has_value());
  EXPECT_FALSE(parse_service_unit_name("sp ace", problem).has_value());
}

TEST(EnvironmentFileNames, AssignmentsNotValuesOrComments) {
  const std::vector<std::string> names = environment_file_names(
      "# LD_PRELOAD=/commented\nA=1\nexport B=2\n  C = 3\nD=\"multi\nLD_PRELOAD=inside quotes\"\n"
      "E=cont\\\nLD_PRELOAD=continued\n;F=x\nLD_PRELOAD=/real.so\n");
  EXPECT_EQ(names, (std::vector<std::string>{"A", "B", "C", "D", "E", "LD_PRELOAD"}));
}

class TempRoot : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("tcptune-unit-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const std::string& path, const std::string& text) {
    fs::create_directories((root_ / path.substr(1)).parent_path());
    std::ofstream(root_ / path.substr(1)) << text;
  }
  fs::path root_;
};

using RootedPath = TempRoot;

TEST_F(RootedPath, LinksAreFollowedInsideTheRoot) {
  write("/opt/x/bin/prog", "x");
  fs::create_directories(root_ / "usr/bin");
  fs::create_symlink("/opt/x/bin/prog", root_ / "usr/bin/prog");
  fs::create_symlink("../../opt/x", root_ / "usr/bin/rel");
  fs::create_symlink("usr/bin", root_ / "bin");
  EXPECT_EQ(resolve_in_root(root_.string(), "/bin/prog"), (root_ / "opt/x/bin/prog").string());
  EXPECT_EQ(resolve_in_root(root_.string(), "/usr/bin/rel/bin/prog"), (root_ / "opt/x/bin/prog").string());
  EXPECT_EQ(resolve_in_root(root_.string(), "/usr/bin/../../../nothing"), (root_ / "nothing").string());
}

using UnitLookup = TempRoot;

TEST_F(UnitLookup, DropinsOfEveryKindInSystemdsOrder) {
  write("/usr/lib/systemd/system/a-b@.service", "[Service]\n");
  write("/usr/lib/systemd/system/a-b@.service.d/10-vendor.conf", "");
  write("/usr/lib/systemd/system/a-b@.service.d/50-masked.conf", "");
  write("/etc/systemd/system/a-b@i.service.d/20-instance.conf", "");
  write("/etc/systemd/system/a-@.service.d/05-prefix.conf", "");
  write("/etc/systemd/system/a-.service.d/06-template-prefix.conf", "");
  write("/etc/systemd/system/a-b.service.d/07-other-unit.conf", "");
  write("/run/systemd/system/service.d/01-all.conf", "");
  write("/usr/lib/systemd/system/a-b@i.service.d/20-instance.conf", "shadowed by /etc's");
  fs::create_directories(root_ / "etc/systemd/system/a-b@.service.d");
  fs::create_symlink("/dev/null", root_ / "etc/systemd/system/a-b@.service.d/50-masked.conf");
  std::string problem;
  const UnitFiles files = find_unit_files(root_.string(), *parse_service_unit_name("a-b@i.service", problem));
  EXPECT_EQ(files.unit_file, (root_ / "usr/lib/systemd/system/a-b@.service").string());
  std::vector<std::string> names;
  for (const std::string& dropin : files.dropins) {
    names.push_back(fs::relative(dropin, root_).string());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"run/systemd/system/service.d/01-all.conf",
                                             "etc/systemd/system/a-@.service.d/05-prefix.conf",
                                             // The template's prefix ("a-b@.service": "a-.service"), as systemd does.
                                             "etc/systemd/system/a-.service.d/06-template-prefix.conf",
                                             "usr/lib/systemd/system/a-b@.service.d/10-vendor.conf",
                                             "etc/systemd/system/a-b@i.service.d/20-instance.conf"}));
}

TEST_F(UnitLookup, AliasesAndMaskedUnits) {
  write("/usr/lib/systemd/system/real.service", "[Service]\n");
  fs::create_directories(root_ / "etc/systemd/system");
  fs::create_symlink("/usr/lib/systemd/system/real.service", root_ / "etc/systemd/system/alias.service");
  fs::create_symlink("/dev/null", root_ / "etc/systemd/system/masked.service");
  std::string problem;
  const UnitFiles alias = find_unit_files(root_.string(), *parse_service_unit_name("alias", problem));
  EXPECT_EQ(alias.real_name, "real.service");
  EXPECT_EQ(alias.unit_file, (root_ / "usr/lib/systemd/system/real.service").string());
  EXPECT_TRUE(find_unit_files(root_.string(), *parse_service_unit_name("masked", problem)).masked);
  EXPECT_TRUE(find_unit_files(root_.string(), *parse_service_unit_name("absent", problem)).unit_file.empty());
}

}  // namespace
}  // namespace tcptune::cli
