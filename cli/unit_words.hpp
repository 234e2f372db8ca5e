// The words of a unit file value, as systemd splits Environment=, ExecStart= and the like
// (extract_first_word with EXTRACT_UNQUOTE|EXTRACT_CUNESCAPE): whitespace separates words,
// single or double quotes anywhere in a word keep whitespace in it, and a backslash escapes as in
// C (\n, \t, \xHH, \uHHHH, \NNN octal...), inside quotes too. Specifiers (%i, %n...) are left as
// they are: systemd expands them in each word afterwards.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tcptune::cli {

struct UnitWord {
  std::string text;     // unquoted and unescaped
  std::size_t begin{};  // where the word is written in the value, quotes and escapes included
  std::size_t end{};
};

struct UnitWords {
  std::vector<UnitWord> words;
  // Set where systemd stops: unbalanced quotes, or (when `relaxed` is false) an unknown escape.
  // `words` holds those before it.
  std::string error;
};

// `relaxed`: an unknown escape ("\;") is kept as written, as ExecStart= does; otherwise it ends
// the split, as Environment= does ("Invalid syntax, ignoring").
UnitWords split_unit_words(std::string_view value, bool relaxed);

// One word written so that split_unit_words gives `text` back: in double quotes when it needs
// any, with backslash, quote and control characters escaped. `literal_percent` doubles '%' so
// that systemd expands no specifier in it; `literal_dollar` doubles '$' for ExecStart= arguments.
std::string quote_unit_word(std::string_view text, bool literal_percent, bool literal_dollar = false);

}  // namespace tcptune::cli
