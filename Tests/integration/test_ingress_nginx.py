"""ingress-nginx's external authentication in front of the app, as the annotations of
Examples/kubernetes/ingress-nginx/ingress.yaml make ingress-nginx generate it
(ingress_nginx_support), run by a real nginx with the sidecar deciding and signing in: no
session → the sign-in with the whole page as `rd`; a full sign-in → the app gets the identity,
never a client's copies; `rules` applied to the request asked about, which a client cannot
rename; without the request named (ingress-nginx's defaults) every check is refused."""
import os
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit

import pytest

from conftest import free_port, merge
from ingress_nginx_support import SET_MISC, manifests, render
from nginx_support import HTML, CookieClient, Nginx, TLSConn, apple_form_post
from test_nginx import IDENTITY, USER, echoed
from tls_support import TestCA

BOSS = "boss@example.com"
PREFIX = "nginx.ingress.kubernetes.io/"


def need_set_misc():
    missing = [m for m in SET_MISC if not Path(m).exists()]
    if missing:
        if os.environ.get("CI"):
            pytest.fail("CI must run the ingress-nginx tests, but %s is missing" % missing)
        pytest.skip("nginx's set-misc module is not installed (Debian: libnginx-mod-http-set-misc)")


@pytest.fixture
def ingress(request, tmp_path, upstream, start_sidecar, start_emulator):
    """start(overrides=None, annotations=None, user=USER) -> (port, client): nginx as
    ingress-nginx configures it on https://127.0.0.1:port, the sidecar behind it
    (trusted_proxies = nginx, as the pod network is in the example), the emulator
    auto-approving `user`; client is a cookie-keeping browser over TLS."""
    need_set_misc()
    ca = TestCA(tmp_path)
    leaf = ca.issue("ingress")
    started = []

    def start(overrides=None, annotations=None, user=USER):
        port = free_port()
        origin = "https://127.0.0.1:%d" % port
        emulator = start_emulator([origin + "/.auth/callback"], ["--auto-approve", user])
        sidecar = start_sidecar(merge({
            "public_url": origin,
            "trusted_proxies": ["127.0.0.1/32"],
            "apple": {"base_url": emulator.issuer},
            "access": {"public_paths": []},
        }, overrides))
        workdir = tmp_path / ("ingress%d" % len(started))
        (workdir / "logs").mkdir(parents=True)
        conf = render(workdir, port, leaf.cert_file, leaf.key_file, sidecar.port, upstream.port, annotations)
        nginx = Nginx(workdir, conf, port)
        started.append(nginx)
        nginx.wait_ready()
        client = CookieClient(port, connect=lambda: TLSConn(port, ca.client_context()))
        return port, client

    yield start
    for nginx in started:
        nginx.stop()
    if getattr(request.node, "_call_failed", False):
        for nginx in started:
            print("--- nginx %s ---\n%s\n%s" % (nginx.conf, nginx.conf.read_text(), nginx.log()))


def sign_in(client, port, target):
    """A browser through ingress-nginx: page → auth-signin with rd → Apple → callback → page."""
    page = "https://127.0.0.1:%d%s" % (port, target)
    r = client.get(target)
    assert r.status == 302, (r.status, r.body[:300])
    signin = urlsplit(r.header("Location"))
    # auth-signin is https://$host/.auth/login: $host carries no port (443 in a cluster).
    assert (signin.scheme, signin.netloc, signin.path) == ("https", "127.0.0.1", "/.auth/login")
    # $escaped_request_uri: set-misc's set_escape_uri, every byte but [A-Za-z0-9-._~] escaped.
    assert signin.query == "rd=https://127.0.0.1:%d%s" % (port, quote(target, safe="-._~")), signin.query
    assert parse_qs(signin.query) == {"rd": [page]}
    r = client.get(signin.path + "?" + signin.query)
    assert r.status == 302, (r.status, r.body[:300])
    action, form = apple_form_post(r.header("Location"))
    assert action == "https://127.0.0.1:%d/.auth/callback" % port
    r = client.request("POST", "/.auth/callback", body=form)
    assert r.status == 303, (r.status, r.body[:500])
    assert r.header("Location") == page, "back to the page asked for, its whole query included"


def test_the_ingress_names_every_identity_header_and_the_request_asked_about():
    objects = manifests()
    notes = objects[("Ingress", "app")]["metadata"]["annotations"]
    response = {h.strip().lower() for h in notes[PREFIX + "auth-response-headers"].split(",")}
    assert response == set(IDENTITY) | {"x-auth-assertion"}, "a name left out passes a client's copy"
    namespace, name = notes[PREFIX + "auth-proxy-set-headers"].split("/")
    assert objects[("ConfigMap", name)]["data"] == {
        "X-Forwarded-Uri": "$request_uri", "X-Forwarded-Method": "$request_method", "X-Forwarded-Host": "$host"}


def test_ingress_without_a_session_redirects_to_the_sign_in_and_the_app_sees_nothing(ingress, upstream):
    port, client = ingress()
    for accept in (HTML, ("Accept", "application/json")):  # ingress-nginx redirects API clients too
        r = client.get("/app/page?x=1&y=2", headers=[accept, ("X-Auth-User-Id", "forged"),
                                                     ("Cookie", "__Host-sidecar=not-a-session")])
        assert r.status == 302, (r.status, r.body[:300])
        assert parse_qs(urlsplit(r.header("Location")).query) == {
            "rd": ["https://127.0.0.1:%d/app/page?x=1&y=2" % port]}
    assert upstream.stats()["requests"] == 0, "the app was reached without a session"


