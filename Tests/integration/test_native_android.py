"""Android (and other non-Apple platforms) through the web flow: the relay
`POST /.auth/android/callback` hands Apple's form_post back to the app as an intent URL, and
`/.auth/native` accepts those web-flow tokens (aud = the Services ID) only with a sidecar
nonce, exchanging their code with the Services ID and the relay URL."""
import html
import json
import re
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

import pytest

import rawhttp
from conftest import free_port, merge
from native_support import (  # noqa: F401 (fixtures)
    BUNDLE, WEB, app, apple_revocations, bearer, device, metric, new_nonce, post_native, refused, sha256_hex, start_native)

ANDROID = "com.example.android"
OTHER_ANDROID = "com.example.android.beta"


@pytest.fixture
def start_android(start_sidecar, start_emulator):
    """start_android(packages, overrides) -> (Sidecar, Emulator, relay URL): the Services ID
    registered at the emulator with the web callback, the relay URL and the relay URL with
    ?package= for every listed package."""
    def start(packages=(ANDROID,), overrides=None):
        port = free_port()
        relay = "http://127.0.0.1:%d/.auth/android/callback" % port
        uris = ["http://127.0.0.1:%d/.auth/callback" % port, relay] + [relay + "?package=" + p for p in packages]
        emulator = start_emulator(uris, extra_args=["--client", BUNDLE])
        base = {"apple": {"base_url": emulator.issuer, "native_audiences": [BUNDLE], "android_packages": list(packages)},
                "access": {"public_paths": ["/pub/**"]}}
        sc = start_sidecar(merge(base, overrides), port=port)
        return sc, emulator, relay
    return start


def authorize(apple, redirect_uri, state="app-state", nonce=None, email="maria.ruiz@example.com"):
    """The app opens Apple's web authorization (as `sign_in_with_apple` does on Android):
    returns the form_post's action and fields."""
    query = [("client_id", WEB), ("redirect_uri", redirect_uri), ("response_type", "code id_token"),
             ("response_mode", "form_post"), ("scope", "name email"), ("state", state),
             ("emulator_auto_approve", email)]
    if nonce is not None:
        query.append(("nonce", nonce))
    target = "/auth/authorize?" + "&".join("%s=%s" % (k, quote(v, safe="")) for k, v in query)
    r = rawhttp.request(apple.port, "GET", target, timeout=5)
    assert r.status == 200, r.body
    page = r.body.decode()
    action = html.unescape(re.search(r'<form method="post" action="([^"]*)"', page).group(1))
    fields = [(html.unescape(n), html.unescape(v)) for n, v in
              re.findall(r'<input type="hidden" name="([^"]*)" value="([^"]*)">', page)]
    return action, fields


def relay(sc, action, fields):
    """Apple's form_post to the relay; returns the intent URL's query fields and its fragment."""
    target = action[action.index("/.auth/"):]
    r = sc.request("POST", target, [("Content-Type", "application/x-www-form-urlencoded")],
                   urlencode(fields).encode())
    assert r.status == 307, (r.status, r.body)
    location = r.header("Location")
    assert location.startswith("intent://callback?"), location
    query, _, fragment = location[len("intent://callback?"):].partition("#")
    return dict(parse_qsl(query, keep_blank_values=True)), fragment


def app_body(received, nonce=None, **extra):
    """What the Android app posts to /.auth/native from the intent's fields."""
    user = json.loads(received.get("user", "{}")).get("name", {})
    body = {"identityToken": received["id_token"], "authorizationCode": received["code"],
            "firstName": user.get("firstName"), "lastName": user.get("lastName")}
    if nonce is not None:
        body["nonce"] = nonce
    body.update(extra)
    return body


def test_relay_hands_the_fields_back_to_the_app_re_encoded(start_android):
    sc, _, _ = start_android()
    fields = [("code", "c 1&x#y"), ("id_token", "a.b.c"), ("state", "s;end#Intent;package=com.evil"),
              ("user", '{"name":{"firstName":"Jos\u00e9"}}'), ("extra", "dropped")]
    received, fragment = relay(sc, "/.auth/android/callback", fields)
    assert received == {k: v for k, v in fields if k != "extra"}
    assert fragment == "Intent;package=%s;scheme=signinwithapple;end" % ANDROID
    assert "c 1" not in sc.output() and "a.b.c" not in sc.output()  # field values are not logged


def test_relay_passes_a_cancel_on(start_android):
    sc, _, _ = start_android()
    received, _ = relay(sc, "/.auth/android/callback", [("error", "user_cancelled_authorize"), ("state", "s")])
    assert received == {"error": "user_cancelled_authorize", "state": "s"}


def test_relay_package_must_be_listed(start_android):
    sc, _, _ = start_android(packages=(ANDROID, OTHER_ANDROID))
    form = [("Content-Type", "application/x-www-form-urlencoded")]
    refused(sc.request("POST", "/.auth/android/callback", form, b"code=c"), 400, "relay_package_not_listed")
    refused(sc.request("POST", "/.auth/android/callback?package=com.evil.app", form, b"code=c"), 400,
            "relay_package_not_listed")
    _, fragment = relay(sc, "/.auth/android/callback?package=" + OTHER_ANDROID, [("code", "c")])
    assert "package=%s;" % OTHER_ANDROID in fragment
    refused(sc.request("POST", "/.auth/android/callback", form, b"code=%zz"), 400, "relay_package_not_listed")
    refused(sc.request("POST", "/.auth/android/callback?package=" + ANDROID, form, b"code=%zz"), 400,
            "relay_form_invalid")


