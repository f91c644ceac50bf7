"""HTTPS upstreams: nginx terminating TLS with a certificate from a test CA as the app. The
sidecar verifies it (CA file, name from the URL or `server_name`, sent by SNI), refuses an
expired certificate, one for another name and one from an unknown CA with a 502, a log line
naming the upstream, the server and the reason, and a failing `/readyz`; presents a client
certificate to nginx with `ssl_verify_client on`; keeps connections alive and resumes TLS
sessions; reads the CA file again on SIGHUP."""
import json

import pytest

import upstream_nginx_support as app
from conftest import free_port, poll
from tls_support import TestCA


@pytest.fixture
def ca(tmp_path):
    (tmp_path / "ca").mkdir()
    return TestCA(tmp_path / "ca")


@pytest.fixture
def nginx(tmp_path):
    started = []

    def start(**kw):
        port = free_port()
        server = app.start(tmp_path / ("app%d" % len(started)), port, **kw)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def https_upstream(port, **tls):
    return {"upstream": "https://127.0.0.1:%d" % port, "upstream_tls": tls}


def tls_failures(sc):
    found = []
    for line in sc.output().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if "upstream TLS failed" in entry.get("msg", ""):
            found.append(entry)
    return found


@pytest.mark.parametrize("protocol", ["TLSv1.2", "TLSv1.3"])
def test_verified_upstream_over_tls_with_sni_and_resumed_sessions(start_sidecar, nginx, ca, protocol):
    leaf = ca.issue("app", ips=(), dns=("app.internal",))
    # One request per connection: every request after the first is a new TLS connection.
    server = nginx(cert=leaf.cert_file, key=leaf.key_file, keepalive_requests=1, protocols=protocol)
    sc = start_sidecar(https_upstream(server.port, ca_file=str(ca.cert_file), server_name="app.internal"))
    seen = []
    for i in range(4):
        r = sc.request("GET", "/hello?n=%d" % i, headers=[("Host", "evil.example")])
        assert r.status == 200, r.body
        seen.append(app.fields(r.body))
    assert {s["sni"] for s in seen} == {"app.internal"}, "SNI comes from the config, never the client's Host"
    assert {s["tls"] for s in seen} == {protocol}
    assert len({s["conn"] for s in seen}) == 4
    assert seen[0]["uri"] == "/hello?n=0"
    assert seen[0]["reused"] == "."
    assert [s["reused"] for s in seen[1:]] == ["r", "r", "r"], "later connections resume the session"
    r = sc.admin("/readyz")
    assert r.status == 200, r.body


def test_keep_alive_reuses_one_tls_connection(start_sidecar, nginx, ca):
    leaf = ca.issue("app")
    server = nginx(cert=leaf.cert_file, key=leaf.key_file)
    sc = start_sidecar(https_upstream(server.port, ca_file=str(ca.cert_file)))
    seen = [app.fields(sc.request("GET", "/x").body) for _ in range(5)]
    assert len({s["conn"] for s in seen}) == 1, seen
    assert [s["n"] for s in seen] == ["1", "2", "3", "4", "5"]
    assert seen[0]["host"] == "127.0.0.1", "Host names the upstream (port 443 would be left out)"


@pytest.mark.parametrize("case, reason, verdict", [
    ("expired", "certificate has expired", "not valid now"),
    ("wrong_name", "hostname mismatch", "another name"),
    ("unknown_ca", "self-signed certificate in certificate chain", "unknown CA"),
])
def test_refused_certificate_is_502_with_reason(start_sidecar, nginx, ca, tmp_path, case, reason, verdict):
    if case == "expired":
        leaf = ca.issue("app", ips=(), dns=("app.internal",), expired=True)
    elif case == "wrong_name":
        leaf = ca.issue("app", ips=(), dns=("other.internal",))
    else:
        (tmp_path / "other").mkdir()
        leaf = TestCA(tmp_path / "other", name="some other CA").issue("app", ips=(), dns=("app.internal",))
    server = nginx(cert=leaf.cert_file, key=leaf.key_file)
    sc = start_sidecar(https_upstream(server.port, ca_file=str(ca.cert_file), server_name="app.internal"))
    r = sc.request("GET", "/secret")
    assert r.status == 502, (r.status, r.body)
    assert b"server=" not in r.body
    line = poll(lambda: (tls_failures(sc) or [None])[0])
    assert line, sc.log_tail()
    assert reason in line["msg"] and verdict in line["msg"], line
    assert line["upstream"] == "https://127.0.0.1:%d" % server.port
    assert line["upstream_name"] == "default" and line["server_name"] == "app.internal"
    ready = sc.admin("/readyz")
    assert ready.status == 503
    assert reason in ready.body.decode() and str(server.port) in ready.body.decode(), ready.body
    # Not retried on another connection: one handshake per request.
    assert sc.request("GET", "/again").status == 502


