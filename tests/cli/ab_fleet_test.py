#!/usr/bin/env python3
"""tcptune ab --prometheus against a real Prometheus and node_exporter (Debian's), started here on
loopback with a 1 s scrape of the shim's textfile directory. Four python clients run at once under
`tcptune run`, one per arm, all of one program and so one textfile (python3.prom): each sends a
request as two small writes and reads a 2-byte reply, paced at one request per 10 ms, from a server
in this script (not under the shim):

  on     --arm on  --policy on.toml             nodelay on: both writes go at once
  off    --arm off --observe --policy on.toml   observing, on.toml's [log] only: Nagle holds the
                                                second write until the server's delayed ACK (~40 ms)
  ctl-a, ctl-b     --policy on.toml             an A/A control: one policy in both arms

Checked: the shared textfile keeps each arm's series apart (arm on every series); each arm's jsonl
records carry "arm"; `tcptune ab --prometheus --on on --off off` over the window judges ack p50 and
throughput "better" with p < 0.005 (10x below the 0.05 level; ack p50 is about 40 ms against below
the 1 ms resolution, throughput about 4x) and shows what observing costs; the control judges ack p50
"no difference shown", and neither ack latency nor throughput at p < 0.005 (by chance alone a
metric of an A/A comparison is "better" or "worse" at p < 0.05 one time in twenty, so the control
is held to the 10x margin the real effect clears, not to the 0.05 level). The control's write-call
latency is printed, not asserted: each arm is one process, and on a loaded 2-core host the tail of
one process's write calls can differ from another's for the whole window (its CPU, not its
policy), which the steps, all of one process, cannot average out; runs here have shown write p99
"worse" at p = 0.004 between the two identical clients. Errors, each one line on stderr and exit 1: an arm
with no series, an unreachable URL, a query Prometheus refuses (HTTP 400), a wrong route prefix
(HTTP 404). A bad TCPTUNE_ARM is one warning line and no arm label; the program runs on."""
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "preload"))
from loopback_services import LoopbackServer, PrometheusStack, exporter_and_prometheus, free_port, http_get  # noqa: E402
from loopback_services import wait_for as wait_until  # noqa: E402
from testlib import SKIP, Checks, clean_env, parse_exposition, records  # noqa: E402

DEADLINE = time.monotonic() + 57  # ctest's TIMEOUT is 60 s
WARMUP_S, WINDOW_S, STEP_S = 3, 24, 3
# Runs until its stdin ends (or for SECONDS), then exits normally, so its summary is written.
CLIENT = r"""
import select, socket, sys, time
port, seconds = int(sys.argv[1]), float(sys.argv[2])
c = socket.create_connection(("127.0.0.1", port))
end = time.monotonic() + seconds
due = time.monotonic()
while time.monotonic() < end and not select.select([sys.stdin], [], [], 0)[0]:
    c.send(b"h" * 16)
    c.send(b"b" * 48)
    got = b""
    while len(got) < 2:
        got += c.recv(2 - len(got))
    due = max(due + 0.010, time.monotonic())
    time.sleep(max(0.0, due - time.monotonic()))
c.close()
"""


def remaining():
    return max(0.1, DEADLINE - time.monotonic())


def answer_ok(conn):
    """Replies b"ok" to every 64 bytes."""
    with conn:
        pending = 0
        while True:
            data = conn.recv(4096)
            if not data:
                return
            pending += len(data)
            while pending >= 64:
                pending -= 64
                conn.sendall(b"ok")


def wait_for(predicate, limit_s):
    return bool(wait_until(predicate, min(limit_s, remaining())))


