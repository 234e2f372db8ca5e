#include "tun_device.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "netns_sysctl.hpp"

namespace tcptune::linkem {

namespace {

ifreq request_for(std::string_view interface) {
  ifreq request{};
  interface.copy(request.ifr_name, std::min<std::size_t>(interface.size(), IFNAMSIZ - 1));
  return request;
}

void set_address(ifreq& request, std::uint32_t address) {
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_addr.s_addr = htonl(address);
  std::memcpy(&request.ifr_addr, &in, sizeof in);
}

// Socket ioctls on the interfaces of the current namespace.
class InterfaceControl {
 public:
  InterfaceControl() : fd_(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) {}
  InterfaceControl(const InterfaceControl&) = delete;
  InterfaceControl& operator=(const InterfaceControl&) = delete;
  ~InterfaceControl() {
    if (fd_ >= 0) {
      close(fd_);
    }
  }

  bool call(unsigned long request_code, ifreq& request, const char* what, std::string& error) const {
    if (fd_ < 0) {
      error = std::string("socket: ") + std::strerror(errno);
      return false;
    }
    if (ioctl(fd_, request_code, &request) != 0) {
      error = std::string(what) + " on " + request.ifr_name + ": " + std::strerror(errno);
      return false;
    }
    return true;
  }

 private:
  int fd_;
};

}  // namespace

int open_tun(std::string_view name, std::string& error) {
  const int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    error = std::string("open /dev/net/tun: ") + std::strerror(errno);
    return -1;
  }
  ifreq request = request_for(name);
  request.ifr_flags = IFF_TUN | IFF_NO_PI;
  if (ioctl(fd, TUNSETIFF, &request) != 0) {
    error = "TUNSETIFF " + std::string(name) + ": " + std::strerror(errno);
    close(fd);
    return -1;
  }
  return fd;
}

bool bring_up(std::string_view interface, std::string& error) {
  const InterfaceControl control;
  ifreq request = request_for(interface);
  if (!control.call(SIOCGIFFLAGS, request, "SIOCGIFFLAGS", error)) {
    return false;
  }
  request.ifr_flags = static_cast<short>(request.ifr_flags | IFF_UP | IFF_RUNNING);
  return control.call(SIOCSIFFLAGS, request, "SIOCSIFFLAGS", error);
}

bool configure_point_to_point(const PointToPoint& link, std::string& error) {
  // Best effort: without IPv6 in the kernel the file does not exist, and there is nothing to silence.
  std::string ignored;
  write_sysctl("/proc/sys/net/ipv6/conf/" + std::string(link.interface) + "/disable_ipv6", "1", ignored);

  const InterfaceControl control;
  ifreq request = request_for(link.interface);
  set_address(request, link.local_address);
  if (!control.call(SIOCSIFADDR, request, "SIOCSIFADDR", error)) {
    return false;
  }
  request = request_for(link.interface);
  set_address(request, link.peer_address);
  if (!control.call(SIOCSIFDSTADDR, request, "SIOCSIFDSTADDR", error)) {
    return false;
  }
  request = request_for(link.interface);
  set_address(request, 0xffffffffU);
  if (!control.call(SIOCSIFNETMASK, request, "SIOCSIFNETMASK", error)) {
    return false;
  }
  request = request_for(link.interface);
  request.ifr_mtu = link.mtu;
  if (!control.call(SIOCSIFMTU, request, "SIOCSIFMTU", error)) {
    return false;
  }
  // The kernel adds the /32 route to the peer when a point-to-point interface with a peer address comes up.
  return bring_up(link.interface, error);
}

}  // namespace tcptune::linkem
