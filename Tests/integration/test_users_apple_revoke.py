"""An operator signs a user out everywhere and revokes their Apple refresh token too:
`users.keep_refresh_tokens` keeps each sign-in's token in a durable store, sealed with the
session keys; `POST /users/<sub>/revoke?apple=1` (and `sidecar users revoke SUB --apple`)
revokes the latest one at Apple (the emulator, which then no longer counts the grant and
answers a refresh with it `invalid_grant`) with the client secret of the client it was
issued to, then ends every session. Without the key the call is a clear 409."""
import shutil
import subprocess

from conftest import free_port, sidecar_binary, to_yaml
from native_support import BUNDLE, bearer_ok, signed_in as native_signed_in
from redis_support import redis_server  # noqa: F401 (a fixture)
from test_users_admin import admin_call, audit_lines, make_token, sub_of

WEB = "com.example.web"
EMAIL = "maria@example.com"


def start(start_sidecar, start_emulator, tmp_path, keep=True, store=True):
    token, path = make_token(tmp_path)
    port = free_port()
    apple = start_emulator(["http://127.0.0.1:%d/.auth/callback" % port], extra_args=["--client", BUNDLE])
    config = {"apple": {"base_url": apple.issuer, "native_audiences": [BUNDLE]},
              "access": {"public_paths": ["/pub/**"]}, "admin": {"token": "file:%s" % path},
              "users": {"keep_refresh_tokens": keep}}
    if store is True:
        config["revocations"] = {"store": "file:%s" % (tmp_path / ("store-%d" % port))}
    elif store:
        config["revocations"] = {"store": store}
    sc = start_sidecar(config, port=port)
    return sc, apple, token


def grants(apple, email=EMAIL):
    r = apple.control("POST", "/emulator/grants", {"email": email})
    assert r.status == 200, r.body
    return {g["client_id"]: g["refresh_tokens"] for g in r.json()["grants"]}


def test_revoke_with_apple_revokes_the_latest_token_at_apple_then_ends_every_session(
        start_sidecar, start_emulator, browser, tmp_path):
    sc, apple, token = start(start_sidecar, start_emulator, tmp_path)
    app = native_signed_in(sc, apple, email=EMAIL)          # an app's token (the bundle id's)
    user = browser(sc, apple)
    assert user.login(email=EMAIL)[0].status == 303        # then the web: the latest, the Services ID's
    sub = sub_of(user)
    assert app["user"]["id"] == sub
    other = browser(sc, apple)
    assert other.login(email="omar@example.com")[0].status == 303
    assert grants(apple) == {BUNDLE: 1, WEB: 1}
    # The store holds the token sealed: neither the client id beside it nor any token in clear.
    store_bytes = b"".join(p.read_bytes() for p in tmp_path.glob("store-*") if p.is_file())
    assert store_bytes and (WEB + "\n").encode() not in store_bytes

    shown = admin_call(sc, "GET", "/users/%s" % sub, token).json()
    assert shown["refresh_token_kept_at_ms"] == shown["last_sign_in"]["at_ms"], shown
    run = subprocess.run([str(sidecar_binary()), "users", "show", sub, "--config", str(sc.config_path)],
                         capture_output=True, text=True, timeout=30)
    assert run.returncode == 0 and "apple token" in run.stdout and "--apple revokes it" in run.stdout, run.stdout
    r = admin_call(sc, "POST", "/users/%s/revoke?apple=1" % sub, token)
    assert r.status == 200, (r.status, r.body)
    body = r.json()
    assert body["apple"] == "revoked" and body["apple_client_id"] == WEB and body["sub"] == sub, body
    # Apple (the emulator) got the token with the Services ID's own secret, knew it, and the
    # grant is gone; the app's older token is another grant, which the sidecar never kept.
    revocation = apple.control("GET", "/emulator/revocations").json()[-1]
    assert revocation == {**revocation, "client_id": WEB, "token_type_hint": "refresh_token",
                          "token_known": True, "client_authenticated": True}, revocation
    assert grants(apple) == {BUNDLE: 1}
    # Every session of the user ends; nobody else's.
    assert user.get("/private").status == 302
    assert not bearer_ok(sc, app["token"])
    assert other.get("/private").status == 200
    line = [e for e in audit_lines(sc) if e.get("outcome") == "revoked"][-1]
    assert line["apple"] == "revoked" and line["apple_client_id"] == WEB and line["sub"] == sub, line

    # The kept token was forgotten with it: again, there is nothing left to revoke at Apple.
    r = admin_call(sc, "POST", "/users/%s/revoke?apple=1" % sub, token)
    assert r.status == 200 and r.json()["apple"] == "no_refresh_token", r.body
    assert len(apple.control("GET", "/emulator/revocations").json()) == 1
    assert admin_call(sc, "GET", "/users/%s" % sub, token).json()["refresh_token_kept_at_ms"] is None

    # A new sign-in keeps its token again; the command line does the same call.
    again = browser(sc, apple)
    assert again.login(email=EMAIL)[0].status == 303
    assert grants(apple) == {BUNDLE: 1, WEB: 1}
    run = subprocess.run([str(sidecar_binary()), "users", "revoke", sub, "--apple", "--config", str(sc.config_path)],
                         capture_output=True, text=True, timeout=30)
    assert run.returncode == 0, run.stderr
    assert "apple: the refresh token of %s is revoked at Apple" % WEB in run.stdout, run.stdout
    assert grants(apple) == {BUNDLE: 1}
    assert again.get("/private").status == 302

    # An app's sign-in last: its token is revoked with the bundle id's own client secret.
    app = native_signed_in(sc, apple, email=EMAIL)
    assert grants(apple) == {BUNDLE: 2}
    r = admin_call(sc, "POST", "/users/%s/revoke?apple=1" % sub, token)
    assert r.status == 200 and r.json()["apple_client_id"] == BUNDLE, r.body
    assert grants(apple) == {BUNDLE: 1}
    assert apple.control("GET", "/emulator/revocations").json()[-1]["client_id"] == BUNDLE
    assert not bearer_ok(sc, app["token"])


