"""Red-team attacks on the trust boundary, against the real binary.

The upstream trusts the injected identity headers, so a client must never forge them, reach
the upstream with a credential meant for the sidecar, smuggle a request past the sidecar,
obtain a session it should not have, or be redirected off-site. Each test is one attack
class and asserts the safe behaviour the product promises; attacks already covered elsewhere
(test_framing, test_proxy, test_auth_*) are not repeated here.
"""
import pytest
from conftest import seen

HTML = ("Accept", "text/html,application/xhtml+xml")


def second_session(sc, apple, browser):
    b = browser(sc, apple)
    assert b.login(email="john.appleseed@example.com")[0].status == 303
    return b.session_cookie[1]


# -- credentials meant for the sidecar never reach the upstream ------------------------------
def test_no_copy_of_a_session_bearer_token_reaches_the_upstream(signed_in, browser):
    """"A bearer session token is removed from the forwarded request". Repeating
    the Authorization field (same token, or a second user's token) must not smuggle one
    through; a foreign token next to it still passes unchanged."""
    sc, apple, b = signed_in
    _, token = b.session_cookie
    other = second_session(sc, apple, browser)
    for extra in (token, other):
        e = sc.request("GET", "/api/x", [("Authorization", "Bearer " + token),
                                         ("Authorization", "Bearer " + extra),
                                         ("Authorization", "Bearer upstream-token")]).json()
        assert seen(e, "Authorization") == ["Bearer upstream-token"], e["headers"]
        assert seen(e, "X-Auth-Email") == ["maria.ruiz@example.com"]


# -- request targets ---------------------------------------------------------------------------
@pytest.mark.parametrize("authority", [b'a"b', b"a<script>", b"h{x}", b"h|x", b"a\\b"])
def test_absolute_form_authority_is_held_to_the_host_grammar(start_sidecar, upstream, authority):
    """An absolute-form target names the host (RFC 9112 §3.2.2); without a Host field (HTTP/1.0)
    its authority became the forwarded Host and X-Forwarded-Host unchecked, while a Host field
    with the same bytes is refused."""
    import rawhttp
    sc = start_sidecar({"preserve_host": True})
    for raw in (b"GET http://" + authority + b"/echo HTTP/1.0\r\n\r\n",
                b"GET /echo HTTP/1.0\r\nHost: " + authority + b"\r\n\r\n"):
        resp, closed = rawhttp.send_raw(sc.port, raw)
        assert resp is not None and resp.status == 400 and closed, raw
    assert upstream.stats()["requests"] == 0


def test_absolute_form_authority_is_the_forwarded_host(start_sidecar):
    """RFC 9112 §3.2.2: with an absolute-form target the Host field is ignored in favour of
    the target's authority, so the upstream never sees a host other than the one requested."""
    sc = start_sidecar({"preserve_host": True})
    with sc.conn() as c:
        c.send(b"GET http://app.example:8080/echo HTTP/1.1\r\nHost: other.example\r\n\r\n")
        e = c.read_response().json()
    assert e["target"] == "/echo"
    assert seen(e, "Host") == ["app.example:8080"] and seen(e, "X-Forwarded-Host") == ["app.example:8080"]


