"""ACME end to end: the sidecar obtains and renews its own certificate from a real Pebble,
whose validation connects to the sidecar's listeners on loopback."""
import ssl
import time

import pytest

from conftest import free_port, poll
from pebble_support import DOMAIN, Pebble, acme_config, need_pebble, ready, served_certificate, wait_issued


@pytest.fixture
def pebble_for(tmp_path):
    need_pebble()
    started = []

    def make(http_port, tls_port, **kw):
        p = Pebble(tmp_path / ("pebble%d" % len(started)), http_port, tls_port, **kw)
        started.append(p)
        return p.start()
    yield make
    for p in started:
        p.stop()


def test_http01_issues_and_serves_the_certificate(pebble_for, start_sidecar, tmp_path):
    port, http_port = free_port(), free_port()
    pebble = pebble_for(http_port, port)
    sc = start_sidecar(acme_config(pebble, port, tmp_path, "http-01", http_port), port=port)
    wait_issued(sc)
    cert = served_certificate(port, pebble.root_pem(), tmp_path)
    assert ("DNS", DOMAIN) in cert["subjectAltName"]
    assert sc.logged(lambda out: "acme: certificate in service" in out)
    # Stored with owner-only modes, and used again at the next start without an order.
    acme_dir = tmp_path / "acme"
    for f in acme_dir.iterdir():
        assert f.stat().st_mode & 0o077 == 0, f
    assert acme_dir.stat().st_mode & 0o077 == 0
    metrics = sc.admin("/metrics").body.decode()
    assert "sidecar_tls_certificate_expiry_seconds " in metrics
    sc.stop()
    orders = pebble.orders()
    sc2 = start_sidecar(acme_config(pebble, port, tmp_path, "http-01", http_port), port=port)
    assert poll(lambda: ready(sc2), 5), sc2.log_tail()
    assert served_certificate(port, pebble.root_pem(), tmp_path)["serialNumber"] == cert["serialNumber"]
    assert pebble.orders() == orders


def test_http01_listener_answers_only_challenges_and_redirects_the_rest(pebble_for, start_sidecar, tmp_path):
    import rawhttp
    port, http_port = free_port(), free_port()
    pebble = pebble_for(http_port, port)
    sc = start_sidecar(acme_config(pebble, port, tmp_path, "http-01", http_port), port=port)
    wait_issued(sc)
    r = rawhttp.request(http_port, "GET", "/.well-known/acme-challenge/unknown-token-aaaaaaaaaaaaaa",
                        [("Host", DOMAIN)])
    assert r.status == 404
    r = rawhttp.request(http_port, "GET", "/private?x=1", [("Host", "evil.example")])
    assert r.status == 308
    assert r.header("location") == "https://%s:%d/private?x=1" % (DOMAIN, port)
