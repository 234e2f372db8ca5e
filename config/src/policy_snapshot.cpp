// The snapshot format. Header, then a body the header's checksum covers:
//   8 bytes  magic "TCPTPOL\n"
//   u32      format version (kFormatVersion)
//   u32      build id length, then the build id
//   u64      body length (the rest of the snapshot, exactly)
//   u64      FNV-1a 64 of the body
//   body     source name, text, then the Policy's fields in the order of describe() below
// Integers are little-endian of fixed width; a string is a u32 length and its bytes; an optional
// a u8 (0 or 1) and the value; a vector a u32 count and the elements. One describe() per struct
// serves the writer and the reader, so the two cannot disagree on the order.
#include "tcptune/config/policy_snapshot.hpp"

#include <concepts>
#include <cstring>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

namespace tcptune::config {

namespace {

constexpr char kMagic[8] = {'T', 'C', 'P', 'T', 'P', 'O', 'L', '\n'};
// Bump with any change to what describe() writes.
constexpr std::uint32_t kFormatVersion = 1;

// A field added to one of these structs changes its size: describe it below (and bump
// kFormatVersion), then update the size here. Sizes of libstdc++ on x86-64, for g++ and clang.
static_assert(sizeof(void*) != 8 || sizeof(Tuning) == 336, "Tuning changed: describe the new field below");
static_assert(sizeof(void*) != 8 || sizeof(KeepWarm) == 96, "KeepWarm changed: describe the new field below");
static_assert(sizeof(void*) != 8 || sizeof(BufferSpec) == 72, "BufferSpec changed: describe the new field below");
static_assert(sizeof(void*) != 8 || sizeof(LogSettings) == 120, "LogSettings changed: describe the new field below");
static_assert(sizeof(void*) != 8 || sizeof(Rule) == 824, "Rule changed: describe the new field below");
static_assert(sizeof(void*) != 8 || sizeof(Match) == 80, "Match changed: describe the new field below");
static_assert(sizeof(void*) != 8 || sizeof(Policy) == 520, "Policy changed: describe the new field below");

template <class T, class U>
concept Is = std::same_as<std::remove_const_t<T>, U>;

// The largest value of each enum the policy holds: a reader refuses anything past it.
template <class E>
constexpr E kLast = [] {
  static_assert(sizeof(E) == 0, "an enum of the policy without its last value here");
  return E{};
}();
template <>
constexpr NodelayMode kLast<NodelayMode> = NodelayMode::on_wait;
template <>
constexpr Role kLast<Role> = Role::server;
template <>
constexpr HeartbeatSide kLast<HeartbeatSide> = HeartbeatSide::server;
template <>
constexpr Framing kLast<Framing> = Framing::amqp091;
template <>
constexpr LogLevel kLast<LogLevel> = LogLevel::off;
template <>
constexpr LogFormat kLast<LogFormat> = LogFormat::jsonl;

template <class V>
void describe(V& v, Is<SourcePos> auto& p) {
  v(p.file), v(p.line), v(p.column);
}
template <class V>
void describe(V& v, Is<Cidr> auto& c) {
  v(c.family), v(c.bytes), v(c.prefix_len);
}
template <class V>
void describe(V& v, Is<PortRange> auto& r) {
  v(r.first), v(r.last);
}
template <class V>
void describe(V& v, Is<Match> auto& m) {
  v(m.peers), v(m.ports), v(m.role), v(m.programs);
}
template <class V>
void describe(V& v, Is<BufferSpec> auto& b) {
  v(b.bandwidth_bytes_per_s), v(b.rtt), v(b.rtt_auto), v(b.sndbuf), v(b.rcvbuf);
}
template <class V>
void describe(V& v, Is<Keepalive> auto& k) {
  v(k.idle), v(k.interval), v(k.count);
}
template <class V>
void describe(V& v, Is<RawSockopt> auto& o) {
  v(o.level), v(o.name), v(o.value), v(o.level_name), v(o.option_name);
}
template <class V>
void describe(V& v, Is<KeepWarm> auto& k) {
  v(k.payload), v(k.protocol), v(k.side), v(k.framing), v(k.interval), v(k.max_idle);
}
template <class V>
void describe(V& v, Is<Tuning> auto& t) {
  v(t.nodelay), v(t.buffers), v(t.override_app_buffers), v(t.congestion), v(t.keepalive), v(t.user_timeout);
  v(t.notsent_lowat), v(t.thin_linear_timeouts), v(t.quickack), v(t.callsite), v(t.tos), v(t.keep_warm);
  v(t.sockopts);
}
template <class V>
void describe(V& v, Is<Rule> auto& r) {
  v(r.name), v(r.match), v(r.tuning), v(r.effective), v(r.pos);
}
template <class V>
void describe(V& v, Is<LogSettings> auto& l) {
  v(l.path), v(l.level), v(l.format), v(l.prometheus_textfile), v(l.interval), v(l.slow_write);
  v(l.trace_writes), v(l.rotate_size), v(l.keep), v(l.callsite), v(l.summary);
}
template <class V>
void describe(V& v, Is<Policy> auto& p) {
  v(p.version), v(p.source), v(p.defaults), v(p.log), v(p.rules);
}

template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};
template <class T>
struct IsVector : std::false_type {};
template <class T>
struct IsVector<std::vector<T>> : std::true_type {};

class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}

  void unsigned_bytes(std::uint64_t value, int width) {
    for (int i = 0; i < width; ++i) {
      out_.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
    }
  }

  template <class T>
  void operator()(const T& value) {
    if constexpr (std::is_same_v<T, bool>) {
      unsigned_bytes(value ? 1 : 0, 1);
    } else if constexpr (std::is_enum_v<T>) {
      unsigned_bytes(static_cast<std::uint64_t>(value), 1);
    } else if constexpr (std::is_integral_v<T>) {
      unsigned_bytes(static_cast<std::uint64_t>(value), sizeof(T));
    } else if constexpr (std::is_same_v<T, Duration>) {
      unsigned_bytes(static_cast<std::uint64_t>(value.count()), 8);
    } else if constexpr (std::is_same_v<T, std::string>) {
      unsigned_bytes(value.size(), 4);
      out_.append(value);
    } else if constexpr (std::is_same_v<T, std::array<std::uint8_t, 16>>) {
      out_.append(reinterpret_cast<const char*>(value.data()), value.size());
    } else if constexpr (IsOptional<T>::value) {
      unsigned_bytes(value.has_value() ? 1 : 0, 1);
      if (value.has_value()) {
        (*this)(*value);
      }
    } else if constexpr (IsVector<T>::value) {
      unsigned_bytes(value.size(), 4);
      for (const auto& item : value) {
        (*this)(item);
      }
    } else {
      describe(*this, value);
    }
  }

 private:
  std::string& out_;
};

