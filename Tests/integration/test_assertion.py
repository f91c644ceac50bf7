"""The signed identity assertion: an ES256 JWT
on every authenticated forwarded request and on `/.auth/check`'s answer, verified here with
libraries that share no code with the sidecar (PyJWT for the JWT, `cryptography` for the raw
ECDSA check), against the keys `/.auth/jwks.json` publishes."""
import base64
import hashlib
import json
import os
import re
import signal
import stat
import subprocess
import time

import jwt
import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from conftest import merge, poll, sidecar_binary, to_yaml
from native_support import (  # noqa: F401 (fixtures)
    app, bearer, body_of, device, post_native, seen, signed_in, start_native, web_user)

HEADER = "X-Auth-Assertion"
AUDIENCE = "https://app.internal.example"
CLAIMS = {"iss", "aud", "sub", "email", "email_verified", "is_private_email", "name", "sid", "session_issued_at",
          "auth_time", "jti", "iat", "exp"}


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def pem_key(path, curve=ec.SECP256R1()):
    key = ec.generate_private_key(curve)
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    return key


def thumbprint(public_key):
    """RFC 7638 JWK thumbprint of a P-256 public key, computed independently."""
    numbers = public_key.public_numbers()
    x = base64.urlsafe_b64encode(numbers.x.to_bytes(32, "big")).rstrip(b"=").decode()
    y = base64.urlsafe_b64encode(numbers.y.to_bytes(32, "big")).rstrip(b"=").decode()
    canonical = '{"crv":"P-256","kty":"EC","x":"%s","y":"%s"}' % (x, y)
    return base64.urlsafe_b64encode(hashlib.sha256(canonical.encode()).digest()).rstrip(b"=").decode()


def jwks(sc):
    r = sc.request("GET", "/.auth/jwks.json")
    assert r.status == 200, (r.status, r.body)
    assert r.header("Content-Type").startswith("application/jwk-set+json")
    assert re.fullmatch(r"public, max-age=\d+", r.header("Cache-Control")), r.header("Cache-Control")
    return r.json()


def verify(token, key_set, audience, issuer):
    """PyJWT with the published JWK Set: signature, alg pinned to ES256, aud, iss, exp."""
    header = jwt.get_unverified_header(token)
    matches = [k for k in key_set["keys"] if k["kid"] == header["kid"]]
    assert len(matches) == 1, (header, key_set)
    key = jwt.PyJWK(matches[0]).key
    return jwt.decode(token, key, algorithms=["ES256"], audience=audience, issuer=issuer,
                      options={"require": ["exp", "iat", "sub", "jti"]})


def verify_raw(token, key_set):
    """The signature once more with `cryptography` alone: raw r ‖ s (64 bytes) → DER → ECDSA."""
    head, payload, signature = token.split(".")
    raw = b64url_decode(signature)
    assert len(raw) == 64
    kid = json.loads(b64url_decode(head))["kid"]
    jwk = [k for k in key_set["keys"] if k["kid"] == kid][0]
    public = ec.EllipticCurvePublicNumbers(
        int.from_bytes(b64url_decode(jwk["x"]), "big"), int.from_bytes(b64url_decode(jwk["y"]), "big"),
        ec.SECP256R1()).public_key()
    der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    public.verify(der, (head + "." + payload).encode(), ec.ECDSA(hashes.SHA256()))


def echo(sc, headers):
    r = sc.request("GET", "/echo", headers)
    assert r.status == 200, (r.status, r.body[:300])
    return r.json()


def forwarded(sc, headers):
    values = seen(echo(sc, headers), HEADER)
    assert len(values) == 1, values
    return values[0]


@pytest.fixture
def signed(start_native, tmp_path):
    """(sidecar, emulator, key file) with assertions on, a configured key and audience."""
    key_file = tmp_path / "assertion.pem"
    pem_key(key_file)

    def start(overrides=None):
        sc, apple = start_native(merge({"assertion": {"enabled": True, "private_key_file": str(key_file),
                                                      "audience": AUDIENCE}}, overrides))
        return sc, apple, key_file
    return start


