// Fuzz target: the policy's quantity and address parsers (units.hpp, cidr.hpp) and the escaping
// of policy text for messages (escape.hpp), each given the whole input. A prefix that parses must
// print back to the same prefix; escaped text must hold no control character.
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "tcptune/config/cidr.hpp"
#include "tcptune/config/escape.hpp"
#include "tcptune/config/units.hpp"

using namespace tcptune::config;

namespace {

void check_escaped(const std::string& escaped, bool escape_non_ascii) {
  for (const char ch : escaped) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f || (escape_non_ascii && c >= 0x80)) {
      std::abort();
    }
  }
}

}  // namespace

// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  if (const auto parsed = parse_size(text); parsed.ok()) {
    (void)format_size(parsed.value());
  }
  if (const auto parsed = parse_duration(text); parsed.ok()) {
    (void)format_duration(parsed.value());
  }
  if (const auto parsed = parse_rate(text); parsed.ok()) {
    (void)format_rate(parsed.value());
  }

  const auto cidr = parse_cidr(text);
  // The same bytes as a socket address, as the shim receives them from connect() and accept().
  sockaddr_storage address{};
  std::memcpy(&address, data, size < sizeof address ? size : sizeof address);
  const Endpoint endpoint =
      endpoint_from_sockaddr(reinterpret_cast<const sockaddr*>(&address),
                             static_cast<socklen_t>(size < sizeof address ? size : sizeof address));
  (void)format_endpoint(endpoint);
  if (cidr.ok()) {
    const auto again = parse_cidr(format_cidr(cidr.value()));
    if (!again.ok() || again.value().family != cidr.value().family ||
        again.value().prefix_len != cidr.value().prefix_len || again.value().bytes != cidr.value().bytes) {
      std::abort();
    }
    (void)cidr_contains(cidr.value(), endpoint);
  }

  check_escaped(escape_for_display(text, false), false);
  check_escaped(escape_for_display(text, true), true);
  return 0;
}
