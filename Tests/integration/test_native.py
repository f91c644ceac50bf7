"""Native-app sign-in end to end: the real binary, the real
`sidecar emulator` standing in for a device (POST /emulator/native) and for Apple's token
endpoint: the sign-in, every malicious identity token, malformed bodies, nonces.
Bearer sessions and refresh: test_native_bearer.py."""
import base64
import json
import os
import re
import subprocess
import time

import pytest

from conftest import poll, sidecar_binary
from native_support import (  # noqa: F401 (fixtures)
    BUNDLE, JSON_HEADERS, UNLISTED, WEB, app, apple_revocations, bearer, body_of, device, metric, new_nonce, post_native, refused,
    seal_native_nonce, seen, sha256_hex, signed_in, start_native)


# -- iOS sign-in -----------------------------------------------------------------------------
def test_ios_sign_in_answers_a_bearer_session_token(app):
    sc, apple = app
    cred = device(apple, email="maria.ruiz@example.com")
    r = post_native(sc, body_of(cred, firstName="Maria", lastName="Ruiz"))
    assert r.status == 200, r.body
    answer = r.json()
    assert set(answer) == {"token", "expires_at", "session_expires_at", "user"}
    assert answer["expires_at"] <= answer["session_expires_at"]
    assert answer["user"] == {"id": cred["user"], "email": "maria.ruiz@example.com", "name": "Maria Ruiz"}
    assert time.time() < answer["expires_at"] <= time.time() + 24 * 3600 + 5
    me = sc.request("GET", "/.auth/me", bearer(answer["token"])).json()
    assert me["id"] == cred["user"] and me["email_verified"] is True and me["name"] == "Maria Ruiz"
    out = sc.logged(lambda out: "native sign-in succeeded" in out and out)  # the line and the answer race
    assert out, sc.output()
    assert "eyJ" not in out and answer["token"] not in out and cred["authorizationCode"] not in out
    assert "maria.ruiz@example.com" not in out  # log.pii is off
    assert metric(sc, 'sidecar_native_signins_total{outcome="ok"} 1')


def test_the_same_person_is_the_same_user_on_web_and_in_the_app(app, browser):
    sc, apple = app
    b = browser(sc, apple)
    assert b.login(email="john.appleseed@example.com")[0].status == 303
    web = b.get("/.auth/me").json()
    native = signed_in(sc, apple, email="john.appleseed@example.com")
    assert native["user"]["id"] == web["id"]


def test_code_is_exchanged_as_apple_expects_for_an_app(app):
    sc, apple = app
    signed_in(sc, apple)
    requests = apple.control("GET", "/emulator/token-requests").json()
    assert len(requests) == 1
    exchange = requests[0]
    # client_id = the bundle id (and a client secret whose sub is the bundle id: it verified),
    # no redirect_uri, no code_verifier.
    assert exchange == {"grant_type": "authorization_code", "client_id": BUNDLE, "client_authenticated": True,
                        "fields": ["client_id", "client_secret", "code", "grant_type"]}
    assert sc.logged(lambda out: '"refresh_token":"true"' in out.replace(" ", "")), sc.output()


def test_session_holds_the_apple_refresh_token_and_logout_revokes_it_for_the_app(app):
    """Bearer logout revokes the app's Apple refresh token with client_id = the bundle id. Checked in the emulator's record of /auth/revoke calls, not by asking
    revoke-consent (which deletes tokens itself, so it cannot tell whether logout did): fails
    if logout never calls Apple, calls it with the Services ID (token_known false), without a
    valid client secret, or more than once."""
    sc, apple = app
    answer = signed_in(sc, apple)
    assert apple_revocations(apple, at_least=0) == []  # nothing before the logout
    assert sc.request("POST", "/.auth/logout", bearer(answer["token"])).status == 204
    assert apple_revocations(apple) == [(BUNDLE, "refresh_token", True, True, None)]
    assert poll(lambda: '"apple refresh token revoked"' in sc.output())
    assert apple_revocations(apple) == [(BUNDLE, "refresh_token", True, True, None)]
    # Apple really dropped it: no token left for that authorization (one was there before,
    # test_refresh_token_is_there_before_logout).
    left = apple.control("POST", "/emulator/revoke-consent", {"client_id": BUNDLE, "sub": answer["user"]["id"]})
    assert left.json()["revoked_tokens"] == 0
    assert sc.request("GET", "/private", bearer(answer["token"])).status == 401


