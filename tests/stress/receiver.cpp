// The receiving side: accepts on two loopback listeners ("warm", whose connections the policy
// keeps warm, and "plain", whose connections must never see a heartbeat) and checks every
// byte of every stream against the frame format. Runs until told "finish" on stdin and every
// connection has ended, then prints one JSON line.
#include "modes.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "frame.hpp"
#include "util.hpp"

namespace tcptune::stress {

namespace {

constexpr std::size_t kListedErrors = 100;

struct ReceiverError {
  std::int64_t connection;  // the connection id from its frames, -1 before the first one
  std::string listener;
  std::uint64_t offset;  // byte offset in that connection's stream
  std::string what;
};

struct Totals {
  std::uint64_t connections[2] = {0, 0};  // warm, plain
  std::uint64_t frames = 0;
  std::uint64_t bytes = 0;      // everything received
  std::uint64_t app_bytes = 0;  // bytes of frames (everything but heartbeats)
  std::uint64_t heartbeats = 0;
  std::uint64_t connections_with_heartbeats = 0;
  std::uint64_t child_frames = 0;
  std::uint64_t child_bytes = 0;
  std::uint64_t handler_frames = 0;
  std::uint64_t ended_with_end_frame = 0;
  std::uint64_t ended_racy = 0;
  // Errors the stream survives: heartbeats inside frames written under TCP_CORK, with
  // MSG_MORE, or in one go (partial writes aside).
  std::uint64_t heartbeats_inside_corked = 0;
  std::uint64_t heartbeats_inside_more = 0;
  std::uint64_t heartbeats_inside_other = 0;
  std::uint64_t stray_heartbeats = 0;  // on a plain connection, or before the first frame
  std::uint64_t failed_streams = 0;    // streams whose check stopped at an error
  std::uint64_t error_count = 0;
  std::vector<ReceiverError> errors;
  std::unordered_set<std::uint32_t> connection_ids;
};

// One connection's stream, checked as it arrives.
class StreamCheck {
 public:
  StreamCheck(std::uint64_t seed, bool warm, Totals& totals) : seed_(seed), warm_(warm), totals_(totals) {}

  void consume(const std::uint8_t* data, std::size_t size) {
    totals_.bytes += size;
    std::size_t i = 0;
    while (i < size) {
      switch (state_) {
        case State::failed: offset_ += size - i; return;
        case State::boundary:
          if (data[i] == kHeartbeatByte) {
            // Where no heartbeat can be due, a newline is a stray one: an error, but the
            // stream stays checkable, so it is counted and skipped like any other.
            if (!warm_) {
              record("a newline between frames on a connection that is never kept warm: a stray heartbeat");
              ++totals_.stray_heartbeats;
            } else if (frames_ == 0) {
              record("a newline before the connection's first frame: a stray heartbeat");
              ++totals_.stray_heartbeats;
            }
            ++heartbeats_;
            ++totals_.heartbeats;
            ++offset_;
            ++i;
            continue;
          }
          if (ended_) {
            fail("data after the connection's end frame");
            continue;
          }
          state_ = State::header;
          header_have_ = 0;
          break;
        case State::header: {
          const std::size_t take = std::min(kHeaderSize - header_have_, size - i);
          std::memcpy(header_bytes_.data() + header_have_, data + i, take);
          header_have_ += take;
          i += take;
          offset_ += take;
          totals_.app_bytes += take;
          if (header_have_ == kHeaderSize) {
            start_payload();
          }
          break;
        }
        case State::payload: {
          const std::size_t take = std::min<std::size_t>(header_.length - payload_done_, size - i);
          const std::size_t matching = matching_payload(data + i, take);
          i += matching;
          offset_ += matching;
          payload_done_ += static_cast<std::uint32_t>(matching);
          totals_.app_bytes += matching;
          if (matching < take) {
            i += mismatch(data[i]) ? 1 : 0;
          } else if (payload_done_ == header_.length) {
            complete_frame();
          }
          break;
        }
      }
    }
  }

