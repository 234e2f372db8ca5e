"""tcptune ab's evidence: a Nagle-bound loopback client (nagle_pair.c: two small writes, then a
read, about 40 ms a request with Nagle on) against the same client with nodelay = "on". The
--out directory must hold summary.txt, summary.json (parsed here), report.html and the SVG plots
(parsed here); the verdict on wall time and request latency, a 10x effect, must be "better"; the
report and every plot title name the command and both arms' policies. A program that hands over
nothing and a latency file with a bad line must be reported as such. gnuplot is not used: the
runs here have no gnuplot on PATH."""
import argparse
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

p = argparse.ArgumentParser()
for a in ("--tcptune", "--nagle-pair", "--work-dir"):
    p.add_argument(a, required=True)
args = p.parse_args()
shutil.rmtree(args.work_dir, ignore_errors=True)
os.makedirs(args.work_dir)
passed = failed = 0
SVG = "{http://www.w3.org/2000/svg}"


def check(ok, what):
    global passed, failed
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    passed, failed = passed + bool(ok), failed + (not ok)


def ab(out, *argv, runs):
    # No gnuplot and no python on PATH: the plots are tcptune's own.
    env = {k: v for k, v in os.environ.items() if not k.startswith("TCPTUNE_") and k != "LD_PRELOAD"}
    env["PATH"] = "/nonexistent"
    return subprocess.run([args.tcptune, "ab", "--runs", str(runs), *argv[:-1], "--out", out, "--", *argv[-1]],
                          capture_output=True, text=True, env=env, timeout=240)


class HtmlCheck(html.parser.HTMLParser):
    """Counts the inline SVGs and checks that every element opened in the body is closed."""

    VOID = {"meta", "br", "line", "circle", "rect", "polyline"}

    def __init__(self):
        super().__init__()
        self.stack, self.svgs, self.errors, self.text = [], 0, [], []

    def handle_starttag(self, tag, attrs):
        self.svgs += tag == "svg"
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.svgs += tag == "svg"

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


policy = os.path.join(args.work_dir, "nodelay-on.toml")
with open(policy, "w") as f:
    f.write('version = 1\n[defaults]\nnodelay = "on"\n')
out = os.path.join(args.work_dir, "nagle")
r = ab(out, "--policy", policy, [args.nagle_pair, "20"], runs=5)
check(r.returncode == 0, f"ab over the Nagle-bound client exits 0 ({r.returncode}: {r.stderr[-400:]})")
files = set(os.listdir(out)) if os.path.isdir(out) else set()
for name in ("summary.txt", "summary.json", "report.html", "wall-time.svg", "request-latency-cdf.svg",
             "write-latency-cdf.svg", "ack-latency-cdf.svg", "observe-1.latency", "tuned-5.latency"):
    check(name in files, f"--out keeps {name}")
summary = {}
try:
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)
except (OSError, ValueError) as error:
    check(False, f"summary.json parses ({error})")
metrics = {m["name"]: m for m in summary.get("metrics", [])}
wall = metrics.get("wall time", {})
observe_wall, tuned_wall = wall.get("observe", {}).get("median", 0), wall.get("tuned", {}).get("median", 1)
# The effect is Nagle's ~40 ms per request against microseconds: far beyond 10x on any host.
check(observe_wall >= 10 * tuned_wall, f"the effect on wall time is 10x or more ({observe_wall} s vs {tuned_wall} s)")
check(wall.get("verdict") == "better" and wall.get("p_value", 1) < 0.05,
      f"wall time: verdict better, p < 0.05 ({wall.get('verdict')}, p {wall.get('p_value')})")
interval = wall.get("ratio_interval") or [1, 1]
check(interval[1] < 1, f"wall time: the ratio's interval lies below 1 ({interval})")
request = metrics.get("request p50", {})
check(len(request.get("observe", {}).get("values", [])) == 5 and request.get("verdict") == "better",
      f"request p50: 5 runs of handed-over latencies per arm, verdict better ({request.get('verdict')})")
check(request.get("observe", {}).get("median", 0) > 20,
      f"request p50 without nodelay is Nagle's delayed-ack wait ({request.get('observe', {}).get('median')} ms)")
check(all(run["latencies"] == 20 for arm in summary.get("arms", []) for run in arm["runs"]),
      "every run handed over its 20 latencies")
check([a["name"] for a in summary.get("arms", [])] == ["observe-only", "tuned"] and
      summary["arms"][1]["policy"] == policy, "summary.json names both arms and the tuned arm's policy")
stdout_table = r.stdout[:r.stdout.find("report: ")]
with open(os.path.join(out, "summary.txt")) as f:
    check(f.read() == stdout_table, "summary.txt is the table ab printed")
check("report: " + os.path.join(out, "report.html") in r.stdout, "ab names the report")

# Below the 1 ms ack resolution a value reads "<1", never 0.
for line in stdout_table.splitlines():
    if line.startswith(("ack p50 (ms)", "ack p99 (ms)")):
        check(not re.search(r"(?<![\d.])0(?![\d.])", line[len("ack p50 (ms)"):]),
              f"ack values read <1 or a number, never 0 ({line})")
below = [m for m in metrics.values() if True in m.get("observe", {}).get("below_resolution", []) +
         m.get("tuned", {}).get("below_resolution", [])]
if below:
    check("<1 [" in stdout_table or "[<1" in stdout_table, "a value below the resolution reads <1 in the table")

report = open(os.path.join(out, "report.html")).read() if "report.html" in files else ""
parser = HtmlCheck()
parser.feed(report)
text = " ".join(parser.text)
check(parser.svgs == 4 and not parser.errors and not parser.stack,
      f"report.html: the four plots inlined, every element closed ({parser.svgs}, {parser.errors[:3]}, {parser.stack})")
