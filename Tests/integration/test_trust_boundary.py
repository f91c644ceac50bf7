"""What an unauthenticated client could still make the sidecar forward, hold or store, against the real binary over real sockets:
the sidecar's own bearer tokens, upgrades other than WebSocket (h2c smuggling), `..;` path
parameters, forwarding fields from untrusted peers, and large bodies sent to its endpoints."""
import socket
import threading
import time

import pytest

import rawhttp
from conftest import free_port, poll, seen

JSON = ("Accept", "application/json")


def raw(port, data, timeout=5.0):
    resp, closed = rawhttp.send_raw(port, data, timeout=timeout)
    assert resp is not None, "no answer to %r" % data[:60]
    return resp, closed


# -- the sidecar's bearer tokens never reach the upstream --------------------------------------
def test_a_session_bearer_token_is_removed_on_public_paths_in_any_spelling(signed_in):
    """A bearer session token is removed from every forwarded request, public
    paths included; other Authorization values pass unchanged."""
    sc, _, b = signed_in
    _, token = b.session_cookie
    for scheme in ("Bearer ", "bearer ", "BEARER ", "Bearer   "):
        e = sc.request("GET", "/pub/x", [("Authorization", scheme + token)]).json()
        assert seen(e, "Authorization") == [], (scheme, e["headers"])
        assert seen(e, "X-Auth-User-Id") == []  # a public path decides without a session
    for other in ("Bearer upstream-token", "Basic dXNlcjpwYXNz", "Bearer " + token[:-4] + "AAAA"):
        e = sc.request("GET", "/pub/x", [("Authorization", other)]).json()
        assert seen(e, "Authorization") == [other]


def test_a_revoked_bearer_token_next_to_a_cookie_session_is_not_forwarded(signed_in, browser):
    """A protected request decided by its cookie session must not carry a revoked (or
    otherwise refused) token of the sidecar's to the upstream."""
    sc, apple, b = signed_in
    revoked = b.session_cookie[1]
    assert b.request("POST", "/.auth/logout", [JSON], jar=True).status in (200, 204, 303)
    other = browser(sc, apple)
    assert other.login(email="john.appleseed@example.com")[0].status == 303
    e = other.request("GET", "/api/x", [JSON, ("Authorization", "Bearer " + revoked)]).json()
    assert seen(e, "X-Auth-Email") == ["john.appleseed@example.com"], e["headers"]
    assert seen(e, "Authorization") == [], e["headers"]


# -- upgrades ------------------------------------------------------------------------------------
H2C = (b"Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
       b"HTTP2-Settings: AAMAAABkAAQAAP__\r\n")


@pytest.mark.parametrize("upgrade", [H2C, b"Connection: Upgrade\r\nUpgrade: TLS/1.2\r\n",
                                     b"Connection: Upgrade\r\nUpgrade: websocket, h2c\r\n"])
def test_an_upgrade_other_than_websocket_is_forwarded_as_a_plain_request(sidecar, upgrade):
    resp, _ = raw(sidecar.port, b"GET /echo HTTP/1.1\r\nHost: x\r\n" + upgrade + b"Connection: close\r\n\r\n")
    assert resp.status == 200
    e = resp.json()
    for name in ("Upgrade", "HTTP2-Settings", "Connection"):
        assert seen(e, name) == [], (name, e["headers"])


class SwitchingUpstream:
    """An upstream that answers every request `101 Switching Protocols` to `protocol` and
    then records whatever else arrives on the connection."""

    def __init__(self, protocol):
        self.protocol = protocol
        self.received = bytearray()
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()

    def handle(self, conn):
        with conn:
            conn.settimeout(10)
            head = bytearray()
            try:
                while b"\r\n\r\n" not in head:
                    chunk = conn.recv(4096)
                    if not chunk:
                        return
                    head += chunk
                self.received += head
                conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: "
                             + self.protocol + b"\r\n\r\n")
                while True:
                    chunk = conn.recv(4096)
                    if not chunk:
                        return
                    self.received += chunk
            except OSError:
                return

    def close(self):
        self.server.close()


