// The two named network namespaces of the link (created and deleted with `ip netns`, so that
// `ip netns exec tcptune-a ...` works for the programs under test) and a guard that enters one.
#pragma once

#include <string>
#include <string_view>

namespace tcptune::linkem {

inline constexpr std::string_view kNamespaceA = "tcptune-a";
inline constexpr std::string_view kNamespaceB = "tcptune-b";

bool netns_exists(std::string_view name);
bool netns_add(std::string_view name, std::string& error);
// Succeeds when the namespace does not exist (any more).
bool netns_delete(std::string_view name, std::string& error);

// Moves the calling thread into a named namespace and back to the original one when destroyed. Sockets
// created and /proc/sys/net files opened meanwhile belong to the entered namespace.
class ScopedNetns {
 public:
  ScopedNetns() = default;
  ScopedNetns(const ScopedNetns&) = delete;
  ScopedNetns& operator=(const ScopedNetns&) = delete;
  ~ScopedNetns();

  bool enter(std::string_view name, std::string& error);

 private:
  int home_fd_ = -1;
};

}  // namespace tcptune::linkem
