#!/usr/bin/env python3
"""keep_warm never sends a heartbeat inside a corked message, whatever `nodelay` says.

cork_app runs under the shim with reno and a 10 ms newline heartbeat: a burst opens the
window, then TCP_CORK=1, "<HEAD>", a 600 ms pause, "<BODY>", TCP_CORK=0. The receiver (this
script, not preloaded) must get the burst, perhaps heartbeats between messages, then
"<HEAD><BODY>" with nothing inside. Under nodelay = "force" the shim swallows TCP_CORK=1 (the
kernel never corks), so only the keep-warm gate can know that a message is open; with the
cork set before connect() the rule was not chosen yet when the app corked. The uncorked
variant, where docs/keep-warm.md documents a heartbeat in the pause, shows that heartbeats flow here,
so a clean stream means something.
"""
from robustlib import (Checks, StreamReceiver, clean_env, fresh, parse_args, program, records,
                       require_keep_warm_host, run, write_policy)

BURST_BLOCKS = 160
BURST = b"x" * (BURST_BLOCKS * 32 * 1024)


def split_stream(data):
    """(ok, newlines inside the message, description): the burst, heartbeats between messages,
    then the message "<HEAD>...<BODY>" with only heartbeats allowed around it."""
    if not data.startswith(BURST):
        return False, 0, f"the burst did not arrive intact ({len(data)} bytes)"
    rest = bytes(data[len(BURST):]).lstrip(b"\n")
    rest = rest.rstrip(b"\n")
    if not rest.startswith(b"<HEAD>") or not rest.endswith(b"<BODY>"):
        return False, 0, f"the message is not <HEAD>...<BODY>: {rest[:80]!r}"
    inside = rest[len(b"<HEAD>"):-len(b"<BODY>")]
    if inside.strip(b"\n"):
        return False, inside.count(b"\n"), f"unexpected bytes inside the message: {inside[:80]!r}"
    return True, inside.count(b"\n"), repr(rest[:80])


def main():
    args = parse_args()
    require_keep_warm_host()
    checks = Checks()

    def run_variant(nodelay, cork):
        name = f"{nodelay}-cork-{cork}"
        policy = write_policy(args, name, f'[defaults]\nnodelay = "{nodelay}"\ncongestion = "reno"\n'
                                          'keep_warm = { heartbeat = "\\n", interval = "10ms" }\n')
        log = fresh(f"{args.work_dir}/{name}.jsonl")
        receiver = StreamReceiver()
        env = clean_env(LD_PRELOAD=args.shim, TCPTUNE_POLICY=policy, TCPTUNE_LOG=log, TCPTUNE_LOG_FORMAT="jsonl")
        done = run([program(args, "cork_app"), "--port", str(receiver.port), "--cork", cork,
                    "--burst-blocks", str(BURST_BLOCKS)], env, timeout=60)
        receiver.thread.join(timeout=30)
        checks.check(done.returncode == 0, f"{name}: the app ran ({done.stdout.strip()} {done.stderr.strip()[-300:]})")
        opens = [r for r in records(log) if r.get("event") == "conn_open"]
        keep_warm = [o for r in opens for o in r.get("options", []) if o["name"] == "keep_warm"]
        checks.check(keep_warm and keep_warm[0]["effective"] == "on", f"{name}: keep_warm is on ({keep_warm})")
        ok, beats, what = split_stream(receiver.data)
        return ok, beats, what

    # The sanity arm: without a cork the pause inside the message gets heartbeats (docs/keep-warm.md's
    # documented limit), so the setup does produce them.
    for nodelay in ("on", "force"):
        ok, beats, what = run_variant(nodelay, "none")
        checks.check(ok and beats >= 5, f"{nodelay}, no cork: heartbeats reach the pause here ({beats}; {what})")

    for nodelay in ("on", "force"):
        for cork in ("after", "before"):
            ok, beats, what = run_variant(nodelay, cork)
            where = "after connect()" if cork == "after" else "before connect() (before the rule applies)"
            checks.check(ok and beats == 0,
                         f'nodelay = "{nodelay}", TCP_CORK=1 {where}: no heartbeat inside the corked message '
                         f"({beats} newlines between <HEAD> and <BODY>; {what})")
    checks.finish()


if __name__ == "__main__":
    main()
