"""The committed nginx examples, run by a real nginx (README "Deploying next to nginx").

Examples/nginx-auth-request.conf: nginx proxies to the app and asks the sidecar's
`/.auth/check` about every request; a sign-in through nginx (emulator with
auto-approval) makes the app receive the identity headers, and nothing a client sends can.
Examples/nginx-in-front.conf: nginx terminates TLS in front of the sidecar; its
X-Forwarded-* are honoured only when `trusted_proxies` lists it.
"""
import json
import time
from urllib.parse import parse_qs, urlsplit

import pytest

import rawhttp
from conftest import free_port, merge, poll
from nginx_support import HTML, CookieClient, TLSConn, apple_form_post, start_nginx  # noqa: F401
from tls_support import TestCA

USER = "maria.ruiz@example.com"
IDENTITY = ("x-auth-user-id", "x-auth-email", "x-auth-email-verified", "x-auth-private-email",
            "x-auth-name")


def echoed(response):
    """{lower-case name: [values]} of the request the upstream received."""
    assert response.status == 200, (response.status, response.body[:500])
    headers = {}
    for name, value in json.loads(response.body)["headers"]:
        headers.setdefault(name.lower(), []).append(value)
    return headers


# -- auth_request ----------------------------------------------------------------------------
@pytest.fixture
def start_auth_request(upstream, start_sidecar, start_emulator, start_nginx):
    """start(overrides=None) -> (nginx, sidecar, emulator): nginx on its own port in front of
    the test upstream, the sidecar (public_url = nginx) deciding, the emulator auto-approving
    USER."""
    def start(overrides=None):
        port = free_port()
        public_url = "http://127.0.0.1:%d" % port
        emulator = start_emulator([public_url + "/.auth/callback"], ["--auto-approve", USER])
        sidecar = start_sidecar(merge({
            "public_url": public_url,
            "trusted_proxies": ["127.0.0.1/32"],
            "apple": {"base_url": emulator.issuer},
            "access": {"public_paths": []},
        }, overrides))
        nginx = start_nginx("nginx-auth-request.conf", {
            "127.0.0.1:8080": "127.0.0.1:%d" % sidecar.port,
            "127.0.0.1:3000": "127.0.0.1:%d" % upstream.port,
            "listen 80;": "listen 127.0.0.1:%d;" % port,
        }, port)
        return nginx, sidecar, emulator
    return start


@pytest.fixture
def auth_request(start_auth_request):
    return start_auth_request()


def sign_in(client, target, origin=None):
    """Browser steps through nginx: protected page → login → Apple → callback → back."""
    r = client.get(target)
    assert r.status == 302, (r.status, r.body[:300])
    login = urlsplit(r.header("Location"))
    assert login.path == "/.auth/login" and parse_qs(login.query)["rd"] == [target]
    r = client.get(login.path + "?" + login.query)
    assert r.status == 302, (r.status, r.body[:300])
    action, form = apple_form_post(r.header("Location"))
    assert action == (origin or "http://127.0.0.1:%d" % client.port) + "/.auth/callback"
    r = client.request("POST", "/.auth/callback", body=form)
    assert r.status == 303, (r.status, r.body[:500])
    assert r.header("Location") == target
    return r


def test_auth_request_without_a_session(auth_request, upstream):
    nginx, _, _ = auth_request
    client = CookieClient(nginx.port)
    r = client.get("/app/page?x=1")
    assert r.status == 302
    location = urlsplit(r.header("Location"))
    assert location.path == "/.auth/login"
    assert parse_qs(location.query) == {"rd": ["/app/page?x=1"]}
    r = client.get("/app/data", headers=[("Accept", "application/json"),
                                         ("X-Auth-User-Id", "forged")])
    assert r.status == 401
    assert r.json() == {"error": "unauthenticated", "login": "/.auth/login"}
    assert r.header("WWW-Authenticate") == 'Bearer realm="sidecar"'
    assert upstream.stats()["requests"] == 0, "the app was reached without a session"


