"""Several sites on one sidecar (`sites`, `default_site`), the first slice: each public host is
served by its site's upstream (the host read as `rules[].host` is: case, port and trailing
dots ignored, an absolute-form target's authority first, `:authority` over HTTP/2), a host no
site names gets 421 (or the default site), and `sidecar check` refuses what would send requests
astray, naming the file and line."""
import json
import subprocess
import sys

import pytest

import rawhttp
from conftest import HERE, Upstream, free_port, sidecar_binary, to_yaml
from h2_support import H2Client


@pytest.fixture(scope="module")
def admin_upstream(tmp_path_factory):
    d = tmp_path_factory.mktemp("admin-upstream")
    proc = subprocess.Popen([sys.executable, str(HERE / "upstream.py"), "--unix", str(d / "up.sock")],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    ports = json.loads(proc.stdout.readline())
    yield Upstream(proc, ports["port"], ports["control"], str(d / "up.sock"))
    proc.terminate()
    proc.wait(5)


def sites(upstream, admin_upstream, **more):
    config = {"sites": {
        "app": {"hosts": ["127.0.0.1", "app.test"], "upstream": "http://127.0.0.1:%d" % upstream.port},
        "admin": {"hosts": ["admin.test"], "upstream": "http://127.0.0.1:%d" % admin_upstream.port},
    }}
    config.update(more)
    return config


def served_by(r):
    assert r.status == 200, (r.status, r.body[:200])
    host = [v for n, v in json.loads(r.body)["headers"] if n.lower() == "host"][0]
    return int(host.rsplit(":", 1)[1])


def test_each_host_goes_to_its_sites_upstream_and_others_get_421(start_sidecar, upstream, admin_upstream):
    sc = start_sidecar(sites(upstream, admin_upstream))
    get = lambda host, target="/x": rawhttp.request(sc.port, "GET", target, host=host)  # noqa: E731
    assert served_by(get("app.test")) == upstream.port
    assert served_by(get("127.0.0.1:%d" % sc.port)) == upstream.port
    for spelling in ["admin.test", "Admin.TEST", "admin.test.:8443", "ADMIN.test."]:
        assert served_by(get(spelling)) == admin_upstream.port, spelling
    admin_upstream.reset()
    upstream.reset()
    for host in ["other.test", "admin.test.evil", "xadmin.test", "app.test@admin.test", ""]:
        r = get(host)
        assert r.status in (400, 421), (host, r.status)
    r = get("other.test")
    assert r.status == 421 and r.reason == "Misdirected Request" and b"misdirected" in r.body.lower()
    assert upstream.stats()["requests"] == 0 and admin_upstream.stats()["requests"] == 0
    # An absolute-form target's authority is the host, as it is forwarded.
    r = rawhttp.request(sc.port, "GET", "http://admin.test/x", host="app.test")
    assert r.status == 400 or served_by(r) == admin_upstream.port
    assert rawhttp.request(sc.port, "GET", "http://other.test/x", host="app.test").status in (400, 421)
    # The sidecar's own endpoints too: an unknown host is nobody's.
    assert get("other.test", "/.auth/me").status == 421
    c = H2Client(sc.port)
    try:
        assert served_by(c.request("GET", "/x", authority="admin.test")) == admin_upstream.port
        assert served_by(c.request("GET", "/x", authority="app.test")) == upstream.port
        assert c.request("GET", "/x", authority="other.test").status == 421
    finally:
        c.close()
    # A host field that contradicts :authority is a stream error, never another site's.
    c = H2Client(sc.port)
    try:
        r = c.request("GET", "/x", [("host", "admin.test")], authority="app.test")
        assert r.status is None or r.status >= 400, r.status
    finally:
        c.close()
    assert admin_upstream.stats()["requests"] == 2


def test_a_default_site_takes_the_other_hosts(start_sidecar, upstream, admin_upstream):
    sc = start_sidecar(sites(upstream, admin_upstream, default_site="admin"))
    assert served_by(rawhttp.request(sc.port, "GET", "/x", host="other.test")) == admin_upstream.port
    assert served_by(rawhttp.request(sc.port, "GET", "/x", host="app.test")) == upstream.port


def test_a_rule_naming_an_upstream_wins_over_the_site(start_sidecar, upstream, admin_upstream):
    config = sites(upstream, admin_upstream)
    config["upstreams"] = {"api": {"url": "http://127.0.0.1:%d" % admin_upstream.port}}
    config["rules"] = [{"path": "/api/**", "upstream": "api", "public": True}, {"path": "/**", "public": True}]
    sc = start_sidecar(config)
    assert served_by(rawhttp.request(sc.port, "GET", "/api/x", host="app.test")) == admin_upstream.port
    assert served_by(rawhttp.request(sc.port, "GET", "/other", host="app.test")) == upstream.port, \
        "a rule without an upstream leaves the site's"


def check(tmp_path, config):
    path = tmp_path / "sidecar.yaml"
    text = to_yaml(config) + "\n"
    path.write_text(text)
    run = subprocess.run([str(sidecar_binary()), "check", "--config", str(path)], capture_output=True, text=True,
                         timeout=30)
    return run, path, text.splitlines()


def line_of(lines, needle, after=0):
    return next(i for i, line in enumerate(lines, 1) if i > after and needle in line)


def test_check_refuses_overlapping_hosts_and_a_site_without_upstream(tmp_path, base_config, upstream, admin_upstream):
    config = base_config(free_port(), free_port())
    config.update(sites(upstream, admin_upstream))
    config["sites"]["admin"]["hosts"] = ["admin.test", "APP.test"]
    config["sites"]["blog"] = {"hosts": ["blog.test"]}
    run, path, lines = check(tmp_path, config)
    assert run.returncode == 1, run.stdout
    sites_line = line_of(lines, "sites:")
    admin, blog = line_of(lines, "admin:", sites_line), line_of(lines, "blog:", sites_line)
    [overlap] = [e for e in run.stderr.splitlines() if "app.test is already sites.app's" in e]
    assert overlap.startswith("%s:" % path) and admin < int(overlap.split(":")[1]) < blog, (overlap, lines)
    [missing] = [e for e in run.stderr.splitlines() if "sites.blog.upstream" in e]
    assert "missing required key" in missing and int(missing.split(":")[1]) >= blog, (missing, lines)


def test_check_refuses_a_public_url_no_site_answers_and_an_unknown_default(tmp_path, base_config, upstream,
                                                                          admin_upstream):
    config = base_config(free_port(), free_port())
    config.update(sites(upstream, admin_upstream))
    config["sites"]["app"]["hosts"] = ["app.test"]
    run, _, _ = check(tmp_path, config)
    assert run.returncode == 1 and "public_url's host 127.0.0.1" in run.stderr, run.stderr
    config["default_site"] = "nowhere"
    run, path, lines = check(tmp_path, config)
    assert run.returncode == 1
    assert "%s:%d:" % (path, line_of(lines, "default_site")) in run.stderr and "no site named" in run.stderr, run.stderr
    config["default_site"] = "app"
    run, _, _ = check(tmp_path, config)
    assert run.returncode == 0, run.stderr


def test_a_sign_in_may_return_to_any_sites_host(start_auth_sidecar, browser, upstream, admin_upstream):
    sc, apple = start_auth_sidecar(sites(upstream, admin_upstream, default_site="app"))  # the helper's Host
    b = browser(sc, apple)
    callback, _ = b.login(rd="https://admin.test/page?x=1")
    assert callback.status == 303 and callback.header("Location") == "https://admin.test/page?x=1"
    b = browser(sc, apple)
    callback, _ = b.login(rd="https://elsewhere.test/page")
    assert callback.status == 303 and callback.header("Location") == "/"