def test_refresh_token_is_there_before_logout(app):
    sc, apple = app
    answer = signed_in(sc, apple)
    r = apple.control("POST", "/emulator/revoke-consent", {"client_id": BUNDLE, "sub": answer["user"]["id"]})
    assert r.json()["revoked_tokens"] == 1


def test_sign_in_without_an_authorization_code(app):
    sc, apple = app
    cred = device(apple)
    r = post_native(sc, {"identityToken": cred["identityToken"]})
    assert r.status == 200, r.body
    assert apple.control("GET", "/emulator/token-requests").json() == []


def test_name_from_the_body_is_kept_cleaned_and_the_body_email_ignored(app):
    sc, apple = app
    cred = device(apple, email="jose@example.com", hideMyEmail=True)
    r = post_native(sc, body_of(cred, firstName="Jos\u00e9\u0007", lastName="Ruiz\u0085",
                                email="attacker@evil.example"))
    assert r.status == 200, r.body
    user = r.json()["user"]
    assert user["name"] == "Jos\u00e9 Ruiz"
    assert user["email"].endswith("@privaterelay.appleid.com")
    e = sc.request("GET", "/private", bearer(r.json()["token"])).json()
    assert seen(e, "X-Auth-Name") == ["Jos%C3%A9%20Ruiz"]
    assert seen(e, "X-Auth-Email") == [user["email"]] and seen(e, "X-Auth-Private-Email") == ["true"]
    assert "attacker" not in json.dumps(e)


def test_long_names_are_cut_to_256_bytes_each(app):
    sc, apple = app
    r = post_native(sc, body_of(device(apple), firstName="\u00e9" * 300, lastName="L"))
    assert r.status == 200
    first, last = r.json()["user"]["name"].rsplit(" ", 1)
    assert len(first.encode()) == 256 and last == "L"


def test_person_name_components_shape_is_accepted(app):
    sc, apple = app
    r = post_native(sc, body_of(device(apple), fullName={"givenName": "Ann", "familyName": None}))
    assert r.status == 200 and r.json()["user"]["name"] == "Ann"


def test_no_name_is_null(app):
    sc, apple = app
    assert signed_in(sc, apple)["user"]["name"] is None


def test_access_policy_refuses_with_403_before_any_exchange(start_native):
    sc, apple = start_native({"access": {"allowed_email_domains": ["corp.example"]}})
    refused(post_native(sc, body_of(device(apple, email="maria.ruiz@example.com"))), 403, "policy_denied_email")
    assert apple.control("GET", "/emulator/token-requests").json() == []
    assert post_native(sc, body_of(device(apple, email="ok@corp.example"))).status == 200


def test_every_sign_in_is_a_new_session(app):
    sc, apple = app
    a, b = signed_in(sc, apple), signed_in(sc, apple)
    assert a["token"] != b["token"] and a["user"]["id"] == b["user"]["id"]
    assert sc.request("POST", "/.auth/logout", bearer(a["token"])).status == 204
    assert sc.request("GET", "/.auth/me", bearer(a["token"])).status == 401
    assert sc.request("GET", "/.auth/me", bearer(b["token"])).status == 200


# -- the identity token: every malicious variant -------------------------------------------
@pytest.mark.parametrize("fault,reason", [
    ("alg_none", "token_algorithm_not_allowed"), ("hs256_with_public_key", "token_algorithm_not_allowed"),
    ("unknown_kid", "token_unknown_key"), ("wrong_iss", "token_wrong_issuer"), ("wrong_aud", "token_wrong_audience"),
    ("expired", "token_expired"), ("iat_future", "token_issued_in_future"),
    ("tampered_payload", "token_bad_signature"), ("truncated", "token_"), ("extra_segment", "token_malformed"),
])
def test_every_malicious_identity_token_is_401_and_no_session(app, fault, reason):
    sc, apple = app
    r = post_native(sc, body_of(device(apple, fault=fault)))
    assert r.status == 401, (r.status, r.body)
    assert r.json()["error"].startswith(reason) and "token" not in r.json()
    assert apple.control("GET", "/emulator/token-requests").json() == []  # Apple never saw the code
    assert "eyJ" not in sc.output()
    assert signed_in(sc, apple)["token"]  # and it keeps serving


