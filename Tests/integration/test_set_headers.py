"""`rules[].set_headers` end to end: the fixed fields of the rule that decides a request reach
the upstream over HTTP/1.1 and HTTP/2 and come back in both `/.auth/check` answers (nginx's
`auth_request` form and Envoy's `ext_authz` form); a client's own copy of such a name, in any
spelling (case, `_` for `-`), never reaches the upstream, whichever rule decides; a path whose
readings fall to rules that add different fields is refused rather than guessed; and names
or values that would change what the request is are refused when the file is read, with its
line and column."""
import json
import socket
import subprocess

import pytest

from conftest import free_port, place_ports, poll, seen, sidecar_binary, to_yaml
from h2_support import H2Client
from test_envoy import ROOT, find_envoy, signed_in_through_envoy
from nginx_support import CookieClient, start_nginx  # noqa: F401 (start_nginx: a fixture)
from test_nginx import echoed, sign_in as nginx_sign_in

HTML = ("Accept", "text/html,application/xhtml+xml")
JSON = ("Accept", "application/json")
RULES = [
    {"path": "/admin/**", "allowed_emails": ["boss@example.com"],
     "set_headers": {"X-Role": "admin", "X-Tenant": "acme"}},                   # 0
    {"path": "/static/**", "public": True, "set_headers": {"X-Cache-Zone": "public"}},  # 1
    {"path": "/billing/**", "set_headers": {"X-Readonly": "1", "X-Tenant": "acme"}},    # 2
    {"path": "/plain/**"},                                                      # 3
    {"path": "/**", "set_headers": {"X-Role": "user", "X-Tenant": "acme"}},     # 4
]
# A client's own copies of every name a rule sets, spelt as WSGI, Express, Tomcat and Go
# upstreams would all read as that name.
FORGED = [("X-Role", "admin"), ("x-role", "root"), ("X_Role", "admin"), ("x_ROLE", "admin"),
          ("X-Readonly", "0"), ("x_readonly", "0"), ("X-TENANT", "evil"), ("X_Tenant", "evil"),
          ("X-Cache-Zone", "private"), ("x_cache_zone", "private")]


def config():
    return {"rules": RULES, "trusted_proxies": ["127.0.0.1/32"]}


def added(echo):
    return {name: seen(echo, name) for name in ("X-Role", "X-Tenant", "X-Readonly", "X-Cache-Zone")}


def test_the_deciding_rules_fields_reach_the_upstream_and_forged_copies_never(start_auth_sidecar, browser):
    sc, apple = start_auth_sidecar(config())
    maria = browser(sc, apple)
    assert maria.login()[0].status == 303
    boss = browser(sc, apple)
    assert boss.login(email="boss@example.com")[0].status == 303

    r = boss.request("GET", "/admin/users", headers=[HTML] + FORGED)
    assert r.status == 200, r.status
    assert added(r.json()) == {"X-Role": ["admin"], "X-Tenant": ["acme"], "X-Readonly": [], "X-Cache-Zone": []}
    r = maria.request("GET", "/billing/invoices", headers=[HTML] + FORGED)
    assert r.status == 200
    assert added(r.json()) == {"X-Role": [], "X-Tenant": ["acme"], "X-Readonly": ["1"], "X-Cache-Zone": []}
    r = maria.request("GET", "/elsewhere", headers=[HTML] + FORGED)
    assert added(r.json()) == {"X-Role": ["user"], "X-Tenant": ["acme"], "X-Readonly": [], "X-Cache-Zone": []}
    # A public rule adds its fields without a session; a rule without set_headers adds none,
    # and still no client copy of any rule's name passes.
    r = sc.request("GET", "/static/app.css", [HTML] + FORGED)
    assert r.status == 200
    assert added(r.json()) == {"X-Role": [], "X-Tenant": [], "X-Readonly": [], "X-Cache-Zone": ["public"]}
    r = maria.request("GET", "/plain/x", headers=[HTML] + FORGED)
    assert r.status == 200 and added(r.json()) == {"X-Role": [], "X-Tenant": [], "X-Readonly": [], "X-Cache-Zone": []}
    # The client's other fields pass untouched beside them.
    r = maria.request("GET", "/billing/x", headers=[HTML, ("X-Roles", "kept"), ("X-Readonly-Not", "kept")])
    assert seen(r.json(), "X-Roles") == ["kept"] and seen(r.json(), "X-Readonly-Not") == ["kept"]
    # A rule's restriction still decides first: its fields never go with a refused request.
    assert maria.get("/admin/users").status == 403


