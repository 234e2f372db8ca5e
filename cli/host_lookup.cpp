#include "host_lookup.hpp"

#include <arpa/inet.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace tcptune::cli {

namespace {

constexpr std::uint16_t kTypeA = 1;
constexpr std::uint16_t kTypeAaaa = 28;
constexpr std::uint16_t kClassIn = 1;
constexpr std::size_t kLongestAnswer = 4096;

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::vector<HostAddress> from_hosts_file(const std::string& name, const std::string& path) {
  std::vector<HostAddress> found;
  std::ifstream in(path);
  std::string line;
  const std::string wanted = lower(name);
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string address;
    std::string alias;
    if (!(words >> address)) {
      continue;
    }
    while (words >> alias) {
      if (lower(alias) == wanted) {
        if (const auto numeric = numeric_address(address)) {
          found.push_back(*numeric);
        }
        break;
      }
    }
  }
  return found;
}

struct ResolverConfig {
  std::vector<HostAddress> servers;
  std::vector<std::string> search;
  int ndots = 1;
  int attempts = 2;
};

ResolverConfig read_resolv_conf(const std::string& path) {
  ResolverConfig config;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line.substr(0, line.find_first_of("#;")));
    std::string key;
    if (!(words >> key)) {
      continue;
    }
    std::string value;
    if (key == "nameserver" && words >> value) {
      if (auto numeric = numeric_address(value)) {
        config.servers.push_back(*numeric);
      }
    } else if (key == "search" || key == "domain") {
      config.search.clear();
      while (words >> value) {
        config.search.push_back(value);
      }
    } else if (key == "options") {
      while (words >> value) {
        if (value.rfind("ndots:", 0) == 0) {
          config.ndots = std::clamp(std::atoi(value.c_str() + 6), 0, 15);
        } else if (value.rfind("attempts:", 0) == 0) {
          config.attempts = std::clamp(std::atoi(value.c_str() + 9), 1, 5);
        }
      }
    }
  }
  if (config.servers.empty()) {  // what the C library assumes without a nameserver line
    config.servers.push_back(*numeric_address("127.0.0.1"));
  }
  return config;
}

std::uint16_t read16(std::string_view data, std::size_t at) {
  return static_cast<std::uint16_t>((static_cast<unsigned char>(data[at]) << 8U) |
                                    static_cast<unsigned char>(data[at + 1]));
}

// Past a (possibly compressed) name at `at`; npos when it runs off the end.
std::size_t skip_name(std::string_view data, std::size_t at) {
  while (at < data.size()) {
    const auto length = static_cast<unsigned char>(data[at]);
    if (length == 0) {
      return at + 1;
    }
    if ((length & 0xc0U) == 0xc0U) {
      return at + 2 <= data.size() ? at + 2 : std::string_view::npos;
    }
    at += 1 + length;
  }
  return std::string_view::npos;
}

// One query to one server over UDP; the answer, or empty after the timeout.
std::string ask(const HostAddress& server, const std::string& query, std::chrono::milliseconds timeout) {
  HostAddress to = server;
  if (to.address.ss_family == AF_INET) {
    reinterpret_cast<sockaddr_in*>(&to.address)->sin_port = htons(53);
  } else {
    reinterpret_cast<sockaddr_in6*>(&to.address)->sin6_port = htons(53);
  }
  const int fd = ::socket(to.address.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return {};
  }
  std::string answer;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&to.address), to.length) == 0 &&
      ::send(fd, query.data(), query.size(), 0) == static_cast<ssize_t>(query.size())) {
    pollfd ready{fd, POLLIN, 0};
    if (::poll(&ready, 1, static_cast<int>(timeout.count())) == 1) {
      char buffer[kLongestAnswer];
      const ssize_t got = ::recv(fd, buffer, sizeof buffer, 0);
      if (got > 0) {
        answer.assign(buffer, static_cast<std::size_t>(got));
      }
    }
  }
  ::close(fd);
  return answer;
}

}  // namespace

std::optional<HostAddress> numeric_address(std::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const std::string text(host);
  HostAddress out;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&out.address);
  if (::inet_pton(AF_INET, text.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    out.length = sizeof(sockaddr_in);
    return out;
  }
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&out.address);
  if (::inet_pton(AF_INET6, text.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    out.length = sizeof(sockaddr_in6);
    return out;
  }
  return std::nullopt;
}

std::string dns_query(std::uint16_t id, const std::string& name, std::uint16_t type) {
  std::string query;
  const auto put16 = [&](std::uint16_t value) {
    query += static_cast<char>(value >> 8U);
    query += static_cast<char>(value & 0xffU);
  };
  put16(id);
  put16(0x0100);  // a standard query, recursion desired
  put16(1);       // one question
  put16(0);
  put16(0);
  put16(0);
  std::size_t start = 0;
  while (start < name.size()) {
    const std::size_t dot = std::min(name.find('.', start), name.size());
    const std::size_t length = dot - start;
    if (length == 0 || length > 63) {
      return {};
    }
    query += static_cast<char>(length);
    query.append(name, start, length);
    start = dot + 1;
  }
  query += '\0';
  put16(type);
  put16(kClassIn);
  return query;
}

