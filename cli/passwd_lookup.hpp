// A user by name or uid from /etc/passwd, without NSS: the CLI is linked statically.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace tcptune::cli {

struct PasswdEntry {
  std::string name;  // the uid's digits when /etc/passwd has no line for a numeric uid
  uid_t uid = 0;
};

// "www-data" or "33": the entry from `passwd_path`, or nullopt for an unknown name. A numeric
// uid is taken as given even without a line (a container's user need not have one).
std::optional<PasswdEntry> find_user(const std::string& name_or_uid, const std::string& passwd_path = "/etc/passwd");

}  // namespace tcptune::cli
