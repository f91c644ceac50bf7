"""CORS preflights (`rules[].cors_preflight`): an OPTIONS with `Origin` and
`Access-Control-Request-Method` and no credentials is forwarded to the upstream, which owns its
CORS policy, without identity — by default on API paths only — while the actual request still
needs a session. What a browser's preflight would not be (credentials, a body, a method
override, a second copy of a field) is decided as any request, and every reading of the path
must admit it (SPEC §4.3): in front of the echo upstream, a lenient WSGI upstream that answers
any method, over HTTP/1.1 and h2c."""
import json
import subprocess
import sys

import pytest

import rawhttp
from conftest import HERE, seen
from browser_support import chromium  # noqa: F401 (fixture)
from h2_support import H2Client

JSON = ("Accept", "application/json")
PREFLIGHT = [("Origin", "http://app.example"), ("Access-Control-Request-Method", "PUT"),
             ("Access-Control-Request-Headers", "content-type")]
FORGED = [("X-Auth-User-Id", "forged"), ("X_Auth_User_Id", "forged"), ("x-auth-email", "forged@evil.example"),
          ("X-Auth-Assertion", "forged"), ("X-Auth-Name", "forged")]
IDENTITY = ["X-Auth-User-Id", "X-Auth-Email", "X-Auth-Email-Verified", "X-Auth-Private-Email", "X-Auth-Name",
            "X-Auth-Assertion"]

RULES = [
    {"path": "/api/private/**", "api": True, "cors_preflight": "refuse"},   # 0
    {"path": "/api/**", "api": True},                                        # 1: forwards preflights
    {"path": "/web/**", "cors_preflight": "forward"},                        # 2
    {"path": "/closed/**", "deny": True},                                    # 3
]


def cookie(b):
    name, value = b.session_cookie
    return ("Cookie", "%s=%s" % (name, value))


def no_identity(echo):
    return all(seen(echo, name) == [] for name in IDENTITY)


def test_a_preflight_is_forwarded_without_identity_and_the_request_still_needs_a_session(
        start_auth_sidecar, browser, upstream):
    sc, apple = start_auth_sidecar({"rules": RULES})
    r = sc.request("OPTIONS", "/api/items", PREFLIGHT + FORGED)
    assert r.status == 200, (r.status, r.body)
    echo = r.json()
    assert echo["method"] == "OPTIONS" and echo["target"] == "/api/items"
    assert no_identity(echo), echo["headers"]
    assert seen(echo, "Origin") == ["http://app.example"]
    assert seen(echo, "Access-Control-Request-Method") == ["PUT"]
    # The actual request still needs a session.
    r = sc.request("PUT", "/api/items", [("Origin", "http://app.example"), JSON], body=b"{}")
    assert r.status == 401 and r.json()["error"] == "unauthenticated"

    # Signed in, an OPTIONS with the cookie is an ordinary request: identity injected.
    maria = browser(sc, apple)
    assert maria.login()[0].status == 303
    r = sc.request("OPTIONS", "/api/items", PREFLIGHT + FORGED + [cookie(maria)])
    assert r.status == 200
    echo = r.json()
    assert seen(echo, "X-Auth-Email") == ["maria.ruiz@example.com"] and seen(echo, "X-Auth-User-Id") != ["forged"]
    assert seen(echo, "Cookie") == []


@pytest.mark.parametrize("extra,drop", [
    ([("Cookie", "theme=dark")], None),                                   # any cookie: credentials
    ([("Cookie", "sidecar=not-a-session")], None),
    ([("Authorization", "Bearer not-ours")], None),
    ([("Authorization", "Basic YTpi")], None),
    ([("X-HTTP-Method-Override", "DELETE")], None),                       # Express would run DELETE
    ([("X-HTTP-Method", "PUT")], None),
    ([("X-Method-Override", "POST")], None),
    ([("Access-Control-Request-Method", "DELETE")], None),                # two copies
    ([("Origin", "http://other.example")], None),
    ([], "Access-Control-Request-Method"),                                # no ACRM: not a preflight
    ([], "Origin"),
])
def test_what_a_browser_preflight_is_not_needs_a_session(start_auth_sidecar, upstream, extra, drop):
    sc, _ = start_auth_sidecar({"rules": RULES})
    assert sc.request("OPTIONS", "/api/items", PREFLIGHT).status == 200, "the preflight itself is forwarded"
    upstream.reset()
    headers = [h for h in PREFLIGHT if h[0] != drop] + extra
    r = sc.request("OPTIONS", "/api/items", headers)
    assert r.status == 401, (extra, drop, r.status, r.body[:200])
    assert upstream.stats()["requests"] == 0


