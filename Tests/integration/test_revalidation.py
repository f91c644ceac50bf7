"""Session.revalidate against the real binary and the real `sidecar
emulator`: a session due for revalidation has its Apple refresh token checked in the
background (the request that finds it due passes); only invalid_grant / invalid_request end it,
on every worker; Apple unreachable, 5xx, an HTML 502, malformed JSON and invalid_client keep it
and the check is not retried for 5 minutes; a confirmation is sealed into the cookie (and into
the token POST /native/refresh hands an app), so it is not repeated before the period."""
import base64
import json
import struct
import subprocess
import time

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from conftest import sidecar_binary
from native_support import (  # noqa: F401 (fixtures)
    BUNDLE, WEB, bearer, metric, signed_in, start_native,
    web_user, signed_in_ok, bearer_ok)
from test_notifications import wait_for

PERIOD = 2
REVALIDATE = {"session": {"revalidate": "%ds" % PERIOD}}
# Sessions carry whole seconds: one checked (or sealed) at t is due from floor(t) + period on,
# i.e. between period - 1 s and period after t. Tests that expect nothing to happen for a
# while after a check use this longer period: those steps then have 3 s, enough for a loaded
# 2-core machine. (Waits for a session to be due sleep period + 0.2 s: load only lengthens
# them.)
WINDOW_PERIOD = 4
WINDOWED = {"session": {"revalidate": "%ds" % WINDOW_PERIOD}}
HTML = ("Accept", "text/html,application/xhtml+xml")
COOKIE = "__Host-sidecar"  # loopback public_url: Secure cookies, so the __Host- name


def open_session(sc, token, cookie_name=COOKIE):
    """The sealed session's fields, opened as the sidecar opens them (Sealer: HKDF-SHA256 key per
    purpose, AES-256-GCM over version ‖ key id ‖ nonce, the cookie name as associated data;
    Session.encode for the payload)."""
    secret = base64.b64decode(sc.config["session"]["secrets"][0])
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=b"sidecar sealer v1", info=b"key session").derive(secret)
    raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    header, iv, sealed = raw[:5], raw[5:17], raw[17:]
    plain = AESGCM(key).decrypt(iv, sealed, header + cookie_name.encode())
    i = 1
    session_id = plain[i:i + 16]
    flags = plain[i + 16]
    i += 17
    sub = plain[i + 1:i + 1 + plain[i]].decode()
    i += 1 + plain[i]
    for flag in (4, 8):  # email, name: 2-byte lengths
        if flags & flag:
            i += 2 + int.from_bytes(plain[i:i + 2], "big")
    issued, expires, idle, last = struct.unpack(">qqqq", plain[i:i + 32])
    return {"id": session_id, "sub": sub, "issued_at": issued, "expires_at": expires, "idle_deadline": idle,
            "last_revalidation": last, "has_refresh_token": bool(flags & 16)}



def refreshes(apple):
    """The refresh grants the emulator received (the sign-ins' code exchanges left out)."""
    return [e for e in apple.control("GET", "/emulator/token-requests").json() if e.get("grant_type") == "refresh_token"]


def log_lines(sc, message):
    return [json.loads(l) for l in sc.output().splitlines() if ('"%s"' % message) in l]


def test_revoked_consent_ends_cookie_and_bearer_sessions_at_their_next_due_check(start_native, browser):
    sc, apple = start_native(WINDOWED)
    maria = web_user(sc, apple, browser)
    maria_app = signed_in(sc, apple, email="maria@example.com")
    omar = web_user(sc, apple, browser, "omar@example.com")
    assert open_session(sc, maria.session_cookie[1])["has_refresh_token"]
    # Maria removes the app in her Apple ID settings (web and app): Apple does not tell the
    # sidecar here; her refresh tokens simply stop working.
    r = apple.control("POST", "/emulator/revoke-consent", {"email": "maria@example.com"})
    assert r.json()["revoked_tokens"] == 2, r.body
    assert signed_in_ok(maria), "not due yet: nothing asked of Apple"
    assert refreshes(apple) == []
    time.sleep(WINDOW_PERIOD + 0.2)
    # The requests that find the sessions due pass; the checks run in the background.
    assert signed_in_ok(maria) and bearer_ok(sc, maria_app["token"])
    assert wait_for(lambda: not signed_in_ok(maria), 5), sc.log_tail()
    assert wait_for(lambda: not bearer_ok(sc, maria_app["token"]), 5)
    for _ in range(3):
        assert not signed_in_ok(maria) and not bearer_ok(sc, maria_app["token"])
    assert signed_in_ok(omar)
    assert sorted(e["client_id"] for e in refreshes(apple))[:2] == [BUNDLE, WEB]
    # The lines follow the revocations the requests above saw (they race: polled).
    sc.logged(lambda _: len(log_lines(sc, "session ended by revalidation")) >= 2)
    ended = log_lines(sc, "session ended by revalidation")
    assert [l["reason"] for l in ended] == ["apple_invalid_grant"] * 2, ended
    assert metric(sc, 'sidecar_session_revalidations_total{result="ended",reason="apple_invalid_grant"} 2')
    assert wait_for(lambda: len(log_lines(sc, "session revalidated")) == 1, 5)  # omar's
    assert "maria@example.com" not in sc.output()


