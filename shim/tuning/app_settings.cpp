#include "app_settings.hpp"

#include "errno_saver.hpp"
#include "tcptune/config/host_sysctl.hpp"

namespace tcptune::shim {

HostBufferFacts read_host_buffer_facts() {
  const ErrnoSaver saver;
  HostBufferFacts facts;
  facts.rcvbuf = config::read_rcvbuf_limits();
  facts.sndbuf = config::read_sndbuf_limits();
  facts.cap_net_admin = config::has_cap_net_admin();
  return facts;
}

}  // namespace tcptune::shim
