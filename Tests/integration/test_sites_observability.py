"""What an operator sees of `sites`: each access line names the site its host named (none for
a host no site answers), `/readyz` names the site whose upstream is down, and `sidecar check`
lists the sites, their hosts and where each signs in."""
import subprocess

from conftest import access_line, free_port, poll, sidecar_binary, to_yaml
import rawhttp
from test_metrics import metrics, value, wait_for_metric


def sites(upstream, shop_port, port):
    return {"sites": {
        "app": {"hosts": ["127.0.0.1", "app.test"], "upstream": "http://127.0.0.1:%d" % upstream.port},
        "shop": {"hosts": ["localhost"], "upstream": "http://127.0.0.1:%d" % shop_port,
                 "public_url": "http://localhost:%d" % port},
    }}


def test_each_access_line_names_the_site_of_its_host(start_sidecar, upstream):
    port = free_port()
    sc = start_sidecar(dict(sites(upstream, upstream.port, port), log={"access": True}), port=port)
    for rid, host, site in [("a1", "APP.test.", "app"), ("a2", "localhost:1", "shop"), ("a3", "127.0.0.1", "app"),
                            ("a4", "other.test", None)]:
        r = rawhttp.request(port, "GET", "/x", [("X-Request-Id", rid)], host=host)
        assert r.status == (421 if site is None else 200), (host, r.status)
        assert access_line(sc, rid).get("site") == site, access_line(sc, rid)
    # An absolute-form target's authority names the site, over Host.
    rawhttp.request(port, "GET", "http://localhost/x", [("X-Request-Id", "a5")], host="app.test")
    assert access_line(sc, "a5").get("site") == "shop"


def test_the_request_metrics_count_each_site(start_sidecar, upstream):
    port = free_port()
    sc = start_sidecar(sites(upstream, upstream.port, port), port=port)
    for host in ["localhost", "LOCALHOST.:9", "app.test", "other.test"]:
        rawhttp.request(port, "GET", "/x", host=host)
    samples = wait_for_metric(sc, "sidecar_site_requests_total", 2, site="shop", code="2xx")
    assert value(samples, "sidecar_site_requests_total", site="shop", code="2xx") == 2
    assert value(samples, "sidecar_site_requests_total", site="app", code="2xx") == 1
    # A host no site answers (421) is counted by no site: the label holds the configured names only.
    assert {dict(labels)["site"] for name, labels in samples if name == "sidecar_site_requests_total"} == {"app", "shop"}


def test_a_config_without_sites_writes_no_site(start_sidecar):
    sc = start_sidecar({"log": {"access": True}})
    assert sc.request("GET", "/x", [("X-Request-Id", "b1")]).status == 200
    assert "site" not in access_line(sc, "b1")
    assert not [name for name, _ in metrics(sc) if name == "sidecar_site_requests_total"]


def test_readyz_names_the_site_whose_upstream_is_down(start_sidecar, upstream):
    port, dead = free_port(), free_port()
    sc = start_sidecar(sites(upstream, dead, port), port=port)
    expected = "site shop: upstream unreachable\n"
    assert poll(lambda: expected in sc.admin("/readyz").body.decode()), sc.admin("/readyz").body
    assert sc.admin("/readyz").status == 503
    assert "site app" not in sc.admin("/readyz").body.decode()


def test_check_lists_the_sites_and_where_each_signs_in(tmp_path, base_config, upstream):
    port = free_port()
    config = base_config(port, free_port())
    config.update(sites(upstream, upstream.port, port))
    path = tmp_path / "sidecar.yaml"
    path.write_text(to_yaml(config) + "\n")
    run = subprocess.run([str(sidecar_binary()), "check", "--config", str(path)], capture_output=True, text=True,
                         timeout=30)
    assert run.returncode == 0, run.stderr
    rows = {line.split(None, 2)[1]: line.split(None, 2)[2] for line in run.stdout.splitlines()
            if line.startswith("  site ")}
    assert rows["app"].strip() == "127.0.0.1, app.test; sign-in through public_url", run.stdout
    assert rows["shop"].strip() == "localhost; sign-in http://localhost:%d/.auth/callback with com.example.web" % port
    assert "421 Misdirected Request" in run.stdout
