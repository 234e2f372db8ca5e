#include "executable_inspector.hpp"

#include <elf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
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

// A 64-bit ELF file of headers only, with one PT_INTERP naming `interpreter`: what the
// inspector reads of a dynamically linked program.
std::string elf_with_interpreter(const std::string& interpreter) {
  Elf64_Ehdr header{};
  std::memcpy(header.e_ident, ELFMAG, SELFMAG);
  header.e_ident[EI_CLASS] = ELFCLASS64;
  header.e_ident[EI_DATA] = ELFDATA2LSB;
  header.e_ident[EI_VERSION] = EV_CURRENT;
  header.e_type = ET_DYN;
  header.e_machine = EM_X86_64;
  header.e_version = EV_CURRENT;
  header.e_phoff = sizeof header;
  header.e_ehsize = sizeof header;
  header.e_phentsize = sizeof(Elf64_Phdr);
  header.e_phnum = 1;
  Elf64_Phdr program{};
  program.p_type = PT_INTERP;
  program.p_offset = sizeof header + sizeof program;
  program.p_filesz = interpreter.size() + 1;
  std::string file(reinterpret_cast<const char*>(&header), sizeof header);
  file.append(reinterpret_cast<const char*>(&program), sizeof program);
  file.append(interpreter.c_str(), interpreter.size() + 1);
  return file;
}

TEST(ExecutableInspector, TheProgramInterpreterIsRead) {
  const ElfFacts facts = inspect_elf(self());
  EXPECT_EQ(classify_loader(facts.interpreter), LoaderKind::glibc) << facts.interpreter;
  const TempLog musl(elf_with_interpreter("/lib/ld-musl-x86_64.so.1"));
  EXPECT_TRUE(inspect_elf(musl.path()).has_interpreter);
  EXPECT_EQ(inspect_elf(musl.path()).interpreter, "/lib/ld-musl-x86_64.so.1");
}

TEST(ExecutableInspector, GlibcsLoadersByName) {
  for (const char* glibc : {"/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1", "/lib/ld-linux.so.2",
                            "/lib/ld-linux-armhf.so.3", "/lib64/ld64.so.2", "/lib/ld64.so.1"}) {
    EXPECT_EQ(classify_loader(glibc), LoaderKind::glibc) << glibc;
  }
  EXPECT_EQ(classify_loader("/lib/ld-musl-aarch64.so.1"), LoaderKind::musl);
  EXPECT_EQ(classify_loader("/lib/ld-uClibc.so.0"), LoaderKind::other);
  EXPECT_EQ(classify_loader("/system/bin/linker64"), LoaderKind::other);
  EXPECT_EQ(classify_loader(""), LoaderKind::other);
}

// Alpine's gcompat: a glibc loader name that is a link to musl's loader.
TEST(ExecutableInspector, AGlibcNameLinkedToMuslIsMusl) {
  const fs::path dir = fs::temp_directory_path() / ("tcptune-cli-test-loader-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "ld-musl-x86_64.so.1") << "loader";
  fs::create_symlink("ld-musl-x86_64.so.1", dir / "ld-linux-x86-64.so.2");
  EXPECT_EQ(classify_loader((dir / "ld-linux-x86-64.so.2").string()), LoaderKind::musl);
  fs::remove_all(dir);
}

TEST(ExecutableInspector, AMuslProgramIsSupervised) {
  const TempLog musl(elf_with_interpreter("/lib/ld-musl-x86_64.so.1"));
  const PreloadObstacles obstacles = preload_obstacles(musl.path());
  ASSERT_EQ(obstacles.reasons.size(), 1U);
  EXPECT_EQ(obstacles.reasons[0], musl.path() +
                                      " is linked against musl (program interpreter /lib/ld-musl-x86_64.so.1): the "
                                      "shim tunes programs linked against glibc only");
  EXPECT_TRUE(obstacles.bypasses_loader);
  EXPECT_FALSE(obstacles.unknown_loader) << "the shim is harmless under musl: an inherited LD_PRELOAD stays";
  const TempLog other(elf_with_interpreter("/system/bin/linker64"));
  EXPECT_TRUE(mentions(preload_obstacles(other.path()).reasons, "is not linked against glibc"));
  EXPECT_TRUE(preload_obstacles(other.path()).bypasses_loader);
  EXPECT_TRUE(preload_obstacles(other.path()).unknown_loader);
  const TempLog script("#!" + other.path() + "\n");
  EXPECT_TRUE(preload_obstacles(script.path()).unknown_loader);
  const TempLog musl_script("#!" + musl.path() + "\n");
  EXPECT_TRUE(preload_obstacles(musl_script.path()).bypasses_loader);
  EXPECT_FALSE(preload_obstacles(musl_script.path()).unknown_loader);
  EXPECT_FALSE(preload_obstacles(self()).unknown_loader);
  EXPECT_FALSE(preload_obstacles(TCPTUNE_STATIC_HELLO).unknown_loader);
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