@pytest.mark.parametrize("headers", [
    [("Origin", ""), ("Access-Control-Request-Method", "PUT")],
    [("Origin", "http://app.example"), ("Access-Control-Request-Method", "")],
    [("Origin", "http://app.example"), ("Access-Control-Request-Method", "P(UT")],
])
def test_empty_or_malformed_preflight_fields_need_a_session(start_auth_sidecar, upstream, headers):
    sc, _ = start_auth_sidecar({"rules": RULES})
    assert sc.request("OPTIONS", "/api/items", PREFLIGHT).status == 200, "the preflight itself is forwarded"
    upstream.reset()
    assert sc.request("OPTIONS", "/api/items", headers).status == 401
    assert upstream.stats()["requests"] == 0


def test_a_preflight_with_a_body_needs_a_session(start_auth_sidecar, upstream):
    sc, _ = start_auth_sidecar({"rules": RULES})
    assert sc.request("OPTIONS", "/api/items", PREFLIGHT).status == 200, "the preflight itself is forwarded"
    upstream.reset()
    r = sc.request("OPTIONS", "/api/items", PREFLIGHT, body=b"a=1")
    assert r.status == 401
    r = sc.request("OPTIONS", "/api/items", PREFLIGHT + [("Transfer-Encoding", "chunked")], body=b"0\r\n\r\n")
    assert r.status == 401
    assert upstream.stats()["requests"] == 0


def test_the_rules_choose_where_preflights_go(start_auth_sidecar, upstream):
    sc, _ = start_auth_sidecar({"rules": RULES, "access": {"api_paths": ["/v2/**"], "public_paths": ["/pub/**"]}})
    upstream.reset()
    assert sc.request("OPTIONS", "/api/private/x", PREFLIGHT).status == 401, "cors_preflight: refuse"
    assert sc.request("OPTIONS", "/page", PREFLIGHT).status == 401, "not an API path: refused by default"
    assert sc.request("OPTIONS", "/closed/x", PREFLIGHT).status == 403, "deny holds for preflights"
    assert upstream.stats()["requests"] == 0
    r = sc.request("OPTIONS", "/web/x", PREFLIGHT + FORGED)
    assert r.status == 200 and no_identity(r.json()), "cors_preflight: forward on a non-API rule"
    r = sc.request("OPTIONS", "/v2/x", PREFLIGHT + FORGED)
    assert r.status == 200 and no_identity(r.json()), "access.api_paths without a rule"
    r = sc.request("OPTIONS", "/pub/x", PREFLIGHT + FORGED)
    assert r.status == 200 and no_identity(r.json()), "public paths as ever"
    # The sidecar's own endpoints are not the upstream's.
    assert sc.request("OPTIONS", "/.auth/me", PREFLIGHT).status == 405


def test_api_paths_alone_without_rules(start_auth_sidecar):
    sc, _ = start_auth_sidecar({"access": {"public_paths": [], "api_paths": ["/api/**"]}})
    r = sc.request("OPTIONS", "/api/x", PREFLIGHT + FORGED)
    assert r.status == 200 and no_identity(r.json())
    assert sc.request("OPTIONS", "/other", PREFLIGHT).status == 401
    assert sc.request("OPTIONS", "/API/x", PREFLIGHT).status == 401, "a permission matches the exact case only"


