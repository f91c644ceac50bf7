"""A site's own rules (`sites.<name>.rules`): a request on the site's hosts is decided by them
in place of the top-level `rules`, whichever spelling of the host it came with; a site without
rules keeps the top-level ones."""
import json

import rawhttp
from conftest import free_port, merge, seen
from h2_support import H2Client
from test_site_sign_in import SHOP_ID, HostBrowser, blog_upstream, shop_upstream, site_config  # noqa: F401

API = [("Accept", "application/json")]


def start(start_sidecar, start_emulator, upstream, shop_upstream, blog_upstream, shop_fields=None, **more):
    port = free_port()
    callback = "http://%s:%d/.auth/callback"
    apple = start_emulator([callback % ("127.0.0.1", port), callback % ("127.0.0.2", port)],
                           extra_args=["--client", "%s=%s" % (SHOP_ID, callback % ("localhost", port))])
    config = merge({"apple": {"base_url": apple.issuer}, "access": {"public_paths": []},
                    "rules": [{"path": "/open/**", "public": True}]},
                   site_config(port, upstream, shop_upstream, blog_upstream))
    config["sites"]["shop"]["rules"] = [
        {"path": "/admin/**", "allowed_emails": ["boss@example.com"]},
        dict({"path": "/**", "public": True}, **({"set_headers": shop_fields} if shop_fields else {})),
    ]
    sc = start_sidecar(merge(config, more), port=port)
    return sc, apple, {"app": "127.0.0.1:%d" % port, "shop": "localhost:%d" % port, "blog": "127.0.0.2:%d" % port}


def test_a_sites_rules_decide_its_requests_in_place_of_the_top_level_ones(
        start_sidecar, start_emulator, upstream, shop_upstream, blog_upstream):
    sc, apple, hosts = start(start_sidecar, start_emulator, upstream, shop_upstream, blog_upstream)
    get = lambda host, path, headers=(): rawhttp.request(sc.port, "GET", path, API + list(headers), host=host)  # noqa: E731
    # shop: everything public but /admin; the top-level /open rule is not the shop's.
    assert get(hosts["shop"], "/x").status == 200
    assert get(hosts["shop"], "/admin/x").status == 401
    # app and blog: the top-level rules.
    for site in ["app", "blog"]:
        assert get(hosts[site], "/x").status == 401, site
        assert get(hosts[site], "/open/x").status == 200, site
    shop = HostBrowser(sc, apple, hosts["shop"])
    assert shop.login()[0].status == 303
    cookie = [("Cookie", "%s=%s" % shop.session_cookie)]
    r = get(hosts["shop"], "/admin/x", cookie)
    assert r.status == 403 and json.loads(r.body)["error"] == "forbidden", r.body
    app = HostBrowser(sc, apple, hosts["app"])
    assert app.login()[0].status == 303
    assert get(hosts["app"], "/admin/x", [("Cookie", "%s=%s" % app.session_cookie)]).status == 200


def test_the_rules_follow_the_host_in_every_spelling(start_sidecar, start_emulator, upstream, shop_upstream,
                                                     blog_upstream):
    sc, apple, hosts = start(start_sidecar, start_emulator, upstream, shop_upstream, blog_upstream)
    port = sc.port
    for host in ["LOCALHOST", "localhost.", "localhost:1"]:
        assert rawhttp.request(port, "GET", "/x", API, host=host).status == 200, host
    # Another site's Host with a shop authority in the target: the shop's rules, as the shop's upstream reads it.
    r = rawhttp.request(port, "GET", "http://localhost/x", API, host=hosts["app"])
    assert r.status in (200, 400), r.status
    if r.status == 200:
        assert shop_upstream.stats()["requests"] >= 1
    # The app's host in the target, the shop's in Host: the app's rules.
    assert rawhttp.request(port, "GET", "http://127.0.0.1/x", API, host="localhost").status in (400, 401)
    # X-Forwarded-Host from an untrusted peer chooses nothing.
    assert rawhttp.request(port, "GET", "/x", API + [("X-Forwarded-Host", "localhost")], host=hosts["app"]).status == 401
    c = H2Client(port)
    try:
        assert c.request("GET", "/x", [("accept", "application/json")], authority="localhost").status == 200
        assert c.request("GET", "/x", [("accept", "application/json")], authority="127.0.0.1").status == 401
    finally:
        c.close()


def test_the_check_endpoint_decides_with_the_rules_of_its_hosts_site(
        start_sidecar, start_emulator, upstream, shop_upstream, blog_upstream):
    """nginx's auth_request asks `{prefix}/check` with the original Host: the site's rules
    answer for the original URI a trusted proxy names."""
    sc, apple, hosts = start(start_sidecar, start_emulator, upstream, shop_upstream, blog_upstream,
                             trusted_proxies=["127.0.0.1/32"])
    ask = lambda host, uri: rawhttp.request(sc.port, "GET", "/.auth/check", API + [  # noqa: E731
        ("X-Forwarded-Uri", uri), ("X-Forwarded-Method", "GET")], host=host)
    assert ask(hosts["shop"], "/x").status == 200
    assert ask(hosts["shop"], "/admin/x").status == 401
    assert ask(hosts["app"], "/x").status == 401
    assert ask(hosts["app"], "/open/x").status == 200


def test_a_sites_rules_set_fields_and_every_sites_names_are_stripped_everywhere(
        start_sidecar, start_emulator, upstream, shop_upstream, blog_upstream):
    """A site's own rule adds its `set_headers` as a top-level rule does; the names any rule of
    any site sets are removed from every client request on every site, in every spelling
    (WSGI reads `X_Shop` as `X-Shop`), over HTTP/1.1 and HTTP/2."""
    sc, apple, hosts = start(start_sidecar, start_emulator, upstream, shop_upstream, blog_upstream,
                             shop_fields={"X-Shop": "eu"},
                             rules=[{"path": "/open/**", "public": True, "set_headers": {"X-Role": "open"}}])
    forged = [("X-Shop", "forged"), ("x_shop", "forged"), ("X-SHOP", "forged"),
              ("X-Role", "forged"), ("x_role", "forged")]

    def fields(echo):
        return {name: seen(echo, name) for name in ("X-Shop", "X-Role")}

    r = rawhttp.request(sc.port, "GET", "/x", API + forged, host=hosts["shop"])
    assert r.status == 200, r.status
    assert fields(r.json()) == {"X-Shop": ["eu"], "X-Role": []}
    # The app and the blog keep the top-level rules: their fields, never the shop's name.
    for site in ["app", "blog"]:
        r = rawhttp.request(sc.port, "GET", "/open/x", API + forged, host=hosts[site])
        assert r.status == 200, (site, r.status)
        assert fields(r.json()) == {"X-Shop": [], "X-Role": ["open"]}, site
    c = H2Client(sc.port)
    try:
        h2 = [(n.lower(), v) for n, v in forged if "_" not in n] + [("accept", "application/json")]
        r = c.request("GET", "/x", h2, authority="localhost")
        assert r.status == 200, r.status
        assert fields(json.loads(r.body)) == {"X-Shop": ["eu"], "X-Role": []}
        r = c.request("GET", "/open/x", h2, authority="127.0.0.1")
        assert fields(json.loads(r.body)) == {"X-Shop": [], "X-Role": ["open"]}
    finally:
        c.close()
