// The first stage finds functions in the loaded objects' own symbol tables, as the loader binds
// an unversioned reference (shim/stage/loaded_symbols.c), and reaches dlsym, dlopen, dladdr and
// dlerror that way, or on a glibc older than 2.34 without libdl.so.2 through libc's private
// loader entry points (shim/stage/dl_functions.c). Compared with what this glibc's dlsym finds.
#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>
#include <link.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

extern "C" {
#include "dl_functions.h"
#include "loaded_symbols.h"

int stage_lookup_gnu_answer(void);
int stage_lookup_sysv_answer(void);
}

namespace {

// Which hash tables the object defining `function` has: {DT_GNU_HASH, DT_HASH}.
struct HashTables {
  bool gnu = false;
  bool sysv = false;
};

HashTables hash_tables_of(void* function) {
  struct Search {
    ElfW(Addr) address;
    HashTables found;
  } search{reinterpret_cast<ElfW(Addr)>(function), {}};
  dl_iterate_phdr(
      [](dl_phdr_info* object, size_t, void* data) {
        auto* wanted = static_cast<Search*>(data);
        bool contains = false;
        const ElfW(Dyn)* dynamic = nullptr;
        for (ElfW(Half) i = 0; i < object->dlpi_phnum; ++i) {
          const ElfW(Phdr)& header = object->dlpi_phdr[i];
          const ElfW(Addr) start = object->dlpi_addr + header.p_vaddr;
          if (header.p_type == PT_LOAD && wanted->address >= start && wanted->address < start + header.p_memsz) {
            contains = true;
          }
          if (header.p_type == PT_DYNAMIC) {
            dynamic = reinterpret_cast<const ElfW(Dyn)*>(start);
          }
        }
        if (!contains || dynamic == nullptr) {
          return 0;
        }
        for (const ElfW(Dyn)* entry = dynamic; entry->d_tag != DT_NULL; ++entry) {
          wanted->found.gnu = wanted->found.gnu || entry->d_tag == DT_GNU_HASH;
          wanted->found.sysv = wanted->found.sysv || entry->d_tag == DT_HASH;
        }
        return 1;
      },
      &search);
  return search.found;
}

using Answer = int (*)();

TEST(LoadedSymbols, FindsWhatDlsymFindsInLibc) {
  for (const char* name : {"getpid", "dlsym", "dlopen", "dl_iterate_phdr", "gnu_get_libc_version"}) {
    void* expected = dlsym(RTLD_DEFAULT, name);
    ASSERT_NE(expected, nullptr) << name;
    EXPECT_EQ(stage_loaded_function(name), expected) << name;
  }
}

TEST(LoadedSymbols, ReadsAGnuHashTable) {
  const HashTables tables = hash_tables_of(reinterpret_cast<void*>(&stage_lookup_gnu_answer));
  ASSERT_TRUE(tables.gnu && !tables.sysv) << "built with --hash-style=gnu";
  void* found = stage_loaded_function("stage_lookup_gnu_answer");
  ASSERT_EQ(found, reinterpret_cast<void*>(&stage_lookup_gnu_answer));
  EXPECT_EQ(reinterpret_cast<Answer>(found)(), 42);
}

TEST(LoadedSymbols, ReadsASysvHashTable) {
  const HashTables tables = hash_tables_of(reinterpret_cast<void*>(&stage_lookup_sysv_answer));
  ASSERT_TRUE(tables.sysv && !tables.gnu) << "built with --hash-style=sysv";
  void* found = stage_loaded_function("stage_lookup_sysv_answer");
  ASSERT_EQ(found, reinterpret_cast<void*>(&stage_lookup_sysv_answer));
  EXPECT_EQ(reinterpret_cast<Answer>(found)(), 42);
}

TEST(LoadedSymbols, TakesTheDefaultVersionNotAHiddenOne) {
  for (const char* name : {"stage_lookup_gnu_versioned", "stage_lookup_sysv_versioned"}) {
    void* found = stage_loaded_function(name);
    ASSERT_NE(found, nullptr) << name;
    EXPECT_EQ(reinterpret_cast<Answer>(found)(), 2) << name;
    EXPECT_EQ(found, dlsym(RTLD_DEFAULT, name)) << name;
    void* old_version = dlvsym(RTLD_DEFAULT, name, "LOOKUP_OLD");
    ASSERT_NE(old_version, nullptr) << name;
    EXPECT_EQ(reinterpret_cast<Answer>(old_version)(), 1) << name;
  }
}

TEST(LoadedSymbols, FindsNoDataAndNoMissingName) {
  ASSERT_NE(dlsym(RTLD_DEFAULT, "stage_lookup_gnu_variable"), nullptr);
  EXPECT_EQ(stage_loaded_function("stage_lookup_gnu_variable"), nullptr);
  EXPECT_EQ(stage_loaded_function("stage_lookup_sysv_variable"), nullptr);
  EXPECT_EQ(stage_loaded_function("stage_lookup_no_such_function"), nullptr);
  EXPECT_EQ(stage_loaded_function(""), nullptr);
}

TEST(DlFunctions, FoundInTheLoadedObjects) {
  const stage_dl_functions* dl = stage_dl();
  ASSERT_NE(dl, nullptr);
  EXPECT_EQ(dl->dlsym(RTLD_DEFAULT, "getpid"), reinterpret_cast<void*>(&getpid));
  Dl_info info{};
  ASSERT_NE(dl->dladdr(reinterpret_cast<void*>(&getpid), &info), 0);
  EXPECT_NE(std::string(info.dli_fname).find("libc.so"), std::string::npos) << info.dli_fname;
  EXPECT_EQ(dl->dlopen("/nonexistent/libtcptune-stage-test.so", RTLD_NOW), nullptr);
  const char* error = dl->dlerror();
  ASSERT_NE(error, nullptr);
  EXPECT_NE(std::string(error).find("/nonexistent/libtcptune-stage-test.so"), std::string::npos) << error;
  EXPECT_EQ(stage_dl(), dl) << "found once";
}

TEST(DlFunctions, ThreadsRacingGetTheSameFunctions) {
  const stage_dl_functions* first = stage_dl();
  ASSERT_NE(first, nullptr);
  std::atomic<int> differing{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      for (int call = 0; call < 1000; ++call) {
        if (stage_dl() != first) {
          ++differing;
        }
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  EXPECT_EQ(differing.load(), 0);
}

// The path of glibc 2.17 to 2.33 where neither the program nor its libraries loaded libdl.so.2.
TEST(DlFunctions, LoadsLibdlThroughLibcPrivateEntryPoints) {
  if (stage_loaded_function("__libc_dlopen_mode") != nullptr) {
    GTEST_SKIP() << "this glibc still exports __libc_dlopen_mode";
  }
  stage_dl_functions functions{};
  EXPECT_FALSE(stage_dl_load_privately(&functions)) << "no __libc_dlopen_mode loaded";
  EXPECT_EQ(functions.dlsym, nullptr) << "left unchanged";

  void* fake = dlopen(FAKE_LIBC_PRIVATE, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(fake, nullptr) << dlerror();
  ASSERT_TRUE(stage_dl_load_privately(&functions));
  EXPECT_STREQ(static_cast<const char*>(dlsym(fake, "fake_libc_private_opened")), "libdl.so.2");
  EXPECT_EQ(*static_cast<int*>(dlsym(fake, "fake_libc_private_mode")), RTLD_LAZY | RTLD_NODELETE | INT_MIN);
  EXPECT_EQ(*static_cast<int*>(dlsym(fake, "fake_libc_private_lookups")), 4);
  ASSERT_NE(functions.dlsym, nullptr);
  EXPECT_EQ(functions.dlsym(RTLD_DEFAULT, "getpid"), reinterpret_cast<void*>(&getpid));
  Dl_info info{};
  EXPECT_NE(functions.dladdr(reinterpret_cast<void*>(&getpid), &info), 0);
  EXPECT_EQ(functions.dlopen("/nonexistent/libtcptune-stage-test.so", RTLD_NOW), nullptr);
  EXPECT_NE(functions.dlerror(), nullptr);
}

}  // namespace
