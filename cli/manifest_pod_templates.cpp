#include "manifest_pod_templates.hpp"

#include <algorithm>
#include <array>
#include <string_view>

namespace tcptune::cli {

namespace {

// Kinds whose pod template is at spec.template.
constexpr std::array<std::string_view, 6> kTemplateKinds{"Deployment", "StatefulSet",           "DaemonSet",
                                                         "ReplicaSet", "ReplicationController", "Job"};

bool is_mapping(const YamlDocument& document, int index) {
  return index >= 0 && document.node(index).kind == YamlNode::Kind::mapping;
}

void add_object(const YamlDocument& document, int object, std::vector<PodTemplate>& found,
                std::vector<std::string>& notes) {
  if (!is_mapping(document, object)) {
    return;
  }
  const std::string kind = document.scalar(document.value_of(object, "kind"));
  const std::string name = document.scalar(document.value_of(document.value_of(object, "metadata"), "name"));
  const std::string owner = kind + (name.empty() ? "" : " " + name);
  int pod = -1;
  std::string path;
  if (kind == "List") {
    const int items = document.value_of(object, "items");
    if (items >= 0 && document.node(items).kind == YamlNode::Kind::sequence) {
      for (const int item : document.node(items).children) {
        add_object(document, item, found, notes);
      }
    }
    return;
  }
  if (kind == "Pod") {
    pod = object;
    path = "spec";
  } else if (std::find(kTemplateKinds.begin(), kTemplateKinds.end(), kind) != kTemplateKinds.end()) {
    pod = document.value_of(document.value_of(object, "spec"), "template");
    path = "spec.template.spec";
  } else if (kind == "CronJob") {
    const int job_spec = document.value_of(document.value_of(document.value_of(object, "spec"), "jobTemplate"), "spec");
    pod = document.value_of(job_spec, "template");
    path = "spec.jobTemplate.spec.template.spec";
  } else {
    return;
  }
  PodTemplate pod_template;
  pod_template.owner = owner;
  pod_template.spec = is_mapping(document, pod) ? document.value_of(pod, "spec") : -1;
  if (!is_mapping(document, pod_template.spec)) {
    notes.push_back(owner + ": no pod spec at " + path + "; left unchanged");
    return;
  }
  const int metadata = document.value_of(pod, "metadata");
  pod_template.metadata = is_mapping(document, metadata) ? metadata : -1;
  found.push_back(pod_template);
}

}  // namespace

std::vector<PodTemplate> find_pod_templates(const YamlDocument& document, std::vector<std::string>& notes) {
  std::vector<PodTemplate> found;
  add_object(document, document.root, found, notes);
  return found;
}

}  // namespace tcptune::cli
