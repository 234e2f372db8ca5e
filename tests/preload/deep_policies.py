"""Policies nested deeper than any stack: a dotted key of 150,000 parts, a table header of
200,000, 20,000 parts on a 1 MiB main stack (ulimit -s 1024), 60,000 in TCPTUNE_POLICY_TOML on
a 4 MiB one. toml++ 3.3 recursed once per level and crashed every program under the shim, and
`tcptune check` and `tcptune run`, with SIGSEGV before main. Each must give one stderr line
naming the source, line and column; the program runs untuned (fail-open), or exits 78 under
TCPTUNE_STRICT=1, `check` exits 1 and `run --policy` 78. Then a policy the guard lets through (62 nested arrays) loaded lazily on a
thread with a 64 KiB stack, from a socket() hook: it is parsed on the shim's own stack, not
the thread's. The inputs are generated here."""
import argparse
import os
import resource
import signal

from testlib import Checks, clean_env, run

STRICT_EXIT = 78
DEPTH_MESSAGE = "nested deeper than 64 levels at this"


def parse_args():
    parser = argparse.ArgumentParser()
    for name in ("--shim", "--probe", "--tcptune", "--first-hook", "--work-dir"):
        parser.add_argument(name, required=True)
    args = parser.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    return args


def dotted(parts):
    return ".".join(["a"] * parts)


def stack_limit(byte_count):
    """A preexec_fn: the child's main stack is `byte_count` (ulimit -s)."""
    def limit():
        resource.setrlimit(resource.RLIMIT_STACK, (byte_count, byte_count))
    return limit if byte_count else None


def describe(result):
    if result.returncode < 0:
        return f"killed by {signal.Signals(-result.returncode).name}"
    return f"exit {result.returncode}"


def one_line(result):
    lines = result.stderr.strip().splitlines()
    return lines[0] if len(lines) == 1 else None


def check_program(checks, args, name, env, position, stack=0, first_hook=False, message=DEPTH_MESSAGE):
    """The probe under the shim: one line, main runs untuned; strict mode exits 78."""
    env = dict(env, LD_PRELOAD=args.shim + (":" + args.first_hook if first_hook else ""))
    untuned = [args.probe, "main-ran", "--client", "0", "--server", "0"]
    result = run(untuned, env, preexec_fn=stack_limit(stack))
    line = one_line(result)
    checks.check(result.returncode == 0 and "main ran" in result.stdout,
                 f"{name}: fail-open, main ran untuned ({describe(result)})")
    checks.check(line is not None and line.startswith(f"tcptune: {position}: ") and message in line
                 and line.endswith("; running untuned"),
                 f"{name}: one line naming {position}: {result.stderr.strip()[:300]!r}")
    strict = run(untuned, dict(env, TCPTUNE_STRICT="1"), preexec_fn=stack_limit(stack))
    line = one_line(strict)
    checks.check(strict.returncode == STRICT_EXIT and "main ran" not in strict.stdout,
                 f"{name}: TCPTUNE_STRICT=1 exits {STRICT_EXIT} before main ({describe(strict)})")
    checks.check(line is not None and line.startswith(f"tcptune: {position}: ")
                 and line.endswith("; exiting (TCPTUNE_STRICT=1)"),
                 f"{name}: TCPTUNE_STRICT=1 says why in one line: {strict.stderr.strip()[:300]!r}")


def check_command(checks, args, name, path, position, stack=0):
    result = run([args.tcptune, "check", path], clean_env(), preexec_fn=stack_limit(stack))
    line = one_line(result)
    checks.check(result.returncode == 1, f"{name}: tcptune check exits 1 ({describe(result)})")
    checks.check(line is not None and line.startswith(f"tcptune: {position}: ") and DEPTH_MESSAGE in line,
                 f"{name}: tcptune check prints one line naming {position}: {result.stderr.strip()[:300]!r}")


