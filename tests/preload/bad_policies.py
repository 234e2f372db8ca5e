"""Every broken policy in tests/policies/bad: one stderr line naming file:line:column, the
program runs untuned (fail-open), and with TCPTUNE_STRICT=1 it exits 78 before main."""
import glob
import os
import re

from testlib import Checks, clean_env, parse_args, run

STRICT_EXIT = 78


def expect_of(path):
    with open(path, encoding="utf-8") as f:
        first = f.readline()
    m = re.match(r"#\s*expect:\s*(\d+):(\d+):\s*(.*\S)", first)
    if not m:
        raise SystemExit(f"{path}: first line must be '# expect: LINE:COLUMN: text'")
    return m.group(1), m.group(2), m.group(3)


def main():
    args = parse_args()
    checks = Checks()
    corpus = sorted(glob.glob(os.path.join(args.source_dir, "tests/policies/bad/*.toml")))
    checks.check(len(corpus) >= 20, f"at least 20 broken policies ({len(corpus)})")
    untuned = [args.probe, "main-ran", "--client", "0", "--server", "0"]
    for path in corpus:
        name = os.path.basename(path)
        line, column, text = expect_of(path)
        env = clean_env(LD_PRELOAD=args.shim, TCPTUNE_POLICY=path)
        result = run(untuned, env)
        lines = result.stderr.strip().splitlines()
        checks.check(result.returncode == 0 and "main ran" in result.stdout,
                     f"{name}: fail-open, main ran untuned (exit {result.returncode})")
        checks.check(len(lines) == 1, f"{name}: exactly one stderr line ({len(lines)})")
        message = lines[0] if lines else ""
        checks.check(f"{path}:{line}:{column}:" in message, f"{name}: names {path}:{line}:{column} in: {message}")
        checks.check(text in message, f"{name}: says '{text}'")
        checks.check(message.endswith("running untuned"), f"{name}: says it runs untuned")

        strict = run(untuned, clean_env(LD_PRELOAD=args.shim, TCPTUNE_POLICY=path, TCPTUNE_STRICT=1))
        checks.check(strict.returncode == STRICT_EXIT and "main ran" not in strict.stdout,
                     f"{name}: strict mode exits {STRICT_EXIT} before main (exit {strict.returncode})")

    # Inline TOML names its source; a missing file is an error, not a silent default.
    inline = run(untuned, clean_env(LD_PRELOAD=args.shim, TCPTUNE_POLICY_TOML='[defaults]\nnodelay = "yes"\n'))
    checks.check(inline.returncode == 0 and "TCPTUNE_POLICY_TOML:2:" in inline.stderr,
                 f"inline policy error names TCPTUNE_POLICY_TOML:2: ({inline.stderr.strip()})")
    missing = run(untuned, clean_env(LD_PRELOAD=args.shim, TCPTUNE_POLICY="/nonexistent/policy.toml"))
    checks.check(missing.returncode == 0 and "/nonexistent/policy.toml" in missing.stderr,
                 f"missing policy file is named ({missing.stderr.strip()})")
    # A good policy prints nothing at all on stderr or stdout beyond the program's own.
    good = run([args.probe, "main-ran", "--client", "1", "--server", "1"],
               clean_env(LD_PRELOAD=args.shim, TCPTUNE_POLICY_TOML='[defaults]\nnodelay = "on"\n'))
    checks.check(good.returncode == 0 and good.stderr == "", f"a good policy is silent ({good.stderr!r})")
    checks.finish()


if __name__ == "__main__":
    main()
