"""Account deletion, POST /.auth/revoke against the real binary and the
real `sidecar emulator`: Apple's refresh token is revoked with the client id it was issued to
(the Services ID for the web, the bundle id for an app), then every session of that user ends
and no other; nothing happens locally unless Apple confirmed; a cookie request must come from
the site itself; the upstream is told through notifications.forward_to."""
import time

from native_support import (  # noqa: F401 (fixtures)
    BUNDLE, WEB, bearer, device, metric, post_native, signed_in, start_native,
    web_user, signed_in_ok, bearer_ok)
from test_notifications import Receiver, wait_for

API = ("Accept", "application/json")
HTML = ("Accept", "text/html,application/xhtml+xml")


def origin(sc):
    return ("Origin", "http://127.0.0.1:%d" % sc.port)



def revocations(apple):
    return apple.control("GET", "/emulator/revocations").json()


def test_web_revoke_revokes_at_apple_with_the_services_id_and_ends_every_session_of_the_user(
        start_native, browser):
    sc, apple = start_native()
    maria = web_user(sc, apple, browser, "maria@example.com")
    maria_elsewhere = web_user(sc, apple, browser, "maria@example.com")  # a second browser
    maria_app = signed_in(sc, apple, email="maria@example.com")
    omar = web_user(sc, apple, browser, "omar@example.com")
    omar_app = signed_in(sc, apple, email="omar@example.com")
    assert signed_in_ok(maria) and signed_in_ok(maria_elsewhere) and bearer_ok(sc, maria_app["token"])

    r = maria.request("POST", "/.auth/revoke", [API, origin(sc)])
    assert r.status == 200, (r.status, r.body)
    assert r.json() == {"revoked": True, "apple": "revoked"}
    assert maria.session_cookie is None, r.header_all("Set-Cookie")  # the cookie is cleared
    log = revocations(apple)
    assert len(log) == 1, log
    assert log[0]["client_id"] == WEB and log[0]["token_type_hint"] == "refresh_token", log
    assert log[0]["token_known"] is True and log[0]["client_authenticated"] is True, log
    assert "token" not in log[0]

    # Every session of maria issued up to now ends: this browser's (even a copy of its cookie),
    # the other browser's and the app's; omar's do not.
    name, value = maria_elsewhere.session_cookie
    assert not signed_in_ok(maria) and not signed_in_ok(maria_elsewhere)
    assert sc.request("GET", "/private", [("Cookie", "%s=%s" % (name, value)), API]).status == 401
    assert not bearer_ok(sc, maria_app["token"])
    assert signed_in_ok(omar) and bearer_ok(sc, omar_app["token"])
    assert metric(sc, 'sidecar_account_deletions_total{outcome="revoked"} 1')
    sc.logged(lambda out: '"account deleted"' in out)  # the line and the answer race
    lines = [l for l in sc.output().splitlines() if '"account deleted"' in l]
    assert len(lines) == 1 and '"outcome":"revoked"' in lines[0], lines
    assert "maria@example.com" not in sc.output()  # no emails in the log without log.pii

    time.sleep(1.1)  # a later sign-in is a new account: it works
    assert signed_in_ok(web_user(sc, apple, browser, "maria@example.com"))


def test_native_revoke_uses_the_bundle_id_and_needs_no_origin(start_native):
    sc, apple = start_native()
    app_session = signed_in(sc, apple, email="maria@example.com")
    r = sc.request("POST", "/.auth/revoke", bearer(app_session["token"]))
    assert r.status == 200, (r.status, r.body)
    assert r.json() == {"revoked": True, "apple": "revoked"}
    log = revocations(apple)
    assert [(e["client_id"], e["token_type_hint"], e["token_known"]) for e in log] == [(BUNDLE, "refresh_token", True)]
    assert not bearer_ok(sc, app_session["token"])
    # The app's authorization has no token left at Apple.
    left = apple.control("POST", "/emulator/revoke-consent", {"client_id": BUNDLE, "email": "maria@example.com"})
    assert left.json()["revoked_tokens"] == 0


def test_a_cross_site_cookie_request_is_refused_and_changes_nothing(start_native, browser):
    sc, apple = start_native()
    b = web_user(sc, apple, browser, "maria@example.com")
    for headers in ([API, ("Origin", "https://evil.example")],
                    [API, ("Sec-Fetch-Site", "cross-site"), origin(sc)],
                    [API, ("Referer", "https://evil.example/page")],
                    [API]):  # neither Origin nor Referer: not provably from this site
        r = b.request("POST", "/.auth/revoke", headers)
        assert r.status == 403, (headers, r.status, r.body)
        assert r.json() == {"error": "cross_site"}
    r = b.request("POST", "/.auth/revoke", [HTML, ("Sec-Fetch-Site", "same-site")])
    assert r.status == 403 and r.header("Content-Type").startswith("text/html")
    assert signed_in_ok(b)
    assert revocations(apple) == []
    assert metric(sc, 'sidecar_account_deletions_total{outcome="cross_site"} 5')


