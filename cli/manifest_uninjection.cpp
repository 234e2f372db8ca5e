// Taking out what manifest_injection.cpp added, from the injected text itself (see the header).
#include <algorithm>
#include <functional>

#include "manifest_injection.hpp"

namespace tcptune::cli {

namespace {

using namespace injection;

int list_at(const YamlDocument& document, int map, const char* key) {
  const int value = document.value_of(map, key);
  return value >= 0 && document.node(value).kind == YamlNode::Kind::sequence ? value : -1;
}

bool named(const YamlDocument& document, int item, std::initializer_list<const char*> names) {
  const std::string name = document.scalar(document.value_of(item, "name"));
  return std::any_of(names.begin(), names.end(), [&](const char* candidate) { return name == candidate; });
}

// An env entry exactly as injection writes it: a name and a literal value, nothing else.
bool is_added_variable(const YamlDocument& document, int item, const char* name,
                       const std::function<bool(const std::string&)>& value_matches) {
  const int value = document.value_of(item, "value");
  return document.node(item).kind == YamlNode::Kind::mapping && document.node(item).children.size() == 4 &&
         document.scalar(document.value_of(item, "name")) == name && value >= 0 &&
         value_matches(document.scalar(value));
}

// Takes out the items of `key`'s list that `ours` picks; the whole entry when nothing would be
// left of a list that injection created (a block list is never empty otherwise).
void remove_from_list(const YamlEditor& editor, int map, const char* key, const std::function<bool(int)>& ours,
                      std::vector<TextEdit>& edits) {
  const YamlDocument& document = editor.document();
  const int list = list_at(document, map, key);
  if (list < 0) {
    return;
  }
  const std::vector<int>& items = document.node(list).children;
  std::vector<bool> removed;
  removed.reserve(items.size());
  for (const int item : items) {  // in order: `ours` may count
    removed.push_back(ours(item));
  }
  if (std::none_of(removed.begin(), removed.end(), [](bool r) { return r; })) {
    return;
  }
  // Injection creates a block list in a block mapping and a flow one in a flow mapping; it refuses
  // to add to an empty flow list in a flow mapping, which would look the same.
  const bool created =
      document.node(list).style == YamlNode::Style::block || document.node(map).style == YamlNode::Style::flow;
  if (created && std::all_of(removed.begin(), removed.end(), [](bool r) { return r; })) {
    edits.push_back(editor.remove_entry(map, document.key_of(map, key)));
    return;
  }
  for (std::size_t first = 0; first < items.size();) {
    if (!removed[first]) {
      ++first;
      continue;
    }
    std::size_t count = 0;
    while (first + count < items.size() && removed[first + count]) {
      ++count;
    }
    edits.push_back(editor.remove_items(list, first, count));
    first += count;
  }
}

void uninject_container(const YamlEditor& editor, int container, std::vector<TextEdit>& edits) {
  const YamlDocument& document = editor.document();
  const int env = list_at(document, container, "env");
  if (env >= 0) {
    // Added in this order, ending with TCPTUNE_LOG: (LD_PRELOAD) (TCPTUNE_POLICY) TCPTUNE_LOG.
    const std::vector<int>& items = document.node(env).children;
    std::size_t count = 0;
    const auto next_is = [&](const char* name, const std::function<bool(const std::string&)>& matches) {
      if (count < items.size() && is_added_variable(document, items[count], name, matches)) {
        ++count;
        return true;
      }
      return false;
    };
    next_is("LD_PRELOAD", [](const std::string& v) { return v == kShim; });
    next_is("TCPTUNE_POLICY",
            [](const std::string& v) { return v.rfind(std::string(kPolicyMountPath) + "/", 0) == 0; });
    std::size_t added = 0;
    if (next_is("TCPTUNE_LOG", [](const std::string& v) { return v == "stderr"; })) {
      added = count;
    }
    std::size_t index = 0;
    remove_from_list(
        editor, container, "env", [&](int) { return index++ < added; }, edits);
    for (std::size_t i = added; i < items.size(); ++i) {
      TextEdit edit;
      if (document.scalar(document.value_of(items[i], "name")) == "LD_PRELOAD" &&
          document.value_of(items[i], "value") >= 0 &&
          editor.unprefix_scalar(document.value_of(items[i], "value"), kShimPrefix, edit)) {
        edits.push_back(edit);
      }
    }
  }
  remove_from_list(
      editor, container, "volumeMounts",
      [&](int item) {
        return named(document, item, {kVolume, kPolicyVolume});
      },
      edits);
  const int command = list_at(document, container, "command");
  if (command >= 0 && starts_as_supervised(document, command)) {
    edits.push_back(editor.remove_items(command, 0, kSupervisedCommand.size()));
  }
}

}  // namespace

bool starts_as_supervised(const YamlDocument& document, int command) {
  const YamlNode& node = document.node(command);
  return node.kind == YamlNode::Kind::sequence && node.children.size() > kSupervisedCommand.size() &&
         std::equal(kSupervisedCommand.begin(), kSupervisedCommand.end(), node.children.begin(),
                    [&](const char* word, int item) { return document.scalar(item) == word; });
}

bool is_injected(const YamlEditor& editor, const PodTemplate& pod) {
  const YamlDocument& document = editor.document();
  const int init = list_at(document, pod.spec, "initContainers");
  if (init < 0) {
    return false;
  }
  const std::vector<int>& items = document.node(init).children;
  return std::any_of(items.begin(), items.end(), [&](int item) { return named(document, item, {kInitContainer}); });
}

std::vector<TextEdit> uninject_pod(const YamlEditor& editor, const PodTemplate& pod) {
  std::vector<TextEdit> edits;
  if (!is_injected(editor, pod)) {
    return edits;
  }
  const YamlDocument& document = editor.document();
  remove_from_list(
      editor, pod.spec, "initContainers", [&](int item) { return named(document, item, {kInitContainer}); }, edits);
  remove_from_list(
      editor, pod.spec, "volumes",
      [&](int item) {
        return named(document, item, {kVolume, kPolicyVolume});
      },
      edits);
  const int containers = list_at(document, pod.spec, "containers");
  if (containers >= 0) {
    for (const int container : document.node(containers).children) {
      const int mounts = list_at(document, container, "volumeMounts");
      const bool injected =
          mounts >= 0 && std::any_of(document.node(mounts).children.begin(), document.node(mounts).children.end(),
                                     [&](int item) { return named(document, item, {kVolume}); });
      if (injected) {
        uninject_container(editor, container, edits);
      }
    }
  }
  return edits;
}

}  // namespace tcptune::cli
