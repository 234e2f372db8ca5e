#include "manifest_transform.hpp"

#include <algorithm>

#include "manifest_pod_templates.hpp"
#include "text_edits.hpp"
#include "yaml_edits.hpp"
#include "yaml_outline.hpp"

namespace tcptune::cli {

namespace {

// Added lists follow the pod's own containers list: indentless ("containers:\n- name") as
// kubectl writes, or indented as most charts do.
BlockLayout layout_for(std::string_view text, const YamlDocument& document, const PodTemplate& pod) {
  BlockLayout layout;
  if (text.find("\r\n") != std::string_view::npos) {
    layout.newline = "\r\n";
  }
  const int key = document.key_of(pod.spec, "containers");
  const int list = document.value_of(pod.spec, "containers");
  if (key >= 0 && list >= 0 && document.node(list).kind == YamlNode::Kind::sequence &&
      document.node(list).style == YamlNode::Style::block && document.node(list).line > document.node(key).line &&
      document.node(list).column > document.node(key).column) {
    layout.sequence_offset = document.node(list).column - document.node(key).column;
  }
  return layout;
}

std::string one_pass(std::string_view text, bool inject, const InjectOptions& options, std::vector<std::string>& notes,
                     InjectNotes& inject_notes) {
  std::vector<TextEdit> edits;
  for (const YamlDocument& document : read_yaml_outline(text)) {
    std::vector<std::string> found_notes;
    const std::vector<PodTemplate> pods = find_pod_templates(document, found_notes);
    if (!pods.empty() && document.has_alias) {
      const auto alias = std::find_if(document.nodes.begin(), document.nodes.end(),
                                      [](const YamlNode& node) { return node.kind == YamlNode::Kind::alias; });
      throw ManifestError(document, *alias,
                          "aliases (*name) in a workload: an edit through an anchor would change every alias of it; "
                          "expand them first (yq 'explode(.)')");
    }
    if (const int repeated = pods.empty() ? -1 : document.repeated_key(); repeated >= 0) {
      const YamlNode& key = document.node(repeated);
      throw ManifestError(document, key,
                          "the key '" + key.value +
                              "' appears twice in one mapping: Kubernetes refuses such a manifest, and an edit "
                              "cannot know which one counts; remove one");
    }
    if (const int complex = pods.empty() ? -1 : document.collection_key(); complex >= 0) {
      throw ManifestError(document, document.node(complex),
                          "a key that is a mapping or a list: Kubernetes field names are strings");
    }
    const std::string where = "document " + std::to_string(document.number) + ", ";
    InjectNotes pod_notes;
    for (const PodTemplate& pod : pods) {
      const YamlEditor editor(text, document, layout_for(text, document, pod));
      const std::vector<TextEdit> pod_edits =
          inject ? inject_pod(editor, pod, options, pod_notes) : uninject_pod(editor, pod);
      edits.insert(edits.end(), pod_edits.begin(), pod_edits.end());
    }
    if (inject) {
      for (const std::string& line : found_notes) {
        notes.push_back(where + line);
      }
      for (const std::string& line : pod_notes.lines) {
        notes.push_back(where + line);
      }
      inject_notes.preload_added = inject_notes.preload_added || pod_notes.preload_added;
    }
  }
  return apply_text_edits(text, std::move(edits));
}

}  // namespace

std::string transform_manifests(std::string_view text, bool uninject, const InjectOptions& options,
                                std::vector<std::string>& notes) {
  InjectNotes inject_notes;
  std::string plain = one_pass(text, false, options, notes, inject_notes);
  if (uninject) {
    return plain;
  }
  std::string injected = one_pass(plain, true, options, notes, inject_notes);
  if (inject_notes.preload_added) {
    notes.push_back(
        std::string("an LD_PRELOAD in an image's own environment (a Dockerfile ENV) is not in a manifest: ") +
        "where one is, the injected LD_PRELOAD replaces it (docker image inspect -f '{{.Config.Env}}' "
        "IMAGE shows it; then set LD_PRELOAD in the container's env to " +
        injection::kShimPrefix + "<that value>)");
  }
  return injected;
}

}  // namespace tcptune::cli