def test_auth_request_sign_in_identity_and_sign_out(auth_request, upstream):
    nginx, sidecar, _ = auth_request
    client = CookieClient(nginx.port)
    sign_in(client, "/app/page?x=1")
    assert "__Host-sidecar" in client.jar, client.jar

    # The app gets the identity, never the client's copies (any case, underscore spelling).
    seen = echoed(client.get("/app/page?x=1", headers=[
        HTML, ("X-Auth-User-Id", "forged"), ("x-auth-email", "forged@evil.example"),
        ("X_Auth_User_Id", "forged"), ("X-Auth-Name", "forged"), ("X-Auth-Assertion", "forged")]))
    me = client.get("/.auth/me").json()
    assert seen["x-auth-user-id"] == [me["id"]] and me["id"]
    assert seen["x-auth-email"] == [USER] and me["email"] == USER
    assert seen["x-auth-email-verified"] == ["true"]
    assert seen["x-auth-private-email"] == ["false"]
    assert seen["x-auth-name"] == ["Maria%20Ruiz"]
    assert "x-auth-assertion" not in seen and "x_auth_user_id" not in seen
    assert all("forged" not in v for vs in seen.values() for v in vs), seen

    # Signing out through nginx ends it, also for a copy of the old cookie.
    old_jar = dict(client.jar)
    r = client.request("POST", "/.auth/logout?rd=/app/bye")
    assert r.status == 303 and r.header("Location") == "/app/bye"
    assert "__Host-sidecar" not in client.jar
    upstream.reset()
    assert client.get("/app/page?x=1").status == 302
    client.jar = old_jar
    assert client.get("/app/page?x=1").status == 302, "a signed-out session still works"
    assert upstream.stats()["requests"] == 0


def test_auth_request_passes_a_resealed_session_cookie_to_the_browser(start_auth_request):
    # Sessions carry whole seconds: one sealed at t is re-sealed from floor(t) + refresh_after
    # on, i.e. between refresh_after - 1 s and refresh_after after t (give or take the few ms
    # by which the sidecar's coarse wall clock lags).
    nginx, _, _ = start_auth_request({"session": {"refresh_after": "2s"}})
    client = CookieClient(nginx.port)
    started = time.monotonic()  # before the seal
    sign_in(client, "/app/page")
    r = client.get("/app/page")
    assert r.status == 200
    if time.monotonic() - started < 0.9:  # within refresh_after - 1 s of the seal (0.1 s spare)
        assert not r.header_all("Set-Cookie")
    before = client.jar["__Host-sidecar"]

    def resealed():
        r = client.get("/app/page")
        assert r.status == 200
        return r.header_all("Set-Cookie") and r
    # Re-sealed at most refresh_after (2 s) after the seal; +3 s covers a loaded 2-core machine.
    r = poll(resealed, timeout=5 - (time.monotonic() - started), step=0.2)
    assert r, "never re-sealed"
    assert [c.split("=", 1)[0] for c in r.header_all("Set-Cookie")] == ["__Host-sidecar"]
    assert client.jar["__Host-sidecar"] != before
    assert echoed(client.get("/app/page"))["x-auth-email"] == [USER]


