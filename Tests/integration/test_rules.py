"""`rules` and `upstreams` end to end: per-path policy (paths, methods, hosts; public, API,
deny; allowed emails, domains, subjects, private relay) decided in front of two real
upstreams, `sidecar check`'s warnings, forward-auth (`/.auth/check`) applying the same
rules, and SIGHUP changing a rule under keep-alive load."""
import json
import re
import subprocess
import sys
import threading
import time

import pytest

import rawhttp
from conftest import HERE, Upstream, free_port, poll, seen, sidecar_binary, to_yaml

HTML = ("Accept", "text/html,application/xhtml+xml")
JSON = ("Accept", "application/json")


@pytest.fixture(scope="module")
def api_upstream(tmp_path_factory, keydir):
    """A second upstream process, for the rules that route to `upstreams.api`."""
    d = tmp_path_factory.mktemp("api-upstream")
    err = open(d / "stderr.log", "wb")
    proc = subprocess.Popen([sys.executable, str(HERE / "upstream.py"), "--unix", str(d / "up.sock")],
                            stdout=subprocess.PIPE, stderr=err)
    ports = json.loads(proc.stdout.readline())
    yield Upstream(proc, ports["port"], ports["control"], str(d / "up.sock"))
    proc.terminate()
    proc.wait(5)
    err.close()


def rules_config(api_upstream, rules, **more):
    config = {
        "upstreams": {"api": {"url": "http://127.0.0.1:%d" % api_upstream.port, "upstream_timeout": "30s",
                              "upstream_connect_timeout": "2s"}},
        "rules": rules,
    }
    config.update(more)
    return config


RULES = [
    {"path": "/static/**", "public": True},                                   # 0
    {"path": "/internal/**", "deny": True},                                   # 1
    {"path": "/api/**", "api": True, "upstream": "api"},                      # 2
    {"path": "/admin/**", "allowed_emails": ["boss@example.com"]},            # 3
    {"path": "/team/**", "allowed_email_domains": ["corp.example"]},          # 4
    {"path": "/relay/**", "allow_private_relay": False},                      # 5
    {"path": "/write/**", "methods": ["POST", "DELETE"], "deny": True},       # 6
    {"path": "/hosted/**", "host": "admin.example.com", "deny": True},        # 7
]


def upstream_port(echo):
    return int(seen(echo, "Host")[0].rsplit(":", 1)[1])