# -- the assertion on forwarded requests -----------------------------------------------------
def test_forwarded_request_carries_an_assertion_with_exact_claims(signed):
    sc, apple, key_file = signed()
    cred = device(apple, email="jose@example.com")
    answer = post_native(sc, body_of(cred, firstName="José", lastName="Ruiz")).json()
    before = int(time.time())
    token = forwarded(sc, bearer(answer["token"]))
    key_set = jwks(sc)
    assert len(key_set["keys"]) == 1
    published = key_set["keys"][0]
    assert {k: published[k] for k in ("kty", "crv", "alg", "use")} == {
        "kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig"}
    assert set(published) == {"kty", "crv", "x", "y", "kid", "alg", "use"}, "a private member is published"
    configured = serialization.load_pem_private_key(key_file.read_bytes(), None)
    assert published["kid"] == thumbprint(configured.public_key())

    assert jwt.get_unverified_header(token) == {"alg": "ES256", "kid": published["kid"], "typ": "JWT"}
    claims = verify(token, key_set, AUDIENCE, sc.config["public_url"])
    verify_raw(token, key_set)
    # Exactly as the README tells an upstream to do it (PyJWKClient fetches the set itself).
    keys = jwt.PyJWKClient("http://127.0.0.1:%d/.auth/jwks.json" % sc.port)
    assert jwt.decode(token, keys.get_signing_key_from_jwt(token).key, algorithms=["ES256"], audience=AUDIENCE,
                      issuer=sc.config["public_url"]) == claims
    assert set(claims) == CLAIMS | {"real_user_status"}, "a native first sign-in says whether the user looks real"
    assert claims["real_user_status"] == 2 and claims["is_private_email"] is False
    assert claims["auth_time"] <= claims["session_issued_at"] <= claims["iat"]
    assert claims["iss"] == sc.config["public_url"] and claims["aud"] == AUDIENCE
    assert claims["sub"] == cred["user"] and claims["email"] == "jose@example.com"
    assert claims["email_verified"] is True and claims["name"] == "José Ruiz"
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", claims["sid"]) and re.fullmatch(r"[A-Za-z0-9_-]{22}", claims["jti"])
    # Signed for the request above: between `before` and now (whole seconds, with slack);
    # both ends are read around it, so a slow machine only widens the window.
    assert before - 2 <= claims["iat"] <= time.time() + 1
    assert claims["exp"] == claims["iat"] + 60  # assertion.ttl's default


def test_a_cookie_session_gets_one_too_and_a_name_less_user_has_no_name_claim(signed, browser):
    sc, apple, _ = signed()
    b = web_user(sc, apple, browser, email="maria@example.com")
    r = b.get("/echo")
    assert r.status == 200, r.body[:300]
    [token] = seen(r.json(), HEADER)
    claims = verify(token, jwks(sc), AUDIENCE, sc.config["public_url"])
    assert set(claims) == CLAIMS - {"name"}
    assert claims["email"] == "maria@example.com"
    assert seen(r.json(), "X-Auth-User-Id") == [claims["sub"]]


def test_assertion_is_reused_within_its_ttl_and_renewed_after(signed):
    sc, apple, _ = signed({"assertion": {"ttl": "4s"}})
    answer = signed_in(sc, apple)
    first = forwarded(sc, bearer(answer["token"]))
    assert forwarded(sc, bearer(answer["token"])) == first, "signed per request, not per session"
    with sc.conn() as c:  # another connection, same worker: still the same signature
        r = c.request("GET", "/echo", bearer(answer["token"]))
        assert seen(r.json(), HEADER) == [first]
    # Renewed once three quarters of the ttl are gone (3 s of 4), before it expires (4 s after
    # it was signed, which was before this poll began); +3 s covers a loaded 2-core machine.
    renewed = poll(lambda: (lambda t: t if t != first else None)(forwarded(sc, bearer(answer["token"]))),
                   timeout=7, step=0.25)
    assert renewed, "the assertion was never renewed"
    old = jwt.decode(first, options={"verify_signature": False})
    new = verify(renewed, jwks(sc), AUDIENCE, sc.config["public_url"])
    assert new["sid"] == old["sid"] and new["jti"] != old["jti"] and new["iat"] > old["iat"]
    assert new["exp"] == new["iat"] + 4


