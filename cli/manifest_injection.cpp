#include "manifest_injection.hpp"

#include <algorithm>
#include <set>

namespace tcptune::cli {

namespace {

using namespace injection;

std::vector<std::string> split_names(const std::string& text) {
  std::vector<std::string> names;
  std::size_t from = 0;
  while (from <= text.size()) {
    const std::size_t comma = std::min(text.find(',', from), text.size());
    std::string name = text.substr(from, comma - from);
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t") + 1);
    if (!name.empty()) {
      names.push_back(name);
    }
    from = comma + 1;
  }
  return names;
}

bool is_null_scalar(const YamlNode& node) {
  return node.kind == YamlNode::Kind::scalar && node.style == YamlNode::Style::plain &&
         (node.value.empty() || node.value == "~" || node.value == "null" || node.value == "Null" ||
          node.value == "NULL");
}

// The list at `key` of `map`: -1 when absent. A null (`env:` with nothing after it) would need a
// record to be given back, so it is refused, as is anything but a list.
int existing_list(const YamlDocument& document, int map, const char* key) {
  const int value = document.value_of(map, key);
  if (value < 0) {
    return -1;
  }
  const YamlNode& node = document.node(value);
  if (is_null_scalar(node)) {
    throw ManifestError(document, document.node(document.key_of(map, key)),
                        std::string("'") + key + "' has no value; remove it or write " + key + ": []");
  }
  if (node.kind != YamlNode::Kind::sequence) {
    throw ManifestError(document, node, std::string("'") + key + "' is not a list");
  }
  return value;
}

void add_first(const YamlEditor& editor, int map, const char* key, const std::vector<Snippet>& items,
               std::string_view before, std::vector<TextEdit>& edits) {
  const YamlDocument& document = editor.document();
  const int list = existing_list(document, map, key);
  if (list >= 0 && document.node(list).children.empty() && document.node(map).style == YamlNode::Style::flow) {
    // Once emptied again it would look like the list injection creates in a flow mapping.
    throw ManifestError(document, document.node(list),
                        std::string("an empty '") + key + "' list in a flow mapping ({...}); remove it");
  }
  edits.push_back(list >= 0 ? editor.insert_first_items(list, items)
                            : editor.insert_entry(map, key, Snippet(items), before));
}

// A name of tcptune's already in a list of a pod that is not injected: injecting would make two.
void refuse_taken(const YamlDocument& document, int list, const char* field, const std::vector<std::string>& ours) {
  if (list < 0) {
    return;
  }
  for (const int item : document.node(list).children) {
    const int value = document.value_of(item, field);
    if (std::find(ours.begin(), ours.end(), document.scalar(value)) != ours.end()) {
      throw ManifestError(document, document.node(value),
                          "'" + document.scalar(value) + "' is tcptune's, but the pod is not injected (no " +
                              kInitContainer + " init container); rename it");
    }
  }
}

// A command that is already what injection makes of a supervised container's: taking the
// injection out would take out the program's own words too.
void refuse_supervised_command(const YamlDocument& document, int container) {
  const int command = document.value_of(container, "command");
  if (command >= 0 && starts_as_supervised(document, command)) {
    throw ManifestError(document, document.node(command),
                        std::string("a command that starts with `") + kTcptune +
                            " run --supervise --`, but the pod is not injected (no " + kInitContainer +
                            " init container); take that out and name the container in " + kSuperviseAnnotation);
  }
}

bool any_resources(const YamlDocument& document, int spec) {
  for (const char* key : {"containers", "initContainers"}) {
    const int list = document.value_of(spec, key);
    if (list < 0 || document.node(list).kind != YamlNode::Kind::sequence) {
      continue;
    }
    for (const int container : document.node(list).children) {
      const int resources = document.value_of(container, "resources");
      if (resources >= 0 && document.node(resources).kind == YamlNode::Kind::mapping &&
          !document.node(resources).children.empty()) {
        return true;
      }
    }
  }
  return false;
}

// Resources only where the pod has some: requests equal to limits keep a Guaranteed pod
// Guaranteed, and none keep a BestEffort pod BestEffort (init containers count for the QoS class).
Snippet init_container(const InjectOptions& options, bool with_resources, bool pod_runs_as_root) {
  Snippet init = {
      {"name", kInitContainer}, {"image", options.image}, {"command", {kTcptune, "install", kInitMountPath}}};
  if (with_resources) {
    const Snippet amount = {{"cpu", "20m"}, {"memory", "64Mi"}};
    init["resources"] = {{"requests", amount}, {"limits", amount}};
  }
  // What the "restricted" Pod Security Standard asks of every container.
  init["securityContext"] = {
      {"allowPrivilegeEscalation", false}, {"capabilities", {{"drop", {"ALL"}}}}, {"readOnlyRootFilesystem", true}};
  // A pod that sets runAsUser: 0 would start its init containers as root, which runAsNonRoot
  // refuses: there the image's user is not used anyway, and the pod is not "restricted".
  if (!pod_runs_as_root) {
    init["securityContext"]["runAsNonRoot"] = true;
  }
  init["securityContext"]["seccompProfile"] = {{"type", "RuntimeDefault"}};
  init["volumeMounts"] = Snippet::array({{{"name", kVolume}, {"mountPath", kInitMountPath}}});
  return init;
}

std::string policy_path(const InjectOptions& options) {
  return std::string(kPolicyMountPath) + "/" + options.policy_key;
}

class PodInjection {
 public:
  PodInjection(const YamlEditor& editor, const PodTemplate& pod, const InjectOptions& options, InjectNotes& notes)
      : editor_(editor), document_(editor.document()), pod_(pod), options_(options), notes_(notes) {}

