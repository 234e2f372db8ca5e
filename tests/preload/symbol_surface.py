"""libtcptune.so exports only the interposed libc names and needs libc alone at run time."""
import re
import shutil
import subprocess

from testlib import Checks, parse_args, SKIP

EXPECTED = set("""
socket connect listen accept accept4 setsockopt getsockopt
write send sendto sendmsg sendmmsg writev sendfile sendfile64 splice
read recv recvfrom recvmsg readv
close close_range closefrom dup dup2 dup3 fcntl fcntl64 fclose fdopen
sigaction signal posix_spawn posix_spawnp
""".split())


def main():
    args = parse_args()
    if shutil.which("nm") is None or shutil.which("ldd") is None:
        print("skipped: nm or ldd missing")
        raise SystemExit(SKIP)
    checks = Checks()
    nm = subprocess.run(["nm", "-D", "--defined-only", args.shim], capture_output=True, text=True, check=True)
    exported = set()
    for line in nm.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TtWwiDdBbVvRr":
            exported.add(parts[2].split("@")[0])
    exported -= {"_init", "_fini", "_edata", "_end", "__bss_start"}
    checks.check(exported == EXPECTED,
                 f"exported symbols are exactly the hooks (extra: {sorted(exported - EXPECTED)}, "
                 f"missing: {sorted(EXPECTED - exported)})")
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