def test_auth_request_applies_the_rules_to_the_request_nginx_asks_about(start_auth_request, upstream):
    """nginx sends the request's URI and method (X-Original-URI, X-Original-Method) from a
    trusted peer: /.auth/check decides it by the sidecar's rules, as if proxied itself."""
    nginx, sidecar, _ = start_auth_request({"rules": [
        {"path": "/app/admin/**", "allowed_emails": ["someone.else@example.com"]},
        {"path": "/app/open/**", "public": True},
        {"path": "/app/**", "methods": ["DELETE"], "deny": True},
    ]})
    anonymous = CookieClient(nginx.port)
    r = anonymous.get("/app/open/x")
    assert r.status == 200, "a public rule needs no session"
    assert not any(name.startswith("x-auth") for name in echoed(r)), echoed(r)
    assert anonymous.get("/app/page").status == 302
    client = CookieClient(nginx.port)
    sign_in(client, "/app/page")
    upstream.reset()
    assert client.get("/app/page").status == 200
    assert client.get("/app/admin/users").status == 403, "signed in, but not allowed by the rule"
    assert client.request("DELETE", "/app/page").status == 403
    assert client.get("/app/%61dmin/users").status == 403, "decided on the normalized path"
    assert upstream.stats()["targets"] == ["GET /app/page"], "only the allowed request reached the app"
    assert sidecar.logged(lambda out: '"reason":"email"' in out and '"rule":0' in out)



def test_auth_request_rules_hold_whatever_request_the_client_names(start_auth_request, upstream):
    """auth_request passes the client's headers on to the check: a client's own
    X-Forwarded-Uri or X-Forwarded-Method (read before X-Original-*) must not rename the
    request the rules decide."""
    nginx, _, _ = start_auth_request({"rules": [
        {"path": "/app/admin/**", "allowed_emails": ["someone.else@example.com"]},
        {"path": "/app/**", "methods": ["DELETE"], "deny": True},
    ]})
    client = CookieClient(nginx.port)
    sign_in(client, "/app/page")
    upstream.reset()
    assert client.get("/app/admin/users", headers=[HTML, ("X-Forwarded-Uri", "/app/page")]).status == 403
    assert client.request("DELETE", "/app/page", headers=[HTML, ("X-Forwarded-Method", "GET")]).status == 403
    assert upstream.stats()["requests"] == 0

def test_auth_request_public_location_strips_identity_headers(auth_request, upstream):
    nginx, _, _ = auth_request
    seen = echoed(rawhttp.request(nginx.port, "GET", "/public/page?x=1", [
        HTML, ("X-Auth-User-Id", "forged"), ("x-auth-email", "forged@evil.example"),
        ("X_Auth_Name", "forged"), ("X-Auth-Assertion", "forged")], timeout=10))
    assert not [n for n in seen if n.startswith(("x-auth", "x_auth"))], seen
    assert upstream.stats()["targets"] == ["GET /public/page?x=1"]


def test_auth_request_spoofed_identity_without_a_session_never_reaches_the_app(
        auth_request, upstream):
    nginx, _, _ = auth_request
    spoof = [("X-Auth-User-Id", "001234.forged"), ("X-Auth-Email", "ceo@example.com"),
             ("Cookie", "__Host-sidecar=not-a-session")]
    for accept in (HTML, ("Accept", "*/*")):
        r = rawhttp.request(nginx.port, "GET", "/app/admin", [accept] + spoof, timeout=10)
        assert r.status in (302, 401), (r.status, r.body[:300])
    assert upstream.stats()["requests"] == 0


# -- nginx in front ----------------------------------------------------------------------------
@pytest.fixture
def in_front(tmp_path, start_sidecar, start_nginx):
    """start(trusted_proxies, overrides=None) -> (nginx, TestCA): nginx terminating TLS in
    front of a sidecar (everything public unless overridden) in front of the test upstream."""
    ca = TestCA(tmp_path)
    leaf = ca.issue("nginx")

    def start(trusted_proxies, overrides=None, port=None):
        port, plain_port = port or free_port(), free_port()
        sidecar = start_sidecar(merge({"public_url": "https://127.0.0.1:%d" % port,
                                       "trusted_proxies": trusted_proxies}, overrides))
        nginx = start_nginx("nginx-in-front.conf", {
            "127.0.0.1:8080": "127.0.0.1:%d" % sidecar.port,
            "listen 443 ssl;": "listen 127.0.0.1:%d ssl;" % port,
            "listen 80;": "listen 127.0.0.1:%d;" % plain_port,
            "/etc/nginx/tls/app.example.com.pem": str(leaf.cert_file),
            "/etc/nginx/tls/app.example.com.key": str(leaf.key_file),
        }, port)
        nginx.plain_port = plain_port
        return nginx, ca
    return start


