// What a rule put in effect on a socket the supervisor handed over and then tuned at its connect
// or listen, by inode: the program's later setsockopt of an option the rule keeps is judged from
// it, since the supervisor no longer holds the socket then (holding a connected one would delay
// the peer's EOF) and pidfd_getfd is refused. Every later change of those options is a trapped
// call that the supervisor answers, so what was in effect after tuning stays so while the rule
// keeps it. Entries are looked up by the inode the program's descriptor names, so a stale one is
// never found through another socket; beyond kMostEntries, those whose socket the program no
// longer has where it had it are forgotten.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <unordered_map>

#include "program_socket.hpp"

namespace tcptune::supervisor {

struct HandedOverTuning {
  int rule = -1;
  bool listener = false;
  bool nodelay_on = false;    // TCP_NODELAY was 1 after tuning
  bool keepalive_on = false;  // the rule's keepalive was in effect after tuning
  pid_t process = 0;
  int app_fd = -1;
};

class HandedOverTunings {
 public:
  static constexpr std::size_t kMostEntries = 65536;

  void add(std::uint64_t inode, const HandedOverTuning& tuning) {
    if (entries_.size() >= kMostEntries) {
      std::erase_if(entries_, [](const auto& entry) {
        return program_socket_inode(entry.second.process, entry.second.app_fd) != entry.first;
      });
      if (entries_.size() >= kMostEntries) {
        entries_.clear();  // a program that moves all its sockets elsewhere: vetoes stop, tuning does not
      }
    }
    entries_[inode] = tuning;
  }
  [[nodiscard]] const HandedOverTuning* find(std::uint64_t inode) const {
    const auto found = entries_.find(inode);
    return inode == 0 || found == entries_.end() ? nullptr : &found->second;
  }

 private:
  std::unordered_map<std::uint64_t, HandedOverTuning> entries_;
};

}  // namespace tcptune::supervisor