def test_ingress_sign_in_gives_the_app_the_identity_and_never_a_clients_copy(ingress, upstream):
    port, client = ingress({"assertion": {"enabled": True}})
    sign_in(client, port, "/app/page?x=1&y=2")
    upstream.reset()
    seen = echoed(client.get("/app/page?x=1&y=2", headers=[
        HTML, ("X-Auth-User-Id", "forged"), ("x-auth-email", "forged@evil.example"),
        ("X_Auth_User_Id", "forged"), ("X-AUTH-NAME", "forged"), ("X-Auth-Assertion", "forged"),
        ("X-Auth-Email-Verified", "forged"), ("X-Auth-Private-Email", "forged")]))
    me = client.get("/.auth/me").json()
    assert seen["x-auth-user-id"] == [me["id"]] and me["id"]
    assert seen["x-auth-email"] == [USER]
    assert seen["x-auth-email-verified"] == ["true"] and seen["x-auth-private-email"] == ["false"]
    assert seen["x-auth-name"] == ["Maria%20Ruiz"]
    assert len(seen["x-auth-assertion"]) == 1 and seen["x-auth-assertion"][0].count(".") == 2
    assert "x_auth_user_id" not in seen
    assert all("forged" not in v for vs in seen.values() for v in vs), seen
    assert seen["x-forwarded-proto"] == ["https"]
    assert upstream.stats()["targets"] == ["GET /app/page?x=1&y=2"]

    # Signing out through the sidecar's Ingress ends the session for a copy of the cookie too.
    stolen = dict(client.jar)
    r = client.request("POST", "/.auth/logout?rd=/app/bye")
    assert r.status == 303 and r.header("Location") == "/app/bye"
    client.jar = stolen
    assert client.get("/app/page").status == 302


RULES = {"rules": [{"path": "/admin/**", "allowed_emails": [BOSS]},
                   {"path": "/internal/**", "deny": True},
                   {"path": "/open/**", "public": True}]}


def test_ingress_rules_decide_the_request_asked_about_whatever_the_client_claims(ingress, upstream):
    port, client = ingress(RULES)
    sign_in(client, port, "/app/page")
    upstream.reset()
    assert client.get("/app/page").status == 200
    # Signed in, but the rule admits someone else; a deny rule refuses everyone.
    assert client.get("/admin/users").status == 403
    assert client.request("POST", "/internal/x").status == 403
    assert client.get("/%61dmin/users").status == 403, "decided on the normalized path"
    # The request asked about comes from ingress-nginx (the ConfigMap's proxy_set_header), so a
    # client naming another one, in any of the fields the check reads, is not believed.
    for claim in (("X-Forwarded-Uri", "/app/page"), ("X-Original-URI", "/open/x"),
                  ("X-Forwarded-Method", "GET"), ("X-Forwarded-Host", "other.example")):
        r = client.get("/admin/users", headers=[HTML, claim])
        assert r.status == 403, (claim, r.status)
    # A public rule: no session needed, and no identity passed (the client's copy cleared too).
    anonymous = CookieClient(port, connect=client.connect)
    seen = echoed(anonymous.get("/open/page", headers=[HTML, ("X-Auth-User-Id", "forged")]))
    assert not [n for n in seen if n.startswith("x-auth")], seen
    assert upstream.stats()["targets"] == ["GET /app/page", "GET /open/page"], "only the allowed reached the app"


def test_ingress_boss_passes_the_rule(ingress, upstream):
    port, client = ingress(RULES, user=BOSS)
    sign_in(client, port, "/admin/users")
    seen = echoed(client.get("/admin/users"))
    assert seen["x-auth-email"] == [BOSS]


def test_ingress_nginx_defaults_name_the_request_and_a_clients_claim_is_refused(ingress, upstream):
    """Without auth-proxy-set-headers ingress-nginx still sends X-Original-URL, which names the
    request the rules decide; a client's own X-Forwarded-Uri or X-Original-URI, which the
    ingress passes on beside it, contradicts it and the check refuses rather than choose."""
    notes = dict(manifests()[("Ingress", "app")]["metadata"]["annotations"])
    del notes[PREFIX + "auth-proxy-set-headers"]
    port, client = ingress(RULES, annotations=notes)
    upstream.reset()
    assert client.get("/open/page").status == 200, "the public rule applies to X-Original-URL's path"
    r = client.get("/app/page")
    assert r.status == 302, (r.status, r.body[:300])
    for claim in (("X-Forwarded-Uri", "/open/x"), ("X-Original-URI", "/open/x")):
        r = client.get("/internal/x", headers=[HTML, claim])
        assert r.status == 403, (claim, r.status)
    assert upstream.stats()["targets"] == ["GET /open/page"], "only the public page reached the app"


@pytest.mark.parametrize("rd", ["https://evil.example/x", "https://127.0.0.1:{port}@evil.example/x",
                                "//evil.example/x", "http://127.0.0.1:{port}/app/page"])
def test_ingress_sign_in_sends_back_only_to_this_site_over_https(ingress, rd):
    """auth-signin's rd is an absolute URL (ingress-nginx writes scheme and Host into it), so
    the sidecar must take https URLs on its own host, and nothing else: a link to the sign-in
    with an rd of the attacker's choosing lands on / instead."""
    port, client = ingress()
    rd = rd.format(port=port)
    r = client.get("/.auth/login?rd=" + quote(rd, safe=""))
    assert r.status == 302, (r.status, r.body[:300])
    action, form = apple_form_post(r.header("Location"))
    r = client.request("POST", "/.auth/callback", body=form)
    assert r.status == 303 and r.header("Location") == "/", (rd, r.header("Location"))