SPOOFED_FORWARDING = [("X-Forwarded-For", "203.0.113.7"), ("X-Forwarded-Proto", "http"),
                      ("X-Forwarded-Host", "evil.example")]


@pytest.mark.parametrize("trusted", [True, False], ids=["nginx-trusted", "nginx-untrusted"])
def test_in_front_forwarded_headers_honoured_only_from_a_trusted_proxy(in_front, trusted):
    nginx, ca = in_front(["127.0.0.1/32"] if trusted else [])
    with TLSConn(nginx.port, ca.client_context(), source="127.0.0.3") as conn:
        seen = echoed(conn.request("GET", "/echo?via=nginx", SPOOFED_FORWARDING,
                                   host="app.example.com"))
    if trusted:  # nginx's view (client 127.0.0.3, https), then the sidecar appends nginx
        assert seen["x-forwarded-for"] == ["127.0.0.3, 127.0.0.1"]
        assert seen["x-forwarded-proto"] == ["https"]
    else:  # replaced by what the sidecar sees itself: peer nginx over plain http
        assert seen["x-forwarded-for"] == ["127.0.0.1"]
        assert seen["x-forwarded-proto"] == ["http"]
    assert seen["x-forwarded-host"] == ["app.example.com"]
    assert "203.0.113.7" not in seen["x-forwarded-for"][0]


def test_in_front_redirects_http_and_passes_websockets(in_front):
    nginx, ca = in_front(["127.0.0.1/32"])
    r = rawhttp.request(nginx.plain_port, "GET", "/x?y=1", host="app.example.com", timeout=10)
    assert r.status == 301 and r.header("Location") == "https://app.example.com/x?y=1"
    with TLSConn(nginx.port, ca.client_context()) as conn:
        r = conn.request("GET", "/ws", [("Upgrade", "websocket"), ("Connection", "Upgrade"),
                                        ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
                                        ("Sec-WebSocket-Version", "13")], host="app.example.com")
        assert r.status == 101, (r.status, r.body[:300])
        assert r.header("Sec-WebSocket-Accept") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        for payload in (b"hello through nginx", b"x" * 70000):
            conn.send(rawhttp.ws_frame(0x1 if len(payload) < 100 else 0x2, payload))
            opcode, echoed_payload = rawhttp.ws_read_frame(conn)
            assert echoed_payload == payload
        conn.send(rawhttp.ws_frame(0x8, b"\x03\xe8"))
        assert rawhttp.ws_read_frame(conn)[0] == 0x8


def test_in_front_sign_in_over_https(in_front, start_emulator, upstream):
    """The recommended deployment end to end: browser ⇄ TLS nginx ⇄ sidecar ⇄ app."""
    port = free_port()
    origin = "https://127.0.0.1:%d" % port
    emulator = start_emulator([origin + "/.auth/callback"], ["--auto-approve", USER])
    nginx, ca = in_front(["127.0.0.1/32"], {"apple": {"base_url": emulator.issuer},
                                            "access": {"public_paths": []}}, port=port)
    client = CookieClient(port, connect=lambda: TLSConn(port, ca.client_context()))
    sign_in(client, "/app/page?x=1", origin=origin)
    seen = echoed(client.get("/app/page?x=1", headers=[HTML, ("X-Auth-User-Id", "forged")]))
    assert seen["x-auth-email"] == [USER]
    assert seen["x-auth-user-id"] == [client.get("/.auth/me").json()["id"]]
    assert seen["x-forwarded-proto"] == ["https"]
    r = client.request("POST", "/.auth/logout")
    assert r.status == 200 and "__Host-sidecar" not in client.jar  # the signed-out page
    assert client.get("/app/page?x=1").status == 302