def test_rules_decide_paths_methods_hosts_and_users(start_auth_sidecar, browser, upstream, api_upstream):
    sc, apple = start_auth_sidecar(rules_config(api_upstream, RULES))
    anonymous = browser(sc, apple)

    # Without a session: public, deny, API and the rest as before.
    r = anonymous.get("/static/app.css")
    assert r.status == 200 and upstream_port(r.json()) == upstream.port
    assert anonymous.get("/internal/x").status == 403
    r = anonymous.get("/api/items")
    assert r.status == 401 and r.json()["error"] == "unauthenticated", "api: true answers JSON, even to a browser"
    assert anonymous.get("/admin/").status == 302
    assert anonymous.get("/elsewhere").status == 302, "no rule: access.* decides"
    assert anonymous.get("/pub/x").status == 200, "no rule: public_paths still apply"

    maria = browser(sc, apple)
    assert maria.login()[0].status == 303
    boss = browser(sc, apple)
    assert boss.login(email="boss@example.com")[0].status == 303
    ana = browser(sc, apple)
    assert ana.login(email="ana@corp.example")[0].status == 303

    # A public rule forwards without identity, signed in or not (as public_paths).
    echo = maria.get("/static/app.css").json()
    assert seen(echo, "X-Auth-User-Id") == [] and seen(echo, "X-Auth-Email") == []

    # Routed to the second upstream, identity injected as on the first.
    r = maria.get("/api/items", headers=(JSON,))
    assert r.status == 200
    echo = r.json()
    assert upstream_port(echo) == api_upstream.port and seen(echo, "X-Auth-Email") == ["maria.ruiz@example.com"]
    assert api_upstream.stats()["targets"][-1] == "GET /api/items"
    assert upstream_port(maria.get("/elsewhere").json()) == upstream.port

    # Emails, domains: allowed ones pass, other signed-in users get 403 (page or JSON).
    assert boss.get("/admin/users").status == 200
    r = maria.get("/admin/users")
    assert r.status == 403 and b"<html" in r.body.lower()
    r = maria.get("/admin/users", headers=(JSON,))
    assert r.status == 403 and r.json() == {"error": "forbidden"}
    assert sc.logged(lambda out: '"reason":"email"' in out and '"rule":3' in out)
    assert ana.get("/team/plan").status == 200
    assert maria.get("/team/plan").status == 403
    assert ana.get("/admin/").status == 403

    # deny wins over a session; methods and hosts narrow a rule.
    assert boss.get("/internal/x").status == 403
    assert maria.request("POST", "/write/x", body=b"a=1").status == 403
    assert maria.request("DELETE", "/write/x").status == 403
    assert maria.get("/write/x").status == 200
    # A method the sidecar does not know is held to a rule refusing by method, never let past.
    assert maria.request("post", "/write/x", body=b"a=1").status == 403
    assert maria.request("PROPFIND", "/write/x").status == 403
    assert maria.request("PROPFIND", "/elsewhere").status == 200
    assert maria.get("/hosted/x").status == 200
    assert maria.request("GET", "/hosted/x", headers=[("Host", "Admin.Example.com:8443"), HTML]).status == 403
    # An absolute-form target's authority is the host (as it is forwarded), whatever Host says.
    r = maria.request("GET", "http://admin.example.com/hosted/x", headers=[("Host", "test.local"), HTML])
    assert r.status in (400, 403), r.status
    # Decided on the normalized path: a dot segment does not get around a rule.
    assert maria.get("/static/../admin/users").status == 403

    # The access line names the upstream the request went to (written after the answer: polled).
    assert sc.logged(lambda out: '"path":"/api/items","status":200' in out
                     and '"upstream":"127.0.0.1:%d"' % api_upstream.port in out)
    out = sc.output()
    refused = [json.loads(line) for line in out.splitlines() if "request refused by a rule" in line]
    reasons = {(line.get("rule"), line.get("reason")) for line in refused}
    assert (3, "email") in reasons and (4, "email") in reasons and (1, "deny") in reasons, refused
    assert all(line.get("request_id") and line.get("trace_id") for line in refused)


def test_private_relay_and_subjects_and_a_reload(start_auth_sidecar, browser, api_upstream):
    sc, apple = start_auth_sidecar(rules_config(api_upstream, RULES))
    apple.control("POST", "/emulator/users", [{"email": "hidden@example.com", "hideMyEmail": True}])
    hidden = browser(sc, apple)
    assert hidden.login(email="hidden@example.com")[0].status == 303
    assert hidden.get("/relay/x").status == 403
    assert hidden.get("/elsewhere").status == 200
    maria = browser(sc, apple)
    assert maria.login()[0].status == 303
    assert maria.get("/relay/x").status == 200
    subject = maria.get("/.auth/me", headers=(JSON,)).json()["id"]

    # A subject rule added by SIGHUP applies to the next request, with the same sessions.
    config = dict(sc.config)
    config["rules"] = [{"path": "/owner/**", "allowed_subjects": [subject]}] + RULES
    sc.config_path.write_text(to_yaml(config) + "\n")
    assert sc.sighup()
    assert maria.get("/owner/x").status == 200
    assert hidden.get("/owner/x").status == 403
    assert hidden.get("/relay/x").status == 403, "the other rules moved down one place and still apply"
    assert sc.logged(lambda out: '"reason":"private_relay"' in out and '"rule":6' in out)


