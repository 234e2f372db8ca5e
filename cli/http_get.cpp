#include "http_get.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <optional>
#include <system_error>

namespace tcptune::cli {

namespace {

constexpr std::size_t kLargestResponse = 256U << 20U;  // a query_range answer of 11,000 points per series is a few MB

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string trimmed(std::string_view text) {
  const auto begin = text.find_first_not_of(" \t");
  if (begin == std::string_view::npos) {
    return {};
  }
  return std::string(text.substr(begin, text.find_last_not_of(" \t") - begin + 1));
}

std::string errno_text(int error) {
  return std::generic_category().message(error);
}

std::string address_text(const HostAddress& address, std::uint16_t port) {
  char text[INET6_ADDRSTRLEN] = "";
  if (address.address.ss_family == AF_INET) {
    (void)::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&address.address)->sin_addr, text, sizeof text);
    return std::string(text) + ":" + std::to_string(port);
  }
  (void)::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&address.address)->sin6_addr, text, sizeof text);
  return "[" + std::string(text) + "]:" + std::to_string(port);
}

int remaining_ms(std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return static_cast<int>(std::max<std::int64_t>(0, left.count()));
}

// A connected socket to `address`, or -1 with `error`.
int connect_within(HostAddress address, std::uint16_t port, std::chrono::steady_clock::time_point deadline,
                   std::string& error) {
  if (address.address.ss_family == AF_INET) {
    reinterpret_cast<sockaddr_in*>(&address.address)->sin_port = htons(port);
  } else {
    reinterpret_cast<sockaddr_in6*>(&address.address)->sin6_port = htons(port);
  }
  const int fd = ::socket(address.address.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    error = "cannot connect to " + address_text(address, port) + ": " + errno_text(errno);
    return -1;
  }
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address.address), address.length) != 0 && errno != EINPROGRESS) {
    error = "cannot connect to " + address_text(address, port) + ": " + errno_text(errno);
    ::close(fd);
    return -1;
  }
  pollfd ready{fd, POLLOUT, 0};
  int result = 0;
  socklen_t length = sizeof result;
  if (::poll(&ready, 1, remaining_ms(deadline)) != 1) {
    error = "cannot connect to " + address_text(address, port) + ": no answer in time";
    ::close(fd);
    return -1;
  }
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &result, &length) != 0 || result != 0) {
    error = "cannot connect to " + address_text(address, port) + ": " + errno_text(result != 0 ? result : errno);
    ::close(fd);
    return -1;
  }
  return fd;
}

bool send_all(int fd, const std::string& text, std::chrono::steady_clock::time_point deadline) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t sent = ::send(fd, text.data() + done, text.size() - done, MSG_NOSIGNAL);
    if (sent > 0) {
      done += static_cast<std::size_t>(sent);
      continue;
    }
    if (sent < 0 && errno != EAGAIN && errno != EINTR) {
      return false;
    }
    pollfd ready{fd, POLLOUT, 0};
    if (::poll(&ready, 1, remaining_ms(deadline)) != 1) {
      return false;
    }
  }
  return true;
}

// The chunked body at `data`; nullopt when it is cut short or malformed.
std::optional<std::string> dechunked(std::string_view data) {
  std::string body;
  for (;;) {
    const std::size_t line_end = data.find("\r\n");
    if (line_end == std::string_view::npos) {
      return std::nullopt;
    }
    const std::string_view size_text = data.substr(0, std::min(line_end, data.find(';')));
    std::size_t size = 0;
    const auto [stop, problem] = std::from_chars(size_text.data(), size_text.data() + size_text.size(), size, 16);
    if (problem != std::errc() || stop == size_text.data()) {
      return std::nullopt;
    }
    data.remove_prefix(line_end + 2);
    if (size == 0) {
      return body;  // trailers, if any, are of no use here
    }
    if (data.size() < size + 2) {
      return std::nullopt;
    }
    body.append(data.substr(0, size));
    data.remove_prefix(size + 2);
  }
}

struct BodyFraming {
  bool chunked = false;
  std::optional<std::size_t> length;  // Content-Length; neither: the body ends with the connection
};

