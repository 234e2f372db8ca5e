// "; did you mean 'keepalive'?" for a misspelt name, from the names that would have been valid.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace tcptune::config {

// Levenshtein distance: insertions, deletions and substitutions of one byte each.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The suggestion for the first candidate closest to `word` (fewer than 3 edits away), or "".
std::string did_you_mean(std::string_view word, std::span<const std::string_view> candidates);

}  // namespace tcptune::config
