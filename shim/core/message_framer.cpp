#include "message_framer.hpp"

#include <algorithm>
#include <cstring>
#include <string_view>

namespace tcptune::shim {

namespace {

using config::Framing;
using namespace std::string_view_literals;

// A declared length beyond this is no protocol's: the stream is not what the preset says.
constexpr std::uint64_t kMaxDeclaredLength = std::uint64_t{1} << 48;
// The first byte of a TLS record carrying a handshake (a ClientHello starts every TLS stream).
constexpr char kTlsHandshake = 0x16;
// A TLS record's version byte that follows its content type (SSL 3.0 to TLS 1.3: 0x03).
constexpr char kTlsMajorVersion = 0x03;
constexpr unsigned char kAmqpFrameEnd = 0xCE;
constexpr std::size_t kAmqpFrameHeader = 7;
constexpr std::size_t kAmqpProtocolHeader = 8;  // "AMQP" 0 0 9 1
// AMQP 0-9-1 connection class (10): open (40, the client's last handshake frame) and open-ok
// (41, the server's). Heartbeat frames are valid once the handshake is done.
constexpr unsigned kAmqpConnectionClass = 10;
constexpr unsigned kAmqpConnectionOpen = 40;
constexpr unsigned kAmqpConnectionOpenOk = 41;

char lower(char byte) {
  return byte >= 'A' && byte <= 'Z' ? static_cast<char>(byte - 'A' + 'a') : byte;
}

int digit_value(char byte, unsigned base) {
  if (byte >= '0' && byte <= '9') {
    return byte - '0';
  }
  const char folded = lower(byte);
  if (base == 16 && folded >= 'a' && folded <= 'f') {
    return folded - 'a' + 10;
  }
  return -1;
}

// The index of the first `byte` at or after `from`, or `size`: bytes that say nothing about
// where the message ends (the rest of a line, a body up to its NUL) are passed over at memchr's
// speed.
std::size_t find_byte(const char* data, std::size_t from, std::size_t size, char byte) {
  const void* end = std::memchr(data + from, byte, size - from);
  return end == nullptr ? size : static_cast<std::size_t>(static_cast<const char*>(end) - data);
}

unsigned big_endian(const char* bytes, std::size_t size) {
  unsigned value = 0;
  for (std::size_t i = 0; i < size; ++i) {
    value = (value << 8U) | static_cast<unsigned char>(bytes[i]);
  }
  return value;
}

}  // namespace

const char* framing_loss_name(FramingLoss loss) noexcept {
  switch (loss) {
    case FramingLoss::none: return "none";
    case FramingLoss::unseen_bytes: return "unseen_bytes";
    case FramingLoss::concurrent_writes: return "concurrent_writes";
    case FramingLoss::tls: return "tls";
    case FramingLoss::http2: return "http2";
    case FramingLoss::http_upgrade: return "http_upgrade";
    case FramingLoss::http_connect: return "http_connect";
    case FramingLoss::malformed: return "malformed";
    case FramingLoss::adopted: return "adopted";
  }
  return "unknown";
}

void MessageFramer::start(Framing framing, bool fresh) noexcept {
  framing_ = framing;
  phase_ = Phase::boundary;
  after_ = AfterBody::boundary;
  loss_.store(FramingLoss::none, std::memory_order_relaxed);
  stream_start_ = true;
  ends_with_newline_ = fresh;  // a line protocol finds its place again at the next newline
  amqp_open_ = false;
  remaining_ = 0;
  if (!fresh && framing != Framing::guessed && framing != Framing::lines) {
    lose(FramingLoss::adopted);
  }
}

void MessageFramer::lose(FramingLoss loss) noexcept {
  if (loss_.load(std::memory_order_relaxed) == FramingLoss::none) {
    loss_.store(loss, std::memory_order_relaxed);
  }
}

bool MessageFramer::at_boundary() const noexcept {
  if (loss() != FramingLoss::none) {
    return false;
  }
  switch (framing_) {
    case Framing::guessed: return true;
    case Framing::lines: return ends_with_newline_;
    case Framing::amqp091: return phase_ == Phase::boundary && amqp_open_;
    case Framing::stomp: return phase_ == Phase::boundary && !stream_start_;  // EOLs only follow frames
    default: return phase_ == Phase::boundary;
  }
}

std::size_t MessageFramer::skippable(std::size_t size) const noexcept {
  switch (framing_) {
    case Framing::guessed: return size;
    case Framing::lines: return size == 0 ? 0 : size - 1;  // the last byte alone decides
    default: return phase_ == Phase::body ? static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, size)) : 0;
  }
}