def test_invalid_request_ends_the_session_too(start_native, browser):
    sc, apple = start_native(REVALIDATE)
    b = web_user(sc, apple, browser)
    apple.arm("invalid_request")
    time.sleep(PERIOD + 0.2)
    assert signed_in_ok(b)
    assert wait_for(lambda: not signed_in_ok(b), 5), sc.log_tail()
    sc.logged(lambda _: log_lines(sc, "session ended by revalidation"))  # the line races the revocation
    assert [l["reason"] for l in log_lines(sc, "session ended by revalidation")] == ["apple_invalid_request"]


@pytest.mark.parametrize("fault, reason", [
    ("http_500", "apple_server_error"),
    ("http_502_html", "apple_server_error"),
    ("malformed_json", "apple_invalid_response"),
    ("invalid_client", "apple_invalid_client"),
    ("hang", "apple_timeout"),
    ("unreachable", "apple_unreachable"),
])
def test_when_apple_cannot_say_the_session_is_kept_and_not_rechecked_for_five_minutes(
        start_native, browser, fault, reason):
    # upstream_timeout bounds calls to Apple too: a hanging Apple is given up on after 2 s.
    sc, apple = start_native(dict(REVALIDATE, upstream_timeout="2s"))
    b = web_user(sc, apple, browser)
    app_session = signed_in(sc, apple, email="omar@example.com")
    if fault == "unreachable":
        apple.stop()
    else:
        apple.arm(fault, fault)
    time.sleep(PERIOD + 0.2)
    assert signed_in_ok(b) and bearer_ok(sc, app_session["token"])
    # In the background: at once, or 2 s for a hanging Apple; 8 s covers a loaded 2-core machine.
    assert wait_for(lambda: len(log_lines(sc, "session revalidation inconclusive; session kept")) == 2, 8), \
        sc.log_tail()
    kept = log_lines(sc, "session revalidation inconclusive; session kept")
    assert [l["reason"] for l in kept] == [reason, reason] and all(l["retry_in_s"] == 300 for l in kept), kept
    if fault != "unreachable":
        # Were the check repeated before 5 minutes, this would end the sessions.
        apple.control("DELETE", "/emulator/faults")
        apple.arm("invalid_grant", "invalid_grant")
    time.sleep(PERIOD + 0.2)
    for _ in range(3):
        assert signed_in_ok(b) and bearer_ok(sc, app_session["token"])
    # Time for a check that should not have started to end the sessions (something that must
    # not happen: a slow machine can only make this weaker, never fail it).
    time.sleep(0.5)
    assert signed_in_ok(b) and bearer_ok(sc, app_session["token"])
    assert log_lines(sc, "session ended by revalidation") == []
    if fault != "unreachable":
        assert apple.control("GET", "/emulator/faults").json()["armed"] == ["invalid_grant", "invalid_grant"]
    assert metric(sc, 'sidecar_session_revalidations_total{result="kept",reason="%s"} 2' % reason)


