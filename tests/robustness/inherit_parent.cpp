// A parent that hands a connected socket to a program it executes, in the middle of a message:
// it opens the congestion window with a burst, sends "<HEAD>" with MSG_MORE (the kernel holds
// it back for up to 200 ms), runs a helper (`sleep`) with the socket inherited, and once the
// helper has exited sends "<BODY>". The helper may run under the shim: ROBUST_HELPER_PRELOAD
// becomes its LD_PRELOAD (empty: none; unset: inherited) and ROBUST_HELPER_POLICY its
// TCPTUNE_POLICY. The parent reads the other end itself and prints what it saw, one
// "key value" per line:
//   nodelay_before/nodelay_after  TCP_NODELAY as the parent sees it before and after the helper
//   head_bytes_early              bytes of the message (not newlines) that arrived within
//                                 150 ms of the MSG_MORE send, before the kernel's own 200 ms
//                                 limit
//   newlines_inside               newline bytes (heartbeats) between <HEAD> and <BODY>
//   stream_ok                     1 when the stream is burst, newlines, "<HEAD><BODY>" exactly
#include <sys/wait.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "robust_util.hpp"

extern char** environ;

namespace {

struct Received {
  std::mutex lock;
  std::string data;
  std::vector<std::pair<std::int64_t, std::size_t>> arrivals;  // (time, size of data after it)
};

void read_until_eof(int fd, Received& received) {
  std::vector<char> buffer(1 << 20);
  for (;;) {
    const ssize_t n = read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return;
    }
    const std::lock_guard<std::mutex> hold(received.lock);
    received.data.append(buffer.data(), static_cast<std::size_t>(n));
    received.arrivals.emplace_back(robust::now_ns(), received.data.size());
  }
}

// The helper's environment: ours, with LD_PRELOAD replaced when ROBUST_HELPER_PRELOAD is set
// and TCPTUNE_POLICY when ROBUST_HELPER_POLICY is.
std::vector<std::string> helper_environment() {
  std::vector<std::string> env;
  const char* preload = std::getenv("ROBUST_HELPER_PRELOAD");
  const char* policy = std::getenv("ROBUST_HELPER_POLICY");
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    if ((preload != nullptr && text.rfind("LD_PRELOAD=", 0) == 0) ||
        (policy != nullptr && text.rfind("TCPTUNE_POLICY=", 0) == 0)) {
      continue;
    }
    env.push_back(text);
  }
  if (preload != nullptr && *preload != '\0') {
    env.push_back(std::string("LD_PRELOAD=") + preload);
  }
  if (policy != nullptr) {
    env.push_back(std::string("TCPTUNE_POLICY=") + policy);
  }
  return env;
}

}  // namespace

int main(int argc, char** argv) {
  const robust::Args args = robust::parse_args(argc, argv, 1);
  const std::string helper_seconds = robust::arg_str(args, "sleep", "0.6");
  const long burst_blocks = robust::arg_long(args, "burst-blocks", 160);

  const int listener = robust::listen_loopback(1, SOCK_CLOEXEC);
  const int client = socket(AF_INET, SOCK_STREAM, 0);  // no FD_CLOEXEC: the helper inherits it
  robust::set_int(client, IPPROTO_TCP, TCP_MAXSEG, 1400);
  const char reno[] = "reno";  // a window that restarts after idle, as keep_warm needs
  setsockopt(client, IPPROTO_TCP, TCP_CONGESTION, reno, sizeof reno - 1);
  if (robust::connect_loopback(client, robust::port_of(listener)) != 0) {
    robust::die("connect");
  }
  const int server = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  if (server < 0) {
    robust::die("accept");
  }
  Received received;
  std::thread reader(read_until_eof, server, std::ref(received));

  const std::vector<char> block(32 * 1024, 'x');
  for (long i = 0; i < burst_blocks; ++i) {
    if (!robust::write_all(client, block.data(), block.size())) {
      robust::die("burst");
    }
  }
  const std::size_t burst_size = static_cast<std::size_t>(burst_blocks) * block.size();
  // The burst read and acknowledged, window updates included: an ACK arriving after the
  // MSG_MORE send would let the kernel send the held bytes itself.
  for (;;) {
    {
      const std::lock_guard<std::mutex> hold(received.lock);
      if (received.data.size() >= burst_size) {
        break;
      }
    }
    robust::sleep_ms(1);
  }
  if (!robust::wait_until_acknowledged(client, 5000)) {
    robust::die("burst not acknowledged");
  }
  robust::sleep_ms(20);
  const int nodelay_before = robust::int_option(client, IPPROTO_TCP, TCP_NODELAY);
  const std::string head = "<HEAD>";
  const std::int64_t head_sent_ns = robust::now_ns();
  if (send(client, head.data(), head.size(), MSG_MORE) != static_cast<ssize_t>(head.size())) {
    robust::die("send head");
  }

  std::vector<std::string> env_text = helper_environment();
  std::vector<char*> env;
  for (std::string& entry : env_text) {
    env.push_back(entry.data());
  }
  env.push_back(nullptr);
  const pid_t helper = fork();
  if (helper == 0) {
    char sleep_name[] = "sleep";
    char* helper_argv[] = {sleep_name, const_cast<char*>(helper_seconds.c_str()), nullptr};
    execve("/bin/sleep", helper_argv, env.data());
    _exit(127);
  }
  int status = 0;
  waitpid(helper, &status, 0);
  const int nodelay_after = robust::int_option(client, IPPROTO_TCP, TCP_NODELAY);

  const std::string body = "<BODY>";
  if (!robust::write_all(client, body.data(), body.size())) {
    robust::die("send body");
  }
  shutdown(client, SHUT_WR);
  reader.join();

  const std::string& data = received.data;
  // Bytes of the message (not heartbeats, which may precede it) read within 150 ms of the send.
  std::size_t head_bytes_early = 0;
  for (const auto& [when, size_after] : received.arrivals) {
    if (when - head_sent_ns < 150'000'000 && size_after > burst_size) {
      const auto first = data.begin() + static_cast<std::ptrdiff_t>(burst_size);
      const auto last = data.begin() + static_cast<std::ptrdiff_t>(size_after);
      head_bytes_early = static_cast<std::size_t>(std::count_if(first, last, [](char c) { return c != '\n'; }));
    }
  }
  bool stream_ok = data.size() >= burst_size && data.compare(0, burst_size, std::string(burst_size, 'x')) == 0;
  std::string rest = stream_ok ? data.substr(burst_size) : "";
  rest.erase(0, rest.find_first_not_of('\n'));  // heartbeats before the message are fine
  const std::size_t head_at = rest.find(head);
  const std::size_t body_at = rest.find(body);
  std::size_t newlines_inside = 0;
  if (head_at == 0 && body_at != std::string::npos) {
    const std::string inside = rest.substr(head.size(), body_at - head.size());
    newlines_inside = static_cast<std::size_t>(std::count(inside.begin(), inside.end(), '\n'));
  }
  stream_ok = stream_ok && rest == head + body;
  std::printf("helper_status %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  std::printf("nodelay_before %d\nnodelay_after %d\n", nodelay_before, nodelay_after);
  std::printf("head_bytes_early %zu\nnewlines_inside %zu\nstream_ok %d\n", head_bytes_early, newlines_inside,
              stream_ok ? 1 : 0);
  std::string shown;  // what followed the burst, newlines escaped, on one line
  for (const char c : rest.substr(0, 80)) {
    shown += c == '\n' ? std::string("\\n") : std::string(1, c);
  }
  std::printf("after_burst %s\n", shown.c_str());
  close(client);
  close(server);
  close(listener);
  return 0;
}