std::vector<HostAddress> dns_answer_addresses(std::string_view answer, std::uint16_t id, int& rcode) {
  std::vector<HostAddress> found;
  rcode = -1;
  if (answer.size() < 12 || read16(answer, 0) != id || (static_cast<unsigned char>(answer[2]) & 0x80U) == 0) {
    return found;
  }
  rcode = static_cast<int>(static_cast<unsigned char>(answer[3]) & 0x0fU);
  const std::uint16_t questions = read16(answer, 4);
  const std::uint16_t answers = read16(answer, 6);
  std::size_t at = 12;
  for (std::uint16_t q = 0; q < questions && at != std::string_view::npos; ++q) {
    at = skip_name(answer, at);
    at = at != std::string_view::npos && at + 4 <= answer.size() ? at + 4 : std::string_view::npos;
  }
  for (std::uint16_t a = 0; a < answers && at != std::string_view::npos; ++a) {
    at = skip_name(answer, at);
    if (at == std::string_view::npos || at + 10 > answer.size()) {
      break;
    }
    const std::uint16_t type = read16(answer, at);
    const std::uint16_t klass = read16(answer, at + 2);
    const std::uint16_t length = read16(answer, at + 8);
    at += 10;
    if (at + length > answer.size()) {
      break;
    }
    HostAddress address;
    if (klass == kClassIn && type == kTypeA && length == 4) {
      auto* v4 = reinterpret_cast<sockaddr_in*>(&address.address);
      v4->sin_family = AF_INET;
      std::memcpy(&v4->sin_addr, answer.data() + at, 4);
      address.length = sizeof(sockaddr_in);
      found.push_back(address);
    } else if (klass == kClassIn && type == kTypeAaaa && length == 16) {
      auto* v6 = reinterpret_cast<sockaddr_in6*>(&address.address);
      v6->sin6_family = AF_INET6;
      std::memcpy(&v6->sin6_addr, answer.data() + at, 16);
      address.length = sizeof(sockaddr_in6);
      found.push_back(address);
    }
    at += length;
  }
  return found;
}

std::vector<std::string> names_to_try(const std::string& name, const std::vector<std::string>& search, int ndots) {
  if (!name.empty() && name.back() == '.') {
    return {name.substr(0, name.size() - 1)};  // absolute: as it is
  }
  std::vector<std::string> names;
  const auto dots = static_cast<int>(std::count(name.begin(), name.end(), '.'));
  if (dots >= ndots) {
    names.push_back(name);
  }
  for (const std::string& domain : search) {
    names.push_back(name + "." + (domain.back() == '.' ? domain.substr(0, domain.size() - 1) : domain));
  }
  if (dots < ndots) {
    names.push_back(name);
  }
  return names;
}

std::vector<HostAddress> look_up_host(const std::string& name, std::chrono::milliseconds timeout, std::string& error,
                                      const HostFiles& files) {
  if (const auto numeric = numeric_address(name)) {
    return {*numeric};
  }
  std::vector<HostAddress> found = from_hosts_file(name, files.hosts);
  if (!found.empty()) {
    return found;
  }
  const ResolverConfig config = read_resolv_conf(files.resolv_conf);
  const auto per_try = std::max(std::chrono::milliseconds(200), timeout / (config.attempts * 2));
  std::uint16_t id = static_cast<std::uint16_t>(::getpid() * 7919U);
  bool answered = false;
  for (const std::string& candidate : names_to_try(name, config.search, config.ndots)) {
    for (const std::uint16_t type : {kTypeA, kTypeAaaa}) {
      const std::string query = dns_query(++id, candidate, type);
      if (query.empty()) {
        error = "no address for " + name + ": not a host name";
        return {};
      }
      for (int attempt = 0; attempt < config.attempts; ++attempt) {
        bool got_answer = false;
        for (const HostAddress& server : config.servers) {
          int rcode = -1;
          std::vector<HostAddress> addresses = dns_answer_addresses(ask(server, query, per_try), id, rcode);
          if (rcode >= 0) {
            got_answer = answered = true;
            found.insert(found.end(), addresses.begin(), addresses.end());
            break;
          }
        }
        if (got_answer) {
          break;
        }
      }
    }
    if (!found.empty()) {
      return found;
    }
  }
  error = "no address for " + name +
          (answered ? ": not in " + files.hosts + " and the name servers know none"
                    : ": not in " + files.hosts + " and no name server of " + files.resolv_conf + " answered");
  return {};
}

}  // namespace tcptune::cli
