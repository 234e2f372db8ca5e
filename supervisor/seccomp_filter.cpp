#include "seccomp_filter.hpp"

#include <linux/audit.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include <cstddef>
#include <cstdint>
#include <utility>

namespace tcptune::supervisor {

namespace {

#if defined(__x86_64__)
constexpr std::uint32_t kNativeArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr std::uint32_t kNativeArch = AUDIT_ARCH_AARCH64;
#else
#error "the supervisor's filter knows x86_64 and aarch64"
#endif

constexpr std::uint32_t kArchOffset = offsetof(seccomp_data, arch);
constexpr std::uint32_t kNrOffset = offsetof(seccomp_data, nr);
// The low 32 bits of an argument (level and optname are ints; the kernel ignores the rest).
constexpr std::uint32_t argument_offset(int index) {
  return static_cast<std::uint32_t>(offsetof(seccomp_data, args) + sizeof(std::uint64_t) * index);
}

sock_filter statement(std::uint16_t code, std::uint32_t k) {
  return sock_filter{code, 0, 0, k};
}
sock_filter jump_if_equal(std::uint32_t value, std::uint8_t if_true, std::uint8_t if_false) {
  return sock_filter{BPF_JMP | BPF_JEQ | BPF_K, if_true, if_false, value};
}

}  // namespace

std::vector<sock_filter> build_filter(const FilterSpec& spec) {
  std::vector<sock_filter> program;
  const auto allow = static_cast<std::uint32_t>(SECCOMP_RET_ALLOW);
  const auto notify = static_cast<std::uint32_t>(SECCOMP_RET_USER_NOTIF);
  program.push_back(statement(BPF_LD | BPF_W | BPF_ABS, kArchOffset));
  program.push_back(jump_if_equal(kNativeArch, 1, 0));
  program.push_back(statement(BPF_RET | BPF_K, allow));
  program.push_back(statement(BPF_LD | BPF_W | BPF_ABS, kNrOffset));
  // Each trapped call: "nr == X ? notify : next test", the notify one instruction further on.
  std::vector<std::uint32_t> notified;
  if (spec.connect) {
    notified.push_back(SYS_connect);
  }
  if (spec.listen) {
    notified.push_back(SYS_listen);
  }
  if (spec.exec) {
    notified.push_back(SYS_execve);
    notified.push_back(SYS_execveat);
  }
  if (spec.namespace_changes) {
    notified.push_back(SYS_unshare);
    notified.push_back(SYS_setns);
  }
  for (const std::uint32_t nr : notified) {
    program.push_back(jump_if_equal(nr, 0, 1));
    program.push_back(statement(BPF_RET | BPF_K, notify));
  }
  if (spec.tcp_sockets) {
    // nr == socket ? (family, type without its two flags, protocol: a TCP socket ? notify : allow)
    // : past the block, the accumulator still holding nr. The kernel reads the three as ints.
    constexpr auto kFlags = static_cast<std::uint32_t>(SOCK_NONBLOCK | SOCK_CLOEXEC);
    program.push_back(jump_if_equal(SYS_socket, 0, 11));
    program.push_back(statement(BPF_LD | BPF_W | BPF_ABS, argument_offset(0)));
    program.push_back(jump_if_equal(AF_INET, 1, 0));
    program.push_back(jump_if_equal(AF_INET6, 0, 7));
    program.push_back(statement(BPF_LD | BPF_W | BPF_ABS, argument_offset(1)));
    program.push_back(statement(BPF_ALU | BPF_AND | BPF_K, ~kFlags));
    program.push_back(jump_if_equal(SOCK_STREAM, 0, 4));
    program.push_back(statement(BPF_LD | BPF_W | BPF_ABS, argument_offset(2)));
    program.push_back(jump_if_equal(0, 1, 0));
    program.push_back(jump_if_equal(IPPROTO_TCP, 0, 1));
    program.push_back(statement(BPF_RET | BPF_K, notify));
    program.push_back(statement(BPF_RET | BPF_K, allow));
  }
  if (spec.fastopen_sends) {
    // nr == X ? (flags & MSG_FASTOPEN ? notify : allow) : next test. Every other send is allowed
    // after two more instructions; the accumulator keeps nr on the way past.
    for (const auto& [nr, flags_index] : {std::pair<std::uint32_t, int>{SYS_sendto, 3}, {SYS_sendmsg, 2}}) {
      program.push_back(jump_if_equal(nr, 0, 4));
      program.push_back(statement(BPF_LD | BPF_W | BPF_ABS, argument_offset(flags_index)));
      program.push_back(sock_filter{BPF_JMP | BPF_JSET | BPF_K, 0, 1, static_cast<std::uint32_t>(MSG_FASTOPEN)});
      program.push_back(statement(BPF_RET | BPF_K, notify));
      program.push_back(statement(BPF_RET | BPF_K, allow));
    }
  }
  if (!spec.setsockopt.empty()) {
    // nr == setsockopt ? (the pairs) : allow. Each pair: level == L ? (optname == N ? notify :
    // reload level) : next pair. The accumulator holds the level between pairs.
    program.push_back(jump_if_equal(SYS_setsockopt, 1, 0));
    program.push_back(statement(BPF_RET | BPF_K, allow));
    for (const TrappedSockopt& pair : spec.setsockopt) {
      program.push_back(statement(BPF_LD | BPF_W | BPF_ABS, argument_offset(1)));
      program.push_back(jump_if_equal(static_cast<std::uint32_t>(pair.level), 0, 3));
      program.push_back(statement(BPF_LD | BPF_W | BPF_ABS, argument_offset(2)));
      program.push_back(jump_if_equal(static_cast<std::uint32_t>(pair.name), 0, 1));
      program.push_back(statement(BPF_RET | BPF_K, notify));
    }
  }
  program.push_back(statement(BPF_RET | BPF_K, allow));
  return program;
}

}  // namespace tcptune::supervisor