  // The stream ended (EOF), or was reset.
  void finish(bool reset) {
    if (heartbeats_ > 0) {
      ++totals_.connections_with_heartbeats;
    }
    if (state_ == State::failed) {
      return;
    }
    if (reset) {
      fail("connection reset by the sender");
    } else if (state_ != State::boundary) {
      fail("stream ended inside frame " + std::to_string(header_.sequence) + " (" + std::to_string(header_have_) +
           " header and " + std::to_string(payload_done_) + " payload bytes of it)");
    } else if (frames_ == 0) {
      fail("connection closed without sending a frame");
    } else if (ended_) {
      ++totals_.ended_with_end_frame;
    } else if (racy_) {
      ++totals_.ended_racy;
    } else {
      fail("stream ended after frame " + std::to_string(next_sequence_ - 1) + " without its end frame: frames lost");
    }
  }

 private:
  enum class State : std::uint8_t { boundary, header, payload, failed };

  void record(const std::string& what) {
    ++totals_.error_count;
    if (totals_.errors.size() < kListedErrors) {
      totals_.errors.push_back({connection_, warm_ ? "warm" : "plain", offset_, what});
    }
  }
  void fail(const std::string& what) {
    record(what);
    ++totals_.failed_streams;
    state_ = State::failed;
  }

  void start_payload() {
    FrameHeader header{};
    std::memcpy(&header, header_bytes_.data(), kHeaderSize);
    offset_ -= kHeaderSize;  // errors name the header's first byte
    if (header.magic != kFrameMagic) {
      char text[128];
      std::snprintf(text, sizeof text, "bad magic 0x%08x where frame %u's header was due", header.magic,
                    next_sequence_);
      fail(text + std::string(header_bytes_[0] == kHeartbeatByte ? " (starts with a newline)" : ""));
      return;
    }
    if (header.check != header_check(header)) {
      fail("frame header check fails (corrupted header) where frame " + std::to_string(next_sequence_) + " was due");
      return;
    }
    if (connection_ < 0) {
      if (header.sequence != 0) {
        fail("the first frame is " + std::to_string(header.sequence) + ", not 0");
        return;
      }
      if (!totals_.connection_ids.insert(header.connection).second) {
        fail("a second TCP connection with frames of connection " + std::to_string(header.connection));
        return;
      }
      connection_ = header.connection;
    } else if (header.connection != static_cast<std::uint32_t>(connection_)) {
      fail("a frame of connection " + std::to_string(header.connection) + " on this connection: stray bytes");
      return;
    }
    if (header.sequence != next_sequence_) {
      fail("frame " + std::to_string(header.sequence) + " where frame " + std::to_string(next_sequence_) +
           " was due (lost or reordered)");
      return;
    }
    if (header.length > kMaxPayload) {
      fail("frame length " + std::to_string(header.length) + " is larger than any the sender writes");
      return;
    }
    offset_ += kHeaderSize;
    header_ = header;
    payload_key_ = payload_key(seed_, header.connection, header.sequence);
    payload_done_ = 0;
    state_ = State::payload;
    if (header.length == 0) {
      complete_frame();
    }
  }

  // How many of these payload bytes are the frame's own, from the first on.
  std::size_t matching_payload(const std::uint8_t* data, std::size_t size) {
    std::array<std::uint8_t, 4096> expected{};
    for (std::size_t done = 0; done < size;) {
      const std::size_t take = std::min(expected.size(), size - done);
      fill_payload(payload_key_, payload_done_ + done, std::span(expected.data(), take));
      if (std::memcmp(expected.data(), data + done, take) != 0) {
        std::size_t at = 0;
        while (expected[at] == data[done + at]) {
          ++at;
        }
        return done + at;
      }
      done += take;
    }
    return size;
  }

  // A payload byte that is not the frame's. A newline is most likely a heartbeat sent inside
  // the message: an error, but one the stream survives, so it is skipped and counted as a
  // heartbeat and the rest of the stream is still checked (and every total stays comparable).
  // Anything else ends the check of this stream. True: skipped.
  bool mismatch(std::uint8_t got) {
    std::uint8_t expected = 0;
    fill_payload(payload_key_, payload_done_, std::span(&expected, 1));
    char text[200];
    std::snprintf(text, sizeof text, "payload byte %u of frame %u (length %u) is 0x%02x, expected 0x%02x%s",
                  payload_done_, header_.sequence, header_.length, got, expected,
                  got == kHeartbeatByte ? ": a heartbeat inside the frame" : "");
    if (got != kHeartbeatByte) {
      fail(text);
      return false;
    }
    record(text);
    ++heartbeats_;
    ++totals_.heartbeats;
    ++((header_.flags & kFlagCork) != 0   ? totals_.heartbeats_inside_corked
       : (header_.flags & kFlagMore) != 0 ? totals_.heartbeats_inside_more
                                          : totals_.heartbeats_inside_other);
    ++offset_;
    return true;
  }

