"""ACME end to end: the sidecar obtains and renews its own certificate from a real Pebble,
whose validation connects to the sidecar's listeners on loopback."""
import signal
import socket
import ssl
import subprocess
import time

import pytest

from conftest import free_port, log_entries, poll, sidecar_binary
from redis_support import redis_server  # noqa: F401 (fixture)
from pebble_support import DOMAIN, Pebble, acme_config, need_pebble, ready, served_certificate, wait_issued
from tls_support import TestCA


def run_cli(*args):
    return subprocess.run([str(sidecar_binary()), *args], capture_output=True, text=True, timeout=20)


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
    # SIGHUP reloads the file, which names no certificate: the issued one stays in service.
    assert sc.sighup()
    assert served_certificate(port, pebble.root_pem(), tmp_path)["serialNumber"] == cert["serialNumber"]
    sc.stop()
    status = run_cli("acme", "status", "--config", str(sc.config_path))
    assert status.returncode == 0, status.stdout + status.stderr
    assert "key stored" in status.stdout and "expires in" in status.stdout and "next renewal" in status.stdout
    check = run_cli("check", "--config", str(sc.config_path))
    assert check.returncode == 0, check.stderr
    assert "http-01 on 127.0.0.1:%d" % http_port in check.stdout and "(TLS)" in check.stdout
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


def test_tls_alpn01_issues_on_the_tls_listener(pebble_for, start_sidecar, tmp_path):
    port = free_port()
    pebble = pebble_for(free_port(), port)
    # RSA here (ECDSA everywhere else): the account's RS256 and an RSA certificate key.
    sc = start_sidecar(acme_config(pebble, port, tmp_path, "tls-alpn-01", extra={"key_type": "rsa-2048"}), port=port)
    # Until then the listener completes the CA's handshakes only and /readyz says why it waits.
    wait_issued(sc)
    cert = served_certificate(port, pebble.root_pem(), tmp_path)
    assert ("DNS", DOMAIN) in cert["subjectAltName"]
    assert sc.logged(lambda out: "acme: authorization valid: %s" % DOMAIN in out)
    assert "BEGIN PRIVATE KEY" in (tmp_path / "acme" / (DOMAIN + ".key")).read_text()
    from cryptography.hazmat.primitives.serialization import load_pem_private_key
    from cryptography.hazmat.primitives.asymmetric import rsa
    key = load_pem_private_key((tmp_path / "acme" / (DOMAIN + ".key")).read_bytes(), None)
    assert isinstance(key, rsa.RSAPrivateKey) and key.key_size == 2048


def test_acme_tls_1_handshake_without_a_challenge_is_refused(pebble_for, start_sidecar, tmp_path):
    """An attacker offering acme-tls/1 gets no certificate at all outside a challenge (and never
    the placeholder or the real one under that protocol)."""
    port = free_port()
    pebble = pebble_for(free_port(), port)
    sc = start_sidecar(acme_config(pebble, port, tmp_path, "tls-alpn-01"), port=port)
    wait_issued(sc)
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["acme-tls/1"])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        with pytest.raises(ssl.SSLError):
            with context.wrap_socket(raw, server_hostname=DOMAIN) as tls:
                tls.getpeercert(binary_form=True)
    # Ordinary clients are unaffected.
    assert served_certificate(port, pebble.root_pem(), tmp_path)


def test_short_lived_certificate_is_renewed_and_swapped_in(pebble_for, start_sidecar, tmp_path):
    port, http_port = free_port(), free_port()
    pebble = pebble_for(http_port, port, validity=15)
    sc = start_sidecar(acme_config(pebble, port, tmp_path, "http-01", http_port), port=port)
    wait_issued(sc)
    first = served_certificate(port, pebble.root_pem(), tmp_path)["serialNumber"]
    # An HTTP/2 client on the first certificate (verified against Pebble's root; the helper
    # names the server localhost, so the name is not checked here, but above).
    from h2_support import H2Client
    context = ssl.create_default_context(cadata=pebble.root_pem().decode())
    context.check_hostname = False
    context.set_alpn_protocols(["h2"])
    h2 = H2Client(port, tls_context=context)
    # Two-thirds of 15 s: renewed about 10 s after issuance, served to new connections at once;
    # ready throughout (the old certificate serves until the new one is taken).
    readiness = []

    def renewed():
        readiness.append(sc.admin("/readyz").status)
        return served_certificate(port, pebble.root_pem(), tmp_path)["serialNumber"] != first
    assert poll(renewed, 25, 0.2), sc.log_tail()
    assert set(readiness) == {200}, readiness
    assert sc.output().count("acme: certificate in service") >= 2
    # ... and open HTTP/2 connections are sent to a new one, as after SIGHUP.
    goaway = h2.wait_goaway(timeout=5)
    assert goaway is not None and goaway.error_code == 0, goaway