def test_the_kept_token_outlives_a_restart_with_a_file_store(start_sidecar, start_emulator, browser, tmp_path):
    sc, apple, token = start(start_sidecar, start_emulator, tmp_path)
    user = browser(sc, apple)
    assert user.login(email=EMAIL)[0].status == 303
    sub = sub_of(user)
    sc.stop()
    config = dict(sc.config)
    config["admin"] = {"token": sc.config["admin"]["token"]}  # a new admin port, chosen by the fixture
    restarted = start_sidecar(config, port=sc.port)
    r = admin_call(restarted, "POST", "/users/%s/revoke?apple=1" % sub, token)
    assert r.status == 200 and r.json()["apple"] == "revoked", (r.status, r.body)
    assert grants(apple) == {}


def test_with_a_redis_store(start_sidecar, start_emulator, browser, tmp_path, redis_server):
    redis = redis_server()
    sc, apple, token = start(start_sidecar, start_emulator, tmp_path, store=redis.url)
    user = browser(sc, apple)
    assert user.login(email=EMAIL)[0].status == 303
    sub = sub_of(user)
    if shutil.which("redis-cli"):
        kept = subprocess.run(["redis-cli", "-p", str(redis.port), "GET", "sidecar:refresh:" + sub],
                              capture_output=True, text=True, timeout=10).stdout
        assert kept.strip() and WEB not in kept, kept  # `<ms> <sealed>`: nothing in clear
    r = admin_call(sc, "POST", "/users/%s/revoke?apple=1" % sub, token)
    assert r.status == 200 and r.json()["apple"] == "revoked", (r.status, r.body)
    assert grants(apple) == {}
    r = admin_call(sc, "POST", "/users/%s/revoke?apple=1" % sub, token)
    assert r.status == 200 and r.json()["apple"] == "no_refresh_token", r.body


def test_without_the_key_apple_is_a_clear_409_and_nothing_is_revoked(
        start_sidecar, start_emulator, browser, tmp_path):
    sc, apple, token = start(start_sidecar, start_emulator, tmp_path, keep=False)
    user = browser(sc, apple)
    assert user.login(email=EMAIL)[0].status == 303
    sub = sub_of(user)
    r = admin_call(sc, "POST", "/users/%s/revoke?apple=1" % sub, token)
    assert r.status == 409 and r.json()["error"] == "refresh_tokens_not_kept", (r.status, r.body)
    assert "users.keep_refresh_tokens" in r.json()["reason"]
    assert user.get("/private").status == 200, "nothing was revoked"
    assert "refresh_token_kept_at_ms" not in admin_call(sc, "GET", "/users/%s" % sub, token).json()
    run = subprocess.run([str(sidecar_binary()), "users", "revoke", sub, "--apple", "--config", str(sc.config_path)],
                         capture_output=True, text=True, timeout=30)
    assert run.returncode == 2 and "users.keep_refresh_tokens" in run.stderr, (run.returncode, run.stderr)
    # Other queries are no endpoint at all, as before.
    for target in ("/users/%s/revoke?apple=0" % sub, "/users/%s/revoke?apple=1&x=1" % sub, "/users/%s?apple=1" % sub):
        assert admin_call(sc, "POST", target, token).status in (404, 405), target
    assert user.get("/private").status == 200
    assert apple.control("GET", "/emulator/revocations").json() == []


def test_keeping_tokens_needs_a_durable_store(tmp_path, base_config):
    config = base_config(free_port(), free_port())
    config["users"] = {"keep_refresh_tokens": True}
    path = tmp_path / "sidecar.yaml"
    path.write_text(to_yaml(config) + "\n")
    run = subprocess.run([str(sidecar_binary()), "check", "--config", str(path)], capture_output=True, text=True,
                         timeout=30)
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if "keep_refresh_tokens" in text)
    assert run.returncode == 1 and "users.keep_refresh_tokens" in run.stderr and "durable" in run.stderr, run.stderr
    assert ("%s:%d:" % (path, line)) in run.stderr, run.stderr
