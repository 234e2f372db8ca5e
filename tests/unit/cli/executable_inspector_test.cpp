#include "executable_inspector.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "log_file.hpp"

namespace tcptune::cli {
namespace {

namespace fs = std::filesystem;

std::string self() {
  return fs::read_symlink("/proc/self/exe").string();
}

bool mentions(const std::vector<std::string>& reasons, const std::string& text) {
  for (const std::string& reason : reasons) {
    if (reason.find(text) != std::string::npos) {
      return true;
    }
  }
  return false;
}

TEST(ExecutableInspector, AStaticBinaryHasNoInterpreter) {
  const ElfFacts facts = inspect_elf(TCPTUNE_STATIC_HELLO);
  EXPECT_TRUE(facts.is_elf);
  EXPECT_FALSE(facts.has_interpreter);
  EXPECT_FALSE(facts.is_go);
  const std::vector<std::string> reasons = preload_obstacles(TCPTUNE_STATIC_HELLO).reasons;
  ASSERT_EQ(reasons.size(), 1U);
  EXPECT_EQ(reasons[0], std::string(TCPTUNE_STATIC_HELLO) +
                            " is statically linked: there is no dynamic loader to preload the shim");
  EXPECT_TRUE(preload_obstacles(TCPTUNE_STATIC_HELLO).bypasses_loader);
  EXPECT_FALSE(preload_obstacles(TCPTUNE_STATIC_HELLO).privileged);
}

TEST(ExecutableInspector, ADynamicBinaryHasOne) {
  const ElfFacts facts = inspect_elf(self());
  EXPECT_TRUE(facts.is_elf);
  EXPECT_TRUE(facts.has_interpreter);
  EXPECT_FALSE(facts.is_go);
  EXPECT_TRUE(preload_obstacles(self()).reasons.empty());
  EXPECT_FALSE(preload_obstacles(self()).bypasses_loader);
}

TEST(ExecutableInspector, AGoSectionMakesAGoProgram) {
  const std::string go = "/tmp/tcptune-cli-test-fake-go-" + std::to_string(getpid());
  const TempLog note("go build id");
  const std::string objcopy = "objcopy --add-section .note.go.buildid=" + note.path() + " " + self() + " " + go;
  ASSERT_EQ(std::system(objcopy.c_str()), 0) << objcopy;
  const ElfFacts facts = inspect_elf(go);
  EXPECT_TRUE(facts.is_go);
  EXPECT_TRUE(mentions(preload_obstacles(go).reasons, "is a Go program"));
  EXPECT_TRUE(preload_obstacles(go).bypasses_loader);
  (void)unlink(go.c_str());
}

TEST(ExecutableInspector, NotElf) {
  const TempLog text("just text\n");
  EXPECT_FALSE(inspect_elf(text.path()).is_elf);
  EXPECT_TRUE(preload_obstacles(text.path()).reasons.empty());
  EXPECT_FALSE(inspect_elf("/nonexistent/binary").is_elf);
  EXPECT_TRUE(preload_obstacles("/nonexistent/binary").reasons.empty());
  const TempLog short_header(
      "\x7f"
      "ELF\x02");  // the magic and class, and nothing more
  EXPECT_FALSE(inspect_elf(short_header.path()).is_elf);
}

TEST(ExecutableInspector, ATruncatedBinaryIsReadAsFarAsItGoes) {
  // The first 4 KiB of the static binary: its ELF and program headers, no section headers.
  std::ifstream in(TCPTUNE_STATIC_HELLO, std::ios::binary);
  std::string head(4096, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  const TempLog cut(head);
  const ElfFacts facts = inspect_elf(cut.path());
  EXPECT_TRUE(facts.is_elf);
  EXPECT_FALSE(facts.has_interpreter);
  EXPECT_FALSE(facts.is_go);
}

TEST(ExecutableInspector, AScriptIsJudgedByItsInterpreter) {
  const TempLog script(std::string("#!") + TCPTUNE_STATIC_HELLO + " -x\necho hi\n");
  const std::vector<std::string> reasons = preload_obstacles(script.path()).reasons;
  ASSERT_EQ(reasons.size(), 1U);
  EXPECT_EQ(reasons[0].rfind("its interpreter " + std::string(TCPTUNE_STATIC_HELLO) + " is statically linked", 0), 0U)
      << reasons[0];
  EXPECT_TRUE(preload_obstacles(script.path()).bypasses_loader);
  const TempLog dynamic("#!" + self() + "\n");
  EXPECT_TRUE(preload_obstacles(dynamic.path()).reasons.empty());
}

// A setuid file of another owner raises privileges (the loader ignores LD_PRELOAD); one owned by
// the real uid does not, and is an ordinary program.
TEST(ExecutableInspector, Setuid) {
  const std::string copy = "/tmp/tcptune-cli-test-suid-" + std::to_string(getpid());
  fs::copy_file(self(), copy, fs::copy_options::overwrite_existing);
  ASSERT_EQ(chmod(copy.c_str(), 04755), 0);
  EXPECT_TRUE(preload_obstacles(copy).reasons.empty());
  EXPECT_FALSE(preload_obstacles(copy).privileged);
  if (getuid() != 0) {
    (void)unlink(copy.c_str());
    GTEST_SKIP() << "a setuid file of another owner needs root to make";
  }
  constexpr uid_t kNobody = 65534;
  ASSERT_EQ(chown(copy.c_str(), kNobody, kNobody), 0);
  ASSERT_EQ(chmod(copy.c_str(), 04755), 0);  // chown clears the bit
  EXPECT_TRUE(mentions(preload_obstacles(copy).reasons, "is setuid/setgid"));
  EXPECT_TRUE(preload_obstacles(copy).privileged);
  EXPECT_FALSE(preload_obstacles(copy).bypasses_loader);
  (void)unlink(copy.c_str());
}

}  // namespace
}  // namespace tcptune::cli
