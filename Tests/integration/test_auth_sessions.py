"""Proxying with a session, logout, /me, /check."""
import base64
import os
import time

import pytest

from conftest import poll, seen
from native_support import WEB, apple_revocations, metric

HTML = ("Accept", "text/html,application/xhtml+xml")
SPELLINGS = ["X-Auth-User-Id", "x-auth-user-id", "X_Auth_User_Id", "X-AUTH-EMAIL", "x_auth_email",
             "X-Auth-Name", "X-Auth-Email-Verified", "x_auth_private_email", "X-Auth-Assertion"]


def secret():
    return base64.b64encode(os.urandom(32)).decode()


def test_spoofed_identity_headers_never_reach_the_upstream(signed_in):
    sc, _, b = signed_in
    forged = [(name, "forged") for name in SPELLINGS]
    e = b.get("/private", headers=[HTML] + forged).json()
    assert seen(e, "X-Auth-Email") == ["maria.ruiz@example.com"]
    assert len(seen(e, "X-Auth-User-Id")) == 1 and seen(e, "X-Auth-User-Id") != ["forged"]
    assert "forged" not in str(e["headers"])
    e = sc.request("GET", "/pub/page", [HTML] + forged).json()  # without a session
    assert "forged" not in str(e["headers"]) and not seen(e, "X-Auth-User-Id")


def test_session_cookie_is_removed_from_the_forwarded_cookie_header(signed_in):
    sc, _, b = signed_in
    name, value = b.session_cookie
    e = sc.request("GET", "/private", [HTML, ("Cookie", "a=1; %s=%s; b=2" % (name, value))]).json()
    assert seen(e, "Cookie") == ["a=1; b=2"]
    e = sc.request("GET", "/private", [HTML, ("Cookie", "%s=%s" % (name, value))]).json()
    assert seen(e, "Cookie") == []
    e = sc.request("GET", "/pub/x", [HTML, ("Cookie", "%s=%s; c=3" % (name, value))]).json()
    assert seen(e, "Cookie") == ["c=3"]


def test_pass_cookie_forwards_it(start_auth_sidecar, browser):
    sc, apple = start_auth_sidecar({"headers": {"pass_cookie": True}})
    b = browser(sc, apple)
    b.login()
    name, value = b.session_cookie
    e = sc.request("GET", "/private", [HTML, ("Cookie", "%s=%s" % (name, value))]).json()
    assert seen(e, "Cookie") == ["%s=%s" % (name, value)]


def test_bearer_session_token_is_accepted_and_removed(signed_in):
    sc, _, b = signed_in
    _, value = b.session_cookie
    e = sc.request("GET", "/api/x", [("Authorization", "Bearer " + value)]).json()
    assert seen(e, "X-Auth-Email") == ["maria.ruiz@example.com"]
    assert seen(e, "Authorization") == []


def test_foreign_bearer_passes_unchanged_and_the_cookie_decides(signed_in):
    sc, _, b = signed_in
    name, value = b.session_cookie
    e = sc.request("GET", "/api/x", [("Authorization", "Bearer upstream-token"),
                                     ("Cookie", "%s=%s" % (name, value))]).json()
    assert seen(e, "Authorization") == ["Bearer upstream-token"]
    assert seen(e, "X-Auth-Email") == ["maria.ruiz@example.com"]
    r = sc.request("GET", "/api/x", [("Authorization", "Bearer upstream-token")])
    assert r.status == 401


@pytest.mark.parametrize("mutate", [
    lambda v: v[:-2] + ("AA" if not v.endswith("AA") else "BB"), lambda v: v[:20], lambda v: "x" + v,
    lambda v: v + "A",
])
def test_tampered_cookie_is_no_session(signed_in, mutate):
    sc, _, b = signed_in
    name, value = b.session_cookie
    r = sc.request("GET", "/private", [HTML, ("Cookie", "%s=%s" % (name, mutate(value)))])
    assert r.status == 302


