#include "text_edits.hpp"

#include <algorithm>
#include <stdexcept>

namespace tcptune::cli {

std::string apply_text_edits(std::string_view text, std::vector<TextEdit> edits) {
  std::stable_sort(edits.begin(), edits.end(), [](const TextEdit& a, const TextEdit& b) { return a.begin < b.begin; });
  std::string out;
  out.reserve(text.size());
  std::size_t done = 0;
  for (const TextEdit& edit : edits) {
    if (edit.begin < done || edit.end < edit.begin || edit.end > text.size()) {
      throw std::logic_error("overlapping text edits");
    }
    out.append(text.substr(done, edit.begin - done));
    out.append(edit.text);
    done = edit.end;
  }
  out.append(text.substr(done));
  return out;
}

}  // namespace tcptune::cli
