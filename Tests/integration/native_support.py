"""Shared by the native-app tests: a sidecar with a bundle id in
apple.native_audiences in front of an emulator that plays the device, and small helpers."""
import base64
import hashlib
import json
import os
import struct
import time

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from conftest import free_port, merge, seen

BUNDLE = "com.example.ios"          # listed in apple.native_audiences
UNLISTED = "com.example.unlisted"   # a real app of the team, but not listed
WEB = "com.example.web"             # the Services ID (web flow only)
JSON_HEADERS = [("Content-Type", "application/json"), ("Accept", "application/json")]


@pytest.fixture
def start_native(start_sidecar, start_emulator):
    """start_native(overrides=None) -> (Sidecar, Emulator): native_audiences = [BUNDLE]; the
    emulator knows BUNDLE and UNLISTED as apps; /pub/** is public, the rest needs a session."""
    def start(overrides=None):
        port = free_port()
        emulator = start_emulator(["http://127.0.0.1:%d/.auth/callback" % port],
                                  extra_args=["--client", BUNDLE, "--client", UNLISTED])
        base = {"apple": {"base_url": emulator.issuer, "native_audiences": [BUNDLE]},
                "access": {"public_paths": ["/pub/**"]}}
        sc = start_sidecar(merge(base, overrides), port=port)
        return sc, emulator
    return start


@pytest.fixture
def app(start_native):
    return start_native()


# -- helpers -------------------------------------------------------------------------------
def device(apple, client_id=BUNDLE, **fields):
    """What ASAuthorizationAppleIDCredential holds after Sign in with Apple on a device."""
    r = apple.control("POST", "/emulator/native", dict(client_id=client_id, **fields))
    assert r.status == 200, r.body
    return r.json()


def post_native(sc, body, headers=JSON_HEADERS):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return sc.request("POST", "/.auth/native", list(headers), data)


def body_of(cred, **extra):
    body = {"identityToken": cred["identityToken"], "authorizationCode": cred["authorizationCode"]}
    body.update(extra)
    return body


def signed_in(sc, apple, **fields):
    """A complete sign-in; returns the answer's JSON."""
    r = post_native(sc, body_of(device(apple, **fields)))
    assert r.status == 200, (r.status, r.body)
    return r.json()


def new_nonce(sc):
    r = sc.request("GET", "/.auth/native/nonce", [("Accept", "application/json")])
    assert r.status == 200, r.body
    return r.json()["nonce"]


def web_user(sc, apple, browser, email="maria@example.com"):
    """A browser signed in through the web flow (the same sub as the app's user)."""
    b = browser(sc, apple)
    assert b.login(email=email)[0].status == 303
    return b


def signed_in_ok(b):
    return b.get("/private").status == 200


def bearer_ok(sc, token):
    return sc.request("GET", "/private", bearer(token)).status == 200


def sha256_hex(text):
    return hashlib.sha256(text.encode()).hexdigest()


def bearer(token):
    return [("Authorization", "Bearer " + token), ("Accept", "application/json")]


def refused(r, status, reason):
    assert r.status == status, (r.status, r.body)
    assert r.json() == {"error": reason}, r.body
    assert r.header("Content-Type").startswith("application/json")


def metric(sc, line, timeout=5.0):
    """Waits for an exact sample line in /metrics (workers publish about once a second: 5 s
    leaves 4 s for a loaded 2-core machine)."""
    deadline = time.monotonic() + timeout
    while True:
        text = sc.admin("/metrics").body.decode()
        if line in text.splitlines() or time.monotonic() > deadline:
            return line in text.splitlines()
        time.sleep(0.1)


def apple_revocations(apple, at_least=1, timeout=5.0):
    """What Apple's token revocation endpoint received, from the emulator's own record
    (GET /emulator/revocations), as (client_id, token_type_hint, token_known,
    client_authenticated, error) per call. Polled until it holds `at_least` calls: logout
    revokes in the background, after its answer. `token_known` is true only for a token the
    emulator issued to that very client_id (one it then really revokes). 5 s: the call goes out
    at once after the answer; the rest covers a loaded 2-core machine."""
    deadline = time.monotonic() + timeout
    while True:
        log = apple.control("GET", "/emulator/revocations").json()
        if len(log) >= at_least or time.monotonic() > deadline:
            return [(e.get("client_id"), e.get("token_type_hint"), e.get("token_known"),
                     e.get("client_authenticated"), e.get("error")) for e in log]
        time.sleep(0.05)


def seal_native_nonce(secret_b64, expires_at, nonce_id=None):
    """A NativeNonce sealed exactly as the sidecar seals one (Sealer: HKDF-SHA256 key and key id
    per purpose, AES-256-GCM over version ‖ key id ‖ nonce, the context as associated data)."""
    secret = base64.b64decode(secret_b64)

    def derive(info, n):
        return HKDF(algorithm=hashes.SHA256(), length=n, salt=b"sidecar sealer v1", info=info).derive(secret)
    key, key_id = derive(b"key native-nonce", 32), derive(b"key-id native-nonce", 4)
    header = b"\x01" + key_id
    iv = os.urandom(12)
    plaintext = b"\x01\x10" + (nonce_id or os.urandom(16)) + struct.pack(">q", expires_at)
    sealed = AESGCM(key).encrypt(iv, plaintext, header + b"native-nonce")
    return base64.urlsafe_b64encode(header + iv + sealed).rstrip(b"=").decode()