@pytest.mark.parametrize("token", [
    "garbage", "a.b.c", "eyJhbGciOiJSUzI1NiJ9..", "\u00e9\u00e9.\u00e9.\u00e9", "x" * 15000,
])
def test_garbage_identity_tokens_are_401(app, token):
    sc, apple = app
    r = post_native(sc, {"identityToken": token, "authorizationCode": "c"})
    assert r.status == 401 and r.json()["error"].startswith("token_"), r.body


def test_a_native_body_over_its_16_kib_cap_is_413(app):
    sc, _ = app
    assert post_native(sc, {"identityToken": "x" * 70000, "authorizationCode": "c"}).status == 413


@pytest.mark.parametrize("client_id", [WEB, UNLISTED])
def test_token_for_an_audience_not_listed_is_401(app, client_id):
    # The Services ID's tokens come from the web flow (the Android relay is not configured),
    # and another app of the same team is not this sidecar's app.
    sc, apple = app
    refused(post_native(sc, body_of(device(apple, client_id=client_id))), 401, "token_wrong_audience")


def test_token_from_another_issuer_key_set_is_401(app, start_emulator):
    sc, apple = app
    (apple.workdir / "other").mkdir()
    stranger = start_emulator(["http://127.0.0.1:1/cb"], extra_args=["--client", BUNDLE,
                                                                      "--keys-dir", str(apple.workdir / "other")])
    # Same claims shape, signed by a key Apple never published: unknown kid (refetch once, still unknown).
    r = post_native(sc, body_of(device(stranger)))
    assert r.status == 401 and r.json()["error"] in ("token_unknown_key", "token_wrong_issuer"), r.body


def test_code_of_another_user_is_refused(app):
    sc, apple = app
    maria = device(apple, email="maria.ruiz@example.com")
    john = device(apple, email="john.appleseed@example.com")
    refused(post_native(sc, {"identityToken": maria["identityToken"], "authorizationCode": john["authorizationCode"]}),
            401, "code_sub_mismatch")


@pytest.mark.parametrize("fault,status,reason", [
    ("invalid_grant", 401, "exchange_invalid_grant"), ("invalid_client", 502, "exchange_invalid_client"),
    ("http_500", 502, "apple_server_error"), ("no_id_token", 502, "no_id_token"),
    ("wrong_aud", 401, "code_token_wrong_audience"), ("tampered_payload", 401, "code_token_bad_signature"),
])
def test_apple_refusing_the_code_gives_no_session(app, fault, status, reason):
    sc, apple = app
    cred = device(apple)
    apple.arm(fault)
    refused(post_native(sc, body_of(cred)), status, reason)
    assert sc.logged(lambda out: "native sign-in failed" in out and reason in out), sc.output()
    # The client secret refused is the configuration's fault: an error line for the operator.
    operator = lambda out: '"level":"error"' in out.replace(" ", "") and "Apple refused the client secret" in out
    assert sc.logged(operator) if fault == "invalid_client" else not operator(sc.output()), sc.output()


def test_a_used_code_is_refused(app):
    sc, apple = app
    cred = device(apple)
    assert post_native(sc, body_of(cred)).status == 200
    refused(post_native(sc, body_of(cred)), 401, "exchange_invalid_grant")


# -- malformed bodies ------------------------------------------------------------------------
@pytest.mark.parametrize("body,reason", [
    (b"not json", "body_invalid"), (b"", "body_invalid"), (b"[]", "body_invalid"), (b'"x"', "body_invalid"),
    (b"{", "body_invalid"), (b"{}", "identity_token_missing"), (b'{"identityToken": ""}', "identity_token_missing"),
    (b'{"identityToken": null}', "identity_token_missing"), (b'{"identityToken": 5}', "body_invalid"),
    (b'{"identityToken": ["a"]}', "body_invalid"), (b'{"identityToken": "a", "nonce": 1}', "body_invalid"),
    (b'{"identityToken": "a", "firstName": {}}', "body_invalid"),
    (b'{"identityToken": "a", "authorizationCode": true}', "body_invalid"),
    (b'{"identityToken": "a", "fullName": "Ann"}', "body_invalid"),
    (b'\xff\xfe{"identityToken": "a"}', "body_invalid"),
])
def test_malformed_bodies_are_400(app, body, reason):
    sc, _ = app
    r = post_native(sc, body)
    assert r.status == 400, (r.status, r.body)
    assert r.json()["error"] == reason, r.body
    # An invalid body says what the endpoint reads, so the app's developer need not guess.
    assert ("JSON object" in r.json()["message"]) if reason == "body_invalid" else ("message" not in r.json())
    assert metric(sc, 'sidecar_native_signins_total{outcome="%s"} 1' % reason)


