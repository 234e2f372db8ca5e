// A host name's addresses without NSS (the CLI is linked statically, where getaddrinfo would
// need glibc's shared libraries at run time): a numeric address as it is, else the name's
// lines in /etc/hosts (localhost among them), else a DNS query (A and AAAA over UDP) to the
// name servers of /etc/resolv.conf, with its search domains and ndots as the C library applies
// them, so that a cluster's service name (prometheus.monitoring.svc) resolves in a pod.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tcptune::cli {

struct HostAddress {
  sockaddr_storage address{};  // the port is left 0
  socklen_t length = 0;
};

struct HostFiles {
  std::string hosts = "/etc/hosts";
  std::string resolv_conf = "/etc/resolv.conf";
};

// IPv4 and IPv6 literals ("127.0.0.1", "::1", also "[::1]").
std::optional<HostAddress> numeric_address(std::string_view host);

// The name's addresses in the order found; empty with `error` ("no address for NAME: ...").
std::vector<HostAddress> look_up_host(const std::string& name, std::chrono::milliseconds timeout, std::string& error,
                                      const HostFiles& files = {});

// The parts, exposed for their tests: a DNS query for `name` and `type` (1: A, 28: AAAA), and
// the addresses of an answer to query `id` (empty: none; `rcode` is the answer's code, -1 when
// it is not an answer to that query).
std::string dns_query(std::uint16_t id, const std::string& name, std::uint16_t type);
std::vector<HostAddress> dns_answer_addresses(std::string_view answer, std::uint16_t id, int& rcode);

// The names to try for `name`, as resolv.conf's search list and ndots say.
std::vector<std::string> names_to_try(const std::string& name, const std::vector<std::string>& search, int ndots);

}  // namespace tcptune::cli
