"""Apple's server-to-server notifications against the real binary:
revoking events end every session of that user and no other, to the millisecond; other
events revoke nothing; forged payloads are 400 and harmless; duplicates are acknowledged
once; verified events are forwarded to the upstream until it takes them, across restarts."""
import base64
import json
import os
import signal
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from conftest import free_port
from native_support import (  # noqa: F401 (fixtures)
    BUNDLE, WEB, bearer, bearer_ok, refused, signed_in, start_native)

HTML = ("Accept", "text/html,application/xhtml+xml")


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def emulator_key(emulator_keys):
    pem = sorted(Path(emulator_keys).glob("*.pem"))[0]
    return serialization.load_pem_private_key(pem.read_bytes(), None), pem.stem


def sign(claims, key, kid, alg="RS256", header=None, hmac_key=None):
    head = {"alg": alg, "kid": kid}
    head.update(header or {})
    signing_input = (b64(json.dumps(head).encode()) + "." + b64(json.dumps(claims).encode())).encode()
    if alg == "RS256":
        sig = key.sign(signing_input, padding.PKCS1v15(), hashes.SHA256())
    elif alg == "HS256":
        import hmac
        import hashlib
        sig = hmac.new(hmac_key, signing_input, hashlib.sha256).digest()
    else:
        sig = b""
    return signing_input.decode() + "." + b64(sig)


def event_claims(issuer, sub, type_="consent-revoked", aud="com.example.web", event_ms=None, as_string=True,
                 jti=None, iat=None, exp=None):
    now = int(time.time())
    events = {"type": type_, "sub": sub, "event_time": event_ms if event_ms is not None else int(time.time() * 1000)}
    if type_.startswith("email"):
        events.update(email="x@privaterelay.appleid.com", is_private_email="true")
    return {"iss": issuer, "aud": aud, "iat": iat if iat is not None else now, "exp": exp if exp is not None else now + 86400,
            "jti": jti or b64(os.urandom(12)), "events": json.dumps(events) if as_string else events}


def post(sc, payload, raw=None):
    body = raw if raw is not None else json.dumps({"payload": payload}).encode()
    return sc.request("POST", "/.auth/apple/notifications", [("Content-Type", "application/json")], body)


@pytest.fixture
def world(start_auth_sidecar, browser, emulator_keys):
    """A sidecar, its emulator, the emulator's signing key, and a way to sign users in."""
    def make(overrides=None):
        sc, apple = start_auth_sidecar(overrides)
        key, kid = emulator_key(emulator_keys)

        def user(email):
            b = browser(sc, apple)
            assert b.login(email=email)[0].status == 303
            me = b.request("GET", "/.auth/me", [("Accept", "application/json")]).json()
            return b, me["id"]
        return sc, apple, key, kid, user
    return make


def signed_in_ok(sc, b):
    return b.get("/private").status == 200


@pytest.mark.parametrize("type_", ["consent-revoked", "account-delete", "account-deleted"])
@pytest.mark.parametrize("as_string", [True, False], ids=["events-string", "events-object"])
@pytest.mark.parametrize("aud", ["com.example.web", "com.example.ios"], ids=["services-id", "bundle-id"])
def test_a_revoking_event_ends_every_session_of_that_user_and_no_other(world, type_, as_string, aud):
    # Apple addresses events to the primary App ID: the Services ID or an app's bundle id; the
    # user's sessions end whichever it is (the same sub signs in on the web and in the app).
    sc, apple, key, kid, user = world({"apple": {"native_audiences": ["com.example.ios"]}})
    maria1, sub = user("maria@example.com")
    maria2, sub2 = user("maria@example.com")
    other, other_sub = user("omar@example.com")
    assert sub == sub2 and sub != other_sub
    bearer = maria1.session_cookie[1]
    r = post(sc, sign(event_claims(apple.issuer, sub, type_, aud=aud, as_string=as_string), key, kid))
    assert r.status == 200, r.body
    assert not signed_in_ok(sc, maria1) and not signed_in_ok(sc, maria2)
    assert sc.request("GET", "/api", [("Authorization", "Bearer " + bearer)]).status == 401
    assert signed_in_ok(sc, other)
    again, _ = user("maria@example.com")  # issued after the event (milliseconds later): not revoked
    assert signed_in_ok(sc, again)


