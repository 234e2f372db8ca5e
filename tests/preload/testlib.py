"""Small helpers shared by the Python-driven preload tests."""
import argparse
import json
import os
import subprocess
import sys

SKIP = 77


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shim", required=True)
    parser.add_argument("--probe", required=True)
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--work-dir", required=True)
    args = parser.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    return args


class Checks:
    def __init__(self):
        self.failed = 0
        self.passed = 0

    def check(self, ok, what):
        print(("ok   " if ok else "FAIL ") + what, flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        return ok

    def finish(self):
        print(f"{self.passed} passed, {self.failed} failed")
        sys.exit(0 if self.failed == 0 and self.passed > 0 else 1)


def clean_env(**extra):
    """The environment without any tcptune variable, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TCPTUNE_") and k != "LD_PRELOAD"}
    env.update({k: str(v) for k, v in extra.items()})
    return env


def records(path):
    """The JSON objects of a jsonl log, in order; lines that are not JSON are left out."""
    out = []
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    return out


def run(cmd, env, timeout=60, **kwargs):
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, **kwargs)
