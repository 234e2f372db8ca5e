"""libtcptune.so exports only the interposed libc names. The libraries it needs: glibc_floor.py."""
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
    if shutil.which("nm") is None:
        print("skipped: nm missing")
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

    checks.finish()


if __name__ == "__main__":
    main()
