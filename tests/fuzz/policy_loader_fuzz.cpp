// Fuzz target: any text as a policy (config::load_policy_text, toml++ included). Besides not
// crashing, an error must stay one line naming its source, a policy that loads must be usable
// by the rule matcher, and no load may use more than half of its private stack.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tcptune/config/cidr.hpp"
#include "tcptune/config/policy_loader.hpp"
#include "tcptune/config/rule_matcher.hpp"

using namespace tcptune::config;

// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::size_t stack_used = 0;
  const LoadResult result = load_policy_text(text, "fuzz.toml", &stack_used);
  // The nesting bound keeps toml++'s recursion well below the private stack's size (the worst
  // cases measured are in toml_input_guard.hpp): an input that takes more than half of it has
  // found a recursion the bound misses, before one overflows the stack.
  if (stack_used > kPolicyStackBytes / 2) {
    (void)std::fprintf(stderr, "the load used %zu bytes of its %zu-byte stack\n", stack_used, kPolicyStackBytes);
    std::abort();
  }
  if (!result.ok()) {
    const std::string message = result.error().to_string();
    if (message.find('\n') != std::string::npos || message.rfind("fuzz.toml", 0) != 0) {
      std::abort();  // the shim prints it as one line of stderr
    }
    return 0;
  }
  const Policy& policy = result.policy();
  Endpoint peer;
  peer.family = 4;
  peer.bytes = {127, 0, 0, 1};
  peer.port = 8080;
  for (const Role role : {Role::client, Role::server}) {
    const int rule = match_rule(policy, ConnectionFacts{role, peer, 8080, "probe"});
    if (rule < -1 || rule >= static_cast<int>(policy.rules.size())) {
      std::abort();
    }
    (void)rule_name(policy, rule);
  }
  return 0;
}