  std::vector<TextEdit> edits() {
    const int annotations = document_.value_of(pod_.metadata, "annotations");
    const int inject = document_.value_of(annotations, kInjectAnnotation);
    if (inject >= 0) {
      const std::string value = document_.scalar(inject);
      if (value == "false") {
        return {};
      }
      if (value != "true") {
        throw ManifestError(document_, document_.node(inject),
                            std::string(kInjectAnnotation) + " is '" + value + "'; it takes \"true\" or \"false\"");
      }
    }
    skip_ = split_names(document_.scalar(document_.value_of(annotations, kSkipAnnotation)));
    supervise_ = split_names(document_.scalar(document_.value_of(annotations, kSuperviseAnnotation)));

    const int spec = pod_.spec;
    const int containers = existing_list(document_, spec, "containers");
    if (containers < 0 || document_.node(containers).children.empty()) {
      notes_.lines.push_back(pod_.owner + ": no containers; nothing injected");
      return {};
    }
    const std::vector<std::string> volumes_ours{kVolume, kPolicyVolume};
    const int volumes = existing_list(document_, spec, "volumes");
    refuse_taken(document_, volumes, "name", volumes_ours);
    refuse_taken(document_, existing_list(document_, spec, "initContainers"), "name", {kInitContainer});

    std::vector<TextEdit> edits;
    const bool runs_as_root =
        document_.scalar(document_.value_of(document_.value_of(spec, "securityContext"), "runAsUser")) == "0";
    add_first(editor_, spec, "initContainers", {init_container(options_, any_resources(document_, spec), runs_as_root)},
              "containers", edits);
    std::vector<Snippet> volume_items{{{"name", kVolume}, {"emptyDir", Snippet::object()}}};
    if (!options_.policy_configmap.empty()) {
      // optional: a missing ConfigMap leaves the policy file absent, which the shim reports and
      // runs untuned (fail-open), rather than keeping the pod from starting.
      volume_items.push_back(
          {{"name", kPolicyVolume}, {"configMap", {{"name", options_.policy_configmap}, {"optional", true}}}});
    }
    add_first(editor_, spec, "volumes", volume_items, "containers", edits);

    std::set<std::string> seen;
    for (const int container : document_.node(containers).children) {
      if (document_.node(container).kind != YamlNode::Kind::mapping) {
        throw ManifestError(document_, document_.node(container), "a container that is not a mapping");
      }
      if (document_.node(container).children.empty()) {
        // Two entries added to an empty flow mapping would need a separator between them.
        throw ManifestError(document_, document_.node(container),
                            "a container with nothing in it ({}), not even a name");
      }
      const std::string name = document_.scalar(document_.value_of(container, "name"));
      seen.insert(name);
      inject_container(container, name, edits);
    }
    for (const auto& [list, annotation] :
         {std::pair{&skip_, kSkipAnnotation}, std::pair{&supervise_, kSuperviseAnnotation}}) {
      for (const std::string& name : *list) {
        if (seen.count(name) == 0) {
          notes_.lines.push_back(pod_.owner + ": " + annotation + " names '" + name +
                                 "', which is not one of its containers (init containers are never injected)");
        }
      }
    }
    return edits;
  }

 private:
  bool listed(const std::vector<std::string>& names, const std::string& name) const {
    return std::find(names.begin(), names.end(), name) != names.end();
  }

  void note(const std::string& container, const std::string& text) {
    notes_.lines.push_back(pod_.owner + ", container '" + container + "': " + text);
  }