def main():
    import argparse
    parser = argparse.ArgumentParser()
    for a in ("--tcptune", "--shim", "--work-dir"):
        parser.add_argument(a, required=True)
    args = parser.parse_args()
    checks = Checks()
    binaries = exporter_and_prometheus()
    if binaries is None:
        print("skipped: needs Debian's prometheus and prometheus-node-exporter (scripts/deps.sh test)", flush=True)
        sys.exit(SKIP)
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    shutil.rmtree(args.work_dir, ignore_errors=True)
    textfiles = os.path.join(args.work_dir, "textfile")
    os.makedirs(textfiles)
    on_policy = os.path.join(args.work_dir, "on.toml")
    with open(on_policy, "w") as f:
        f.write(f'version = 1\n[defaults]\nnodelay = "on"\n[log]\nprometheus_textfile = "{textfiles}/{{program}}.prom"\n'
                'interval = "100ms"\n')
    stack = PrometheusStack(binaries, args.work_dir, textfiles, clean_env())
    url = stack.url
    clients = {}
    try:
        ready = stack.wait_ready(min(20, remaining()))
        checks.check(ready, "node_exporter and Prometheus start on loopback")
        if not ready:
            checks.finish()
        server = LoopbackServer(answer_ok, backlog=16)
        seconds = remaining()  # until told: stdin closed
        arms = {
            "on": ["--arm", "on", "--policy", on_policy],
            "off": ["--arm", "off", "--observe", "--policy", on_policy],
            "ctl-a": ["--arm", "ctl-a", "--policy", on_policy],
            "ctl-b": ["--arm", "ctl-b", "--policy", on_policy],
        }
        for arm, options in arms.items():
            clients[arm] = subprocess.Popen(
                [args.tcptune, "run", "-q", *options, "--log", os.path.join(args.work_dir, f"{arm}.jsonl"), "--",
                 python, "-c", CLIENT, str(server.port), str(seconds)],
                env=clean_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # Meanwhile: a TCPTUNE_ARM that is no arm name is one line, and no label; the program runs.
        bad = subprocess.run([python, "-c", CLIENT, str(server.port), "0.3"], capture_output=True, text=True,
                             timeout=remaining(),
                             env=clean_env(LD_PRELOAD=args.shim, TCPTUNE_ARM="on arm",
                                           TCPTUNE_LOG=os.path.join(args.work_dir, "bad-arm.jsonl")))
        warnings = [line for line in bad.stderr.splitlines() if "TCPTUNE_ARM" in line]
        checks.check(bad.returncode == 0 and len(warnings) == 1 and "is not an arm name" in warnings[0]
                     and "ignored" in warnings[0], f"a bad TCPTUNE_ARM: one warning line, the program runs ({bad.stderr!r})")
        bad_records = records(os.path.join(args.work_dir, "bad-arm.jsonl"))
        checks.check(bool(bad_records) and all("arm" not in r for r in bad_records),
                     "and its records carry no arm")

        # The window starts once Prometheus has every arm's series, and a warm-up later.
        def scraped():
            answer = json.loads(http_get(f"{url}/api/v1/query?query=count%20by%20(arm)%20(tcptune_writes_total)"))
            return len(answer["data"]["result"]) == len(arms)
        checks.check(wait_for(scraped, 20), "Prometheus scrapes every arm's series")
        end = time.time() + WARMUP_S + WINDOW_S
        time.sleep(max(0.0, min(end + 2.5 - time.time(), remaining())))
        names = [n for n in os.listdir(textfiles) if n.endswith(".prom")]
        checks.check(len(names) == 1, f"the four arms of one program share one textfile ({names})")
        with open(os.path.join(textfiles, names[0])) as f:
            samples = parse_exposition(f.read())
        program = names[0][:-len(".prom")]
        labelled = {dict(labels).get("arm") for (name, labels) in samples if name.startswith("tcptune_")}
        checks.check(labelled == set(arms), f"every series carries its arm, each arm has its own ({labelled})")
        writes = {arm: samples.get(("tcptune_writes_total",
                                    frozenset({"program": program, "arm": arm, "rule": "(defaults)"}.items())), 0)
                  for arm in arms}
        checks.check(all(writes[a] > 0 for a in arms) and writes["on"] > 2 * writes["off"],
                     f"each arm's writes are its own: the on arm writes more than twice the off arm's ({writes})")

        def ab(out, *options):
            return subprocess.run([args.tcptune, "ab", "--prometheus", url, "--window", f"{WINDOW_S}s", "--step",
                                   f"{STEP_S}s", "--end", str(int(end)), "--program", program,
                                   "--out", os.path.join(args.work_dir, out), *options],
                                  capture_output=True, text=True, timeout=remaining(), env=clean_env())

        def metrics(out):
            with open(os.path.join(args.work_dir, out, "summary.json")) as f:
                summary = json.load(f)
            return summary, {m["name"]: m for m in summary["metrics"]}

        verdict = ab("on-off", "--on", "on", "--off", "off")
        print(verdict.stdout, verdict.stderr, flush=True)
        checks.check(verdict.returncode == 0, "tcptune ab --prometheus on vs off exits 0")
        summary, by_name = metrics("on-off")
        for name in ("ack p50", "throughput"):
            m = by_name[name]
            checks.check(m.get("verdict") == "better" and m["p_value"] < 0.005,
                         f"{name}: the on arm better, p < 0.005 ({m.get('verdict')}, p = {m.get('p_value')})")
        ack = by_name["ack p50"]
        checks.check(ack["observe"]["median"] >= 10 * ack["tuned"]["median"],
                     f"ack p50: off's median at least 10x on's ({ack['observe']['median']} ms vs <1 ms)")
        checks.check(summary["steps_per_arm"] == WINDOW_S // STEP_S and
                     all(len(by_name[n][a]["values"]) == WINDOW_S // STEP_S
                         for n in ("ack p50", "throughput") for a in ("observe", "tuned")),
                     f"one sample per step and arm ({summary['steps_per_arm']} steps, "
                     f"{len(by_name['ack p50']['tuned']['values'])} with a value)")
        checks.check("what observing costs the off arm" in verdict.stdout and
                     "ns of CPU per write" in summary["observing_cost"]["line"],
                     "what observing costs is shown beside the verdict")
        checks.check(all(os.path.exists(os.path.join(args.work_dir, "on-off", f))
                         for f in ("summary.txt", "summary.json", "report.html", "ack-latency-cdf.svg")),
                     "--out keeps summary.txt, summary.json, report.html and the plots")

        control = ab("control", "--on", "ctl-a", "--off", "ctl-b")
        print(control.stdout, control.stderr, flush=True)
        checks.check(control.returncode == 0, "the A/A control exits 0")
        _, control_metrics = metrics("control")
        checks.check(control_metrics["ack p50"].get("verdict") == "no difference shown",
                     f"control: ack p50 no difference shown ({control_metrics['ack p50'].get('verdict')})")
        # What the policy moves; the write-call tail is left out (see the docstring).
        strong = [n for n in ("ack p50", "ack p99", "throughput") if control_metrics[n].get("p_value", 1) < 0.005]
        checks.check(not strong, f"control: no difference at p < 0.005 in ack latency or throughput ({strong})")
        print("control, not asserted: " + ", ".join(
            f"{n} {control_metrics[n].get('verdict')} (p = {control_metrics[n].get('p_value')})"
            for n in ("write p50", "write p99")), flush=True)

        def one_line_failure(result, needle, what):
            lines = result.stderr.strip().splitlines()
            checks.check(result.returncode == 1 and len(lines) == 1 and needle in result.stderr,
                         f"{what}: one line, exit 1 ({result.returncode}, {result.stderr.strip()!r})")

        one_line_failure(ab("missing", "--on", "on", "--off", "nosuch"), 'no tcptune series with arm="nosuch"',
                         "an arm with no series")
        refused = subprocess.run([args.tcptune, "ab", "--prometheus", f"http://127.0.0.1:{free_port()}",
                                  "--out", os.path.join(args.work_dir, "refused")],
                                 capture_output=True, text=True, timeout=remaining(), env=clean_env())
        one_line_failure(refused, "Connection refused", "an unreachable URL")
        one_line_failure(ab("bad-selector", "--selector", 'job=~"('), "Prometheus refused the query (bad_data",
                         "a query Prometheus refuses")
        wrong_prefix = subprocess.run([args.tcptune, "ab", "--prometheus", f"{url}/nope", "--out",
                                       os.path.join(args.work_dir, "prefix")],
                                      capture_output=True, text=True, timeout=remaining(), env=clean_env())
        one_line_failure(wrong_prefix, "HTTP 404", "a wrong route prefix")

        for client in clients.values():
            client.stdin.close()
        for arm, client in clients.items():
            client.wait(timeout=remaining())
            log = records(os.path.join(args.work_dir, f"{arm}.jsonl"))
            events = {r.get("event") for r in log}
            checks.check(client.returncode == 0 and {"start", "conn_open", "conn_close", "summary"} <= events and
                         all(r.get("arm") == arm for r in log),
                         f"{arm}: every record carries \"arm\":\"{arm}\" (start, conn_open, conn_close, summary)")
        start = next((r for r in records(os.path.join(args.work_dir, "off.jsonl")) if r.get("event") == "start"), {})
        checks.check("observe-only" in start.get("policy", "") and "[log] of" in start.get("policy", ""),
                     f"the off arm observes, with on.toml's [log] ({start.get('policy')})")
    finally:
        for process in clients.values():
            if process.poll() is None:
                process.kill()
                process.wait()
        stack.close()
    checks.finish()


if __name__ == "__main__":
    main()
