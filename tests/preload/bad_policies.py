"""Every broken policy in tests/policies/bad: one stderr line naming file:line:column, the
program runs untuned (fail-open), and with TCPTUNE_STRICT=1 it exits 78 before main. The same
for policy paths that are not a regular file of at most 1 MiB (a FIFO, a directory, /dev/null,
/dev/zero, a socket, an oversized file), for a policy of more than 4096 rules, and for log
paths that are not regular files: none of them may block or grow the program."""
import glob
import os
import re
import resource
import socket
import subprocess

from testlib import Checks, clean_env, parse_args, run

STRICT_EXIT = 78
# A path that blocks (a FIFO) must not hang the test: every such run is bounded, and a run
# that did not finish in time is a failure, not a hang.
BAD_PATH_TIMEOUT_S = 10
# Reading /dev/zero to its end would take the machine's memory; an instrumented (ASan) probe
# reserves terabytes of address space, so it runs without this limit.
ADDRESS_SPACE_LIMIT = 4 << 30
MAX_POLICY_BYTES = 1 << 20
MAX_RULES = 4096


def expect_of(path):
    with open(path, encoding="utf-8") as f:
        first = f.readline()
    m = re.match(r"#\s*expect:\s*(\d+):(\d+):\s*(.*\S)", first)
    if not m:
        raise SystemExit(f"{path}: first line must be '# expect: LINE:COLUMN: text'")
    return m.group(1), m.group(2), m.group(3)


