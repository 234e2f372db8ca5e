// Replacements of byte ranges of a text, applied together: the positions all refer to the
// original text, so edits computed from one parse never shift each other.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tcptune::cli {

struct TextEdit {
  std::size_t begin = 0;  // [begin, end) is replaced by `text`; begin == end inserts
  std::size_t end = 0;
  std::string text;
};

// Applies `edits` in order of position; insertions at one position keep the order they were given
// in; deletions that overlap delete their union. Throws std::logic_error when any other two edits
// overlap (a bug in whoever computed them).
std::string apply_text_edits(std::string_view text, std::vector<TextEdit> edits);

}  // namespace tcptune::cli