def test_a_path_whose_readings_fall_to_rules_adding_different_fields_is_refused(start_auth_sidecar, browser):
    sc, apple = start_auth_sidecar(config())
    maria = browser(sc, apple)
    assert maria.login()[0].status == 303
    # Tomcat cuts `;v=1`, Express and IIS ignore case: such upstreams read these as
    # /billing/…, whose rule adds X-Readonly: 1, while the path as sent falls to the catch-all
    # rule, which does not. Either guess could hand the upstream the wrong fields.
    for target in ("/BILLING/invoices", "/billing;v=1/invoices", "/Billing./invoices"):
        r = maria.get(target)
        assert r.status == 400, (target, r.status)
    assert sc.logged(lambda out: '"reason":"ambiguous_set_headers"' in out)
    # Readings that fall to one rule (or rules adding the same fields) are not ambiguous.
    r = maria.get("/billing/invoices;v=1")
    assert r.status == 200 and seen(r.json(), "X-Readonly") == ["1"]
    r = maria.get("/elsewhere/PAGE")
    assert r.status == 200 and seen(r.json(), "X-Role") == ["user"]


def test_over_http2(start_auth_sidecar, browser):
    sc, apple = start_auth_sidecar(config())
    boss = browser(sc, apple)
    assert boss.login(email="boss@example.com")[0].status == 303
    name, value = boss.session_cookie
    forged = [(n.lower(), v) for n, v in FORGED]
    c = H2Client(sc.port)
    try:
        r = c.request("GET", "/admin/x", [("cookie", "%s=%s" % (name, value))] + forged)
        assert r.status == 200, r.body
        assert added(json.loads(r.body)) == {"X-Role": ["admin"], "X-Tenant": ["acme"], "X-Readonly": [],
                                             "X-Cache-Zone": []}
        r = c.request("GET", "/billing/x", [("cookie", "%s=%s" % (name, value))] + forged)
        assert added(json.loads(r.body)) == {"X-Role": [], "X-Tenant": ["acme"], "X-Readonly": ["1"],
                                             "X-Cache-Zone": []}
        assert c.request("GET", "/BILLING/x", [("cookie", "%s=%s" % (name, value))]).status == 400
    finally:
        c.close()


def forward_auth(client, uri, extra=()):
    return client.request("GET", "/.auth/check", headers=[JSON, ("X-Forwarded-Uri", uri),
                                                          ("X-Forwarded-Method", "GET")] + list(extra))


def test_both_forward_auth_answers_carry_the_same_fields(start_auth_sidecar, browser):
    sc, apple = start_auth_sidecar(config())
    boss = browser(sc, apple)
    assert boss.login(email="boss@example.com")[0].status == 303
    anonymous = browser(sc, apple)

    # nginx auth_request: the answer's fields, copied onto the proxied request by
    # auth_request_set / proxy_set_header.
    r = forward_auth(boss, "/admin/x")
    assert r.status == 200 and r.header("X-Role") == "admin" and r.header("X-Tenant") == "acme"
    r = forward_auth(boss, "/billing/x")
    assert r.status == 200 and r.header("X-Readonly") == "1" and r.header("X-Role") is None
    r = forward_auth(anonymous, "/static/a.css")
    assert r.status == 200 and r.header("X-Cache-Zone") == "public" and r.header("X-Auth-User-Id") is None
    assert forward_auth(boss, "/BILLING/x").status == 403, "ambiguous readings: refused as a rule refuses"
    assert forward_auth(anonymous, "/billing/x").status == 401 and forward_auth(anonymous, "/billing/x").header(
        "X-Readonly") is None

    # Envoy ext_authz: the same fields, and the client's copies Envoy would pass on named
    # for removal (other rules' names, and this rule's own names spelt otherwise).
    r = boss.request("GET", "/.auth/check/billing/x", headers=[JSON, ("x_readonly", "0"), ("X_Role", "admin")])
    assert r.status == 200 and r.header("X-Readonly") == "1" and r.header("X-Tenant") == "acme"
    removed = r.header("X-Envoy-Auth-Headers-To-Remove").split(", ")
    assert {"x-role", "x-cache-zone", "x_readonly", "x_role"} <= set(removed), removed
    assert "x-readonly" not in removed and "x-tenant" not in removed, "Envoy sets those from the answer"
    r = boss.request("GET", "/.auth/check/admin/x", headers=[JSON])
    assert r.status == 200 and r.header("X-Role") == "admin"
    assert boss.request("GET", "/.auth/check/BILLING/x", headers=[JSON]).status == 400