def write(args, name, text):
    path = os.path.join(args.work_dir, name)
    with open(path, "w", encoding="ascii") as f:
        f.write(text)
    return path


def main():
    args = parse_args()
    checks = Checks()
    # The 65th part is refused: "a." is two columns.
    key = write(args, "key-150000-parts.toml", dotted(149_999) + ".b = 1\n")
    header = write(args, "header-200000-parts.toml", "[" + dotted(199_999) + ".b]\n")
    small = write(args, "key-20000-parts.toml", dotted(19_999) + ".b = 1\n")
    for name, path, position, stack in [
        ("150,000-part dotted key", key, f"{key}:1:129", 0),
        ("200,000-part table header", header, f"{header}:1:130", 0),
        ("20,000-part dotted key, ulimit -s 1024", small, f"{small}:1:129", 1 << 20),
    ]:
        check_command(checks, args, name, path, position, stack)
        check_program(checks, args, name, clean_env(TCPTUNE_POLICY=path), position, stack)

    # tcptune run: --policy is validated up front (exit 78, as for any bad policy); under
    # --supervise the policy is loaded by tcptune itself and the program runs untuned.
    main_ran = [args.probe, "main-ran", "--client", "0", "--server", "0"]
    validated = run([args.tcptune, "run", "--no-log", "--policy", key, "--"] + main_ran, clean_env())
    line = one_line(validated)
    checks.check(validated.returncode == STRICT_EXIT and line is not None
                 and line.startswith(f"tcptune: {key}:1:129: ") and DEPTH_MESSAGE in line,
                 f"tcptune run --policy: one line naming {key}:1:129, exit {STRICT_EXIT} ({describe(validated)}: "
                 f"{validated.stderr.strip()[:300]!r})")
    supervised = run([args.tcptune, "run", "--no-log", "--supervise", "--"] + main_ran, clean_env(TCPTUNE_POLICY=key))
    checks.check(supervised.returncode == 0 and "main ran" in supervised.stdout
                 and f"tcptune: {key}:1:129: " in supervised.stderr and "; running untuned" in supervised.stderr,
                 f"tcptune run --supervise: names {key}:1:129, the program runs untuned ({describe(supervised)}: "
                 f"{supervised.stderr.strip()[:300]!r})")

    inline = dotted(59_999) + ".b = 1\n"
    check_program(checks, args, "60,000-part key in TCPTUNE_POLICY_TOML, ulimit -s 4096",
                  clean_env(TCPTUNE_POLICY_TOML=inline), "TCPTUNE_POLICY_TOML:1:129", 4 << 20)

    # 62 nested arrays below [defaults] sockopt: within the bound, toml++ recurses 62 deep (about
    # 80 KB of stack in a release build), more than the thread has. Not a valid sockopt list: one
    # line, untuned.
    arrays = write(args, "62-nested-arrays.toml", "[defaults]\nsockopt = " + "[" * 62 + "]" * 62 + "\n")
    check_program(checks, args, "62 nested arrays, loaded on a thread with a 64 KiB stack",
                  clean_env(TCPTUNE_POLICY=arrays, SMALL_STACK_KIB="64"), f"{arrays}:2:12", first_hook=True,
                  message="'sockopt entry' must be a table, not an array")
    # The control: the same thread loads a good policy and the program is tuned by it.
    good = run([args.probe, "nodelay", "--client", "1", "--server", "1"],
               clean_env(LD_PRELOAD=f"{args.shim}:{args.first_hook}", SMALL_STACK_KIB="64",
                         TCPTUNE_POLICY_TOML='[defaults]\nnodelay = "on"\n'))
    checks.check(good.returncode == 0 and good.stderr == "",
                 f"a good policy loaded on the small thread tunes the program ({describe(good)}: "
                 f"{good.stdout.strip()} {good.stderr.strip()})")
    checks.finish()


if __name__ == "__main__":
    main()