BodyFraming body_framing(std::string_view head) {
  BodyFraming framing;
  const std::size_t status_end = head.find("\r\n");
  std::string_view headers = status_end == std::string_view::npos ? std::string_view() : head.substr(status_end + 2);
  while (!headers.empty()) {
    const std::size_t end = std::min(headers.find("\r\n"), headers.size());
    const std::string_view line = headers.substr(0, end);
    headers.remove_prefix(std::min(end + 2, headers.size()));
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      continue;
    }
    const std::string name = lower(trimmed(line.substr(0, colon)));
    const std::string value = lower(trimmed(line.substr(colon + 1)));
    if (name == "transfer-encoding" && value.find("chunked") != std::string::npos) {
      framing.chunked = true;
    } else if (name == "content-length") {
      std::size_t size = 0;
      const auto [end_of_number, bad] = std::from_chars(value.data(), value.data() + value.size(), size);
      if (bad == std::errc() && end_of_number == value.data() + value.size()) {
        framing.length = size;
      }
    }
  }
  return framing;
}

// Whether `body` is the whole of it, by its Content-Length or its last chunk: a server (or a proxy
// before it) that keeps the connection open despite "Connection: close" is not waited for.
bool body_complete(const BodyFraming& framing, std::string_view body) {
  if (framing.chunked) {
    // The last chunk without trailers, as Prometheus ends its answers; checked whole only then.
    return body.size() >= 5 && body.substr(body.size() - 5) == "0\r\n\r\n" && dechunked(body).has_value();
  }
  return framing.length.has_value() && body.size() >= *framing.length;
}

}  // namespace

std::optional<HttpUrl> parse_http_url(std::string_view url, std::string& problem) {
  const std::string shown(url);
  if (url.rfind("https://", 0) == 0) {
    problem = "'" + shown +
              "': https is not supported; reach Prometheus over plain http on loopback or in the cluster (e.g. "
              "kubectl port-forward svc/prometheus 9090, then http://127.0.0.1:9090)";
    return std::nullopt;
  }
  if (url.rfind("http://", 0) != 0) {
    problem = "'" + shown + "' is not an http:// URL (e.g. http://127.0.0.1:9090)";
    return std::nullopt;
  }
  url.remove_prefix(7);
  const std::size_t slash = url.find('/');
  std::string_view authority = url.substr(0, slash);
  std::string path(slash == std::string_view::npos ? std::string_view() : url.substr(slash));
  if (path.find_first_of("?#") != std::string::npos) {
    problem = "'" + shown + "': a query or fragment has no place here; give the server's address and route prefix";
    return std::nullopt;
  }
  while (!path.empty() && path.back() == '/') {
    path.pop_back();
  }
  if (authority.find('@') != std::string_view::npos) {
    problem = "'" + shown + "': credentials in the URL are not supported";
    return std::nullopt;
  }
  HttpUrl parsed;
  parsed.path = path;
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      problem = "'" + shown + "': an IPv6 address without its closing ']'";
      return std::nullopt;
    }
    parsed.host = std::string(authority.substr(1, close - 1));
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') {
        problem = "'" + shown + "': something after the IPv6 address that is not a port";
        return std::nullopt;
      }
      port_text = authority.substr(close + 2);
    }
  } else {
    const std::size_t colon = authority.rfind(':');
    parsed.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
    }
  }
  if (parsed.host.empty()) {
    problem = "'" + shown + "' names no host";
    return std::nullopt;
  }
  if (!port_text.empty() || authority.find(':') != std::string_view::npos) {
    unsigned port = 0;
    const auto [stop, error] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (port_text.empty() || error != std::errc() || stop != port_text.data() + port_text.size() || port == 0 ||
        port > 65535) {
      problem = "'" + shown + "': the port is not a number from 1 to 65535";
      return std::nullopt;
    }
    parsed.port = static_cast<std::uint16_t>(port);
  }
  return parsed;
}

std::string url_text(const HttpUrl& url) {
  const bool v6 = url.host.find(':') != std::string::npos;
  return "http://" + (v6 ? "[" + url.host + "]" : url.host) + ":" + std::to_string(url.port) + url.path;
}

std::string url_encoded(std::string_view text) {
  std::string out;
  constexpr char kHex[] = "0123456789ABCDEF";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (std::isalnum(byte) != 0 || c == '-' || c == '_' || c == '.' || c == '~') {
      out += c;
    } else {
      out += '%';
      out += kHex[byte >> 4U];
      out += kHex[byte & 0xfU];
    }
  }
  return out;
}