def check_config(tmp_path, base_config, rule_text):
    """`sidecar check` on a configuration whose rules are `rule_text` (YAML lines)."""
    config = base_config(free_port(), free_port())
    path = tmp_path / "sidecar.yaml"
    text = to_yaml(config) + "\nrules:\n" + rule_text
    path.write_text(text)
    run = subprocess.run([str(sidecar_binary()), "check", "--config", str(path)], capture_output=True, text=True,
                         timeout=30)
    return run, path


def test_names_and_values_that_would_change_the_request_are_refused_at_load(tmp_path, base_config):
    run, _ = check_config(tmp_path, base_config, '  - path: /x/**\n    set_headers: {X-Tenant: acme}\n')
    assert run.returncode == 0, run.stderr
    for name in ("Host", "content-length", "Transfer_Encoding", "Connection", "TE", "Upgrade", "Expect",
                 "Keep-Alive", "Proxy-Authorization", "Cookie", "Authorization", "X-Auth-User-Id", "x_auth_email",
                 "Forwarded", "X-Forwarded-For", "X-Forwarded-Prefix", "X-Real-IP", "X-HTTP-Method-Override",
                 "X-Request-Id", "traceparent", ":authority", "Bad Name"):
        run, path = check_config(tmp_path, base_config, '  - path: /x/**\n    set_headers:\n      "%s": v\n' % name)
        assert run.returncode == 1, (name, run.stdout)
        lines = path.read_text().splitlines()
        at = next(i for i, text in enumerate(lines, 1) if ('"%s"' % name) in text)
        assert ("%s:%d:7:" % (path, at)) in run.stderr and "rules[0].set_headers" in run.stderr, (name, run.stderr)
    for value, why in (('"a\\rb"', "a CR"), ('"a\\nb"', "a LF"), ('"a\\0b"', "a NUL"), ('" a"', "whitespace"),
                       ('"caf\\u00e9"', "outside ASCII"), ('""', "empty")):
        run, path = check_config(tmp_path, base_config, '  - path: /x/**\n    set_headers:\n      X-A: %s\n' % value)
        assert run.returncode == 1 and why in run.stderr, (value, run.stderr)
        lines = path.read_text().splitlines()
        at = next(i for i, text in enumerate(lines, 1) if "X-A:" in text)
        assert ("%s:%d:12:" % (path, at)) in run.stderr, (value, run.stderr)
    run, _ = check_config(tmp_path, base_config, '  - path: /x/**\n    set_headers: {X-A: "1", x_a: "2"}\n')
    assert run.returncode == 1 and "again" in run.stderr, run.stderr
    run, _ = check_config(tmp_path, base_config, '  - path: /x/**\n    deny: true\n    set_headers: {X-A: "1"}\n')
    assert run.returncode == 1 and "deny rule" in run.stderr, run.stderr


# -- through a real Envoy (Examples/envoy/envoy.yaml, its ext_authz asking /.auth/check/…) ------
@pytest.fixture
def envoy_with_set_headers(upstream, start_sidecar, start_emulator, tmp_path):
    """(Envoy's port, sidecar): the example file, its allowed_upstream_headers also listing the
    names the rules set (as an operator adds them), and the rules above under /app."""
    envoy = find_envoy()
    port = free_port()
    public_url = "http://127.0.0.1:%d" % port
    emulator = start_emulator([public_url + "/.auth/callback"], ["--auto-approve", envoy_user])
    rules = [{"path": "/app/billing/**", "set_headers": {"X-Readonly": "1", "X-Tenant": "acme"}},
             {"path": "/app/**", "set_headers": {"X-Tenant": "acme"}}]
    sidecar = start_sidecar({"public_url": public_url, "trusted_proxies": ["127.0.0.1/32"],
                             "apple": {"base_url": emulator.issuer}, "access": {"public_paths": []}, "rules": rules})
    text = (ROOT / "Examples" / "envoy" / "envoy.yaml").read_text()
    text = place_ports(text, {"8080": sidecar.port, "3000": upstream.port})
    text = text.replace("address: 0.0.0.0, port_value: 10000", "address: 127.0.0.1, port_value: %d" % port)
    allowed = "                    - {exact: x-auth-assertion}\n"
    assert allowed in text
    text = text.replace(allowed, allowed + "                    - {exact: x-readonly}\n"
                                           "                    - {exact: x-tenant}\n")
    conf = tmp_path / "envoy.yaml"
    conf.write_text(text)
    log = open(tmp_path / "envoy.log", "wb")
    proc = subprocess.Popen([envoy, "-c", str(conf), "--base-id", str(port), "-l", "warning"],
                            stdout=log, stderr=log, stdin=subprocess.DEVNULL, cwd=tmp_path)
    try:
        assert poll(lambda: _accepts(port) or proc.poll() is not None, timeout=30) and proc.poll() is None, \
            (tmp_path / "envoy.log").read_text()
        yield port, sidecar
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