def test_nonces_refused_at_random_and_authorizations_reused(pebble_for, start_sidecar, tmp_path):
    port, http_port = free_port(), free_port()
    pebble = pebble_for(http_port, port, env={"PEBBLE_WFE_NONCEREJECT": "40", "PEBBLE_AUTHZREUSE": "100"})
    config = acme_config(pebble, port, tmp_path, "http-01", http_port)
    config["log"] = {"level": "debug"}
    sc = start_sidecar(config, port=port)
    wait_issued(sc)
    # No refused nonce made the order fail.
    assert "acme: no certificate issued yet" not in sc.output()
    first = sc.output()
    sc.stop()
    # A second order for the same name (the stored certificate gone) reuses the valid authorization.
    for f in (tmp_path / "acme").glob(DOMAIN + ".*"):
        f.unlink()
    sc = start_sidecar(config, port=port)
    wait_issued(sc)
    assert sc.logged(lambda out: "acme: order ready at once: the CA reused valid authorizations" in out
                     or "acme: authorization reused: %s" % DOMAIN in out), sc.log_tail()
    assert "acme: authorization valid" not in sc.output()
    # Refused nonces were retried: Pebble refuses about 4 in 10 at random, so one order's eight or
    # so requests all pass one run in sixty; the two orders' fifteen, one in two thousand.
    assert "retried with its fresh one" in first + sc.output()


def test_ca_down_at_start_without_a_certificate(pebble_for, start_sidecar, tmp_path):
    port, http_port = free_port(), free_port()
    pebble = pebble_for(http_port, port)
    pebble.stop_ca()
    sc = start_sidecar(acme_config(pebble, port, tmp_path, "http-01", http_port), port=port)
    assert sc.logged(lambda out: "acme: no certificate issued yet" in out, 10), sc.log_tail()
    r = sc.admin("/readyz")
    assert r.status == 503 and b"tls certificate not issued yet" in r.body
    assert sc.proc.poll() is None
    status = run_cli("acme", "status", "--config", str(sc.config_path))
    assert status.returncode == 3 and "none yet" in status.stdout, status.stdout + status.stderr
    # No certificate, no service: even a client that trusts anything completes no handshake.
    anything = ssl.create_default_context()
    anything.check_hostname = False
    anything.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        with pytest.raises(ssl.SSLError):
            anything.wrap_socket(raw, server_hostname=DOMAIN).close()
    pebble.start_ca()
    # The first retry comes 10 s after the failure.
    wait_issued(sc, timeout=30)


def test_ca_down_at_start_with_a_stored_certificate(pebble_for, start_sidecar, tmp_path):
    port, http_port = free_port(), free_port()
    pebble = pebble_for(http_port, port)
    config = acme_config(pebble, port, tmp_path, "http-01", http_port)
    sc = start_sidecar(config, port=port)
    wait_issued(sc)
    root = pebble.root_pem()
    serial = served_certificate(port, root, tmp_path)["serialNumber"]
    sc.stop()
    pebble.stop_ca()
    sc = start_sidecar(config, port=port)
    assert poll(lambda: ready(sc), 5), sc.log_tail()
    assert served_certificate(port, root, tmp_path)["serialNumber"] == serial


def test_two_replicas_sharing_redis_issue_exactly_one_order(pebble_for, start_sidecar, redis_server, tmp_path):
    """Pebble validates on replica A's port 80 stand-in whichever replica orders: the answer is
    in the shared store, so any replica behind a load balancer can give it."""
    redis = redis_server()
    port_a, port_b, http_a, http_b = free_port(), free_port(), free_port(), free_port()
    pebble = pebble_for(http_a, port_a)
    replicas = []
    for port, http, name in ((port_a, http_a, "a"), (port_b, http_b, "b")):
        (tmp_path / name).mkdir()
        config = acme_config(pebble, port, tmp_path / name, "http-01", http, extra={"share_via_store": True})
        config["public_url"] = "https://%s:%d" % (DOMAIN, port_a)
        config["revocations"] = {"store": redis.url}
        replicas.append(start_sidecar(config, port=port))
    for sc in replicas:
        wait_issued(sc, timeout=40)
    root = pebble.root_pem()
    serials = {served_certificate(port, root, tmp_path)["serialNumber"] for port in (port_a, port_b)}
    assert len(serials) == 1
    assert pebble.orders() == 1, pebble.log()
    waited = sum(sc.output().count("another replica is ordering") for sc in replicas)
    assert waited >= 1
    # The lock is released, and the shared values live under the store's key prefix.
    assert redis.cli("EXISTS", "sidecar:acme:lock:" + DOMAIN) == "0"
    assert redis.cli("EXISTS", "sidecar:acme:cert:" + DOMAIN) == "1"
    status = run_cli("acme", "status", "--config", str(replicas[1].config_path))
    assert status.returncode == 0 and "redis://127.0.0.1:%d" % redis.port in status.stdout, status.stdout + status.stderr


