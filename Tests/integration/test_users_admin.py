"""An operator signs a user out everywhere: `POST /users/<sub>/revoke` on the admin listener
and `sidecar users revoke|show`, against the real binary, the emulator and (across replicas) a
real redis-server. Writes need `admin.token` (401 without it), every call is an audit line, and
the path is read as sent: no spelling of another path reaches the endpoint."""
import base64
import json
import os
import subprocess

import rawhttp
from conftest import free_port, poll, sidecar_binary
from native_support import BUNDLE, bearer, bearer_ok, signed_in as native_signed_in
from redis_support import redis_server, replicas  # noqa: F401 (fixtures)
from test_redis import refused_within

HTML = ("Accept", "text/html,application/xhtml+xml")


def make_token(tmp_path):
    token = base64.urlsafe_b64encode(os.urandom(32)).decode().rstrip("=")
    path = tmp_path / ("admin-token-%s" % os.urandom(4).hex())
    path.write_text(token + "\n")
    return token, path


def admin_call(sc, method, target, token=None, headers=(), body=b""):
    fields = list(headers)
    if token is not None:
        fields.append(("Authorization", "Bearer " + token))
    return rawhttp.request(sc.admin_port, method, target, fields, body, timeout=5)


def sub_of(user):
    r = user.request("GET", "/.auth/me", [("Accept", "application/json")])
    assert r.status == 200, (r.status, r.body)
    return r.json()["id"]


def audit_lines(sc):
    lines = []
    for line in sc.output().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("audit") == "admin":
            lines.append(entry)
    return lines


def start_native_with_token(start_sidecar, start_emulator, tmp_path, overrides=None):
    token, path = make_token(tmp_path)
    port = free_port()
    apple = start_emulator(["http://127.0.0.1:%d/.auth/callback" % port], extra_args=["--client", BUNDLE])
    config = {"apple": {"base_url": apple.issuer, "native_audiences": [BUNDLE]},
              "access": {"public_paths": ["/pub/**"]}, "admin": {"token": "file:%s" % path}}
    for key, value in (overrides or {}).items():
        config[key] = value
    sc = start_sidecar(config, port=port)
    return sc, apple, token


def test_a_revoke_ends_every_cookie_and_bearer_session_of_the_user_and_nobody_elses(
        start_sidecar, start_emulator, browser, tmp_path):
    sc, apple, token = start_native_with_token(start_sidecar, start_emulator, tmp_path)
    user = browser(sc, apple)
    assert user.login(email="maria@example.com")[0].status == 303
    sub = sub_of(user)
    app = native_signed_in(sc, apple, email="maria@example.com")
    assert app["user"]["id"] == sub, "the emulator gives one user one sub across the web and the app"
    other = browser(sc, apple)
    assert other.login(email="omar@example.com")[0].status == 303
    for b in (user, other):
        assert b.get("/private").status == 200
    assert bearer_ok(sc, app["token"])

    # Without the token, or with another, nothing changes.
    for presented in (None, "x" * 43, token + "x", token[:-1]):
        r = admin_call(sc, "POST", "/users/%s/revoke" % sub, presented)
        assert r.status == 401, (presented, r.status, r.body)
        assert r.header("WWW-Authenticate") == 'Bearer realm="sidecar-admin"'
    assert user.get("/private").status == 200 and bearer_ok(sc, app["token"])

    r = admin_call(sc, "POST", "/users/%s/revoke" % sub, token)
    assert r.status == 200, (r.status, r.body)
    assert r.json()["sub"] == sub and r.json()["revoked_before_ms"] > 0
    assert user.get("/private").status != 200
    assert sc.request("GET", "/private", bearer(app["token"])).status == 401
    assert other.get("/private").status == 200, "another user keeps their session"

    shown = admin_call(sc, "GET", "/users/%s" % sub, token)
    assert shown.status == 200 and shown.json()["revoked_before_ms"] == r.json()["revoked_before_ms"], shown.body
    assert admin_call(sc, "GET", "/users/%s" % sub).status == 401, "reading a user needs the token too"

    # Every call is an audit line: who (peer, credential), what, the outcome.
    lines = sc.logged(lambda _: len(audit_lines(sc)) >= 7 and audit_lines(sc))
    refused = [e for e in lines if e["outcome"] == "unauthenticated"]
    assert len(refused) == 5 and all(e["credential"] == "none" and e["status"] == 401 for e in refused), refused
    revoked = [e for e in lines if e["outcome"] == "revoked"]
    assert len(revoked) == 1 and revoked[0]["sub"] == sub and revoked[0]["credential"] == "token", revoked
    assert revoked[0]["peer"].startswith("127.0.0.1") and revoked[0]["action"] == "revoke"
    assert token not in sc.output(), "the token is never logged"

    # The user may sign in again: only sessions issued up to the revocation end.
    def signs_in_again():
        again = browser(sc, apple)
        return again.login(email="maria@example.com")[0].status == 303 and again.get("/private").status == 200
    assert poll(signs_in_again, timeout=5, step=0.3)


