#!/usr/bin/env python3
"""Opens N keep-alive connections to 127.0.0.1:PORT, completes one request on each, and
holds them idle; prints `ready N` once all are open, then waits until stdin closes.

Usage: idle_conns.py PORT [N] [PATH]
"""
import socket
import sys


def main():
    port = int(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    path = sys.argv[3] if len(sys.argv) > 3 else "/"
    request = ("GET %s HTTP/1.1\r\nHost: bench.local\r\n\r\n" % path).encode()
    conns = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(request)
        conns.append(s)
    for s in conns:  # one complete response each (its head is enough to know it arrived)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                sys.exit("connection closed before a response")
            data += chunk
        if not data.startswith(b"HTTP/1.1 200"):
            sys.exit("unexpected response: %r" % data[:80])
    print("ready %d" % len(conns), flush=True)
    sys.stdin.read()


if __name__ == "__main__":
    main()
