// A minimal HTTP/1.1 GET client for a Prometheus server's API: plain http (a loopback or
// in-cluster address, or a port-forward), one request per connection, Content-Length or
// chunked bodies. Not libcurl: the CLI is one static file (for images without glibc), and
// libcurl's static archive pulls in TLS, HTTP/2, IDN and Kerberos libraries, not all of which
// Debian ships as archives; a GET of a JSON answer needs none of them.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "host_lookup.hpp"

namespace tcptune::cli {

struct HttpUrl {
  std::string host;  // as written, without brackets for IPv6
  std::uint16_t port = 80;
  std::string path;  // the prefix before /api/v1 (Prometheus's --web.route-prefix), no trailing '/'
};

// "http://HOST[:PORT][/PREFIX]"; nullopt with `problem` for anything else (https included: say
// to use a port-forward or a local proxy).
std::optional<HttpUrl> parse_http_url(std::string_view url, std::string& problem);
// "http://HOST:PORT/PREFIX" as parsed, for messages.
std::string url_text(const HttpUrl& url);

struct HttpResponse {
  int status = 0;
  std::string reason;  // "OK", "Bad Request"
  std::string body;
};

// GET url.path + `path_and_query` within `timeout` (resolving, connecting and reading); nullopt
// with `error` ("cannot connect to 127.0.0.1:9: Connection refused") when no answer came.
std::optional<HttpResponse> http_get(const HttpUrl& url, const std::string& path_and_query,
                                     std::chrono::milliseconds timeout, std::string& error,
                                     const HostFiles& files = {});

// The response in `raw` (status line, headers, body), the body de-chunked; nullopt with `error`
// when it is not a whole HTTP/1.x response.
std::optional<HttpResponse> parse_http_response(std::string_view raw, std::string& error);

// A query string's value: every byte but unreserved ones percent-encoded.
std::string url_encoded(std::string_view text);

}  // namespace tcptune::cli