@pytest.mark.parametrize("type_", ["consent-revoked", "account-delete"])
@pytest.mark.parametrize("aud", [BUNDLE, WEB], ids=["bundle-id", "services-id"])
def test_a_revoking_event_ends_the_native_app_sessions_of_that_user(start_native, emulator_keys, type_, aud):
    """A session from POST /.auth/native (issued to the bundle id, used as a bearer) ends with
    the user's revoking event, addressed to the app or to the Services ID: its bearer is
    refused on proxied paths, /me and /check, and POST /native/refresh cannot revive it (nor
    does a token refreshed before the event survive). Would catch revocation that only reaches
    cookie sessions or only sessions of the event's audience, and a refresh that re-seals a
    revoked session. Another user's app session lives on; a sign-in after the event works."""
    sc, apple = start_native()
    key, kid = emulator_key(emulator_keys)
    maria = signed_in(sc, apple, email="maria@example.com")
    refreshed = sc.request("POST", "/.auth/native/refresh", bearer(maria["token"]))
    assert refreshed.status == 200, refreshed.body
    maria_refreshed = refreshed.json()["token"]
    omar = signed_in(sc, apple, email="omar@example.com")
    sub = maria["user"]["id"]
    assert bearer_ok(sc, maria["token"]) and bearer_ok(sc, maria_refreshed) and bearer_ok(sc, omar["token"])
    r = post(sc, sign(event_claims(apple.issuer, sub, type_, aud=aud), key, kid))
    assert r.status == 200, r.body
    for token in (maria["token"], maria_refreshed):
        for path in ("/private", "/.auth/me", "/.auth/check"):
            assert sc.request("GET", path, bearer(token)).status == 401, path
        refused(sc.request("POST", "/.auth/native/refresh", bearer(token)), 401, "session_revoked")
    assert bearer_ok(sc, omar["token"])
    again = signed_in(sc, apple, email="maria@example.com")
    assert again["user"]["id"] == sub and bearer_ok(sc, again["token"])


@pytest.mark.parametrize("type_", ["email-disabled", "email-enabled"])
def test_email_events_revoke_nothing(world, type_):
    sc, apple, key, kid, user = world()
    b, sub = user("maria@example.com")
    assert post(sc, sign(event_claims(apple.issuer, sub, type_), key, kid)).status == 200
    assert signed_in_ok(sc, b)


def test_the_cutoff_is_compared_in_milliseconds(world):
    sc, apple, key, kid, user = world()
    before_ms = int(time.time() * 1000)
    time.sleep(0.05)  # sessions carry their issue time in milliseconds: 50 ms apart is enough
    b, sub = user("maria@example.com")
    assert post(sc, sign(event_claims(apple.issuer, sub, event_ms=before_ms), key, kid)).status == 200
    assert signed_in_ok(sc, b), "an event from before the sign-in revoked it"
    assert post(sc, sign(event_claims(apple.issuer, sub, event_ms=int(time.time() * 1000)), key, kid)).status == 200
    assert not signed_in_ok(sc, b)


def forged_payloads(apple, key, kid, sub):
    good = event_claims(apple.issuer, sub)
    other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    real = sign(good, key, kid)
    h, p, s = real.split(".")
    tampered_claims = dict(good, aud="com.example.web")
    tampered_claims["events"] = json.dumps({"type": "consent-revoked", "sub": "someone-else", "event_time": 1})
    public_pem = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return {
        "bad_signature": sign(good, other_key, kid),
        "alg_none": sign(good, None, kid, alg="none"),
        "hs256_with_public_key": sign(good, None, kid, alg="HS256", hmac_key=public_pem),
        "wrong_iss": sign(dict(good, iss="https://evil.example"), key, kid),
        "wrong_aud": sign(dict(good, aud="com.evil.app"), key, kid),
        "unlisted_bundle_id": sign(dict(good, aud="com.example.ios"), key, kid),
        "unknown_kid": sign(good, key, "no-such-kid"),
        "tampered_payload": h + "." + b64(json.dumps(tampered_claims).encode()) + "." + s,
        "truncated": real[:-10],
        "garbage": "not.a.jwt",
        "iat_in_future": sign(dict(good, iat=int(time.time()) + 3600), key, kid),
        "expired": sign(dict(good, iat=int(time.time()) - 7200, exp=int(time.time()) - 3600), key, kid),
        "events_not_json": sign(dict(good, events="{not json"), key, kid),
        "events_missing": sign({k: v for k, v in good.items() if k != "events"}, key, kid),
        "jti_missing": sign({k: v for k, v in good.items() if k != "jti"}, key, kid),
    }