def test_a_form_encoded_body_is_told_json_is_expected(app):
    sc, _ = app
    r = post_native(sc, b"identityToken=abc&authorizationCode=def",
                    [("Content-Type", "application/x-www-form-urlencoded"), ("Accept", "application/json")])
    assert r.status == 400, (r.status, r.body)
    assert r.json()["error"] == "body_invalid"
    assert "Content-Type: application/json" in r.json()["message"]


def test_body_over_max_body_bytes_is_413(start_native):
    sc, apple = start_native({"limits": {"max_body_bytes": "2KiB"}})
    big = json.dumps({"identityToken": "x", "pad": "y" * 4096}).encode()
    assert post_native(sc, big).status == 413
    chunked = sc.request("POST", "/.auth/native", JSON_HEADERS + [("Transfer-Encoding", "chunked")],
                         b"%x\r\n%s\r\n0\r\n\r\n" % (len(big), big))
    assert chunked.status == 413
    assert signed_in(sc, apple)["token"]  # a real body still fits


def test_methods_and_unconfigured_endpoints(app, start_auth_sidecar):
    sc, _ = app
    assert sc.request("GET", "/.auth/native", JSON_HEADERS).status == 405
    assert sc.request("POST", "/.auth/native/nonce", JSON_HEADERS).status == 405
    assert sc.request("GET", "/.auth/native/refresh", JSON_HEADERS).status == 405
    web_only, _ = start_auth_sidecar()
    for method, path in [("POST", "/.auth/native"), ("GET", "/.auth/native/nonce"), ("POST", "/.auth/native/refresh")]:
        assert web_only.request(method, path, JSON_HEADERS, b"{}" if method == "POST" else b"").status == 404


# -- nonces ----------------------------------------------------------------------------------
def test_nonce_endpoint(app):
    sc, _ = app
    asked = time.time()
    r = sc.request("GET", "/.auth/native/nonce", [("Accept", "application/json")])
    answered = time.time()
    assert r.status == 200 and r.header("Cache-Control") == "no-store"
    answer = r.json()
    assert set(answer) == {"nonce", "expires_at"}
    # Valid 10 minutes from when it was sealed, between the request and the answer (whole
    # seconds: 1 s either side); measured around the request, so load cannot move it out.
    assert asked - 1 <= answer["expires_at"] - 600 <= answered + 1, (asked, answer["expires_at"], answered)
    assert re.fullmatch(r"[A-Za-z0-9_-]{40,}", answer["nonce"])
    assert new_nonce(sc) != answer["nonce"]


@pytest.mark.parametrize("hashed", [False, True], ids=["raw", "sha256-hex"])
def test_sign_in_with_a_nonce_raw_or_hashed(app, hashed):
    sc, apple = app
    nonce = new_nonce(sc)
    cred = device(apple, nonce=sha256_hex(nonce) if hashed else nonce)
    r = post_native(sc, body_of(cred, nonce=nonce))
    assert r.status == 200, r.body


@pytest.mark.parametrize("hashed", [False, True], ids=["raw", "sha256-hex"])
def test_a_nonce_is_single_use(app, hashed):
    sc, apple = app
    nonce = new_nonce(sc)
    carried = sha256_hex(nonce) if hashed else nonce
    assert post_native(sc, body_of(device(apple, nonce=carried), nonce=nonce)).status == 200
    # A second token Apple issued with the same nonce: refused.
    refused(post_native(sc, body_of(device(apple, nonce=carried), nonce=nonce)), 401, "nonce_replayed")
    # The first token replayed without naming its nonce: still refused (the token carries it).
    refused(post_native(sc, {"identityToken": device(apple, nonce=carried)["identityToken"]}), 401, "nonce_replayed")
    assert metric(sc, 'sidecar_native_signins_total{outcome="nonce_replayed"} 2')
    assert sc.logged(lambda out: "nonce_replayed" in out), sc.output()


def test_a_token_replayed_without_its_nonce_in_the_body_is_refused(app):
    sc, apple = app
    cred = device(apple, nonce=new_nonce(sc))
    assert post_native(sc, {"identityToken": cred["identityToken"]}).status == 200
    refused(post_native(sc, {"identityToken": cred["identityToken"]}), 401, "nonce_replayed")


