// The two ends of bench/keep_warm_scale/run.py, on loopback:
//
//   keep_warm_scale sink --connections N --warmup BYTES --heartbeat-hex HEX [--listeners K] [--late-ms MS]
//   keep_warm_scale client --ports P1,P2,... --connections N --warmup BYTES [--mss BYTES]
//                          [--warmup-rate PER_SECOND]
//   keep_warm_scale baseline --ports ... --connections N --warmup BYTES [--mss BYTES] [--warmup-rate PER_SECOND]
//                            --rate PER_CONNECTION_PER_SECOND [--tick-us US] [--phases warmup|even]
//                            [--heartbeat-hex HEX]
//
// The client is the app the shim runs in: it opens N connections, writes BYTES of a fixed
// pseudo-random pattern on each with one blocking send() (enough segments to open the
// congestion window past the initial 10), waits until every byte is acknowledged and then
// writes nothing more: it only answers commands on stdin ("info": resident memory and the
// connections' TCP_INFO; "close": close them all and exit through main, so the shim writes its
// summary). The sink accepts the N connections with epoll and checks every byte: each stream
// must be exactly the warm-up pattern followed by whole copies of the heartbeat payload, and
// it counts them per connection ("snap": totals now, with a histogram of the gaps between
// arrivals after the warm-up and how many connections have been silent for longer than
// --late-ms; "final": wait for every EOF, then the per-connection counts). Every reply is one
// JSON line on stdout.
//
// The baseline is the same client, run without the shim, plus one thread of its own (named
// "kws-baseline") doing what a heartbeat cannot avoid: once the warm-up is acknowledged it
// walks the connections in turn, each --rate times a second (the rate the shim's worker
// achieved), waking every --tick-us and sending the heartbeats due by then. A connection's
// heartbeats keep the place in the period where its warm-up ended, as the worker's do (its
// first heartbeat is due an interval after the connection's last data), so they cluster as the
// worker's do: on loopback a send() costs more when it has to wake the sink; --phases even
// spreads them evenly instead.
// Its variant is chosen on stdin ("variant send" or "variant getsockopt+send"; the reply comes
// once the thread runs it):
//   send               send(fd, payload, size, MSG_DONTWAIT | MSG_NOSIGNAL), nothing else;
//   getsockopt+send    getsockopt(TCP_INFO) first, and the send only if the connection is
//                      established with nothing unacknowledged or unsent (the least a correct
//                      heartbeat must check).
// Its thread id is in the "ready" reply, so its CPU can be read from schedstat.
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

// The kernel's TCP_ESTABLISHED (<netinet/tcp.h> has it, but its struct tcp_info stops before
// tcpi_notsent_bytes, so this file uses <linux/tcp.h>, which has no states).
constexpr int kTcpEstablished = 1;

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "keep_warm_scale: %s\n", message.c_str());
  std::exit(2);
}

[[noreturn]] void die_errno(const std::string& what) { die(what + ": " + std::strerror(errno)); }

std::int64_t monotonic_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec * 1'000'000'000LL + now.tv_nsec;
}

double seconds_since(std::int64_t start_ns) { return static_cast<double>(monotonic_ns() - start_ns) / 1e9; }

struct Args {
  std::map<std::string, std::string> values;
  Args(int argc, char** argv) {
    for (int i = 2; i + 1 < argc; i += 2) {
      values[argv[i]] = argv[i + 1];
    }
  }
  std::string text(const std::string& key, const std::string& fallback = "") const {
    const auto found = values.find(key);
    return found == values.end() ? fallback : found->second;
  }
  std::int64_t number(const std::string& key, std::int64_t fallback) const {
    const auto found = values.find(key);
    return found == values.end() ? fallback : std::strtoll(found->second.c_str(), nullptr, 10);
  }
};

