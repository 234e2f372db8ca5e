// What a hook adds to a write, measured on the core the hooks call (no LD_PRELOAD, so the
// numbers are the shim's own cost, not the system call's noise):
//   non_tcp_fd_lookup   a pipe's write hook: one table lookup, then the real call;
//   tcp_write_unmeasured a tracked TCP socket's write with no log: lookup + before_write;
//   tcp_write_measured   the same with statistics: two write-clock reads, the latency
//                        histogram and the counters (what a write pays when a log is configured);
//   tcp_write_keep_warm  an unmeasured write on a kept-warm connection: through its gate;
//   tcp_write_measured_keep_warm  both;
//   tcp_write_on_wait    an unmeasured write under nodelay = "on-wait": noted for the next wait;
//   wait_nothing_noted   a wait hook when this thread wrote nothing since its last wait.
// Budgets: at most 5 ns for non_tcp_fd_lookup, 30 ns for tcp_write_measured. raw_write_dev_null
// shows, in the same run, what a real call costs on its own.
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <benchmark/benchmark.h>

#include <memory>
#include <optional>
#include <string>

#include "process_runtime.hpp"
#include "socket_events.hpp"
#include "tcptune/config/policy.hpp"
#include "write_clock.hpp"

namespace {

using namespace tcptune::shim;
namespace config = tcptune::config;

const tcptune::config::Policy& default_policy() {
  static const auto policy = std::make_unique<tcptune::config::Policy>(tcptune::config::builtin_default_policy());
  return *policy;
}

void non_tcp_fd_lookup(benchmark::State& state) {
  install_runtime_for_testing(&default_policy(), "bench");
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) {
    state.SkipWithError("pipe");
    return;
  }
  benchmark::DoNotOptimize(tcp_slot_for_io(pipe_fds[1]));  // first use classifies it
  for (auto _ : state) {
    benchmark::DoNotOptimize(tcp_slot_for_io(pipe_fds[1]));
  }
  before_close(pipe_fds[0]);
  before_close(pipe_fds[1]);
  close(pipe_fds[0]);
  close(pipe_fds[1]);
}
BENCHMARK(non_tcp_fd_lookup);

// What socket_events.hpp's tracked_write does around a call that "writes" 100 bytes at once
// (less its idle-restart check).
// One write-family call on a tracked socket, as the hooks make it, of `message`; kept warm
// with `framing` unless nullopt. `framer_prefix`: bytes the framer has seen before (a request
// head whose body the writes then carry).
void tracked_write_body(benchmark::State& state, bool measured, std::optional<config::Framing> framing,
                        const std::string& message = std::string(100, 'x'), const std::string& framer_prefix = "") {
  install_runtime_for_testing(&default_policy(), "bench");
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  on_socket_created(fd, AF_INET, SOCK_STREAM, 0);
  SocketSlot* tracked = tcp_slot_for_io(fd);
  if (tracked == nullptr) {
    state.SkipWithError("the socket was not tracked as TCP");
    return;
  }
  if (measured) {
    tracked->stats.reset(monotonic_ns());
    tracked->set_flag(flag_measured);
  }
  if (framing) {
    tracked->framer.start(*framing, true);
    tracked->framer.consume(framer_prefix.data(), framer_prefix.size());
    tracked->set_flag(flag_keep_warm);
  }
  const auto size = static_cast<ssize_t>(message.size());
  ssize_t written = size;
  const auto measured_call = [&](SocketSlot& slot) {
    if (!slot.has_flag(flag_measured)) {
      benchmark::DoNotOptimize(written);
      return written;
    }
    const WriteStart start = begin_measured_write(slot);
    benchmark::DoNotOptimize(written);
    after_measured_write(fd, slot, start, written, message.size());
    return written;
  };
  for (auto _ : state) {
    SocketSlot* slot = tcp_slot_for_io(fd);
    before_write(*slot, fd);
    if (slot->has_flag(flag_keep_warm)) {
      benchmark::DoNotOptimize(gated_write(
          fd, *slot, [&](ssize_t) { return message.size(); }, BufferBytes{message.data()}, false,
          [&] { return measured_call(*slot); }));
    } else {
      benchmark::DoNotOptimize(measured_call(*slot));
    }
  }
  if (framing && tracked->framer.loss() != FramingLoss::none) {
    state.SkipWithError("the framer lost the stream");
  }
  before_close(fd);
  close(fd);
}

void tcp_write_unmeasured(benchmark::State& state) {
  tracked_write_body(state, false, std::nullopt);
}
BENCHMARK(tcp_write_unmeasured);

void tcp_write_measured(benchmark::State& state) {
  tracked_write_body(state, true, std::nullopt);
}
BENCHMARK(tcp_write_measured);

void tcp_write_keep_warm(benchmark::State& state) {
  tracked_write_body(state, false, config::Framing::guessed);
}
BENCHMARK(tcp_write_keep_warm);