def test_token_nonce_must_match_the_body_nonce(app):
    sc, apple = app
    mine, other = new_nonce(sc), new_nonce(sc)
    refused(post_native(sc, body_of(device(apple, nonce=other), nonce=mine)), 401, "token_nonce_mismatch")
    refused(post_native(sc, body_of(device(apple), nonce=mine)), 401, "token_nonce_missing")
    refused(post_native(sc, body_of(device(apple, nonce=mine, fault="wrong_nonce"), nonce=mine)), 401,
            "token_nonce_mismatch")
    # A failed sign-in does not spend the nonce.
    assert post_native(sc, body_of(device(apple, nonce=mine), nonce=mine)).status == 200


@pytest.mark.parametrize("forge", ["random", "other_secret", "tampered", "truncated"])
def test_forged_nonces_are_refused(app, forge):
    sc, apple = app
    if forge == "random":
        nonce = base64.urlsafe_b64encode(os.urandom(59)).rstrip(b"=").decode()
    elif forge == "other_secret":
        nonce = seal_native_nonce(base64.b64encode(os.urandom(32)).decode(), int(time.time()) + 600)
    elif forge == "tampered":
        good = new_nonce(sc)
        nonce = good[:30] + ("A" if good[30] != "A" else "B") + good[31:]
    else:
        nonce = new_nonce(sc)[:-6]
    refused(post_native(sc, body_of(device(apple, nonce=nonce), nonce=nonce)), 401, "nonce_invalid")


def test_a_hashed_nonce_in_the_body_names_the_mix_up(app):
    """The body carries the nonce as /native/nonce gave it; only Apple's request may take its
    SHA-256 hex. A body with the hex gets an error that says so, not a bare nonce_invalid."""
    import hashlib
    sc, apple = app
    nonce = new_nonce(sc)
    hashed = hashlib.sha256(nonce.encode()).hexdigest()
    r = post_native(sc, body_of(device(apple, nonce=hashed), nonce=hashed))
    assert r.status == 400, (r.status, r.body)
    answer = r.json()
    assert answer["error"] == "nonce_hashed" and "exactly as /native/nonce gave it" in answer["message"], answer
    # The same token with the nonce as given signs in: the hex in Apple's request is fine.
    assert post_native(sc, body_of(device(apple, nonce=hashed), nonce=nonce)).status == 200


def test_expired_nonce_is_refused(app):
    sc, apple = app
    secret = sc.config["session"]["secrets"][0]
    # The Python sealer is faithful: a fresh nonce it seals is accepted ...
    fresh = seal_native_nonce(secret, int(time.time()) + 600)
    assert post_native(sc, body_of(device(apple, nonce=fresh), nonce=fresh)).status == 200
    # ... and one whose 10 minutes are over is refused, named in the body or not.
    stale = seal_native_nonce(secret, int(time.time()) - 1)
    refused(post_native(sc, body_of(device(apple, nonce=stale), nonce=stale)), 401, "nonce_expired")
    refused(post_native(sc, {"identityToken": device(apple, nonce=stale)["identityToken"]}), 401, "nonce_expired")


def test_native_require_nonce(start_native):
    sc, apple = start_native({"apple": {"native_require_nonce": True}})
    refused(post_native(sc, body_of(device(apple))), 400, "nonce_required")
    nonce = new_nonce(sc)
    assert post_native(sc, body_of(device(apple, nonce=nonce), nonce=nonce)).status == 200
    assert "native_require_nonce" not in sc.output()


def test_start_up_warns_when_nonces_are_set_optional_and_only_then(app, start_native):
    sc, _ = app
    assert "native_require_nonce" not in sc.output()  # the default: defaults never warn
    sc, _ = start_native({"apple": {"native_require_nonce": False}})
    out = sc.output()
    assert "native_require_nonce" in out and "replayed" in out


def test_check_accepts_native_audiences_and_shows_them(app):
    sc, _ = app
    done = subprocess.run([str(sidecar_binary()), "check", "--config", str(sc.config_path)],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"native\s+com\.example\.ios \(nonce optional\)", done.stdout), done.stdout
    assert "native_require_nonce" not in done.stderr and "apple.native_audiences:" not in done.stderr