def test_each_upstream_is_in_readyz_and_the_metrics(start_auth_sidecar, browser, api_upstream):
    sc, apple = start_auth_sidecar(rules_config(api_upstream, RULES))
    b = browser(sc, apple)
    assert b.login()[0].status == 303
    assert b.get("/api/x", headers=(JSON,)).status == 200
    api = 'upstream="api",server="127.0.0.1:%d"' % api_upstream.port
    metrics = poll(lambda: (lambda t: t if 'sidecar_upstream_response_seconds_count{%s} 1' % api in t else None)(
        sc.admin("/metrics").body.decode()), timeout=5)
    assert metrics, sc.admin("/metrics").body.decode()
    assert re.search(r'sidecar_upstream_connect_failures_total\{upstream="default",server="[^"]+"\} 0', metrics)
    assert sc.admin("/readyz").status == 200

    dead = free_port()
    config = dict(sc.config)
    config["upstreams"] = {"api": {"url": "http://127.0.0.1:%d" % dead, "upstream_connect_timeout": "1s"}}
    sc.config_path.write_text(to_yaml(config) + "\n")
    assert sc.sighup()
    r = sc.admin("/readyz")  # the moved upstream is probed at once, not vouched for by the old one
    assert r and b"upstream api unreachable" in r.body and b"upstream unreachable\n" not in r.body, r
    r = b.get("/api/x", headers=(JSON,))
    assert r.status == 502
    assert sc.logged(lambda out: '"upstream":"127.0.0.1:%d","upstream_name":"api"' % dead in out.replace(" ", ""))


def test_check_names_shadowed_rules_and_public_api_paths(tmp_path, base_config, api_upstream):
    config = base_config(free_port(), free_port())
    config["access"] = {"api_paths": ["/api/**"]}
    config.update(rules_config(api_upstream, [
        {"path": "/admin/**", "allowed_emails": ["boss@example.com"]},
        {"path": "/admin/users/*", "deny": True},
        {"path": "/api/v2/**", "public": True, "upstream": "api"},
    ]))
    path = tmp_path / "sidecar.yaml"
    text = to_yaml(config) + "\n"
    path.write_text(text)
    run = subprocess.run([str(sidecar_binary()), "check", "--config", str(path)], capture_output=True, text=True,
                         timeout=30)
    assert run.returncode == 0, run.stderr
    assert "3 rules, first match wins" in run.stdout and "upstream api" in run.stdout, run.stdout
    lines = text.splitlines()
    shadowed_line = next(i for i, line in enumerate(lines, 1) if "/admin/users/*" in line)
    public_line = next(i for i, line in enumerate(lines, 1) if "/api/v2/**" in line)
    warnings = [line for line in run.stderr.splitlines() if ": warning: rules[" in line]
    assert len(warnings) == 2, run.stderr
    assert warnings[0].startswith("%s:%d:" % (path, shadowed_line)) and "rules[1]: can never match: rules[0]" in warnings[0]
    assert warnings[1].startswith("%s:%d:" % (path, public_line)) and "access.api_paths" in warnings[1]


def test_check_refuses_a_rule_that_contradicts_itself(tmp_path, base_config):
    config = base_config(free_port(), free_port())
    config["rules"] = [{"path": "/x/**", "public": True, "allowed_emails": ["a@example.com"]}]
    path = tmp_path / "sidecar.yaml"
    path.write_text(to_yaml(config) + "\n")
    run = subprocess.run([str(sidecar_binary()), "check", "--config", str(path)], capture_output=True, text=True,
                         timeout=30)
    assert run.returncode == 1 and "rules[0].allowed_emails" in run.stderr and "public rule" in run.stderr


def check(sc, cookie_jar_browser, uri, method="GET", trusted_headers=True, host=None):
    headers = [("X-Forwarded-Uri", uri), ("X-Forwarded-Method", method)] if trusted_headers else []
    if host:
        headers.append(("X-Forwarded-Host", host))
    return cookie_jar_browser.request("GET", "/.auth/check", headers=[JSON] + headers)