def test_forged_payloads_are_400_and_harmless(world):
    sc, apple, key, kid, user = world()
    b, sub = user("maria@example.com")
    for name, token in forged_payloads(apple, key, kid, sub).items():
        r = post(sc, token)
        assert r.status == 400, (name, r.status, r.body)
        assert signed_in_ok(sc, b), name
    for raw in [b"", b"not json", b"[]", b'{"payload": 42}', b'{"nopayload": "x"}', b'{"payload": ""}']:
        assert post(sc, None, raw=raw).status == 400, raw
    assert sc.request("GET", "/.auth/apple/notifications").status == 405
    text = sc.admin("/metrics").body.decode()
    assert 'sidecar_apple_notifications_total{outcome="revoked"} 0' in text


def test_a_duplicate_jti_is_acknowledged_and_acted_on_once(world):
    sc, apple, key, kid, user = world()
    b, sub = user("maria@example.com")
    token = sign(event_claims(apple.issuer, sub, "email-disabled", jti="dup-1"), key, kid)
    assert post(sc, token).status == 200
    assert post(sc, token).status == 200

    def lines():
        return [json.loads(l) for l in sc.output().splitlines() if '"apple notification"' in l]
    sc.logged(lambda _: len(lines()) >= 2)  # the lines and the answers race (see Sidecar.logged)
    assert [l["outcome"] for l in lines()] == ["acknowledged", "duplicate"], lines()