def test_mutual_tls(start_sidecar, nginx, ca):
    leaf = ca.issue("app")
    client = ca.issue("sidecar-client", ips=(), dns=(), client=True)
    server = nginx(cert=leaf.cert_file, key=leaf.key_file, client_ca=ca.cert_file)
    without = start_sidecar(https_upstream(server.port, ca_file=str(ca.cert_file)))
    r = without.request("GET", "/private")
    assert r.status == 400 and b"No required SSL certificate" in r.body, (r.status, r.body)
    with_cert = start_sidecar(https_upstream(
        server.port, ca_file=str(ca.cert_file), client_certificate=str(client.cert_file),
        client_key=str(client.key_file)))
    r = with_cert.request("GET", "/private")
    assert r.status == 200, r.body
    seen = app.fields(r.body)
    assert seen["verify"] == "SUCCESS" and "CN=sidecar-client" in seen["client"], seen


def test_client_certificate_from_another_ca_is_refused(start_sidecar, nginx, ca, tmp_path):
    leaf = ca.issue("app")
    (tmp_path / "rogue").mkdir()
    rogue = TestCA(tmp_path / "rogue", name="rogue CA").issue("intruder", ips=(), dns=(), client=True)
    server = nginx(cert=leaf.cert_file, key=leaf.key_file, client_ca=ca.cert_file)
    sc = start_sidecar(https_upstream(
        server.port, ca_file=str(ca.cert_file), client_certificate=str(rogue.cert_file),
        client_key=str(rogue.key_file)))
    r = sc.request("GET", "/private")
    assert r.status in (400, 502), (r.status, r.body)
    assert b"verify=SUCCESS" not in r.body


def test_verify_false_serves_with_a_warning_at_start(start_sidecar, nginx, ca, tmp_path):
    (tmp_path / "other").mkdir()
    leaf = TestCA(tmp_path / "other", name="unknown").issue("app")
    server = nginx(cert=leaf.cert_file, key=leaf.key_file)
    sc = start_sidecar(https_upstream(server.port, verify=False))
    assert sc.logged(lambda out: "upstream_tls.verify" in out and "not verified" in out)
    assert sc.request("GET", "/x").status == 200


def test_sighup_reads_the_ca_file_again(start_sidecar, nginx, ca, tmp_path):
    leaf = ca.issue("app")
    server = nginx(cert=leaf.cert_file, key=leaf.key_file)
    (tmp_path / "old").mkdir()
    trusted = tmp_path / "trusted.pem"
    trusted.write_bytes(TestCA(tmp_path / "old", name="retired CA").cert_file.read_bytes())
    sc = start_sidecar(https_upstream(server.port, ca_file=str(trusted)))
    assert sc.request("GET", "/x").status == 502
    trusted.write_bytes(ca.cert_file.read_bytes())
    assert sc.sighup()
    assert poll(lambda: sc.request("GET", "/x").status == 200)
    assert poll(lambda: sc.admin("/readyz").status == 200)


def test_tls_keys_on_a_plain_upstream_are_a_config_error(start_sidecar, ca):
    sc = start_sidecar({"upstream_tls": {"ca_file": str(ca.cert_file)}}, ready=False)
    assert sc.wait_exit(15) == 1, sc.log_tail()
    sc.stopped = True
    assert "upstream_tls applies to an https:// upstream only" in sc.output()


def test_a_client_certificate_without_its_key_is_a_config_error(start_sidecar, ca):
    client = ca.issue("c", ips=(), dns=(), client=True)
    sc = start_sidecar(https_upstream(443, client_certificate=str(client.cert_file)), ready=False)
    assert sc.wait_exit(15) == 1, sc.log_tail()
    sc.stopped = True
    assert "upstream_tls.client_key" in sc.output(), sc.output()
