/* observe_probe: loopback connections made the ways programs make them, with every option a
 * tcptune policy can set read back from inside (getsockopt) at each step, to show that
 * `tcptune run --observe` changes none of them; and each connection's endpoints as the program
 * sees them, to check the records against.
 *
 *   observe_probe ENDPOINTS_FILE [HOLD_MS]
 *
 * stdout: one line per socket and step, "NAME STEP OPTION=VALUE ...", without ports, so that
 * runs compare line by line. ENDPOINTS_FILE: one line per connection end,
 * "NAME ROLE LOCAL PEER" (addresses as the records print them: "127.0.0.1:PORT", "[::1]:PORT",
 * an IPv4-mapped address as IPv4). The connections:
 *   blocking   a blocking connect; the program pins SO_RCVBUF and SO_SNDBUF before it
 *   so_error   a non-blocking connect, poll, getsockopt(SO_ERROR)
 *   write_only a non-blocking connect, poll, then a write without asking SO_ERROR
 *   ipv6       over ::1 (left out where IPv6 is off)
 *   mapped     an IPv6 socket to ::ffff:127.0.0.1 on a dual-stack listener
 *   brief      connected, one request, closed by the client at once
 *   left_open  never closed: open at exit
 * Each connection but `brief` exchanges a request and a reply three times, then waits HOLD_MS
 * (default 0) before the clients close, then the servers. A connect that is refused is tried
 * too (port 1: "refused" in ENDPOINTS_FILE with its peer). Every wait is bounded (10 s): one
 * that runs out exits 3. Failed system calls exit 1, usage errors 2. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static FILE* endpoints;

static void die(const char* what) {
  fprintf(stderr, "observe_probe: %s: %s\n", what, strerror(errno));
  exit(1);
}

static void wait_for(int fd, short events) {
  struct pollfd p = {fd, events, 0};
  const int ready = poll(&p, 1, 10000);
  if (ready == 0) {
    fprintf(stderr, "observe_probe: no event %d on fd %d within 10 s\n", events, fd);
    exit(3);
  }
  if (ready < 0) {
    die("poll");
  }
}

static int int_option(int fd, int level, int name) {
  int value = 0;
  socklen_t length = sizeof value;
  return getsockopt(fd, level, name, &value, &length) == 0 ? value : -1000 - errno;
}

/* Every option a policy can set (config/src/sockopt_names.cpp and the tuning keys), as the
 * program reads it. */
static void dump(const char* name, const char* step, int fd, int family) {
  static const struct {
    const char* text;
    int level;
    int name;
  } options[] = {
      {"TCP_NODELAY", IPPROTO_TCP, TCP_NODELAY},
      {"TCP_CORK", IPPROTO_TCP, TCP_CORK},
      {"SO_SNDBUF", SOL_SOCKET, SO_SNDBUF},
      {"SO_RCVBUF", SOL_SOCKET, SO_RCVBUF},
      {"SO_KEEPALIVE", SOL_SOCKET, SO_KEEPALIVE},
      {"TCP_KEEPIDLE", IPPROTO_TCP, TCP_KEEPIDLE},
      {"TCP_KEEPINTVL", IPPROTO_TCP, TCP_KEEPINTVL},
      {"TCP_KEEPCNT", IPPROTO_TCP, TCP_KEEPCNT},
      {"TCP_USER_TIMEOUT", IPPROTO_TCP, TCP_USER_TIMEOUT},
      {"TCP_NOTSENT_LOWAT", IPPROTO_TCP, TCP_NOTSENT_LOWAT},
      {"TCP_THIN_LINEAR_TIMEOUTS", IPPROTO_TCP, TCP_THIN_LINEAR_TIMEOUTS},
      {"TCP_MAXSEG", IPPROTO_TCP, TCP_MAXSEG},
      {"TCP_WINDOW_CLAMP", IPPROTO_TCP, TCP_WINDOW_CLAMP},
      {"TCP_SYNCNT", IPPROTO_TCP, TCP_SYNCNT},
      {"TCP_LINGER2", IPPROTO_TCP, TCP_LINGER2},
      {"TCP_DEFER_ACCEPT", IPPROTO_TCP, TCP_DEFER_ACCEPT},
      {"TCP_FASTOPEN_CONNECT", IPPROTO_TCP, TCP_FASTOPEN_CONNECT},
      {"SO_PRIORITY", SOL_SOCKET, SO_PRIORITY},
      {"SO_MARK", SOL_SOCKET, SO_MARK},
      {"SO_REUSEADDR", SOL_SOCKET, SO_REUSEADDR},
      {"SO_REUSEPORT", SOL_SOCKET, SO_REUSEPORT},
  };
  printf("%s %s", name, step);
  for (size_t i = 0; i < sizeof options / sizeof options[0]; ++i) {
    printf(" %s=%d", options[i].text, int_option(fd, options[i].level, options[i].name));
  }
  if (family == AF_INET) {
    printf(" IP_TOS=%d IP_TTL=%d", int_option(fd, IPPROTO_IP, IP_TOS), int_option(fd, IPPROTO_IP, IP_TTL));
  } else {
    printf(" IPV6_TCLASS=%d IPV6_UNICAST_HOPS=%d", int_option(fd, IPPROTO_IPV6, IPV6_TCLASS),
           int_option(fd, IPPROTO_IPV6, IPV6_UNICAST_HOPS));
  }
  char congestion[32] = "";
  socklen_t length = sizeof congestion - 1;
  if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, congestion, &length) != 0) {
    strcpy(congestion, "?");
  }
  printf(" TCP_CONGESTION=%s", congestion);
  struct tcp_info info;
  memset(&info, 0, sizeof info);
  length = sizeof info;
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) == 0 && info.tcpi_state == TCP_ESTABLISHED) {
    /* Chosen at the handshake from the buffers then: a buffer call held back shows here. */
    printf(" rcv_wscale=%d snd_wscale=%d", info.tcpi_rcv_wscale, info.tcpi_snd_wscale);
  }
  printf("\n");
  fflush(stdout);
}

