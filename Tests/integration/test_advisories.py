"""Regressions for the 2026 advisories against other forward-auth proxies, each checked here
whatever the sidecar's answer: `X-Forwarded-Uri` from an untrusted peer deciding
`/.auth/check`, a URL fragment taking part in route matching (HTTP/1.1 and h2 `:path`), a
health checker's `User-Agent` passing without a session, and an email with several `@`
satisfying a domain rule."""
import base64
import json

import pytest

import rawhttp
from h2_support import H2Client
from native_support import (  # noqa: F401 (fixture)
    JSON_HEADERS, body_of, device, post_native, start_native)
from test_notifications import emulator_key, sign

JSON = ("Accept", "application/json")
HTML = ("Accept", "text/html,application/xhtml+xml")
RULES = [{"path": "/static/**", "public": True}, {"path": "/internal/**", "deny": True}]


def check(sc, uri, extra=()):
    headers = [JSON, ("X-Forwarded-Uri", uri), ("X-Original-URI", uri), ("X-Forwarded-Method", "GET"),
               ("X-Original-Method", "GET"), ("X-Forwarded-Host", "127.0.0.1")] + list(extra)
    return sc.request("GET", "/.auth/check", headers)


# -- X-Forwarded-Uri from an untrusted peer ----------------------------------------------------
def test_forwarded_uri_from_an_untrusted_peer_does_not_decide_check(start_auth_sidecar):
    """With rules, an untrusted peer naming a public path gets no 200: what it asks about is
    unknown, so refused (403), never guessed."""
    sc, _ = start_auth_sidecar({"rules": RULES})
    for uri in ("/static/app.css", "/pub/x", "/static/../internal/x"):
        r = check(sc, uri)
        assert r.status == 403, (uri, r.status)
    assert sc.logged(lambda out: "untrusted_peer" in out)


def test_forwarded_uri_without_rules_changes_nothing(start_auth_sidecar):
    """Without rules the session alone decides `/.auth/check`: a public path named in the
    forwarded URI does not stand in for one."""
    sc, _ = start_auth_sidecar()
    for uri in ("/pub/x", "/.auth/login", "/static/app.css"):
        assert check(sc, uri).status == 401, uri


def test_forwarded_uri_behind_a_proxy_header_naming_no_client_is_untrusted(start_auth_sidecar):
    """A trusted balancer's `PROXY UNKNOWN` connection carries a client it does not vouch
    for: its X-Forwarded-Uri is as unknown as any untrusted peer's."""
    sc, _ = start_auth_sidecar({"rules": RULES, "proxy_protocol": True, "trusted_proxies": ["127.0.0.1/32"]})
    with rawhttp.Conn(sc.port, timeout=5) as c:
        c.send(b"PROXY UNKNOWN\r\n")
        r = c.request("GET", "/.auth/check", [JSON, ("X-Forwarded-Uri", "/static/app.css")])
    assert r.status == 403


def test_forwarded_uri_fragment_plays_no_part_for_a_trusted_proxy(start_auth_sidecar):
    """A trusted proxy's forwarded URI is cut at `?` or `#`: what follows a `#` cannot lead the
    path into or out of a rule."""
    sc, _ = start_auth_sidecar({"rules": RULES, "trusted_proxies": ["127.0.0.1/32"]})
    assert check(sc, "/internal/x#/../../static/a.css").status == 403
    assert check(sc, "/internal/x?#/static/a.css").status == 403
    assert check(sc, "/static/a.css#/../../internal/x").status == 200


# -- a fragment in the request-target ----------------------------------------------------------
@pytest.mark.parametrize("target", [
    "/pub/x#/../../private", "/private#/pub/x", "/pub/#", "/private#", "/pub/x?a=1#/../../private",
])
def test_a_fragment_in_an_http11_request_target_is_refused(start_auth_sidecar, upstream, target):
    """RFC 9112 §3.2: a request-target has no fragment; a raw `#` is a 400, never routed."""
    sc, _ = start_auth_sidecar()
    before = upstream.stats()["requests"]
    r = sc.request("GET", target, [HTML])
    assert r.status == 400, (target, r.status)
    assert upstream.stats()["requests"] == before


@pytest.mark.parametrize("path", ["/pub/x#/../../private", "/private#/pub/x", "/pub/#"])
def test_a_fragment_in_an_h2_path_is_refused(start_auth_sidecar, upstream, path):
    """`:path` with a `#` (RFC 9113 §8.3.1: origin-form, no fragment): libnghttp2 passes it,
    the parser every stream's head goes through answers 400; never routed."""
    sc, _ = start_auth_sidecar()
    before = upstream.stats()["requests"]
    c = H2Client(sc.port)
    try:
        r = c.request("GET", path, [("accept", HTML[1])])  # h2 field names are lower-case
        assert r.status == 400, (path, r.status, r.reset, r.headers)
    finally:
        c.close()
    assert upstream.stats()["requests"] == before


# -- health checkers' User-Agent ---------------------------------------------------------------
@pytest.mark.parametrize("agent", [
    "kube-probe/1.29", "ELB-HealthChecker/2.0", "GoogleHC/1.0", "Consul Health Check", "Amazon-Route53-Health-Check-Service",
])
def test_a_health_checkers_user_agent_gets_no_pass(start_auth_sidecar, upstream, agent):
    """A User-Agent is the client's say-so: it neither skips the session on a protected path
    nor makes /.auth/check answer yes."""
    sc, _ = start_auth_sidecar()
    before = upstream.stats()["requests"]
    assert sc.request("GET", "/private", [("User-Agent", agent)]).status == 401
    assert sc.request("GET", "/private", [("User-Agent", agent), HTML]).status == 302
    assert sc.request("GET", "/.auth/check", [("User-Agent", agent), JSON]).status == 401
    assert sc.request("GET", "/.auth/me", [("User-Agent", agent), JSON]).status == 401
    assert upstream.stats()["requests"] == before


# -- emails with several @ ---------------------------------------------------------------------
def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def claims_of(token):
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


@pytest.mark.parametrize("email", [
    "a@evil.com@example.com",     # the domain by the last @ would match
    "a@example.com@evil.com",     # the domain by the first @ would match
    "a@example.com@example.com",  # either way; still not an address
    "\"a@evil.com\"@example.com",  # a quoted local part: refused rather than parsed
])
def test_an_email_with_several_at_signs_matches_no_domain_rule(start_native, emulator_keys, email):
    """An identity token (validly signed by Apple's key) whose email has more than one `@`
    satisfies neither allowed_email_domains nor allowed_emails: refused before any exchange."""
    sc, apple = start_native({"access": {"allowed_email_domains": ["example.com"],
                                         "allowed_emails": ["a@example.com"]}})
    cred = device(apple, email="a@example.com")
    claims = claims_of(cred["identityToken"])
    claims["email"] = email
    key, kid = emulator_key(emulator_keys)
    forged = sign(claims, key, kid)
    r = post_native(sc, dict(body_of(cred), identityToken=forged))
    assert r.status == 403 and r.json() == {"error": "policy_denied_email"}, (email, r.status, r.body)
    assert apple.control("GET", "/emulator/token-requests").json() == []
    # The untouched token is admitted: the refusal above is the email's.
    assert post_native(sc, body_of(cred)).status == 200


def test_a_configured_email_with_several_at_signs_is_a_config_error(start_sidecar):
    sc = start_sidecar({"access": {"allowed_emails": ["a@evil.com@example.com"]}}, ready=False)
    assert sc.wait_exit(15) == 1, sc.log_tail()
    sc.stopped = True
    assert "access.allowed_emails" in sc.output() and "invalid email address" in sc.output()
