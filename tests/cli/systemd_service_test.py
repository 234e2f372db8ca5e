"""tcptune enable on a real systemd: two units in /run/systemd/system (a dynamic program that
prints its own /proc/self/maps, and a static one), enabled, started, and their output read from
files systemd writes (StandardOutput=file:). The dynamic one has the shim mapped; the static one
runs under tcptune run, supervised. Then disable, and the units and drop-ins are gone.

Needs systemd as PID 1 and root: skipped (77) otherwise (the test machines run no systemd, so
this test has not run there; systemd.enable covers the files and starts the commands itself)."""
import argparse
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "preload"))
from testlib import Checks, clean_env, skip  # noqa: E402

BOUND = 60

p = argparse.ArgumentParser()
for a in ("--tcptune", "--shim", "--static-hello"):
    p.add_argument(a, required=True)
args = p.parse_args()
try:
    with open("/proc/1/comm", encoding="utf-8") as f:
        init = f.read().strip()
except OSError:
    init = "unknown"
if init != "systemd" or not os.path.isdir("/run/systemd/system"):
    skip(f"systemd is not PID 1 here (PID 1 is {init})")
if os.geteuid() != 0:
    skip("needs root (units in /run/systemd/system, drop-ins in /etc/systemd/system)")
checks = Checks()
tag = f"tcptune-test-{os.getpid()}"
work = f"/run/{tag}"
os.makedirs(work)
shutil.copy(args.static_hello, f"{work}/static-app")
units = {
    f"{tag}-dynamic.service": f"ExecStart=/usr/bin/cat /proc/self/maps\nStandardOutput=file:{work}/dynamic.out\n",
    f"{tag}-static.service": f"ExecStart={work}/static-app\nStandardOutput=file:{work}/static.out\n"
                             f"StandardError=file:{work}/static.err\n",
}


def run(*argv):
    return subprocess.run(list(argv), env=clean_env(), capture_output=True, text=True, timeout=BOUND)


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


try:
    for name, body in units.items():
        with open(f"/run/systemd/system/{name}", "w", encoding="utf-8") as f:
            f.write(f"[Service]\nType=oneshot\n{body}")
        r = run(args.tcptune, "enable", name)
        checks.check(r.returncode == 0, f"enable {name} ({r.stderr.strip()})")
    run("systemctl", "daemon-reload")
    for name in units:
        r = run("systemctl", "start", name)
        checks.check(r.returncode == 0, f"systemctl start {name} ({r.stderr.strip()})")
    checks.check(os.path.realpath(args.shim) in read(f"{work}/dynamic.out"), "the dynamic service has the shim mapped")
    checks.check("hello" in read(f"{work}/static.out") and "supervised mode" in read(f"{work}/static.err"),
                 "the static service runs under tcptune run, supervised")
    for name in units:
        r = run(args.tcptune, "disable", name)
        checks.check(r.returncode == 0 and not os.path.exists(f"/etc/systemd/system/{name}.d"),
                     f"disable {name}: the drop-in and the directory enable made are gone")
finally:
    for name in units:
        run(args.tcptune, "disable", name)
        try:
            os.unlink(f"/run/systemd/system/{name}")
        except OSError:
            pass
    run("systemctl", "daemon-reload")
    shutil.rmtree(work, ignore_errors=True)
checks.finish()
