// The name of the service `tcptune enable` is given: "nginx" (".service" added, as systemctl
// does), "nginx.service", a template "getty@.service" (its drop-in applies to every instance) or
// an instance "getty@tty1.service" (its drop-in applies to that one).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tcptune::cli {

struct ServiceUnitName {
  std::string name;      // "foo@bar.service"
  std::string instance;  // "bar"; empty for a template or a plain service
  bool is_template = false;
  bool is_instance = false;
  // "foo@.service" for a template or an instance; the name itself otherwise.
  [[nodiscard]] std::string template_name() const;
};

// The service unit `text` names, or nothing with the reason in `problem` ("x.socket is a socket
// unit, not a service: ...").
std::optional<ServiceUnitName> parse_service_unit_name(std::string_view text, std::string& problem);

// systemd's name rules, for names that are not the one given (prefix drop-in directories).
bool is_instance_name(std::string_view name);
// "foo@bar.service" -> "foo@.service"
std::string template_of(std::string_view name);
// The part before '@' or before the suffix: "foo-bar@x.service" -> "foo-bar".
std::string prefix_of(std::string_view name);
// The instance: "foo@bar.service" -> "bar"; empty for none.
std::string instance_of(std::string_view name);

}  // namespace tcptune::cli