def test_expired_session_is_no_session(start_auth_sidecar, browser):
    # Sessions carry whole seconds: one sealed at t expires at floor(t) + lifetime, i.e.
    # between lifetime - 1 s and lifetime after t (give or take the few ms by which the
    # sidecar's coarse wall clock lags).
    sc, apple = start_auth_sidecar({"session": {"lifetime": "3s"}})
    b = browser(sc, apple)
    started = time.monotonic()  # before the seal
    b.login()
    valid = b.get("/private").status
    if time.monotonic() - started < 1.9:  # within lifetime - 1 s of the seal (0.1 s spare): valid
        assert valid == 200
    # Expired at most lifetime (3 s) after the seal; +3 s covers a loaded 2-core machine.
    assert poll(lambda: b.get("/private").status == 302, timeout=6 - (time.monotonic() - started), step=0.2), \
        "still signed in %.1f s after the sign-in began" % (time.monotonic() - started)


def test_cookie_from_an_older_secret_is_accepted_and_resealed(start_auth_sidecar, start_sidecar, browser):
    old, new = secret(), secret()
    sc, apple = start_auth_sidecar({"session": {"secrets": [old]}})
    b = browser(sc, apple)
    b.login()
    name, value = b.session_cookie
    rotated = start_sidecar({"session": {"secrets": [new, old]}, "access": {"public_paths": []}})
    r = rotated.request("GET", "/private", [HTML, ("Cookie", "%s=%s" % (name, value))])
    assert r.status == 200
    fresh = [c for c in r.header_all("Set-Cookie") if c.startswith(name + "=")]
    assert len(fresh) == 1 and fresh[0].split(";")[0] != "%s=%s" % (name, value)
    assert seen(r.json(), "X-Auth-Email") == ["maria.ruiz@example.com"]
    forgotten = start_sidecar({"session": {"secrets": [new]}, "access": {"public_paths": []}})
    r = forgotten.request("GET", "/private", [HTML, ("Cookie", "%s=%s" % (name, value))])
    assert r.status == 302


def test_session_is_resealed_after_refresh_after(start_auth_sidecar, browser):
    # Sessions carry whole seconds: one sealed at t is re-sealed from floor(t) + refresh_after
    # on, i.e. between refresh_after - 1 s and refresh_after after t (give or take the few ms
    # by which the sidecar's coarse wall clock lags).
    sc, apple = start_auth_sidecar({"session": {"refresh_after": "2s"}})
    b = browser(sc, apple)
    started = time.monotonic()  # before the seal
    b.login()
    r = b.get("/private")
    assert r.status == 200
    if time.monotonic() - started < 0.9:  # within refresh_after - 1 s of the seal (0.1 s spare)
        assert not r.header_all("Set-Cookie")
    before = b.session_cookie

    def resealed():
        r = b.get("/private")
        assert r.status == 200
        return len(r.header_all("Set-Cookie")) == 1
    # Re-sealed at most refresh_after (2 s) after the seal; +3 s covers a loaded 2-core machine.
    assert poll(resealed, timeout=5 - (time.monotonic() - started), step=0.2), "never re-sealed"
    assert b.session_cookie != before
    assert b.get("/private").status == 200


def test_a_client_that_keeps_its_old_cookie_gets_the_same_new_one_sealed_once(start_auth_sidecar, browser):
    # Scripts and load generators ignore Set-Cookie, and a browser's requests already in flight
    # carry the old cookie: each would otherwise cost a new seal, a new cache entry and an
    # eviction until the client adopts the new cookie.
    sc, apple = start_auth_sidecar({"session": {"refresh_after": "2s"}})
    b = browser(sc, apple)
    b.login()
    name, old = b.session_cookie
    deadline = time.monotonic() + 5  # due within refresh_after (2 s); +3 s for a loaded machine
    while True:
        r = sc.request("GET", "/private", [HTML, ("Cookie", "%s=%s" % (name, old))])
        assert r.status == 200
        if r.header_all("Set-Cookie") or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    first = r.header_all("Set-Cookie")
    assert len(first) == 1, "never re-sealed"
    new = first[0].split(";")[0]
    assert new != "%s=%s" % (name, old)
    for _ in range(5):
        r = sc.request("GET", "/private", [HTML, ("Cookie", "%s=%s" % (name, old))])
        assert r.status == 200
        cookies = r.header_all("Set-Cookie")
        assert len(cookies) == 1 and cookies[0].split(";")[0] == new, cookies
    assert metric(sc, 'sidecar_session_reseals_total{reason="refresh"} 1')
    assert sc.request("GET", "/private", [HTML, ("Cookie", new)]).status == 200