// Reads what Writer wrote; after the first value it cannot read (past the end, out of range) it
// reads nothing more and failed() says why.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}

  [[nodiscard]] bool failed() const { return !error_.empty(); }
  [[nodiscard]] const std::string& error() const { return error_; }
  [[nodiscard]] std::size_t left() const { return in_.size() - at_; }
  void fail(std::string why) {
    if (error_.empty()) {
      error_ = std::move(why);
    }
  }

  std::uint64_t unsigned_bytes(int width) {
    if (failed() || left() < static_cast<std::size_t>(width)) {
      fail("cut short");
      return 0;
    }
    std::uint64_t value = 0;
    for (int i = 0; i < width; ++i) {
      value |= static_cast<std::uint64_t>(static_cast<unsigned char>(in_[at_ + i])) << (8 * i);
    }
    at_ += static_cast<std::size_t>(width);
    return value;
  }

  std::string_view bytes(std::size_t count) {
    if (failed() || left() < count) {
      fail("cut short");
      return {};
    }
    const std::string_view out = in_.substr(at_, count);
    at_ += count;
    return out;
  }

  template <class T>
  void operator()(T& value) {
    if (failed()) {
      return;
    }
    if constexpr (std::is_same_v<T, bool>) {
      const std::uint64_t raw = unsigned_bytes(1);
      if (raw > 1) {
        fail("a flag other than 0 or 1");
      }
      value = raw == 1;
    } else if constexpr (std::is_enum_v<T>) {
      const std::uint64_t raw = unsigned_bytes(1);
      if (raw > static_cast<std::uint64_t>(kLast<T>)) {
        fail("a setting out of range");
      }
      value = static_cast<T>(raw);
    } else if constexpr (std::is_integral_v<T>) {
      value = static_cast<T>(unsigned_bytes(sizeof(T)));
    } else if constexpr (std::is_same_v<T, Duration>) {
      value = Duration(static_cast<Duration::rep>(unsigned_bytes(8)));
    } else if constexpr (std::is_same_v<T, std::string>) {
      value = std::string(bytes(unsigned_bytes(4)));
    } else if constexpr (std::is_same_v<T, std::array<std::uint8_t, 16>>) {
      const std::string_view raw = bytes(value.size());
      if (!failed()) {
        std::memcpy(value.data(), raw.data(), value.size());
      }
    } else if constexpr (IsOptional<T>::value) {
      bool present = false;
      (*this)(present);
      if (present) {
        (*this)(value.emplace());
      } else {
        value.reset();
      }
    } else if constexpr (IsVector<T>::value) {
      const std::uint64_t count = unsigned_bytes(4);
      if constexpr (std::is_same_v<T, std::vector<Rule>>) {
        if (count > kMaxRules) {
          fail("more rules than a policy may have");
        }
      }
      // One element at a time, each read before the next is made: a damaged count runs out of
      // bytes ("cut short") having allocated no more than the bytes read warrant.
      value.clear();
      for (std::uint64_t i = 0; i < count && !failed(); ++i) {
        (*this)(value.emplace_back());
      }
    } else {
      describe(*this, value);
    }
  }

 private:
  std::string_view in_;
  std::size_t at_ = 0;
  std::string error_;
};

