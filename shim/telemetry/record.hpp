// One log record: an event name and its fields, in order, rendered either as a text line
// ("conn_close fd=7 writes=12 ...") or as the fields of a JSON object (the log adds the
// time, level, pid and program). Built off the write path: it allocates.
#pragma once

#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "json_writer.hpp"

namespace tcptune::telemetry {

// The forms Records are built in. A log writes one of them, so the other need not be built:
// the log sets them when its format is chosen (text, or JSON whose fields are left out only on
// stderr, whose lines have a size limit); every form until then.
struct RecordForms {
  bool text = true;
  bool json = true;
  bool json_field_spans = true;  // for json_fields_within
};
void set_record_forms(RecordForms forms) noexcept;
[[nodiscard]] RecordForms record_forms() noexcept;

class Record {
 public:
  explicit Record(std::string_view event);

  Record& add(std::string_view key, std::string_view value);
  Record& add(std::string_view key, const char* value) { return add(key, std::string_view(value)); }
  Record& add(std::string_view key, std::int64_t value);
  Record& add(std::string_view key, std::uint64_t value);
  Record& add(std::string_view key, int value) { return add(key, static_cast<std::int64_t>(value)); }
  Record& add(std::string_view key, double value);
  Record& add(std::string_view key, bool value);
  // A nested JSON value, and how the text line shows it ("key=text").
  Record& add_json(std::string_view key, std::string_view json, std::string_view text);
  // A nested JSON value the text line shows as a trailing "| ..." section instead.
  Record& add_json_section(std::string_view key, std::string_view json, std::string_view text);
  // The same, each form made (a callable returning a string) only when it is built.
  template <std::invocable MakeJson, std::invocable MakeText>
  Record& add_json(std::string_view key, MakeJson&& json, MakeText&& text) {
    return add_json(key, forms_.json ? json() : std::string(), forms_.text ? text() : std::string());
  }
  template <std::invocable MakeJson, std::invocable MakeText>
  Record& add_json_section(std::string_view key, MakeJson&& json, MakeText&& text) {
    return add_json_section(key, forms_.json ? json() : std::string(), forms_.text ? text() : std::string());
  }

  [[nodiscard]] const std::string& event() const { return event_; }
  [[nodiscard]] const std::string& text() const { return text_; }
  // "\"event\":\"conn_close\",\"fd\":7,..." without the braces.
  [[nodiscard]] std::string json_fields() const;
  // The same within `limit` bytes, for a log whose lines have a size limit (stderr, PIPE_BUF):
  // the longest fields are left out, longest first, and named in an "omitted" array, so the
  // line stays whole JSON with the rest of its fields; empty when not even the event fits (or
  // when the fields' spans are not built: RecordForms).
  [[nodiscard]] std::string json_fields_within(std::size_t limit) const;

 private:
  template <typename Integer>
  Record& add_integer(std::string_view key, Integer value);
  void add_text(std::string_view key, std::string_view value, bool quote);
  // Notes where the field `key` json_ just received (after `before` bytes of it) starts and ends.
  void note_field(std::size_t before, std::string_view key);
  // A field's place in json_'s body: its key ("key", as written) from begin to key_end, the
  // whole field from begin to end.
  struct FieldSpan {
    std::size_t begin;
    std::size_t key_end;
    std::size_t end;
  };
  RecordForms forms_;
  std::string event_;
  std::string text_;
  JsonObject json_;
  std::vector<FieldSpan> spans_;
};

}  // namespace tcptune::telemetry
