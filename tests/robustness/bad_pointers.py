#!/usr/bin/env python3
"""Bad pointers get the kernel's answer under the shim, exactly.

bad_pointers runs each call with a pointer the kernel rejects (EFAULT) in a child of its own
and prints the return value and errno, or the signal that killed it. Run without the shim, that
is the kernel's answer; under the shim (with a jsonl log, so writes are measured) every line
must be the same. Two policies: nodelay = "force" with keep_warm (the TCP_CORK and TCP_NODELAY
vetoes, the gated write path), and override_app_buffers with buffers (the buffer veto); before
connect() the shim holds the app's buffer options, after it the rule is chosen.
"""
import os

from robustlib import Checks, clean_env, fresh, parse_args, program, run, write_policy

POLICIES = {
    "force-keep-warm": '[defaults]\nnodelay = "force"\nkeep_warm = { heartbeat = "\\n", interval = "10ms" }\n',
    "override-buffers": '[defaults]\nnodelay = "on"\nbuffers = { sndbuf = "256KiB", rcvbuf = "256KiB" }\n'
                        'override_app_buffers = true\n',
}


def answers(out):
    result = {}
    for line in out.splitlines():
        name, sep, answer = line.rpartition(": ")
        if sep:
            result[name] = answer
    return result


def main():
    args = parse_args()
    checks = Checks()
    reference = run([program(args, "bad_pointers")], clean_env(), timeout=60)
    kernel = answers(reference.stdout)
    checks.check(reference.returncode == 0 and len(kernel) >= 60 and
                 all(a.startswith("result") for a in kernel.values()),
                 f"without the shim every case returns ({len(kernel)} cases)")
    checks.check(sum("EFAULT" in a for a in kernel.values()) >= 50,
                 "the kernel answers EFAULT to most of them (the cases do pass bad pointers)")

    for name, text in POLICIES.items():
        policy = write_policy(args, name, text)
        log = fresh(os.path.join(args.work_dir, name + ".jsonl"))
        env = clean_env(LD_PRELOAD=args.shim, TCPTUNE_POLICY=policy, TCPTUNE_LOG=log, TCPTUNE_LOG_FORMAT="jsonl")
        done = run([program(args, "bad_pointers")], env, timeout=60)
        shim = answers(done.stdout)
        checks.check(done.returncode == 0, f"{name}: the program ran under the shim ({done.stderr.strip()[-200:]})")
        for case, answer in kernel.items():
            got = shim.get(case, "missing")
            checks.check(got == answer, f"{name}: {case}: {got}" + ("" if got == answer else f" (kernel: {answer})"))
    checks.finish()


if __name__ == "__main__":
    main()