envoy_user = "maria.ruiz@example.com"


def _accepts(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def test_through_envoy_the_rules_fields_replace_the_clients(envoy_with_set_headers, upstream):
    port, _ = envoy_with_set_headers
    client = signed_in_through_envoy(port)
    seen_by_app = echoed(client.get("/app/billing/x", headers=[HTML, ("X-Readonly", "0"), ("X-TENANT", "evil")]))
    assert seen_by_app["x-readonly"] == ["1"] and seen_by_app["x-tenant"] == ["acme"], seen_by_app
    # Another rule's name is removed by Envoy as the answer asks, whoever sends it.
    seen_by_app = echoed(client.get("/app/page", headers=[HTML, ("X-Readonly", "0")]))
    assert "x-readonly" not in seen_by_app and seen_by_app["x-tenant"] == ["acme"], seen_by_app
    # An underscore spelling never reaches the app (the example refuses such names outright).
    upstream.reset()
    assert client.get("/app/page", headers=[HTML, ("X_Readonly", "0")]).status == 400
    assert upstream.stats()["requests"] == 0
    # Readings that fall to rules adding different fields: refused, never forwarded.
    assert client.get("/app/BILLING/x").status == 400
    assert upstream.stats()["requests"] == 0


# -- through a real nginx (Examples/nginx-auth-request.conf, auth_request asking /.auth/check) ----
def test_through_nginx_auth_request_the_rules_fields_replace_the_clients(
        upstream, start_sidecar, start_emulator, start_nginx):
    port = free_port()
    public_url = "http://127.0.0.1:%d" % port
    emulator = start_emulator([public_url + "/.auth/callback"], ["--auto-approve", NGINX_USER])
    sidecar = start_sidecar({
        "public_url": public_url, "trusted_proxies": ["127.0.0.1/32"], "apple": {"base_url": emulator.issuer},
        "access": {"public_paths": []},
        "rules": [{"path": "/billing/**", "set_headers": {"X-Readonly": "1"}}, {"path": "/**"}]})
    # As an operator copies a rule's field: auth_request_set from the answer, proxy_set_header
    # onto the proxied request (which also replaces the client's own copy; empty sends none).
    read = "            auth_request_set $auth_assertion      $upstream_http_x_auth_assertion;\n"
    copy = "            proxy_set_header X-Auth-Assertion      $auth_assertion;\n"
    start_nginx("nginx-auth-request.conf", {
        "127.0.0.1:8080": "127.0.0.1:%d" % sidecar.port,
        "127.0.0.1:3000": "127.0.0.1:%d" % upstream.port,
        "listen 80;": "listen 127.0.0.1:%d;" % port,
        read: read + "            auth_request_set $rule_readonly $upstream_http_x_readonly;\n",
        copy: copy + "            proxy_set_header X-Readonly $rule_readonly;\n",
    }, port)
    client = CookieClient(port)
    nginx_sign_in(client, "/billing/x")
    seen_by_app = echoed(client.get("/billing/x", headers=[HTML, ("X-Readonly", "0")]))
    assert seen_by_app["x-readonly"] == ["1"], seen_by_app
    seen_by_app = echoed(client.get("/other", headers=[HTML, ("X-Readonly", "1")]))
    assert "x-readonly" not in seen_by_app, seen_by_app
    upstream.reset()
    assert client.get("/BILLING/x").status == 403, "ambiguous readings: the check refuses"
    assert upstream.stats()["requests"] == 0


NGINX_USER = "maria.ruiz@example.com"