  void complete_frame() {
    ++frames_;
    ++totals_.frames;
    ++next_sequence_;
    if ((header_.flags & kFlagChild) != 0) {
      ++totals_.child_frames;
      totals_.child_bytes += kHeaderSize + header_.length;
    }
    if ((header_.flags & kFlagHandler) != 0) {
      ++totals_.handler_frames;
    }
    racy_ = racy_ || (header_.flags & kFlagRacy) != 0;
    ended_ = (header_.flags & kFlagEnd) != 0;
    state_ = State::boundary;
  }

  std::uint64_t seed_;
  bool warm_;
  Totals& totals_;
  State state_ = State::boundary;
  std::uint64_t offset_ = 0;
  std::array<std::uint8_t, kHeaderSize> header_bytes_{};
  std::size_t header_have_ = 0;
  FrameHeader header_{};
  std::uint64_t payload_key_ = 0;
  std::uint32_t payload_done_ = 0;
  std::int64_t connection_ = -1;
  std::uint32_t next_sequence_ = 0;
  std::uint64_t frames_ = 0;
  std::uint64_t heartbeats_ = 0;
  bool ended_ = false;
  bool racy_ = false;
};

int listen_on(const std::string& address) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_in where{};
  where.sin_family = AF_INET;
  where.sin_port = 0;
  if (fd < 0 || inet_pton(AF_INET, address.c_str(), &where.sin_addr) != 1 ||
      bind(fd, reinterpret_cast<sockaddr*>(&where), sizeof where) != 0 || listen(fd, 4096) != 0) {
    die("cannot listen on " + address + ": " + std::strerror(errno));
  }
  return fd;
}

int port_of(int fd) {
  sockaddr_in where{};
  socklen_t length = sizeof where;
  getsockname(fd, reinterpret_cast<sockaddr*>(&where), &length);
  return ntohs(where.sin_port);
}

void on_tick(int /*signal*/) {}

std::string report(const Totals& totals, std::uint64_t open_connections) {
  std::string errors = "[";
  for (const ReceiverError& error : totals.errors) {
    errors += (errors.size() > 1 ? "," : "") + Json()
                                                   .field("connection", error.connection)
                                                   .field("listener", error.listener)
                                                   .field("offset", error.offset)
                                                   .field("what", error.what)
                                                   .str();
  }
  errors += "]";
  return Json()
      .field("connections", totals.connections[0] + totals.connections[1])
      .field("warm_connections", totals.connections[0])
      .field("plain_connections", totals.connections[1])
      .field("frames", totals.frames)
      .field("bytes", totals.bytes)
      .field("app_bytes", totals.app_bytes)
      .field("heartbeats", totals.heartbeats)
      .field("connections_with_heartbeats", totals.connections_with_heartbeats)
      .field("child_frames", totals.child_frames)
      .field("child_bytes", totals.child_bytes)
      .field("handler_frames", totals.handler_frames)
      .field("ended_with_end_frame", totals.ended_with_end_frame)
      .field("ended_racy", totals.ended_racy)
      .field("still_open", open_connections)
      .field("heartbeats_inside_corked", totals.heartbeats_inside_corked)
      .field("heartbeats_inside_more", totals.heartbeats_inside_more)
      .field("heartbeats_inside_other", totals.heartbeats_inside_other)
      .field("stray_heartbeats", totals.stray_heartbeats)
      .field("failed_streams", totals.failed_streams)
      .field("error_count", totals.error_count)
      .raw("errors", errors)
      .str();
}

}  // namespace

