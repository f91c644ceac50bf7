"""A site's own pages (`sites.<name>.pages`): its template directory, default language,
override and sign-in page answer the requests of its hosts, the sidecar's own endpoints'
pages included; the other sites keep the top-level `pages`; a broken template directory of a
site is refused by `sidecar check` and `run` naming the site's key."""
import subprocess

import rawhttp
from conftest import free_port, sidecar_binary, to_yaml

HTML = [("Accept", "text/html")]


def config(upstream, templates):
    return {
        "access": {"public_paths": ["/pub/**"]},
        "sites": {
            "app": {"hosts": ["127.0.0.1", "app.test"], "upstream": "http://127.0.0.1:%d" % upstream.port},
            "shop": {"hosts": ["shop.test"], "upstream": "http://127.0.0.1:%d" % upstream.port,
                     "pages": {"sign_in": True, "language": "fr", "templates": str(templates)}},
        },
    }


def test_a_sites_pages_answer_its_hosts_and_only_its_hosts(start_sidecar, upstream, tmp_path):
    templates = tmp_path / "shop-pages"
    templates.mkdir()
    (templates / "sign_in.html").write_text(
        '<!doctype html><html lang="{{language}}"><p>SHOP {{sign_in_with_apple}} <a href="{{login_url}}">go</a>\n')
    (templates / "signed_out.html").write_text('<!doctype html><html lang="{{language}}"><p>SHOP BYE\n')
    sc = start_sidecar(config(upstream, templates))
    for host in ["shop.test", "SHOP.test.:443"]:
        r = rawhttp.request(sc.port, "GET", "/x", HTML, host=host)
        assert r.status == 401 and b"SHOP" in r.body, (host, r.status, r.body[:200])
        assert r.header("Content-Language") == "fr" and b'lang="fr"' in r.body
    # The sidecar's own endpoints on the site's host: its signed-out page.
    r = rawhttp.request(sc.port, "POST", "/.auth/logout", HTML + [("Sec-Fetch-Site", "same-origin")], host="shop.test")
    assert r.status == 200 and b"SHOP BYE" in r.body, (r.status, r.body[:200])
    # Another site: the top-level pages (the redirect to sign in, in English).
    r = rawhttp.request(sc.port, "GET", "/x", HTML, host="app.test")
    assert r.status == 302 and b"SHOP" not in r.body, r.status
    r = rawhttp.request(sc.port, "POST", "/.auth/logout", HTML + [("Sec-Fetch-Site", "same-origin")], host="app.test")
    assert b"SHOP" not in r.body and r.header("Content-Language") == "en"
    # The shop's Host with another site's authority in the target: that site's pages.
    r = rawhttp.request(sc.port, "GET", "http://app.test/x", HTML, host="shop.test")
    assert r.status in (302, 400) and b"SHOP" not in r.body


def test_check_refuses_a_sites_broken_template_directory(tmp_path, base_config, upstream):
    templates = tmp_path / "shop-pages"
    templates.mkdir()
    (templates / "colour.html").write_text("x")
    port = free_port()
    conf = base_config(port, free_port())
    conf.update(config(upstream, templates))
    path = tmp_path / "sidecar.yaml"
    path.write_text(to_yaml(conf) + "\n")
    run = subprocess.run([str(sidecar_binary()), "check", "--config", str(path)], capture_output=True, text=True,
                         timeout=30)
    assert run.returncode == 1
    assert "colour.html: not a page template name" in run.stderr and "sites.shop.pages.templates" in run.stderr, \
        run.stderr