def test_no_relay_without_packages(app):
    sc, _ = app
    r = sc.request("POST", "/.auth/android/callback", [("Content-Type", "application/x-www-form-urlencoded")], b"code=c")
    assert r.status == 404
    assert sc.request("GET", "/.auth/android/callback").status == 405


def test_relay_body_is_limited(start_android):
    sc, _, _ = start_android(overrides={"limits": {"max_body_bytes": "1KiB"}})
    r = sc.request("POST", "/.auth/android/callback", [("Content-Type", "application/x-www-form-urlencoded")],
                   b"code=" + b"x" * 2048)
    assert r.status == 413


@pytest.mark.parametrize("hashed", [False, True], ids=["raw", "sha256-hex"])
def test_whole_android_sign_in_ends_in_a_working_bearer(start_android, hashed):
    sc, apple, relay_url = start_android()
    nonce = new_nonce(sc)
    action, fields = authorize(apple, relay_url, nonce=sha256_hex(nonce) if hashed else nonce)
    assert action == relay_url
    received, _ = relay(sc, action, fields)
    assert received["state"] == "app-state"
    r = post_native(sc, app_body(received, nonce))
    assert r.status == 200, r.body
    answer = r.json()
    assert answer["user"]["email"] == "maria.ruiz@example.com" and answer["user"]["name"] == "Maria Ruiz"
    e = sc.request("GET", "/api/me", bearer(answer["token"])).json()
    assert [v for n, v in e["headers"] if n.lower() == "x-auth-email"] == ["maria.ruiz@example.com"]
    assert not [v for n, v in e["headers"] if n.lower() == "authorization"]
    # The code went to Apple with the Services ID and the relay URL, exactly as authorized.
    exchange = apple.control("GET", "/emulator/token-requests").json()[-1]
    assert exchange["client_id"] == WEB and exchange["redirect_uri"] == relay_url
    assert exchange["client_authenticated"] is True
    # ... and the session holds a Services ID refresh token, revoked at logout with the Services
    # ID: the emulator's record of /auth/revoke calls shows exactly that call, for a token it
    # issued to WEB (fails if logout skips Apple, or revokes with the bundle id or no secret).
    assert apple_revocations(apple, at_least=0) == []
    assert sc.request("POST", "/.auth/logout", bearer(answer["token"])).status == 204
    assert apple_revocations(apple) == [(WEB, "refresh_token", True, True, None)]
    assert sc.request("GET", "/api/me", bearer(answer["token"])).status == 401
    left = apple.control("POST", "/emulator/revoke-consent", {"client_id": WEB, "sub": answer["user"]["id"]})
    assert left.json()["revoked_tokens"] == 0


def test_android_sign_in_with_a_package_query(start_android):
    sc, apple, relay_url = start_android(packages=(ANDROID, OTHER_ANDROID))
    nonce = new_nonce(sc)
    redirect = relay_url + "?package=" + OTHER_ANDROID
    action, fields = authorize(apple, redirect, nonce=nonce)
    received, fragment = relay(sc, action, fields)
    assert "package=%s;" % OTHER_ANDROID in fragment
    # Without naming the package, the sidecar would exchange with the plain relay URL: Apple refuses.
    refused(post_native(sc, app_body(received, nonce)), 401, "exchange_invalid_grant")
    nonce = new_nonce(sc)
    action, fields = authorize(apple, redirect, nonce=nonce)
    received, _ = relay(sc, action, fields)
    r = post_native(sc, app_body(received, nonce, androidPackage=OTHER_ANDROID))
    assert r.status == 200, r.body
    assert apple.control("GET", "/emulator/token-requests").json()[-1]["redirect_uri"] == redirect
    refused(post_native(sc, app_body(received, nonce, androidPackage="com.evil.app")), 400, "relay_package_not_listed")


def test_web_flow_token_needs_a_sidecar_nonce_whatever_native_require_nonce_says(start_android):
    sc, apple, relay_url = start_android()
    # No nonce at all: refused, though native_require_nonce is false.
    action, fields = authorize(apple, relay_url)
    received, _ = relay(sc, action, fields)
    refused(post_native(sc, app_body(received)), 401, "android_nonce_required")
    # The app's own nonce (not sealed by the sidecar) in token and body: refused.
    action, fields = authorize(apple, relay_url, nonce="app-own-nonce")
    received, _ = relay(sc, action, fields)
    refused(post_native(sc, app_body(received, "app-own-nonce")), 401, "nonce_invalid")
    # A sidecar nonce in the token but not in the body: refused too.
    nonce = new_nonce(sc)
    action, fields = authorize(apple, relay_url, nonce=nonce)
    received, _ = relay(sc, action, fields)
    refused(post_native(sc, app_body(received)), 401, "android_nonce_required")
    assert metric(sc, 'sidecar_native_signins_total{outcome="android_nonce_required"} 2')
    # That refusal spent nothing: named in the body, the same nonce and token sign in.
    assert post_native(sc, app_body(received, nonce)).status == 200
    # iOS tokens are unaffected by the Android rule.
    assert post_native(sc, {"identityToken": device(apple)["identityToken"]}).status == 200


def test_check_names_the_relay_url_to_register(start_android):
    import subprocess
    from conftest import sidecar_binary
    sc, _, relay_url = start_android()
    done = subprocess.run([str(sidecar_binary()), "check", "--config", str(sc.config_path)],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert re.search(r"android\s+%s for %s" % (re.escape(relay_url), ANDROID), done.stdout), done.stdout