// What the shim relies on that the loader guarantees and the bytes alone do not: a snapshot
// that passed its checksum from a build that wrote it holds these, so this only guards indexing.
std::optional<std::string> invariant_problem(const Policy& policy) {
  if (policy.rules.size() > kMaxRules) {
    return "more rules than a policy may have";
  }
  for (const Rule& rule : policy.rules) {
    for (const Cidr& peer : rule.match.peers) {
      if ((peer.family != 4 && peer.family != 6) || peer.prefix_len < 0 ||
          peer.prefix_len > (peer.family == 4 ? 32 : 128)) {
        return "an address prefix out of range";
      }
    }
    for (const PortRange& ports : rule.match.ports) {
      if (ports.first > ports.last) {
        return "a port range out of order";
      }
    }
  }
  return std::nullopt;
}

constexpr std::size_t kHeaderFixed = sizeof(kMagic) + 4 + 4;  // then the build id, body length, checksum

}  // namespace

std::uint64_t snapshot_checksum(std::string_view bytes) {
  std::uint64_t hash = 14695981039346656037ULL;
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ULL;
  }
  return hash;
}

std::uint64_t snapshot_key_hash(const SnapshotKey& key) {
  std::string framed;
  Writer writer(framed);
  for (const std::string_view part : {key.build_id, key.source_name, key.text}) {
    writer.unsigned_bytes(part.size(), 8);
    framed.append(part);
  }
  return snapshot_checksum(framed);
}

std::string encode_policy_snapshot(const Policy& policy, const SnapshotKey& key) {
  std::string body;
  Writer body_writer(body);
  body_writer(std::string(key.source_name));
  body_writer(std::string(key.text));
  body_writer(policy);

  std::string out(kMagic, sizeof(kMagic));
  Writer writer(out);
  writer.unsigned_bytes(kFormatVersion, 4);
  writer.unsigned_bytes(key.build_id.size(), 4);
  out.append(key.build_id);
  writer.unsigned_bytes(body.size(), 8);
  writer.unsigned_bytes(snapshot_checksum(body), 8);
  out.append(body);
  return out;
}

std::variant<Policy, std::string> decode_policy_snapshot(std::string_view bytes, const SnapshotKey& key) {
  using Result = std::variant<Policy, std::string>;
  auto refused = [](std::string why) { return Result(std::in_place_index<1>, std::move(why)); };
  if (bytes.size() < kHeaderFixed || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return refused("not a compiled policy");
  }
  Reader header(bytes.substr(sizeof(kMagic)));
  const std::uint64_t version = header.unsigned_bytes(4);
  if (version != kFormatVersion) {
    return refused("written in format " + std::to_string(version) + ", where this build reads format " +
                   std::to_string(kFormatVersion));
  }
  const std::uint64_t build_id_length = header.unsigned_bytes(4);
  const std::string_view build_id = header.bytes(build_id_length > kMaxSnapshotBuildId ? 0 : build_id_length);
  if (build_id_length > kMaxSnapshotBuildId || build_id != key.build_id) {
    return refused("compiled by another build of the core");
  }
  const std::uint64_t body_length = header.unsigned_bytes(8);
  const std::uint64_t checksum = header.unsigned_bytes(8);
  if (header.failed() || body_length != header.left()) {
    return refused("cut short or extended since it was written (its length does not match its header)");
  }
  const std::string_view body = header.bytes(header.left());
  if (snapshot_checksum(body) != checksum) {
    return refused("its checksum does not match: changed or damaged since it was written");
  }
  Reader reader(body);
  const std::string_view name = reader.bytes(reader.unsigned_bytes(4));
  const std::string_view text = reader.bytes(reader.unsigned_bytes(4));
  if (!reader.failed() && (name != key.source_name || text != key.text)) {
    return refused("compiled from another policy");
  }
  Policy policy;
  reader(policy);
  if (!reader.failed() && reader.left() != 0) {
    reader.fail("bytes after the policy");
  }
  if (!reader.failed()) {
    if (const auto problem = invariant_problem(policy)) {
      reader.fail(*problem);
    }
  }
  if (reader.failed()) {
    return refused("malformed: " + reader.error());
  }
  return Result(std::in_place_index<0>, std::move(policy));
}

}  // namespace tcptune::config