def test_preflights_over_h2c(start_auth_sidecar, browser, upstream):
    sc, apple = start_auth_sidecar({"rules": RULES})
    maria = browser(sc, apple)
    assert maria.login()[0].status == 303
    fields = [(n.lower(), v) for n, v in PREFLIGHT]
    c = H2Client(sc.port)
    try:
        r = c.request("OPTIONS", "/api/items", fields + [("x-auth-user-id", "forged"), ("x_auth_user_id", "forged")])
        assert r.status == 200 and no_identity(json.loads(r.body)), r.body
        assert c.request("OPTIONS", "/api/items", fields + [("cookie", "a=b")]).status == 401
        assert c.request("OPTIONS", "/api/private/x", fields).status == 401
        assert c.request("OPTIONS", "/api/PRIVATE/x", fields).status == 401
        name, value = maria.session_cookie
        r = c.request("OPTIONS", "/api/items", fields + [("cookie", "%s=%s" % (name, value))])
        assert r.status == 200 and seen(json.loads(r.body), "X-Auth-Email") == ["maria.ruiz@example.com"]
    finally:
        c.close()


# -- every reading of the path, in front of an upstream that reads it leniently ----------------
PRIVATE = b"PRIVATE-API-CONTENT"
OPEN = b"OPEN-API-CONTENT"


