"""libtcptune.so (the first stage) exports exactly the interposed libc names and references
nothing musl lacks; libtcptune-core.so beside it exports its attach function alone. The
libraries and versions each needs: glibc_floor.py."""
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from testlib import Checks, parse_args, SKIP

CORE_ATTACH = "tcptune_core_attach"


def hook_table(source_dir):
    """The hooks named in shim/next/hook_table.def, the list the version script is written from."""
    text = Path(source_dir, "shim", "next", "hook_table.def").read_text()
    return set(re.findall(r"^TCPTUNE_HOOK_(?:NEXT|VIA|OWN)\(([A-Za-z0-9_]+)", text, re.MULTILINE))


def hook_definitions(source_dir):
    """The functions the first stage defines for export: in hooks.c, and in assembly (vfork_hook.c)."""
    stage = Path(source_dir, "shim", "stage")
    text = (stage / "hooks.c").read_text()
    defined = set(re.findall(r"^TCPTUNE_HOOK [^(]*?\b([A-Za-z0-9_]+)\(", text, re.MULTILINE))
    for source in stage.glob("*.c"):
        defined |= set(re.findall(r"\.globl ([A-Za-z0-9_]+)", source.read_text()))
    return defined


def dynamic_symbols(path, *flags):
    nm = subprocess.run(["nm", "-D", *flags, path], capture_output=True, text=True, check=True)
    symbols = {}
    for line in nm.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            symbols[parts[-1].split("@")[0]] = parts[-2]
    return symbols


def exported(path):
    defined = dynamic_symbols(path, "--defined-only")
    names = {name for name, kind in defined.items() if kind in "TtWwiDdBbVvRr"}
    return names - {"_init", "_fini", "_edata", "_end", "__bss_start"}


def musl_libc(work_dir):
    """musl's libc.so (its dynamic loader too), from the interpreter musl-gcc writes; None without musl-tools."""
    if shutil.which("musl-gcc") is None:
        return None
    with tempfile.TemporaryDirectory(dir=work_dir) as scratch:
        source, program = os.path.join(scratch, "empty.c"), os.path.join(scratch, "empty")
        Path(source).write_text("int main(void) { return 0; }\n")
        if subprocess.run(["musl-gcc", "-o", program, source], capture_output=True).returncode != 0:
            return None
        headers = subprocess.run(["readelf", "-l", program], capture_output=True, text=True, check=True).stdout
    interpreter = re.search(r"Requesting program interpreter: ([^\]]+)\]", headers)
    return os.path.realpath(interpreter.group(1)) if interpreter else None


def main():
    args = parse_args()
    if shutil.which("nm") is None:
        print("skipped: nm missing")
        raise SystemExit(SKIP)
    checks = Checks()
    stage = args.shim
    core = os.path.join(os.path.dirname(stage), "libtcptune-core.so")
    expected = hook_table(args.source_dir)
    checks.check(len(expected) > 30, f"the hook table names the hooks ({len(expected)} found)")
    defined = hook_definitions(args.source_dir)
    checks.check(defined == expected,
                 f"hooks.c defines exactly the hooks in the table (not in the table: {sorted(defined - expected)}, "
                 f"not defined: {sorted(expected - defined)})")

    stage_exports = exported(stage)
    checks.check(stage_exports == expected,
                 f"libtcptune.so exports exactly the hooks (extra: {sorted(stage_exports - expected)}, "
                 f"missing: {sorted(expected - stage_exports)})")
    checks.check(os.path.isfile(core), f"the core is built beside the first stage ({core})")
    core_exports = exported(core)
    checks.check(core_exports == {CORE_ATTACH}, f"libtcptune-core.so exports {CORE_ATTACH} alone ({sorted(core_exports)[:8]})")
    cxx = [s for s in stage_exports | core_exports if s.startswith("_Z") or re.search("spdlog|fmt|toml", s)]
    checks.check(not cxx, f"no C++ or library symbols exported ({cxx[:5]})")

    # Every process of a container maps the stage: one library more to open and map at each exec
    # costs about as much as the stage itself (bench/startup). The dl functions it finds at run
    # time (shim/stage/dl_functions.h): a reference would need libdl.so.2 before glibc 2.34.
    needed = re.findall(r"\(NEEDED\).*\[(.*)\]", subprocess.run(["readelf", "-d", stage], capture_output=True,
                                                                 text=True, check=True).stdout)
    checks.check(needed == ["libc.so.6"], f"libtcptune.so needs libc.so.6 alone ({needed})")
    referenced = set(dynamic_symbols(stage, "--undefined-only"))
    dl_names = sorted(name for name in referenced if re.fullmatch(r"dl(open|sym|vsym|addr|error|close|info|mopen)", name))
    checks.check(len(referenced) > 3 and not dl_names, f"libtcptune.so references no dl function ({dl_names})")

    # musl resolves every undefined symbol of a preloaded object at load (and maps libc.so.6 to
    # itself): one it lacks stops the program before main.
    musl = musl_libc(args.work_dir)
    if musl is None:
        print("note: musl-gcc missing; the first stage's references are not checked against musl")
    else:
        undefined = {name for name, kind in dynamic_symbols(stage, "--undefined-only").items() if kind == "U"}
        musl_defined = set(dynamic_symbols(musl, "--defined-only"))
        missing = sorted(undefined - musl_defined)
        checks.check(len(undefined) > 3 and not missing,
                     f"every symbol libtcptune.so references is in musl ({musl}): missing {missing}")
    checks.finish()


if __name__ == "__main__":
    main()
