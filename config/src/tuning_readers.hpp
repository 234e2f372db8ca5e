// How the loader reads each tuning key's TOML value into its Tuning field (the `read` column of
// tuning_keys.cpp's table). Every value check is a parser from value_parsers.hpp.
#pragma once

#include <string_view>

#include "tcptune/config/policy.hpp"
#include "toml_walk.hpp"

namespace tcptune::config {

// A true/false key.
template <std::optional<bool> Tuning::*Field>
void read_bool(TomlWalk& walk, std::string_view name, const TomlNode& value, Tuning& into) {
  into.*Field = walk.take(value.node, parse_bool(policy_value(value.node), name));
}

void read_nodelay(TomlWalk& walk, std::string_view name, const TomlNode& value, Tuning& into);
void read_buffers(TomlWalk& walk, std::string_view name, const TomlNode& value, Tuning& into);
void read_congestion(TomlWalk& walk, std::string_view name, const TomlNode& value, Tuning& into);
void read_keepalive(TomlWalk& walk, std::string_view name, const TomlNode& value, Tuning& into);
void read_user_timeout(TomlWalk& walk, std::string_view name, const TomlNode& value, Tuning& into);
void read_notsent_lowat(TomlWalk& walk, std::string_view name, const TomlNode& value, Tuning& into);
void read_tos(TomlWalk& walk, std::string_view name, const TomlNode& value, Tuning& into);
void read_keep_warm(TomlWalk& walk, std::string_view name, const TomlNode& value, Tuning& into);
void read_sockopts(TomlWalk& walk, std::string_view name, const TomlNode& value, Tuning& into);

}  // namespace tcptune::config
