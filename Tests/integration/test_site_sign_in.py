"""Several sites, each signing in on its own host (`sites.<name>.public_url`, `client_id`): the
sign-in started on a site's host asks Apple for the site's Services ID with the site's callback,
the emulator checks both and the code is exchanged with them; the session cookie is host-only
and sealed to its site, so neither a cookie copied by hand to another site's host, nor a
callback on another site, nor any other spelling of the host (absolute-form target, :authority,
case, trailing dot, port, X-Forwarded-Host) lets one site's sign-in act on another's."""
import json
import subprocess
import sys
from urllib.parse import parse_qs, urlsplit

import pytest

import rawhttp
from conftest import HERE, Browser, Upstream, free_port, merge, sidecar_binary, to_yaml
from h2_support import H2Client

SHOP_ID = "com.example.shop"


class HostBrowser(Browser):
    """A browser on one host name: its own cookie jar (host-only cookies stay on their host)."""

    def __init__(self, sidecar, emulator, host):
        super().__init__(sidecar, emulator)
        self.host = host

    def request(self, method, target, headers=(), body=b"", jar=True):
        hs = list(headers) + (self.cookie_header(target) if jar else [])
        if body:
            hs.append(("Content-Type", "application/x-www-form-urlencoded"))
        return self.absorb(self.sidecar.request(method, target, hs, body, host=self.host))


