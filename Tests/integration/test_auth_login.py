"""Sign in with Apple end to end: the real binary, the real emulator, a
browser-like cookie jar in Python."""
import base64
import re
import hashlib
import json
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
    assert sc.logged(lambda out: "login succeeded" in out and '"reason":"ok"' in out.replace(" ", "")), sc.output()


def failed_reason(sc):
    return re.findall(r'"reason":"([a-z0-9_]+)"', sc.output().replace(" ", ""))


def logged_reason(sc, reason, prefix=False):
    """Whether a log line gives `reason` (or one starting with it), polled: the line and the
    response the test already has race (see Sidecar.logged)."""
    return sc.logged(lambda _: any(x.startswith(reason) if prefix else x == reason for x in failed_reason(sc)))


def test_second_login_without_user_still_signs_in(site, browser):
    sc, apple = site
    first, fields = browser(sc, apple).login()
    assert first.status == 303 and "user" in fields
    b = browser(sc, apple)
    r, fields = b.login("/again")
    assert "user" not in fields
    assert r.status == 303 and r.header("Location") == "/again"
    e = b.get("/again").json()
    assert seen(e, "X-Auth-Email") == ["maria.ruiz@example.com"]
    assert seen(e, "X-Auth-Name") == []


def test_two_concurrent_logins_in_one_browser(site, browser):
    sc, apple = site
    b = browser(sc, apple)
    _, loc1 = b.start_login("/one")
    _, loc2 = b.start_login("/two")
    assert len([n for n in b.jar if "login" in n]) == 2
    f1, _ = b.authorize(loc1)
    f2, _ = b.authorize(loc2, "john.appleseed@example.com")
    r2 = b.callback(f2)
    assert r2.status == 303 and r2.header("Location") == "/two"
    r1 = b.callback(f1)
    assert r1.status == 303 and r1.header("Location") == "/one"
    assert not [n for n in b.jar if "login" in n]


@pytest.mark.parametrize("rd", [
    "//evil.example", "https://evil.example/", "/\\evil.example", "/%2F%2Fevil.example", "/%5Cevil",
    "javascript:alert(1)", " /x", "/x\r\nSet-Cookie: a=b", "https://127.0.0.1@evil.example/",
    "http://127.0.0.1/", "/a/..//evil.example", "\u2215\u2215evil.example",
])
def test_open_redirect_payloads_fall_back_to_root(site, browser, rd):
    sc, apple = site
    r, _ = browser(sc, apple).login(rd)
    assert r.status == 303 and r.header("Location") == "/"


def test_callback_without_state_cookie_is_400(site, browser):
    sc, apple = site
    b = browser(sc, apple)
    _, loc = b.start_login()
    fields, _ = b.authorize(loc)
    r = b.callback(fields, jar=False)
    assert r.status == 400 and b'<a class="button primary" href="/.auth/login" id="sign-in-again">Start a new sign-in</a>' in r.body
    assert logged_reason(sc, "state_missing")
    assert not b.session_cookie


def test_callback_with_other_state_is_400_and_api_clients_get_json(site, browser):
    sc, apple = site
    b = browser(sc, apple)
    _, loc = b.start_login()
    fields, _ = b.authorize(loc)
    fields["state"] = "A" * 32
    r = b.callback(fields, headers=[("Accept", "application/json")])
    assert r.status == 400 and r.json()["reason"] == "state_mismatch"
    assert r.header("Content-Type").startswith("application/json")


def test_replayed_callback_is_refused(site, browser):
    sc, apple = site
    b = browser(sc, apple)
    _, loc = b.start_login()
    fields, _ = b.authorize(loc)
    saved = dict(b.jar)
    assert b.callback(fields).status == 303
    b.jar = saved  # an attacker replaying the captured POST with the captured cookie
    r = b.callback(fields)
    assert r.status == 400 and logged_reason(sc, "state_replayed")


def test_reused_code_is_refused_by_apple(site, browser):
    sc, apple = site
    b = browser(sc, apple)
    _, loc1 = b.start_login()
    f1, _ = b.authorize(loc1)
    assert b.callback(dict(f1)).status == 303
    _, loc2 = b.start_login()
    f2, _ = b.authorize(loc2)
    f2["code"] = f1["code"]
    r = b.callback(f2)
    assert r.status == 502 and logged_reason(sc, "exchange_invalid_grant")