def test_apple_down_is_502_and_nothing_is_revoked(start_native, browser):
    sc, apple = start_native()
    b = web_user(sc, apple, browser, "maria@example.com")
    other = web_user(sc, apple, browser, "maria@example.com")
    app_session = signed_in(sc, apple, email="maria@example.com")
    apple.stop()
    r = b.request("POST", "/.auth/revoke", [API, origin(sc)])
    assert r.status == 502, (r.status, r.body)
    assert r.json() == {"error": "apple_unavailable", "reason": "apple_unreachable"}
    assert not r.header_all("Set-Cookie")
    r = sc.request("POST", "/.auth/revoke", bearer(app_session["token"]))
    assert r.status == 502 and r.json()["error"] == "apple_unavailable"
    page = b.request("POST", "/.auth/revoke", [HTML, ("Sec-Fetch-Site", "same-origin")])
    assert page.status == 502 and b"nothing was changed. Try again in a moment." in page.body
    assert b"Reason <code>apple_unreachable</code>" in page.body
    # The user can retry: every session still works.
    assert signed_in_ok(b) and signed_in_ok(other) and bearer_ok(sc, app_session["token"])
    assert metric(sc, 'sidecar_account_deletions_total{outcome="apple_failed"} 3')


def test_a_session_without_a_refresh_token_is_revoked_locally(start_native):
    sc, apple = start_native()
    cred = device(apple, email="maria@example.com")
    r = post_native(sc, {"identityToken": cred["identityToken"]})  # no authorizationCode: no refresh token
    assert r.status == 200, r.body
    token = r.json()["token"]
    r = sc.request("POST", "/.auth/revoke", bearer(token))
    assert r.status == 200 and r.json() == {"revoked": True, "apple": "no_refresh_token"}, r.body
    assert revocations(apple) == []
    assert not bearer_ok(sc, token)


def test_a_browser_is_sent_to_a_safe_rd_and_never_elsewhere(start_native, browser):
    sc, apple = start_native()
    b = web_user(sc, apple, browser, "maria@example.com")
    r = b.request("POST", "/.auth/revoke?rd=/goodbye", [HTML, ("Sec-Fetch-Site", "same-origin")])
    assert r.status == 303 and r.header("Location") == "/goodbye", (r.status, r.body)
    assert b.session_cookie is None
    time.sleep(1.1)
    b = web_user(sc, apple, browser, "maria@example.com")
    # rd in a form body (a plain HTML button), and an unsafe one: the page, no redirect.
    r = b.request("POST", "/.auth/revoke", [HTML, ("Sec-Fetch-Site", "same-origin")], body=b"rd=%2F%2Fevil.example")
    assert r.status == 200 and r.header("Location") is None, (r.status, r.body)
    assert b"Account deleted" in r.body


def test_without_a_session_it_is_401_and_only_post_is_allowed(start_native):
    sc, apple = start_native()
    r = sc.request("POST", "/.auth/revoke", [API, origin(sc)])
    assert r.status == 401 and r.json()["error"] == "unauthenticated"
    r = sc.request("GET", "/.auth/revoke", [API])
    assert r.status == 405 and r.header("Allow") == "POST"


def test_the_upstream_is_told_through_forward_to(start_native, browser):
    receiver = Receiver()
    try:
        sc, apple = start_native({"notifications": {"forward_to": "http://127.0.0.1:%d/hooks/apple" % receiver.port}})
        b = web_user(sc, apple, browser, "maria@example.com")
        sub = b.request("GET", "/.auth/me", [API]).json()["id"]
        before_ms = int(time.time() * 1000)
        assert b.request("POST", "/.auth/revoke", [API, origin(sc)]).status == 200
        assert wait_for(lambda: receiver.bodies, 10), "not forwarded"  # at once; 10 s of noise
        event = receiver.bodies[0]
        assert event["type"] == "account-deleted" and event["sub"] == sub and event["source"] == "sidecar", event
        assert before_ms <= event["event_time"] <= int(time.time() * 1000)
        assert event["aud"] == WEB and event["jti"]
        assert len(receiver.bodies) == 1
    finally:
        receiver.close()


def test_the_emulator_delivers_a_signed_notification_to_a_url_itself(start_native, browser):
    # What an operator's CI does without writing a JWT signer: Apple's consent-revoked event
    # for a test user, POSTed by the emulator to the sidecar's notification endpoint.
    sc, apple = start_native()
    b = web_user(sc, apple, browser, "maria@example.com")
    omar = web_user(sc, apple, browser, "omar@example.com")
    url = "http://127.0.0.1:%d/.auth/apple/notifications" % sc.port
    r = apple.control("POST", "/emulator/notify", {"type": "consent-revoked", "user_email": "maria@example.com", "url": url})
    assert r.status == 200, r.body
    report = r.json()
    assert report["status"] == 200 and report["delivered"] is True and report["payload"].count(".") == 2, report
    assert not signed_in_ok(b) and signed_in_ok(omar)
    down = apple.control("POST", "/emulator/notify",
                         {"type": "email-disabled", "sub": "x", "url": "http://127.0.0.1:1/hook"}).json()
    assert down["delivered"] is False and "status" not in down and down["error"], down