def test_a_replica_answers_http01_for_the_replica_that_orders(pebble_for, start_sidecar, redis_server, tmp_path):
    """Replica A holds the CA's port 80 but cannot reach the CA itself; replica B orders, and
    the CA's request to A is answered from the shared store. A then serves B's certificate."""
    redis = redis_server()
    port_a, port_b, http_a, http_b = free_port(), free_port(), free_port(), free_port()
    pebble = pebble_for(http_a, port_a)
    configs = {}
    for port, http, name in ((port_a, http_a, "a"), (port_b, http_b, "b")):
        (tmp_path / name).mkdir()
        config = acme_config(pebble, port, tmp_path / name, "http-01", http, extra={"share_via_store": True})
        config["public_url"] = "https://%s:%d" % (DOMAIN, port_a)
        config["revocations"] = {"store": redis.url}
        configs[name] = config
    configs["a"]["tls"]["acme"]["directory"] = "https://127.0.0.1:%d/dir" % free_port()  # nothing listens
    a = start_sidecar(configs["a"], port=port_a)
    assert a.logged(lambda out: "acme: no certificate issued yet" in out, 10), a.log_tail()
    b = start_sidecar(configs["b"], port=port_b)
    wait_issued(b)
    assert "acme: order created" not in a.output()
    wait_issued(a, timeout=30)  # picked up from the store at its next look
    root = pebble.root_pem()
    assert served_certificate(port_a, root, tmp_path)["serialNumber"] == \
        served_certificate(port_b, root, tmp_path)["serialNumber"]
    assert redis.cli("KEYS", "sidecar:acme:http-01:*") == ""  # withdrawn once decided


EAB_KEY = "zWNDZM6eQGHWpSRTPal5eIUYFTu7EajVIoguysqZ9wG44nMEtx3MUAsUDkMTQ12W"


def test_a_ca_requiring_external_account_binding(pebble_for, start_sidecar, tmp_path):
    port, http_port = free_port(), free_port()
    pebble = pebble_for(http_port, port, eab_keys={"kid-1": EAB_KEY})
    # Without the binding: a clear line naming the keys to set, no crash, 503.
    unbound = acme_config(pebble, port, tmp_path / "unbound", "http-01", http_port)
    (tmp_path / "unbound").mkdir()
    sc = start_sidecar(unbound, port=port)
    assert sc.logged(lambda out: "set tls.acme.eab_kid and eab_hmac_key" in out, 10), sc.log_tail()
    assert sc.admin("/readyz").status == 503
    sc.stop()
    # With it (the MAC key as a secret reference): an account, then a certificate.
    (tmp_path / "bound").mkdir()
    secret = tmp_path / "eab-hmac"
    secret.write_text(EAB_KEY + "\n")
    bound = acme_config(pebble, port, tmp_path / "bound", "http-01", http_port,
                        extra={"eab_kid": "kid-1", "eab_hmac_key": "file:%s" % secret})
    sc = start_sidecar(bound, port=port)
    wait_issued(sc)


class _UnansweringCA:
    """A directory URL whose server takes the connection and never answers, or (`refusing`)
    one where nothing listens; with a trust anchor the client loads and never gets to use."""

    def __init__(self, workdir, refusing=False):
        workdir.mkdir()
        self.ca = TestCA(workdir)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        port = self.sock.getsockname()[1]
        if refusing:
            self.sock.close()
        else:
            self.sock.listen(8)
        self.directory = "https://127.0.0.1:%d/dir" % port

    def connected(self, timeout):
        """Whether a client connected within `timeout` seconds (the handshake then waits)."""
        self.sock.settimeout(timeout)
        try:
            self.client, _ = self.sock.accept()
            return True
        except socket.timeout:
            return False


def _stops_with_its_acme_thread(sc):
    """SIGTERM, then: a prompt exit 0, the ACME thread's end logged before the process's.
    (Exit runs OpenSSL's cleanup: a thread still in a handshake or a signature then reads
    freed memory, which AddressSanitizer reports and a plain build may crash on.)"""
    sc.signal(signal.SIGTERM)
    assert sc.wait_exit(5) == 0, sc.log_tail()
    messages = [entry.get("msg") for entry in log_entries(sc)]
    assert "acme: stopped" in messages, sc.log_tail()
    assert messages.index("acme: stopped") < messages.index("stopped"), messages[-6:]


def test_stopping_while_the_ca_has_not_answered_ends_the_acme_thread_first(start_sidecar, tmp_path):
    port = free_port()
    ca = _UnansweringCA(tmp_path / "ca")
    sc = start_sidecar(acme_config(ca, port, tmp_path, "tls-alpn-01"), port=port)
    assert ca.connected(10), sc.log_tail()  # the directory's request waits (30 s deadline)
    _stops_with_its_acme_thread(sc)


def test_stopping_during_the_backoff_after_a_failure_ends_the_acme_thread_at_once(start_sidecar, tmp_path):
    port = free_port()
    ca = _UnansweringCA(tmp_path / "ca", refusing=True)
    sc = start_sidecar(acme_config(ca, port, tmp_path, "tls-alpn-01"), port=port)
    # The first retry is 10 s away: the thread sleeps on its loop meanwhile.
    assert sc.logged(lambda out: "acme: no certificate issued yet" in out, 10), sc.log_tail()
    _stops_with_its_acme_thread(sc)
