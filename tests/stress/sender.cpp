// The sending side: the awkward things real programs do to their sockets, at once, for a
// bounded time. Worker threads own a set of connections each and write frames to them in
// every style (write, send, writev, sendmsg, MSG_MORE header then body, TCP_CORK around
// header and body), blocking and non-blocking, with pauses inside messages and between them
// longer than the heartbeat interval, under a 1 ms timer signal per thread whose handler
// writes frames of its own. Beside them: a thread that forks and execs /bin/true or
// /bin/sleep, workers that fork children writing to an inherited connection, and two threads
// racing closes against opens so descriptor numbers are reused across threads, some closes
// landing while another thread is inside a write on the same descriptor. Prints one JSON line
// with what it did.
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "frame.hpp"
#include "modes.hpp"

extern char** environ;

namespace tcptune::stress {

namespace {

constexpr int kSegmentSize = 1400;  // Ethernet-sized: bursts become window-limited and grow cwnd
constexpr std::uint32_t kLargestFrame = 1U << 20;
constexpr std::uint32_t kLargestRacingFrame = 4U << 20;
constexpr int kHandlerWriteEvery = 8;  // timer ticks between the handler's writes

struct Options {
  std::string address;
  int warm_port = 0;
  int plain_port = 0;
  std::uint64_t seed = 1;
  int threads = 8;
  int connections = 20;
  std::int64_t duration_ns = 0;
  std::int64_t interval_ns = 20'000'000;  // the policy's heartbeat interval, to outlast
  int plain_percent = 20;
  int racing_percent = 20;   // of the close races: closes during a write on another thread
  int exec_linger_ms = 100;  // every other exec'd program sleeps this long (0: all run /bin/true)
  bool signals = false;
  bool forks = false;
  bool close_races = false;
};

// What this process did. Atomics, relaxed: signal handlers add to them too. A forked child
// works on its own copy and reports its share through a pipe.
struct Counters {
  std::atomic<std::uint64_t> connections{0};  // TCP sockets connect()ed: what the shim summarizes
  std::atomic<std::uint64_t> writes{0};       // write-family calls on them, failed ones included
  std::atomic<std::uint64_t> bytes{0};        // bytes those calls accepted
  std::atomic<std::uint64_t> frames{0};
  std::atomic<std::uint64_t> partial_writes{0};
  std::atomic<std::uint64_t> eagain{0};
  std::atomic<std::uint64_t> eintr{0};
  std::atomic<std::uint64_t> signals{0};
  std::atomic<std::uint64_t> handler_frames{0};
  std::atomic<std::uint64_t> handler_errors{0};
  std::atomic<std::uint64_t> cork_pauses{0};
  std::atomic<std::uint64_t> more_pauses{0};
  std::atomic<std::uint64_t> idle_pauses{0};
  std::atomic<std::uint64_t> replaced{0};
  std::atomic<std::uint64_t> nonblocking_connections{0};
  std::atomic<std::uint64_t> nagle_connections{0};
  std::atomic<std::uint64_t> small_buffer_connections{0};
  std::atomic<std::uint64_t> inheritable_connections{0};
  std::atomic<std::uint64_t> exec_children{0};
  std::atomic<std::uint64_t> close_races{0};
  std::atomic<std::uint64_t> racing_writes{0};
  std::atomic<std::uint64_t> racing_writes_missed{0};  // the write returned before the close
  std::atomic<std::uint64_t> racing_bytes{0};
  std::atomic<std::uint64_t> fd_reuses{0};
};
Counters g;
std::atomic<std::uint32_t> g_next_connection_id{1};
std::atomic<int> g_last_closed_fd{-1};

// A forked child's share, sent to the parent through a pipe.
struct ChildReport {
  std::uint64_t inherited_writes = 0;
  std::uint64_t inherited_bytes = 0;
  std::uint64_t inherited_frames = 0;
  std::uint64_t own_connections = 0;
  std::uint64_t own_writes = 0;
  std::uint64_t own_bytes = 0;
  std::uint64_t own_frames = 0;
  char error[160] = {};
};

std::mutex g_report_mutex;  // never taken in a forked child: another thread may have held it
std::vector<std::string> g_errors;
std::uint64_t g_error_count = 0;
std::vector<std::pair<pid_t, ChildReport>> g_children;

void app_error(const std::string& what) {
  const std::lock_guard lock(g_report_mutex);
  ++g_error_count;
  if (g_errors.size() < 50) {
    g_errors.push_back(what);
  }
}

struct Connection {
  int fd = -1;
  std::uint32_t id = 0;
  std::uint32_t next_sequence = 0;
  std::uint32_t flags = 0;  // on every frame: kFlagRacy, kFlagChild, kFlagHandler
  bool warm = true;
  bool nonblocking = false;
  bool inheritable = false;  // no FD_CLOEXEC: forked children write to it
  int send_buffer = 0;       // the app's own SO_SNDBUF, or 0
};

void note_fd_opened(int fd) {
  if (g_last_closed_fd.exchange(-1, std::memory_order_relaxed) == fd) {
    g.fd_reuses.fetch_add(1, std::memory_order_relaxed);
  }
}

void close_fd(int fd) {
  close(fd);
  g_last_closed_fd.store(fd, std::memory_order_relaxed);
}

// In the child: errors go into the report, not through the parent's mutex.
thread_local ChildReport* t_child_report = nullptr;

void fail(const std::string& what) {
  if (t_child_report != nullptr) {
    std::snprintf(t_child_report->error, sizeof t_child_report->error, "%s", what.c_str());
    return;
  }
  app_error(what);
}

bool wait_writable(int fd) {
  pollfd writable{fd, POLLOUT, 0};
  for (;;) {
    const int ready = poll(&writable, 1, 10'000);
    if (ready > 0) {
      return true;
    }
    if (ready < 0 && errno == EINTR) {
      continue;
    }
    fail(ready == 0 ? "10 s without POLLOUT" : std::string("poll: ") + std::strerror(errno));
    return false;
  }
}

// A blocking connect() that a signal interrupted goes on asynchronously: wait for its end.
bool finish_interrupted_connect(int fd) {
  if (!wait_writable(fd)) {
    return false;
  }
  int error = 0;
  socklen_t length = sizeof error;
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
  errno = error;
  return error == 0;
}

bool open_connection(const Options& options, Connection& connection) {
  const int fd = socket(AF_INET, SOCK_STREAM | (connection.inheritable ? 0 : SOCK_CLOEXEC), 0);
  if (fd < 0) {
    fail(std::string("socket: ") + std::strerror(errno));
    return false;
  }
  note_fd_opened(fd);
  setsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &kSegmentSize, sizeof kSegmentSize);
  if (connection.send_buffer > 0) {  // small: large frames are accepted in part, or block
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &connection.send_buffer, sizeof connection.send_buffer);
  }
  sockaddr_in peer{};
  peer.sin_family = AF_INET;
  peer.sin_port = htons(static_cast<std::uint16_t>(connection.warm ? options.warm_port : options.plain_port));
  inet_pton(AF_INET, options.address.c_str(), &peer.sin_addr);
  g.connections.fetch_add(1, std::memory_order_relaxed);
  if (connect(fd, reinterpret_cast<sockaddr*>(&peer), sizeof peer) != 0 &&
      !(errno == EINTR && finish_interrupted_connect(fd))) {
    fail(std::string("connect: ") + std::strerror(errno));
    close_fd(fd);
    return false;
  }
  if (connection.nonblocking) {
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  connection.fd = fd;
  if (connection.id == 0) {  // a forked child's id comes from the parent, which owns the counter
    connection.id = g_next_connection_id.fetch_add(1, std::memory_order_relaxed);
  }
  connection.next_sequence = 0;
  return true;
}

enum class Call : std::uint8_t { write, send, writev, sendmsg };

// One write-family call, counted as the shim counts them.
ssize_t call_once(Call call, int fd, iovec* pieces, int count, int flags) {
  ssize_t result = -1;
  switch (call) {
    case Call::write: result = write(fd, pieces[0].iov_base, pieces[0].iov_len); break;
    case Call::send: result = send(fd, pieces[0].iov_base, pieces[0].iov_len, flags | MSG_NOSIGNAL); break;
    case Call::writev: result = writev(fd, pieces, count); break;
    case Call::sendmsg: {
      msghdr message{};
      message.msg_iov = pieces;
      message.msg_iovlen = static_cast<std::size_t>(count);
      result = sendmsg(fd, &message, flags | MSG_NOSIGNAL);
      break;
    }
  }
  const int error = errno;
  g.writes.fetch_add(1, std::memory_order_relaxed);
  if (result > 0) {
    g.bytes.fetch_add(static_cast<std::uint64_t>(result), std::memory_order_relaxed);
  }
  errno = error;
  return result;
}

// Every byte of `pieces`, in calls of one kind (write and send take one piece at a time),
// through partial writes, EINTR and EAGAIN, as a careful program does.
bool write_all(int fd, std::span<const iovec> pieces, Call call, int flags) {
  std::size_t first = 0;
  std::size_t skip = 0;  // bytes of pieces[first] already accepted
  while (first < pieces.size()) {
    std::array<iovec, 4> rest{};
    int count = 0;
    std::size_t offered = 0;
    for (std::size_t p = first; p < pieces.size() && count < static_cast<int>(rest.size()); ++p) {
      const std::size_t done = p == first ? skip : 0;
      rest[count++] = {static_cast<char*>(pieces[p].iov_base) + done, pieces[p].iov_len - done};
      offered += pieces[p].iov_len - done;
      if (call == Call::write || call == Call::send) {
        break;
      }
    }
    if (offered == 0) {
      ++first;
      skip = 0;
      continue;
    }
    const ssize_t result = call_once(call, fd, rest.data(), count, flags);
    if (result > 0) {
      if (static_cast<std::size_t>(result) < offered) {
        g.partial_writes.fetch_add(1, std::memory_order_relaxed);
      }
      auto left = static_cast<std::size_t>(result);
      while (left > 0) {
        const std::size_t available = pieces[first].iov_len - skip;
        if (left < available) {
          skip += left;
          break;
        }
        left -= available;
        ++first;
        skip = 0;
      }
      continue;
    }
    if (result < 0 && errno == EINTR) {
      g.eintr.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    if (result < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      g.eagain.fetch_add(1, std::memory_order_relaxed);
      if (!wait_writable(fd)) {
        return false;
      }
      continue;
    }
    fail("write on fd " + std::to_string(fd) + ": " + (result == 0 ? "returned 0" : std::strerror(errno)));
    return false;
  }
  return true;
}

bool write_whole(int fd, std::span<const std::uint8_t> bytes, Call call, int flags = 0) {
  const iovec piece{const_cast<std::uint8_t*>(bytes.data()), bytes.size()};
  return write_all(fd, std::span(&piece, 1), call, flags);
}

// Bytes written and not yet acknowledged.
int unacknowledged(int fd) {
  int queued = 0;
  return ioctl(fd, SIOCOUTQ, &queued) == 0 ? queued : 0;
}

void wait_acknowledged(int fd, std::int64_t limit_ns) {
  const std::int64_t deadline = monotonic_ns() + limit_ns;
  while (unacknowledged(fd) > 0 && monotonic_ns() < deadline) {
    sleep_ns(1'000'000);
  }
}

class FrameBuffer {
 public:
  explicit FrameBuffer(std::size_t largest) : bytes_(kHeaderSize + largest) {}
  std::span<std::uint8_t> build(std::uint64_t seed, const Connection& connection, std::uint32_t length,
                                std::uint32_t flags) {
    const FrameHeader header = make_header(connection.id, connection.next_sequence, length, connection.flags | flags);
    std::memcpy(bytes_.data(), &header, kHeaderSize);
    fill_payload(payload_key(seed, connection.id, connection.next_sequence), 0,
                 std::span(bytes_.data() + kHeaderSize, length));
    return {bytes_.data(), kHeaderSize + length};
  }

 private:
  std::vector<std::uint8_t> bytes_;
};

enum class Style : std::uint8_t { write, send, writev, sendmsg, more, cork };

class Worker {
 public:
  Worker(const Options& options, std::uint64_t stream) : options_(options), rng_(mix64(options.seed ^ stream)) {}

  std::uint64_t below(std::uint64_t bound) { return rng_() % bound; }
  std::uint64_t between(std::uint64_t low, std::uint64_t high) { return low + rng_() % (high - low + 1); }
  std::int64_t intervals(double low, double high) {
    return static_cast<std::int64_t>(std::uniform_real_distribution<double>(low, high)(rng_) *
                                     static_cast<double>(options_.interval_ns));
  }

  // Mostly small frames, some of a few segments, a few large enough to be accepted in part.
  std::uint32_t frame_length() {
    const std::uint64_t r = below(1000);
    const std::uint64_t length = r < 600   ? between(0, 512)
                                 : r < 900 ? between(513, 16 << 10)
                                 : r < 990 ? between((16 << 10) + 1, 128 << 10)
                                           : between((128 << 10) + 1, kLargestFrame);
    return static_cast<std::uint32_t>(length);
  }

  Style any_style() {
    const std::uint64_t r = below(10);
    return r < 2   ? Style::write
           : r < 4 ? Style::send
           : r < 6 ? Style::writev
           : r < 8 ? Style::sendmsg
           : r < 9 ? Style::more
                   : Style::cork;
  }

  // One frame, whole, in the given style; `pause_ns` inside the message (between header and
  // body) for the MSG_MORE and TCP_CORK styles.
  bool send_frame(Connection& connection, std::uint32_t length, Style style, std::int64_t pause_ns = 0,
                  std::uint32_t flags = 0) {
    if ((style == Style::more || style == Style::cork) && length == 0) {
      length = 1;  // the body's call ends the message
    }
    flags |= style == Style::cork ? kFlagCork : style == Style::more ? kFlagMore : 0U;
    const std::span<std::uint8_t> frame = buffer_.build(options_.seed, connection, length, flags);
    const std::size_t split = kHeaderSize + length / 2;
    const std::array<iovec, 3> pieces{{{frame.data(), kHeaderSize},
                                       {frame.data() + kHeaderSize, split - kHeaderSize},
                                       {frame.data() + split, frame.size() - split}}};
    const std::span header(frame.data(), kHeaderSize);
    const std::span body(frame.data() + kHeaderSize, length);
    const int fd = connection.fd;
    bool ok = true;
    switch (style) {
      case Style::write: ok = write_whole(fd, frame, Call::write); break;
      case Style::send: ok = write_whole(fd, frame, Call::send); break;
      case Style::writev: ok = write_all(fd, pieces, Call::writev, 0); break;
      case Style::sendmsg: ok = write_all(fd, pieces, Call::sendmsg, 0); break;
      case Style::more:
        ok = write_whole(fd, header, Call::send, MSG_MORE);
        if (ok && pause_ns > 0) {
          sleep_ns(pause_ns);
        }
        ok = ok && write_whole(fd, body, below(2) == 0 ? Call::send : Call::sendmsg);
        break;
      case Style::cork: {
        const int on = 1;
        const int off = 0;
        setsockopt(fd, IPPROTO_TCP, TCP_CORK, &on, sizeof on);
        ok = write_whole(fd, header, below(2) == 0 ? Call::write : Call::send);
        if (ok && pause_ns > 0) {
          sleep_ns(pause_ns);
        }
        ok = ok && write_whole(fd, body, below(2) == 0 ? Call::write : Call::send);
        setsockopt(fd, IPPROTO_TCP, TCP_CORK, &off, sizeof off);
        break;
      }
    }
    if (ok) {
      ++connection.next_sequence;
      g.frames.fetch_add(1, std::memory_order_relaxed);
    }
    return ok;
  }

  // Frames back to back until about `total` bytes: a window-limited burst that grows cwnd.
  bool burst(Connection& connection, std::uint64_t total, bool mixed_styles) {
    for (std::uint64_t sent = 0; sent < total;) {
      const std::uint32_t length = std::min<std::uint32_t>(frame_length(), 256U << 10);
      if (!send_frame(connection, length, mixed_styles ? any_style() : Style::send)) {
        return false;
      }
      sent += kHeaderSize + length;
    }
    return true;
  }

  bool end_and_close(Connection& connection) {
    const bool ok = send_frame(connection, static_cast<std::uint32_t>(below(64)), Style::send, 0, kFlagEnd);
    close_fd(connection.fd);
    connection.fd = -1;
    return ok;
  }

  const Options& options() const { return options_; }
  FrameBuffer& buffer() { return buffer_; }

 private:
  const Options& options_;
  std::mt19937_64 rng_;
  FrameBuffer buffer_{kLargestFrame};
};

// The signal handler's own connection per thread: each write is of one whole frame, or the
// rest of one, never waiting (MSG_DONTWAIT), so the handler never blocks.
struct HandlerState {
  Connection connection;
  std::uint64_t seed = 0;
  std::array<std::uint8_t, kHeaderSize + 64> frame{};
  std::size_t size = 0;  // of the frame being sent
  std::size_t sent = 0;
  std::uint64_t ticks = 0;
  std::atomic<bool> active{false};
};
thread_local HandlerState* t_handler = nullptr;

void on_tick(int /*signal*/) {
  const int saved_errno = errno;
  g.signals.fetch_add(1, std::memory_order_relaxed);
  HandlerState* state = t_handler;
  if (state != nullptr && state->active.load(std::memory_order_relaxed) && ++state->ticks % kHandlerWriteEvery == 0) {
    if (state->sent == state->size) {
      const auto length = static_cast<std::uint32_t>(8 + state->ticks % 56);
      const FrameHeader header =
          make_header(state->connection.id, state->connection.next_sequence, length, kFlagHandler);
      std::memcpy(state->frame.data(), &header, kHeaderSize);
      fill_payload(payload_key(state->seed, state->connection.id, state->connection.next_sequence), 0,
                   std::span(state->frame.data() + kHeaderSize, length));
      state->size = kHeaderSize + length;
      state->sent = 0;
    }
    const ssize_t result = send(state->connection.fd, state->frame.data() + state->sent, state->size - state->sent,
                                MSG_DONTWAIT | MSG_NOSIGNAL);
    g.writes.fetch_add(1, std::memory_order_relaxed);
    if (result > 0) {
      g.bytes.fetch_add(static_cast<std::uint64_t>(result), std::memory_order_relaxed);
      state->sent += static_cast<std::size_t>(result);
      if (state->sent == state->size) {
        ++state->connection.next_sequence;
        g.frames.fetch_add(1, std::memory_order_relaxed);
        g.handler_frames.fetch_add(1, std::memory_order_relaxed);
      }
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      g.eagain.fetch_add(1, std::memory_order_relaxed);
    } else {
      g.handler_errors.fetch_add(1, std::memory_order_relaxed);
    }
  }
  errno = saved_errno;
}

// A 1 ms timer aimed at this thread: SIGALRM (SA_RESTART) on even threads, SIGUSR1 (none) on odd.
timer_t start_thread_timer(int signal_number) {
  sigevent event{};
  event.sigev_notify = SIGEV_THREAD_ID;
  event.sigev_signo = signal_number;
  event._sigev_un._tid = gettid();
  timer_t timer{};
  if (timer_create(CLOCK_MONOTONIC, &event, &timer) != 0) {
    die(std::string("timer_create: ") + std::strerror(errno));
  }
  const itimerspec every_ms{{0, 1'000'000}, {0, 1'000'000}};
  timer_settime(timer, 0, &every_ms, nullptr);
  return timer;
}

// A child that inherits `connection` (no FD_CLOEXEC), writes three frames on it while the
// parent waits, opens a connection of its own, and exits through exit() so the shim's exit
// path runs in it.
void fork_writer(Worker& worker, Connection& connection) {
  int report_pipe[2];
  if (pipe2(report_pipe, O_CLOEXEC) != 0) {
    app_error(std::string("pipe2: ") + std::strerror(errno));
    return;
  }
  Connection own;
  own.warm = false;
  own.flags = kFlagChild;
  own.id = g_next_connection_id.fetch_add(1, std::memory_order_relaxed);
  const pid_t child = fork();
  if (child == 0) {
    close(report_pipe[0]);
    ChildReport report;
    t_child_report = &report;
    std::uint64_t writes = g.writes.load();
    std::uint64_t bytes = g.bytes.load();
    const std::uint32_t parent_flags = connection.flags;
    connection.flags |= kFlagChild;
    for (int i = 0; i < 3 && report.error[0] == 0; ++i) {
      if (worker.send_frame(connection, static_cast<std::uint32_t>(worker.between(1, 8192)), Style::send)) {
        ++report.inherited_frames;
      }
    }
    connection.flags = parent_flags;
    report.inherited_writes = g.writes.load() - writes;
    report.inherited_bytes = g.bytes.load() - bytes;
    writes = g.writes.load();
    bytes = g.bytes.load();
    if (report.error[0] == 0 && open_connection(worker.options(), own)) {
      ++report.own_connections;
      for (int i = 0; i < 2 && report.error[0] == 0; ++i) {
        report.own_frames += worker.send_frame(own, static_cast<std::uint32_t>(worker.between(1, 4096)), Style::send);
      }
      report.own_frames += worker.end_and_close(own);
    }
    report.own_writes = g.writes.load() - writes;
    report.own_bytes = g.bytes.load() - bytes;
    const ssize_t written = write(report_pipe[1], &report, sizeof report);
    std::exit(written == sizeof report && report.error[0] == 0 ? 0 : 1);
  }
  close(report_pipe[1]);
  if (child < 0) {
    app_error(std::string("fork: ") + std::strerror(errno));
    close(report_pipe[0]);
    return;
  }
  ChildReport report;
  std::size_t got = 0;
  while (got < sizeof report) {
    const ssize_t n = read(report_pipe[0], reinterpret_cast<char*>(&report) + got, sizeof report - got);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    got += static_cast<std::size_t>(n);
  }
  close(report_pipe[0]);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (got != sizeof report || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    app_error("child " + std::to_string(child) + " failed (status " + std::to_string(status) + "): " + report.error);
  }
  connection.next_sequence += static_cast<std::uint32_t>(report.inherited_frames);
  const std::lock_guard lock(g_report_mutex);
  g_children.emplace_back(child, report);
}

bool open_data_connection(Worker& worker, Connection& connection, bool inheritable) {
  connection = Connection{};
  connection.inheritable = inheritable;
  connection.warm = inheritable || worker.below(100) >= static_cast<std::uint64_t>(worker.options().plain_percent);
  connection.nonblocking = worker.below(2) == 0;
  connection.send_buffer = worker.below(3) == 0 ? static_cast<int>(worker.between(4, 32)) << 10 : 0;
  if (!open_connection(worker.options(), connection)) {
    return false;
  }
  g.nonblocking_connections.fetch_add(connection.nonblocking, std::memory_order_relaxed);
  g.inheritable_connections.fetch_add(inheritable, std::memory_order_relaxed);
  g.small_buffer_connections.fetch_add(connection.send_buffer > 0, std::memory_order_relaxed);
  if (worker.below(10) == 0) {
    const int off = 0;  // the app turns Nagle back on: "force" vetoes it, "on" lets it be
    setsockopt(connection.fd, IPPROTO_TCP, TCP_NODELAY, &off, sizeof off);
    g.nagle_connections.fetch_add(1, std::memory_order_relaxed);
  }
  return true;
}

// A message whose header and body are apart for longer than the heartbeat interval, on a
// connection whose window a burst just opened and whose data is all acknowledged: the moment a
// heartbeat would be due if the shim did not know the app is inside a message.
bool paused_message(Worker& worker, Connection& connection, Style style) {
  if (!worker.burst(connection, 256 << 10, false)) {
    return false;
  }
  wait_acknowledged(connection.fd, 100'000'000);
  (style == Style::cork ? g.cork_pauses : g.more_pauses).fetch_add(1, std::memory_order_relaxed);
  return worker.send_frame(connection, static_cast<std::uint32_t>(worker.between(1, 4096)), style,
                           worker.intervals(1.5, 2.5));
}

void data_thread(const Options& options, int index, std::int64_t deadline) {
  Worker worker(options, 0x1000 + static_cast<std::uint64_t>(index));
  std::vector<Connection> connections(static_cast<std::size_t>(options.connections));
  for (std::size_t i = 0; i < connections.size(); ++i) {
    if (!open_data_connection(worker, connections[i], i == 0)) {
      return;
    }
  }
  HandlerState handler;
  timer_t timer{};
  const int signal_number = index % 2 == 0 ? SIGALRM : SIGUSR1;
  if (options.signals) {
    handler.connection.warm = false;
    handler.connection.nonblocking = true;
    handler.connection.flags = kFlagHandler;
    if (!open_connection(options, handler.connection)) {
      return;
    }
    handler.seed = options.seed;
    t_handler = &handler;
    handler.active.store(true);
    timer = start_thread_timer(signal_number);
  }

  std::int64_t next_fork_ns = monotonic_ns() + worker.intervals(25, 150);
  while (monotonic_ns() < deadline) {
    if (options.forks && monotonic_ns() >= next_fork_ns) {
      fork_writer(worker, connections[0]);  // the one without FD_CLOEXEC
      next_fork_ns = monotonic_ns() + worker.intervals(50, 150);
    }
    Connection& connection = connections[worker.below(connections.size())];
    const std::uint64_t r = worker.below(1000);
    bool ok = true;
    if (r < 550) {
      ok = worker.burst(connection, worker.between(16 << 10, 384 << 10), true);
    } else if (r < 650) {
      ok = paused_message(worker, connection, Style::cork);
    } else if (r < 750) {
      ok = paused_message(worker, connection, Style::more);
    } else if (r < 770) {
      g.replaced.fetch_add(1, std::memory_order_relaxed);
      ok = worker.end_and_close(connection) && open_data_connection(worker, connection, connection.inheritable);
    } else if (r < 810) {
      g.idle_pauses.fetch_add(1, std::memory_order_relaxed);
      sleep_ns(worker.intervals(1.5, 3.0));  // every connection of this thread idles
    } else {
      ok = worker.send_frame(connection, static_cast<std::uint32_t>(worker.below(256)), worker.any_style());
    }
    if (!ok) {
      return;  // reported; the receiver will see the connection end early too
    }
  }

  if (options.signals) {
    // No handler may write once the thread finishes the handler's frame itself.
    sigset_t ours;
    sigemptyset(&ours);
    sigaddset(&ours, signal_number);
    pthread_sigmask(SIG_BLOCK, &ours, nullptr);
    timer_delete(timer);
    handler.active.store(false);
    t_handler = nullptr;
    if (handler.sent > 0 && handler.sent < handler.size) {
      if (write_whole(handler.connection.fd,
                      std::span(handler.frame.data() + handler.sent, handler.size - handler.sent), Call::send)) {
        ++handler.connection.next_sequence;
        g.frames.fetch_add(1);
        g.handler_frames.fetch_add(1);
      }
    }
    worker.end_and_close(handler.connection);
  }
  for (Connection& connection : connections) {
    worker.end_and_close(connection);
  }
}

// Forks and execs /bin/true, or /bin/sleep for a few heartbeat intervals, over and over while
// the workers write: every descriptor without FD_CLOEXEC passes into a program that does not
// know it, and that must neither write to it nor keep it warm.
void exec_thread(const Options& options, std::int64_t deadline) {
  Worker worker(options, 0x2000);
  for (std::uint64_t round = 0; monotonic_ns() < deadline; ++round) {
    sleep_ns(static_cast<std::int64_t>(worker.between(30, 150)) * 1'000'000);
    char true_program[] = "/bin/true";
    char sleep_program[] = "/bin/sleep";
    char how_long[32];
    std::snprintf(how_long, sizeof how_long, "%.3f", static_cast<double>(options.exec_linger_ms) / 1000.0);
    char* run_true[] = {true_program, nullptr};
    char* run_sleep[] = {sleep_program, how_long, nullptr};
    char** argv = round % 2 == 0 || options.exec_linger_ms == 0 ? run_true : run_sleep;
    const pid_t child = fork();
    if (child == 0) {
      execve(argv[0], argv, environ);
      _exit(127);
    }
    if (child < 0) {
      app_error(std::string("fork: ") + std::strerror(errno));
      continue;
    }
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    g.exec_children.fetch_add(1, std::memory_order_relaxed);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      app_error(std::string(argv[0]) + " exited with status " + std::to_string(status));
    }
  }
}

// Kept-warm connections closed just as a heartbeat falls due, and now and then while another
// thread is inside a large blocking write on the same descriptor.
void close_race_thread(const Options& options, std::int64_t deadline) {
  Worker worker(options, 0x3000);
  FrameBuffer racing_frame(kLargestRacingFrame);
  while (monotonic_ns() < deadline) {
    Connection connection;
    connection.nonblocking = worker.below(2) == 0;
    const bool during_write = worker.below(100) < static_cast<std::uint64_t>(options.racing_percent);
    connection.flags = during_write ? std::uint32_t{kFlagRacy} : 0U;
    if (!open_connection(options, connection)) {
      return;
    }
    g.close_races.fetch_add(1, std::memory_order_relaxed);
    if (!during_write) {
      if (!worker.burst(connection, worker.between(128 << 10, 512 << 10), true) ||
          !worker.send_frame(connection, 16, Style::send, 0, kFlagEnd)) {
        return;
      }
      wait_acknowledged(connection.fd, 50'000'000);
      sleep_ns(worker.intervals(0.75, 1.5));  // a heartbeat may be on its way now
      close_fd(connection.fd);
      continue;
    }
    if (!worker.send_frame(connection, static_cast<std::uint32_t>(worker.between(1, 4096)), Style::send)) {
      return;
    }
    wait_acknowledged(connection.fd, 50'000'000);
    // The racing write is one blocking call on a blocking socket: after the close the app
    // must not call again, since the number may belong to another connection by then.
    fcntl(connection.fd, F_SETFL, fcntl(connection.fd, F_GETFL) & ~O_NONBLOCK);
    const auto length = static_cast<std::uint32_t>(worker.between(1U << 20, kLargestRacingFrame));
    const std::span<std::uint8_t> frame = racing_frame.build(options.seed, connection, length, 0);
    std::atomic<bool> done{false};
    ssize_t result = 0;
    int error = 0;
    std::thread writer([&] {
      iovec piece{frame.data(), frame.size()};
      result = call_once(Call::send, connection.fd, &piece, 1, 0);
      error = errno;
      done.store(true);
    });
    // Close only once the write is inside the kernel (its bytes are queued), never before it
    // starts: the number could be another connection's by the time it did.
    while (!done.load() && unacknowledged(connection.fd) == 0) {
      std::this_thread::yield();
    }
    sleep_ns(static_cast<std::int64_t>(worker.below(300'000)));
    const bool raced = !done.load();
    close_fd(connection.fd);
    writer.join();
    (raced ? g.racing_writes : g.racing_writes_missed).fetch_add(1, std::memory_order_relaxed);
    if (result != static_cast<ssize_t>(frame.size())) {
      app_error("a write racing close accepted " + std::to_string(result) + " of " + std::to_string(frame.size()) +
                " bytes (" + std::strerror(error) + ")");
    } else {
      g.frames.fetch_add(1, std::memory_order_relaxed);
      if (raced) {
        g.racing_bytes.fetch_add(static_cast<std::uint64_t>(result), std::memory_order_relaxed);
      }
    }
  }
}

// Plain connections (never kept warm) opened as fast as closes free numbers, each alive for a
// few milliseconds, written to now and then: a heartbeat meant for a closed connection would
// land on one of these.
void opener_thread(const Options& options, std::int64_t deadline) {
  Worker worker(options, 0x4000);
  struct Held {
    Connection connection;
    std::int64_t until_ns;
  };
  std::vector<Held> held;
  while (monotonic_ns() < deadline) {
    Held fresh{};
    fresh.connection.warm = false;
    fresh.connection.inheritable = worker.below(2) == 0;
    if (!open_connection(options, fresh.connection) ||
        !worker.send_frame(fresh.connection, static_cast<std::uint32_t>(worker.below(128)), Style::send)) {
      return;
    }
    fresh.until_ns = monotonic_ns() + static_cast<std::int64_t>(worker.between(1, 30)) * 1'000'000;
    held.push_back(fresh);
    for (std::size_t i = 0; i < held.size();) {
      if (held[i].until_ns <= monotonic_ns()) {
        worker.end_and_close(held[i].connection);
        held[i] = held.back();
        held.pop_back();
        continue;
      }
      if (worker.below(4) == 0) {
        worker.send_frame(held[i].connection, static_cast<std::uint32_t>(worker.below(128)), Style::write);
      }
      ++i;
    }
    sleep_ns(500'000);
  }
  for (Held& h : held) {
    worker.end_and_close(h.connection);
  }
}

std::string children_json(std::uint64_t& connections, std::uint64_t& frames, std::uint64_t& bytes) {
  std::string out = "[";
  for (const auto& [pid, report] : g_children) {
    connections += report.own_connections;
    frames += report.inherited_frames + report.own_frames;
    bytes += report.inherited_bytes + report.own_bytes;
    out += (out.size() > 1 ? "," : "") + Json()
                                             .field("pid", static_cast<std::int64_t>(pid))
                                             .field("connections", report.own_connections)
                                             .field("writes", report.own_writes)
                                             .field("bytes", report.own_bytes)
                                             .field("inherited_writes", report.inherited_writes)
                                             .field("inherited_bytes", report.inherited_bytes)
                                             .str();
  }
  return out + "]";
}

}  // namespace

int run_sender(const Args& args) {
  Options options;
  options.address = args.text("--address", "127.0.0.1");
  options.warm_port = static_cast<int>(args.number("--warm-port", 0));
  options.plain_port = static_cast<int>(args.number("--plain-port", 0));
  options.seed = static_cast<std::uint64_t>(args.number("--seed", 1));
  options.threads = static_cast<int>(args.number("--threads", 8));
  options.connections = static_cast<int>(args.number("--connections", 20));
  options.duration_ns = args.number("--duration-ms", 10'000) * 1'000'000;
  options.interval_ns = args.number("--interval-ms", 20) * 1'000'000;
  options.plain_percent = static_cast<int>(args.number("--plain-percent", 20));
  options.racing_percent = static_cast<int>(args.number("--racing-percent", 20));
  options.exec_linger_ms = static_cast<int>(args.number("--exec-linger-ms", 100));
  options.signals = args.flag("--signals");
  options.forks = args.flag("--forks");
  options.close_races = args.flag("--close-races");
  if (options.warm_port == 0 || options.plain_port == 0 || options.threads < 1 || options.connections < 1) {
    die("send needs --warm-port and --plain-port, and at least one thread and connection");
  }
  raise_fd_limit(static_cast<std::uint64_t>(options.threads) * (options.connections + 2) + 200);
  signal(SIGPIPE, SIG_IGN);
  struct sigaction restarting {};
  restarting.sa_handler = on_tick;
  restarting.sa_flags = SA_RESTART;
  sigaction(SIGALRM, &restarting, nullptr);
  struct sigaction interrupting {};
  interrupting.sa_handler = on_tick;
  sigaction(SIGUSR1, &interrupting, nullptr);

  const std::int64_t started = monotonic_ns();
  const std::int64_t deadline = started + options.duration_ns;
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(options.threads) + 3);
  for (int i = 0; i < options.threads; ++i) {
    threads.emplace_back(data_thread, std::cref(options), i, deadline);
  }
  if (options.forks) {
    threads.emplace_back(exec_thread, std::cref(options), deadline);
  }
  if (options.close_races) {
    threads.emplace_back(close_race_thread, std::cref(options), deadline);
    threads.emplace_back(opener_thread, std::cref(options), deadline);
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  std::uint64_t child_connections = 0;
  std::uint64_t child_frames = 0;
  std::uint64_t child_bytes = 0;
  const std::string children = children_json(child_connections, child_frames, child_bytes);
  std::string errors = "[";
  for (const std::string& error : g_errors) {
    errors += (errors.size() > 1 ? "," : "") + json_string(error);
  }
  errors += "]";
  std::printf("%s\n", Json()
                          .field("pid", static_cast<std::int64_t>(getpid()))
                          .field("seconds", static_cast<double>(monotonic_ns() - started) / 1e9)
                          .field("connections", g.connections.load())
                          .field("writes", g.writes.load())
                          .field("bytes", g.bytes.load())
                          .field("frames", g.frames.load())
                          .field("partial_writes", g.partial_writes.load())
                          .field("eagain", g.eagain.load())
                          .field("eintr", g.eintr.load())
                          .field("signals", g.signals.load())
                          .field("handler_frames", g.handler_frames.load())
                          .field("handler_errors", g.handler_errors.load())
                          .field("cork_pauses", g.cork_pauses.load())
                          .field("more_pauses", g.more_pauses.load())
                          .field("idle_pauses", g.idle_pauses.load())
                          .field("replaced", g.replaced.load())
                          .field("nonblocking_connections", g.nonblocking_connections.load())
                          .field("nagle_connections", g.nagle_connections.load())
                          .field("inheritable_connections", g.inheritable_connections.load())
                          .field("small_buffer_connections", g.small_buffer_connections.load())
                          .field("exec_children", g.exec_children.load())
                          .field("close_races", g.close_races.load())
                          .field("racing_writes", g.racing_writes.load())
                          .field("racing_writes_missed", g.racing_writes_missed.load())
                          .field("racing_bytes", g.racing_bytes.load())
                          .field("fd_reuses", g.fd_reuses.load())
                          .field("child_connections", child_connections)
                          .field("child_frames", child_frames)
                          .field("child_bytes", child_bytes)
                          .raw("children", children)
                          .field("error_count", g_error_count)
                          .raw("errors", errors)
                          .str()
                          .c_str());
  std::fflush(stdout);
  return g_error_count == 0 ? 0 : 1;
}

}  // namespace tcptune::stress