void MessageFramer::skip(std::size_t size) noexcept {
  if (size == 0 || framing_ == Framing::guessed) {
    return;
  }
  stream_start_ = false;
  if (framing_ == Framing::lines) {
    ends_with_newline_ = false;  // until a byte it sees says otherwise
    return;
  }
  if (phase_ != Phase::body || size > remaining_) {
    lose(FramingLoss::unseen_bytes);
    return;
  }
  remaining_ -= size;
  if (remaining_ == 0) {
    end_counted();
  }
}

void MessageFramer::consume(const char* data, std::size_t size) noexcept {
  if (size == 0 || framing_ == Framing::guessed || loss() != FramingLoss::none) {
    return;
  }
  if (framing_ == Framing::lines) {
    // A TLS record where a line would start: STARTTLS, and a newline inside it is no line's end.
    if (ends_with_newline_ && data[0] >= 0x14 && data[0] <= 0x17 && (size < 2 || data[1] == kTlsMajorVersion)) {
      lose(FramingLoss::tls);
      return;
    }
    ends_with_newline_ = data[size - 1] == '\n';
    return;
  }
  while (size > 0 && loss() == FramingLoss::none) {
    std::size_t used = 0;
    if (phase_ == Phase::body) {
      used = static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, size));
      remaining_ -= used;
      if (remaining_ == 0) {
        end_counted();
      }
    } else {
      switch (framing_) {
        case Framing::http1_request: used = step_http(data, size); break;
        case Framing::resp_request: used = step_resp(data, size); break;
        case Framing::stomp: used = step_stomp(data, size); break;
        case Framing::amqp091: used = step_amqp(data, size); break;
        default: return;
      }
    }
    stream_start_ = false;
    data += used;
    size -= used;
  }
}

void MessageFramer::count_down(std::uint64_t length, AfterBody after) noexcept {
  if (length > kMaxDeclaredLength) {
    lose(FramingLoss::malformed);
    return;
  }
  remaining_ = length;
  after_ = after;
  phase_ = Phase::body;
  if (length == 0) {
    end_counted();
  }
}

void MessageFramer::end_counted() noexcept {
  switch (after_) {
    case AfterBody::boundary: phase_ = Phase::boundary; break;
    case AfterBody::chunk:
      phase_ = Phase::chunk_size;
      number_ = 0;
      break;
    case AfterBody::resp_element: phase_ = --elements_ == 0 ? Phase::boundary : Phase::resp_element; break;
    case AfterBody::stomp_nul: phase_ = Phase::stomp_nul; break;
    case AfterBody::amqp_frame_end: phase_ = Phase::amqp_frame_end; break;
    case AfterBody::protocol_header: phase_ = Phase::boundary; break;
  }
}

bool MessageFramer::add_digit(char byte, unsigned base) noexcept {
  const int digit = digit_value(byte, base);
  if (digit < 0 || number_ > kMaxDeclaredLength) {
    lose(FramingLoss::malformed);
    return false;
  }
  number_ = number_ * base + static_cast<unsigned>(digit);
  return true;
}

bool MessageFramer::empty_line_byte(char byte) noexcept {
  if (byte == '\r') {
    phase_ = Phase::empty_line;  // a CR alone is not yet the end of the line
    return true;
  }
  phase_ = Phase::boundary;  // after a LF, or a CR that no LF followed: a message starts here
  return byte == '\n';
}

// ---- Header lines (HTTP/1.1 fields, STOMP headers) ----

void MessageFramer::start_header_line() noexcept {
  line_empty_ = true;
  in_value_ = false;
  name_size_ = 0;
  header_ = Header::other;
}

void MessageFramer::end_header_name() noexcept {
  in_value_ = true;
  header_ = Header::other;
  const std::string_view name(name_, std::min<std::size_t>(name_size_, kNameMax));
  if (name_size_ > kNameMax) {
    return;
  }
  if (name == "content-length"sv) {
    // STOMP: the first of repeated headers counts; HTTP: repeated ones must agree, and the
    // last one read is what a lenient server would use too.
    if (framing_ == Framing::stomp && has_length_) {
      return;
    }
    header_ = Header::content_length;
    number_ = 0;
    token_size_ = 0;  // digits read
  } else if (framing_ == Framing::http1_request && name == "transfer-encoding"sv) {
    header_ = Header::transfer_encoding;
    token_size_ = 0;
    token_ended_ = false;
  } else if (framing_ == Framing::http1_request && name == "upgrade"sv) {
    header_ = Header::upgrade;
  }
}