// The warm-up bytes, the same at both ends (splitmix64 from a fixed seed).
std::vector<std::uint8_t> warmup_pattern(std::size_t size) {
  std::vector<std::uint8_t> bytes(size);
  std::uint64_t state = 0x6b65'6570'7761'726dULL;
  for (std::size_t i = 0; i < size; i += 8) {
    state += 0x9e3779b97f4a7c15ULL;
    std::uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    std::memcpy(bytes.data() + i, &z, std::min<std::size_t>(8, size - i));
  }
  return bytes;
}

std::uint64_t raise_fd_limit(std::uint64_t wanted) {
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_max < wanted) {
    const rlimit raised{wanted, wanted};
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) {
      return wanted;
    }
  }
  limit.rlim_cur = std::max<rlim_t>(limit.rlim_cur, std::min<rlim_t>(wanted, limit.rlim_max));
  setrlimit(RLIMIT_NOFILE, &limit);
  getrlimit(RLIMIT_NOFILE, &limit);
  return limit.rlim_cur;
}

// Rss and Pss of this process in kB, from /proc/self/smaps_rollup.
std::pair<long, long> resident_kb() {
  long rss = -1;
  long pss = -1;
  if (FILE* file = std::fopen("/proc/self/smaps_rollup", "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, file) != nullptr) {
      long value = 0;
      if (std::sscanf(line, "Rss: %ld kB", &value) == 1) {
        rss = value;
      } else if (std::sscanf(line, "Pss: %ld kB", &value) == 1) {
        pss = value;
      }
    }
    std::fclose(file);
  }
  return {rss, pss};
}

std::string parse_hex(const std::string& hex) {
  std::string bytes;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    bytes.push_back(static_cast<char>(std::strtol(hex.substr(i, 2).c_str(), nullptr, 16)));
  }
  return bytes;
}

void set_nonblocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