check("nagle_pair 20" in text and policy in text and os.path.join(out, "observe-only.toml") in text,
      "the report names the command and both arms' policies")
check("better" in text and "Mann-Whitney" in text and "tcptune ab --runs 5 --policy" in text,
      "the report gives the verdicts, the method and the command that reproduces it")
for name in ("wall-time.svg", "request-latency-cdf.svg", "write-latency-cdf.svg", "ack-latency-cdf.svg"):
    try:
        root = ElementTree.parse(os.path.join(out, name)).getroot()
    except (OSError, ElementTree.ParseError) as error:
        check(False, f"{name} parses as XML ({error})")
        continue
    texts = ["".join(t.itertext()) for t in root.iter(SVG + "text")]
    title = texts[:3]  # what, the command, the arms
    check(any("nagle_pair 20" in t for t in title) and any("nodelay-on.toml" in t and "observe-only.toml" in t
                                                           for t in title),
          f"{name}: the title names the command and each arm's policy ({title})")
    check(any("(s)" in t or "(log scale)" in t for t in texts) and any("fraction of" in t or "wall time" in t
                                                                      for t in texts),
          f"{name}: both axes say what they measure")
    # A line per arm (for wall time, its median), less the curves the summary says were not drawn.
    not_drawn = [p["not_drawn"] for p in summary.get("plots", []) if p["file"] == name]
    lines = 2 - len(not_drawn[0]) if not_drawn else 2
    check(len(root.findall(SVG + "polyline")) == lines, f"{name}: a line per arm drawn ({lines})")

# A program that hands nothing over, writes nothing, and a latency file with a line that is not one.
quiet = os.path.join(args.work_dir, "quiet")
r = ab(quiet, ["/bin/sh", "-c", 'echo 0.002 >> "$TCPTUNE_AB_LATENCY_FILE"; echo oops >> "$TCPTUNE_AB_LATENCY_FILE"'],
       runs=1)
check(r.returncode == 0, f"ab over a shell line exits 0 ({r.returncode}: {r.stderr[-300:]})")
try:
    quiet_summary = json.load(open(os.path.join(quiet, "summary.json")))
except (OSError, ValueError) as error:
    quiet_summary = {}
    check(False, f"summary.json parses ({error})")
quiet_metrics = {m["name"]: m for m in quiet_summary.get("metrics", [])}
check("line(s) of observe-1.latency not a latency, left out (first: line 2: 'oops')" in r.stdout,
      f"a line that is not a latency is counted and quoted ({r.stdout[-600:]})")
check(quiet_metrics.get("request p50", {}).get("observe", {}).get("values") == [2.0],
      "the latency in seconds reads as 2 ms")
check("with 1 run per arm no difference can be shown" in quiet_metrics.get("wall time", {}).get("advice", ""),
      f"one run per arm: the advice says no difference can be shown ({quiet_metrics.get('wall time')})")
write_plot = [p for p in quiet_summary.get("plots", []) if p["file"] == "write-latency-cdf.svg"]
check(write_plot and write_plot[0]["not_drawn"] == ["observe-only: no write measured", "tuned: no write measured"],
      f"a curve that cannot be drawn says why ({write_plot})")
check("write p50: not judged: no write measured" in r.stdout, "a metric without values says why it was not judged")
quiet_report = open(os.path.join(quiet, "report.html")).read() if os.path.exists(os.path.join(quiet, "report.html")) else ""
check("not drawn: observe-only: no write measured" in quiet_report, "the report says which curve was not drawn and why")

# An --out where nothing can be written: said at once, before any run (a run whose log cannot be
# written measures nothing, and its table would say "no write measured").
marker = os.path.join(args.work_dir, "ran-marker")
a_file = os.path.join(args.work_dir, "a-file")
open(a_file, "w").close()
for bad_out, why in [(os.path.join(args.work_dir, "missing", "out"), "cannot create it: No such file or directory"),
                     (a_file, "not a directory")]:
    if os.path.exists(marker):
        os.unlink(marker)
    r = ab(bad_out, ["/bin/sh", "-c", f"touch {marker}"], runs=1)
    check(r.returncode == 1 and r.stderr == f"tcptune ab: --out {bad_out}: {why}\n" and not os.path.exists(marker),
          f"--out {bad_out}: one line and no run ({r.returncode}: {r.stderr[-300:]!r})")

# A run that never ends: --run-timeout stops it (SIGTERM) and counts it failed, the next runs go
# on, and ab ends with the table. A program that ignores SIGTERM is killed 5 s later.
import time  # noqa: E402
for name, program, runs in [("never", "exec sleep 600", 2), ("deaf", "trap '' TERM; while :; do sleep 0.1; done", 1)]:
    timed = os.path.join(args.work_dir, f"timeout-{name}")
    started = time.monotonic()
    r = subprocess.run([args.tcptune, "ab", "--runs", str(runs), "--run-timeout", "1s", "--out", timed, "--",
                        "/bin/sh", "-c", program], capture_output=True, text=True, timeout=120)
    took = time.monotonic() - started
    stopped = r.stderr.count("timed out after 1s, stopped")
    summary_path = os.path.join(timed, "summary.json")
    check(r.returncode != 0 and stopped == 2 * runs and os.path.exists(summary_path) and took < 60,
          f"--run-timeout 1s, {name}: {2 * runs} runs stopped, a summary, ab ends ({r.returncode}, {stopped} stopped, "
          f"{took:.1f} s: {r.stderr[-300:]!r})")

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