void MessageFramer::header_value_byte(char byte) noexcept {
  switch (header_) {
    case Header::other:
    case Header::upgrade: return;  // their values say nothing about the length
    case Header::content_length:
      if (byte != ' ' && byte != '\t' && add_digit(byte, 10)) {
        token_size_ = 1;
      }
      return;
    case Header::transfer_encoding:
      // The last coding decides: "gzip, chunked" is chunked, and so is "chunked," (RFC 9110
      // section 5.6.1: empty list elements do not count).
      if (byte == ',') {
        token_ended_ = true;
      } else if (byte != ' ' && byte != '\t') {
        if (token_ended_) {
          token_size_ = 0;
          token_ended_ = false;
        }
        if (token_size_ < sizeof token_) {
          token_[token_size_] = lower(byte);
        }
        token_size_ = token_size_ == UINT8_MAX ? token_size_ : static_cast<std::uint8_t>(token_size_ + 1);
      }
      return;
  }
}

void MessageFramer::end_header_line() noexcept {
  switch (header_) {
    case Header::other: break;
    case Header::content_length:
      if (token_size_ == 0) {
        lose(FramingLoss::malformed);  // no length: a server refuses the request, or guesses
      }
      has_length_ = true;  // its value stays in number_
      break;
    case Header::transfer_encoding:
      if (token_size_ != 0) {  // an empty field adds no coding to the list
        chunked_ = token_size_ == sizeof token_ && std::string_view(token_, sizeof token_) == "chunked"sv;
      }
      break;
    case Header::upgrade: upgrade_ = true; break;
  }
  start_header_line();
}

// True at the empty line that ends the head.
bool MessageFramer::head_byte(char byte) noexcept {
  if (byte == '\n') {
    if (line_empty_) {
      return true;
    }
    if (first_line_) {
      first_line_ = false;
      start_header_line();
      return false;
    }
    end_header_line();
    return false;
  }
  if (byte == '\r') {
    return false;
  }
  if (line_empty_ && !first_line_ && framing_ == Framing::http1_request && (byte == ' ' || byte == '\t')) {
    // obs-fold (RFC 9112 section 5.2): servers refuse it or unfold it into the previous field,
    // whose value (a length, a coding) the framer has already taken.
    lose(FramingLoss::malformed);
    return false;
  }
  line_empty_ = false;
  if (first_line_) {
    return false;
  }
  if (in_value_) {
    header_value_byte(byte);
  } else if (byte == ':') {
    end_header_name();
  } else if (name_size_ < kNameMax) {
    name_[name_size_++] = framing_ == Framing::http1_request ? lower(byte) : byte;  // STOMP's are case-sensitive
  } else {
    name_size_ = kNameMax + 1;
  }
  return false;
}

MessageFramer::HeadStep MessageFramer::head_step(const char* data, std::size_t& i, std::size_t size) noexcept {
  const char byte = data[i];
  // The rest of a line whose bytes say nothing about the length: a STOMP command, a field
  // the framer does not look at.
  if ((first_line_ || (in_value_ && header_ == Header::other)) && !line_empty_ && byte != '\n') {
    i = find_byte(data, i, size, '\n') - 1;
    return HeadStep::more;
  }
  if (head_byte(byte)) {
    return HeadStep::ended;
  }
  return loss() == FramingLoss::none ? HeadStep::more : HeadStep::lost;
}

// ---- HTTP/1.1 requests (RFC 9112) ----

void MessageFramer::end_http_head() noexcept {
  if (connect_) {
    lose(FramingLoss::http_connect);
  } else if (upgrade_) {
    lose(FramingLoss::http_upgrade);
  } else if (chunked_) {
    phase_ = Phase::chunk_size;
    number_ = 0;
  } else if (has_length_) {
    count_down(number_, AfterBody::boundary);
  } else {
    phase_ = Phase::boundary;  // a request without either has no body
  }
}

void MessageFramer::end_chunk_size_line() noexcept {
  if (number_ == 0) {
    phase_ = Phase::trailer_line;
    start_header_line();
  } else {
    count_down(number_ + 2, AfterBody::chunk);  // the chunk and its CRLF
  }
}