def test_forward_auth_applies_the_rules_to_the_forwarded_request(start_auth_sidecar, browser, api_upstream):
    sc, apple = start_auth_sidecar(rules_config(api_upstream, RULES, trusted_proxies=["127.0.0.1/32"]))
    anonymous = browser(sc, apple)
    maria = browser(sc, apple)
    assert maria.login()[0].status == 303
    boss = browser(sc, apple)
    assert boss.login(email="boss@example.com")[0].status == 303

    r = check(sc, anonymous, "/static/a.css?v=1")
    assert r.status == 200 and r.header("X-Auth-User-Id") is None
    assert check(sc, anonymous, "/internal/x").status == 403
    assert check(sc, anonymous, "/admin/x").status == 401
    assert check(sc, maria, "/admin/x").status == 403
    r = check(sc, boss, "/admin/x")
    assert r.status == 200 and r.header("X-Auth-Email") == "boss@example.com"
    assert check(sc, maria, "/write/x", method="POST").status == 403
    assert check(sc, maria, "/write/x", method="GET").status == 200
    assert check(sc, maria, "/hosted/x", host="admin.example.com").status == 403
    assert check(sc, maria, "/internal/../admin/x").status == 403, "the forwarded path is normalized"
    # nginx's example sends X-Original-URI / X-Original-Method.
    r = maria.request("GET", "/.auth/check", headers=[JSON, ("X-Original-URI", "/admin/x"),
                                                      ("X-Original-Method", "GET")])
    assert r.status == 403
    # Rules configured, but the request asked about is unknown: refused, not guessed.
    assert check(sc, boss, None, trusted_headers=False).status == 403
    assert sc.logged(lambda out: "no_forwarded_uri" in out)


def test_forward_auth_refuses_forwarded_fields_that_disagree(start_auth_sidecar, browser, api_upstream):
    """nginx auth_request and ingress-nginx pass the client's own request fields on to the
    check: a client's X-Forwarded-Uri beside the proxy's X-Original-URI (or X-Original-URL)
    must not rename the request the rules decide. Every copy must name the same request."""
    sc, apple = start_auth_sidecar(rules_config(api_upstream, RULES, trusted_proxies=["127.0.0.1/32"]))
    boss = browser(sc, apple)
    assert boss.login(email="boss@example.com")[0].status == 303
    maria = browser(sc, apple)
    assert maria.login()[0].status == 303

    def ask(who, *fields):
        return who.request("GET", "/.auth/check", headers=[JSON] + list(fields))

    # The client's forged copy beside what the proxy set: refused, whichever comes first.
    assert ask(maria, ("X-Forwarded-Uri", "/app/page"), ("X-Original-URI", "/admin/users")).status == 403
    assert ask(maria, ("X-Original-URI", "/admin/users"), ("X-Forwarded-Uri", "/app/page")).status == 403
    assert ask(boss, ("X-Forwarded-Uri", "/app/page"), ("X-Original-URI", "/admin/users")).status == 403
    assert sc.logged(lambda out: "ambiguous_forwarded_uri" in out)
    assert ask(maria, ("X-Original-URI", "/write/x"), ("X-Original-Method", "POST"),
               ("X-Forwarded-Method", "GET")).status == 403
    assert sc.logged(lambda out: "ambiguous_forwarded_method" in out)
    assert ask(maria, ("X-Forwarded-Uri", "/hosted/x"), ("X-Forwarded-Host", "app.example.com"),
               ("X-Forwarded-Host", "admin.example.com")).status == 403
    # ingress-nginx: X-Original-URL, an absolute URL, is read too.
    assert ask(maria, ("X-Original-URL", "https://app.example.com/admin/x?y=1")).status == 403
    assert ask(boss, ("X-Original-URL", "https://app.example.com/admin/x?y=1")).status == 200
    assert ask(boss, ("X-Original-URL", "https://app.example.com/admin/x"), ("X-Forwarded-Uri", "/static/a.css")).status == 403
    # Copies that agree (the same path spelled two ways normalizes alike) are one request.
    r = ask(boss, ("X-Forwarded-Uri", "/admin/x?a=1"), ("X-Original-URI", "/admin/./x"), ("X-Forwarded-Method", "GET"),
            ("X-Original-Method", "GET"))
    assert r.status == 200 and r.header("X-Auth-Email") == "boss@example.com"