def test_two_sessions_get_different_sid_and_jti(signed):
    sc, apple, _ = signed()
    a = jwt.decode(forwarded(sc, bearer(signed_in(sc, apple)["token"])), options={"verify_signature": False})
    b = jwt.decode(forwarded(sc, bearer(signed_in(sc, apple)["token"])), options={"verify_signature": False})
    assert a["sid"] != b["sid"] and a["jti"] != b["jti"] and a["sub"] == b["sub"]


# -- client copies ---------------------------------------------------------------------------
FORGED = [(HEADER, "forged.one.x"), ("x-auth-assertion", "forged.two.x"), ("X_Auth_Assertion", "forged.three.x"),
          ("X-AUTH-ASSERTION", "forged.four.x"), (HEADER, "forged.five.x")]


def test_client_copies_of_the_header_are_stripped_in_every_spelling(signed):
    sc, apple, _ = signed()
    token = signed_in(sc, apple)["token"]
    values = seen(echo(sc, bearer(token) + FORGED), HEADER)
    assert len(values) == 1 and "forged" not in values[0], values
    verify(values[0], jwks(sc), AUDIENCE, sc.config["public_url"])
    # Without a session, on a public path: none at all reaches the upstream.
    r = sc.request("GET", "/pub/echo", FORGED)
    assert r.status == 200 and seen(r.json(), HEADER) == [], r.body[:300]


def test_renamed_header_is_used_and_the_default_name_is_not_injected(signed):
    sc, apple, _ = signed({"headers": {"assertion": "X-Identity-JWT"}})
    token = signed_in(sc, apple)["token"]
    e = echo(sc, bearer(token) + [("X-Identity-JWT", "forged.x.y")])
    [value] = seen(e, "X-Identity-JWT")
    verify(value, jwks(sc), AUDIENCE, sc.config["public_url"])
    assert seen(e, HEADER) == []


# -- /.auth/check ----------------------------------------------------------------------------
def test_check_answers_with_the_assertion(signed, browser):
    sc, apple, _ = signed()
    b = web_user(sc, apple, browser, email="maria@example.com")
    r = b.request("GET", "/.auth/check", [("Accept", "application/json"), (HEADER, "forged.x.y")])
    assert r.status == 200, r.body
    [token] = r.header_all(HEADER)
    claims = verify(token, jwks(sc), AUDIENCE, sc.config["public_url"])
    assert claims["sub"] == r.header("X-Auth-User-Id") and claims["email"] == "maria@example.com"
    # The same session forwarded gets the same (cached) assertion.
    assert seen(b.get("/echo").json(), HEADER) == [token]
    r = sc.request("GET", "/.auth/check", [("Accept", "application/json")])
    assert r.status == 401 and r.header_all(HEADER) == []


# -- keys: rotation, generation, disabled ----------------------------------------------------
def test_sighup_with_a_new_key_keeps_the_previous_one_published(signed):
    sc, apple, key_file = signed()
    token = signed_in(sc, apple)["token"]
    old_assertion = forwarded(sc, bearer(token))
    old_kid = jwt.get_unverified_header(old_assertion)["kid"]
    new_key = pem_key(key_file)
    sc.signal(signal.SIGHUP)
    assert poll(lambda: len(jwks(sc)["keys"]) == 2), "the new key was not published"
    key_set = jwks(sc)
    assert [k["kid"] for k in key_set["keys"]] == [thumbprint(new_key.public_key()), old_kid]
    new_assertion = forwarded(sc, bearer(token))
    assert jwt.get_unverified_header(new_assertion)["kid"] == thumbprint(new_key.public_key())
    # Both verify against what is published now.
    verify(old_assertion, key_set, AUDIENCE, sc.config["public_url"])
    verify(new_assertion, key_set, AUDIENCE, sc.config["public_url"])
    assert sc.logged(lambda out: "stays published" in out)  # polled: see Sidecar.logged
    # A reload that does not change the key keeps the set as it is.
    assert sc.sighup(), "the reload failed"  # waited for (its log line), not slept for
    assert [k["kid"] for k in jwks(sc)["keys"]] == [k["kid"] for k in key_set["keys"]]