void reply(const std::string& json) {
  std::fputs(json.c_str(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

// min / median / max of a list, as a JSON object.
std::string spread(std::vector<std::int64_t> values) {
  if (values.empty()) {
    return "null";
  }
  std::sort(values.begin(), values.end());
  std::ostringstream out;
  out << "{\"min\":" << values.front() << ",\"median\":" << values[values.size() / 2] << ",\"max\":" << values.back()
      << "}";
  return out.str();
}

// ---- client (the app) ----

std::string tcp_info_json(const std::vector<int>& fds) {
  std::vector<std::int64_t> cwnd, rto_us, rtt_us, mss, unacked, since_sent_ms;
  std::int64_t above_initial = 0;
  // Above 10 segments and last sent within the RTO: windows the next send would not restart
  // (the kernel restarts a window at the send that finds it silent for more than the RTO, so
  // until then TCP_INFO shows a window that is already lost).
  std::int64_t kept = 0;
  std::int64_t established = 0;
  for (const int fd : fds) {
    tcp_info info{};
    socklen_t length = sizeof info;
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) != 0) {
      continue;
    }
    established += info.tcpi_state == kTcpEstablished ? 1 : 0;
    cwnd.push_back(info.tcpi_snd_cwnd);
    above_initial += info.tcpi_snd_cwnd > 10 ? 1 : 0;
    kept +=
        info.tcpi_snd_cwnd > 10 && std::int64_t{info.tcpi_last_data_sent} * 1000 <= std::int64_t{info.tcpi_rto} ? 1 : 0;
    rto_us.push_back(info.tcpi_rto);
    rtt_us.push_back(info.tcpi_rtt);
    mss.push_back(info.tcpi_snd_mss);
    unacked.push_back(info.tcpi_unacked);
    since_sent_ms.push_back(info.tcpi_last_data_sent);
  }
  char congestion[32] = {};
  socklen_t length = sizeof congestion - 1;
  if (fds.empty() || getsockopt(fds.front(), IPPROTO_TCP, TCP_CONGESTION, congestion, &length) != 0) {
    std::strcpy(congestion, "?");
  }
  std::ostringstream out;
  out << "{\"established\":" << established << ",\"congestion\":\"" << congestion << "\",\"cwnd\":" << spread(cwnd)
      << ",\"cwnd_above_10\":" << above_initial << ",\"cwnd_above_10_sent_within_rto\":" << kept
      << ",\"rto_us\":" << spread(rto_us) << ",\"rtt_us\":" << spread(rtt_us) << ",\"snd_mss\":" << spread(mss)
      << ",\"unacked\":" << spread(unacked) << ",\"last_data_sent_ms\":" << spread(since_sent_ms) << "}";
  return out.str();
}

// ---- baseline: the system calls a heartbeat cannot avoid, without the shim ----

enum class Variant : int { send = 0, getsockopt_send = 1 };
constexpr const char* kVariantNames[] = {"send", "getsockopt+send"};

struct Baseline {
  std::vector<int> fds;
  std::vector<std::int64_t> warmed_ns;  // when each connection's warm-up send() returned
  std::string payload;
  double rate = 0;           // heartbeats per connection per second
  std::int64_t tick_ns = 0;  // how often the thread wakes
  bool even_phases = false;  // spread the connections' heartbeats evenly over the period
  std::atomic<int> wanted{static_cast<int>(Variant::send)};
  std::atomic<int> running_variant{-1};
  std::atomic<bool> stop{false};
  std::atomic<pid_t> tid{0};
  // Per variant: heartbeats sent, skipped (getsockopt said not now), failed sends, wake-ups.
  std::atomic<std::uint64_t> sent[2]{};
  std::atomic<std::uint64_t> skipped[2]{};
  std::atomic<std::uint64_t> failed[2]{};
  std::atomic<std::uint64_t> wakeups[2]{};
  std::atomic<std::uint64_t> late_ticks{0};  // wake-ups that found a heartbeat overdue by more than a tick

  void run() {
    pthread_setname_np(pthread_self(), "kws-baseline");
    tid.store(static_cast<pid_t>(syscall(SYS_gettid)));
    const std::size_t count = fds.size();
    const auto period_ns = static_cast<std::int64_t>(1e9 / rate);
    // Each connection's place in the period: as the shim's worker has it, where its warm-up
    // ended (its first heartbeat is due one interval after its last data), modulo the period;
    // or (even_phases) spread evenly. The connections take their turns in that order.
    std::vector<std::int64_t> phase(count);
    for (std::size_t i = 0; i < count; ++i) {
      phase[i] = even_phases ? static_cast<std::int64_t>(static_cast<double>(period_ns) * static_cast<double>(i) /
                                                         static_cast<double>(count))
                             : (warmed_ns[i] - warmed_ns[0]) % period_ns;
    }
    std::vector<std::size_t> order(count);
    for (std::size_t i = 0; i < count; ++i) {
      order[i] = i;
    }
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return phase[a] < phase[b]; });
    const std::int64_t start = monotonic_ns();
    // Heartbeat k goes to connection order[k % count], due at start + (k / count) periods + its phase.
    const auto due_ns = [&](std::uint64_t k) {
      return start + static_cast<std::int64_t>(k / count) * period_ns + phase[order[k % count]];
    };
    std::uint64_t next = 0;
    std::int64_t wake = start;
    while (!stop.load(std::memory_order_relaxed)) {
      const int variant = wanted.load(std::memory_order_acquire);
      running_variant.store(variant, std::memory_order_release);
      wakeups[variant].fetch_add(1, std::memory_order_relaxed);
      const std::int64_t now = monotonic_ns();
      if (due_ns(next) < now - tick_ns) {
        late_ticks.fetch_add(1, std::memory_order_relaxed);
      }
      for (; due_ns(next) <= now && !stop.load(std::memory_order_relaxed); ++next) {
        const int fd = fds[order[next % count]];
        if (variant == static_cast<int>(Variant::getsockopt_send)) {
          tcp_info info{};
          socklen_t length = sizeof info;
          if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) != 0 || info.tcpi_state != kTcpEstablished ||
              info.tcpi_unacked != 0 || info.tcpi_notsent_bytes != 0) {
            skipped[variant].fetch_add(1, std::memory_order_relaxed);
            continue;
          }
        }
        const ssize_t n = send(fd, payload.data(), payload.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n == static_cast<ssize_t>(payload.size())) {
          sent[variant].fetch_add(1, std::memory_order_relaxed);
        } else {
          failed[variant].fetch_add(1, std::memory_order_relaxed);  // the sink reports a cut heartbeat
        }
      }
      wake += tick_ns;
      if (wake < monotonic_ns()) {
        wake = monotonic_ns();  // behind: no burst of back-to-back wake-ups to catch up
        continue;
      }
      const timespec until{static_cast<time_t>(wake / 1'000'000'000LL), static_cast<long>(wake % 1'000'000'000LL)};
      while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, nullptr) == EINTR) {
      }
    }
  }

  std::string counts_json() const {
    std::ostringstream out;
    out << "{";
    for (int v = 0; v < 2; ++v) {
      out << (v ? "," : "") << "\"" << kVariantNames[v] << "\":{\"sent\":" << sent[v].load()
          << ",\"skipped\":" << skipped[v].load() << ",\"failed\":" << failed[v].load()
          << ",\"wakeups\":" << wakeups[v].load() << "}";
    }
    out << ",\"late_ticks\":" << late_ticks.load() << "}";
    return out.str();
  }
};