def bounded_run(cmd, env, limit_memory):
    """The finished process, or None when it was still running after BAD_PATH_TIMEOUT_S."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_LIMIT, ADDRESS_SPACE_LIMIT))
    # ThreadSanitizer reserves its shadow memory up front, which no address-space limit allows.
    limit_memory = limit_memory and "TSAN_OPTIONS" not in os.environ
    try:
        return run(cmd, env, timeout=BAD_PATH_TIMEOUT_S, preexec_fn=limit if limit_memory else None)
    except subprocess.TimeoutExpired:
        return None


def bad_policy_paths(work_dir):
    """(name, path, what the message must say) for every policy path that is not a policy."""
    fifo = os.path.join(work_dir, "policy.fifo")
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    directory = os.path.join(work_dir, "policy.d")
    os.makedirs(directory, exist_ok=True)
    unix_socket = os.path.join(work_dir, "policy.sock")
    if os.path.exists(unix_socket):
        os.remove(unix_socket)
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(unix_socket)
    oversized = os.path.join(work_dir, "oversized.toml")
    with open(oversized, "w", encoding="utf-8") as f:  # valid TOML, one byte too long
        body = '[defaults]\nnodelay = "on"\n'
        padding = "# padding\n" * (MAX_POLICY_BYTES // 10 + 1)
        f.write(body + padding[:MAX_POLICY_BYTES + 1 - len(body)])
    assert os.path.getsize(oversized) == MAX_POLICY_BYTES + 1
    return listener, [
        ("FIFO", fifo, "a FIFO, not a regular file"),
        ("directory", directory, "a directory, not a regular file"),
        ("/dev/null", "/dev/null", "a character device, not a regular file"),
        ("/dev/zero", "/dev/zero", "a character device, not a regular file"),
        ("unix socket", unix_socket, "a socket, not a regular file"),
        ("oversized file", oversized, "more than the 1 MiB a policy may have"),
    ]


def too_many_rules(work_dir):
    """A policy of MAX_RULES + 1 rules; the error names the first rule past the limit."""
    path = os.path.join(work_dir, "too-many-rules.toml")
    with open(path, "w", encoding="utf-8") as f:
        f.write('version = 1\n[defaults]\nnodelay = "on"\n')
        for i in range(MAX_RULES + 1):
            f.write(f'[[rule]]\nmatch = {{ port = {1 + i % 65535} }}\n')
    first_past_limit = 4 + 2 * MAX_RULES
    return path, f"{path}:{first_past_limit}:1:", f"more than {MAX_RULES} rules"


def check_bad_path(checks, args, name, path, text, limit_memory, extra_env=None):
    untuned = [args.probe, "main-ran", "--client", "0", "--server", "0"]
    env = clean_env(LD_PRELOAD=args.shim, TCPTUNE_POLICY=path, **(extra_env or {}))
    result = bounded_run(untuned, env, limit_memory)
    checks.check(result is not None, f"{name}: the program does not block (finished within {BAD_PATH_TIMEOUT_S} s)")
    if result is None:
        return
    lines = result.stderr.strip().splitlines()
    message = lines[0] if lines else ""
    checks.check(result.returncode == 0 and "main ran" in result.stdout,
                 f"{name}: fail-open, main ran untuned (exit {result.returncode})")
    checks.check(len(lines) == 1, f"{name}: exactly one stderr line ({lines})")
    checks.check(message.startswith(f"tcptune: {path}") and text in message and message.endswith("running untuned"),
                 f"{name}: names the path, says '{text}' and runs untuned: {message}")
    strict = bounded_run(untuned, dict(env, TCPTUNE_STRICT="1"), limit_memory)
    checks.check(strict is not None and strict.returncode == STRICT_EXIT and "main ran" not in strict.stdout,
                 f"{name}: strict mode exits {STRICT_EXIT} before main "
                 f"({'hung' if strict is None else strict.returncode})")


def check_bad_log_paths(checks, args, limit_memory):
    """A log path that is not a regular file disables logging, in one line; it never blocks."""
    fifo = os.path.join(args.work_dir, "log.fifo")
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    probe = [args.probe, "nodelay", "--client", "1", "--server", "1"]
    nodelay_on = '[defaults]\nnodelay = "on"\n'  # tuned where it would not be without the shim
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        cases = [("log FIFO with a reader", fifo, "a FIFO, not a regular file")]
        cases_without_reader = [("log FIFO without a reader", fifo, "a FIFO, not a regular file"),
                                ("log /dev/null", "/dev/null", "a character device, not a regular file"),
                                ("log directory", args.work_dir, "a directory, not a regular file")]
        for name, path, text in cases:
            check_log(checks, name, probe, clean_env(LD_PRELOAD=args.shim, TCPTUNE_LOG=path, TCPTUNE_POLICY_TOML=nodelay_on),
                      path, text, limit_memory)
    finally:
        os.close(reader)
    for name, path, text in cases_without_reader:
        check_log(checks, name, probe, clean_env(LD_PRELOAD=args.shim, TCPTUNE_LOG=path, TCPTUNE_POLICY_TOML=nodelay_on),
                  path, text, limit_memory)
    policy_log = os.path.join(args.work_dir, "log-fifo.toml")
    with open(policy_log, "w", encoding="utf-8") as f:
        f.write(f'[defaults]\nnodelay = "on"\n[log]\npath = "{fifo}"\n')
    check_log(checks, "[log] path FIFO", probe, clean_env(LD_PRELOAD=args.shim, TCPTUNE_POLICY=policy_log), fifo,
              "a FIFO, not a regular file", limit_memory)


def check_log(checks, name, probe, env, path, text, limit_memory):
    result = bounded_run(probe, env, limit_memory)
    checks.check(result is not None, f"{name}: start-up does not block (finished within {BAD_PATH_TIMEOUT_S} s)")
    if result is None:
        return
    lines = result.stderr.strip().splitlines()
    checks.check(result.returncode == 0, f"{name}: the program runs, tuned (exit {result.returncode}: {result.stdout})")
    checks.check(len(lines) == 1 and lines[0].startswith(f"tcptune: cannot open log file {path}") and text in lines[0]
                 and lines[0].endswith("; logging disabled"), f"{name}: one line, '{text}', logging disabled: {lines}")


def check_textfile_temporary_fifo(checks, args):
    """The textfile is written through PATH.tmp.PID: a FIFO left there must not block the exiting
    program. In a new PID namespace the program is PID 1, so the temporary's name is known."""
    textfile = os.path.join(args.work_dir, "pid1.prom")
    temporary = textfile + ".tmp.1"
    for old in (textfile, temporary):
        if os.path.lexists(old):
            os.remove(old)
    os.mkfifo(temporary)
    policy = os.path.join(args.work_dir, "pid1-textfile.toml")
    with open(policy, "w", encoding="utf-8") as f:
        f.write(f'[log]\nprometheus_textfile = "{textfile}"\n')
    log = os.path.join(args.work_dir, "pid1.log")
    command = ["unshare", "--pid", "--fork", "env", f"LD_PRELOAD={args.shim}", f"TCPTUNE_POLICY={policy}",
               f"TCPTUNE_LOG={log}", args.probe, "writes", "--count", "10", "--size", "100"]
    if run(["unshare", "--pid", "--fork", "true"], clean_env()).returncode != 0:
        print("skip the textfile's temporary FIFO: no PID namespace here (needs root)")
        return
    result = bounded_run(command, clean_env(), False)
    checks.check(result is not None and result.returncode == 0,
                 f"a FIFO at the textfile's temporary path does not block the program "
                 f"({'hung' if result is None else result.returncode})")
    checks.check(os.path.isfile(textfile) and not os.path.lexists(temporary),
                 "the textfile is written through a fresh temporary file in its place")


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

    with open(args.probe, "rb") as f:
        limit_memory = b"__asan_init" not in f.read()
    listener, bad_paths = bad_policy_paths(args.work_dir)
    try:
        for name, path, text in bad_paths:
            check_bad_path(checks, args, name, path, text, limit_memory)
    finally:
        listener.close()
    path, position, text = too_many_rules(args.work_dir)
    check_bad_path(checks, args, f"{MAX_RULES + 1} rules", path, text, limit_memory)
    message = run(untuned, clean_env(LD_PRELOAD=args.shim, TCPTUNE_POLICY=path)).stderr
    checks.check(message.startswith(f"tcptune: {position}"), f"{MAX_RULES + 1} rules: names {position} ({message})")
    check_bad_log_paths(checks, args, limit_memory)
    check_textfile_temporary_fifo(checks, args)
    checks.finish()


if __name__ == "__main__":
    main()