def test_a_configured_key_file_that_does_not_exist_is_generated_there_and_kept(start_native, tmp_path):
    key_file = tmp_path / "keys" / "assertion.pem"
    key_file.parent.mkdir()
    overrides = {"assertion": {"enabled": True, "private_key_file": str(key_file)}}
    sc, apple = start_native(overrides)
    assert key_file.exists(), sc.output()
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    key = serialization.load_pem_private_key(key_file.read_bytes(), None)
    assert isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == "secp256r1"
    kid = thumbprint(key.public_key())
    assert [k["kid"] for k in jwks(sc)["keys"]] == [kid]
    claims = verify(forwarded(sc, bearer(signed_in(sc, apple)["token"])), jwks(sc), sc.config["public_url"],
                    sc.config["public_url"])  # audience defaults to public_url's origin
    assert claims["aud"] == sc.config["public_url"]
    assert "-----BEGIN" not in sc.output()
    sc.stop()
    again, _ = start_native(overrides)
    assert [k["kid"] for k in jwks(again)["keys"]] == [kid], "a restart did not reuse the written key"


def test_without_a_key_file_a_generated_key_survives_reloads_with_a_warning(start_native):
    sc, apple = start_native({"assertion": {"enabled": True}})
    assert "assertion.private_key_file" in sc.output() and "lost on restart" in sc.output()
    [key] = jwks(sc)["keys"]
    token = forwarded(sc, bearer(signed_in(sc, apple)["token"]))
    assert sc.sighup(), "the reload failed"  # waits for the reload's log line (5 s)
    assert jwks(sc)["keys"] == [key], "a reload rotated the generated key"
    verify(token, jwks(sc), sc.config["public_url"], sc.config["public_url"])


def test_disabled_means_no_header_and_no_jwks(start_native):
    sc, apple = start_native()
    token = signed_in(sc, apple)["token"]
    e = echo(sc, bearer(token) + FORGED)
    assert seen(e, HEADER) == [], "a client copy passed, or one was injected"
    assert sc.request("GET", "/.auth/jwks.json").status == 404


# -- check -----------------------------------------------------------------------------------
def run_check(config_path):
    return subprocess.run([str(sidecar_binary()), "check", "--config", str(config_path)],
                          capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize("kind", ["rsa", "p384", "garbage"])
def test_check_refuses_an_assertion_key_that_is_not_p256(signed, tmp_path, kind):
    sc, _, _ = signed()
    bad = tmp_path / ("bad-%s.pem" % kind)
    if kind == "rsa":
        bad.write_bytes(rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    elif kind == "p384":
        pem_key(bad, ec.SECP384R1())
    else:
        bad.write_text("not a key\n")
    config = merge(sc.config, {"assertion": {"private_key_file": str(bad)}})
    path = tmp_path / "bad.yaml"
    path.write_text(to_yaml(config) + "\n")
    done = run_check(path)
    assert done.returncode == 1, done.stdout + done.stderr
    line = [l for l in done.stderr.splitlines() if "assertion.private_key_file" in l]
    assert line and re.search(r"bad\.yaml:\d+:\d+", line[0]) and str(bad) in line[0], done.stderr
    expected = {"rsa": "is an RSA key", "p384": "is a P-384 key", "garbage": "not a PEM private key"}[kind]
    assert expected in line[0], done.stderr
    material = bad.read_text().splitlines()[1 if kind != "garbage" else 0]
    assert material not in done.stderr, "key material in a message"


def test_check_accepts_a_p256_key_and_does_not_write_a_missing_one(signed, tmp_path):
    sc, _, _ = signed()
    assert run_check(sc.config_path).returncode == 0
    missing = tmp_path / "later.pem"
    path = tmp_path / "later.yaml"
    path.write_text(to_yaml(merge(sc.config, {"assertion": {"private_key_file": str(missing)}})) + "\n")
    done = run_check(path)
    assert done.returncode == 0, done.stderr
    assert "does not exist yet" in done.stderr and not missing.exists()
