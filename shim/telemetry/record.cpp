#include "record.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <numeric>

namespace tcptune::telemetry {

namespace {

constexpr std::uint8_t kText = 1;
constexpr std::uint8_t kJson = 2;
constexpr std::uint8_t kJsonFieldSpans = 4;
constexpr std::size_t kTypicalRecordSize = 1024;  // a conn_close is about 900 bytes
std::atomic<std::uint8_t> g_forms{kText | kJson | kJsonFieldSpans};

}  // namespace

void set_record_forms(RecordForms forms) noexcept {
  g_forms.store(static_cast<std::uint8_t>((forms.text ? kText : 0) | (forms.json ? kJson : 0) |
                                          (forms.json && forms.json_field_spans ? kJsonFieldSpans : 0)),
                std::memory_order_relaxed);
}

RecordForms record_forms() noexcept {
  const std::uint8_t forms = g_forms.load(std::memory_order_relaxed);
  return {
      .text = (forms & kText) != 0, .json = (forms & kJson) != 0, .json_field_spans = (forms & kJsonFieldSpans) != 0};
}

Record::Record(std::string_view event) : forms_(record_forms()), event_(event), text_(event) {
  if (forms_.json) {
    json_.reserve(kTypicalRecordSize);
  }
  if (forms_.json_field_spans) {
    spans_.reserve(16);
  }
  const std::size_t before = json_.open_body().size();
  json_.field("event", event);
  note_field(before, "event");
}

void Record::note_field(std::size_t before, std::string_view key) {
  if (!forms_.json_field_spans) {
    return;
  }
  const std::string& body = json_.open_body();
  const std::size_t begin = before + (before > 1 ? 1 : 0);  // past the comma
  std::size_t key_end = begin + 1;
  if (std::all_of(key.begin(), key.end(), [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; })) {
    key_end += key.size();  // written as it is
  } else {
    // Escaped: its closing quote is the first unescaped one after the opening.
    while (key_end < body.size() && body[key_end] != '"') {
      key_end += body[key_end] == '\\' ? 2 : 1;
    }
  }
  spans_.push_back({begin, key_end + 1, body.size()});
}

void Record::add_text(std::string_view key, std::string_view value, bool quote) {
  if (!forms_.text) {
    return;
  }
  text_ += ' ';
  text_ += key;
  text_ += '=';
  // Quoted when it could not be read back as one word.
  if (quote && (value.empty() || value.find_first_of(" \"=") != std::string_view::npos)) {
    append_json_string(text_, value);
  } else {
    text_ += value;
  }
}

Record& Record::add(std::string_view key, std::string_view value) {
  add_text(key, value, true);
  if (forms_.json) {
    const std::size_t before = json_.open_body().size();
    json_.field(key, value);
    note_field(before, key);
  }
  return *this;
}

template <typename Integer>
Record& Record::add_integer(std::string_view key, Integer value) {
  if (forms_.text) {
    std::string number;
    append_integer(number, value);
    add_text(key, number, false);
  }
  if (forms_.json) {
    const std::size_t before = json_.open_body().size();
    json_.field(key, value);
    note_field(before, key);
  }
  return *this;
}

Record& Record::add(std::string_view key, std::int64_t value) {
  return add_integer(key, value);
}

Record& Record::add(std::string_view key, std::uint64_t value) {
  return add_integer(key, value);
}

Record& Record::add(std::string_view key, double value) {
  if (forms_.text) {
    std::string number;
    append_general(number, value);
    add_text(key, number, false);
  }
  if (forms_.json) {
    const std::size_t before = json_.open_body().size();
    json_.field(key, value);
    note_field(before, key);
  }
  return *this;
}

Record& Record::add(std::string_view key, bool value) {
  add_text(key, value ? "true" : "false", false);
  if (forms_.json) {
    const std::size_t before = json_.open_body().size();
    json_.field(key, value);
    note_field(before, key);
  }
  return *this;
}

Record& Record::add_json(std::string_view key, std::string_view json, std::string_view text) {
  add_text(key, text, false);
  if (forms_.json) {
    const std::size_t before = json_.open_body().size();
    json_.raw(key, json);
    note_field(before, key);
  }
  return *this;
}

Record& Record::add_json_section(std::string_view key, std::string_view json, std::string_view text) {
  if (forms_.text && !text.empty()) {
    text_ += " |";
    text_ += text;
  }
  if (forms_.json) {
    const std::size_t before = json_.open_body().size();
    json_.raw(key, json);
    note_field(before, key);
  }
  return *this;
}

std::string Record::json_fields_within(std::size_t limit) const {
  std::string all = json_fields();
  if (all.size() <= limit) {
    return all;
  }
  const std::string& body = json_.open_body();
  std::vector<bool> kept(spans_.size(), true);
  // Longest first; the event (the first field) stays.
  std::vector<std::size_t> order(spans_.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return spans_[a].end - spans_[a].begin > spans_[b].end - spans_[b].begin;
  });
  for (const std::size_t next : order) {
    if (next == 0) {
      continue;
    }
    kept[next] = false;
    std::string fields;
    JsonArray omitted;
    for (std::size_t i = 0; i < spans_.size(); ++i) {
      if (kept[i]) {
        fields += (fields.empty() ? "" : ",") + body.substr(spans_[i].begin, spans_[i].end - spans_[i].begin);
      } else {
        omitted.add_raw(body.substr(spans_[i].begin, spans_[i].key_end - spans_[i].begin));
      }
    }
    fields += ",\"omitted\":" + omitted.str();
    if (fields.size() <= limit) {
      return fields;
    }
  }
  return {};
}

std::string Record::json_fields() const {
  return json_.open_body().substr(1);  // past the opening brace; the closing one is not there yet
}

}  // namespace tcptune::telemetry
