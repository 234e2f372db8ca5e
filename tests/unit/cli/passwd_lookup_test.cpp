// --as-user's lookup: /etc/passwd lines, no NSS.
#include "passwd_lookup.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace tcptune::cli {
namespace {

TEST(PasswdLookup, NamesUidsAndMalformedLines) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() / "tcptune-passwd-lookup";
  std::ofstream(path) << "root:x:0:0:root:/root:/bin/bash\n"
                         "broken line\n"
                         "bad-uid:x:12a:1::/:/bin/false\n"
                         "www-data:x:33:33:www-data:/var/www:/usr/sbin/nologin\n";
  const auto by_name = find_user("www-data", path.string());
  ASSERT_TRUE(by_name.has_value());
  EXPECT_EQ(by_name->uid, 33U);
  const auto by_uid = find_user("0", path.string());
  ASSERT_TRUE(by_uid.has_value());
  EXPECT_EQ(by_uid->name, "root");
  const auto unlisted = find_user("4242", path.string());
  ASSERT_TRUE(unlisted.has_value());
  EXPECT_EQ(unlisted->name, "4242");
  EXPECT_EQ(unlisted->uid, 4242U);
  EXPECT_FALSE(find_user("bad-uid", path.string()).has_value());
  EXPECT_FALSE(find_user("nobody-here", path.string()).has_value());
  EXPECT_FALSE(find_user("4294967295", path.string()).has_value());  // (uid_t)-1 is no uid
  EXPECT_FALSE(find_user("", path.string()).has_value());
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tcptune::cli
