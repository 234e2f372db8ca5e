#!/usr/bin/env python3
"""exec keeps the records: a program (exec_app.c) opens connections on loopback, writes, closes
most of them and execs /bin/true with each function of the exec family, right after its last
closes. Every record is in the log: the conn_close of each closed connection, one for each
connection still open (at_exec "closed" for FD_CLOEXEC, "inherited" for the others, which the
program exec'd then adopts), and the summary (ended_by "exec"), with the writes and bytes the
program counted; the log is valid jsonl. A vfork() child's exec leaves the parent's records
alone; an exec of a program that does not exist changes nothing (errno as without the shim, the
records go on in one lifetime); one that fails after the flush (ENOEXEC) goes on as a new
lifetime, its start record naming the failure, every write counted once; an exec from inside
a signal handler still execs."""
import argparse
import json
import os

from testlib import Checks, clean_env, run

FUNCTIONS = ["execve", "execv", "execvp", "execvpe", "execl", "execlp", "execle", "fexecve", "execveat"]


def parse_args():
    parser = argparse.ArgumentParser()
    for name in ("--shim", "--app", "--work-dir"):
        parser.add_argument(name, required=True)
    args = parser.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    return args


def tallies(stdout):
    """[(writes, bytes, connections)] from the app's "wrote W bytes B connections C" lines."""
    out = []
    for line in stdout.splitlines():
        words = line.split()
        if len(words) == 6 and words[0] == "wrote":
            out.append((int(words[1]), int(words[3]), int(words[5])))
    return out


def read_log(path):
    """Every line parsed as one JSON object, or None if any line is not."""
    records = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                record = json.loads(line)
            except ValueError:
                return None
            if not isinstance(record, dict) or not line.endswith("\n"):
                return None
            records.append(record)
    return records


def lifetimes(records, pid):
    """The records of `pid`, cut at each start record."""
    out = []
    for record in records:
        if record.get("pid") != pid:
            continue
        if record["event"] == "start" or not out:
            out.append([])
        out[-1].append(record)
    return out


def of(records, event):
    return [r for r in records if r["event"] == event]


