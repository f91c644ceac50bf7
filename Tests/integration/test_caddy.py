"""Examples/caddy/Caddyfile, run by a real Caddy: Caddy proxies to the app
and asks the sidecar's `/.auth/check` about every request; a browser sign-in through
Caddy (emulator with auto-approval) makes the app receive the identity headers, and nothing a
client sends can."""
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


@pytest.fixture
def caddy_site(request, upstream, start_sidecar, start_emulator, tmp_path):
    """(Caddy's port, sidecar); `indirect` parametrization passes sidecar config overrides."""
    caddy = shutil.which("caddy")
    if caddy is None:
        if os.environ.get("CI"):
            pytest.fail("caddy is not installed (the test command installs it)")
        pytest.skip("caddy not installed")
    port = free_port()
    public_url = "http://127.0.0.1:%d" % port
    emulator = start_emulator([public_url + "/.auth/callback"], ["--auto-approve", USER])
    sidecar = start_sidecar(merge({"public_url": public_url, "trusted_proxies": ["127.0.0.1/32"],
                                   "apple": {"base_url": emulator.issuer}, "access": {"public_paths": []}},
                                  getattr(request, "param", None)))
    text = (ROOT / "Examples" / "caddy" / "Caddyfile").read_text()
    text = place_ports(text, {"8080": sidecar.port, "3000": upstream.port})
    text = text.replace("\n:80 {", "\n:%d {" % port)
    conf = tmp_path / "Caddyfile"
    conf.write_text(text)
    log = open(tmp_path / "caddy.log", "wb")
    proc = subprocess.Popen([caddy, "run", "--adapter", "caddyfile", "--config", str(conf)],
                            stdout=log, stderr=log, stdin=subprocess.DEVNULL, cwd=tmp_path,
                            env=dict(os.environ, HOME=str(tmp_path), XDG_DATA_HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path)))
    deadline = time.monotonic() + 15
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail("caddy did not start:\n" + (tmp_path / "caddy.log").read_text())
            time.sleep(0.05)
    yield port, sidecar
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()



def test_caddy_forward_auth_without_a_session(caddy_site, upstream):
    port, _ = caddy_site
    client = CookieClient(port)
    r = client.get("/app/page")
    assert r.status == 302, (r.status, r.body[:300])
    location = urlsplit(r.header("Location"))
    assert location.path == "/.auth/login" and parse_qs(location.query) == {"rd": ["/app/page"]}
    r = client.get("/app/data", headers=[("Accept", "application/json"), ("X-Auth-User-Id", "forged")])
    assert r.status == 401 and r.json()["error"] == "unauthenticated"
    assert upstream.stats()["requests"] == 0, "the app was reached without a session"


def signed_in_through_caddy(port):
    client = CookieClient(port)
    r = client.get("/app/page")
    login = urlsplit(r.header("Location"))
    r = client.get(login.path + "?" + login.query)
    assert r.status == 302, (r.status, r.body[:300])
    action, form = apple_form_post(r.header("Location"))
    assert action == "http://127.0.0.1:%d/.auth/callback" % port
    r = client.request("POST", "/.auth/callback", body=form)
    assert r.status == 303 and r.header("Location") == "/app/page", (r.status, r.body[:300])
    return client


def test_caddy_forward_auth_sign_in_identity_and_sign_out(caddy_site, upstream):
    port, _ = caddy_site
    client = signed_in_through_caddy(port)

    seen = echoed(client.get("/app/page", headers=[
        HTML, ("X-Auth-User-Id", "forged"), ("x-auth-email", "forged@evil.example"),
        ("X_Auth_User_Id", "forged"), ("X-Auth-Assertion", "forged")]))
    me = client.get("/.auth/me").json()
    assert seen["x-auth-user-id"] == [me["id"]] and me["id"]
    assert seen["x-auth-email"] == [USER]
    assert seen["x-auth-email-verified"] == ["true"] and seen["x-auth-name"] == ["Maria%20Ruiz"]
    # Assertions are off here: the absent field is not copied (not even as a placeholder).
    assert "x-auth-assertion" not in seen and "x_auth_user_id" not in seen, seen.get("x-auth-assertion")
    assert all("forged" not in v for vs in seen.values() for v in vs), seen

    old = dict(client.jar)
    r = client.request("POST", "/.auth/logout?rd=/app/bye")
    assert r.status == 303
    upstream.reset()
    client.jar = old  # a copy of the signed-out cookie
    assert client.get("/app/page").status == 302
    assert upstream.stats()["requests"] == 0


@pytest.mark.parametrize("caddy_site", [{"assertion": {"enabled": True}}], indirect=True)
def test_caddy_passes_the_signed_assertion_from_check(caddy_site):
    """`/.auth/check` answers with the assertion; the Caddyfile copies it to the app, which can
    verify it with the keys the sidecar publishes (through Caddy too)."""
    import jwt
    port, sidecar = caddy_site
    client = signed_in_through_caddy(port)
    seen = echoed(client.get("/app/page", headers=[HTML, ("X-Auth-Assertion", "forged.x.y")]))
    [token] = seen["x-auth-assertion"]
    keys = client.get("/.auth/jwks.json").json()
    key = [k for k in keys["keys"] if k["kid"] == jwt.get_unverified_header(token)["kid"]][0]
    claims = jwt.decode(token, jwt.PyJWK(key).key, algorithms=["ES256"], audience=sidecar.config["public_url"],
                        issuer=sidecar.config["public_url"])
    assert claims["sub"] == seen["x-auth-user-id"][0] and claims["email"] == USER


RULES = {"rules": [
    {"path": "/app/admin/**", "allowed_emails": ["someone.else@example.com"]},
    {"path": "/app/open/**", "public": True},
    {"path": "/app/**", "methods": ["DELETE"], "deny": True},
]}


@pytest.mark.parametrize("caddy_site", [RULES], indirect=True)
def test_caddy_forward_auth_applies_the_rules(caddy_site, upstream):
    """Caddy sends the request's URI and method (X-Forwarded-Uri, X-Forwarded-Method) from a
    trusted peer: /.auth/check decides it by the rules, as if the sidecar proxied it."""
    port, sidecar = caddy_site
    anonymous = CookieClient(port)
    r = anonymous.get("/app/open/x")
    assert r.status == 200, "a public rule needs no session"
    headers = {n.lower(): v for n, v in r.json()["headers"]}
    assert not any(name.startswith("x-auth") for name in headers), headers
    client = signed_in_through_caddy(port)
    upstream.reset()
    assert client.get("/app/page").status == 200
    assert client.get("/app/admin/users").status == 403, "signed in, but not allowed by the rule"
    assert client.request("DELETE", "/app/page").status == 403
    assert upstream.stats()["targets"] == ["GET /app/page"], "only the allowed request reached the app"
    assert sidecar.logged(lambda out: '"reason":"email"' in out and '"rule":0' in out)
