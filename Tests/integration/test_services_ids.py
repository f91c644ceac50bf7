"""Several Services IDs (`apple.client_id` as a list): the web flow asks for the first and its
callback takes only a token for it; a token issued to another listed Services ID (an Android
app's own, through the relay) is accepted on `/.auth/native` with a sidecar nonce and its code
exchanged with that Services ID; Apple's notifications may be addressed to any of them, and
to nothing else."""
import html
import re
from urllib.parse import quote, urlsplit

import rawhttp
from conftest import free_port
from native_support import BUNDLE, WEB, apple_revocations, bearer, new_nonce, post_native, refused
from test_native_android import ANDROID, app_body, relay
from test_notifications import emulator_key, event_claims, post, sign

ANDROID_WEB = "com.example.android-web"   # a second Services ID, the Android app's


def start(start_sidecar, start_emulator, client_ids):
    port = free_port()
    web = "http://127.0.0.1:%d/.auth/callback" % port
    relay_url = "http://127.0.0.1:%d/.auth/android/callback" % port
    apple = start_emulator([web, relay_url], extra_args=["--client", "%s=%s" % (ANDROID_WEB, relay_url),
                                                         "--client", BUNDLE])
    sc = start_sidecar({"apple": {"base_url": apple.issuer, "client_id": client_ids, "native_audiences": [BUNDLE],
                                  "android_packages": [ANDROID]},
                        "access": {"public_paths": ["/pub/**"]}}, port=port)
    return sc, apple, relay_url


def authorize(apple, client_id, redirect_uri, nonce):
    query = [("client_id", client_id), ("redirect_uri", redirect_uri), ("response_type", "code id_token"),
             ("response_mode", "form_post"), ("scope", "name email"), ("state", "app-state"), ("nonce", nonce),
             ("emulator_auto_approve", "maria.ruiz@example.com")]
    r = rawhttp.request(apple.port, "GET", "/auth/authorize?" + "&".join("%s=%s" % (k, quote(v, safe="")) for k, v in query))
    assert r.status == 200, r.body
    page = r.body.decode()
    action = html.unescape(re.search(r'<form method="post" action="([^"]*)"', page).group(1))
    return action, [(html.unescape(n), html.unescape(v)) for n, v in
                    re.findall(r'<input type="hidden" name="([^"]*)" value="([^"]*)">', page)]


def test_an_android_app_signs_in_with_its_own_services_id(start_sidecar, start_emulator):
    sc, apple, relay_url = start(start_sidecar, start_emulator, [WEB, ANDROID_WEB])
    nonce = new_nonce(sc)
    action, fields = authorize(apple, ANDROID_WEB, relay_url, nonce)
    received, _ = relay(sc, action, fields)
    r = post_native(sc, app_body(received, nonce))
    assert r.status == 200, r.body
    token = r.json()["token"]
    exchange = apple.control("GET", "/emulator/token-requests").json()[-1]
    assert exchange["client_id"] == ANDROID_WEB and exchange["redirect_uri"] == relay_url
    assert exchange["client_authenticated"] is True
    # Its refresh token belongs to that Services ID: logout revokes it with that one.
    assert sc.request("POST", "/.auth/logout", bearer(token)).status == 204
    assert apple_revocations(apple) == [(ANDROID_WEB, "refresh_token", True, True, None)]
    # Still only with a nonce of the sidecar's.
    action, fields = authorize(apple, ANDROID_WEB, relay_url, "app-chosen-nonce")
    received, _ = relay(sc, action, fields)
    refused(post_native(sc, app_body(received)), 401, "android_nonce_required")


def test_an_unlisted_services_id_is_refused(start_sidecar, start_emulator):
    sc, apple, relay_url = start(start_sidecar, start_emulator, WEB)
    nonce = new_nonce(sc)
    action, fields = authorize(apple, ANDROID_WEB, relay_url, nonce)
    received, _ = relay(sc, action, fields)
    r = post_native(sc, app_body(received, nonce))
    assert r.status == 401, r.body


def test_the_web_flow_asks_for_the_first(start_sidecar, start_emulator, browser):
    sc, apple, _ = start(start_sidecar, start_emulator, [WEB, ANDROID_WEB])
    b = browser(sc, apple)
    _, location = b.start_login()
    assert "client_id=%s&" % WEB in location.query
    callback, _ = b.login()
    assert callback.status == 303
    assert apple.control("GET", "/emulator/token-requests").json()[-1]["client_id"] == WEB


def test_notifications_may_name_any_listed_services_id(start_sidecar, start_emulator, browser, emulator_keys):
    sc, apple, _ = start(start_sidecar, start_emulator, [WEB, ANDROID_WEB])
    key, kid = emulator_key(emulator_keys)
    b = browser(sc, apple)
    assert b.login()[0].status == 303
    me = b.request("GET", "/.auth/me", [("Accept", "application/json")]).json()
    r = post(sc, sign(event_claims(apple.issuer, me["id"], aud="com.example.unlisted"), key, kid))
    assert r.status == 400
    assert b.request("GET", "/.auth/me", [("Accept", "application/json")]).status == 200
    r = post(sc, sign(event_claims(apple.issuer, me["id"], aud=ANDROID_WEB), key, kid))
    assert r.status == 200, r.body
    assert b.request("GET", "/.auth/me", [("Accept", "application/json")]).status == 401
