#!/usr/bin/env python3
"""keep_warm and the app's own TCP_NODELAY and TCP_CORK calls: what the app set is what it
reads back, failing calls fail as the kernel says, a cork set from a signal handler holds.

keep_warm_attack_sockopt_app.c runs under the shim (reno, 10 ms newline heartbeat) with each
`nodelay` a policy may give (none, "off", "on", "force") and, as the baseline, without the
shim. Every round it sets TCP_NODELAY (0, 0, 1, 1, ...; optlen 4, or 8 every third time),
tries bad pointers and short lengths on TCP_NODELAY and TCP_CORK, waits 15 ms (heartbeats; the
shim sets and clears TCP_NODELAY after the first message that follows one when Nagle is on),
sends "<HEAD" with MSG_MORE then ">", and reads TCP_NODELAY back. Last, a message corked and
uncorked by SIGUSR1/SIGUSR2 handlers with a 400 ms pause inside. This script's receiver (not
preloaded) checks the stream: the burst, then "<HEAD>" messages and "<SIGNAL>" with
heartbeats only between messages.

Case "force_signal": under nodelay = "force" the shim keeps TCP_CORK=1 from the kernel (the
docs/keep-warm.md); the same call made from a signal handler must be kept from it too.
"""
import json
import os
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from robustlib import Checks, clean_env, compile_c, parse_args, require_keep_warm_host, write_policy  # noqa: E402

ROUNDS = 60
BURST = b"x" * (80 << 16)


def receive(listener):
    listener.settimeout(30)
    try:
        conn, _ = listener.accept()
    except OSError:
        return b""
    conn.settimeout(60)
    data = bytearray()
    try:
        while True:
            chunk = conn.recv(1 << 20)
            if not chunk:
                break
            data.extend(chunk)
    except OSError:
        pass
    conn.close()
    return bytes(data)


def split(data):
    """(messages, heartbeats, problem): the stream after the burst, read as messages "<...>" with
    only newlines between them."""
    if not data.startswith(BURST):
        return [], 0, f"the burst did not arrive intact ({len(data)} bytes)"
    messages, heartbeats, current = [], 0, None
    for byte in data[len(BURST):]:
        if current is None:
            if byte == ord("\n"):
                heartbeats += 1
            elif byte == ord("<"):
                current = bytearray(b"<")
            else:
                return messages, heartbeats, f"byte {bytes([byte])!r} between messages"
        else:
            current.append(byte)
            if byte == ord(">"):
                messages.append(bytes(current))
                current = None
    if current is not None:
        return messages, heartbeats, f"unfinished message {bytes(current)[:40]!r}"
    return messages, heartbeats, ""


def main():
    args = parse_args()
    require_keep_warm_host()
    checks = Checks()
    source = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "keep_warm_attack_sockopt_app.c")).read()
    app = compile_c(args, "keep_warm_attack_sockopt_app", source, "-O2")
    keep_warm = 'congestion = "reno"\nkeep_warm = { heartbeat = "\\n", interval = "10ms" }\n'
    arms = [("no shim", None), ("nodelay unset", ""), ('nodelay = "off"', 'nodelay = "off"\n'),
            ('nodelay = "on"', 'nodelay = "on"\n'), ('nodelay = "force"', 'nodelay = "force"\n')]
    for name, nodelay in arms:
        if nodelay is None:
            env = clean_env()
        else:
            policy = write_policy(args, "sockopt-" + name.split()[-1].strip('"'), "[defaults]\n" + nodelay + keep_warm)
            env = clean_env(LD_PRELOAD=args.shim, TCPTUNE_POLICY=policy)
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        process = subprocess.Popen([app, str(listener.getsockname()[1]), str(ROUNDS)], env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        data = receive(listener)
        listener.close()
        try:
            out, err = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
        lines = [line for line in out.splitlines() if line.startswith("{")]
        result = json.loads(lines[-1]) if lines else {}
        checks.check(process.returncode == 0 and bool(result), f"{name}: the app ran ({err.strip()[-300:]})")
        forced = nodelay == 'nodelay = "force"\n'
        # Under "force" the app's TCP_NODELAY=0 is swallowed: it reads 1 back, by design.
        if not forced:
            checks.check(result.get("wrong_value") == 0,
                         f"{name}: TCP_NODELAY reads back what the app last set after each message "
                         f"({result.get('wrong_value')} of {ROUNDS} wrong)")
        checks.check(result.get("wrong_errno") == 0 and result.get("wrong_after_bad") == 0,
                     f"{name}: bad pointers and short lengths get the kernel's EFAULT/EINVAL and change "
                     f"nothing ({result.get('wrong_errno')} wrong answers, {result.get('wrong_after_bad')} changes)")
        if forced and args.case == "force_signal":
            checks.check(result.get("corked") == result.get("plain_corked") == 0,
                         f"{name}: TCP_CORK=1 is kept from the kernel from a signal handler too, as outside one "
                         f"(TCP_CORK reads {result.get('corked')} after the handler, "
                         f"{result.get('plain_corked')} after the same call outside it)")
        if not forced:
            checks.check(result.get("corked") == 1 and result.get("uncorked") == 0 and result.get("handler_errors") == 0,
                         f"{name}: the handlers cork and uncork ({result})")
        messages, heartbeats, problem = split(data)
        want = [b"<HEAD>"] * ROUNDS + [b"<SIGNAL>"]
        checks.check(not problem and messages == want,
                     f"{name}: every message whole, in order, heartbeats only between them "
                     f"({len(messages)} messages; {problem or [m for m in messages if m not in want][:3]})")
        if nodelay is not None:
            checks.check(heartbeats >= ROUNDS // 2, f"{name}: heartbeats flowed ({heartbeats})")
    checks.finish()


if __name__ == "__main__":
    main()
