#include "tcptune/config/sockopt_names.hpp"

#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <string>

#include "tcptune/config/did_you_mean.hpp"

namespace tcptune::config {

namespace {

constexpr NamedOption kSockopts[] = {
    {"TCP_MAXSEG", IPPROTO_TCP, TCP_MAXSEG},
    {"TCP_NODELAY", IPPROTO_TCP, TCP_NODELAY},
    {"TCP_KEEPIDLE", IPPROTO_TCP, TCP_KEEPIDLE},
    {"TCP_KEEPINTVL", IPPROTO_TCP, TCP_KEEPINTVL},
    {"TCP_KEEPCNT", IPPROTO_TCP, TCP_KEEPCNT},
    {"TCP_SYNCNT", IPPROTO_TCP, TCP_SYNCNT},
    {"TCP_LINGER2", IPPROTO_TCP, TCP_LINGER2},
    {"TCP_DEFER_ACCEPT", IPPROTO_TCP, TCP_DEFER_ACCEPT},
    {"TCP_WINDOW_CLAMP", IPPROTO_TCP, TCP_WINDOW_CLAMP},
    {"TCP_QUICKACK", IPPROTO_TCP, TCP_QUICKACK},
    {"TCP_USER_TIMEOUT", IPPROTO_TCP, TCP_USER_TIMEOUT},
    {"TCP_NOTSENT_LOWAT", IPPROTO_TCP, TCP_NOTSENT_LOWAT},
    {"TCP_THIN_LINEAR_TIMEOUTS", IPPROTO_TCP, TCP_THIN_LINEAR_TIMEOUTS},
    {"TCP_FASTOPEN", IPPROTO_TCP, TCP_FASTOPEN},
    {"TCP_FASTOPEN_CONNECT", IPPROTO_TCP, TCP_FASTOPEN_CONNECT},
    {"SO_KEEPALIVE", SOL_SOCKET, SO_KEEPALIVE},
    {"SO_PRIORITY", SOL_SOCKET, SO_PRIORITY},
    {"SO_MARK", SOL_SOCKET, SO_MARK},
    {"SO_SNDBUF", SOL_SOCKET, SO_SNDBUF},
    {"SO_RCVBUF", SOL_SOCKET, SO_RCVBUF},
    {"SO_REUSEADDR", SOL_SOCKET, SO_REUSEADDR},
    {"SO_REUSEPORT", SOL_SOCKET, SO_REUSEPORT},
    {"IP_TOS", IPPROTO_IP, IP_TOS},
    {"IP_TTL", IPPROTO_IP, IP_TTL},
    {"IPV6_TCLASS", IPPROTO_IPV6, IPV6_TCLASS},
    {"IPV6_UNICAST_HOPS", IPPROTO_IPV6, IPV6_UNICAST_HOPS},
};

constexpr NamedLevel kLevels[] = {{"SOL_SOCKET", SOL_SOCKET},
                                  {"IPPROTO_TCP", IPPROTO_TCP},
                                  {"IPPROTO_IP", IPPROTO_IP},
                                  {"IPPROTO_IPV6", IPPROTO_IPV6}};

}  // namespace

Parsed<NamedLevel> find_sockopt_level(std::string_view name) {
  const auto* known =
      std::find_if(std::begin(kLevels), std::end(kLevels), [&](const NamedLevel& l) { return l.name == name; });
  if (known != std::end(kLevels)) {
    return {*known};
  }
  std::string_view names[std::size(kLevels)];
  std::transform(std::begin(kLevels), std::end(kLevels), names, [](const NamedLevel& l) { return l.name; });
  return {"unknown sockopt level \"" + std::string(name) + "\" (SOL_SOCKET, IPPROTO_TCP, IPPROTO_IP, IPPROTO_IPV6)" +
          did_you_mean(name, names)};
}

Parsed<NamedOption> find_socket_option(std::string_view name) {
  const auto* known =
      std::find_if(std::begin(kSockopts), std::end(kSockopts), [&](const NamedOption& o) { return o.name == name; });
  if (known != std::end(kSockopts)) {
    return {*known};
  }
  std::string_view names[std::size(kSockopts)];
  std::transform(std::begin(kSockopts), std::end(kSockopts), names, [](const NamedOption& o) { return o.name; });
  return {"unknown socket option \"" + std::string(name) + "\"" + did_you_mean(name, names)};
}

std::string sockopt_level_mismatch(const NamedOption& option, const NamedLevel& level) {
  if (option.level == level.level) {
    return {};
  }
  const auto* own = std::find_if(std::begin(kLevels), std::end(kLevels),
                                 [&](const NamedLevel& l) { return l.level == option.level; });
  return std::string(option.name) + " belongs to level " + std::string(own->name) + ", not " + std::string(level.name);
}

}  // namespace tcptune::config