std::optional<HttpResponse> parse_http_response(std::string_view raw, std::string& error) {
  const std::size_t head_end = raw.find("\r\n\r\n");
  if (head_end == std::string_view::npos) {
    error =
        raw.empty() ? "the server closed the connection without answering" : "the answer is not HTTP (no header end)";
    return std::nullopt;
  }
  const std::string_view head = raw.substr(0, head_end);
  std::string_view rest = raw.substr(head_end + 4);
  const std::size_t status_end = head.find("\r\n");
  const std::string_view status_line = head.substr(0, status_end);
  HttpResponse response;
  if (status_line.rfind("HTTP/1.", 0) != 0 || status_line.size() < 12 || status_line[8] != ' ') {
    error = "the answer is not HTTP/1.x ('" + std::string(status_line.substr(0, 40)) + "')";
    return std::nullopt;
  }
  const std::string_view code = status_line.substr(9, 3);
  const auto [stop, problem] = std::from_chars(code.data(), code.data() + code.size(), response.status);
  if (problem != std::errc() || stop != code.data() + 3) {
    error = "the answer's status is not a number ('" + std::string(status_line.substr(0, 40)) + "')";
    return std::nullopt;
  }
  response.reason = status_line.size() > 13 ? trimmed(status_line.substr(13)) : "";
  const auto [chunked, length] = body_framing(head);
  if (chunked) {
    std::optional<std::string> body = dechunked(rest);
    if (!body) {
      error = "the answer's chunked body is cut short or malformed";
      return std::nullopt;
    }
    response.body = std::move(*body);
  } else if (length) {
    if (rest.size() < *length) {
      error = "the answer is cut short (" + std::to_string(rest.size()) + " of " + std::to_string(*length) +
              " bytes of its body)";
      return std::nullopt;
    }
    response.body = std::string(rest.substr(0, *length));
  } else {
    response.body = std::string(rest);
  }
  return response;
}

std::optional<HttpResponse> http_get(const HttpUrl& url, const std::string& path_and_query,
                                     std::chrono::milliseconds timeout, std::string& error, const HostFiles& files) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const std::vector<HostAddress> addresses = look_up_host(url.host, timeout, error, files);
  if (addresses.empty()) {
    return std::nullopt;
  }
  int fd = -1;
  for (const HostAddress& address : addresses) {
    fd = connect_within(address, url.port, deadline, error);
    if (fd >= 0) {
      break;
    }
  }
  if (fd < 0) {
    return std::nullopt;
  }
  const bool v6 = url.host.find(':') != std::string::npos;
  const std::string request =
      "GET " + url.path + path_and_query + " HTTP/1.1\r\nHost: " + (v6 ? "[" + url.host + "]" : url.host) + ":" +
      std::to_string(url.port) + "\r\nAccept: application/json\r\nUser-Agent: tcptune\r\nConnection: close\r\n\r\n";
  if (!send_all(fd, request, deadline)) {
    error = "cannot send the request to " + url_text(url) + ": " + (errno != 0 ? errno_text(errno) : "timed out");
    ::close(fd);
    return std::nullopt;
  }
  std::string raw;
  std::optional<std::size_t> head_end;
  BodyFraming framing;
  char buffer[65536];
  for (;;) {
    const ssize_t got = ::recv(fd, buffer, sizeof buffer, 0);
    if (got > 0) {
      raw.append(buffer, static_cast<std::size_t>(got));
      if (raw.size() > kLargestResponse) {
        error = url_text(url) + " answered with more than 256 MiB; narrow the query (--window, --step)";
        ::close(fd);
        return std::nullopt;
      }
      if (!head_end && raw.find("\r\n\r\n") != std::string::npos) {
        head_end = raw.find("\r\n\r\n");
        framing = body_framing(std::string_view(raw).substr(0, *head_end));
      }
      if (head_end && body_complete(framing, std::string_view(raw).substr(*head_end + 4))) {
        break;
      }
      continue;
    }
    if (got == 0) {
      break;
    }
    if (errno == EINTR) {
      continue;
    }
    if (errno != EAGAIN) {
      error = "reading the answer of " + url_text(url) + ": " + errno_text(errno);
      ::close(fd);
      return std::nullopt;
    }
    pollfd ready{fd, POLLIN, 0};
    if (::poll(&ready, 1, remaining_ms(deadline)) != 1) {
      error = url_text(url) + " did not answer within " + std::to_string(timeout.count() / 1000) + " s";
      ::close(fd);
      return std::nullopt;
    }
  }
  ::close(fd);
  return parse_http_response(raw, error);
}

}  // namespace tcptune::cli