int run_client(const Args& args, bool with_baseline) {
  const auto wanted = static_cast<std::size_t>(args.number("--connections", 100));
  const auto warmup = static_cast<std::size_t>(args.number("--warmup", 256 * 1024));
  const int mss = static_cast<int>(args.number("--mss", 1448));
  // Warm-ups per second (0: as fast as they go): paced, they leave the CPU to the shim's worker,
  // which must keep the connections already warmed warm meanwhile.
  const std::int64_t rate = args.number("--warmup-rate", 0);
  std::vector<sockaddr_in> peers;
  std::istringstream ports(args.text("--ports"));
  for (std::string port; std::getline(ports, port, ',');) {
    sockaddr_in& peer = peers.emplace_back();
    peer.sin_family = AF_INET;
    peer.sin_port = htons(static_cast<std::uint16_t>(std::atoi(port.c_str())));
    peer.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  }
  if (peers.empty() || warmup == 0) {
    die("client needs --ports and a --warmup of at least 1 byte");
  }
  Baseline baseline;
  if (with_baseline) {
    baseline.rate = std::strtod(args.text("--rate", "0").c_str(), nullptr);
    baseline.tick_ns = args.number("--tick-us", 10'000) * 1000;
    baseline.payload = parse_hex(args.text("--heartbeat-hex", "0a"));
    const std::string phases = args.text("--phases", "warmup");
    if (phases != "warmup" && phases != "even") {
      die("--phases is warmup or even");
    }
    baseline.even_phases = phases == "even";
    if (!(baseline.rate > 0) || baseline.tick_ns <= 0 || baseline.payload.empty()) {
      die("baseline needs --rate above 0 (heartbeats per connection per second), a --tick-us above 0 and a payload");
    }
  }
  if (raise_fd_limit(wanted + 64) < wanted + 64) {
    die("RLIMIT_NOFILE is too low for " + std::to_string(wanted) + " connections");
  }
  // Everything the client allocates is allocated before the first measurement, so the
  // difference in resident memory is the connections' (and the shim's, when preloaded).
  const std::vector<std::uint8_t> pattern = warmup_pattern(warmup);
  std::vector<int> fds;
  fds.reserve(wanted);
  std::string line;
  line.reserve(4096);
  const auto [rss_before, pss_before] = resident_kb();

  const std::int64_t start = monotonic_ns();
  for (std::size_t i = 0; i < wanted; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
      die_errno("socket (connection " + std::to_string(i) + ")");
    }
    // A WAN-sized segment: a window of more than 10 segments then takes a few hundred KB, not
    // the megabytes it would at loopback's 64 KB segments.
    if (mss > 0 && setsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, sizeof mss) != 0) {
      die_errno("TCP_MAXSEG");
    }
    const sockaddr_in& peer = peers[i % peers.size()];
    if (connect(fd, reinterpret_cast<const sockaddr*>(&peer), sizeof peer) != 0) {
      die_errno("connect (connection " + std::to_string(i) + ")");
    }
    fds.push_back(fd);
  }
  const double connect_s = seconds_since(start);
  const std::int64_t warm_start = monotonic_ns();
  std::vector<std::int64_t> warmed_ns;
  warmed_ns.reserve(fds.size());
  std::int64_t paced = 0;
  for (const int fd : fds) {
    if (rate > 0) {
      const std::int64_t due = warm_start + paced++ * 1'000'000'000LL / rate;
      for (std::int64_t now = monotonic_ns(); now < due; now = monotonic_ns()) {
        const timespec pause{0, due - now};
        nanosleep(&pause, nullptr);
      }
    }
    // One call for the whole warm-up: the shim's gate holds heartbeats back while it runs.
    std::size_t sent = 0;
    while (sent < warmup) {
      const ssize_t n = send(fd, pattern.data() + sent, warmup - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n <= 0) {
        die_errno("send");
      }
      sent += static_cast<std::size_t>(n);
    }
    warmed_ns.push_back(monotonic_ns());
  }
  // Until every byte is acknowledged: from here on the connections are idle.
  const std::int64_t deadline = monotonic_ns() + 60'000'000'000LL;
  for (const int fd : fds) {
    int queued = 1;
    while (ioctl(fd, SIOCOUTQ, &queued) == 0 && queued > 0) {
      if (monotonic_ns() > deadline) {
        die("the warm-up was not acknowledged within 60 s");
      }
      usleep(1000);
    }
  }
  const double warmup_s = seconds_since(warm_start);
  const auto [rss_open, pss_open] = resident_kb();
  std::thread baseline_thread;
  if (with_baseline) {
    baseline.fds = fds;
    baseline.warmed_ns = warmed_ns;
    baseline_thread = std::thread([&baseline] { baseline.run(); });
    while (baseline.tid.load() == 0 || baseline.running_variant.load() < 0) {
      usleep(100);
    }
  }
  std::ostringstream ready;
  ready << "{\"event\":\"ready\",\"pid\":" << getpid() << ",\"connections\":" << fds.size()
        << ",\"warmup_bytes\":" << warmup << ",\"connect_s\":" << connect_s << ",\"warmup_s\":" << warmup_s
        << ",\"rss_before_kb\":" << rss_before << ",\"pss_before_kb\":" << pss_before << ",\"rss_open_kb\":" << rss_open
        << ",\"pss_open_kb\":" << pss_open << ",\"tcp_info\":" << tcp_info_json(fds);
  if (with_baseline) {
    ready << ",\"baseline\":{\"tid\":" << baseline.tid.load() << ",\"rate\":" << baseline.rate
          << ",\"tick_us\":" << baseline.tick_ns / 1000 << ",\"phases\":\""
          << (baseline.even_phases ? "even" : "warmup") << "\",\"payload_bytes\":" << baseline.payload.size() << "}";
  }
  ready << "}";
  reply(ready.str());

  while (std::getline(std::cin, line)) {
    if (line == "info") {
      const auto [rss, pss] = resident_kb();
      std::ostringstream info;
      info << "{\"event\":\"info\",\"rss_kb\":" << rss << ",\"pss_kb\":" << pss << ",\"tcp_info\":" << tcp_info_json(fds)
           << "}";
      reply(info.str());
    } else if (with_baseline && line.rfind("variant ", 0) == 0) {
      const std::string name = line.substr(8);
      const int variant = name == kVariantNames[0] ? 0 : name == kVariantNames[1] ? 1 : -1;
      if (variant < 0) {
        reply("{\"event\":\"error\",\"message\":\"unknown variant\"}");
        continue;
      }
      baseline.wanted.store(variant, std::memory_order_release);
      // Once the thread has started a tick with it, everything it does is this variant's.
      while (baseline.running_variant.load(std::memory_order_acquire) != variant) {
        usleep(100);
      }
      reply("{\"event\":\"variant\",\"variant\":\"" + name + "\",\"counts\":" + baseline.counts_json() + "}");
    } else if (with_baseline && line == "counts") {
      reply("{\"event\":\"counts\",\"counts\":" + baseline.counts_json() + "}");
    } else if (line == "close") {
      break;
    }
  }
  if (with_baseline) {
    baseline.stop.store(true);
    baseline_thread.join();
  }
  for (const int fd : fds) {
    close(fd);
  }
  // The baseline's totals, final now that its thread has stopped: what the sink must have got.
  reply(with_baseline ? "{\"event\":\"closed\",\"counts\":" + baseline.counts_json() + "}" : "{\"event\":\"closed\"}");
  return 0;  // through main's return, so the shim writes its summary
}

