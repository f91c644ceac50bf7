"""Trailer fields pass through the sidecar in both directions — an HTTP/2 client's to a chunked
HTTP/1.1 upstream, a chunked upstream's to HTTP/2 and HTTP/1.1 clients — under the rules for
forwarded trailers: nothing a head would have been stripped of, nothing that frames, routes,
authenticates or sets cookies (some servers fold trailers into the headers their app reads)."""
import json
import socket

from h2_support import H2Client


def test_an_h2_clients_trailers_reach_a_chunked_http11_upstream(sidecar):
    c = H2Client(sidecar.port)
    sid = c.start("POST", "/echo", [("x-request-id", "h2-trailers")], body=b"hello", end=False)
    c.send_trailers(sid, [("x-checksum", "abc123"), ("grpc-status", "0")])
    r = c.responses[sid]
    c.pump(until=lambda: r.ended or r.reset is not None or c.closed)
    assert r.status == 200 and r.ended, (r.status, r.reset)
    echo = json.loads(r.body)
    assert echo["framing"] == "chunked" and echo["body"] == "hello"
    assert echo["trailers"] == [["x-checksum", "abc123"], ["grpc-status", "0"]]
    c.close()


def test_trailers_cannot_carry_identity_credentials_or_framing(sidecar):
    """A forged identity field, a cookie or a second Host in a trailer section never reaches
    the upstream, over either protocol."""
    forged = [("x-auth-user-id", "admin"), ("X-Auth-Email", "a@b"), ("cookie", "s=1"), ("authorization", "Bearer x"),
              ("host", "evil.example"), ("content-length", "1"), ("x-forwarded-for", "1.2.3.4"),
              ("x-http-method-override", "DELETE"), ("x-ok", "1")]
    c = H2Client(sidecar.port)
    sid = c.start("POST", "/echo", body=b"x", end=False)
    c.send_trailers(sid, [(n.lower(), v) for n, v in forged])
    r = c.responses[sid]
    c.pump(until=lambda: r.ended or r.reset is not None or c.closed)
    assert r.status == 200, (r.status, r.reset)
    assert json.loads(r.body)["trailers"] == [["x-ok", "1"]]
    c.close()
    # HTTP/1.1 chunked request: the same section, the same result.
    section = "".join("%s: %s\r\n" % f for f in forged)
    raw = ("POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
           "1\r\nx\r\n0\r\n%s\r\n" % section).encode()
    with socket.create_connection(("127.0.0.1", sidecar.port), timeout=5) as s:
        s.sendall(raw)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head
    assert json.loads(body)["trailers"] == [["x-ok", "1"]]


def test_a_chunked_upstreams_trailers_reach_an_h2_client_after_the_body(sidecar):
    c = H2Client(sidecar.port)
    r = c.request("GET", "/chunked?n=3000&size=1000&trailers=x-digest:sha-256=abc|set-cookie:evil=1|grpc-message:ok")
    assert r.status == 200 and r.ended, (r.status, r.reset)
    assert len(r.body) == 3000
    assert r.trailers == [("x-digest", "sha-256=abc"), ("grpc-message", "ok")], r.trailers
    # Without trailers the stream ends with its last DATA frame, as before.
    plain = c.request("GET", "/chunked?n=10&size=4")
    assert plain.ended and plain.trailers == [] and len(plain.body) == 10
    c.close()


def test_a_chunked_upstreams_trailers_reach_an_http11_client(sidecar):
    with socket.create_connection(("127.0.0.1", sidecar.port), timeout=5) as s:
        s.sendall(b"GET /chunked?n=5&size=5&trailers=x-digest:abc|set-cookie:evil=1 HTTP/1.1\r\nHost: a\r\n"
                  b"Connection: close\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    assert b"transfer-encoding: chunked" in head.lower(), head
    assert body.endswith(b"0\r\nx-digest: abc\r\n\r\n"), body
    assert b"evil" not in body