@pytest.mark.parametrize("target,forwarded", [
    ("/pub/%2e%2e/private", "/private"), ("/pub/../private", "/private"), ("/pub/%2E%2e/./private", "/private"),
])
def test_dot_segment_tricks_are_decided_on_the_normalized_path(signed_in, target, forwarded):
    sc, _, b = signed_in
    assert sc.request("GET", target, [("Accept", "application/json")]).status == 401
    e = b.get(target).json()
    assert e["target"] == forwarded and seen(e, "X-Auth-Email")


def test_logout_post_clears_and_revokes(signed_in):
    sc, _, b = signed_in
    name, value = b.session_cookie
    r = b.request("POST", "/.auth/logout?rd=/bye", [HTML])
    assert r.status == 303 and r.header("Location") == "/bye"
    assert any(c.startswith(name + "=;") and "Max-Age=0" in c for c in r.header_all("Set-Cookie"))
    assert b.session_cookie is None
    # The captured cookie no longer works anywhere (revoked), nor does its bearer form.
    assert sc.request("GET", "/private", [HTML, ("Cookie", "%s=%s" % (name, value))]).status == 302
    assert sc.request("GET", "/api", [("Authorization", "Bearer " + value)]).status == 401


def test_logout_revokes_the_apple_refresh_token_with_the_services_id(signed_in):
    """A web logout revokes the session's Apple refresh token (client_id = the
    Services ID), in the background after the answer. Checked in the emulator's own record of
    /auth/revoke calls: fails if logout never calls Apple, sends another client id or a token
    Apple did not issue to the Services ID (token_known false), has no valid client secret,
    or revokes twice; a second logout, with no session left, must call Apple no more."""
    sc, apple, b = signed_in
    assert apple_revocations(apple, at_least=0) == []  # signing in revoked nothing
    assert b.request("POST", "/.auth/logout", [HTML]).status == 200
    assert b.session_cookie is None
    assert apple_revocations(apple) == [(WEB, "refresh_token", True, True, None)]
    assert poll(lambda: '"apple refresh token revoked"' in sc.output())
    assert b.request("POST", "/.auth/logout", [("Accept", "application/json")]).status == 204
    assert poll(lambda: '"no_session"' in sc.output())
    assert apple_revocations(apple) == [(WEB, "refresh_token", True, True, None)]
    # Apple really dropped it: that user's web authorization has no token left.
    left = apple.control("POST", "/emulator/revoke-consent", {"client_id": WEB, "email": "maria.ruiz@example.com"})
    assert left.json()["revoked_tokens"] == 0


def test_logout_for_api_clients_is_204(signed_in):
    sc, _, b = signed_in
    assert b.request("POST", "/.auth/logout", [("Accept", "application/json")]).status == 204


@pytest.mark.parametrize("headers,status", [
    ([("Sec-Fetch-Site", "cross-site")], 403),
    ([("Sec-Fetch-Site", "same-site")], 403),
    ([("Origin", "https://evil.example")], 403),
    ([("Referer", "https://evil.example/page")], 403),
    ([], 403),
    ([("Sec-Fetch-Site", "same-origin")], 200),
    ([("Sec-Fetch-Site", "none")], 200),
])
def test_logout_get_only_from_our_own_site(signed_in, headers, status):
    sc, _, b = signed_in
    r = b.request("GET", "/.auth/logout", [HTML] + headers)
    assert r.status == status
    # honoured without rd → the signed-out page; refused → a page asking to confirm.
    assert (b"<title>You are signed out</title>" if status == 200 else b"<title>Sign out?</title>") in r.body
    assert (b.session_cookie is None) == (status == 200)


def test_logout_get_with_our_origin_or_referer(signed_in):
    sc, _, b = signed_in
    origin = "http://127.0.0.1:%d" % sc.port
    assert b.request("GET", "/.auth/logout", [HTML, ("Referer", origin + "/page")]).status == 200


