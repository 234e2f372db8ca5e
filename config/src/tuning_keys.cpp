#include "tcptune/config/tuning_keys.hpp"

#include "tuning_explanations.hpp"
#include "tuning_readers.hpp"

namespace tcptune::config {

namespace {

// A rule's value replaces the defaults' when the rule sets it.
template <auto Field>
void take_if_set(Tuning& into, const Tuning& rule) {
  if ((rule.*Field).has_value()) {
    into.*Field = rule.*Field;
  }
}

// A rule's raw options come after the defaults' (setsockopt in that order: the rule's win).
void append_sockopts(Tuning& into, const Tuning& rule) {
  into.sockopts.insert(into.sockopts.end(), rule.sockopts.begin(), rule.sockopts.end());
}

constexpr TuningKey kTuningKeys[] = {
    {"nodelay", read_nodelay, take_if_set<&Tuning::nodelay>, explain_nodelay},
    {"buffers", read_buffers, take_if_set<&Tuning::buffers>, explain_buffers},
    {"override_app_buffers", read_bool<&Tuning::override_app_buffers>, take_if_set<&Tuning::override_app_buffers>,
     explain_override_app_buffers},
    {"congestion", read_congestion, take_if_set<&Tuning::congestion>, explain_congestion},
    {"keepalive", read_keepalive, take_if_set<&Tuning::keepalive>, explain_keepalive},
    {"user_timeout", read_user_timeout, take_if_set<&Tuning::user_timeout>, explain_user_timeout},
    {"notsent_lowat", read_notsent_lowat, take_if_set<&Tuning::notsent_lowat>, explain_notsent_lowat},
    {"thin_linear_timeouts", read_bool<&Tuning::thin_linear_timeouts>, take_if_set<&Tuning::thin_linear_timeouts>,
     explain_thin_linear_timeouts},
    {"callsite", read_bool<&Tuning::callsite>, take_if_set<&Tuning::callsite>, explain_nothing},
    {"quickack", read_bool<&Tuning::quickack>, take_if_set<&Tuning::quickack>, explain_quickack},
    {"tos", read_tos, take_if_set<&Tuning::tos>, explain_tos},
    {"keep_warm", read_keep_warm, take_if_set<&Tuning::keep_warm>, explain_keep_warm},
    {"sockopt", read_sockopts, append_sockopts, explain_sockopts},
};

}  // namespace

std::span<const TuningKey> tuning_keys() {
  return kTuningKeys;
}

}  // namespace tcptune::config
