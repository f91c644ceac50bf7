"""Sign in with Apple end to end (SPEC §4.1, §4.2): the real binary, the real emulator, a
browser-like cookie jar in Python."""
import base64
import hashlib
import time
from urllib.parse import parse_qs, urlsplit

import pytest

HTML = ("Accept", "text/html,application/xhtml+xml")


@pytest.fixture
def site(start_auth_sidecar):
    return start_auth_sidecar()


def seen(echo, name):
    return [v for n, v in echo["headers"] if n.lower() == name.lower()]


def test_login_redirects_to_apple_with_exact_parameters(site, browser):
    sc, apple = site
    b = browser(sc, apple)
    r, loc = b.start_login("/dash?x=1")
    assert loc.geturl().startswith(apple.issuer + "/auth/authorize?")
    q = parse_qs(loc.query)
    assert q["client_id"] == ["com.example.web"]
    assert q["redirect_uri"] == ["http://127.0.0.1:%d/.auth/callback" % sc.port]
    assert q["response_type"] == ["code"] and q["response_mode"] == ["form_post"]
    assert "scope=name%20email" in loc.query and "+" not in loc.query
    assert q["code_challenge_method"] == ["S256"]
    assert len(base64.urlsafe_b64decode(q["state"][0] + "==")) >= 16
    assert len(q["nonce"][0]) >= 32 and len(q["code_challenge"][0]) == 43
    cookies = r.header_all("Set-Cookie")
    assert len(cookies) == 1
    attrs = [a.strip() for a in cookies[0].split(";")]
    assert attrs[0].startswith("__Secure-sidecar-login-")
    for a in ("HttpOnly", "Secure", "SameSite=None", "Path=/.auth", "Max-Age=600"):
        assert a in attrs, (a, attrs)


def test_first_login_with_name_reaches_upstream(site, browser):
    sc, apple = site
    b = browser(sc, apple)
    r, fields = b.login("/dash?x=1")
    assert "user" in fields
    assert r.status == 303, (r.status, r.body)
    assert r.header("Location") == "/dash?x=1"
    cookies = r.header_all("Set-Cookie")
    session = [c for c in cookies if c.startswith("__Host-sidecar=")]
    assert len(session) == 1
    attrs = [a.strip() for a in session[0].split(";")]
    for a in ("Path=/", "HttpOnly", "SameSite=Lax", "Secure"):
        assert a in attrs, (a, attrs)
    assert any(c.startswith("__Secure-sidecar-login-") and "Max-Age=0" in c for c in cookies)
    assert not [n for n in b.jar if "login" in n]
    e = b.get("/dash?x=1").json()
    assert seen(e, "X-Auth-Email") == ["maria.ruiz@example.com"]
    assert seen(e, "X-Auth-Name") == ["Maria%20Ruiz"]
    assert seen(e, "X-Auth-Email-Verified") == ["true"]
    assert seen(e, "X-Auth-Private-Email") == ["false"]
    assert len(seen(e, "X-Auth-User-Id")) == 1
    assert "login succeeded" in sc.output() and '"reason":"ok"' in sc.output().replace(" ", "")