void tcp_write_measured_keep_warm(benchmark::State& state) {
  tracked_write_body(state, true, config::Framing::guessed);
}
BENCHMARK(tcp_write_measured_keep_warm);

// Keep-warm following a protocol's framing, against tcp_write_keep_warm (raw bytes, guessed
// ends) in the same run: per write over payload, per byte over heads.
void tcp_write_keep_warm_lines(benchmark::State& state) {
  tracked_write_body(state, false, config::Framing::lines, std::string(99, 'x') + "\n");
}
BENCHMARK(tcp_write_keep_warm_lines);

void tcp_write_keep_warm_http_body(benchmark::State& state) {
  // 100-byte writes inside one large declared body: counted down, not read.
  tracked_write_body(state, false, config::Framing::http1_request, std::string(100, 'x'),
                     "POST /upload HTTP/1.1\r\nContent-Length: 1000000000000\r\n\r\n");
}
BENCHMARK(tcp_write_keep_warm_http_body);

void tcp_write_keep_warm_http_request(benchmark::State& state) {
  // A whole small request per write: its 80-byte head is read byte by byte.
  tracked_write_body(state, false, config::Framing::http1_request,
                     "POST /api/v1/items HTTP/1.1\r\nHost: backend\r\nContent-Length: 20\r\n\r\n01234567890123456789");
}
BENCHMARK(tcp_write_keep_warm_http_request);

void tcp_write_keep_warm_resp_command(benchmark::State& state) {
  // A SET with a 100-byte value per write: its heads read, its value counted down.
  tracked_write_body(state, false, config::Framing::resp_request,
                     "*3\r\n$3\r\nSET\r\n$8\r\nuser:123\r\n$100\r\n" + std::string(100, 'v') + "\r\n");
}
BENCHMARK(tcp_write_keep_warm_resp_command);

// nodelay = "on-wait" (the built-in default): an unmeasured write through tcp_write, which
// notes the socket for the thread's next wait (a stream never waits: nothing is pushed), and
// what a wait hook pays when this thread wrote nothing since its last wait (one TLS load).
void tcp_write_on_wait(benchmark::State& state) {
  install_runtime_for_testing(&default_policy(), "bench");
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  on_socket_created(fd, AF_INET, SOCK_STREAM, 0);
  SocketSlot* slot = tcp_slot_for_io(fd);
  if (slot == nullptr) {
    state.SkipWithError("the socket was not tracked as TCP");
    return;
  }
  slot->set_flag(flag_push_on_wait);
  ssize_t written = 100;
  for (auto _ : state) {
    benchmark::DoNotOptimize(tcp_write(
        fd, *tcp_slot_for_io(fd), [](ssize_t) { return std::size_t{100}; }, BufferBytes{"x"},
        [&] {
          benchmark::DoNotOptimize(written);
          return written;
        },
        0));
  }
  t_written_since_wait.count = 0;  // nothing to push on the closed socket
  before_close(fd);
  close(fd);
}
BENCHMARK(tcp_write_on_wait);

void wait_nothing_noted(benchmark::State& state) {
  for (auto _ : state) {
    push_before_wait();
    benchmark::ClobberMemory();
  }
}
BENCHMARK(wait_nothing_noted);

// The two clock reads a measured write makes, alone: the write clock (the TSC where it is
// trusted) and, for comparison, clock_gettime, which it falls back to elsewhere.
void write_clock_pair(benchmark::State& state) {
  for (auto _ : state) {
    const std::int64_t start_ns = write_clock_ns();
    benchmark::DoNotOptimize(start_ns);
    benchmark::DoNotOptimize(write_clock_ns());
  }
  state.SetLabel(g_write_clock.uses_tsc() ? "tsc" : "clock_gettime");
}
BENCHMARK(write_clock_pair);

void clock_gettime_pair(benchmark::State& state) {
  for (auto _ : state) {
    const std::int64_t start_ns = monotonic_ns();
    benchmark::DoNotOptimize(start_ns);
    benchmark::DoNotOptimize(monotonic_ns());
  }
}
BENCHMARK(clock_gettime_pair);

// The real calls, for scale: what the hooks' cost is added to.
void raw_write_dev_null(benchmark::State& state) {
  const int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
  const char byte = 'x';
  for (auto _ : state) {
    benchmark::DoNotOptimize(write(fd, &byte, 1));
  }
  close(fd);
}
BENCHMARK(raw_write_dev_null);

// Calibrates the write clock the way the telemetry worker does, so the measured cases read it
// as a shimmed process does.
void calibrate_write_clock() {
  WriteClockCalibrator calibrator(g_write_clock, tsc_trusted());
  for (int pass = 0; pass < 2; ++pass) {
    calibrator.tick(monotonic_ns());
    const timespec pause{0, 30'000'000};
    nanosleep(&pause, nullptr);
  }
}

}  // namespace

int main(int argc, char** argv) {
  calibrate_write_clock();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
    return 1;
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
