"""Each object loads with glibc 2.17 (CentOS 7, the manylinux2014 floor) and later, checked as
auditwheel checks a wheel: every version the object needs (its verneed entries, and the version
of each symbol it imports) is GLIBC_2.17 or older, no GLIBCXX_, CXXABI_ or GCC_ version appears,
every strong import carries a glibc version, and the libraries it needs are glibc's own.

Each import that libpthread.so.0 or libdl.so.2 defined before glibc 2.34 (and libc.so.6 did
not) must name that file in its verneed entry: a loader before glibc 2.30 stops at the file
named there, and a program that did not load libpthread.so.0 before libc.so.6 would fail to load
the object ("symbol pthread_create, version GLIBC_2.2.5 not defined in file libc.so.6 with link
time reference"); the loader since 2.30 searches on, into libc.so.6 on glibc 2.34 and later.
glibc_split_symbols.txt lists them (scripts/glibc_split_symbols.py)."""
import argparse
import pathlib
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


def split_symbols():
    """{(version, symbol): file} from glibc_split_symbols.txt."""
    table = {}
    for line in (pathlib.Path(__file__).parent / "glibc_split_symbols.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            file, version, symbol = line.split()
            table[(version, symbol)] = file
    return table


def version_needs(path):
    """[(file, version, index)] from .gnu.version_r; index is the one the symbols' versions name."""
    needs, current = [], None
    text = readelf("-V", path)
    section = text[text.find(".gnu.version_r"):] if ".gnu.version_r" in text else ""
    for line in section.splitlines():
        if match := re.search(r"File: (\S+)", line):
            current = match.group(1)
        elif match := re.search(r"Name: (\S+).*Version: (\d+)", line):
            needs.append((current, match.group(1), int(match.group(2))))
    return needs


def imports(path):
    """[(symbol, version or None, weak, version index or None)] for each undefined dynamic symbol."""
    out = []
    for line in readelf("--dyn-syms", path).splitlines():
        fields = line.split()
        if len(fields) < 8 or fields[6] != "UND":
            continue
        name, _, version = fields[7].partition("@")
        index = int(fields[8].strip("()")) if len(fields) > 8 and re.fullmatch(r"\(\d+\)", fields[8]) else None
        out.append((name, version.lstrip("@") or None, fields[4] == "WEAK", index))
    return out


def check_object(path, checks, split):
    needs = version_needs(path)
    checks(len(needs) > 0, f"{path}: version needs found ({len(needs)})")
    too_new = sorted(f"{version} of {file}" for file, version, _ in needs
                     if glibc_version(version) is None or glibc_version(version) > FLOOR)
    checks(not too_new, f"{path}: needs no version newer than GLIBC_2.17 or not glibc's "
           f"({len(needs) - len(too_new)} fit; too new: {', '.join(too_new)})")
    runtime = sorted({version for _, version, _ in needs if re.match(r"(GLIBCXX|CXXABI|GCC)_", version)})
    checks(not runtime, f"{path}: no C++ runtime version (GLIBCXX_, CXXABI_, GCC_) (found: {runtime})")
    files = sorted({file for file, _, _ in needs} - GLIBC_LIBRARIES)
    checks(not files, f"{path}: needs versions of glibc's libraries only (others: {files})")

    symbols = imports(path)
    versioned = [(name, version) for name, version, _, _ in symbols if version]
    checks(len(versioned) > 10, f"{path}: versioned imports found ({len(versioned)})")
    too_new = sorted(f"{name}@{version}" for name, version in versioned
                     if glibc_version(version) is None or glibc_version(version) > FLOOR)
    checks(not too_new, f"{path}: no import newer than GLIBC_2.17 or not glibc's (found: {', '.join(too_new)})")
    unversioned = sorted(name for name, version, weak, _ in symbols if version is None and not weak and name)
    checks(not unversioned, f"{path}: every strong import has a glibc version (without: {', '.join(unversioned)})")

    file_of = {index: file for file, _, index in needs}
    moved = [(name, version, split[(version, name)], file_of.get(index))
             for name, version, _, index in symbols if (version, name) in split]
    misplaced = sorted(f"{name}@{version} from {found} (home: {home})" for name, version, home, found in moved
                       if found != home)
    checks(not misplaced, f"{path}: each of its {len(moved)} imports that libpthread.so.0 or libdl.so.2 defined "
           f"before glibc 2.34 is required from that file (not: {', '.join(misplaced)})")

    dynamic = readelf("-d", path)
    needed = re.findall(r"\(NEEDED\).*\[(.*)\]", dynamic)
    extra = sorted(set(needed) - GLIBC_LIBRARIES)
    checks(not extra and "libc.so.6" in needed, f"{path}: DT_NEEDED is glibc's own ({needed}; not glibc's: {extra})")
    unlisted = sorted({file for file, _, _ in needs} - set(needed))
    checks(not unlisted, f"{path}: each file its versions name is in DT_NEEDED (not: {unlisted})")
    search_paths = re.findall(r"\((?:RPATH|RUNPATH)\).*\[(.*)\]", dynamic)
    checks(not search_paths, f"{path}: no RPATH or RUNPATH: glibc's libraries are the system's (found: {search_paths})")
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

    split = split_symbols()
    for path in args.object:
        check_object(path, checks, split)
    print(f"{passed} passed, {failed} failed")
    sys.exit(0 if failed == 0 and passed > 0 else 1)


if __name__ == "__main__":
    main()