def test_a_confirmation_is_sealed_into_the_cookie_and_not_repeated_within_the_period(start_native, browser):
    sc, apple = start_native(WINDOWED)
    b = web_user(sc, apple, browser)
    name, first = b.session_cookie
    before = open_session(sc, first, name)
    time.sleep(WINDOW_PERIOD + 0.2)
    r = b.get("/private")
    assert r.status == 200
    assert wait_for(lambda: len(log_lines(sc, "session revalidated")) == 1, 5), sc.log_tail()
    assert [e["client_id"] for e in refreshes(apple)] == [WEB]
    # The next request carries the confirmation home: a re-sealed cookie, same session.
    r = b.get("/private")
    assert r.status == 200 and r.header_all("Set-Cookie"), r.headers
    second = b.session_cookie[1]
    after = open_session(sc, second, name)
    assert after["id"] == before["id"] and after["issued_at"] == before["issued_at"]
    assert after["last_revalidation"] >= before["last_revalidation"] + WINDOW_PERIOD
    # Within the period nothing more: no new check, no new cookie.
    for _ in range(5):
        r = b.get("/private")
        assert r.status == 200 and not r.header_all("Set-Cookie")
    # A stale copy of the old cookie (another tab) gets the confirmation, not a second check.
    stale = sc.request("GET", "/private", [("Cookie", "%s=%s" % (name, first)), HTML])
    assert stale.status == 200 and stale.header_all("Set-Cookie")
    assert len(refreshes(apple)) == 1
    assert metric(sc, 'sidecar_session_revalidations_total{result="confirmed",reason="ok"} 1')
    assert metric(sc, 'sidecar_session_reseals_total{reason="revalidated"} 2')
    # A period later it is checked again.
    time.sleep(WINDOW_PERIOD + 0.2)
    assert signed_in_ok(b)
    assert wait_for(lambda: len(refreshes(apple)) == 2, 5)


def test_a_bearer_session_gets_its_confirmation_with_native_refresh(start_native):
    sc, apple = start_native(WINDOWED)
    answer = signed_in(sc, apple, email="maria@example.com")
    before = open_session(sc, answer["token"])
    time.sleep(WINDOW_PERIOD + 0.2)
    assert bearer_ok(sc, answer["token"])
    assert wait_for(lambda: len(log_lines(sc, "session revalidated")) == 1, 5), sc.log_tail()
    assert [e["client_id"] for e in refreshes(apple)] == [BUNDLE]
    for _ in range(3):
        assert bearer_ok(sc, answer["token"])
    assert len(refreshes(apple)) == 1, "repeated before the app refreshed its token"
    r = sc.request("POST", "/.auth/native/refresh", bearer(answer["token"]))
    assert r.status == 200, r.body
    after = open_session(sc, r.json()["token"])
    assert after["id"] == before["id"]
    assert after["last_revalidation"] >= before["last_revalidation"] + WINDOW_PERIOD
    assert bearer_ok(sc, r.json()["token"])
    assert len(refreshes(apple)) == 1


def test_zero_disables_revalidation(start_native, browser):
    sc, apple = start_native({"session": {"revalidate": "0"}})
    b = web_user(sc, apple, browser)
    apple.control("POST", "/emulator/revoke-consent", {"email": "maria@example.com"})
    time.sleep(PERIOD + 0.2)
    for _ in range(3):
        assert signed_in_ok(b)
    time.sleep(0.5)  # a negative check, as above
    assert signed_in_ok(b) and refreshes(apple) == []


@pytest.mark.parametrize("period", ["%ds" % PERIOD, "24h"])
def test_a_non_zero_revalidate_is_not_warned_about_in_run_or_check(start_native, period):
    """Builds before revalidation warned, for a non-zero session.revalidate only, that
    "revalidation with Apple's refresh token is not available in this build" (at
    session.revalidate, in run and in check). That warning must be gone now that it is
    honoured: this fails if run's start-up or `sidecar check` still says so, or warns about
    session.revalidate at all. (With revalidate 0 the old build was silent too, so
    test_zero_disables_revalidation cannot tell.)"""
    sc, apple = start_native({"session": {"revalidate": period}})
    assert sc.request("GET", "/pub/x").status == 200  # fully started: its start-up lines are out
    done = subprocess.run([str(sidecar_binary()), "check", "--config", str(sc.config_path)],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stdout + done.stderr
    for name, text in (("run", sc.output()), ("check", done.stdout + done.stderr)):
        assert "not available in this build" not in text, (name, text)
        warned = [l for l in text.splitlines() if "session.revalidate" in l and "warn" in l.lower()]
        assert warned == [], (name, warned)
