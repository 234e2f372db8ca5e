"""Real programs under the shim: a python3 client and server checked from inside
(getsockopt) and from outside (ss -tmi), and curl against a local HTTP server."""
import os
import re
import shutil
import socket
import subprocess
import sys
import time

from testlib import Checks, clean_env, parse_args, run, SKIP

SERVER = r"""
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.bind(("127.0.0.1", 0)); s.listen(4)
print(s.getsockname()[1], flush=True)
c, _ = s.accept()
print("server_nodelay", c.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY), flush=True)
data = b""
while len(data) < 5:
    data += c.recv(100)
c.sendall(data.upper())
time.sleep(float(sys.argv[1]))
"""

CLIENT = r"""
import socket, sys, time
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
c.sendall(b"hello")
reply = c.recv(100)
print("reply", reply.decode(), flush=True)
print("client_nodelay", c.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY), flush=True)
print("client_congestion", c.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\0").decode(), flush=True)
print("local_port", c.getsockname()[1], flush=True)
time.sleep(float(sys.argv[2]))
"""

POLICY = """
[defaults]
nodelay = "on"
[[rule]]
name = "python clients"
match = { role = "client", program = "python3*" }
congestion = "reno"
buffers = { rcvbuf = "32KiB" }
[[rule]]
name = "curl"
match = { program = "curl" }
keepalive = { idle = "7s", interval = "3s", count = 2 }
user_timeout = "15s"
"""


def ss_line(local_port):
    out = subprocess.run(["ss", "-tmi", "-n", "state", "established", f"( sport = :{local_port} )"],
                         capture_output=True, text=True).stdout
    return " ".join(out.split("\n")[1:])


def python_pair(args, checks, policy_path):
    env = clean_env(LD_PRELOAD=args.shim, TCPTUNE_POLICY=policy_path,
                    TCPTUNE_LOG=os.path.join(args.work_dir, "python.log"), TCPTUNE_LOG_LEVEL="debug",
                    TCPTUNE_LOG_FORMAT="text")
    server = subprocess.Popen([sys.executable, "-c", SERVER, "3"], env=env, stdout=subprocess.PIPE, text=True)
    port = int(server.stdout.readline())
    client = subprocess.Popen([sys.executable, "-c", CLIENT, str(port), "2"], env=env, stdout=subprocess.PIPE,
                              text=True)
    seen = {}
    for _ in range(4):
        key, value = client.stdout.readline().split(" ", 1)
        seen[key] = value.strip()
    seen["server_nodelay"] = server.stdout.readline().split()[1]
    outside = ss_line(seen["local_port"])
    client.wait(timeout=30)
    server.wait(timeout=30)
    checks.check(seen["reply"] == "HELLO", "python3 request/reply intact under the shim")
    checks.check(seen["client_nodelay"] != "0", "python3 client: TCP_NODELAY on (inside)")
    checks.check(seen["server_nodelay"] != "0", "python3 accepted socket: TCP_NODELAY on (inside)")
    checks.check(seen["client_congestion"] == "reno", f"python3 client: congestion reno (inside: {seen['client_congestion']})")
    checks.check(" reno " in f" {outside} ", f"ss shows reno for the client connection ({outside[:200]})")
    wscale = re.search(r"wscale:(\d+),(\d+)", outside)
    checks.check(wscale is not None and int(wscale.group(2)) <= 2,
                 f"ss shows a small receive window scale after the 32KiB rcvbuf ({wscale.group(0) if wscale else None})")
    rb = re.search(r"skmem:\(r\d+,rb(\d+)", outside)
    checks.check(rb is not None and int(rb.group(1)) == 65536, f"ss shows rb65536 (2 x 32KiB) ({rb.group(0) if rb else None})")


def python_control(args, checks):
    env = clean_env()
    server = subprocess.Popen([sys.executable, "-c", SERVER, "1"], env=env, stdout=subprocess.PIPE, text=True)
    port = int(server.stdout.readline())
    client = run([sys.executable, "-c", CLIENT, str(port), "0"], env)
    server.wait(timeout=30)
    checks.check("client_nodelay 0" in client.stdout, "control: python3 without the shim has TCP_NODELAY off")


def curl(args, checks, policy_path):
    if shutil.which("curl") is None:
        print("curl missing: curl checks skipped")
        return
    web_root = os.path.join(args.work_dir, "www")
    os.makedirs(web_root, exist_ok=True)
    body = os.urandom(200000)
    with open(os.path.join(web_root, "blob"), "wb") as f:
        f.write(body)
    log = os.path.join(args.work_dir, "curl.log")
    if os.path.exists(log):
        os.remove(log)
    env = clean_env(LD_PRELOAD=args.shim, TCPTUNE_POLICY=policy_path, TCPTUNE_LOG=log, TCPTUNE_LOG_LEVEL="debug",
                    TCPTUNE_LOG_FORMAT="text")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
                              cwd=web_root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        fetched = None
        for _ in range(50):
            result = subprocess.run(["curl", "-sS", "--max-time", "10", f"http://127.0.0.1:{port}/blob"],
                                    env=env, capture_output=True, timeout=30)
            if result.returncode == 0:
                fetched = result.stdout
                break
            time.sleep(0.1)
        checks.check(fetched == body, "curl fetches 200 kB intact through the shim")
    finally:
        server.terminate()
        server.wait(timeout=10)
    text = open(log, encoding="utf-8").read() if os.path.exists(log) else ""
    curl_lines = [l for l in text.splitlines() if "conn_open" in l and 'rule=curl' in l and "role=client" in l]
    checks.check(bool(curl_lines), "log: curl's connection matched rule 'curl'")
    checks.check(any('user_timeout requested="15000ms" effective="15000"' in l for l in curl_lines),
                 "log: user_timeout requested and effective for curl")
    # curl turns SO_KEEPALIVE on itself before connecting: the policy leaves the app's choice alone.
    checks.check(any('keepalive requested="7 s" effective="1" note="the app set it itself; left alone"' in l
                     for l in curl_lines), "log: curl's own keepalive is left alone and said so")
    server_lines = [l for l in text.splitlines() if "conn_open" in l and "role=server" in l]
    checks.check(bool(server_lines), "log: the python http.server's accepted connection is logged")


def main():
    args = parse_args()
    if shutil.which("ss") is None:
        print("skipped: ss (iproute2) missing")
        raise SystemExit(SKIP)
    checks = Checks()
    policy_path = os.path.join(args.work_dir, "policy.toml")
    with open(policy_path, "w", encoding="utf-8") as f:
        f.write(POLICY)
    python_control(args, checks)
    python_pair(args, checks, policy_path)
    curl(args, checks, policy_path)
    checks.finish()


if __name__ == "__main__":
    main()
