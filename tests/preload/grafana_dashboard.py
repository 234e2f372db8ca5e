#!/usr/bin/env python3
"""examples/prometheus/grafana-dashboard.json is valid JSON, every panel queries something, and
every metric name in its queries (and in the rules of tcptune.rules.yml, when PyYAML is there to
read them) exists: a family of a textfile the preloaded shim really wrote, a recording rule of
tcptune.rules.yml, or one of node_exporter's textfile collector's own metrics."""
import json
import os
import re

from testlib import Checks, clean_env, parse_args, parse_exposition, run

# node_exporter's textfile collector adds these about the files it reads.
NODE_EXPORTER = {"node_textfile_mtime_seconds", "node_textfile_scrape_error"}
KEYWORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left", "group_right",
            "inf", "nan", "Inf", "NaN"}


def metric_names(expression):
    """The metric names a PromQL (or Grafana label_values) expression reads."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expression)  # string literals
    e = re.sub(r"label_values\(\s*([^,()]+?)\s*,\s*\w+\s*\)", r"\1", e)  # Grafana: the metric only
    e = re.sub(r"\{[^}]*\}", "", e)  # label matchers
    e = re.sub(r"\[[^\]]*\]", "", e)  # ranges
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)  # label lists
    e = re.sub(r"\$\{?\w+\}?", "", e)  # Grafana variables
    names = set()
    for match in re.finditer(r"(?<![\w.])[a-zA-Z_:][a-zA-Z0-9_:]*", e):
        word = match.group()
        if word in KEYWORDS or e[match.end():].lstrip().startswith("("):
            continue  # a keyword, a function or an aggregation
        names.add(word)
    return names


def textfile_names(args):
    """Every sample name of a textfile the preloaded shim writes (histograms with their
    _bucket, _sum and _count)."""
    prom = os.path.join(args.work_dir, "probe.prom")
    for stale in (prom, prom + ".lock"):
        if os.path.exists(stale):
            os.remove(stale)
    policy = os.path.join(args.work_dir, "dashboard.toml")
    with open(policy, "w") as f:
        f.write(f'version = 1\n[log]\nformat = "jsonl"\nprometheus_textfile = "{prom}"\n')
    env = clean_env(LD_PRELOAD=args.shim, TCPTUNE_POLICY=policy, TCPTUNE_LOG=os.path.join(args.work_dir, "d.jsonl"))
    run([args.probe, "writes", "--count", "5", "--size", "10"], env)
    with open(prom) as f:
        text = f.read()
    names = {name for name, _ in parse_exposition(text)}
    names |= {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")}  # families with no series yet
    for line in text.splitlines():
        if line.startswith("# TYPE ") and line.split()[3] == "histogram":
            names |= {line.split()[2] + suffix for suffix in ("_bucket", "_sum", "_count")}
    return names


def main():
    args = parse_args()
    checks = Checks()
    examples = os.path.join(args.source_dir, "examples", "prometheus")
    checks.check(metric_names('sum by (program, le) (rate(a_total{x="b c"}[5m])) / on (x) b and c') ==
                 {"a_total", "b", "c"} and
                 metric_names("histogram_quantile(0.99, x_bucket)") == {"x_bucket"} and
                 metric_names("label_values(tcptune_processes, program)") == {"tcptune_processes"} and
                 metric_names("time() - m offset 5m") == {"m"},
                 "the checker finds the metric names of an expression, and only those")
    rules_text = open(os.path.join(examples, "tcptune.rules.yml")).read()
    recorded = set(re.findall(r"^\s*- record:\s*(\S+)", rules_text, re.M))
    checks.check(len(recorded) == 4, f"the recording rules are found ({sorted(recorded)})")
    exported = textfile_names(args)
    checks.check("tcptune_writes_total" in exported and "tcptune_write_latency_seconds_bucket" in exported,
                 f"a real textfile gives the exported names ({len(exported)})")
    known = exported | recorded | NODE_EXPORTER
    try:
        with open(os.path.join(examples, "grafana-dashboard.json")) as f:
            dashboard = json.load(f)
        checks.check(True, "grafana-dashboard.json is valid JSON")
    except ValueError as error:
        checks.check(False, f"grafana-dashboard.json is valid JSON ({error})")
        checks.finish()
    queries = []
    for panel in dashboard.get("panels", []):
        expressions = [t.get("expr", "") for t in panel.get("targets", []) if t.get("expr")]
        checks.check(bool(expressions), f"panel {panel.get('title')!r} queries something")
        queries += expressions
    for variable in dashboard.get("templating", {}).get("list", []):
        query = variable.get("query")
        if variable.get("type") == "query":
            queries.append(query.get("query", "") if isinstance(query, dict) else query)
    used = set()
    for query in queries:
        names = metric_names(query)
        used |= names
        checks.check(names and names <= known, f"{query}: reads {sorted(names)}, unknown: {sorted(names - known)}")
    checks.check(recorded <= used, f"the dashboard shows every recording rule ({sorted(recorded - used)} unused)")
    try:
        import yaml  # Debian's python3-yaml, for /usr/bin/python3
    except ImportError:
        print("the rules' expressions are not checked: no PyYAML for this python")
    else:
        for group in yaml.safe_load(rules_text)["groups"]:
            for rule in group["rules"]:
                names = metric_names(rule["expr"])
                checks.check(names and names <= known,
                             f"rule {rule.get('record') or rule.get('alert')}: unknown {sorted(names - known)}")
    checks.finish()


if __name__ == "__main__":
    main()
