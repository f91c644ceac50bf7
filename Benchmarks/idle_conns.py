#!/usr/bin/env python3
"""Opens N keep-alive connections to 127.0.0.1:PORT, completes one request on each, and
holds them idle; prints `ready N` once all are open, then waits until stdin closes.

Usage: idle_conns.py PORT [N] [PATH] [plain|tls|h2] [HEADER: VALUE]
  plain: HTTP/1.1 (the default); tls: HTTP/1.1 over TLS (ALPN http/1.1); h2: HTTP/2 over TLS
  (ALPN h2). Certificates are not verified: the server is the benchmark's own.
"""
import socket
import ssl
import sys


def tls_socket(port, alpn):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols([alpn])
    s = context.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10))
    if s.selected_alpn_protocol() != alpn:
        sys.exit("ALPN chose %r, not %s" % (s.selected_alpn_protocol(), alpn))
    return s


def http1(s, path, extra):
    s.sendall(("GET %s HTTP/1.1\r\nHost: bench.local\r\n%s\r\n" % (path, "".join(h + "\r\n" for h in extra))).encode())


def http1_answered(s):
    data = b""
    while b"\r\n\r\n" not in data:  # one complete response head is enough to know it arrived
        chunk = s.recv(65536)
        if not chunk:
            sys.exit("connection closed before a response")
        data += chunk
    if not data.startswith(b"HTTP/1.1 200"):
        sys.exit("unexpected response: %r" % data[:80])


def h2_request(s, path, extra):
    import h2.config
    import h2.connection
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    fields = [(":method", "GET"), (":path", path), (":scheme", "https"), (":authority", "bench.local")]
    fields += [(name.strip().lower(), value.strip()) for name, value in (h.split(":", 1) for h in extra)]
    conn.send_headers(1, fields, end_stream=True)
    s.sendall(conn.data_to_send())
    return conn


def h2_answered(s, conn):
    import h2.events
    while True:
        chunk = s.recv(65536)
        if not chunk:
            sys.exit("connection closed before a response")
        for event in conn.receive_data(chunk):
            if isinstance(event, h2.events.ResponseReceived):
                status = dict(event.headers).get(b":status")
                if status != b"200":
                    sys.exit("unexpected status %r" % status)
            if isinstance(event, h2.events.StreamEnded):
                s.sendall(conn.data_to_send())
                return
        data = conn.data_to_send()
        if data:
            s.sendall(data)


def main():
    port = int(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    path = sys.argv[3] if len(sys.argv) > 3 else "/"
    mode = sys.argv[4] if len(sys.argv) > 4 else "plain"
    extra = sys.argv[5:]
    conns = []
    for _ in range(n):
        if mode == "plain":
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
        else:
            s = tls_socket(port, "h2" if mode == "h2" else "http/1.1")
        conns.append((s, h2_request(s, path, extra) if mode == "h2" else http1(s, path, extra)))
    for s, conn in conns:
        if mode == "h2":
            h2_answered(s, conn)
        else:
            http1_answered(s)
    print("ready %d" % len(conns), flush=True)
    sys.stdin.read()


if __name__ == "__main__":
    main()