def start_upstream(tmp_path_factory, name):
    d = tmp_path_factory.mktemp(name)
    proc = subprocess.Popen([sys.executable, str(HERE / "upstream.py"), "--unix", str(d / "up.sock")],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    ports = json.loads(proc.stdout.readline())
    return Upstream(proc, ports["port"], ports["control"], str(d / "up.sock"))


@pytest.fixture(scope="module")
def shop_upstream(tmp_path_factory):
    up = start_upstream(tmp_path_factory, "shop-upstream")
    yield up
    up.proc.terminate()
    up.proc.wait(5)


@pytest.fixture(scope="module")
def blog_upstream(tmp_path_factory):
    up = start_upstream(tmp_path_factory, "blog-upstream")
    yield up
    up.proc.terminate()
    up.proc.wait(5)


def site_config(port, upstream, shop_upstream, blog_upstream):
    """app: 127.0.0.1, signing in through the top-level public_url; shop: localhost, its own
    public_url and Services ID; blog: 127.0.0.2, its own public_url with the first Services ID."""
    return {
        "apple": {"client_id": ["com.example.web", SHOP_ID]},
        "sites": {
            "app": {"hosts": ["127.0.0.1"], "upstream": "http://127.0.0.1:%d" % upstream.port},
            "shop": {"hosts": ["localhost"], "upstream": "http://127.0.0.1:%d" % shop_upstream.port,
                     "public_url": "http://localhost:%d" % port, "client_id": SHOP_ID},
            "blog": {"hosts": ["127.0.0.2"], "upstream": "http://127.0.0.1:%d" % blog_upstream.port,
                     "public_url": "http://127.0.0.2:%d" % port},
        },
    }


@pytest.fixture
def three_sites(start_sidecar, start_emulator, upstream, shop_upstream, blog_upstream):
    port = free_port()
    callback = "http://%s:%d/.auth/callback"
    apple = start_emulator([callback % ("127.0.0.1", port), callback % ("127.0.0.2", port)],
                           extra_args=["--client", "%s=%s" % (SHOP_ID, callback % ("localhost", port))])
    base = {"apple": {"base_url": apple.issuer}, "access": {"public_paths": ["/pub/**"]}}
    sc = start_sidecar(merge(base, site_config(port, upstream, shop_upstream, blog_upstream)), port=port)
    hosts = {"app": "127.0.0.1:%d" % port, "shop": "localhost:%d" % port, "blog": "127.0.0.2:%d" % port}
    return sc, apple, hosts


def signed_in(sc, apple, host):
    b = HostBrowser(sc, apple, host)
    callback, _ = b.login()
    assert callback.status == 303, (callback.status, callback.body)
    return b


def session_pair(b):
    name, value = b.session_cookie
    return "%s=%s" % (name, value)


def echo(r):
    assert r.status == 200, (r.status, r.body[:300])
    return json.loads(r.body)


def token_requests(apple):
    return apple.control("GET", "/emulator/token-requests").json()


def test_each_site_signs_in_on_its_own_host_with_its_services_id(three_sites):
    sc, apple, hosts = three_sites
    for site, client_id in [("shop", SHOP_ID), ("blog", "com.example.web"), ("app", "com.example.web")]:
        b = HostBrowser(sc, apple, hosts[site])
        _, location = b.start_login()
        query = parse_qs(location.query)
        assert query["client_id"] == [client_id], (site, query)
        assert query["redirect_uri"] == ["http://%s/.auth/callback" % hosts[site]], (site, query)
        fields, action = b.authorize(location)
        assert action == "http://%s/.auth/callback" % hosts[site]
        callback = b.callback(fields)
        assert callback.status == 303, (site, callback.status, callback.body)
        [session] = [c for c in callback.header_all("Set-Cookie") if "login" not in c.split("=", 1)[0]]
        assert "domain=" not in session.lower(), session
        exchange = token_requests(apple)[-1]
        assert (exchange["client_id"], exchange["redirect_uri"]) == (client_id, query["redirect_uri"][0])
        r = b.get("/x", headers=[("Accept", "application/json")])
        assert echo(r)["headers"], site
        assert [v for n, v in echo(r)["headers"] if n.lower() == "x-auth-email"] == ["maria.ruiz@example.com"]


def test_a_session_cookie_copied_to_another_sites_host_is_refused(three_sites, upstream, shop_upstream, blog_upstream):
    sc, apple, hosts = three_sites
    browsers = {site: signed_in(sc, apple, hosts[site]) for site in ["app", "shop", "blog"]}
    api = [("Accept", "application/json")]
    for owner, b in browsers.items():
        cookie = session_pair(b)
        # Used first on its own host, so that the worker's session cache holds it.
        assert rawhttp.request(sc.port, "GET", "/x", api + [("Cookie", cookie)], host=hosts[owner]).status == 200
        for other in hosts:
            if other == owner:
                continue
            r = rawhttp.request(sc.port, "GET", "/x", api + [("Cookie", cookie)], host=hosts[other])
            assert r.status == 401, (owner, other, r.status, r.body[:200])
            # Nor as a bearer token; and on a public path it never reaches the other site's upstream.
            token = cookie.split("=", 1)[1]
            r = rawhttp.request(sc.port, "GET", "/x", [("Authorization", "Bearer " + token)], host=hosts[other])
            assert r.status == 401, (owner, other, r.status)
            r = rawhttp.request(sc.port, "GET", "/pub/x", [("Authorization", "Bearer " + token), ("Cookie", cookie)],
                                host=hosts[other])
            seen = echo(r)["headers"]
            assert not [v for n, v in seen if token in v], (owner, other, seen)
            assert not [v for n, v in seen if n.lower().startswith("x-auth-")], (owner, other, seen)


def test_a_callback_on_another_site_cannot_complete_a_sign_in_started_on_one(three_sites):
    sc, apple, hosts = three_sites
    shop = HostBrowser(sc, apple, hosts["shop"])
    _, location = shop.start_login()
    fields, _ = shop.authorize(location)
    exchanges = len(token_requests(apple))
    for other in ["blog", "app"]:
        thief = HostBrowser(sc, apple, hosts[other])
        thief.jar = dict(shop.jar)  # the shop's login cookie, copied by hand
        r = thief.callback(fields, headers=[("Accept", "application/json")])
        assert r.status == 400, (other, r.status, r.body)
        assert json.loads(r.body)["reason"] in ("state_invalid", "state_mismatch", "state_missing"), r.body
        assert not thief.session_cookie, other
    assert len(token_requests(apple)) == exchanges, "no code was exchanged for another site"
    # The state was not spent: the sign-in still completes where it started.
    callback = shop.callback(fields)
    assert callback.status == 303 and shop.session_cookie


def test_every_spelling_of_the_host_is_one_site(three_sites):
    sc, apple, hosts = three_sites
    shop = signed_in(sc, apple, hosts["shop"])
    cookie = [("Cookie", session_pair(shop)), ("Accept", "application/json")]
    port = sc.port
    for host in ["localhost", "LOCALHOST:%d" % port, "LocalHost.", "localhost.:1"]:
        assert rawhttp.request(port, "GET", "/x", cookie, host=host).status == 200, host
    for host in ["127.0.0.1:%d" % port, "127.0.0.2", "localhost.localdomain"]:
        assert rawhttp.request(port, "GET", "/x", cookie, host=host).status in (401, 421), host
    # X-Forwarded-Host from a peer that is not a trusted proxy names nothing.
    r = rawhttp.request(port, "GET", "/x", cookie + [("X-Forwarded-Host", "localhost")], host="127.0.0.1:%d" % port)
    assert r.status == 401, r.status
    # An absolute-form target's authority is the host, over Host.
    r = rawhttp.request(port, "GET", "http://127.0.0.1:%d/x" % port, cookie, host="localhost")
    assert r.status in (400, 401), r.status
    r = rawhttp.request(port, "GET", "http://localhost:%d/x" % port, cookie, host="127.0.0.1")
    assert r.status in (400, 200), r.status
    # HTTP/2: :authority.
    fields = [(n.lower(), v) for n, v in cookie]
    c = H2Client(port)
    try:
        assert c.request("GET", "/x", fields, authority="localhost:%d" % port).status == 200
        assert c.request("GET", "/x", fields, authority="127.0.0.1:%d" % port).status == 401
        assert c.request("GET", "/x", fields, authority="127.0.0.2").status == 401
    finally:
        c.close()


def test_a_logout_link_counts_from_the_sites_own_origin_only(three_sites):
    sc, apple, hosts = three_sites
    shop = signed_in(sc, apple, hosts["shop"])
    api = [("Accept", "application/json")]
    r = shop.request("GET", "/.auth/logout", api + [("Referer", "http://%s/page" % hosts["app"])])
    assert r.status == 403, r.status
    assert shop.get("/x", headers=api).status == 200
    r = shop.request("GET", "/.auth/logout", api + [("Referer", "http://%s/page" % hosts["shop"])])
    assert r.status == 204, r.status
    assert shop.get("/x", headers=api).status == 401


def check(tmp_path, config):
    path = tmp_path / "sidecar.yaml"
    text = to_yaml(config) + "\n"
    path.write_text(text)
    run = subprocess.run([str(sidecar_binary()), "check", "--config", str(path)], capture_output=True, text=True,
                         timeout=30)
    return run, path, text.splitlines()


@pytest.mark.parametrize("change, key, message", [
    ({"public_url": "http://127.0.0.3:1"}, "public_url", "not one of the site's hosts"),
    ({"client_id": "com.example.other"}, "client_id", "not one of apple.client_id"),
])
def test_check_refuses_a_site_sign_in_astray_at_its_line_and_column(tmp_path, base_config, upstream, shop_upstream,
                                                                    blog_upstream, change, key, message):
    port = free_port()
    config = merge(base_config(port, free_port()), site_config(port, upstream, shop_upstream, blog_upstream))
    config["sites"]["shop"].update(change)
    run, path, lines = check(tmp_path, config)
    assert run.returncode == 1, run.stdout
    shop = next(i for i, line in enumerate(lines, 1) if line.strip() == "shop:")
    line = next(i for i, text in enumerate(lines, 1) if i > shop and text.strip().startswith(key + ":"))
    column = lines[line - 1].index(key + ":") + len(key) + 3
    [error] = [e for e in run.stderr.splitlines() if "sites.shop.%s" % key in e]
    assert error.startswith("%s:%d:%d: " % (path, line, column)) and message in error, (error, lines[line - 1])
