// Where the pod templates of a Kubernetes manifest are, by kind: a Pod is its own template,
// workloads keep one at spec.template, a CronJob at spec.jobTemplate.spec.template, and a List
// (kubectl get -o yaml) holds such objects as items.
#pragma once

#include <string>
#include <vector>

#include "yaml_outline.hpp"

namespace tcptune::cli {

struct PodTemplate {
  int metadata = -1;  // the pod's metadata mapping; -1 when it has none
  int spec = -1;      // the pod spec mapping
  std::string owner;  // "Deployment web", for messages
};

// The pod templates of `document`; none for other kinds. A workload without a pod template is
// noted in `notes` and left alone.
std::vector<PodTemplate> find_pod_templates(const YamlDocument& document, std::vector<std::string>& notes);

}  // namespace tcptune::cli
