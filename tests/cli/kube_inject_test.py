#!/usr/bin/env python3
"""tcptune kube-inject against golden files (kube_inject/cases): for each NAME.in.yaml the output
is NAME.out.yaml and the notes on stderr NAME.stderr; injecting the output again changes nothing;
--uninject gives the input back byte for byte. Refused inputs (kube_inject/refused) print their
NAME.err line, exit 1 and write nothing; --quiet leaves out the notes but not those errors. The injected example of examples/kubernetes is checked to
be current. kube_inject_models_test.py checks the same outputs against the Kubernetes API models.

--regenerate rewrites the golden files from the current build (review them before committing)."""
import argparse
import os
import pathlib
import shutil
import stat
import subprocess
import sys
import tempfile

TIMEOUT = 30


def run(tcptune, args, stdin):
    return subprocess.run([tcptune, "kube-inject", *args], input=stdin, capture_output=True, timeout=TIMEOUT)


def args_of(case):
    path = case.with_name(case.name.replace(".in.yaml", ".args"))
    return path.read_text().split() if path.exists() else []


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tcptune", required=True)
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--regenerate", action="store_true")
    options = parser.parse_args()
    source = pathlib.Path(options.source_dir)
    here = source / "tests/cli/kube_inject"
    failures = []
    checked = 0

    def expect(condition, what):
        nonlocal checked
        checked += 1
        if not condition:
            failures.append(what)
            print("FAIL:", what)

    cases = sorted((here / "cases").glob("*.in.yaml"))
    expect(len(cases) >= 10, "the golden cases are there")
    expect(any(case.with_name(case.name.replace(".in.yaml", ".stderr")).read_bytes() for case in cases),
           "some golden case has notes on stderr (for --quiet to leave out)")
    for case in cases:
        name = case.name[: -len(".in.yaml")]
        original = case.read_bytes()
        args = args_of(case)
        injected = run(options.tcptune, args, original)
        out_file = case.with_name(name + ".out.yaml")
        err_file = case.with_name(name + ".stderr")
        if options.regenerate:
            out_file.write_bytes(injected.stdout)
            err_file.write_bytes(injected.stderr)
        expect(injected.returncode == 0, f"{name}: exit 0 ({injected.returncode}: {injected.stderr.decode()})")
        expect(injected.stdout == out_file.read_bytes(), f"{name}: output is {out_file.name}")
        expect(injected.stderr == err_file.read_bytes(), f"{name}: stderr is {err_file.name}: {injected.stderr.decode()}")
        twice = run(options.tcptune, args, injected.stdout)
        expect(twice.returncode == 0 and twice.stdout == injected.stdout, f"{name}: injecting twice equals once")
        quiet = run(options.tcptune, [*args, "--quiet"], original)
        expect(quiet.returncode == 0 and quiet.stdout == injected.stdout and quiet.stderr == b"",
               f"{name}: --quiet: the same output, nothing on stderr ({quiet.stderr.decode()})")
        back = run(options.tcptune, ["--uninject"], injected.stdout)
        expect(back.returncode == 0 and back.stdout == original, f"{name}: --uninject gives the input back")
        expect(back.stderr == b"", f"{name}: --uninject says nothing ({back.stderr.decode()})")

    # Injecting again with other options replaces the injection: the same as injecting once with them.
    chart = here / "cases/deployment-chart.in.yaml"
    first = run(options.tcptune, ["--image", "old:1", "--policy-configmap", "old"], chart.read_bytes())
    again = run(options.tcptune, ["--image", "new:2"], first.stdout)
    once = run(options.tcptune, ["--image", "new:2"], chart.read_bytes())
    expect(first.stdout != once.stdout and again.stdout == once.stdout,
           "re-injecting with another image and no policy equals injecting once with them")

    for refused in sorted((here / "refused").glob("*.yaml")):
        result = run(options.tcptune, [], refused.read_bytes())
        err_file = refused.with_suffix(".err")
        if options.regenerate:
            err_file.write_bytes(result.stderr)
        expect(result.returncode == 1, f"refused/{refused.name}: exit 1 ({result.returncode})")
        expect(result.stdout == b"", f"refused/{refused.name}: nothing on stdout")
        expect(result.stderr == err_file.read_bytes(), f"refused/{refused.name}: {result.stderr.decode()}")
        expect(result.stderr.count(b"\n") == 1, f"refused/{refused.name}: one line")
        quiet = run(options.tcptune, ["-q"], refused.read_bytes())
        expect(quiet.returncode == 1 and quiet.stdout == b"" and quiet.stderr == result.stderr,
               f"refused/{refused.name}: -q still says the error ({quiet.stderr.decode()})")

    # Injected manifests as kubectl get -o yaml gives them back (keys sorted, comments gone): the
    # injection is still taken out (kube_inject_models_test.py compares them with the inputs as data).
    for written_back in sorted((here / "uninject").glob("*-kubectl.yaml")):
        result = run(options.tcptune, ["--uninject"], written_back.read_bytes())
        expected = written_back.with_name(written_back.name.replace(".yaml", ".expected.yaml"))
        if options.regenerate:
            expected.write_bytes(result.stdout)
        expect(result.returncode == 0 and result.stdout == expected.read_bytes(),
               f"uninject/{written_back.name}: --uninject gives {expected.name}")

    # The injected examples in examples/kubernetes are what the command makes of them today.
    example = source / "examples/kubernetes"
    for name in ("app-deployment", "ab-deployments"):
        made = run(options.tcptune, ["-f", str(example / f"{name}.yaml"), "--image", "tcptune-init:0.1.0",
                                     "--policy-configmap", "tcptune-policy"], b"")
        injected_file = example / f"{name}.injected.yaml"
        if options.regenerate:
            injected_file.write_bytes(made.stdout)
        expect(made.returncode == 0 and made.stdout == injected_file.read_bytes(),
               f"examples/kubernetes/{injected_file.name} is current (--regenerate rewrites it)")

    with tempfile.TemporaryDirectory() as work_dir:
        work = pathlib.Path(work_dir)
        # -f and -o: files rather than stdin and stdout; a missing file is one line, exit 1.
        case = here / "cases/statefulset.in.yaml"
        result = subprocess.run([options.tcptune, "kube-inject", "-f", str(case), "-o", str(work / "out.yaml")],
                                capture_output=True, timeout=TIMEOUT)
        expect(result.returncode == 0 and (work / "out.yaml").read_bytes() ==
               case.with_name("statefulset.out.yaml").read_bytes(), "-f FILE -o FILE")
        result = subprocess.run([options.tcptune, "kube-inject", "-f", str(work / "absent.yaml")],
                                capture_output=True, timeout=TIMEOUT)
        expect(result.returncode == 1 and result.stderr.count(b"\n") == 1 and b"absent.yaml" in result.stderr,
               f"a missing -f file: one line, exit 1 ({result.stderr.decode()})")
        for bad in (["--policy-configmap", "Not_A_Name"], ["--policy-key", "a/b"], ["--image", "a b"]):
            result = run(options.tcptune, bad, b"")
            expect(result.returncode == 2 and bad[1].encode() in result.stderr,
                   f"{' '.join(bad)}: a usage error naming the value ({result.stderr.decode()})")

        # The policy in the example ConfigMap is valid (its block scalar, indented by 4).
        configmap = (source / "examples/kubernetes/policy-configmap.yaml").read_text().splitlines()
        start = next(i for i, line in enumerate(configmap) if line.strip() == "policy.toml: |") + 1
        (work / "policy.toml").write_text("".join(line[4:] + "\n" for line in configmap[start:]))
        checked_policy = subprocess.run([options.tcptune, "check", str(work / "policy.toml")], capture_output=True,
                                        timeout=TIMEOUT)
        expect(checked_policy.returncode == 0 and b"valid, 1 rule" in checked_policy.stdout,
               f"the example ConfigMap's policy is valid ({checked_policy.stdout.decode()[:200]})")
        # Its observe-only policy (the off arm of ab-deployments.yaml): valid, and with the same [log].
        observe_start = next(i for i, line in enumerate(configmap) if line.strip() == "observe.toml: |") + 1
        observe = "".join(line[4:] + "\n" for line in configmap[observe_start:start - 1])
        (work / "observe.toml").write_text(observe)
        checked_observe = subprocess.run([options.tcptune, "check", str(work / "observe.toml")], capture_output=True,
                                         timeout=TIMEOUT)
        policy_log = "\n".join(configmap[start:]).split("[log]")[-1]
        expect(checked_observe.returncode == 0 and 'nodelay = "keep"' in observe and
               [l.strip() for l in observe.split("[log]")[-1].splitlines() if "=" in l] ==
               [l.strip() for l in policy_log.splitlines() if "=" in l and not l.strip().startswith("#")],
               f"the example ConfigMap's observe-only policy is valid, with the policy's [log] "
               f"({checked_observe.stdout.decode()[:200]})")

        # tcptune install, as the init container runs it: the directory holding tcptune, copied
        # with its modes (tcptune stays executable) into a directory that may not exist yet.
        image_dir = work / "image/tcptune"
        image_dir.mkdir(parents=True)
        shutil.copy2(options.tcptune, image_dir / "tcptune")
        for name, mode in (("libtcptune.so", 0o644), ("libtcptune-core.so", 0o644)):
            (image_dir / name).write_bytes(name.encode())
            (image_dir / name).chmod(mode)
        result = subprocess.run([str(image_dir / "tcptune"), "install", str(work / "volume/sub")],
                                capture_output=True, timeout=TIMEOUT)
        copied = sorted(p.name for p in (work / "volume/sub").iterdir()) if (work / "volume/sub").exists() else []
        expect(result.returncode == 0 and copied == ["libtcptune-core.so", "libtcptune.so", "tcptune"],
               f"tcptune install copies its directory ({copied}, {result.stderr.decode()})")
        if copied:
            expect(os.access(work / "volume/sub/tcptune", os.X_OK) and
                   (work / "volume/sub/libtcptune.so").read_bytes() == b"libtcptune.so" and
                   stat.S_IMODE((work / "volume/sub/libtcptune.so").stat().st_mode) == 0o644,
                   "tcptune install keeps contents and modes")
        (work / "file").write_text("")
        result = subprocess.run([str(image_dir / "tcptune"), "install", str(work / "file/x")],
                                capture_output=True, timeout=TIMEOUT)
        expect(result.returncode == 1 and result.stderr.count(b"\n") == 1,
               f"tcptune install into a path it cannot create: one line, exit 1 ({result.stderr.decode()})")

    print(f"{checked - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
