"""libtcptune.so exports only the interposed libc names and needs libc alone at run time."""
import re
import shutil
import subprocess
from pathlib import Path

from testlib import Checks, parse_args, SKIP


def hook_table(source_dir):
    """The hooks named in shim/next/hook_table.def, the list the version script is written from."""
    text = Path(source_dir, "shim", "next", "hook_table.def").read_text()
    return set(re.findall(r"^TCPTUNE_HOOK_(?:NEXT|VIA)\(([A-Za-z0-9_]+)", text, re.MULTILINE))


def hook_definitions(source_dir):
    """The functions hooks.cpp defines for export."""
    text = Path(source_dir, "shim", "interpose", "hooks.cpp").read_text()
    return set(re.findall(r"^TCPTUNE_HOOK [^(]*?\b([A-Za-z0-9_]+)\(", text, re.MULTILINE))


def main():
    args = parse_args()
    if shutil.which("nm") is None or shutil.which("ldd") is None:
        print("skipped: nm or ldd missing")
        raise SystemExit(SKIP)
    checks = Checks()
    expected = hook_table(args.source_dir)
    checks.check(len(expected) > 30, f"the hook table names the hooks ({len(expected)} found)")
    defined = hook_definitions(args.source_dir)
    checks.check(defined == expected,
                 f"hooks.cpp defines exactly the hooks in the table (not in the table: {sorted(defined - expected)}, "
                 f"not defined: {sorted(expected - defined)})")
    nm = subprocess.run(["nm", "-D", "--defined-only", args.shim], capture_output=True, text=True, check=True)
    exported = set()
    for line in nm.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TtWwiDdBbVvRr":
            exported.add(parts[2].split("@")[0])
    exported -= {"_init", "_fini", "_edata", "_end", "__bss_start"}
    checks.check(exported == expected,
                 f"exported symbols are exactly the hooks (extra: {sorted(exported - expected)}, "
                 f"missing: {sorted(expected - exported)})")
    cxx = [s for s in exported if s.startswith("_Z") or re.search("spdlog|fmt|toml", s)]
    checks.check(not cxx, f"no C++ or library symbols exported ({cxx[:5]})")

    ldd = subprocess.run(["ldd", args.shim], capture_output=True, text=True, check=True)
    needed = []
    for line in ldd.stdout.splitlines():
        name = line.strip().split()[0]
        if name.startswith("linux-vdso") or "ld-linux" in name:
            continue
        needed.append(name)
    checks.check(needed == ["libc.so.6"], f"ldd shows libc alone ({needed})")

    readelf = subprocess.run(["readelf", "-d", args.shim], capture_output=True, text=True, check=True)
    # The dynamic loader itself may be listed (TLS of the static C++ runtime); it is always loaded.
    needed_tags = [n for n in re.findall(r"\(NEEDED\).*\[(.*)\]", readelf.stdout) if not n.startswith("ld-linux")]
    checks.check(needed_tags == ["libc.so.6"], f"DT_NEEDED is libc.so.6 alone ({needed_tags})")
    unwind = [n for n in needed_tags if "unwind" in n]
    checks.check(not unwind, "libunwind is not a link dependency")
    checks.finish()


if __name__ == "__main__":
    main()
