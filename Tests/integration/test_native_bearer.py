"""Native sessions as bearer tokens: removed before proxying, accepted by
/me, /check and /logout, refreshed by POST /native/refresh with a new idle deadline."""
import json
import time

import pytest

from native_support import (  # noqa: F401 (fixtures)
    app, bearer, body_of, device, metric, post_native, refused, seen, signed_in, start_native)


# -- bearer sessions ---------------------------------------------------------------------------
def test_bearer_is_removed_before_proxying_and_identity_injected(app):
    sc, apple = app
    answer = signed_in(sc, apple, email="maria.ruiz@example.com")
    forged = [("X-Auth-User-Id", "forged"), ("X_Auth_Email", "forged@evil.example")]
    e = sc.request("GET", "/api/items?x=1", bearer(answer["token"]) + forged).json()
    assert seen(e, "Authorization") == []
    assert answer["token"] not in json.dumps(e)
    assert seen(e, "X-Auth-User-Id") == [answer["user"]["id"]]
    assert seen(e, "X-Auth-Email") == ["maria.ruiz@example.com"]
    # Another Authorization value is the upstream's own: it passes unchanged.
    e = sc.request("GET", "/api/items", bearer(answer["token"]) + [("Authorization", "Basic dTpw")]).json()
    assert seen(e, "Authorization") == ["Basic dTpw"]
    assert sc.request("GET", "/api/items", [("Accept", "application/json")]).status == 401
    assert metric(sc, 'sidecar_sessions_total{via="bearer",result="accepted",reason="ok"} 2')


def test_bearer_on_me_check_and_logout(app):
    sc, apple = app
    cred = device(apple, email="maria.ruiz@example.com")
    # As an app does: the name the device got on the first authorization goes in the body.
    names = {"firstName": cred["fullName"]["givenName"], "lastName": cred["fullName"]["familyName"]}
    answer = post_native(sc, body_of(cred, **names)).json()
    token = answer["token"]
    me = sc.request("GET", "/.auth/me", bearer(token))
    assert me.status == 200 and me.json()["id"] == answer["user"]["id"] and me.json()["name"] == "Maria Ruiz"
    check = sc.request("GET", "/.auth/check", bearer(token))
    assert check.status == 200 and check.header("X-Auth-Email") == "maria.ruiz@example.com"
    assert check.header("X-Auth-Name") == "Maria%20Ruiz"
    out = sc.request("POST", "/.auth/logout", bearer(token))
    assert out.status == 204
    for path in ("/.auth/me", "/.auth/check", "/private"):
        assert sc.request("GET", path, bearer(token)).status == 401, path
    refused(sc.request("POST", "/.auth/native/refresh", bearer(token)), 401, "session_revoked")


def test_a_cookie_and_a_bearer_open_with_the_same_key(app, browser):
    # The bearer is the sealed session bound to the cookie name: a native token works as the
    # cookie too, and the web cookie as a bearer.
    sc, apple = app
    answer = signed_in(sc, apple)
    b = browser(sc, apple)
    b.login()
    name, cookie = b.session_cookie
    assert sc.request("GET", "/.auth/me", [("Cookie", "%s=%s" % (name, answer["token"]))]).status == 200
    assert sc.request("GET", "/.auth/me", bearer(cookie)).status == 200


