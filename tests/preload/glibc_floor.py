"""Each object loads with glibc 2.17 (CentOS 7, the manylinux2014 floor) and later, checked as
auditwheel checks a wheel: every version the object needs (its verneed entries, and the version
of each symbol it imports) is GLIBC_2.17 or older, no GLIBCXX_, CXXABI_ or GCC_ version appears,
every strong import carries a glibc version, and the libraries it needs are glibc's own."""
import argparse
import re
import shutil
import subprocess
import sys

FLOOR = (2, 17)
# Before glibc 2.34, the dl and pthread functions live in libdl and libpthread; the dynamic
# loader is listed by objects that use TLS.
GLIBC_LIBRARIES = {"libc.so.6", "libpthread.so.0", "libdl.so.2", "ld-linux-x86-64.so.2"}


def glibc_version(name):
    """(2, 17) for "GLIBC_2.17", (2, 2, 5) for "GLIBC_2.2.5"; None for any other version name."""
    match = re.fullmatch(r"GLIBC_(\d+(?:\.\d+)+)", name)
    return tuple(int(part) for part in match.group(1).split(".")) if match else None


def readelf(*args):
    return subprocess.run(["readelf", "-W", *args], capture_output=True, text=True, check=True).stdout


def version_needs(path):
    """[(file, version)] from .gnu.version_r."""
    needs, current = [], None
    text = readelf("-V", path)
    section = text[text.find(".gnu.version_r"):] if ".gnu.version_r" in text else ""
    for line in section.splitlines():
        if match := re.search(r"File: (\S+)", line):
            current = match.group(1)
        elif match := re.search(r"Name: (\S+)", line):
            needs.append((current, match.group(1)))
    return needs


def imports(path):
    """[(symbol, version or None, weak)] for each undefined dynamic symbol."""
    out = []
    for line in readelf("--dyn-syms", path).splitlines():
        fields = line.split()
        if len(fields) < 8 or fields[6] != "UND":
            continue
        name, _, version = fields[7].partition("@")
        out.append((name, version.lstrip("@") or None, fields[4] == "WEAK"))
    return out


def check_object(path, checks):
    needs = version_needs(path)
    checks(len(needs) > 0, f"{path}: version needs found ({len(needs)})")
    too_new = sorted(f"{version} of {file}" for file, version in needs
                     if glibc_version(version) is None or glibc_version(version) > FLOOR)
    checks(not too_new, f"{path}: needs no version newer than GLIBC_2.17 or not glibc's "
           f"({len(needs) - len(too_new)} fit; too new: {', '.join(too_new)})")
    runtime = sorted({version for _, version in needs if re.match(r"(GLIBCXX|CXXABI|GCC)_", version)})
    checks(not runtime, f"{path}: no C++ runtime version (GLIBCXX_, CXXABI_, GCC_) (found: {runtime})")
    files = sorted({file for file, _ in needs} - GLIBC_LIBRARIES)
    checks(not files, f"{path}: needs versions of glibc's libraries only (others: {files})")

    symbols = imports(path)
    versioned = [(name, version) for name, version, _ in symbols if version]
    checks(len(versioned) > 10, f"{path}: versioned imports found ({len(versioned)})")
    too_new = sorted(f"{name}@{version}" for name, version in versioned
                     if glibc_version(version) is None or glibc_version(version) > FLOOR)
    checks(not too_new, f"{path}: no import newer than GLIBC_2.17 or not glibc's (found: {', '.join(too_new)})")
    unversioned = sorted(name for name, version, weak in symbols if version is None and not weak and name)
    checks(not unversioned, f"{path}: every strong import has a glibc version (without: {', '.join(unversioned)})")

    needed = re.findall(r"\(NEEDED\).*\[(.*)\]", readelf("-d", path))
    extra = sorted(set(needed) - GLIBC_LIBRARIES)
    checks(not extra and "libc.so.6" in needed, f"{path}: DT_NEEDED is glibc's own ({needed}; not glibc's: {extra})")
    ldd = subprocess.run(["ldd", path], capture_output=True, text=True, check=True).stdout
    loaded = [line.split()[0] for line in ldd.splitlines() if line.strip()]
    others = sorted(name for name in loaded if not name.startswith("linux-vdso") and name.split("/")[-1] not in GLIBC_LIBRARIES)
    checks(not others, f"{path}: ldd lists glibc's libraries only (others: {others})")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--object", action="append", required=True)
    args = parser.parse_args()
    if shutil.which("readelf") is None or shutil.which("ldd") is None:
        print("skipped: readelf or ldd missing")
        sys.exit(77)
    failed = passed = 0

    def checks(ok, what):
        nonlocal failed, passed
        print(("ok   " if ok else "FAIL ") + what, flush=True)
        passed, failed = passed + ok, failed + (not ok)

    for path in args.object:
        check_object(path, checks)
    print(f"{passed} passed, {failed} failed")
    sys.exit(0 if failed == 0 and passed > 0 else 1)


if __name__ == "__main__":
    main()
