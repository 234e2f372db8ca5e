#!/usr/bin/env python3
"""keep_warm: heartbeats on idle connections, never inside the app's data.

A Python app (keep_warm_app.py) runs under the shim with reno, which, like cubic, restarts the
congestion window after idle; the test's own server (not preloaded) checks every frame byte
by byte and counts the newline heartbeats between frames. Checked: heartbeats arrive in idle
gaps and the log counts exactly as many; idle restarts vanish (the control without keep_warm
shows them, so the check can fail); nothing the app sends is split, lost or reordered, with
MSG_MORE, a message accepted in part, and three writer threads against a 10 ms heartbeat; no
heartbeat where none is needed (bbr); heartbeats stop after max_idle and resume after a write.
"""
import json
import os
import socket
import struct
import sys
import threading
import time

from testlib import SKIP, Checks, clean_env, run

PAUSE = 0xFFFFFFFF


def expected_body(sequence, length):
    body = bytes((sequence * 7 + i) & 0xFF for i in range(min(length, 256)))
    return (body * (length // 256 + 1))[:length]


class FrameServer:
    """Reads frames, checks each one, counts heartbeats per gap (gap k: before frame k)."""

    def __init__(self):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(1)
        self.port = self.listener.getsockname()[1]
        self.frames = 0
        self.heartbeats = {}
        self.error = None
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        conn, _ = self.listener.accept()
        buffer = bytearray()

        def need(n):
            while len(buffer) < n:
                chunk = conn.recv(1 << 20)
                if not chunk:
                    return False
                buffer.extend(chunk)
            return True

        while need(1):
            if buffer[0] == 0x0A:
                self.heartbeats[self.frames] = self.heartbeats.get(self.frames, 0) + 1
                del buffer[0]
                continue
            if not need(12):
                self.error = "stream ended inside a frame header"
                return
            magic, length, sequence = struct.unpack("<4sII", bytes(buffer[:12]))
            if magic != b"FRM1":
                self.error = f"bad frame header {bytes(buffer[:12])!r} after frame {self.frames}"
                return
            if sequence == PAUSE:
                del buffer[:12]
                time.sleep(0.5)
                continue
            if sequence != self.frames:
                self.error = f"frame {sequence} where {self.frames} was due"
                return
            if not need(12 + length):
                self.error = f"stream ended inside frame {sequence}"
                return
            if bytes(buffer[12:12 + length]) != expected_body(sequence, length):
                self.error = f"frame {sequence}'s bytes differ from what the app sent"
                return
            del buffer[:12 + length]
            self.frames += 1

    def total_heartbeats(self):
        return sum(self.heartbeats.values())


def gap_frames(app_output):
    """The frame each gap precedes, as the app reports them: heartbeats in gap k arrive just
    before it."""
    return [int(line.split()[3].rstrip(":")) for line in app_output.splitlines() if line.startswith("gap before frame")]


def windows_after_gaps(app_output):
    return [int(line.split()[-1]) for line in app_output.splitlines() if line.startswith("after the gap: cwnd")]


def restarted_windows(app_output):
    """Per gap, whether the first write after it found the window restarted. The kernel halves
    the window once per RTO of silence, down to the initial 10 segments (kernel-notes.md); a 1 s
    gap is several RTOs on loopback, so a restart at least halves it, and a window kept warm
    is not halved."""
    before = [int(line.split()[-1]) for line in app_output.splitlines() if line.startswith("gap before frame")]
    after = windows_after_gaps(app_output)
    return [a <= max(10, b // 2) for b, a in zip(before, after)]


def records(path):
    out = []
    for line in open(path).read().splitlines() if os.path.exists(path) else []:
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def main():
    sys.path.insert(0, os.path.dirname(__file__))
    import argparse
    parser = argparse.ArgumentParser()
    for name in ("--shim", "--probe", "--source-dir", "--work-dir"):
        parser.add_argument(name, required=True)
    args = parser.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    if open("/proc/sys/net/ipv4/tcp_slow_start_after_idle").read().strip() != "1":
        print("skip: tcp_slow_start_after_idle is 0 here, so there is no restart to prevent")
        sys.exit(SKIP)
    app = os.path.join(os.path.dirname(os.path.abspath(__file__)), "keep_warm_app.py")
    checks = Checks()

    def run_app(name, policy, *app_args, logged=True):
        policy_path = os.path.join(args.work_dir, name + ".toml")
        with open(policy_path, "w") as f:
            f.write("version = 1\n[defaults]\nnodelay = \"on\"\n" + policy)
        log = os.path.join(args.work_dir, name + ".jsonl")
        if os.path.exists(log):
            os.remove(log)
        server = FrameServer()
        env = clean_env(LD_PRELOAD=args.shim, TCPTUNE_POLICY=policy_path)
        if logged:
            env.update(TCPTUNE_LOG=log, TCPTUNE_LOG_FORMAT="jsonl")
        done = run([sys.executable, app, "--port", str(server.port), *app_args], env, timeout=120)
        server.thread.join(timeout=30)
        checks.check(done.returncode == 0, f"{name}: the app ran under the shim ({done.stderr.strip()[-300:]})")
        checks.check(server.error is None and not server.thread.is_alive(),
                     f"{name}: every frame arrived whole and in order ({server.error}, {server.frames} frames)")
        closes = [r for r in records(log) if r.get("event") == "conn_close" and r.get("role") == "client"]
        opens = [r for r in records(log) if r.get("event") == "conn_open" and r.get("role") == "client"]
        if logged:
            checks.check(len(closes) == 1 and len(opens) == 1, f"{name}: one conn_open and one conn_close for the client")
        keep_warm = [o for o in (opens[0]["options"] if opens else []) if o["name"] == "keep_warm"]
        return server, (closes[0] if closes else {}), (keep_warm[0] if keep_warm else None), done.stdout

    gaps = "1.0,1.0,1.0"
    # Control: reno without keep_warm restarts the window after each gap.
    server, close, option, out = run_app("control", 'congestion = "reno"\n', "--gaps", gaps)
    checks.check(server.total_heartbeats() == 0 and option is None, "control: no heartbeats without keep_warm")
    checks.check(close.get("idle_restarts", 0) >= 2, f"control: the window restarts after idle ({close.get('idle_restarts')})")
    checks.check(restarted_windows(out) == [True] * 3,
                 f"control: the first write after each gap finds the window restarted ({out.strip()})")

    # keep_warm: heartbeats in the gaps, counted exactly, and no restart.
    prom = os.path.join(args.work_dir, "warm.prom")
    if os.path.exists(prom):
        os.remove(prom)  # every run of a program adds to the file: start from this run's counts
    server, close, option, out = run_app("warm", 'congestion = "reno"\nkeep_warm = { heartbeat = "\\n" }\n'
                                         f'[log]\nprometheus_textfile = "{prom}"\n', "--gaps", gaps)
    checks.check(option is not None and option["effective"] == "on", f"warm: conn_open reports keep_warm on ({option})")
    gap_beats = [server.heartbeats.get(frame, 0) for frame in gap_frames(out)]
    checks.check(len(gap_beats) == 3 and all(b >= 4 for b in gap_beats),
                 f"warm: heartbeats in every 1 s gap (auto: half the RTO) {gap_beats} ({out.strip()})")
    checks.check(restarted_windows(out) == [False] * 3,
                 f"warm: the first write after each gap finds the window kept ({windows_after_gaps(out)})")
    checks.check(close.get("heartbeats") == server.total_heartbeats() and
                 close.get("heartbeat_bytes") == server.total_heartbeats(),
                 f"warm: conn_close counts the heartbeats the server received ({close.get('heartbeats')} vs "
                 f"{server.total_heartbeats()})")
    checks.check(close.get("idle_restarts") == 0, f"warm: no idle restart ({close.get('idle_restarts')})")
    counted = [line.split()[-1] for line in open(prom).read().splitlines()
               if line.startswith("tcptune_heartbeats_total{")] if os.path.exists(prom) else []
    checks.check(counted == [str(server.total_heartbeats())],
                 f"warm: the Prometheus textfile counts them too ({counted})")

    # Without a log there is nothing to measure, but the connection is kept warm all the same.
    server, _, _, out = run_app("unlogged", 'congestion = "reno"\nkeep_warm = { heartbeat = "\\n" }\n',
                                "--gaps", "1.0", logged=False)
    beats = [server.heartbeats.get(frame, 0) for frame in gap_frames(out)]
    checks.check(beats and beats[0] >= 4 and restarted_windows(out) == [False],
                 f"unlogged: heartbeats keep the window without a log ({beats}, {windows_after_gaps(out)})")

    # The awkward patterns against a 10 ms heartbeat: MSG_MORE, a message accepted in part, threads.
    server, close, option, out = run_app(
        "stress", 'congestion = "reno"\nkeep_warm = { heartbeat = "\\n", interval = "10ms" }\n',
        "--gaps", "0.5,0.5", "--more", "0.3", "--parts", "0.8", "--threads", "3", "--busy", "2")
    checks.check("non-blocking calls accepted" in out and "accepted 64000012" not in out,
                 f"stress: the large message was accepted in part ({out.strip()})")
    checks.check("drained inside it: True" in out,
                 "stress: everything was acknowledged while that message was unfinished (so only the gate held "
                 "heartbeats back)")
    checks.check(server.total_heartbeats() >= 10 and close.get("heartbeats") == server.total_heartbeats(),
                 f"stress: heartbeats flowed between the frames ({server.total_heartbeats()}, log {close.get('heartbeats')})")

    # Nothing to do: bbr does not restart after idle.
    available = open("/proc/sys/net/ipv4/tcp_available_congestion_control").read().split()
    if "bbr" in available:
        server, close, option, _ = run_app("bbr", 'congestion = "bbr"\nkeep_warm = { heartbeat = "\\n" }\n',
                                           "--gaps", "1.0")
        checks.check(option is not None and option["effective"] == "off" and "bbr" in option.get("note", ""),
                     f"bbr: conn_open says keep_warm is not needed ({option})")
        checks.check(server.total_heartbeats() == 0 and close.get("heartbeats") == 0, "bbr: no heartbeat sent")

    # max_idle: heartbeats stop 1 s into a 3 s gap, and resume once the app writes again.
    server, close, option, out = run_app(
        "max_idle", 'congestion = "reno"\nkeep_warm = { heartbeat = "\\n", interval = "100ms", max_idle = "1s" }\n',
        "--gaps", "3.0,0.6")
    frames = gap_frames(out) + [0, 0]
    first, second = server.heartbeats.get(frames[0], 0), server.heartbeats.get(frames[1], 0)
    checks.check(3 <= first <= 15, f"max_idle: about 1 s of heartbeats in a 3 s gap, not 3 s of them ({first})")
    checks.check(second >= 2, f"max_idle: heartbeats resume after the app wrote again ({second})")
    checks.finish()


if __name__ == "__main__":
    main()
