"""Loopback ports for the bench runners that start a receiver and then connect to it."""
import socket


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port):
    """Whether a socket listens on `port` (/proc/net/tcp, state 0A), without connecting to it:
    the receivers accept one connection."""
    with open("/proc/net/tcp", encoding="ascii") as table:
        for line in table.readlines()[1:]:
            fields = line.split()
            if fields[1].endswith(f":{port:04X}") and fields[3] == "0A":
                return True
    return False
