// Plain POSIX socket set-up for the scenario apps. Like the legacy programs they stand for,
// nothing here sets a TCP option unless the caller asks (the "reference" arm's app fix).
#pragma once

#include <cstddef>
#include <string>

namespace tcptune::bench {

// "198.18.0.2:5001" or "[::1]:5001". Exits with status 2 on a malformed endpoint.
int connect_to(const std::string& endpoint);
// Binds and listens. rcvbuf > 0 sets SO_RCVBUF before listen(), the legacy habit bulk reproduces.
int listen_on(const std::string& endpoint, int rcvbuf);
int accept_one(int listener);
void set_nodelay(int fd);

bool read_exactly(int fd, void* buffer, std::size_t size);
bool write_all(int fd, const void* buffer, std::size_t size);

// CLOCK_MONOTONIC, shared by every network namespace of one host.
long long monotonic_ns();
void sleep_seconds(double seconds);

}  // namespace tcptune::bench
