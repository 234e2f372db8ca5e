#!/usr/bin/env python3
"""Every document that tcptune kube-inject writes for the golden cases (kube_inject/cases) and for
examples/kubernetes, read into its Kubernetes API model and written back, offline, with Debian's
python3-kubernetes (for /usr/bin/python3; exit 77 without it): nothing may be lost or changed. A
field the models do not know, or a value of the wrong type, does not survive that round trip. The
models are those of Kubernetes 1.22 (python3-kubernetes 22): newer fields cannot be judged (docs/kubernetes.md).
The inputs are checked the same way, so that a failure is the injection's, not the fixture's."""
import argparse
import json
import pathlib
import subprocess
import sys

try:
    import yaml
    import kubernetes.client
except ImportError:
    print("SKIP: python3-kubernetes (or python3-yaml) is not installed for", sys.executable)
    sys.exit(77)

MODELS = {
    "Pod": "V1Pod", "Deployment": "V1Deployment", "StatefulSet": "V1StatefulSet", "DaemonSet": "V1DaemonSet",
    "ReplicaSet": "V1ReplicaSet", "Job": "V1Job", "CronJob": "V1CronJob", "Service": "V1Service",
    "ConfigMap": "V1ConfigMap", "Namespace": "V1Namespace",
}


class Response:  # what ApiClient.deserialize reads from
    def __init__(self, document):
        self.data = json.dumps(document)


def without_nulls(value):
    """A null is an absent field to the API (kubectl writes creationTimestamp: null)."""
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value


def differences(before, after, path="$"):
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after), key=str):
            if key not in after:
                yield f"{path}.{key}: lost (unknown to the model)"
            elif key not in before:
                yield f"{path}.{key}: added"
            else:
                yield from differences(before[key], after[key], f"{path}.{key}")
    elif isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        for i, (b, a) in enumerate(zip(before, after)):
            yield from differences(b, a, f"{path}[{i}]")
    elif before != after or type(before) is not type(after):
        yield f"{path}: {before!r} became {after!r}"


def check_object(client, document, where, problems):
    kind = document.get("kind")
    if kind == "List":
        for i, item in enumerate(document.get("items") or []):
            check_object(client, item, f"{where} item {i + 1}", problems)
        return 0
    model = MODELS.get(kind)
    if model is None:
        problems.append(f"{where}: no model for kind {kind!r} in this check")
        return 0
    expected = without_nulls(document)
    try:
        obj = client.deserialize(Response(document), model)
    except (ValueError, TypeError) as error:
        problems.append(f"{where} ({kind}): refused by {model}: {error}")
        return 1
    back = client.sanitize_for_serialization(obj)
    for difference in differences(expected, back):
        problems.append(f"{where} ({kind}): {difference}")
    return 1


def check_stream(client, text, name, problems):
    count = 0
    for number, document in enumerate(yaml.safe_load_all(text), start=1):
        if document is not None:
            count += check_object(client, document, f"{name} document {number}", problems)
    return count


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tcptune", required=True)
    parser.add_argument("--source-dir", required=True)
    options = parser.parse_args()
    source = pathlib.Path(options.source_dir)
    client = kubernetes.client.ApiClient()
    problems = []
    streams = []
    for case in sorted((source / "tests/cli/kube_inject/cases").glob("*.in.yaml")):
        args_file = case.with_name(case.name.replace(".in.yaml", ".args"))
        args = args_file.read_text().split() if args_file.exists() else []
        streams.append((case.name, case.read_bytes(), args))
    example = source / "examples/kubernetes"
    for manifest in sorted(example.glob("*.yaml")):
        streams.append((f"examples/kubernetes/{manifest.name}", manifest.read_bytes(),
                        ["--policy-configmap", "tcptune-policy"]))
    checked = 0
    for name, text, args in streams:
        input_problems = []
        check_stream(client, text, name, input_problems)
        if input_problems:
            problems += [f"(input) {p}" for p in input_problems]
            continue
        result = subprocess.run([options.tcptune, "kube-inject", *args], input=text, capture_output=True, timeout=30)
        if result.returncode != 0:
            problems.append(f"{name}: kube-inject exited {result.returncode}: {result.stderr.decode()}")
            continue
        checked += check_stream(client, result.stdout, f"{name} injected", problems)
    # Uninjected from kubectl's form of an injected manifest: the original case, as data.
    for written_back in sorted((source / "tests/cli/kube_inject/uninject").glob("*-kubectl.yaml")):
        case = source / "tests/cli/kube_inject/cases" / written_back.name.replace("-kubectl.yaml", ".in.yaml")
        result = subprocess.run([options.tcptune, "kube-inject", "--uninject", "-f", str(written_back)],
                                capture_output=True, timeout=30)
        if list(yaml.safe_load_all(result.stdout)) != list(yaml.safe_load_all(case.read_bytes())):
            problems.append(f"uninject/{written_back.name}: not {case.name} once uninjected")
        checked += 1
    for problem in problems:
        print("FAIL:", problem)
    print(f"{checked} objects read into their models and written back, or uninjected and compared")
    print(f"{max(checked - len(problems), 0)} passed, {len(problems)} failed")
    return 1 if problems or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
