// Each replacement in shim/compat gives what the glibc function it stands for gives, on the same
// input: linked into this program, the replacements are the names (stat, _dl_find_object, ...)
// and glibc's own are found with dlvsym.
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

// The wrappers' names are the linker's (--wrap).
// NOLINTBEGIN(readability-identifier-naming)
extern "C" {
int __wrap_pthread_create(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
int __wrap_pthread_join(pthread_t, void**);
int __wrap_pthread_sigmask(int, const sigset_t*, sigset_t*);
int __wrap_pthread_setname_np(pthread_t, const char*);
void* __wrap_dlsym(void*, const char*);
int __wrap_dladdr(const void*, Dl_info*);
}
// NOLINTEND(readability-identifier-naming)

namespace {

template <typename Function>
Function* glibc(const char* name, const char* version) {
  void* found = dlvsym(RTLD_NEXT, name, version);
  if (found == nullptr) {
    found = dlvsym(RTLD_DEFAULT, name, version);
  }
  return reinterpret_cast<Function*>(found);
}

struct Outcome {
  int result;
  int error;
};

template <typename Call>
Outcome outcome(Call call) {
  errno = 0;
  const int result = call();
  return {result, errno};
}

void expect_same(const Outcome& ours, const Outcome& theirs, const std::string& what) {
  EXPECT_EQ(ours.result, theirs.result) << what;
  if (theirs.result == -1) {
    EXPECT_EQ(ours.error, theirs.error) << what;
  }
}

TEST(GlibcCompat, StatGivesGlibcsResultsAndErrors) {
  auto* const glibc_stat = glibc<int(const char*, struct stat*)>("stat", "GLIBC_2.33");
  ASSERT_NE(glibc_stat, nullptr);
  ASSERT_NE(reinterpret_cast<void*>(&stat), reinterpret_cast<void*>(glibc_stat));  // two implementations
  const std::string too_long(5000, 'a');
  for (const char* path : {"/proc/self/exe", "/", "/no/such/file", "/proc/self/exe/below_a_file", too_long.c_str()}) {
    struct stat ours {};
    struct stat theirs {};
    expect_same(outcome([&] { return stat(path, &ours); }), outcome([&] { return glibc_stat(path, &theirs); }),
                std::string(path).substr(0, 40));
    EXPECT_EQ(ours.st_ino, theirs.st_ino);
    EXPECT_EQ(ours.st_mode, theirs.st_mode);
    EXPECT_EQ(ours.st_size, theirs.st_size);
  }
}

TEST(GlibcCompat, FstatGivesGlibcsResultsAndErrors) {
  auto* const glibc_fstat = glibc<int(int, struct stat*)>("fstat", "GLIBC_2.33");
  auto* const glibc_fstat64 = glibc<int(int, struct stat64*)>("fstat64", "GLIBC_2.33");
  ASSERT_NE(glibc_fstat, nullptr);
  ASSERT_NE(glibc_fstat64, nullptr);
  const int file = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  const int path_only = open("/", O_PATH | O_CLOEXEC);
  ASSERT_GE(file, 0);
  ASSERT_GE(path_only, 0);
  for (const int fd : {file, path_only, STDIN_FILENO, -1, -100 /* AT_FDCWD */, 1 << 20}) {
    struct stat ours {};
    struct stat theirs {};
    expect_same(outcome([&] { return fstat(fd, &ours); }), outcome([&] { return glibc_fstat(fd, &theirs); }),
                "fstat " + std::to_string(fd));
    EXPECT_EQ(ours.st_ino, theirs.st_ino);
    struct stat64 ours64 {};
    struct stat64 theirs64 {};
    expect_same(outcome([&] { return fstat64(fd, &ours64); }), outcome([&] { return glibc_fstat64(fd, &theirs64); }),
                "fstat64 " + std::to_string(fd));
    EXPECT_EQ(ours64.st_ino, theirs64.st_ino);
  }
  close(file);
  close(path_only);
}

TEST(GlibcCompat, GetentropyGivesGlibcsResultsAndErrors) {
  auto* const glibc_getentropy = glibc<int(void*, std::size_t)>("getentropy", "GLIBC_2.25");
  ASSERT_NE(glibc_getentropy, nullptr);
  ASSERT_NE(reinterpret_cast<void*>(&getentropy), reinterpret_cast<void*>(glibc_getentropy));
  std::array<unsigned char, 300> ours{};
  std::array<unsigned char, 300> theirs{};
  for (const std::size_t length : {std::size_t{0}, std::size_t{1}, std::size_t{256}, std::size_t{257}}) {
    expect_same(outcome([&] { return getentropy(ours.data(), length); }),
                outcome([&] { return glibc_getentropy(theirs.data(), length); }), "length " + std::to_string(length));
  }
  // 256 bytes were filled: not all zero (a chance of 2^-2048).
  EXPECT_NE(std::count(ours.begin(), ours.begin() + 256, 0), 256);
}

TEST(GlibcCompat, Arc4randomDrawsDiffer) {
  const std::uint32_t first = arc4random();
  bool differs = false;
  for (int i = 0; i < 8 && !differs; ++i) {
    differs = arc4random() != first;  // eight equal draws: a chance of 2^-256
  }
  EXPECT_TRUE(differs);
}

// Finds the same object as glibc's, with the same frame table, for addresses in this program, in
// libc, in the C++ runtime and in the vDSO; neither finds one for a stack address.
TEST(GlibcCompat, FindObjectAgreesWithGlibc) {
  auto* const glibc_find = glibc<int(void*, dl_find_object*)>("_dl_find_object", "GLIBC_2.35");
  ASSERT_NE(glibc_find, nullptr);
  ASSERT_NE(reinterpret_cast<void*>(&_dl_find_object), reinterpret_cast<void*>(glibc_find));
  int on_stack = 0;
  auto* const vdso = reinterpret_cast<char*>(getauxval(AT_SYSINFO_EHDR));  // NOLINT(performance-no-int-to-ptr)
  int found = 0;
  for (void* address :
       {reinterpret_cast<void*>(&arc4random), reinterpret_cast<void*>(&getpid),
        reinterpret_cast<void*>(&std::terminate), static_cast<void*>(vdso + 64), static_cast<void*>(&on_stack)}) {
    dl_find_object ours{};
    dl_find_object theirs{};
    const int our_result = _dl_find_object(address, &ours);
    ASSERT_EQ(our_result, glibc_find(address, &theirs)) << address;
    if (our_result == 0) {
      EXPECT_EQ(ours.dlfo_eh_frame, theirs.dlfo_eh_frame) << address;
      EXPECT_NE(ours.dlfo_eh_frame, nullptr) << address;
      EXPECT_EQ(ours.dlfo_map_start, theirs.dlfo_map_start) << address;
      EXPECT_LE(ours.dlfo_map_start, address);
      EXPECT_GT(ours.dlfo_map_end, address);
      ++found;
    }
  }
  EXPECT_EQ(found, vdso != nullptr ? 4 : 3);
}

TEST(GlibcCompat, OldPthreadVersionsBehaveAsTheNewOnes) {
  pthread_t thread{};
  ASSERT_EQ(__wrap_pthread_create(
                &thread, nullptr, [](void* arg) -> void* { return arg; }, &thread),
            0);
  void* result = nullptr;
  ASSERT_EQ(__wrap_pthread_join(thread, &result), 0);
  EXPECT_EQ(result, &thread);
  // Errors are returned, not put in errno.
  sigset_t set;
  sigemptyset(&set);
  EXPECT_EQ(__wrap_pthread_sigmask(12345, &set, nullptr), pthread_sigmask(12345, &set, nullptr));
  EXPECT_EQ(__wrap_pthread_sigmask(12345, &set, nullptr), EINVAL);
  EXPECT_EQ(__wrap_pthread_setname_np(pthread_self(), "a name longer than fifteen"), ERANGE);
}

TEST(GlibcCompat, OldDlVersionsBehaveAsTheNewOnes) {
  EXPECT_EQ(__wrap_dlsym(RTLD_DEFAULT, "getpid"), dlsym(RTLD_DEFAULT, "getpid"));
  EXPECT_EQ(__wrap_dlsym(RTLD_NEXT, "getpid"), dlsym(RTLD_NEXT, "getpid"));
  Dl_info ours{};
  Dl_info theirs{};
  EXPECT_EQ(__wrap_dladdr(reinterpret_cast<void*>(&getpid), &ours), dladdr(reinterpret_cast<void*>(&getpid), &theirs));
  EXPECT_STREQ(ours.dli_fname, theirs.dli_fname);
  EXPECT_EQ(ours.dli_saddr, theirs.dli_saddr);
}

}  // namespace
