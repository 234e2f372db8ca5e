#include "systemctl_steps.hpp"

namespace tcptune::cli {

void print_systemctl_steps(std::FILE* out, const ServiceUnitName& unit, const std::string& root) {
  // A template's drop-in applies to every instance: restart the running ones.
  const std::string restart =
      unit.is_template ? "'" + unit.name.substr(0, unit.name.find('@') + 1) + "*.service'" : unit.name;
  (void)std::fprintf(out, "%s, then run:\n  systemctl daemon-reload\n  systemctl restart %s\n",
                     root.empty() ? "To apply it" : ("To apply it, on the system under " + root).c_str(),
                     restart.c_str());
}

}  // namespace tcptune::cli