/* As the records print it: IPv4, "[IPv6]", an IPv4-mapped address as IPv4. */
static void format_endpoint(const struct sockaddr_storage* address, char* out, size_t size) {
  char text[INET6_ADDRSTRLEN] = "";
  if (address->ss_family == AF_INET) {
    const struct sockaddr_in* in = (const struct sockaddr_in*)address;
    inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
    snprintf(out, size, "%s:%d", text, ntohs(in->sin_port));
    return;
  }
  const struct sockaddr_in6* in6 = (const struct sockaddr_in6*)address;
  if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
    inet_ntop(AF_INET, &in6->sin6_addr.s6_addr[12], text, sizeof text);
    snprintf(out, size, "%s:%d", text, ntohs(in6->sin6_port));
    return;
  }
  inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
  snprintf(out, size, "[%s]:%d", text, ntohs(in6->sin6_port));
}

static void note_ends(const char* name, const char* role, int fd) {
  struct sockaddr_storage local, peer;
  socklen_t local_length = sizeof local, peer_length = sizeof peer;
  if (getsockname(fd, (struct sockaddr*)&local, &local_length) != 0 ||
      getpeername(fd, (struct sockaddr*)&peer, &peer_length) != 0) {
    die("getsockname/getpeername");
  }
  char local_text[80], peer_text[80];
  format_endpoint(&local, local_text, sizeof local_text);
  format_endpoint(&peer, peer_text, sizeof peer_text);
  fprintf(endpoints, "%s %s %s %s\n", name, role, local_text, peer_text);
  fflush(endpoints);
}

static socklen_t address_of(int family, const char* text, int port, struct sockaddr_storage* out) {
  memset(out, 0, sizeof *out);
  if (family == AF_INET) {
    struct sockaddr_in* in = (struct sockaddr_in*)out;
    in->sin_family = AF_INET;
    in->sin_port = htons((unsigned short)port);
    inet_pton(AF_INET, text, &in->sin_addr);
    return sizeof *in;
  }
  struct sockaddr_in6* in6 = (struct sockaddr_in6*)out;
  in6->sin6_family = AF_INET6;
  in6->sin6_port = htons((unsigned short)port);
  inet_pton(AF_INET6, text, &in6->sin6_addr);
  return sizeof *in6;
}

