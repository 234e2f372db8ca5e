// What `tcptune kube-inject` adds to a pod template, and how it is taken out again.
//
// Added: an init container (tcptune-init) that copies tcptune and the shim from an image into an
// emptyDir volume (tcptune), that volume mounted read-only at /tcptune in each container,
// LD_PRELOAD with the shim first (an existing value keeps its place after it), TCPTUNE_LOG=stderr
// and, with a policy ConfigMap, its volume and TCPTUNE_POLICY. Containers named in
// tcptune.io/supervise run under `tcptune run --supervise --` instead of LD_PRELOAD.
//
// Everything added comes first in its list, in a fixed form, so that taking it out needs no record
// of what was there: the init container marks an injected pod, the tcptune mount an injected
// container, and a key absent before is one whose list is empty once the additions are gone.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "manifest_pod_templates.hpp"
#include "text_edits.hpp"
#include "yaml_edits.hpp"

namespace tcptune::cli {

namespace injection {
inline constexpr const char* kInitContainer = "tcptune-init";
inline constexpr const char* kVolume = "tcptune";
inline constexpr const char* kPolicyVolume = "tcptune-policy";
inline constexpr const char* kMountPath = "/tcptune";             // in the pod's containers
inline constexpr const char* kInitMountPath = "/tcptune-volume";  // in the init container
inline constexpr const char* kPolicyMountPath = "/etc/tcptune-policy";
inline constexpr const char* kShim = "/tcptune/libtcptune.so";
inline constexpr const char* kShimPrefix = "/tcptune/libtcptune.so:";  // before an existing LD_PRELOAD
inline constexpr const char* kTcptune = "/tcptune/tcptune";
inline constexpr const char* kInjectAnnotation = "tcptune.io/inject";
inline constexpr const char* kSkipAnnotation = "tcptune.io/skip-containers";
inline constexpr const char* kSuperviseAnnotation = "tcptune.io/supervise";
// What a supervised container's command starts with once injected.
inline constexpr std::array<const char*, 4> kSupervisedCommand{kTcptune, "run", "--supervise", "--"};
}  // namespace injection

struct InjectOptions {
  std::string image;
  std::string policy_configmap;  // empty: no policy volume (the built-in default policy)
  std::string policy_key = "policy.toml";
};

// What a manifest cannot show, said rather than guessed: one line each.
struct InjectNotes {
  std::vector<std::string> lines;
  bool preload_added = false;  // some container got an LD_PRELOAD of its own
};

// True when the list `command` starts with kSupervisedCommand and names a program after it.
bool starts_as_supervised(const YamlDocument& document, int command);
// True when `pod` carries the tcptune-init init container.
bool is_injected(const YamlEditor& editor, const PodTemplate& pod);
// The edits that inject `pod` (none when it opts out). Throws ManifestError on a pod spec it will
// not edit (a null list, a name or a command that is already tcptune's, a block-scalar LD_PRELOAD).
std::vector<TextEdit> inject_pod(const YamlEditor& editor, const PodTemplate& pod, const InjectOptions& options,
                                 InjectNotes& notes);
// The edits that take out what inject_pod added (none when `pod` is not injected).
std::vector<TextEdit> uninject_pod(const YamlEditor& editor, const PodTemplate& pod);

}  // namespace tcptune::cli