@pytest.mark.parametrize("fault,status,reason", [
    ("alg_none", 401, "token_"), ("hs256_with_public_key", 401, "token_"),
    ("unknown_kid", 401, "token_unknown_key"), ("wrong_iss", 401, "token_wrong_issuer"),
    ("wrong_aud", 401, "token_wrong_audience"), ("expired", 401, "token_expired"),
    ("iat_future", 401, "token_issued_in_future"), ("nonce_missing", 401, "token_nonce_missing"),
    ("wrong_nonce", 401, "token_nonce_mismatch"), ("tampered_payload", 401, "token_bad_signature"),
    ("truncated", 401, "token_"), ("extra_segment", 401, "token_"),
    ("no_id_token", 502, "no_id_token"), ("invalid_grant", 502, "exchange_invalid_grant"),
    ("invalid_client", 502, "exchange_invalid_client"), ("http_500", 502, "apple_server_error"),
])
def test_every_emulator_fault_gives_no_session(site, browser, fault, status, reason):
    sc, apple = site
    apple.arm(fault)
    b = browser(sc, apple)
    r, _ = b.login()
    assert r.status == status, (r.status, r.body)
    assert logged_reason(sc, reason, prefix=True), failed_reason(sc)
    assert not b.session_cookie
    assert "eyJ" not in sc.output()  # no token ever reaches the log
    r, _ = browser(sc, apple).login()  # and it keeps serving
    assert r.status == 303


def test_refused_client_secret_tells_the_operator(site, browser):
    """invalid_client lasts until the configuration changes: the user's page says try later,
    so the operator gets an error line naming the key id."""
    sc, apple = site
    apple.arm("invalid_client")
    r, _ = browser(sc, apple).login()
    assert r.status == 502

    def refused(out):
        entries = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        return next((e for e in entries if e.get("level") == "error" and "invalid_client" in e["msg"]), None)
    entry = sc.logged(refused)
    assert entry and entry["key_id"] == "KEY123ABCD" and "apple.key_id" in entry["msg"], sc.output()


def test_hanging_apple_is_a_quick_504(start_auth_sidecar, browser):
    sc, apple = start_auth_sidecar({"upstream_timeout": "2s"})
    apple.arm("hang")
    started = time.monotonic()  # before the sign-in: the exchange with Apple starts later
    r, _ = browser(sc, apple).login()
    elapsed = time.monotonic() - started
    # The exchange is given up at upstream_timeout (2 s, a minimum); +4 s covers the sign-in's
    # other requests and a loaded 2-core machine.
    assert r.status == 504 and 2.0 <= elapsed < 6, (r.status, elapsed)
    assert logged_reason(sc, "apple_timeout")
    assert browser(sc, apple).login()[0].status == 303


def test_unreachable_apple_is_502(site, browser):
    sc, apple = site
    b = browser(sc, apple)
    _, loc = b.start_login()
    fields, _ = b.authorize(loc)
    apple.stop()
    r = b.callback(fields)
    assert r.status == 502 and logged_reason(sc, "apple_unreachable")
    assert sc.request("GET", "/pub/x").status == 200


def test_cancelled_sign_in(site, browser):
    sc, apple = site
    b = browser(sc, apple)
    _, loc = b.start_login()
    state = parse_qs(loc.query)["state"][0]
    r = b.callback({"error": "user_cancelled_authorize", "state": state})
    assert r.status == 401 and logged_reason(sc, "apple_cancelled")
    assert not [n for n in b.jar if "login" in n]


def test_access_policy_denies_with_403(start_auth_sidecar, browser):
    sc, apple = start_auth_sidecar({"access": {"allowed_email_domains": ["corp.example"]}})
    b = browser(sc, apple)
    r, _ = b.login(email="maria.ruiz@example.com")
    assert r.status == 403 and logged_reason(sc, "policy_denied_email")
    assert not b.session_cookie
    r, _ = browser(sc, apple).login(email="ok@corp.example")
    assert r.status == 303