// ---- sink ----

struct Stream {
  std::int64_t last_ns = 0;  // when the warm-up's end or the last heartbeat arrived
  std::uint64_t received = 0;
  std::uint64_t heartbeat_bytes = 0;
  std::uint64_t errors = 0;  // bytes that were neither the warm-up's nor a heartbeat's
  std::int64_t first_error_offset = -1;
  bool eof = false;
};

// Gaps between arrivals after the warm-up, in 5 ms buckets up to 2 s (the last: longer).
constexpr std::int64_t kGapBucketNs = 5'000'000;
constexpr std::size_t kGapBuckets = 401;

struct Sink {
  std::vector<std::uint8_t> pattern;
  std::vector<std::uint64_t> gaps = std::vector<std::uint64_t>(kGapBuckets);
  std::int64_t late_ns = 200'000'000;
  std::string heartbeat;
  std::vector<Stream> streams;  // by accept order
  std::vector<std::int64_t> stream_of_fd;
  std::uint64_t accepted = 0;
  std::uint64_t eofs = 0;
  std::uint64_t read_errors = 0;

  void take(Stream& stream, const std::uint8_t* data, std::size_t size, std::int64_t now_ns) {
    const std::uint64_t warmup = pattern.size();
    if (stream.received >= warmup && stream.last_ns != 0) {
      ++gaps[std::min<std::size_t>(static_cast<std::size_t>((now_ns - stream.last_ns) / kGapBucketNs), kGapBuckets - 1)];
    }
    if (stream.received + size >= warmup) {
      stream.last_ns = now_ns;
    }
    std::size_t i = 0;
    if (stream.received < warmup) {
      const std::size_t in_warmup = std::min<std::uint64_t>(size, warmup - stream.received);
      if (std::memcmp(data, pattern.data() + stream.received, in_warmup) != 0) {
        for (std::size_t k = 0; k < in_warmup; ++k) {
          if (data[k] != pattern[stream.received + k]) {
            note_error(stream, stream.received + k);
            ++stream.errors;
          }
        }
      }
      i = in_warmup;
    }
    for (; i < size; ++i) {
      const std::uint64_t offset = stream.received + i;
      const std::uint64_t in_heartbeats = offset - warmup;
      if (data[i] == static_cast<std::uint8_t>(heartbeat[in_heartbeats % heartbeat.size()])) {
        ++stream.heartbeat_bytes;
      } else {
        note_error(stream, offset);
        ++stream.errors;
      }
    }
    stream.received += size;
  }