  void inject_container(int container, const std::string& name, std::vector<TextEdit>& edits) {
    refuse_supervised_command(document_, container);
    // Every container, the ones left unchanged too: uninjecting the pod would take such a mount
    // for its own, so injecting twice would differ from once.
    const int mounts = existing_list(document_, container, "volumeMounts");
    refuse_taken(document_, mounts, "name", {kVolume, kPolicyVolume});
    refuse_taken(document_, mounts, "mountPath", {kMountPath, kPolicyMountPath});
    const bool supervised = listed(supervise_, name);
    if (listed(skip_, name)) {
      if (supervised) {
        note(name, std::string(kSkipAnnotation) + " and " + kSuperviseAnnotation + " both name it; skipped");
      }
      return;
    }
    int command = -1;
    if (supervised) {
      command = existing_list(document_, container, "command");
      if (command < 0 || document_.node(command).children.empty()) {
        note(name, std::string(kSuperviseAnnotation) +
                       " names it, but it has no command: its program is the image's ENTRYPOINT, which a manifest "
                       "does not show, so it cannot be wrapped in `tcptune run --supervise --`; left unchanged. Set "
                       "command to the image's entrypoint (docker image inspect -f '{{json .Config.Entrypoint}}' "
                       "IMAGE) and inject again");
        return;
      }
    }
    const int env = existing_list(document_, container, "env");
    std::vector<int> literal_preloads;
    bool preload_from_elsewhere = false;
    if (env >= 0) {
      for (const int variable : document_.node(env).children) {
        if (document_.scalar(document_.value_of(variable, "name")) != "LD_PRELOAD") {
          continue;
        }
        const int value = document_.value_of(variable, "value");
        if (document_.value_of(variable, "valueFrom") >= 0) {
          preload_from_elsewhere = true;
        } else if (value < 0 || is_null_scalar(document_.node(value))) {
          throw ManifestError(document_, document_.node(variable),
                              "LD_PRELOAD without a value; give it one (\"\" if empty) or remove it");
        } else {
          literal_preloads.push_back(value);
        }
      }
    }
    std::vector<Snippet> variables;
    if (!supervised) {
      for (const int value : literal_preloads) {
        edits.push_back(editor_.prefix_scalar(value, kShimPrefix));
      }
      if (preload_from_elsewhere) {
        note(name,
             "LD_PRELOAD comes from valueFrom, which a manifest does not show, so the shim is not added to it: put " +
                 std::string(kShim) + " first in the value it refers to, or supervise the container (" +
                 kSuperviseAnnotation + ")");
      } else if (literal_preloads.empty()) {
        variables.push_back({{"name", "LD_PRELOAD"}, {"value", kShim}});
        notes_.preload_added = true;
        if (document_.value_of(container, "envFrom") >= 0) {
          note(name,
               "its envFrom may set LD_PRELOAD, which a manifest does not show; the injected LD_PRELOAD would "
               "replace it (env wins over envFrom): if it does, set LD_PRELOAD in env to " +
                   std::string(kShimPrefix) + "<that value>");
        }
      }
    }
    if (!options_.policy_configmap.empty()) {
      variables.push_back({{"name", "TCPTUNE_POLICY"}, {"value", policy_path(options_)}});
    }
    variables.push_back({{"name", "TCPTUNE_LOG"}, {"value", "stderr"}});
    add_first(editor_, container, "env", variables, {}, edits);

    std::vector<Snippet> mount_items{{{"name", kVolume}, {"mountPath", kMountPath}, {"readOnly", true}}};
    if (!options_.policy_configmap.empty()) {
      mount_items.push_back({{"name", kPolicyVolume}, {"mountPath", kPolicyMountPath}, {"readOnly", true}});
    }
    add_first(editor_, container, "volumeMounts", mount_items, {}, edits);
    if (supervised) {
      edits.push_back(editor_.insert_first_items(
          command, std::vector<Snippet>(kSupervisedCommand.begin(), kSupervisedCommand.end())));
    }
  }

  const YamlEditor& editor_;
  const YamlDocument& document_;
  const PodTemplate& pod_;
  const InjectOptions& options_;
  InjectNotes& notes_;
  std::vector<std::string> skip_;
  std::vector<std::string> supervise_;
};

}  // namespace

std::vector<TextEdit> inject_pod(const YamlEditor& editor, const PodTemplate& pod, const InjectOptions& options,
                                 InjectNotes& notes) {
  return PodInjection(editor, pod, options, notes).edits();
}

}  // namespace tcptune::cli
