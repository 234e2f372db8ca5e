// The Nagle story in one program: a client writes a 10-byte header and a 100-byte body as two
// writes, the server replies once it has the whole request. Like the legacy apps tcptune is
// for, it sets no socket options of its own. Prints the latency distribution on one line.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

constexpr std::size_t kHeaderBytes = 10;
constexpr std::size_t kBodyBytes = 100;
constexpr std::size_t kReplyBytes = 16;

bool read_exactly(int fd, char* buffer, std::size_t size) {
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = read(fd, buffer + done, size - done);
    if (n <= 0) {
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

void serve(int listener, int requests) {
  const int fd = accept(listener, nullptr, nullptr);
  char request[kHeaderBytes + kBodyBytes];
  const char reply[kReplyBytes] = "ok";
  for (int i = 0; i < requests && read_exactly(fd, request, sizeof request); ++i) {
    if (write(fd, reply, sizeof reply) != static_cast<ssize_t>(sizeof reply)) {
      break;
    }
  }
  close(fd);
}

}  // namespace

int main(int argc, char** argv) {
  int requests = 50;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--requests") == 0) {
      requests = std::atoi(argv[i + 1]);
    }
  }
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(listener, 1) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::perror("rpc_demo: listen");
    return 1;
  }
  std::thread server(serve, listener, requests);
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    std::perror("rpc_demo: connect");
    return 1;
  }
  char header[kHeaderBytes];
  char body[kBodyBytes];
  char reply[kReplyBytes];
  std::memset(header, 'h', sizeof header);
  std::memset(body, 'b', sizeof body);
  std::vector<double> latencies_us;
  for (int i = 0; i < requests; ++i) {
    const auto start = std::chrono::steady_clock::now();
    if (write(fd, header, sizeof header) != static_cast<ssize_t>(sizeof header) ||
        write(fd, body, sizeof body) != static_cast<ssize_t>(sizeof body) || !read_exactly(fd, reply, sizeof reply)) {
      std::perror("rpc_demo: request");
      return 1;
    }
    latencies_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  }
  close(fd);
  server.join();
  close(listener);
  std::sort(latencies_us.begin(), latencies_us.end());
  auto at = [&](double q) {
    return latencies_us[static_cast<std::size_t>(q * static_cast<double>(latencies_us.size() - 1))];
  };
  std::printf("rpc_demo requests=%d p50_us=%.1f p90_us=%.1f p99_us=%.1f max_us=%.1f\n", requests, at(0.5), at(0.9),
              at(0.99), latencies_us.back());
  return 0;
}