int run_receiver(const Args& args) {
  const std::uint64_t seed = static_cast<std::uint64_t>(args.number("--seed", 1));
  const std::string address = args.text("--address", "127.0.0.1");
  const std::int64_t finish_timeout_ns = args.number("--finish-timeout-ms", 20'000) * 1'000'000;
  raise_fd_limit(static_cast<std::uint64_t>(args.number("--max-connections", 30'000)) + 100);
  signal(SIGPIPE, SIG_IGN);
  if (args.flag("--signals")) {
    // A 1 ms SIGALRM without SA_RESTART: epoll_wait fails with EINTR over and over.
    struct sigaction action {};
    action.sa_handler = on_tick;
    sigaction(SIGALRM, &action, nullptr);
    itimerval every_ms{{0, 1000}, {0, 1000}};
    setitimer(ITIMER_REAL, &every_ms, nullptr);
  }
  // Listeners handed down by the harness (so a policy can name their ports before this
  // process starts under the shim), or our own.
  int listeners[2] = {-1, -1};
  if (const std::string fds = args.text("--listen-fds", ""); !fds.empty()) {
    if (std::sscanf(fds.c_str(), "%d,%d", &listeners[0], &listeners[1]) != 2) {
      die("--listen-fds needs WARM,PLAIN");
    }
    for (const int fd : listeners) {
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    }
  } else {
    listeners[0] = listen_on(address);
    listeners[1] = listen_on(address);
  }
  std::printf("ports %d %d\n", port_of(listeners[0]), port_of(listeners[1]));
  std::fflush(stdout);

  const int poller = epoll_create1(EPOLL_CLOEXEC);
  auto watch = [&](int fd) {
    epoll_event event{};
    event.events = EPOLLIN | EPOLLRDHUP;
    event.data.fd = fd;
    epoll_ctl(poller, EPOLL_CTL_ADD, fd, &event);
  };
  watch(listeners[0]);
  watch(listeners[1]);
  watch(STDIN_FILENO);

  Totals totals;
  std::unordered_map<int, std::unique_ptr<StreamCheck>> streams;
  std::vector<std::uint8_t> buffer(std::size_t{256} << 10);
  std::string commands;
  std::int64_t finish_deadline = 0;  // 0: not finishing yet
  std::array<epoll_event, 256> events{};

  auto accept_all = [&](int which) {
    for (;;) {
      const int fd = accept4(listeners[which], nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) {
          continue;
        }
        return;
      }
      ++totals.connections[which];
      streams[fd] = std::make_unique<StreamCheck>(seed, which == 0, totals);
      watch(fd);
    }
  };

  for (;;) {
    if (finish_deadline != 0) {
      accept_all(0);  // the sender has exited: whatever it connected is queued by now
      accept_all(1);
      if (streams.empty() || monotonic_ns() > finish_deadline) {
        break;
      }
    }
    const int ready = epoll_wait(poller, events.data(), static_cast<int>(events.size()), 100);
    for (int e = 0; e < ready; ++e) {
      const int fd = events[e].data.fd;
      if (fd == listeners[0] || fd == listeners[1]) {
        accept_all(fd == listeners[0] ? 0 : 1);
        continue;
      }
      if (fd == STDIN_FILENO) {
        char text[256];
        const ssize_t n = read(STDIN_FILENO, text, sizeof text);
        if (n > 0) {
          commands.append(text, static_cast<std::size_t>(n));
        }
        if (n == 0 || commands.find("finish") != std::string::npos) {
          finish_deadline = monotonic_ns() + finish_timeout_ns;
          epoll_ctl(poller, EPOLL_CTL_DEL, STDIN_FILENO, nullptr);
        }
        continue;
      }
      const auto found = streams.find(fd);
      if (found == streams.end()) {
        continue;
      }
      const ssize_t n = recv(fd, buffer.data(), buffer.size(), 0);
      if (n > 0) {
        found->second->consume(buffer.data(), static_cast<std::size_t>(n));
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        continue;
      }
      found->second->finish(n < 0);
      streams.erase(found);
      close(fd);
    }
  }
  if (!streams.empty()) {
    ++totals.error_count;
    totals.errors.push_back({-1, "", 0,
                             std::to_string(streams.size()) + " connections still open " +
                                 std::to_string(finish_timeout_ns / 1'000'000) + " ms after the sender finished"});
  }
  std::printf("%s\n", report(totals, streams.size()).c_str());
  std::fflush(stdout);
  return 0;
}

}  // namespace tcptune::stress
