// Connection churn for the telemetry tests: the program counts what it did itself and prints
// it, so the harness can hold the shim's summary and Prometheus counters to it. Connections go
// to robust_sink (not preloaded). Subcommands:
//   counts --ports P1,P2 --connections N --batch B --size S [--close-in-handler 1]
//       N connections in batches of B (alternating between the ports): each gets a write(), a
//       send() and a writev() of S bytes, then the whole batch is closed back to back (with a
//       reset: no TIME_WAIT, so repeated runs never run out of ports); with --close-in-handler,
//       from inside a SIGUSR1 handler, where a closing thread cannot wait for the shim's worker.
//   warm --port P --connections N --burst-bytes X --idle-ms T --rounds R
//       R times: N connections with 1400-byte segments, each opened by an X-byte burst (a
//       multiple of 32 KiB); once all is acknowledged the program stays silent for T ms
//       (keep-warm heartbeats flow), then closes them back to back.
//   fork-exit --port P
//       a parent with three measured connections forks children that call exit(): one makes a
//       connection of its own and closes it, one makes one and then closes the inherited
//       descriptors, one makes one and leaves it open, one makes none. Prints each child's pid.
//   rss --port P --connections N --batch B --checkpoint C --settle-ms T --quiet-ms Q
//       batches of B connections, one write each, T ms for the worker to time the acks, then
//       closed back to back (the same fd numbers every batch); after every C connections and
//       after N, once quiet for Q ms (the worker has drained and forgotten what it had to),
//       prints the resident set size and the heap bytes in use (mallinfo2, every arena).
#include <malloc.h>
#include <sched.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <string>
#include <vector>

#include "robust_util.hpp"

namespace {

struct Tally {
  long connections = 0;
  long writes = 0;
  long long bytes = 0;
  void wrote(ssize_t result) {
    ++writes;
    bytes += result > 0 ? result : 0;
  }
  void print(const char* who) const {
    std::printf("%s connections %ld writes %ld bytes %lld\n", who, connections, writes, bytes);
  }
};

int open_connection(int port, int maxseg = 0) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) {
    robust::die("socket");
  }
  if (maxseg > 0) {
    robust::set_int(fd, IPPROTO_TCP, TCP_MAXSEG, maxseg);
  }
  if (robust::connect_loopback(fd, port) != 0) {
    robust::die("connect");
  }
  return fd;
}

void close_with_reset(int fd) {
  const linger reset{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  close(fd);
}

// The batch a SIGUSR1 handler closes (counts --close-in-handler).
std::vector<std::pair<int, std::size_t>>* g_batch_to_close = nullptr;

void close_batch_in_handler(int /*signal_number*/) {
  for (const auto& [fd, which] : *g_batch_to_close) {
    close_with_reset(fd);
  }
}

std::vector<int> parse_ports(const std::string& text) {
  std::vector<int> ports;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t comma = text.find(',', at);
    ports.push_back(std::atoi(text.substr(at, comma - at).c_str()));
    at = comma == std::string::npos ? text.size() : comma + 1;
  }
  return ports;
}

