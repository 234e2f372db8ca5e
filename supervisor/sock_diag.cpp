#include "sock_diag.hpp"

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <new>
#include <system_error>
#include <utility>

namespace tcptune::supervisor {

namespace {

// The kernel sizes a dump's datagrams by the reader's buffer, up to 32 KiB; twice that leaves room
// for a kernel that sizes them larger. A datagram cut all the same (MSG_TRUNC) doubles the buffer
// and the dump starts again, up to the largest.
constexpr std::size_t kLargestReceiveBuffer = std::size_t{1} << 20;
// A dump never waits on the network; a reply this late means something is wrong, not slow.
constexpr time_t kReceiveTimeoutSeconds = 2;

std::string errno_text(const char* call, int error) {
  return std::string("sock_diag: ") + call + ": " + std::generic_category().message(error);
}

config::Endpoint endpoint_of(int family, const std::uint32_t (&address)[4], std::uint16_t port_be) {
  if (family == AF_INET) {
    sockaddr_in in{};
    in.sin_family = AF_INET;
    in.sin_port = port_be;
    std::memcpy(&in.sin_addr, address, sizeof in.sin_addr);
    return config::endpoint_from_sockaddr(reinterpret_cast<const sockaddr*>(&in), sizeof in);
  }
  if (family == AF_INET6) {
    sockaddr_in6 in6{};
    in6.sin6_family = AF_INET6;
    in6.sin6_port = port_be;
    std::memcpy(&in6.sin6_addr, address, sizeof in6.sin6_addr);
    return config::endpoint_from_sockaddr(reinterpret_cast<const sockaddr*>(&in6), sizeof in6);
  }
  return {};
}

int open_netlink_socket(std::string& error) {
  const int fd = ::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (fd < 0) {
    error = errno_text("socket(NETLINK_SOCK_DIAG)", errno);
    return -1;
  }
  const timeval timeout{kReceiveTimeoutSeconds, 0};
  if (::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout) != 0) {
    error = errno_text("setsockopt(SO_RCVTIMEO)", errno);
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

std::uint32_t connected_tcp_states() {
  return tcp_state_bit(TCP_SYN_SENT) | tcp_state_bit(TCP_ESTABLISHED) | tcp_state_bit(TCP_FIN_WAIT1) |
         tcp_state_bit(TCP_FIN_WAIT2) | tcp_state_bit(TCP_CLOSE_WAIT) | tcp_state_bit(TCP_LAST_ACK) |
         tcp_state_bit(TCP_CLOSING) | tcp_state_bit(TCP_CLOSE);
}

std::optional<SockDiag> SockDiag::open(std::string& error, std::size_t receive_buffer) {
  const int fd = open_netlink_socket(error);
  if (fd < 0) {
    return std::nullopt;
  }
  try {
    SockDiag diag(fd);
    diag.buffer_.resize(std::clamp<std::size_t>(receive_buffer, 1024, kLargestReceiveBuffer));
    return diag;
  } catch (const std::bad_alloc&) {
    // diag's destructor closed fd.
    error = "sock_diag: out of memory";
    return std::nullopt;
  }
}

SockDiag::SockDiag(SockDiag&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      abandoned_(std::exchange(other.abandoned_, false)),
      sequence_(other.sequence_),
      buffer_(std::move(other.buffer_)) {}

SockDiag& SockDiag::operator=(SockDiag&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) {
      ::close(fd_);
    }
    fd_ = std::exchange(other.fd_, -1);
    abandoned_ = std::exchange(other.abandoned_, false);
    sequence_ = other.sequence_;
    buffer_ = std::move(other.buffer_);
  }
  return *this;
}

SockDiag::~SockDiag() {
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

std::vector<unsigned char> port_filter_bytecode(const PortFilter& filter) {
  struct Test {
    std::uint8_t code;
    std::uint16_t port;
  };
  std::vector<Test> tests;
  tests.reserve(filter.local_ports.size() + filter.peer_ports.size());
  for (const std::uint16_t port : filter.local_ports) {
    tests.push_back({INET_DIAG_BC_S_EQ, port});
  }
  for (const std::uint16_t port : filter.peer_ports) {
    tests.push_back({INET_DIAG_BC_D_EQ, port});
  }
  if (tests.empty()) {
    return {};
  }
  // Test i: {code, yes: to its jump, no: past its jump to test i+1}, then {0, 0, port}; its jump:
  // {JMP, yes: to test i+1, no: to the end}. The kernel's audit walks the "yes" offsets and wants
  // every "no" target on that walk, which this layout gives (as ss(8) builds "or").
  constexpr int kTest = 2 * sizeof(inet_diag_bc_op);
  constexpr int kJump = sizeof(inet_diag_bc_op);
  const int total = static_cast<int>(tests.size()) * (kTest + kJump) - kJump;
  std::vector<unsigned char> code(static_cast<std::size_t>(total));
  int offset = 0;
  for (std::size_t i = 0; i < tests.size(); ++i) {
    const bool last = i + 1 == tests.size();
    const inet_diag_bc_op test{tests[i].code, static_cast<unsigned char>(kTest),
                               static_cast<unsigned short>(kTest + kJump)};
    const inet_diag_bc_op port{0, 0, tests[i].port};
    std::memcpy(code.data() + offset, &test, sizeof test);
    std::memcpy(code.data() + offset + sizeof test, &port, sizeof port);
    offset += kTest;
    if (!last) {
      const inet_diag_bc_op jump{INET_DIAG_BC_JMP, static_cast<unsigned char>(kJump),
                                 static_cast<unsigned short>(total - offset)};
      std::memcpy(code.data() + offset, &jump, sizeof jump);
      offset += kJump;
    }
  }
  return code;
}

bool SockDiag::dump(std::uint32_t states, std::vector<DiagSocket>& out, std::string& error,
                    const PortFilter& filter) noexcept {
  try {
    const std::size_t before = out.size();
    std::vector<unsigned char> bytecode = filter_refused_ ? std::vector<unsigned char>() : port_filter_bytecode(filter);
    for (;;) {
      if (abandoned_ && !replace_socket(error)) {
        return false;
      }
      if (fd_ < 0) {
        error = "sock_diag: no socket (moved from)";
        return false;
      }
      DumpOutcome outcome = DumpOutcome::kDone;
      if ((filter.families & PortFilter::kInet) != 0) {
        outcome = dump_family(AF_INET, states, bytecode, out, error);
      }
      if (outcome == DumpOutcome::kDone && (filter.families & PortFilter::kInet6) != 0) {
        outcome = dump_family(AF_INET6, states, bytecode, out, error);
      }
      if (outcome == DumpOutcome::kDone) {
        return true;
      }
      if (outcome == DumpOutcome::kFilterRefused) {
        filter_refused_ = true;
        bytecode.clear();
        out.erase(out.begin() + static_cast<std::ptrdiff_t>(before), out.end());
        error.clear();
        continue;
      }
      if (outcome != DumpOutcome::kTruncated || buffer_.size() >= kLargestReceiveBuffer) {
        return false;
      }
      buffer_.resize(buffer_.size() * 2);
      out.erase(out.begin() + static_cast<std::ptrdiff_t>(before), out.end());
      error.clear();
    }
  } catch (const std::bad_alloc&) {
    error = "sock_diag: out of memory";
    return false;
  }
}

bool SockDiag::replace_socket(std::string& error) {
  if (fd_ >= 0) {
    ::close(fd_);
  }
  fd_ = open_netlink_socket(error);
  abandoned_ = fd_ < 0;
  return fd_ >= 0;
}

SockDiag::DumpOutcome SockDiag::dump_family(int family, std::uint32_t states,
                                            const std::vector<unsigned char>& bytecode, std::vector<DiagSocket>& out,
                                            std::string& error) {
  struct Request {
    nlmsghdr header;
    inet_diag_req_v2 body;
  };
  Request request{};
  // The filter follows the request as its INET_DIAG_REQ_BYTECODE attribute.
  const rtattr attribute{static_cast<unsigned short>(RTA_LENGTH(bytecode.size())), INET_DIAG_REQ_BYTECODE};
  const std::size_t filter_length = bytecode.empty() ? 0 : RTA_SPACE(bytecode.size());
  request.header.nlmsg_len = static_cast<std::uint32_t>(NLMSG_ALIGN(sizeof request) + filter_length);
  request.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  request.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  // A new number for each request, which each reply carries.
  request.header.nlmsg_seq = ++sequence_;
  request.body.sdiag_family = static_cast<std::uint8_t>(family);
  request.body.sdiag_protocol = IPPROTO_TCP;
  request.body.idiag_ext = (1U << (INET_DIAG_INFO - 1)) | (1U << (INET_DIAG_CONG - 1));
  request.body.idiag_states = states;

  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  std::vector<unsigned char> datagram(request.header.nlmsg_len);
  std::memcpy(datagram.data(), &request, sizeof request);
  if (filter_length != 0) {
    std::memcpy(datagram.data() + NLMSG_ALIGN(sizeof request), &attribute, sizeof attribute);
    std::memcpy(datagram.data() + NLMSG_ALIGN(sizeof request) + RTA_LENGTH(0), bytecode.data(), bytecode.size());
  }
  ssize_t sent = 0;
  do {
    sent =
        ::sendto(fd_, datagram.data(), datagram.size(), 0, reinterpret_cast<const sockaddr*>(&kernel), sizeof kernel);
  } while (sent < 0 && errno == EINTR);
  if (sent < 0) {
    error = errno_text("sendto", errno);
    return DumpOutcome::kFailed;
  }
  // From here a return before the dump's end leaves it running in the kernel, which refuses the
  // socket another dump (EBUSY) until this one is read to its end: the next dump gets a new socket.
  abandoned_ = true;

  for (;;) {
    iovec io{buffer_.data(), buffer_.size()};
    sockaddr_nl sender{};
    msghdr message{};
    message.msg_name = &sender;
    message.msg_namelen = sizeof sender;
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    ssize_t received = 0;
    do {
      received = ::recvmsg(fd_, &message, 0);
    } while (received < 0 && errno == EINTR);
    if (received < 0) {
      error = errno_text("recvmsg", errno);
      return DumpOutcome::kFailed;
    }
    if ((message.msg_flags & MSG_TRUNC) != 0) {
      error = "sock_diag: a reply of more than " + std::to_string(buffer_.size()) + " bytes was cut";
      return DumpOutcome::kTruncated;
    }
    if (sender.nl_pid != 0) {
      continue;  // not from the kernel
    }
    const auto length = static_cast<std::size_t>(received);
    std::size_t offset = 0;
    while (length - offset >= sizeof(nlmsghdr)) {
      const unsigned char* const start = buffer_.data() + offset;
      nlmsghdr header{};
      std::memcpy(&header, start, sizeof header);
      if (header.nlmsg_len < NLMSG_HDRLEN || header.nlmsg_len > length - offset) {
        error = "sock_diag: a malformed netlink message";
        return DumpOutcome::kFailed;
      }
      const unsigned char* const body = start + NLMSG_HDRLEN;
      const std::size_t body_length = header.nlmsg_len - NLMSG_HDRLEN;
      offset += std::min<std::size_t>(NLMSG_ALIGN(header.nlmsg_len), length - offset);
      if (header.nlmsg_seq != request.header.nlmsg_seq) {
        continue;  // left over from an earlier, abandoned dump
      }
      if (header.nlmsg_type == NLMSG_DONE) {
        // The end of a dump carries the dump's result: negative, its error.
        int status = 0;
        if (body_length >= sizeof status) {
          std::memcpy(&status, body, sizeof status);
        }
        abandoned_ = false;
        if (status < 0) {
          error = errno_text("dump", -status);
          return DumpOutcome::kFailed;
        }
        return DumpOutcome::kDone;
      }
      if (header.nlmsg_type == NLMSG_ERROR) {
        // nlmsgerr: the error, then the request's header (which a short reply may leave out).
        int failure = 0;
        if (body_length < sizeof failure) {
          error = "sock_diag: a short NLMSG_ERROR";
          return DumpOutcome::kFailed;
        }
        std::memcpy(&failure, body, sizeof failure);
        if (failure == 0) {
          continue;  // an acknowledgement
        }
        abandoned_ = false;  // a refused request: no dump is running
        error = errno_text(family == AF_INET ? "dump of AF_INET" : "dump of AF_INET6", -failure);
        return failure == -EINVAL && !bytecode.empty() ? DumpOutcome::kFilterRefused : DumpOutcome::kFailed;
      }
      if (header.nlmsg_type == SOCK_DIAG_BY_FAMILY) {
        DiagSocket socket;
        if (parse_diag_message(start, header.nlmsg_len, socket)) {
          out.push_back(std::move(socket));
        }
      }
    }
  }
}

bool parse_diag_message(const void* message, std::size_t length, DiagSocket& out) {
  const auto* const bytes = static_cast<const unsigned char*>(message);
  if (message == nullptr || length < NLMSG_HDRLEN + sizeof(inet_diag_msg)) {
    return false;
  }
  inet_diag_msg diag{};
  std::memcpy(&diag, bytes + NLMSG_HDRLEN, sizeof diag);
  out = DiagSocket{};
  out.inode = diag.idiag_inode;
  out.cookie = std::uint64_t{diag.id.idiag_cookie[0]} | (std::uint64_t{diag.id.idiag_cookie[1]} << 32U);
  out.local = endpoint_of(diag.idiag_family, diag.id.idiag_src, diag.id.idiag_sport);
  out.peer = endpoint_of(diag.idiag_family, diag.id.idiag_dst, diag.id.idiag_dport);
  out.family = diag.idiag_family;
  out.state = diag.idiag_state;
  out.uid = diag.idiag_uid;

  std::size_t offset = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(inet_diag_msg));
  while (offset < length && length - offset >= sizeof(rtattr)) {
    rtattr attribute{};
    std::memcpy(&attribute, bytes + offset, sizeof attribute);
    if (attribute.rta_len < sizeof attribute || attribute.rta_len > length - offset) {
      break;  // the rest is not attributes; what was read stands
    }
    const unsigned char* const payload = bytes + offset + RTA_LENGTH(0);
    const std::size_t payload_length = attribute.rta_len - RTA_LENGTH(0);
    switch (attribute.rta_type & NLA_TYPE_MASK) {
      case INET_DIAG_INFO: out.info = shim::decode_tcp_info(payload, payload_length); break;
      case INET_DIAG_CONG:
        // A NUL-terminated name.
        out.congestion.assign(reinterpret_cast<const char*>(payload),
                              std::find(payload, payload + payload_length, '\0') - payload);
        break;
      default: break;
    }
    offset += RTA_ALIGN(attribute.rta_len);
  }
  return true;
}

const DiagSocket* find_by_inode(const std::vector<DiagSocket>& sockets, std::uint64_t inode) {
  if (inode == 0) {
    return nullptr;
  }
  const auto found =
      std::find_if(sockets.begin(), sockets.end(), [inode](const DiagSocket& socket) { return socket.inode == inode; });
  return found == sockets.end() ? nullptr : &*found;
}

}  // namespace tcptune::supervisor
