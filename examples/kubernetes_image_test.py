#!/usr/bin/env python3
"""The init image of kube-inject, built with buildah from examples/kubernetes/Containerfile (FROM
scratch and COPY: no container is started, which these machines cannot do), into a private store
that the test removes. Checked from the image's own layer: /tcptune holds tcptune and the shim
byte for byte (less debug information) with their modes, nothing else is in the image, the user is numeric and not root,
and the init container's command (/tcptune/tcptune install DIR), run from the extracted files,
copies them all. Exit 77 without buildah or without root (rootless buildah needs subuid maps)."""
import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile
import tempfile

TIMEOUT = 300


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--source-dir", required=True)
    options = parser.parse_args()
    if shutil.which("buildah") is None:
        print("SKIP: buildah is not installed (apt-get install buildah)")
        return 77
    if os.geteuid() != 0:
        print("SKIP: buildah runs here as root only (a private store with the vfs driver)")
        return 77
    build = pathlib.Path(options.build_dir)
    script = pathlib.Path(options.source_dir) / "examples/kubernetes/build-image.sh"
    failures = []
    checked = 0

    def expect(condition, what):
        nonlocal checked
        checked += 1
        if not condition:
            failures.append(what)
            print("FAIL:", what)

    with tempfile.TemporaryDirectory() as work_dir:
        work = pathlib.Path(work_dir)
        store = ["--root", str(work / "root"), "--runroot", str(work / "run"), "--storage-driver", "vfs"]
        built = subprocess.run([str(script), str(build), "tcptune-init:test", *store], capture_output=True,
                               timeout=TIMEOUT)
        if built.returncode != 0:
            print(built.stdout.decode(), built.stderr.decode())
            print("0 passed, 1 failed")
            return 1
        config = json.loads(subprocess.run(["buildah", *store, "inspect", "tcptune-init:test"], capture_output=True,
                                           check=True, timeout=TIMEOUT).stdout)["OCIv1"]["config"]
        expect(config.get("User") == "65532:65532", f"the image's user is 65532:65532 ({config.get('User')})")
        expect(config.get("Entrypoint") == ["/tcptune/tcptune"], f"the entrypoint is tcptune ({config})")
        subprocess.run(["buildah", *store, "push", "--quiet", "tcptune-init:test", f"oci:{work / 'oci'}"],
                       capture_output=True, check=True, timeout=TIMEOUT)
        index = json.loads((work / "oci/index.json").read_text())
        digest = index["manifests"][0]["digest"].split(":")[1]
        manifest = json.loads((work / "oci/blobs/sha256" / digest).read_text())
        names = {}
        extracted = work / "extracted"
        for layer in manifest["layers"]:
            with tarfile.open(work / "oci/blobs/sha256" / layer["digest"].split(":")[1]) as tar:
                for member in tar.getmembers():
                    names[member.name.lstrip("./").rstrip("/")] = member
                tar.extractall(extracted)
        wanted = {"tcptune", "tcptune/tcptune"} | {f"tcptune/{lib.name}" for lib in (build / "lib").glob("libtcptune*.so")}
        expect(set(names) == wanted, f"the image holds /tcptune and its files, nothing else ({sorted(names)})")
        expect("tcptune/libtcptune.so" in names, "the shim is in the image")
        for name in wanted - {"tcptune"}:
            built_file = build / ("bin" if name == "tcptune/tcptune" else "lib") / pathlib.Path(name).name
            stripped = work / "stripped" / pathlib.Path(name).name
            stripped.parent.mkdir(exist_ok=True)
            subprocess.run(["strip", "--strip-debug", "-o", str(stripped), str(built_file)], check=True, timeout=60)
            member = names.get(name)
            expect(member is not None and (extracted / name).read_bytes() == stripped.read_bytes(),
                   f"/{name} is the built file without its debug information")
            if member is not None:
                expect(member.mode & 0o777 == (0o755 if name == "tcptune/tcptune" else 0o644), f"/{name}'s mode")
        # What the injected init container runs, from the image's own files.
        result = subprocess.run([str(extracted / "tcptune/tcptune"), "install", str(work / "volume")],
                                capture_output=True, timeout=60)
        copied = sorted(p.name for p in (work / "volume").iterdir()) if (work / "volume").exists() else []
        expect(result.returncode == 0 and copied == sorted(pathlib.Path(n).name for n in wanted - {"tcptune"}),
               f"/tcptune/tcptune install copies the image's files ({copied}; {result.stderr.decode()})")
    print(f"{checked - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
