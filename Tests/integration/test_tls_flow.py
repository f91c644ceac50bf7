"""HTTPS flow control: TLS records leave the way plain output does (queued, sent by the loop,
several connections' records in one batched send), so what holds for plain HTTP must hold
over TLS too — a stalled reader holds no more than limits.response_buffer, pipelined requests
are answered in order, and many connections answered in the same loop iteration each get their
own bytes."""
import hashlib
import socket
import ssl
import threading
import time

from test_tls import TLSConn, ca, tls_site  # noqa: F401 (fixtures)
from upstream import pattern


def stalled_tls_reader(port, context, n):
    """A TLS client that asks for n bytes and reads nothing (a small receive buffer)."""
    raw = socket.socket()
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    raw.settimeout(20)
    raw.connect(("127.0.0.1", port))
    s = context.wrap_socket(raw, server_hostname="127.0.0.1")
    s.sendall(b"GET /bytes?n=%d HTTP/1.1\r\nHost: t\r\n\r\n" % n)
    return s


def read_whole_response(s, n):
    data = bytearray()
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        assert chunk, "closed before the head"
        data += chunk
    head, _, body = bytes(data).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head[:200]
    body = bytearray(body)
    while len(body) < n:
        chunk = s.recv(1 << 20)
        assert chunk, "closed after %d bytes" % len(body)
        body += chunk
    return bytes(body)


def test_a_stalled_tls_reader_holds_at_most_the_response_buffer(tls_site):
    sc, client, _ = tls_site({"limits": {"response_buffer": "64KiB"}})
    n = 4 << 20
    for _ in range(3):  # warm the allocator, the pools and OpenSSL's buffers
        with TLSConn(sc.port, client.context) as c:
            assert len(c.request("GET", "/bytes?n=%d" % n).body) == n
    time.sleep(0.3)
    before = sc.rss_kib()
    readers = [stalled_tls_reader(sc.port, client.context, n) for _ in range(100)]
    # Each exchange fills what it may hold and pauses its upstream; measured early (a slow
    # machine) the growth is smaller, never larger.
    time.sleep(2.5)
    held = sc.rss_kib() - before
    # 100 × (64 KiB of plaintext + the records made of it, 16 KiB each at most past the bound)
    # plus per-connection TLS state: without the bound this would be 100 × 4 MiB.
    assert held < 100 * (64 + 96) + 12 * 1024, "100 stalled TLS readers grew RSS by %d KiB" % held
    for s in readers[:3]:  # each response still completes whole once its client reads
        body = read_whole_response(s, n)
        assert hashlib.sha256(body).digest() == hashlib.sha256(pattern(0, n)).digest()
    for s in readers:
        s.close()


def test_pipelined_requests_in_one_record_are_answered_in_order(tls_site):
    sc, client, _ = tls_site()
    with TLSConn(sc.port, client.context) as c:
        c.send(b"".join(b"GET /bytes?n=%d HTTP/1.1\r\nHost: t\r\n\r\n" % (1000 + i) for i in range(5)))
        for i in range(5):
            r = c.read_response()
            assert r.status == 200 and len(r.body) == 1000 + i, (i, r.status, len(r.body))
        assert c.request("GET", "/pub/x").status == 200


def test_many_tls_connections_answered_together_each_get_their_own_bytes(tls_site):
    sc, client, _ = tls_site()
    failures = []
    start = threading.Barrier(24)

    def worker(index):
        try:
            with TLSConn(sc.port, client.context) as c:
                start.wait(timeout=20)
                for round_ in range(20):
                    n = 100 + index * 37 + round_
                    r = c.request("GET", "/bytes?n=%d" % n)
                    if r.status != 200 or bytes(r.body) != pattern(0, n):
                        failures.append((index, round_, r.status, len(r.body)))
                        return
        except (OSError, ssl.SSLError, threading.BrokenBarrierError) as error:
            failures.append((index, repr(error)))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not failures, failures[:5]
    assert sc.proc.poll() is None