def test_the_commands_revoke_and_show_through_the_running_sidecar(start_sidecar, start_emulator, browser, tmp_path):
    sc, apple, token = start_native_with_token(start_sidecar, start_emulator, tmp_path)
    user = browser(sc, apple)
    assert user.login(email="lea@example.com")[0].status == 303
    sub = sub_of(user)

    def users(*args, config=sc.config_path):
        return subprocess.run([str(sidecar_binary()), "users"] + list(args) + ["--config", str(config)],
                              capture_output=True, text=True, timeout=30)

    shown = users("show", sub)
    assert shown.returncode == 0, shown.stderr
    assert "revoked" in shown.stdout and " no" in shown.stdout, shown.stdout
    done = users("revoke", sub)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("revoked %s:" % sub), done.stdout
    assert user.get("/private").status != 200
    shown = users("show", sub)
    assert shown.returncode == 0 and "are refused" in shown.stdout, shown.stdout

    # A configuration with another token is refused, and says so.
    wrong = tmp_path / "wrong.yaml"
    _, wrong_token = make_token(tmp_path)
    wrong.write_text(sc.config_path.read_text().replace(str(sc.config["admin"]["token"])[5:], str(wrong_token)))
    r = users("revoke", sub, config=wrong)
    assert r.returncode == 2 and "401" in r.stderr and "not the running sidecar's" in r.stderr, (r.returncode, r.stderr)
    # A user id that is a path is refused before anything is sent.
    r = users("revoke", "../metrics")
    assert r.returncode == 1 and "not a user id" in r.stderr, r.stderr
    # Nothing listening: exit 2, naming the address.
    r = subprocess.run([str(sidecar_binary()), "users", "show", sub, "--config", str(sc.config_path),
                        "--admin", "127.0.0.1:%d" % free_port()], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "cannot reach the admin listener" in r.stderr, r.stderr


def test_a_user_revoked_at_one_replica_is_refused_at_the_other_within_a_second(replicas, browser, tmp_path):
    token, path = make_token(tmp_path)
    (a, b), apple, redis = replicas(2, overrides={"admin": {"token": "file:%s" % path}})
    user = browser(a, apple)
    assert user.login(email="maria@example.com")[0].status == 303
    sub = sub_of(user)
    user.sidecar = b
    assert user.get("/private").status == 200
    r = admin_call(a, "POST", "/users/%s/revoke" % sub, token)
    assert r.status == 200, (r.status, r.body)
    assert refused_within(1.0, lambda: user.get("/private").status != 200), "still signed in at B after 1 s"
    assert redis.cli("HEXISTS", "sidecar:revoked:subjects", sub) == "1"
    # B shows what A did: the revocation is the store's, not A's alone — and the sign-in made at A.
    shown = admin_call(b, "GET", "/users/%s" % sub, token)
    assert shown.status == 200 and shown.json()["revoked_before_ms"] == r.json()["revoked_before_ms"], shown.body
    assert shown.json()["last_sign_in"]["platform"] == "web", shown.body
    assert 0 < r.json()["revoked_before_ms"] - shown.json()["last_sign_in"]["at_ms"] < 60_000


def test_the_path_is_read_as_sent_and_only_the_endpoints_spelling_reaches_them(
        start_sidecar, start_emulator, browser, tmp_path):
    sc, apple, token = start_native_with_token(start_sidecar, start_emulator, tmp_path)
    user = browser(sc, apple)
    assert user.login(email="maria@example.com")[0].status == 303
    sub = sub_of(user)
    for target in ("/users/%s/revoke/" % sub, "/users/%s//revoke" % sub, "/users//%s/revoke" % sub,
                   "/users/%s/./revoke" % sub, "/users/%s/revoke?x=1" % sub, "/users/%s/revoke;x" % sub,
                   "/users/%s%%2Frevoke" % sub, "/users/%s/%%72evoke" % sub, "/users/%s/REVOKE" % sub,
                   "/users/../users/%s/revoke" % sub, "/users/%%2e%%2e/metrics", "/users/../metrics",
                   "/users/a%%00b/revoke", "/users/a%%20b/revoke", "/users/..", "/users/.", "/users/",
                   "/users/" + "a" * 256 + "/revoke"):
        r = admin_call(sc, "POST", target, token)
        assert r.status in (400, 404), (target, r.status, r.body)
    # Other spellings of the path's prefix are the admin listener's other paths: 404/405.
    for target in ("//users/%s/revoke" % sub, "/USERS/%s/revoke" % sub, "/./users/%s/revoke" % sub):
        r = admin_call(sc, "POST", target, token)
        assert r.status in (404, 405), (target, r.status)
    # The method is the endpoint's own: no GET that revokes, no POST that reads.
    r = admin_call(sc, "GET", "/users/%s/revoke" % sub, token)
    assert r.status == 405 and r.header("Allow") == "POST"
    r = admin_call(sc, "POST", "/users/%s" % sub, token)
    assert r.status == 405 and r.header("Allow") == "GET, HEAD"
    # The credential: exactly one Authorization field, Bearer, the token and nothing more.
    for fields in ([("Authorization", "Bearer " + token), ("Authorization", "Bearer " + token)],
                   [("Authorization", "Bearer  " + token)], [("Authorization", "Bearer " + token + " x")],
                   [("Authorization", "Basic " + base64.b64encode(("admin:" + token).encode()).decode())],
                   [("Authorization", token)], [("X-Admin-Token", token)], [("Cookie", "token=" + token)]):
        r = admin_call(sc, "POST", "/users/%s/revoke" % sub, headers=fields)
        assert r.status == 401, (fields[0][0], r.status)
    r = admin_call(sc, "POST", "/users/%s/revoke" % sub, headers=[("authorization", "bEaReR " + token)])
    assert r.status == 200, "the scheme is case-insensitive (RFC 9110 §11.1)"
    # Smuggled framing on the admin listener is refused before any handler.
    response, closed = rawhttp.send_raw(sc.admin_port, (
        "POST /healthz HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n"
        "Authorization: Bearer %s\r\n\r\n0\r\n\r\nPOST /users/%s/revoke HTTP/1.1\r\nHost: a\r\n\r\n" % (token, sub)).encode())
    assert response is not None and response.status == 400 and closed
    assert sum(1 for e in audit_lines(sc) if e["outcome"] == "revoked") == 1


def test_without_a_token_the_endpoints_answer_on_loopback_and_are_off_elsewhere(
        start_auth_sidecar, start_sidecar, browser):
    sc, apple = start_auth_sidecar()
    user = browser(sc, apple)
    assert user.login(email="maria@example.com")[0].status == 303
    sub = sub_of(user)
    r = admin_call(sc, "POST", "/users/%s/revoke" % sub)
    assert r.status == 200, "a loopback listener without admin.token: the host's own processes may call"
    assert user.get("/private").status != 200
    assert sc.logged(lambda _: any(e["credential"] == "local" for e in audit_lines(sc)))

    # Every interface, no token: the probes still answer, the users' endpoints are off.
    wide = start_sidecar({"apple": {"base_url": apple.issuer}},
                         env=lambda config: {"SIDECAR_ADMIN_LISTEN": "0.0.0.0:" + config["admin"]["listen"].rsplit(":", 1)[1]})
    r = admin_call(wide, "POST", "/users/%s/revoke" % sub)
    assert r.status == 403 and r.json()["error"] == "users_endpoints_off", (r.status, r.body)
    assert admin_call(wide, "GET", "/users/%s" % sub).status == 403
    assert wide.admin("/healthz").status == 200
    assert "admin /users/ endpoints off" in wide.output()


def test_with_a_file_store_the_last_sign_in_and_its_platform_outlive_a_crash(
        start_sidecar, start_emulator, browser, tmp_path):
    store = tmp_path / "store"
    sc, apple, token = start_native_with_token(start_sidecar, start_emulator, tmp_path,
                                               overrides={"revocations": {"store": "file:%s" % store}})
    user = browser(sc, apple)
    assert user.login(email="maria@example.com")[0].status == 303
    sub = sub_of(user)
    shown = admin_call(sc, "GET", "/users/%s" % sub, token).json()
    assert shown["last_sign_in"]["platform"] == "web", shown
    app = native_signed_in(sc, apple, email="maria@example.com")
    assert app["user"]["id"] == sub
    after_app = sc.logged(lambda _: admin_call(sc, "GET", "/users/%s" % sub, token).json()["last_sign_in"]["platform"]
                          == "native:" + BUNDLE)
    assert after_app, "the app's sign-in is the last one"
    assert admin_call(sc, "GET", "/users/nobody.1", token).json()["last_sign_in"] is None

    sc.proc.send_signal(9)  # a crash: what was recorded is on disk
    sc.proc.wait(10)
    sc.stopped = True
    config = json.loads(json.dumps(sc.config))
    config["admin"] = {"token": config["admin"]["token"]}  # a fresh admin port, the same token
    again = start_sidecar(config, port=sc.port)
    out = subprocess.run([str(sidecar_binary()), "users", "show", sub, "--config", str(again.config_path)],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert "native:%s" % BUNDLE in out.stdout and "last sign-in" in out.stdout, out.stdout