static int listen_on(int family, const char* text, int dual_stack) {
  const int fd = socket(family, SOCK_STREAM, 0);
  if (fd < 0) {
    return -1;
  }
  const int one = 1;
  const int zero = 0;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (family == AF_INET6) {
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, dual_stack ? &zero : &one, sizeof one);
  }
  struct sockaddr_storage address;
  const socklen_t length = address_of(family, text, 0, &address);
  if (bind(fd, (struct sockaddr*)&address, length) != 0 || listen(fd, 16) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

static int port_of(int fd) {
  struct sockaddr_storage address;
  socklen_t length = sizeof address;
  getsockname(fd, (struct sockaddr*)&address, &length);
  return ntohs(address.ss_family == AF_INET ? ((struct sockaddr_in*)&address)->sin_port
                                            : ((struct sockaddr_in6*)&address)->sin6_port);
}

enum how { blocking, so_error, write_only };

struct connection {
  const char* name;
  int client;
  int server;
  int family;
};

static struct connection connect_to(const char* name, int listener, int family, const char* target, enum how how) {
  struct connection made = {name, -1, -1, family};
  made.client = socket(family, SOCK_STREAM | (how == blocking ? 0 : SOCK_NONBLOCK), 0);
  if (made.client < 0) {
    die("socket");
  }
  if (how == blocking) {
    /* Pinned before connect, as some programs do: the shim may not hold these back here. */
    const int rcvbuf = 100;
    const int sndbuf = 5000;
    setsockopt(made.client, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    setsockopt(made.client, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
  }
  dump(name, "client_before_connect", made.client, family);
  struct sockaddr_storage address;
  const socklen_t length = address_of(family, target, port_of(listener), &address);
  if (connect(made.client, (struct sockaddr*)&address, length) != 0) {
    if (how == blocking || errno != EINPROGRESS) {
      die("connect");
    }
    wait_for(made.client, POLLOUT);
    if (how == so_error && int_option(made.client, SOL_SOCKET, SO_ERROR) != 0) {
      die("connect (SO_ERROR)");
    }
  }
  made.server = accept(listener, NULL, NULL);
  if (made.server < 0) {
    die("accept");
  }
  dump(name, "client_connected", made.client, family);
  dump(name, "server_accepted", made.server, family);
  note_ends(name, "client", made.client);
  note_ends(name, "server", made.server);
  return made;
}

static void send_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t sent = send(fd, data, size, MSG_NOSIGNAL);
    if (sent < 0 && errno == EAGAIN) {
      wait_for(fd, POLLOUT);
      continue;
    }
    if (sent <= 0) {
      die("send");
    }
    data += sent;
    size -= (size_t)sent;
  }
}

static void receive_all(int fd, size_t size) {
  char buffer[512];
  while (size > 0) {
    wait_for(fd, POLLIN);
    const ssize_t got = recv(fd, buffer, size < sizeof buffer ? size : sizeof buffer, 0);
    if (got < 0 && errno == EAGAIN) {
      continue;
    }
    if (got <= 0) {
      die("recv");
    }
    size -= (size_t)got;
  }
}

static void exchange(const struct connection* c, int times) {
  char request[200];
  memset(request, 'q', sizeof request);
  for (int i = 0; i < times; ++i) {
    send_all(c->client, request, sizeof request);
    receive_all(c->server, sizeof request);
    send_all(c->server, "reply", 5);
    receive_all(c->client, 5);
  }
  dump(c->name, "client_after_exchange", c->client, c->family);
  dump(c->name, "server_after_exchange", c->server, c->family);
}

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: observe_probe ENDPOINTS_FILE [HOLD_MS]\n");
    return 2;
  }
  endpoints = fopen(argv[1], "w");
  if (endpoints == NULL) {
    die(argv[1]);
  }
  const long hold_ms = argc == 3 ? strtol(argv[2], NULL, 10) : 0;

  const int listener = listen_on(AF_INET, "127.0.0.1", 0);
  if (listener < 0) {
    die("listen on 127.0.0.1");
  }
  dump("listener", "listening", listener, AF_INET);
  struct connection made[8];
  int count = 0;
  made[count++] = connect_to("blocking", listener, AF_INET, "127.0.0.1", blocking);
  made[count++] = connect_to("so_error", listener, AF_INET, "127.0.0.1", so_error);
  made[count++] = connect_to("write_only", listener, AF_INET, "127.0.0.1", write_only);
  const int listener6 = listen_on(AF_INET6, "::1", 0);
  if (listener6 >= 0) {
    made[count++] = connect_to("ipv6", listener6, AF_INET6, "::1", blocking);
  }
  const int dual = listen_on(AF_INET6, "::", 1);
  if (dual >= 0) {
    made[count++] = connect_to("mapped", dual, AF_INET6, "::ffff:127.0.0.1", so_error);
  }
  for (int i = 0; i < count; ++i) {
    exchange(&made[i], 3);
  }

  struct connection brief = connect_to("brief", listener, AF_INET, "127.0.0.1", blocking);
  send_all(brief.client, "one", 3);
  receive_all(brief.server, 3);
  close(brief.client);
  close(brief.server);

  const int refused = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_storage nowhere;
  const socklen_t nowhere_length = address_of(AF_INET, "127.0.0.1", 1, &nowhere);
  if (connect(refused, (struct sockaddr*)&nowhere, nowhere_length) == 0 || errno != ECONNREFUSED) {
    die("connect to port 1 (expected ECONNREFUSED)");
  }
  fprintf(endpoints, "refused client - 127.0.0.1:1\n");
  fflush(endpoints);
  close(refused);

  struct connection left_open = connect_to("left_open", listener, AF_INET, "127.0.0.1", blocking);
  exchange(&left_open, 1);

  if (hold_ms > 0) {
    const struct timespec hold = {hold_ms / 1000, (hold_ms % 1000) * 1000000L};
    nanosleep(&hold, NULL);
  }
  for (int i = 0; i < count; ++i) {
    close(made[i].client);
  }
  for (int i = 0; i < count; ++i) {
    close(made[i].server);
  }
  fclose(endpoints);
  return 0; /* left_open's two ends: still open at exit */
}