def test_forward_auth_from_an_untrusted_peer_is_refused_when_rules_exist(start_auth_sidecar, browser, api_upstream):
    sc, apple = start_auth_sidecar(rules_config(api_upstream, RULES))
    boss = browser(sc, apple)
    assert boss.login(email="boss@example.com")[0].status == 303
    assert check(sc, boss, "/admin/x").status == 403
    assert sc.logged(lambda out: "untrusted_peer" in out)


def test_forward_auth_without_rules_is_unchanged(start_auth_sidecar, browser):
    sc, apple = start_auth_sidecar()
    b = browser(sc, apple)
    assert b.login()[0].status == 303
    assert b.request("GET", "/.auth/check", headers=[JSON]).status == 200


def test_sighup_changes_a_rule_under_keep_alive_load(start_auth_sidecar, browser, api_upstream):
    sc, apple = start_auth_sidecar(rules_config(api_upstream, [{"path": "/flip/**", "public": True}]))
    b = browser(sc, apple)
    assert b.login()[0].status == 303
    cookie = b.cookie_header("/flip/x")
    stop = threading.Event()
    results, errors = [], []

    def load():
        try:
            with sc.conn(timeout=10) as c:
                while not stop.is_set():
                    r = c.request("GET", "/flip/x", cookie + [JSON])
                    results.append((time.monotonic(), r.status))
        except Exception as e:  # a dropped request or connection fails the test
            errors.append(repr(e))

    threads = [threading.Thread(target=load) for _ in range(4)]
    for t in threads:
        t.start()
    assert poll(lambda: len(results) > 50, timeout=10)
    config = dict(sc.config)
    config["rules"] = [{"path": "/flip/**", "deny": True}]
    sc.config_path.write_text(to_yaml(config) + "\n")
    assert sc.sighup()
    reloaded_at = time.monotonic()
    # A new connection meets the new rule at once, and so does each connection opened before.
    with sc.conn(timeout=10) as c:
        assert c.request("GET", "/flip/x", cookie + [JSON]).status == 403
    assert poll(lambda: sum(1 for at, _ in results if at > reloaded_at + 0.5) > 50, timeout=10)
    stop.set()
    for t in threads:
        t.join(10)
    assert errors == []
    statuses = {status for _, status in results}
    assert statuses <= {200, 403}, statuses
    assert all(status == 403 for at, status in results if at > reloaded_at + 0.5)
    assert any(status == 200 for _, status in results)


def test_rules_decide_each_http2_stream(start_auth_sidecar, browser, upstream, api_upstream):
    """Over HTTP/2 every stream is decided by the same rules: a deny rule, a method rule and a
    host rule refuse; an API rule goes to its own upstream; a user a rule does not admit gets 403."""
    from h2_support import H2Client
    H2_JSON = ("accept", "application/json")  # HTTP/2 field names are lowercase
    sc, apple = start_auth_sidecar(rules_config(api_upstream, RULES))
    b = browser(sc, apple)
    assert b.login(email="maria.ruiz@example.com")[0].status == 303
    name, value = b.session_cookie
    cookie = ("cookie", "%s=%s" % (name, value))
    c = H2Client(sc.port)
    assert c.request("GET", "/internal/x", [H2_JSON]).status == 403
    assert c.request("POST", "/write/x", [H2_JSON, cookie], body=b"a").status == 403
    assert c.request("GET", "/hosted/x", [H2_JSON, cookie], authority="admin.example.com").status == 403
    r = c.request("GET", "/api/v1", [H2_JSON, cookie])
    assert r.status == 200 and upstream_port(json.loads(r.body)) == api_upstream.port
    assert c.request("GET", "/admin/", [H2_JSON, cookie]).status == 403  # not boss@example.com
    r = c.request("GET", "/static/app.css")
    assert r.status == 200 and seen(json.loads(r.body), "X-Auth-Email") == []
