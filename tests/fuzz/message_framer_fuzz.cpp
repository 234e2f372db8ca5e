// Fuzz target: keep-warm's message framer (shim/core/message_framer.hpp) over any bytes an app
// may write. The first byte picks the protocol, the second how the rest is cut into writes.
// Whatever the bytes, nothing crashes, a lost framing stays lost and never reports a boundary,
// and where a message ends does not depend on how the bytes were cut: fed whole, byte by byte,
// and in writes of varying sizes (counted lengths passed over unseen, as for sendfile), the
// framer ends in the same state.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "message_framer.hpp"

using tcptune::config::Framing;
using tcptune::shim::FramingLoss;
using tcptune::shim::MessageFramer;

namespace {

constexpr Framing kFramings[] = {Framing::lines, Framing::http1_request, Framing::resp_request, Framing::stomp,
                                 Framing::amqp091};

// Feeds `size` bytes in writes of 1 to `max_write` bytes; `skip_counted`: lengths the framer
// can count are passed over without being shown, as a sendfile's are.
void feed(MessageFramer& framer, const char* data, std::size_t size, std::size_t max_write, bool skip_counted) {
  std::size_t offset = 0;
  std::size_t write_size = 1;
  while (offset < size) {
    const std::size_t take = std::min(write_size, size - offset);
    std::size_t fed = 0;
    while (fed < take) {
      const std::size_t skipped = skip_counted ? framer.skippable(take - fed) : 0;
      if (skipped > 0) {
        framer.skip(skipped);
        fed += skipped;
      } else {
        const std::size_t chunk = skip_counted ? 1 : take - fed;
        framer.consume(data + offset + fed, chunk);
        fed += chunk;
      }
      if (framer.loss() != FramingLoss::none && framer.at_boundary()) {
        std::abort();  // lost is never between two messages
      }
    }
    offset += take;
    write_size = write_size % max_write + 1;
  }
}

}  // namespace

// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) {
    return 0;
  }
  const Framing framing = kFramings[data[0] % std::size(kFramings)];
  const std::size_t max_write = 1 + data[1] % 64;
  const char* bytes = reinterpret_cast<const char*>(data + 2);
  size -= 2;

  MessageFramer whole;
  whole.start(framing, true);
  whole.consume(bytes, size);
  MessageFramer byte_by_byte;
  byte_by_byte.start(framing, true);
  feed(byte_by_byte, bytes, size, 1, false);
  MessageFramer cut;
  cut.start(framing, true);
  feed(cut, bytes, size, max_write, (data[1] & 0x80) != 0);

  // A line protocol checks a write's first bytes for a TLS record, so how it was cut matters there.
  if (framing == Framing::lines) {
    return 0;
  }
  for (const MessageFramer* other : {&byte_by_byte, &cut}) {
    if (other->loss() != whole.loss() || other->at_boundary() != whole.at_boundary()) {
      std::abort();
    }
  }
  return 0;
}