  static void note_error(Stream& stream, std::uint64_t offset) {
    if (stream.first_error_offset < 0) {
      stream.first_error_offset = static_cast<std::int64_t>(offset);
    }
  }

  // A stream is whole when it holds the complete warm-up, only heartbeat bytes after it and a
  // whole number of heartbeats.
  bool whole(const Stream& stream) const {
    return stream.errors == 0 && stream.received >= pattern.size() && stream.heartbeat_bytes % heartbeat.size() == 0;
  }

  std::string totals(const char* event) const {
    const std::int64_t now = monotonic_ns();
    std::uint64_t heartbeat_bytes = 0, with_heartbeat = 0, warmed = 0, errors = 0, broken = 0, silent = 0;
    for (const Stream& stream : streams) {
      silent += !stream.eof && stream.last_ns != 0 && now - stream.last_ns > late_ns ? 1 : 0;
      heartbeat_bytes += stream.heartbeat_bytes;
      with_heartbeat += stream.heartbeat_bytes > 0 ? 1 : 0;
      warmed += stream.received >= pattern.size() ? 1 : 0;
      errors += stream.errors;
    }
    for (const Stream& stream : streams) {
      broken += stream.errors > 0 ? 1 : 0;
    }
    std::ostringstream out;
    out << "{\"event\":\"" << event << "\",\"t_ns\":" << monotonic_ns() << ",\"accepted\":" << accepted
        << ",\"warmed\":" << warmed << ",\"eof\":" << eofs << ",\"heartbeat_bytes\":" << heartbeat_bytes
        << ",\"heartbeats\":" << heartbeat_bytes / heartbeat.size() << ",\"with_heartbeat\":" << with_heartbeat
        << ",\"error_bytes\":" << errors << ",\"broken_streams\":" << broken << ",\"read_errors\":" << read_errors
        << ",\"silent_longer_than_late_ms\":" << silent << ",\"gap_bucket_ms\":" << kGapBucketNs / 1'000'000
        << ",\"gaps\":[";
    bool first = true;
    for (std::size_t i = 0; i < gaps.size(); ++i) {
      if (gaps[i] != 0) {
        out << (first ? "" : ",") << "[" << i << "," << gaps[i] << "]";
        first = false;
      }
    }
    out << "]";
    return out.str();
  }
};

