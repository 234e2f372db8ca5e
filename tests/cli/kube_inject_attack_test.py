#!/usr/bin/python3
"""tcptune kube-inject on manifests written to break it (kube_inject/attack): Helm output, List
kinds, JSON, flow style, tags and anchors, CRLF and CR line ends, a BOM, comments everywhere,
existing LD_PRELOAD, env and volumes, and garbage. Whatever the input, kube-inject exits 0 or 1
(never a crash, never an internal error), and:

  exit 1   nothing on stdout, one line on stderr naming the document, line and column;
  exit 0   the output parses as YAML (PyYAML, the same number of documents), injecting it again
           changes nothing, and --uninject gives the input back byte for byte.

The name says what is expected: accept-*.yaml must be injected, refuse-*.yaml refused, any-*.yaml
either. handwritten-*.yaml hold the injected state written by hand: --uninject takes it out
(exit 0, output that parses). A stream nested 200000 deep is refused within seconds (libyaml
alone takes minutes over it). Run with Debian's /usr/bin/python3 (python3-yaml); 77 without it."""
import argparse
import pathlib
import subprocess
import sys
import time

try:
    import yaml
except ImportError:
    print("skipped: python3-yaml is not installed")
    sys.exit(77)

TIMEOUT = 30
DEEP_BOUND_S = 10


def run(tcptune, args, stdin):
    return subprocess.run([tcptune, "kube-inject", *args], input=stdin, capture_output=True, timeout=TIMEOUT)


def documents(data):
    return list(yaml.safe_load_all(data.decode("utf-8")))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tcptune", required=True)
    parser.add_argument("--source-dir", required=True)
    options = parser.parse_args()
    here = pathlib.Path(options.source_dir) / "tests/cli/kube_inject/attack"
    failures = []

    def expect(condition, what):
        print(("ok   " if condition else "FAIL ") + what, flush=True)
        if not condition:
            failures.append(what)

    def refused_properly(name, result):
        line = result.stderr.decode(errors="replace")
        expect(result.stdout == b"" and line.count("\n") == 1 and
               line.startswith("tcptune kube-inject: <stdin>: document "),
               f"{name}: refused in one located line, nothing on stdout ({line.strip()})")

    cases = sorted(here.glob("*.yaml"))
    expect(len(cases) >= 40, f"the attack cases are there ({len(cases)})")
    for case in cases:
        name = case.name
        original = case.read_bytes()
        for args in ([], ["--policy-configmap", "tcptune-policy"]):
            label = name + (" " + " ".join(args) if args else "")
            result = run(options.tcptune, args, original)
            expect(result.returncode in (0, 1), f"{label}: exit 0 or 1 ({result.returncode})")
            if name.startswith("handwritten-"):
                back = run(options.tcptune, ["--uninject"], original)
                expect(back.returncode == 0, f"{label}: --uninject takes it out ({back.stderr.decode().strip()})")
                if back.returncode == 0:
                    expect(len(documents(back.stdout)) == len(documents(original)), f"{label}: --uninject's output parses")
                    expect(b"tcptune" not in back.stdout.split(b"\n", 1)[1], f"{label}: nothing of tcptune's is left")
            if name.startswith("accept-") or name.startswith("handwritten-"):
                expect(result.returncode == 0, f"{label}: injected ({result.stderr.decode().strip()[:300]})")
            elif name.startswith("refuse-"):
                expect(result.returncode == 1, f"{label}: refused")
            if result.returncode == 1:
                refused_properly(label, result)
                continue
            if result.returncode != 0:
                continue
            try:
                parsed = len(documents(result.stdout)) == len(documents(original))
            except yaml.YAMLError as error:
                parsed = False
                print(error)
            expect(parsed, f"{label}: the output parses, as many documents as the input")
            twice = run(options.tcptune, args, result.stdout)
            expect(twice.returncode == 0 and twice.stdout == result.stdout, f"{label}: injecting twice equals once")
            if not name.startswith("handwritten-"):
                back = run(options.tcptune, ["--uninject"], result.stdout)
                expect(back.returncode == 0 and back.stdout == original, f"{label}: --uninject gives the input back")

    for depth, text in (("200000 brackets", "[" * 200000 + "]" * 200000),
                        ("100000 nested Lists", "{kind: List, items: [" * 100000 + "]}" * 100000)):
        start = time.monotonic()
        result = run(options.tcptune, [], text.encode())
        took = time.monotonic() - start
        expect(result.returncode == 1 and took < DEEP_BOUND_S, f"{depth}: refused in {took:.1f} s")
        refused_properly(depth, result)

    print(f"{len(failures)} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