def main():
    args = parse_args()
    checks = Checks()

    def run_app(name, *app_args):
        log = os.path.join(args.work_dir, f"{name}.jsonl")
        if os.path.exists(log):
            os.remove(log)
        done = run([args.app, *app_args], clean_env(LD_PRELOAD=args.shim, TCPTUNE_LOG=log), timeout=30)
        records = read_log(log) if os.path.exists(log) else None
        checks.check(done.returncode == 0, f"{name}: the program ran as without the shim (status {done.returncode}, "
                                           f"stderr {done.stderr.strip()[:300]!r})")
        checks.check(records is not None and len(records) > 0, f"{name}: every line of the log is a JSON object")
        return done, records or []

    for function in FUNCTIONS:
        name = f"exec_{function}"
        done, records = run_app(name, "exec", function)
        tally = tallies(done.stdout)
        app = [r for r in records if r.get("program") == "exec_app"]
        if not checks.check(len(tally) == 1 and app, f"{name}: the program said what it did ({done.stdout!r})"):
            continue
        writes, size, connections = tally[0]
        closes = of(app, "conn_close")
        by_exec = {kind: [r for r in closes if r.get("at_exec") == kind] for kind in ("closed", "inherited")}
        checks.check(len(closes) == connections, f"{name}: a conn_close for each of the {connections} connections "
                                                 f"({len(closes)})")
        checks.check(len(by_exec["closed"]) == 2 and not any(r["open_at_exit"] for r in by_exec["closed"]),
                     f"{name}: the two FD_CLOEXEC connections closed by the exec ({len(by_exec['closed'])})")
        checks.check(len(by_exec["inherited"]) == 2 and all(r["open_at_exit"] for r in by_exec["inherited"]),
                     f"{name}: the two others marked inherited, open ({len(by_exec['inherited'])})")
        checks.check(sum(r["writes"] for r in closes) == writes and sum(r["bytes"] for r in closes) == size,
                     f"{name}: their writes and bytes are the program's ({writes}, {size})")
        summaries = of(app, "summary")
        checks.check(len(summaries) == 1 and summaries[0].get("ended_by") == "exec" and app[-1] is summaries[0],
                     f"{name}: one summary, ended_by exec, the image's last record")
        for s in summaries:
            checks.check((s["connections"], s["writes"], s["bytes"], s["dropped_records"]) == (connections, writes, size, 0),
                         f"{name}: the summary counts them all ({s['connections']}, {s['writes']}, {s['bytes']})")
        true = [r for r in records if r.get("program") == "true"]
        inherited = [r for r in of(true, "conn_open") if r["phase"] == "inherited_connected"]
        checks.check(len(inherited) == 2 and len(of(true, "summary")) == 1 and true[0]["event"] == "start",
                     f"{name}: /bin/true adopts the two inherited connections and summarizes them ({len(inherited)})")
        checks.check(all(r["pid"] == app[0]["pid"] for r in true), f"{name}: in the same process")

    # A vfork() child's exec: the parent's worker and records are the parent's.
    done, records = run_app("vfork", "vfork")
    tally = tallies(done.stdout)
    app = [r for r in records if r.get("program") == "exec_app"]
    if checks.check(len(tally) == 2 and app, "vfork: the parent went on after the child's exec"):
        writes, size, connections = (sum(t[i] for t in tally) for i in range(3))
        checks.check(not any("at_exec" in r or "ended_by" in r for r in app),
                     "vfork: the child's exec flushed nothing of the parent's")
        closes = of(app, "conn_close")
        checks.check(len(closes) == connections and sum(r["writes"] for r in closes) == writes,
                     f"vfork: the parent's worker wrote every conn_close after it ({len(closes)} of {connections})")
        summaries = of(app, "summary")
        checks.check(len(summaries) == 1 and (summaries[0]["connections"], summaries[0]["writes"],
                                              summaries[0]["bytes"]) == (connections, writes, size),
                     "vfork: the parent's one summary counts everything")
        child = [r for r in records if r.get("program") == "true"]
        checks.check(child and child[0]["pid"] != app[0]["pid"] and len(of(child, "summary")) == 1,
                     "vfork: the program the child exec'd logs as itself")

    # An exec that cannot succeed: nothing flushed, one lifetime, errno as without the shim
    # (exec_app checks it: ENOENT, EACCES for fexecve of /dev/null).
    for function in FUNCTIONS:
        name = f"failed_{function}"
        done, records = run_app(name, "failed", function)
        tally = tallies(done.stdout)
        if not checks.check(len(tally) == 2 and records, f"{name}: the program went on after the failed exec"):
            continue
        writes, size, connections = (sum(t[i] for t in tally) for i in range(3))
        checks.check(len(lifetimes(records, records[0]["pid"])) == 1 and
                     not any("at_exec" in r or "ended_by" in r or "exec_failed" in r for r in records),
                     f"{name}: the records go on as if no exec had been tried")
        closes = of(records, "conn_close")
        summaries = of(records, "summary")
        checks.check(len(closes) == connections and sum(r["writes"] for r in closes) == writes,
                     f"{name}: a conn_close for each connection, every write ({len(closes)}, {connections})")
        checks.check(len(summaries) == 1 and (summaries[0]["connections"], summaries[0]["writes"],
                                              summaries[0]["bytes"]) == (connections, writes, size),
                     f"{name}: one summary of everything")

    # An exec that fails after the flush (the file is executable, in no format the kernel runs).
    not_a_program = os.path.join(args.work_dir, "not-a-program")
    with open(not_a_program, "w") as f:
        f.write("neither ELF nor a script\n")
    os.chmod(not_a_program, 0o755)
    done, records = run_app("noexec", "noexec", not_a_program)
    tally = tallies(done.stdout)
    if checks.check(len(tally) == 2 and records, "noexec: the program went on after ENOEXEC"):
        parts = lifetimes(records, records[0]["pid"])
        checks.check(len(parts) == 2 and "exec_failed" in parts[-1][0], "noexec: a new lifetime, its start naming "
                                                                        f"the failure ({parts[-1][0] if parts else None})")
        summaries = of(records, "summary")
        checks.check(len(summaries) == 2 and summaries[0].get("ended_by") == "exec" and "ended_by" not in summaries[1],
                     "noexec: the summary at the exec, then the one at exit")
        writes, size, connections = (sum(t[i] for t in tally) for i in range(3))
        checks.check(sum(s["writes"] for s in summaries) == writes and sum(s["bytes"] for s in summaries) == size,
                     f"noexec: every write counted once over the two ({[s['writes'] for s in summaries]}, {writes})")
        closes = of(records, "conn_close")
        checks.check(sum(r["writes"] for r in closes) == writes and
                     all(s["connections"] == len(of(part, "conn_close")) for part, s in zip(parts, summaries)),
                     "noexec: the conn_close records add up to each summary")

    # exec from inside a signal handler: it still execs (records still queued there are lost).
    done, records = run_app("signal", "signal")
    checks.check(any(r.get("program") == "true" and r["event"] == "summary" for r in records),
                 "signal: the exec from the handler ran /bin/true, which logs")
    checks.finish()


if __name__ == "__main__":
    main()