class Receiver:
    """The upstream's webhook: records each POST; answers `failures` times 503 first."""

    def __init__(self, port=None, failures=0):
        outer = self
        self.bodies, self.failures, self.calls = [], failures, 0

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.calls += 1
                if outer.failures > 0:
                    outer.failures -= 1
                    self.send_response(503)
                else:
                    outer.bodies.append(json.loads(body))
                    self.send_response(204)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port or 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def wait_for(fn, timeout=10):
    """True once fn() is; False if it never was within `timeout` seconds (polled every 0.1 s)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if fn():
            return True
        time.sleep(0.1)
    return False


def test_a_verified_event_is_forwarded_and_retried_while_the_receiver_answers_503(world):
    receiver = Receiver(failures=2)
    try:
        sc, apple, key, kid, user = world({"notifications": {"forward_to": "http://127.0.0.1:%d/hooks/apple" % receiver.port}})
        b, sub = user("maria@example.com")
        assert post(sc, sign(event_claims(apple.issuer, sub, "account-delete", jti="fw-1"), key, kid)).status == 200
        # Back-off 1 s, then 2 s (whole seconds: up to 1 s more each): delivered by about 5 s;
        # 15 s covers a loaded 2-core machine.
        assert wait_for(lambda: receiver.bodies, 15), "not delivered after retries (%d calls)" % receiver.calls
        assert receiver.calls == 3
        event = receiver.bodies[0]
        assert event["type"] == "account-deleted" and event["sub"] == sub and event["jti"] == "fw-1"
        assert event["source"] == "apple" and isinstance(event["event_time"], int)
        metrics = lambda: sc.admin("/metrics").body.decode()  # noqa: E731 (published about once a second)
        # Published about once a second: 5 s leaves 4 s for a loaded 2-core machine. The
        # retries were counted before the delivery, so the same publication shows them.
        assert wait_for(lambda: 'sidecar_notification_forwards_total{result="delivered"} 1' in metrics(), 5)
        assert 'sidecar_notification_forwards_total{result="retried"} 2' in metrics()
    finally:
        receiver.close()


def sample(sc, name):
    """The value of one sample line of /metrics (name with its labels), or None."""
    for line in sc.admin("/metrics").body.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return None


@pytest.mark.parametrize("store", ["memory", "file"])
def test_a_forward_is_retried_while_the_receiver_is_down_and_delivered_once_it_is_up(world, tmp_path, store):
    """notifications.forward_to while nothing listens there, in one live process: the event
    waits in the store (sidecar_store_pending_forwards 1), is retried with back-off (the
    failure logged once, not per attempt), and is delivered exactly once as soon as the
    receiver comes up, after which the gauge is 0. Would catch a forward dropped after a
    failed connect, a forwarder that stops retrying or only retries on the next event or a
    restart, a gauge that never shows (or never clears) the pending event, and duplicates."""
    port = free_port()  # the receiver is down for now
    overrides = {"notifications": {"forward_to": "http://127.0.0.1:%d/hook" % port}}
    if store == "file":
        overrides["revocations"] = {"store": "file:%s" % (tmp_path / "store")}
    sc, apple, key, kid, user = world(overrides)
    b, sub = user("maria@example.com")
    assert sample(sc, "sidecar_store_pending_forwards") == 0
    assert post(sc, sign(event_claims(apple.issuer, sub, "consent-revoked", jti="down-1"), key, kid)).status == 200
    retried = 'sidecar_notification_forwards_total{result="retried"}'
    # Tries at 0, 1 and 3 s (back-off 1 s, 2 s, whole seconds), published about once a
    # second: 10 s covers a loaded 2-core machine.
    assert wait_for(lambda: (sample(sc, retried) or 0) >= 2, 10), sc.log_tail()
    assert sample(sc, "sidecar_store_pending_forwards") == 1
    assert sample(sc, 'sidecar_notification_forwards_total{result="delivered"}') == 0
    receiver = Receiver(port=port)
    try:
        # The next try is at most one back-off step away (4 s, or 8 s had the count above been
        # read late, +1 s of whole seconds); 15 s covers a loaded 2-core machine.
        assert wait_for(lambda: receiver.bodies, 15), "not delivered once the receiver was up\n" + sc.log_tail()
        # Published about once a second: 5 s leaves 4 s for a loaded 2-core machine.
        assert wait_for(lambda: sample(sc, "sidecar_store_pending_forwards") == 0, 5)
        assert wait_for(lambda: sample(sc, 'sidecar_notification_forwards_total{result="delivered"}') == 1, 5)
        assert [e["jti"] for e in receiver.bodies] == ["down-1"] and receiver.bodies[0]["sub"] == sub
        assert receiver.calls == 1
        assert sc.proc.poll() is None  # the same process all along
        out = sc.logged(lambda out: "notification forwarding recovered" in out and out)  # races the delivery
        assert out, sc.output()
        assert out.count("notification forward failed; retrying with back-off") == 1, out
        assert out.count("notification forwarding recovered") == 1, out
    finally:
        receiver.close()


def test_an_undelivered_event_survives_a_restart_with_the_file_store(world, start_sidecar, tmp_path):
    port = free_port()  # the receiver is down for now
    store = tmp_path / "store"
    secret = base64.b64encode(os.urandom(32)).decode()
    overrides = {"notifications": {"forward_to": "http://127.0.0.1:%d/hook" % port},
                 "revocations": {"store": "file:%s" % store}, "session": {"secrets": [secret]}}
    sc, apple, key, kid, user = world(overrides)
    b, sub = user("maria@example.com")
    assert post(sc, sign(event_claims(apple.issuer, sub, "consent-revoked", jti="keep-1"), key, kid)).status == 200
    time.sleep(0.5)
    sc.proc.kill()  # crash with the event still queued
    sc.proc.wait(5)
    sc.stopped = True
    receiver = Receiver(port=port)
    try:
        again = start_sidecar(dict(overrides, apple={"base_url": apple.issuer}, access={"public_paths": ["/pub/**"]}),
                              port=sc.port)
        # The restarted forwarder tries at once or when the stored back-off (a few seconds at
        # most here) is over; 20 s covers a loaded 2-core machine.
        assert wait_for(lambda: receiver.bodies, 20), again.log_tail()
        assert receiver.bodies[0]["jti"] == "keep-1"
        assert not signed_in_ok(again, b)  # and the revocation itself survived too
    finally:
        receiver.close()