# -- resource exhaustion -----------------------------------------------------------------------
def test_a_flood_of_abandoned_logins_keeps_replay_protection_and_service(
        start_auth_sidecar, browser):
    """Anyone can mint spent login states (/login, then a callback with any code: the state is
    spent before Apple refuses the code). After thousands of them a recent state still cannot
    be replayed and sign-ins still work. (That the memory of used states stays bounded is
    ClaimCapacityTests' job; the per-address limit is off here to reach the thousands.)"""
    import threading
    from urllib.parse import parse_qs, urlencode, urlsplit
    sc, apple = start_auth_sidecar({"limits": {"sign_in_rate": 0}})
    form = ("Content-Type", "application/x-www-form-urlencoded")

    def in_parallel(items, each):
        def run(part):
            with sc.conn() as c:
                for item in part:
                    each(c, item)
        threads = [threading.Thread(target=run, args=(items[i::4],)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def mint(n):
        minted = []

        def login(c, _):
            r = c.request("GET", "/.auth/login", [HTML])
            state = parse_qs(urlsplit(r.header("Location")).query)["state"][0]
            minted.append((("Cookie", r.header_all("Set-Cookie")[-1].split(";")[0]),
                           urlencode({"state": state, "code": "flood"}).encode()))
        in_parallel(range(n), login)
        return minted

    def spend(c, login):
        assert c.request("POST", "/.auth/callback", [HTML, login[0], form], login[1]).status == 502  # invalid_grant

    in_parallel(mint(2000), spend)
    with sc.conn() as c:
        login = mint(1)[0]
        spend(c, login)
        r = c.request("POST", "/.auth/callback", [HTML, login[0], form], login[1])
        assert r.status == 400, (r.status, r.body[:200])  # state_replayed
    assert sc.logged(lambda out: "state_replayed" in out), "no state_replayed line"  # races the answer
    assert browser(sc, apple).login()[0].status == 303


# -- attacks the product already resists (not covered elsewhere) -------------------------------
def test_a_refused_request_body_is_never_read_as_a_request(start_auth_sidecar, upstream):
    """A request refused before forwarding (no session) must not leave its body to be parsed
    as the next request on the connection: that would run a request the client smuggled in."""
    import rawhttp
    sc, _ = start_auth_sidecar()
    smuggled = b"GET /pub/smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
    for framing, body in ((b"Content-Length: %d" % len(smuggled), smuggled),
                          (b"Transfer-Encoding: chunked", b"%x\r\n" % len(smuggled) + smuggled + b"\r\n0\r\n\r\n")):
        for expect in (b"", b"Expect: 100-continue\r\n"):
            raw = b"POST /private HTTP/1.1\r\nHost: x\r\nAccept: application/json\r\n" + expect + framing + b"\r\n\r\n" + body
            resp, closed = rawhttp.send_raw(sc.port, raw)
            assert resp is not None and resp.status == 401 and closed
    stats = upstream.wait_for(lambda s: s["requests"] > 0, timeout=0.3)  # a negative check: load only weakens it
    assert stats["requests"] == 0, stats["targets"]


def test_public_path_decisions_hold_for_the_forwarded_path(start_auth_sidecar, upstream):
    """Whatever a public path lets through is forwarded exactly as decided (a path under
    /pub/), every spelling that normalizes outside /pub/ needs a session, and an encoded
    separator is refused before any decision."""
    import rawhttp
    sc, _ = start_auth_sidecar()
    for target in ["/pub/%252e%252e/private", "/pub/..%5Cprivate", "/pub/.%2e/private",
                   "/pub/%2E%2E%2Fprivate", "//pub/x", "/PUB/x", "/pub\\..\\private", "/pub;/../private",
                   "/.auth/../private", "http://x/pub/../private", "/pub/./x", "/pub/x/%2e%2e/%2e%2e/private"]:
        resp, _ = rawhttp.send_raw(sc.port, b"GET " + target.encode() + b" HTTP/1.1\r\nHost: x\r\n"
                                   b"Accept: application/json\r\nConnection: close\r\n\r\n", wait_close=False)
        separator = any(s in target.lower() for s in ("%2f", "%5c", "\\"))
        assert resp is not None and resp.status in ((400,) if separator else (200, 401)), (target, resp and resp.status)
        if resp.status == 200:
            forwarded = resp.json()["target"]
            assert forwarded.startswith("/pub/"), (target, forwarded)
    assert all(t.split(" ", 1)[1].startswith("/pub/") for t in upstream.stats()["targets"])


def test_cookies_of_another_purpose_never_open_as_one_another(start_auth_sidecar, browser):
    """The login-state cookie is no session (and the session no login state), whatever name
    or carrier it is presented under: each purpose has its own key and its cookie name is
    bound as associated data."""
    from urllib.parse import urlencode
    sc, apple = start_auth_sidecar()
    b = browser(sc, apple)
    assert b.login()[0].status == 303
    name, session = b.session_cookie
    _, location = b.start_login()
    login_name, (state, _) = next((n, v) for n, v in b.jar.items() if "login" in n)
    assert sc.request("GET", "/private", [HTML, ("Cookie", "%s=%s" % (name, state))]).status == 302
    assert sc.request("GET", "/private", [("Authorization", "Bearer " + state)]).status == 401
    fields, _ = b.authorize(location)
    r = sc.request("POST", "/.auth/callback", [HTML, ("Cookie", "%s=%s" % (login_name, session)),
                                              ("Content-Type", "application/x-www-form-urlencoded")],
                   urlencode(fields).encode())
    assert r.status == 400 and not [c for c in r.header_all("Set-Cookie") if c.startswith(name + "=")]


def test_two_session_cookies_first_one_decides_and_neither_is_forwarded(signed_in):
    sc, _, b = signed_in
    name, value = b.session_cookie
    bad_first = [HTML, ("Cookie", "%s=forged" % name), ("Cookie", "%s=%s; k=1" % (name, value))]
    assert sc.request("GET", "/private", bad_first).status == 302
    e = sc.request("GET", "/pub/x", bad_first).json()
    assert seen(e, "Cookie") == ["k=1"] and not seen(e, "X-Auth-User-Id")
    e = sc.request("GET", "/private", [HTML, ("Cookie", "%s=%s; %s=forged" % (name, value, name))]).json()
    assert seen(e, "Cookie") == [] and seen(e, "X-Auth-Email") == ["maria.ruiz@example.com"]


def test_unsigned_user_json_cannot_inject_headers_or_an_email(start_auth_sidecar, browser):
    """Apple's `user` field is posted by the browser, so an attacker writes it: CR/LF, Unicode
    line separators and a foreign email must not reach the upstream as such."""
    import json
    sc, apple = start_auth_sidecar()
    b = browser(sc, apple)
    _, location = b.start_login()
    fields, _ = b.authorize(location)
    fields["user"] = json.dumps({"name": {"firstName": "a\r\nX-Auth-User-Id: admin", "lastName": "b\u2028\u0085\r\n"},
                                 "email": "admin@corp.example"})
    assert b.callback(fields).status == 303
    e = b.get("/private").json()
    assert seen(e, "X-Auth-Name") == ["aX-Auth-User-Id%3A%20admin%20b%E2%80%A8"]
    assert seen(e, "X-Auth-Email") == ["maria.ruiz@example.com"]
    assert len(seen(e, "X-Auth-User-Id")) == 1 and seen(e, "X-Auth-User-Id") != ["admin"]


def test_reload_that_drops_a_secret_ends_its_sessions_on_open_connections(start_auth_sidecar, browser):
    """SIGHUP with the old secret removed: a keep-alive connection opened before the reload
    cannot keep using a cookie sealed with it, and a logout's revocation survives the reload."""
    import base64
    import os
    import time
    import conftest
    sc, apple = start_auth_sidecar()
    keep, gone = browser(sc, apple), browser(sc, apple)
    keep.login()
    gone.login()
    old = sc.config["session"]["secrets"][0]
    revoked = [HTML, ("Cookie", "%s=%s" % gone.session_cookie)]
    assert gone.request("POST", "/.auth/logout", [HTML]).status == 200  # the signed-out page

    def reload(secrets):
        sc.config_path.write_text(conftest.to_yaml(conftest.merge(sc.config, {"session": {"secrets": secrets}})) + "\n")
        assert sc.sighup(), "the reload failed"  # waited for (its log line), not slept for

    with sc.conn() as c:
        cookie = [HTML, ("Cookie", "%s=%s" % keep.session_cookie)]
        assert c.request("GET", "/private", cookie).status == 200
        new = base64.b64encode(os.urandom(32)).decode()
        reload([new, old])
        assert c.request("GET", "/private", cookie).status == 200  # the old secret is still listed
        assert c.request("GET", "/private", revoked).status == 302  # revocations outlive a reload
        reload([new])
        deadline = time.monotonic() + 5  # workers take the reload up at once; 5 s of noise
        while c.request("GET", "/private", cookie).status != 302:
            assert time.monotonic() < deadline, "a session sealed with a removed secret is still accepted"
            time.sleep(0.1)


def test_lenient_but_unambiguous_framing_reaches_the_upstream_canonical(sidecar, upstream):
    """Framing the sidecar accepts with a tolerance (OWS around `chunked`, leading zeros, a
    repeated equal Content-Length, chunk extensions, HTTP/1.0 keep-alive with a body) is
    re-framed canonically, so the upstream cannot read the body boundaries differently."""
    with sidecar.conn() as c:
        c.send(b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked \t\r\n\r\n"
               b"3;a=\"b\"\r\nabc\r\n0\r\n\r\n")
        e = c.read_response().json()
        assert e["body"] == "abc" and seen(e, "Transfer-Encoding") == ["chunked"]
        c.send(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 003\r\nContent-Length: 3, 3\r\n\r\nabc")
        e = c.read_response().json()
        assert e["body"] == "abc" and seen(e, "Content-Length") == ["3"]
    with sidecar.conn() as c:
        c.send(b"POST /echo HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 3\r\n\r\nabc"
               b"GET /echo?second HTTP/1.0\r\n\r\n")
        assert c.read_response().json()["body"] == "abc"
        assert c.read_response().json()["target"] == "/echo?second"
    assert upstream.stats()["requests"] == 4, upstream.stats()["targets"]
