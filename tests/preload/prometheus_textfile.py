#!/usr/bin/env python3
"""[log] prometheus_textfile: a file node_exporter's textfile collector can read, checked by a
strict parser of the text exposition format, rewritten every interval while the program runs,
with counters that match what the program did."""
import os
import subprocess
import sys
import time

from testlib import Checks, clean_env, parse_args, parse_exposition, rejects, run, value

def main():
    args = parse_args()
    checks = Checks()
    # The parser itself can fail: it is only worth something if it rejects what it should.
    checks.check(rejects("a_total 1") and rejects("a_total 1\n") and
                 rejects('# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 0\nh_count 1\n'),
                 "the parser rejects a missing newline, a missing TYPE and non-cumulative buckets")
    prom = os.path.join(args.work_dir, "probe.prom")
    if os.path.exists(prom):
        os.remove(prom)
    policy = os.path.join(args.work_dir, "prom.toml")
    with open(policy, "w") as f:
        f.write(f'version = 1\n[log]\nformat = "jsonl"\nprometheus_textfile = "{args.work_dir}/{{program}}.prom"\n'
                'interval = "100ms"\n[[rule]]\nname = "accepted"\nmatch = { role = "server" }\n')
    env = clean_env(LD_PRELOAD=args.shim, TCPTUNE_POLICY=policy, TCPTUNE_LOG=os.path.join(args.work_dir, "p.jsonl"))
    done = run([args.probe, "writes", "--count", "100", "--size", "100", "--keep-open", "1"], env)
    checks.check(done.returncode == 0 and os.path.exists(prom), "the textfile is written (at exit at the latest)")
    try:
        samples = parse_exposition(open(prom).read())
        checks.check(True, "the textfile parses as text exposition format")
    except (ValueError, OSError) as error:
        checks.check(False, f"the textfile parses as text exposition format ({error})")
        checks.finish()
    defaults = dict(program="probe", rule="(defaults)")
    checks.check(value(samples, "tcptune_writes_total", **defaults) == 105, "writes_total counts every write")
    checks.check(value(samples, "tcptune_write_bytes_total", **defaults) == 10500, "write_bytes_total")
    checks.check(value(samples, "tcptune_connections_total", **defaults) == 2 and
                 value(samples, "tcptune_connections_total", program="probe", rule="accepted") == 2,
                 "connections per rule, the one still open at exit included")
    checks.check(value(samples, "tcptune_write_latency_seconds_count", **defaults) == 105,
                 "the latency histogram counts every write")
    checks.check(not [n for n in os.listdir(args.work_dir) if ".prom.tmp." in n], "no temporary file is left")

    # While a program runs, the file is rewritten every interval with what it has done so far.
    app = ("import socket, time\ns = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
           "c = socket.create_connection(s.getsockname()); a, _ = s.accept()\n"
           "for i in range(7): c.send(b'x')\ntime.sleep(30)\n")
    live = os.path.join(args.work_dir, os.path.basename(sys.executable) + ".prom")
    if os.path.exists(live):
        os.remove(live)
    program = os.path.basename(sys.executable)
    process = subprocess.Popen([sys.executable, "-c", app], env=env)
    # Polled (a loaded machine starts the interpreter slowly); the program sleeps long after its
    # writes, so a count seen here was written while it ran.
    seen_while_running = None
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and process.poll() is None:
        seen = parse_exposition(open(live).read()) if os.path.exists(live) else {}
        if value(seen, "tcptune_writes_total", program=program, rule="(defaults)") == 7:
            seen_while_running = process.poll() is None
            break
        time.sleep(0.05)
    process.kill()
    process.wait(timeout=30)
    checks.check(seen_while_running is True,
                 "while the program runs, the file already counts its writes on an open connection")
    checks.finish()


if __name__ == "__main__":
    main()