def test_refresh_reseals_with_a_new_idle_deadline_and_the_old_token_expires(start_native):
    # Whole seconds: the first token's idle deadline is floor(seal) + 6. The refresh is sent once
    # the sidecar's clock is 3 s past floor(seal) (past refresh_after; +0.3 s because it reads
    # the coarse wall clock, a few ms behind ours), which leaves the old token 2.7 s to spare
    # for a loaded 2-core machine, and gives the new one 3 s beyond the old one's deadline.
    sc, apple = start_native({"session": {"idle_timeout": "6s", "refresh_after": "2s"}})
    first = signed_in(sc, apple)
    me_before = sc.request("GET", "/.auth/me", bearer(first["token"])).json()
    time.sleep(max(0, first["expires_at"] - 6 + 3 + 0.3 - time.time()))
    r = sc.request("POST", "/.auth/native/refresh", bearer(first["token"]))
    assert r.status == 200, r.body
    second = r.json()
    assert set(second) == {"token", "expires_at", "session_expires_at", "user"} and second["user"] == first["user"]
    assert second["token"] != first["token"] and second["expires_at"] >= first["expires_at"] + 3
    me_after = sc.request("GET", "/.auth/me", bearer(second["token"])).json()
    assert me_after["id"] == me_before["id"] and me_after["session_expires_at"] == me_before["session_expires_at"]
    assert me_after["expires_at"] == second["expires_at"]  # /me and /native mean the same by expires_at
    # Past the old token's idle deadline (+0.3 s: the sidecar reads the coarse wall clock):
    # it is refused, the new one lives on.
    time.sleep(max(0, first["expires_at"] - time.time()) + 0.3)
    assert sc.request("GET", "/private", bearer(first["token"])).status == 401
    refused(sc.request("POST", "/.auth/native/refresh", bearer(first["token"])), 401, "session_idle_expired")
    assert sc.request("GET", "/private", bearer(second["token"])).status == 200
    # The refreshed session is the same session: one logout ends both tokens.
    assert sc.request("POST", "/.auth/logout", bearer(second["token"])).status == 204
    assert sc.request("GET", "/private", bearer(second["token"])).status == 401
    assert metric(sc, 'sidecar_native_refreshes_total{outcome="ok"} 1')
    assert metric(sc, 'sidecar_native_refreshes_total{outcome="idle_expired"} 1')


def test_refresh_keeps_the_absolute_expiry(start_native):
    # Whole seconds: a session sealed at t expires at floor(t) + lifetime, so the refresh just
    # after the sign-in has at least lifetime - 1 s (4 s) to spare for a loaded 2-core machine.
    sc, apple = start_native({"session": {"lifetime": "5s", "idle_timeout": "2h"}})
    first = signed_in(sc, apple)
    assert first["expires_at"] <= time.time() + 6  # lifetime + 1 s of rounding; load only helps
    second = sc.request("POST", "/.auth/native/refresh", bearer(first["token"])).json()
    assert second["expires_at"] == first["expires_at"]
    time.sleep(max(0, first["expires_at"] - time.time()) + 0.3)
    refused(sc.request("POST", "/.auth/native/refresh", bearer(second["token"])), 401, "session_expired")


@pytest.mark.parametrize("headers,reason", [
    ([], "bearer_missing"), ([("Authorization", "Basic dTpw")], "bearer_missing"),
    ([("Authorization", "Bearer not-a-session")], "session_malformed"),
])
def test_refresh_without_a_session_is_401(app, headers, reason):
    sc, _ = app
    r = sc.request("POST", "/.auth/native/refresh", headers + [("Accept", "application/json")])
    refused(r, 401, reason)
    assert r.header("WWW-Authenticate") == 'Bearer realm="sidecar"'


def test_refresh_does_not_take_the_cookie(app, browser):
    sc, apple = app
    b = browser(sc, apple)
    b.login()
    name, cookie = b.session_cookie
    refused(sc.request("POST", "/.auth/native/refresh", [("Cookie", "%s=%s" % (name, cookie))]), 401, "bearer_missing")


def test_tampered_bearer_is_no_session(app):
    sc, apple = app
    token = signed_in(sc, apple)["token"]
    for bad in (token[:-2] + ("AA" if not token.endswith("AA") else "BB"), token[:40], "x" + token):
        assert sc.request("GET", "/private", bearer(bad)).status == 401
        r = sc.request("POST", "/.auth/native/refresh", bearer(bad))
        assert r.status == 401 and r.json()["error"].startswith("session_"), r.body
