"""The admin listener (`admin.listen`): health, readiness and metrics for probes and scrapers,
one request per connection, strict heads, bounded in size, time and connections."""
import socket
import time

import rawhttp
from conftest import poll


def test_each_endpoint_answers_once_and_closes(start_sidecar):
    sc = start_sidecar()
    # Ready once the Apple keys are fetched, a moment after /healthz first answers (on a busy
    # machine, a moment long enough to be seen): this test is about the answers' form.
    assert poll(lambda: rawhttp.request(sc.admin_port, "GET", "/readyz", timeout=5).status == 200)
    for target, status, body in (("/healthz", 200, b"ok\n"), ("/readyz", 200, b"ready\n"), ("/nope", 404, b"not found\n")):
        with rawhttp.Conn(sc.admin_port, timeout=5) as c:
            r = c.request("GET", target)
            assert (r.status, bytes(r.body)) == (status, body), (target, r.status, r.body)
            assert r.header("Connection") == "close" and r.header("Cache-Control") == "no-store", target
            assert c.wait_closed(5), target  # one request per connection
    r = rawhttp.request(sc.admin_port, "GET", "/metrics", timeout=5)
    assert r.status == 200 and r.header("Content-Type").startswith("text/plain; version=0.0.4")
    assert b"\nsidecar_requests_total{" in r.body or r.body.startswith(b"sidecar_requests_total{"), r.body[:500]


def test_head_has_no_body_and_other_methods_get_405(start_sidecar):
    sc = start_sidecar()
    r = rawhttp.request(sc.admin_port, "HEAD", "/healthz", timeout=5)
    assert r.status == 200 and r.header("Content-Length") == "3" and bytes(r.body) == b""
    for method, body in (("POST", b""), ("POST", b"x=1"), ("DELETE", b"")):
        r = rawhttp.request(sc.admin_port, method, "/healthz", body=body, timeout=5)
        assert r.status == 405, (method, body, r.status)


def test_malformed_oversized_and_slow_requests_are_refused(start_sidecar):
    sc = start_sidecar()
    response, closed = rawhttp.send_raw(sc.admin_port, b"GET /healthz HTTP/1.1\r\nHost: a\nX: y\r\n\r\n")
    assert response is not None and response.status == 400 and closed
    response, closed = rawhttp.send_raw(
        sc.admin_port, b"GET /healthz HTTP/1.1\r\nHost: a\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n")
    assert response is not None and response.status == 431 and closed
    r = rawhttp.request(sc.admin_port, "POST", "/healthz", body=b"a" * 8192, timeout=5)
    assert r.status == 413
    # A connection that sends part of a head is closed within the 10 s deadline (+3 s of noise).
    s = socket.create_connection(("127.0.0.1", sc.admin_port), timeout=15)
    s.sendall(b"GET /healthz HTTP/1.1\r\n")
    started = time.monotonic()
    data = s.recv(4096)
    while data and b"\r\n\r\n" not in data:
        more = s.recv(4096)
        if not more:
            break
        data += more
    assert time.monotonic() - started < 13
    s.close()
    assert rawhttp.request(sc.admin_port, "GET", "/healthz", timeout=5).status == 200