int cmd_counts(const robust::Args& args) {
  const std::vector<int> ports = parse_ports(robust::arg_str(args, "ports"));
  const long total = robust::arg_long(args, "connections", 20000);
  const long batch = robust::arg_long(args, "batch", 500);
  const auto size = static_cast<std::size_t>(robust::arg_long(args, "size", 100));
  const bool in_handler = robust::arg_long(args, "close-in-handler", 0) != 0;
  const std::string data(size, 'x');
  std::vector<Tally> per_port(ports.size());
  std::vector<std::pair<int, std::size_t>> open;  // (fd, port index)
  if (in_handler) {
    // One CPU for the process (the shim's worker, started later, inherits it): while the closing
    // thread runs at a real-time priority, the worker cannot take a snapshot, so a burst larger
    // than the shim's pool drops records every time rather than when the scheduler allows.
    cpu_set_t one_cpu;
    CPU_ZERO(&one_cpu);
    CPU_SET(sched_getcpu() < 0 ? 0 : sched_getcpu(), &one_cpu);
    sched_setaffinity(0, sizeof one_cpu, &one_cpu);
    struct sigaction action {};
    action.sa_handler = close_batch_in_handler;
    sigaction(SIGUSR1, &action, nullptr);
    g_batch_to_close = &open;
  }
  for (long done = 0; done < total;) {
    for (long i = 0; i < batch && done < total; ++i, ++done) {
      const std::size_t which = static_cast<std::size_t>(done) % ports.size();
      const int fd = open_connection(ports[which]);
      Tally& tally = per_port[which];
      ++tally.connections;
      tally.wrote(write(fd, data.data(), size));
      tally.wrote(send(fd, data.data(), size, MSG_NOSIGNAL));
      iovec halves[2] = {{const_cast<char*>(data.data()), size / 2},
                         {const_cast<char*>(data.data()) + size / 2, size - size / 2}};
      tally.wrote(writev(fd, halves, 2));
      open.emplace_back(fd, which);
    }
    if (in_handler) {
      const sched_param realtime{.sched_priority = 1};
      if (sched_setscheduler(0, SCHED_FIFO, &realtime) != 0) {
        std::fprintf(stderr, "conn_churn: no SCHED_FIFO for the closing burst: %s\n", std::strerror(errno));
      }
      raise(SIGUSR1);
      const sched_param normal{.sched_priority = 0};
      sched_setscheduler(0, SCHED_OTHER, &normal);
    } else {
      for (const auto& [fd, which] : open) {
        close_with_reset(fd);
      }
    }
    open.clear();
  }
  Tally all;
  for (std::size_t i = 0; i < ports.size(); ++i) {
    std::printf("port %d ", ports[i]);
    per_port[i].print("");
    all.connections += per_port[i].connections;
    all.writes += per_port[i].writes;
    all.bytes += per_port[i].bytes;
  }
  all.print("total");
  return 0;
}

int cmd_warm(const robust::Args& args) {
  const int port = static_cast<int>(robust::arg_long(args, "port", 0));
  const long count = robust::arg_long(args, "connections", 300);
  const auto burst = static_cast<std::size_t>(robust::arg_long(args, "burst-bytes", 128 * 1024));
  const int idle_ms = static_cast<int>(robust::arg_long(args, "idle-ms", 300));
  const long rounds = robust::arg_long(args, "rounds", 1);
  // The burst goes in 32 KiB steps, each acknowledged before the next: every step is limited
  // by the congestion window (23 segments against 10) and fits the peer's initial receive
  // window even when the sink is slow to read, so slow start opens the window every time.
  const std::size_t step = 32 * 1024;
  const std::string data(step, 'x');  // never a newline: the sink counts those as heartbeats
  Tally tally;
  long warm_enough = 0;
  for (long round = 0; round < rounds; ++round) {
    std::vector<int> fds;
    for (long i = 0; i < count; ++i) {
      fds.push_back(open_connection(port, 1400));
      ++tally.connections;
    }
    for (std::size_t sent = 0; sent < burst; sent += step) {
      for (const int fd : fds) {
        std::size_t done = 0;
        while (done < step) {
          const ssize_t n = send(fd, data.data() + done, step - done, MSG_NOSIGNAL);
          if (n < 0 && errno == EINTR) {
            continue;
          }
          if (n <= 0) {
            robust::die("burst");
          }
          tally.wrote(n);
          done += static_cast<std::size_t>(n);
        }
      }
      for (const int fd : fds) {
        if (!robust::wait_until_acknowledged(fd, 10000)) {
          robust::die("burst not acknowledged");
        }
      }
    }
    for (const int fd : fds) {
      warm_enough += robust::congestion_window(fd) > 10 ? 1 : 0;
    }
    robust::sleep_ms(idle_ms);
    for (const int fd : fds) {
      close(fd);
    }
  }
  std::printf("windows above 10 segments %ld\n", warm_enough);
  tally.print("total");
  return 0;
}