int run_sink(const Args& args) {
  const auto wanted = static_cast<std::size_t>(args.number("--connections", 100));
  const auto listeners = static_cast<int>(args.number("--listeners", 1));
  Sink sink;
  sink.late_ns = args.number("--late-ms", 200) * 1'000'000;
  sink.pattern = warmup_pattern(static_cast<std::size_t>(args.number("--warmup", 256 * 1024)));
  sink.heartbeat = parse_hex(args.text("--heartbeat-hex", "0a"));
  if (sink.heartbeat.empty()) {
    die("--heartbeat-hex must give at least one byte");
  }
  if (raise_fd_limit(wanted + 64) < wanted + 64) {
    die("RLIMIT_NOFILE is too low for " + std::to_string(wanted) + " connections");
  }
  sink.streams.reserve(wanted);
  const int epoll = epoll_create1(EPOLL_CLOEXEC);
  std::vector<int> listen_fds;
  std::ostringstream ports;
  for (int i = 0; i < listeners; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || listen(fd, 4096) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      die_errno("listen");
    }
    epoll_event event{EPOLLIN, {.u64 = (1ULL << 62) | static_cast<std::uint64_t>(fd)}};
    epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event);
    listen_fds.push_back(fd);
    ports << (i ? "," : "") << ntohs(address.sin_port);
  }
  set_nonblocking(0);
  epoll_event stdin_event{EPOLLIN, {.u64 = 1ULL << 63}};
  epoll_ctl(epoll, EPOLL_CTL_ADD, 0, &stdin_event);
  reply("{\"event\":\"listening\",\"ports\":[" + ports.str() + "]}");

  std::vector<std::uint8_t> buffer(256 * 1024);
  std::vector<epoll_event> events(1024);
  std::string command;
  bool finishing = false;
  std::int64_t finish_deadline = 0;
  bool stdin_open = true;
  for (;;) {
    if (finishing && (sink.eofs >= sink.accepted || monotonic_ns() > finish_deadline)) {
      break;
    }
    const int ready = epoll_wait(epoll, events.data(), static_cast<int>(events.size()), 50);
    if (ready < 0 && errno != EINTR) {
      die_errno("epoll_wait");
    }
    for (int e = 0; e < std::max(ready, 0); ++e) {
      const std::uint64_t tag = events[e].data.u64;
      if (tag & (1ULL << 63)) {  // a command
        char text[256];
        const ssize_t n = read(0, text, sizeof text);
        if (n == 0) {
          stdin_open = false;
          epoll_ctl(epoll, EPOLL_CTL_DEL, 0, nullptr);
        }
        command.append(text, static_cast<std::size_t>(std::max<ssize_t>(n, 0)));
        for (std::size_t end; (end = command.find('\n')) != std::string::npos; command.erase(0, end + 1)) {
          const std::string word = command.substr(0, end);
          if (word == "snap") {
            reply(sink.totals("snap") + "}");
          } else if (word == "final") {
            finishing = true;
            finish_deadline = monotonic_ns() + 30'000'000'000LL;
          }
        }
        if (!stdin_open && !finishing) {
          finishing = true;
          finish_deadline = monotonic_ns() + 30'000'000'000LL;
        }
        continue;
      }
      if (tag & (1ULL << 62)) {  // a listener
        const int listener = static_cast<int>(tag & 0xffffffffULL);
        for (;;) {
          const int fd = accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (fd < 0) {
            break;
          }
          if (static_cast<std::size_t>(fd) >= sink.stream_of_fd.size()) {
            sink.stream_of_fd.resize(static_cast<std::size_t>(fd) + 1024, -1);
          }
          sink.stream_of_fd[static_cast<std::size_t>(fd)] = static_cast<std::int64_t>(sink.streams.size());
          sink.streams.emplace_back();
          ++sink.accepted;
          epoll_event event{EPOLLIN, {.u64 = static_cast<std::uint64_t>(fd)}};
          epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event);
        }
        continue;
      }
      const int fd = static_cast<int>(tag);
      const std::int64_t now = monotonic_ns();
      Stream& stream = sink.streams[static_cast<std::size_t>(sink.stream_of_fd[static_cast<std::size_t>(fd)])];
      for (;;) {
        const ssize_t n = read(fd, buffer.data(), buffer.size());
        if (n > 0) {
          sink.take(stream, buffer.data(), static_cast<std::size_t>(n), now);
          continue;
        }
        if (n < 0 && errno == EINTR) {
          continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
          break;
        }
        if (n < 0) {
          ++sink.read_errors;
        }
        stream.eof = true;
        ++sink.eofs;
        epoll_ctl(epoll, EPOLL_CTL_DEL, fd, nullptr);
        close(fd);
        break;
      }
    }
  }
  // The per-connection counts, and the first few broken streams.
  std::ostringstream out;
  out << sink.totals("final") << ",\"whole_streams\":"
      << std::count_if(sink.streams.begin(), sink.streams.end(), [&](const Stream& s) { return sink.whole(s); })
      << ",\"heartbeats_per_connection\":[";
  for (std::size_t i = 0; i < sink.streams.size(); ++i) {
    out << (i ? "," : "") << sink.streams[i].heartbeat_bytes / sink.heartbeat.size();
  }
  out << "],\"received_per_connection\":" << spread([&] {
    std::vector<std::int64_t> received;
    for (const Stream& stream : sink.streams) {
      received.push_back(static_cast<std::int64_t>(stream.received));
    }
    return received;
  }()) << ",\"broken\":[";
  int shown = 0;
  for (std::size_t i = 0; i < sink.streams.size() && shown < 10; ++i) {
    const Stream& stream = sink.streams[i];
    if (!sink.whole(stream)) {
      out << (shown++ ? "," : "") << "{\"connection\":" << i << ",\"received\":" << stream.received
          << ",\"error_bytes\":" << stream.errors << ",\"first_error_offset\":" << stream.first_error_offset
          << ",\"heartbeat_bytes\":" << stream.heartbeat_bytes << ",\"eof\":" << (stream.eof ? "true" : "false") << "}";
    }
  }
  out << "]}";
  reply(out.str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const Args args(argc, argv);
  if (mode == "client" || mode == "baseline") {
    return run_client(args, mode == "baseline");
  }
  if (mode == "sink") {
    return run_sink(args);
  }
  std::fprintf(stderr, "usage: keep_warm_scale client|baseline|sink [--option value]...\n");
  return 2;
}
