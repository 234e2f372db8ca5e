// Where the app's messages end on a kept-warm connection, found by following the protocol's
// own framing over the bytes the kernel accepted from the app, so that a heartbeat goes only
// between two messages: never inside one, wherever the app's write calls happen to end (a
// relay or a streaming proxy forwards a message in as many writes as its input arrived in).
//
// The cost is constant per write over payload whose length was declared (a Content-Length, a
// chunk, a bulk string, a frame), and per byte only over message heads; a line protocol looks
// at the last byte alone. No allocation, no system call, async-signal-safe. The state is the
// app's writers': the keep-warm gate admits one at a time (a second writer at once makes the
// order of their bytes unknown, and the framer is then lost).
//
// Once lost (bytes it could not see, a stream that left the protocol) the framer never again
// reports a boundary: framing cannot resynchronise, so keep-warm ends on that connection.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "tcptune/config/policy.hpp"

namespace tcptune::shim {

// Why a connection's framing can no longer be followed (keep-warm ends there).
enum class FramingLoss : std::uint8_t {
  none,
  unseen_bytes,       // bytes reached the socket past the shim's sight (a splice from a pipe)
  concurrent_writes,  // two writes at once: the order of their bytes is unknown
  tls,                // a TLS handshake began: the stream is encrypted from here on
  http2,              // the HTTP/2 connection preface
  http_upgrade,       // a request with Upgrade: the protocol may switch after it
  http_connect,       // CONNECT: a tunnel follows the request
  malformed,          // bytes that do not parse as the protocol
  adopted,            // the connection carried bytes before the shim saw it
};

// "tls", "http_upgrade", ...: the name records use.
const char* framing_loss_name(FramingLoss loss) noexcept;

class MessageFramer {
 public:
  // A new connection whose stream starts here (`fresh`), or one found already carrying bytes.
  void start(config::Framing framing, bool fresh) noexcept;

  // Bytes the kernel accepted, in order.
  void consume(const char* data, std::size_t size) noexcept;
  // How many of the next `size` bytes can be passed over without being seen (a declared
  // length still to count down; for lines, all but the last byte).
  [[nodiscard]] std::size_t skippable(std::size_t size) const noexcept;
  // Passes over `size` accepted bytes unseen; more than skippable() loses the framing.
  void skip(std::size_t size) noexcept;
  void lose(FramingLoss loss) noexcept;
  // The descriptor is retired: its next connection starts with no loss to report.
  void clear_loss() noexcept { loss_.store(FramingLoss::none, std::memory_order_relaxed); }

  // A protocol's framing is followed (not raw bytes, where the caller guesses).
  [[nodiscard]] bool follows_protocol() const noexcept { return framing_ != config::Framing::guessed; }
  // True when the bytes accepted so far end on a message boundary.
  [[nodiscard]] bool at_boundary() const noexcept;
  [[nodiscard]] FramingLoss loss() const noexcept { return loss_.load(std::memory_order_relaxed); }

 private:
  enum class Phase : std::uint8_t {
    boundary,         // between messages
    empty_line,       // a CR between messages: an empty line until its LF
    line,             // lines, RESP inline command: until '\n'
    request_line,     // HTTP request line
    head_line,        // HTTP/STOMP: at the start of a header line, or in one
    body,             // a declared length to count down
    chunk_size,       // HTTP chunk-size line
    chunk_extension,  // HTTP chunk extension, up to '\n'
    trailer_line,     // HTTP trailer section after the last chunk
    resp_count,       // "*<n>\r\n"
    resp_element,     // expecting '$'
    resp_length,      // "$<n>\r\n"
    stomp_until_nul,  // a STOMP body without content-length
    stomp_nul,        // the NUL after a content-length body
    amqp_header,      // the 7-byte frame header
    amqp_method,      // a method frame's class and method ids, looked at until the handshake ends
    amqp_frame_end,   // the 0xCE octet
  };
  // The header line being read (HTTP, STOMP).
  enum class Header : std::uint8_t { other, content_length, transfer_encoding, upgrade };
  // What follows a counted-down length.
  enum class AfterBody : std::uint8_t { boundary, chunk, resp_element, stomp_nul, amqp_frame_end, protocol_header };

  // Each protocol's step over bytes not inside a counted length; returns the bytes used.
  std::size_t step_http(const char* data, std::size_t size) noexcept;
  std::size_t step_resp(const char* data, std::size_t size) noexcept;
  std::size_t step_stomp(const char* data, std::size_t size) noexcept;
  std::size_t step_amqp(const char* data, std::size_t size) noexcept;
  // Between messages: true for a byte of an empty line (CRLF or LF), which protocols allow there.
  bool empty_line_byte(char byte) noexcept;
  // One step over a head from data[i] (HTTP and STOMP): `i` moves to the last byte used.
  enum class HeadStep : std::uint8_t { more, ended, lost };
  HeadStep head_step(const char* data, std::size_t& i, std::size_t size) noexcept;
  // A header line's byte (HTTP and STOMP); true at the empty line that ends the head.
  bool head_byte(char byte) noexcept;
  void start_header_line() noexcept;
  void end_header_name() noexcept;
  void header_value_byte(char byte) noexcept;
  void end_header_line() noexcept;
  void end_chunk_size_line() noexcept;
  void start_amqp_frame() noexcept;
  void end_http_head() noexcept;
  void end_stomp_head() noexcept;
  void end_counted() noexcept;
  void count_down(std::uint64_t length, AfterBody after) noexcept;
  // A digit of a declared length: false (and the framing lost) for anything else or an overflow.
  bool add_digit(char byte, unsigned base) noexcept;

  static constexpr std::size_t kNameMax = 17;  // "transfer-encoding", the longest name looked for

  config::Framing framing_ = config::Framing::guessed;
  Phase phase_ = Phase::boundary;
  AfterBody after_ = AfterBody::boundary;
  std::atomic<FramingLoss> loss_{FramingLoss::none};  // read by the summary on another thread
  Header header_ = Header::other;
  bool stream_start_ = true;       // nothing written yet
  bool ends_with_newline_ = true;  // lines
  bool amqp_open_ = false;         // AMQP: the handshake's last frame (connection.open or open-ok) was written
  bool line_empty_ = true;         // header line: no byte but CR yet
  bool in_value_ = false;          // header line: past the ':'
  bool first_line_ = false;        // STOMP: the command line
  bool chunked_ = false;           // HTTP: the last transfer coding is chunked
  bool has_length_ = false;        // a content-length header was read
  bool upgrade_ = false;           // HTTP: Upgrade
  bool connect_ = false;           // HTTP: CONNECT
  bool negative_ = false;          // RESP: "*-1" or "$-1", nothing follows
  bool token_ended_ = false;       // HTTP: a ',' ended the transfer coding; the next one replaces it
  std::uint8_t name_size_ = 0;     // kNameMax + 1: longer than any name looked for
  std::uint8_t token_size_ = 0;    // AMQP header bytes so far; HTTP: a transfer coding's length,
                                   // or whether a content-length has a digit
  char name_[kNameMax] = {};       // a header's name (HTTP: lowercased) or the method; AMQP: class, method
  char token_[7] = {};             // AMQP frame header; HTTP: a transfer coding's first bytes
  std::uint64_t remaining_ = 0;    // of a counted length
  std::uint64_t number_ = 0;       // a length (content-length too), count or frame size being read
  std::uint64_t elements_ = 0;     // RESP: bulk strings still to come in this command
};

}  // namespace tcptune::shim