std::size_t MessageFramer::step_http(const char* data, std::size_t size) noexcept {
  for (std::size_t i = 0; i < size; ++i) {
    const char byte = data[i];
    switch (phase_) {
      case Phase::empty_line:
      case Phase::boundary:
        if (empty_line_byte(byte)) {
          break;  // empty lines before a request line are allowed (and are the heartbeat)
        }
        if (byte == kTlsHandshake) {
          lose(FramingLoss::tls);
          return i + 1;
        }
        phase_ = Phase::request_line;
        chunked_ = has_length_ = upgrade_ = connect_ = false;
        name_size_ = 0;
        [[fallthrough]];
      case Phase::request_line:
        if (name_size_ > kNameMax && byte != '\n') {  // past the method
          i = find_byte(data, i, size, '\n') - 1;
        } else if (byte == '\n') {
          phase_ = Phase::head_line;
          first_line_ = false;
          start_header_line();
        } else if (name_size_ <= kNameMax) {  // the method, up to its space
          if (byte == ' ') {
            const std::string_view method(name_, name_size_);
            connect_ = method == "CONNECT"sv;
            if (method == "PRI"sv) {  // "PRI * HTTP/2.0": the HTTP/2 connection preface
              lose(FramingLoss::http2);
              return i + 1;
            }
            name_size_ = kNameMax + 1;
          } else if (name_size_ < kNameMax) {
            name_[name_size_++] = byte;
          } else {
            name_size_ = kNameMax + 1;
          }
        }
        break;
      case Phase::head_line:
        if (const HeadStep step = head_step(data, i, size); step != HeadStep::more) {
          if (step == HeadStep::ended) {
            end_http_head();
          }
          return i + 1;
        }
        break;
      case Phase::chunk_size:
        if (byte == '\n') {
          end_chunk_size_line();
          return i + 1;
        }
        if (byte == ';' || byte == ' ' || byte == '\t') {
          phase_ = Phase::chunk_extension;
        } else if (byte != '\r' && !add_digit(byte, 16)) {
          return i + 1;
        }
        break;
      case Phase::chunk_extension:
        if (byte == '\n') {
          end_chunk_size_line();
          return i + 1;
        }
        break;
      case Phase::trailer_line:
        if (byte == '\n') {
          if (line_empty_) {
            phase_ = Phase::boundary;
          }
          line_empty_ = true;
        } else if (byte != '\r') {
          line_empty_ = false;
        }
        break;
      default: lose(FramingLoss::malformed); return i + 1;
    }
  }
  return size;
}

// ---- Redis commands (RESP arrays of bulk strings, or inline) ----

std::size_t MessageFramer::step_resp(const char* data, std::size_t size) noexcept {
  for (std::size_t i = 0; i < size; ++i) {
    const char byte = data[i];
    switch (phase_) {
      case Phase::empty_line:
      case Phase::boundary:
        if (empty_line_byte(byte)) {
          break;  // an empty inline command: none (and the heartbeat)
        }
        if (byte == kTlsHandshake) {
          lose(FramingLoss::tls);
          return i + 1;
        }
        if (byte == '*') {
          phase_ = Phase::resp_count;
          number_ = 0;
          negative_ = false;
        } else {
          phase_ = Phase::line;
        }
        break;
      case Phase::line:
        i = find_byte(data, i, size, '\n');
        if (i == size) {
          return size;
        }
        phase_ = Phase::boundary;
        break;
      case Phase::resp_count:
      case Phase::resp_length:
        if (byte == '\n') {
          const bool count = phase_ == Phase::resp_count;
          if (count) {
            elements_ = negative_ ? 0 : number_;
            phase_ = elements_ == 0 ? Phase::boundary : Phase::resp_element;
          } else if (negative_) {  // "$-1": a null bulk string
            phase_ = --elements_ == 0 ? Phase::boundary : Phase::resp_element;
          } else {
            count_down(number_ + 2, AfterBody::resp_element);  // the string and its CRLF
            return i + 1;
          }
        } else if (byte == '-' && number_ == 0) {
          negative_ = true;
        } else if (byte != '\r' && !add_digit(byte, 10)) {
          return i + 1;
        }
        break;
      case Phase::resp_element:
        if (byte != '$') {
          lose(FramingLoss::malformed);  // a command's arguments are bulk strings
          return i + 1;
        }
        phase_ = Phase::resp_length;
        number_ = 0;
        negative_ = false;
        break;
      default: lose(FramingLoss::malformed); return i + 1;
    }
  }
  return size;
}

