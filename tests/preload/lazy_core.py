"""The core (libtcptune-core.so) is loaded only into a process that has a TCP socket.

A program that opens none (cat, sleep, a Unix socket and UDP from Python) runs with the first
stage alone, whatever the policy (a good one, a bad one: it is not even read); one that opens a
TCP socket, inherits one, or receives one over a Unix socket has the core and is tuned as
before. The first TCP socket made inside a signal handler does not load it there, threads
racing to make the first sockets are all tuned, and a missing core leaves the program running
untuned with one line on stderr."""
import argparse
import os
import shutil
import socket
import subprocess
import time

from testlib import Checks, clean_env, records, run

PYTHON = "/usr/bin/python3"
POLICY = '''version = 1
[defaults]
nodelay = "on"
[[rule]]
match = { port = 6379 }
'''
CORE = "libtcptune-core.so"


def parse_args():
    parser = argparse.ArgumentParser()
    for name in ("--shim", "--probe", "--app", "--work-dir"):
        parser.add_argument(name, required=True)
    args = parser.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    return args


def mapped(maps_text):
    return "libtcptune.so" in maps_text, CORE in maps_text


def main():
    args = parse_args()
    checks = Checks()
    policy_file = os.path.join(args.work_dir, "policy.toml")
    with open(policy_file, "w") as f:
        f.write(POLICY)
    policies = {"the built-in default": {}, "a policy file": {"TCPTUNE_POLICY": policy_file},
                "TCPTUNE_POLICY_TOML": {"TCPTUNE_POLICY_TOML": POLICY},
                "a policy that does not parse": {"TCPTUNE_POLICY_TOML": "[defaults\n"}}

    # No TCP socket: the first stage alone, nothing said.
    for name, extra in policies.items():
        result = run(["cat", "/proc/self/maps"], clean_env(LD_PRELOAD=args.shim, **extra))
        stage, core = mapped(result.stdout)
        checks.check(result.returncode == 0 and stage and not core and result.stderr == "",
                     f"cat with {name}: the first stage is mapped ({stage}), the core is not ({core}), "
                     f"stderr empty ({result.stderr.strip()[:200]!r})")
    sleeper = subprocess.Popen(["sleep", "5"], env=clean_env(LD_PRELOAD=args.shim, TCPTUNE_POLICY=policy_file))
    try:
        deadline = time.monotonic() + 5
        maps = ""
        while time.monotonic() < deadline and "libtcptune.so" not in maps:
            time.sleep(0.05)
            with open(f"/proc/{sleeper.pid}/maps") as f:
                maps = f.read()
        stage, core = mapped(maps)
        checks.check(stage and not core, f"a running sleep, seen from outside: stage mapped {stage}, core mapped {core}")
    finally:
        sleeper.kill()
        sleeper.wait()
    not_tcp = ("import socket\n"
               "a, b = socket.socketpair()\n"
               "u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
               "u.connect(('127.0.0.1', 9))\n"
               "print(open('/proc/self/maps').read())\n")
    result = run([PYTHON, "-c", not_tcp], clean_env(LD_PRELOAD=args.shim, TCPTUNE_POLICY=policy_file))
    stage, core = mapped(result.stdout)
    checks.check(result.returncode == 0 and stage and not core,
                 f"python with a Unix socket pair and a connected UDP socket: no core ({core}; exit {result.returncode})")

    # A TCP socket: the core, and tuning as before.
    tcp = "import socket\ns = socket.socket()\nprint(open('/proc/self/maps').read())\n"
    result = run([PYTHON, "-c", tcp], clean_env(LD_PRELOAD=args.shim))
    checks.check(result.returncode == 0 and mapped(result.stdout)[1],
                 f"python making a TCP socket has the core mapped (exit {result.returncode})")
    log = os.path.join(args.work_dir, "probe.jsonl")
    if os.path.exists(log):
        os.unlink(log)
    result = run([args.probe, "nodelay", "--client", "1", "--server", "1"],
                 clean_env(LD_PRELOAD=args.shim, TCPTUNE_POLICY=policy_file, TCPTUNE_LOG=log, TCPTUNE_LOG_FORMAT="jsonl"))
    events = [r.get("event") for r in records(log)]
    checks.check(result.returncode == 0 and events.count("conn_open") >= 2 and "start" in events,
                 f"the probe's client and server are tuned (nodelay on) and logged ({result.stdout.strip()[-80:]!r}; "
                 f"events {sorted(set(e for e in events if e))})")

    # A TCP socket inherited at start, or received over a Unix socket.
    with socket.create_server(("127.0.0.1", 0)) as listener:
        connection = socket.create_connection(listener.getsockname())
        result = subprocess.run(["cat", "/proc/self/maps"], env=clean_env(LD_PRELOAD=args.shim), capture_output=True,
                                text=True, timeout=60, pass_fds=[connection.fileno()])
        checks.check(mapped(result.stdout)[1], "cat that inherits a TCP socket has the core mapped from the start")
        parent_end, child_end = socket.socketpair()
        receiver = ("import socket, sys\n"
                    "s = socket.socket(fileno=int(sys.argv[1]))\n"
                    "before = 'libtcptune-core.so' in open('/proc/self/maps').read()\n"
                    "s.sendall(b'r')\n"
                    "msg, fds, flags, addr = socket.recv_fds(s, 1, 1)\n"
                    "after = 'libtcptune-core.so' in open('/proc/self/maps').read()\n"
                    "print(f'before {before} after {after} fds {len(fds)}')\n")
        child = subprocess.Popen([PYTHON, "-c", receiver, str(child_end.fileno())], pass_fds=[child_end.fileno()],
                                 env=clean_env(LD_PRELOAD=args.shim), stdout=subprocess.PIPE, text=True)
        child_end.close()
        parent_end.settimeout(30)
        parent_end.recv(1)
        socket.send_fds(parent_end, [b"x"], [connection.fileno()])
        out, _ = child.communicate(timeout=60)
        checks.check(child.returncode == 0 and out.strip() == "before False after True fds 1",
                     f"python receiving a TCP socket with SCM_RIGHTS loads the core then ({out.strip()!r})")
        parent_end.close()
        connection.close()

    # Signal handlers and threads.
    result = run([args.app, "handler"], clean_env(LD_PRELOAD=args.shim))
    checks.check(result.returncode == 0, f"first TCP socket inside a signal handler: {result.stdout.strip()!r}")
    for attempt in range(5):
        result = run([args.app, "race"], clean_env(LD_PRELOAD=args.shim, TCPTUNE_POLICY=policy_file))
        checks.check(result.returncode == 0, f"threads racing to the first TCP socket, run {attempt + 1}: "
                                             f"{result.stdout.strip()!r}{result.stderr.strip()[:200]!r}")
    control = run([args.app, "race"], clean_env())
    checks.check(control.returncode == 1, f"control without the shim leaves Nagle on: {control.stdout.strip()!r}")

    # No core beside the first stage: untuned, one line, once.
    lone = os.path.join(args.work_dir, "lone")
    shutil.rmtree(lone, ignore_errors=True)
    os.makedirs(lone)
    shutil.copy(args.shim, lone)
    result = run([args.probe, "nodelay", "--client", "0", "--server", "0"],
                 clean_env(LD_PRELOAD=os.path.join(lone, "libtcptune.so"), TCPTUNE_POLICY=policy_file))
    lines = result.stderr.strip().splitlines()
    checks.check(result.returncode == 0 and len(lines) == 1 and lines[0].startswith("tcptune: cannot load the tuning core: ")
                 and os.path.join(lone, CORE) in lines[0] and lines[0].endswith("; running untuned"),
                 f"without the core: runs untuned (exit {result.returncode}), one line on stderr {lines}")
    checks.finish()


if __name__ == "__main__":
    main()
