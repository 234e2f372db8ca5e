// The stress test's wire format. Every frame describes itself, so the receiver can check every
// byte of a stream it knows nothing else about:
//   magic "STR1", connection id, sequence number (per connection, from 0), payload length,
//   flags, a check word over those fields, then `length` payload bytes that are a pure
//   function of (seed, connection, sequence, offset).
// Between frames a stream may carry the keep-warm heartbeat, a newline; inside a frame a
// newline is just another byte and must match the payload.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace tcptune::stress {

inline constexpr std::uint32_t kFrameMagic = 0x31525453;  // "STR1" in memory order
inline constexpr std::uint8_t kHeartbeatByte = '\n';
inline constexpr std::uint32_t kMaxPayload = 16U << 20;

enum FrameFlag : std::uint32_t {
  kFlagEnd = 1U << 0,      // the connection's last frame: nothing but heartbeats may follow
  kFlagRacy = 1U << 1,     // closed by another thread during a write: may end without kFlagEnd
  kFlagChild = 1U << 2,    // written by a forked child
  kFlagHandler = 1U << 3,  // written from a signal handler
  kFlagCork = 1U << 4,     // header and body written under TCP_CORK, in two calls
  kFlagMore = 1U << 5,     // the header written with MSG_MORE, the body in a later call
};

struct FrameHeader {
  std::uint32_t magic = kFrameMagic;
  std::uint32_t connection = 0;
  std::uint32_t sequence = 0;
  std::uint32_t length = 0;
  std::uint32_t flags = 0;
  std::uint32_t check = 0;
};
static_assert(sizeof(FrameHeader) == 24);
inline constexpr std::size_t kHeaderSize = sizeof(FrameHeader);

// splitmix64's finalizer: a cheap, well-mixed counter-based generator.
constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

constexpr std::uint32_t header_check(const FrameHeader& header) noexcept {
  std::uint64_t h = mix64(header.magic ^ (std::uint64_t{header.connection} << 32));
  h = mix64(h ^ header.sequence ^ (std::uint64_t{header.length} << 32));
  h = mix64(h ^ header.flags);
  return static_cast<std::uint32_t>(h ^ (h >> 32));
}

constexpr FrameHeader make_header(std::uint32_t connection, std::uint32_t sequence, std::uint32_t length,
                                  std::uint32_t flags) noexcept {
  FrameHeader header{kFrameMagic, connection, sequence, length, flags, 0};
  header.check = header_check(header);
  return header;
}

constexpr std::uint64_t payload_key(std::uint64_t seed, std::uint32_t connection, std::uint32_t sequence) noexcept {
  return mix64(mix64(seed ^ (std::uint64_t{connection} << 32)) ^ sequence);
}

// Payload bytes [offset, offset + out.size()) of the frame with this key. Stateless per byte
// offset, so a receiver can check any slice of a frame as it arrives. Async-signal-safe.
inline void fill_payload(std::uint64_t key, std::uint64_t offset, std::span<std::uint8_t> out) noexcept {
  std::size_t done = 0;
  while (done < out.size()) {
    const std::uint64_t position = offset + done;
    const std::uint64_t word = mix64(key + position / 8);
    const auto skip = static_cast<std::size_t>(position % 8);
    if (skip == 0 && out.size() - done >= 8) {
      std::memcpy(out.data() + done, &word, 8);
      done += 8;
      continue;
    }
    const std::size_t take = std::min<std::size_t>(8 - skip, out.size() - done);
    std::memcpy(out.data() + done, reinterpret_cast<const std::uint8_t*>(&word) + skip, take);
    done += take;
  }
}

}  // namespace tcptune::stress