@pytest.fixture(scope="module")
def lenient(tmp_path_factory):
    """The lenient WSGI upstream (lenient_upstream.py): it serves its files to any method,
    reading paths as Tomcat, IIS, Express and WSGI do."""
    root = tmp_path_factory.mktemp("lenient-api")
    (root / "api" / "private").mkdir(parents=True)
    (root / "api" / "private" / "x").write_bytes(PRIVATE)
    (root / "api" / "open").mkdir()
    (root / "api" / "open" / "x").write_bytes(OPEN)
    proc = subprocess.Popen([sys.executable, str(HERE / "lenient_upstream.py"), "--root", str(root)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    port = json.loads(proc.stdout.readline())["port"]
    yield port
    proc.terminate()
    proc.wait(5)


SPELLINGS = ["/api/private/x", "/api/PRIVATE/x", "/api/Private/x", "/api/private;v=1/x", "/api/private./x",
             "/api/private%2e/x", "/api/./private/x", "/api//private/x", "/api/open/../private/x",
             "/API/private/x", "/api/private%20/x", "/api/pr%69vate/x"]


@pytest.mark.parametrize("over", ["http1", "h2c"])
def test_a_refusing_rule_holds_for_every_reading(start_auth_sidecar, lenient, over):
    sc, _ = start_auth_sidecar({"upstream": "http://127.0.0.1:%d" % lenient, "rules": RULES,
                                "access": {"public_paths": []}})
    fields = [(n.lower(), v) for n, v in PREFLIGHT]
    c = H2Client(sc.port) if over == "h2c" else None
    try:
        def options(target):
            if c:
                return c.request("OPTIONS", target, fields)
            return rawhttp.request(sc.port, "OPTIONS", target, PREFLIGHT)
        r = options("/api/open/x")
        assert r.status == 200 and r.body == OPEN, "the forwarded preflight, as the upstream answers it"
        for target in SPELLINGS:
            r = options(target)
            assert r.status in (400, 401), (over, target, r.status)
            assert PRIVATE not in r.body, (over, target)
    finally:
        if c:
            c.close()


# -- a real browser ---------------------------------------------------------------------------
class CORSUpstream:
    """An upstream that owns its CORS policy, as an API server does: it answers a preflight
    from `allowed_origin` and serves PUT with credentials to it, recording what it receives."""

    def __init__(self, allowed_origin):
        import http.server
        import threading
        self.allowed_origin, self.received = allowed_origin, []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _record(self):
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                owner.received.append((self.command, self.path, [(n.lower(), v) for n, v in self.headers.items()]))

            def _answer(self, status, body=b"", extra=()):
                self.send_response(status)
                if self.headers.get("Origin") == owner.allowed_origin:
                    self.send_header("Access-Control-Allow-Origin", owner.allowed_origin)
                    self.send_header("Access-Control-Allow-Credentials", "true")
                    self.send_header("Vary", "Origin")
                for name, value in extra:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_OPTIONS(self):
                self._record()
                self._answer(204, extra=[("Access-Control-Allow-Methods", "PUT"),
                                         ("Access-Control-Allow-Headers", "content-type, x-client"),
                                         ("Access-Control-Max-Age", "0")])

            def do_PUT(self):
                self._record()
                headers = dict((n.lower(), v) for n, v in self.headers.items())
                self._answer(200, json.dumps({"email": headers.get("x-auth-email")}).encode(),
                             [("Content-Type", "application/json")])

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def requests_for(self, path):
        return [(method, headers) for method, p, headers in self.received if p == path]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class PageServer:
    """The page of another origin (same site: 127.0.0.1, another port) that calls the API."""

    PAGE = b"<!doctype html><title>app</title><p>app"

    def __init__(self):
        import http.server
        import threading
        page = self.PAGE

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


FETCH = """
const [url, done] = [arguments[0], arguments[arguments.length - 1]];
fetch(url, {method: 'PUT', credentials: 'include', body: '{}',
             headers: {'Content-Type': 'application/json', 'X-Client': 'page'}})
  .then(r => r.text().then(t => done({status: r.status, body: t})))
  .catch(e => done({error: String(e)}));
"""


def test_chromium_calls_an_api_across_origins_with_credentials(start_auth_sidecar, chromium):
    from browser_support import find_browser, wait_until
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC

    find_browser()
    page = PageServer()
    api = CORSUpstream(page.origin)
    try:
        sc, _ = start_auth_sidecar({
            "upstreams": {"cors": {"url": "http://127.0.0.1:%d" % api.port}},
            "rules": [{"path": "/api/private/**", "api": True, "cors_preflight": "refuse", "upstream": "cors"},
                      {"path": "/api/**", "api": True, "upstream": "cors"}],
        })
        origin = "http://127.0.0.1:%d" % sc.port
        browser = chromium()

        # Sign in on the sidecar's origin, as a user would.
        browser.get(origin + "/.auth/login?rd=/pub/signed-in")
        wait_until(browser, EC.presence_of_element_located((By.ID, "approve")),
                   "no authorize page (at %s)" % browser.current_url)
        browser.find_element(By.ID, "approve").click()
        wait_until(browser, EC.url_to_be(origin + "/pub/signed-in"),
                   "the sign-in did not come back (at %s): %s" % (browser.current_url, browser.page_source[:500]))

        # The page on the other origin calls the API with credentials: preflight, then PUT.
        browser.get(page.origin + "/")
        result = browser.execute_async_script(FETCH, origin + "/api/items/1")
        assert result.get("status") == 200, result
        assert json.loads(result["body"]) == {"email": "maria.ruiz@example.com"}
        calls = api.requests_for("/api/items/1")
        assert [method for method, _ in calls] == ["OPTIONS", "PUT"], calls
        preflight, actual = dict(calls[0][1]), dict(calls[1][1])
        assert preflight["origin"] == page.origin and preflight["access-control-request-method"] == "PUT"
        assert not any(name.startswith("x-auth-") or name == "cookie" for name in preflight), preflight
        assert actual["x-auth-email"] == "maria.ruiz@example.com" and "cookie" not in actual

        # A rule that refuses preflights: the browser never sends the request.
        result = browser.execute_async_script(FETCH, origin + "/api/private/2")
        assert "error" in result, result
        assert api.requests_for("/api/private/2") == []

        # Signed out, the preflight still reaches the upstream, the request needs a session:
        # its 401 carries no CORS grant, so the page learns nothing.
        browser.execute_cdp_cmd("Network.clearBrowserCookies", {})
        result = browser.execute_async_script(FETCH, origin + "/api/items/3")
        assert "error" in result, result
        assert [method for method, _ in api.requests_for("/api/items/3")] == ["OPTIONS"]
    finally:
        api.close()
        page.close()
