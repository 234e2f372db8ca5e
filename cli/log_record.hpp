// One line of a shim log read as its JSON object (nlohmann-json: strict RFC 8259, surrogate pairs
// decoded to UTF-8). The CLI reads records through their documented JSON, never through shim headers.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tcptune::cli {

// The record, or nullopt for a line that is not a JSON object (a text log, a line cut by kill -9).
std::optional<nlohmann::json> parse_log_record(std::string_view line);

// A value as a count: the shim writes whole numbers from 0; a damaged or hand-edited log may hold
// anything else, which counts as 0.
std::uint64_t as_count(const nlohmann::json& value);
// A value as a number, 0 when it is not one.
double as_number(const nlohmann::json& value);
// The member `key` of an object: as_count, as_number, or the string (`fallback` when it is not
// one); 0 or `fallback` when there is no such member.
std::uint64_t count_field(const nlohmann::json& record, std::string_view key);
double number_field(const nlohmann::json& record, std::string_view key);
std::string string_field(const nlohmann::json& record, std::string_view key, const std::string& fallback = "");

}  // namespace tcptune::cli
