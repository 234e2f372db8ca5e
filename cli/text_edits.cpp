#include "text_edits.hpp"

#include <algorithm>
#include <stdexcept>

namespace tcptune::cli {

std::string apply_text_edits(std::string_view text, std::vector<TextEdit> edits) {
  std::stable_sort(edits.begin(), edits.end(), [](const TextEdit& a, const TextEdit& b) { return a.begin < b.begin; });
  std::string out;
  out.reserve(text.size());
  std::size_t done = 0;
  bool deleted_last = false;
  for (const TextEdit& edit : edits) {
    if (edit.begin < done && deleted_last && edit.text.empty() && edit.end <= text.size()) {
      // Two entries taken out of a flow mapping side by side each take a separator with them.
      done = std::max(done, edit.end);
      continue;
    }
    if (edit.begin < done || edit.end < edit.begin || edit.end > text.size()) {
      throw std::logic_error("overlapping text edits");
    }
    deleted_last = edit.text.empty() && edit.end > edit.begin;
    out.append(text.substr(done, edit.begin - done));
    out.append(edit.text);
    done = edit.end;
  }
  out.append(text.substr(done));
  return out;
}

}  // namespace tcptune::cli
