#include "host_congestion.hpp"

#include <sstream>

#include "tcptune/config/host_sysctl.hpp"

namespace tcptune::cli {

bool listed(const std::string& list, const std::string& algorithm) {
  std::istringstream in(list);
  std::string word;
  while (in >> word) {
    if (word == algorithm) {
      return true;
    }
  }
  return false;
}

std::string congestion_outlook(const std::string& algorithm, bool cap_net_admin) {
  const std::string available = config::read_sysctl("net/ipv4/tcp_available_congestion_control").value_or("");
  const std::string allowed = config::read_sysctl("net/ipv4/tcp_allowed_congestion_control").value_or("");
  if (!listed(available, algorithm)) {
    return algorithm + " is not loaded in this kernel (available: " + available +
           "); it will be refused (ENOENT) unless the module can be autoloaded, and the default stays";
  }
  if (listed(allowed, algorithm)) {
    return algorithm + " is available and allowed for unprivileged processes";
  }
  if (cap_net_admin) {
    return algorithm + " is available; not in tcp_allowed_congestion_control, but this process has CAP_NET_ADMIN";
  }
  return algorithm + " is available but not in tcp_allowed_congestion_control (" + allowed +
         "): it will be refused (EPERM) without CAP_NET_ADMIN, and the default stays";
}

}  // namespace tcptune::cli