def test_me(signed_in):
    sc, _, b = signed_in
    me = b.get("/.auth/me").json()
    assert me["email"] == "maria.ruiz@example.com" and me["name"] == "Maria Ruiz"
    assert me["email_verified"] is True and me["private_email"] is False
    assert me["id"] and me["expires_at"] > time.time()
    r = sc.request("GET", "/.auth/me")
    assert r.status == 401 and r.json()["error"] == "unauthenticated"


def test_check_for_forward_auth(signed_in):
    sc, _, b = signed_in
    r = b.get("/.auth/check")
    assert r.status == 200
    assert r.header("X-Auth-Email") == "maria.ruiz@example.com"
    assert r.header("X-Auth-Name") == "Maria%20Ruiz" and r.header("X-Auth-User-Id")
    # The very fields a forwarded request of the session gets, each once.
    forwarded = b.get("/private").json()
    for name in ("X-Auth-User-Id", "X-Auth-Email", "X-Auth-Email-Verified", "X-Auth-Private-Email", "X-Auth-Name"):
        assert [v for k, v in r.headers if k.lower() == name.lower()] == seen(forwarded, name), name
    _, value = b.session_cookie
    assert sc.request("GET", "/.auth/check", [("Authorization", "Bearer " + value)]).status == 200
    r = sc.request("GET", "/.auth/check", [HTML])
    assert r.status == 401 and r.header("Location") is None


def test_private_relay_email_and_names_are_encoded(start_auth_sidecar, browser):
    sc, apple = start_auth_sidecar()
    apple.control("POST", "/emulator/users", [
        {"email": "jose@example.com", "firstName": "José\u0007", "lastName": "Ruiz", "hideMyEmail": True}])
    b = browser(sc, apple)
    assert b.login(email="jose@example.com")[0].status == 303
    e = b.get("/private").json()
    assert seen(e, "X-Auth-Name") == ["Jos%C3%A9%20Ruiz"]
    assert seen(e, "X-Auth-Private-Email") == ["true"]
    assert seen(e, "X-Auth-Email")[0].endswith("@privaterelay.appleid.com")


def test_private_relay_can_be_refused(start_auth_sidecar, browser):
    sc, apple = start_auth_sidecar({"access": {"allow_private_relay": False}})
    apple.control("POST", "/emulator/users", [{"email": "p@example.com", "hideMyEmail": True}])
    assert browser(sc, apple).login(email="p@example.com")[0].status == 403


def test_oversized_callback_body_is_413(signed_in):
    sc, _, _ = signed_in
    r = sc.request("POST", "/.auth/callback", [HTML, ("Content-Type", "application/x-www-form-urlencoded")],
                   b"a=" + b"x" * (1 << 20 + 1))
    assert r.status == 413


def test_endpoint_methods(signed_in):
    sc, _, _ = signed_in
    assert sc.request("GET", "/.auth/callback", [HTML]).status == 405
    assert sc.request("POST", "/.auth/login", [HTML]).status == 405
    assert sc.request("GET", "/.auth/nothing", [HTML]).status == 404


def test_client_leaving_during_the_callback_does_not_hurt(start_auth_sidecar, browser):
    sc, apple = start_auth_sidecar()
    apple.arm("slow:1500")
    b = browser(sc, apple)
    _, loc = b.start_login()
    fields, _ = b.authorize(loc)
    from urllib.parse import urlencode
    body = urlencode(list(fields.items())).encode()
    c = sc.conn()
    c.send(("POST /.auth/callback HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            "%s\r\nContent-Length: %d\r\n\r\n" % (b.cookie_header("/.auth/callback")[0][0] + ": "
                                                  + b.cookie_header("/.auth/callback")[0][1], len(body))).encode() + body)
    # Leave during the exchange, then let Apple's slow answer (1.5 s) arrive for no one. The
    # sleeps only place the events; on a slow machine they may land elsewhere, and the sign-in
    # below must work all the same (it asserts nothing about when they happened).
    time.sleep(0.2)
    c.close()
    time.sleep(2)
    assert browser(sc, apple).login()[0].status == 303