@pytest.mark.parametrize("asked", [H2C, b"Connection: Upgrade\r\nUpgrade: websocket\r\n"
                                   b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n", b""])
def test_a_101_to_another_protocol_than_asked_is_a_502_and_nothing_after_it_reaches_the_upstream(
        start_sidecar, asked):
    """An upstream (or a request smuggled to it) that switches to h2c must not get a tunnel:
    the 101 becomes a 502, the connection closes, and a request the client sends next never
    reaches the upstream."""
    upstream = SwitchingUpstream(b"h2c")
    try:
        sc = start_sidecar({"upstream": "http://127.0.0.1:%d" % upstream.port})
        with rawhttp.Conn(sc.port, timeout=5) as c:
            c.send(b"GET /x HTTP/1.1\r\nHost: x\r\n" + asked + b"\r\n")
            resp = c.read_response()
            assert resp.status == 502, resp.status
            try:
                c.send(b"GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n")
            except OSError:
                pass
            assert c.wait_closed(5), "the connection stayed open after the refused switch"
        time.sleep(0.3)
        assert b"/smuggled" not in bytes(upstream.received), bytes(upstream.received)
    finally:
        upstream.close()


# -- path parameters ------------------------------------------------------------------------------
@pytest.mark.parametrize("target", ["/pub/..;/private", "/pub/..;jsessionid=1/private", "/pub/.;/x",
                                    "/pub/%2e%2e;/private", "/pub/%2E.;a=b/private", "/..;/pub/x"])
def test_a_dot_segment_with_path_parameters_is_refused_before_any_decision(start_auth_sidecar, upstream, target):
    """Tomcat, Jetty and Spring cut `;parameters` before resolving dot segments, so
    `/pub/..;/private` is `/private` to them: 400, and nothing is forwarded."""
    sc, _ = start_auth_sidecar()
    upstream.reset()
    resp, _ = raw(sc.port, b"GET " + target.encode() + b" HTTP/1.1\r\nHost: x\r\nAccept: application/json\r\n"
                  b"Connection: close\r\n\r\n")
    assert resp.status == 400, (target, resp.status)
    assert upstream.stats()["requests"] == 0


# -- forwarding fields ---------------------------------------------------------------------------
FORWARDING = [("Forwarded", "for=1.2.3.4;proto=https;host=evil"), ("X-Real-IP", "1.2.3.4"),
              ("X-Original-URL", "/admin"), ("X-Rewrite-URL", "/admin"), ("X-Forwarded-Port", "443"),
              ("X-Forwarded-Prefix", "/admin"), ("X-Forwarded-Server", "evil"), ("X-Forwarded-Scheme", "https"),
              ("X-Forwarded-Ssl", "on"), ("X-Host", "evil"), ("X-Client-IP", "1.2.3.4"),
              ("True-Client-IP", "1.2.3.4"), ("X_Real_IP", "1.2.3.4")]


def test_forwarding_fields_from_an_untrusted_peer_are_removed(start_sidecar):
    sc = start_sidecar()
    e = sc.request("GET", "/echo", FORWARDING).json()
    for name, _ in FORWARDING:
        assert seen(e, name) == [], (name, e["headers"])


def test_forwarding_fields_from_a_trusted_proxy_pass(start_sidecar):
    sc = start_sidecar({"trusted_proxies": ["127.0.0.1/32"]})
    e = sc.request("GET", "/echo", FORWARDING).json()
    for name, value in FORWARDING:
        assert value in seen(e, name.replace("_", "-")), (name, e["headers"])


# -- bodies of the sidecar's own endpoints --------------------------------------------------------
@pytest.mark.parametrize("endpoint", ["/.auth/callback", "/.auth/native", "/.auth/apple/notifications"])
def test_a_declared_body_over_the_endpoint_cap_is_413_before_any_of_it_is_read(start_auth_sidecar, endpoint):
    """`limits.max_body_bytes` [64KiB], each endpoint capping lower: the answer comes
    although the client has sent none of its 60 KiB."""
    sc, _ = start_auth_sidecar()
    with rawhttp.Conn(sc.port, timeout=5) as c:
        c.send(b"POST " + endpoint.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               b"Content-Length: 61440\r\n\r\n")
        resp = c.read_response()
        assert resp.status == 413, resp.status


def test_an_endpoint_that_takes_no_body_reads_none_and_closes(signed_in):
    """`/.auth/me` answers without reading a body sent to it, and closes: the unread bytes
    are never parsed as a next request."""
    sc, _, b = signed_in
    smuggled = b"GET /pub/smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
    cookie = "; ".join("%s=%s" % (n, v) for n, (v, _) in b.jar.items())
    resp, closed = raw(sc.port, b"GET /.auth/me HTTP/1.1\r\nHost: x\r\nCookie: " + cookie.encode()
                       + b"\r\nContent-Length: %d\r\n\r\n" % len(smuggled) + smuggled)
    assert resp.status == 200 and closed


def test_clients_stalling_on_endpoint_bodies_hold_bounded_memory_that_comes_back(start_auth_sidecar):
    """200 clients each send most of a 60 KiB body to the callback (chunked: nothing declared)
    and stall. The sidecar holds at most each endpoint's cap per client: RSS grows by no more
    than 200 x 64 KiB + 24 MB, and comes back when they go."""
    sc, _ = start_auth_sidecar({"limits": {"header_timeout": "60s"}})
    before = sc.rss_kib()
    piece = b"f" * 4096
    conns = []
    try:
        for _ in range(200):
            c = rawhttp.Conn(sc.port, timeout=5)
            conns.append(c)
            c.send(b"POST /.auth/callback HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                   b"Transfer-Encoding: chunked\r\n\r\n")
            try:
                for _ in range(15):  # 60 KiB in 4 KiB chunks, until the sidecar refuses
                    c.send(b"1000\r\n" + piece + b"\r\n")
            except OSError:
                pass
        time.sleep(1.0)
        peak = sc.rss_kib()
        assert peak - before <= 200 * 64 + 24 * 1024, (before, peak)
    finally:
        for c in conns:
            c.close()
    settled = poll(lambda: sc.rss_kib() - before <= 8 * 1024, timeout=10)
    assert settled, (before, peak, sc.rss_kib())