// One connection of the child's own: two writes of 100 bytes.
int child_connection(int port) {
  const int fd = open_connection(port);
  const std::string data(100, 'c');
  (void)write(fd, data.data(), data.size());
  (void)write(fd, data.data(), data.size());
  return fd;
}

int cmd_fork_exit(const robust::Args& args) {
  const int port = static_cast<int>(robust::arg_long(args, "port", 0));
  const std::string data(100, 'p');
  Tally parent;
  std::vector<int> inherited;
  for (int i = 0; i < 3; ++i) {
    const int fd = open_connection(port);
    ++parent.connections;
    for (int k = 0; k < 5; ++k) {
      parent.wrote(write(fd, data.data(), data.size()));
    }
    inherited.push_back(fd);
  }
  const char* kinds[] = {"own-closed", "own-then-close-inherited", "own-open-at-exit", "none"};
  for (const char* kind : kinds) {
    std::fflush(stdout);
    const pid_t child = fork();
    if (child == 0) {
      const std::string what = kind;
      if (what != "none") {
        const int own = child_connection(port);
        if (what == "own-closed") {
          close(own);
        }
      }
      if (what == "own-then-close-inherited") {
        for (const int fd : inherited) {
          close(fd);
        }
      }
      std::exit(0);  // exit(), not _exit(): the shim's exit-time summary runs
    }
    int status = 0;
    waitpid(child, &status, 0);
    std::printf("child %s pid %d status %d\n", kind, static_cast<int>(child), status);
  }
  for (const int fd : inherited) {
    parent.wrote(write(fd, data.data(), data.size()));
    close(fd);
  }
  std::printf("parent pid %d ", static_cast<int>(getpid()));
  parent.print("");
  return 0;
}

int cmd_rss(const robust::Args& args) {
  const int port = static_cast<int>(robust::arg_long(args, "port", 0));
  const long total = robust::arg_long(args, "connections", 25000);
  const long batch = robust::arg_long(args, "batch", 500);
  const long checkpoint = robust::arg_long(args, "checkpoint", 5000);
  const int settle_ms = static_cast<int>(robust::arg_long(args, "settle-ms", 30));
  const long close_pause_us = robust::arg_long(args, "close-pause-us", 0);
  const int quiet_ms = static_cast<int>(robust::arg_long(args, "quiet-ms", 50));
  const std::string data(100, 'x');
  std::vector<int> fds;
  for (long done = 0; done < total;) {
    for (long i = 0; i < batch && done < total; ++i, ++done) {
      const int fd = open_connection(port);
      (void)write(fd, data.data(), data.size());
      fds.push_back(fd);
    }
    robust::sleep_ms(settle_ms);  // the worker sees each sampled write acknowledged
    for (const int fd : fds) {
      close_with_reset(fd);
      if (close_pause_us > 0) {
        usleep(static_cast<useconds_t>(close_pause_us));
      }
    }
    fds.clear();
    if (done % checkpoint == 0 || done == total) {
      robust::sleep_ms(quiet_ms);
      std::printf("rss after %ld connections: %ld heap in use %zu\n", done, robust::resident_bytes(),
                  mallinfo2().uordblks);
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  if (argc < 2) {
    std::fprintf(stderr, "usage: conn_churn counts|warm|fork-exit|rss --key value ...\n");
    return 2;
  }
  const std::string command = argv[1];
  const robust::Args args = robust::parse_args(argc, argv, 2);
  if (command == "counts") {
    return cmd_counts(args);
  }
  if (command == "warm") {
    return cmd_warm(args);
  }
  if (command == "fork-exit") {
    return cmd_fork_exit(args);
  }
  if (command == "rss") {
    return cmd_rss(args);
  }
  std::fprintf(stderr, "unknown subcommand %s\n", command.c_str());
  return 2;
}