// ---- STOMP frames (STOMP 1.2: command, headers, blank line, body, NUL) ----

void MessageFramer::end_stomp_head() noexcept {
  if (has_length_) {
    count_down(number_, AfterBody::stomp_nul);
  } else {
    phase_ = Phase::stomp_until_nul;
  }
}

std::size_t MessageFramer::step_stomp(const char* data, std::size_t size) noexcept {
  for (std::size_t i = 0; i < size; ++i) {
    const char byte = data[i];
    switch (phase_) {
      case Phase::empty_line:
      case Phase::boundary:
        if (empty_line_byte(byte)) {
          break;  // EOLs between frames are heart-beats
        }
        if (byte == kTlsHandshake) {
          lose(FramingLoss::tls);
          return i + 1;
        }
        phase_ = Phase::head_line;
        has_length_ = false;
        start_header_line();
        first_line_ = true;
        [[fallthrough]];
      case Phase::head_line:
        if (const HeadStep step = head_step(data, i, size); step != HeadStep::more) {
          if (step == HeadStep::ended) {
            end_stomp_head();
          }
          return i + 1;
        }
        break;
      case Phase::stomp_until_nul:
        i = find_byte(data, i, size, '\0');
        if (i == size) {
          return size;
        }
        phase_ = Phase::boundary;
        break;
      case Phase::stomp_nul:
        if (byte != '\0') {
          lose(FramingLoss::malformed);
          return i + 1;
        }
        phase_ = Phase::boundary;
        break;
      default: lose(FramingLoss::malformed); return i + 1;
    }
  }
  return size;
}

// ---- AMQP 0-9-1 (section 4.2.3: type, channel, size, payload, frame-end) ----

void MessageFramer::start_amqp_frame() noexcept {
  const auto type = static_cast<unsigned char>(token_[0]);
  const unsigned channel = big_endian(token_ + 1, 2);
  number_ = big_endian(token_ + 3, 4);
  constexpr unsigned char kMethod = 1;
  constexpr unsigned char kHeartbeat = 8;
  if (type != kMethod && type != 2 && type != 3 && type != kHeartbeat) {
    lose(FramingLoss::malformed);
    return;
  }
  if (!amqp_open_ && type == kMethod && channel == 0 && number_ >= 4) {
    phase_ = Phase::amqp_method;  // the handshake's frames: is this its last one?
    name_size_ = 0;
    return;
  }
  count_down(number_, AfterBody::amqp_frame_end);
}

std::size_t MessageFramer::step_amqp(const char* data, std::size_t size) noexcept {
  for (std::size_t i = 0; i < size; ++i) {
    const char byte = data[i];
    switch (phase_) {
      case Phase::boundary:
        if (stream_start_ && byte == kTlsHandshake) {
          lose(FramingLoss::tls);
          return i + 1;
        }
        if (stream_start_ && byte == 'A') {  // the client's protocol header
          count_down(kAmqpProtocolHeader - 1, AfterBody::protocol_header);
          return i + 1;
        }
        phase_ = Phase::amqp_header;
        token_size_ = 0;
        [[fallthrough]];
      case Phase::amqp_header:
        token_[token_size_++] = byte;
        if (token_size_ == kAmqpFrameHeader) {
          start_amqp_frame();
          return i + 1;
        }
        break;
      case Phase::amqp_method:
        name_[name_size_++] = byte;
        if (name_size_ == 4) {
          const unsigned class_id = big_endian(name_, 2);
          const unsigned method_id = big_endian(name_ + 2, 2);
          amqp_open_ = class_id == kAmqpConnectionClass &&
                       (method_id == kAmqpConnectionOpen || method_id == kAmqpConnectionOpenOk);
          count_down(number_ - 4, AfterBody::amqp_frame_end);
          return i + 1;
        }
        break;
      case Phase::amqp_frame_end:
        if (static_cast<unsigned char>(byte) != kAmqpFrameEnd) {
          lose(FramingLoss::malformed);
          return i + 1;
        }
        phase_ = Phase::boundary;
        break;
      default: lose(FramingLoss::malformed); return i + 1;
    }
  }
  return size;
}

}  // namespace tcptune::shim
