"""Serving HTTPS directly (`tls.cert_file`, `tls.key_file`): real TLS clients
(Python `ssl`, curl, `openssl s_client`) against the sidecar's own TLS listener — sign-in end to
end, protocol versions, ALPN, resumption, plain HTTP on the TLS port, slow handshakes, and
certificate reloads on SIGHUP (a bad pair keeps the old one)."""
import datetime
import json
import shutil
import signal
import socket
import ssl
import subprocess
import time

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

import rawhttp
from conftest import Browser, free_port, merge, poll, sidecar_binary, to_yaml
from tls_support import TestCA

HTML = ("Accept", "text/html,application/xhtml+xml")


class TLSConn(rawhttp.Conn):
    """rawhttp's connection over TLS: same request/response helpers."""

    def __init__(self, port, context, server_hostname="127.0.0.1", session=None, **kw):
        super().__init__(port, **kw)
        self.sock = context.wrap_socket(self.sock, server_hostname=server_hostname, session=session)


class HTTPSClient:
    """What Browser needs of a sidecar (`request`), over TLS with the test CA."""

    def __init__(self, port, context):
        self.port, self.context = port, context

    def request(self, method="GET", target="/echo", headers=None, body=b"", **kw):
        with TLSConn(self.port, self.context) as c:
            return c.request(method, target, headers, body, **kw)


@pytest.fixture
def ca(tmp_path):
    return TestCA(tmp_path)


@pytest.fixture
def tls_site(ca, start_sidecar, start_emulator, tmp_path):
    """start(overrides=None, leaf=None) -> (sidecar, client, leaf): a sidecar serving HTTPS on its
    public port with a leaf for 127.0.0.1 from the test CA, the emulator auto-approving."""
    def start(overrides=None, leaf=None, auto_approve=True):
        leaf = leaf or ca.issue("site")
        port = free_port()
        public_url = "https://127.0.0.1:%d" % port
        emulator = start_emulator([public_url + "/.auth/callback"])
        sc = start_sidecar(merge({
            "public_url": public_url, "tls": {"cert_file": str(leaf.cert_file), "key_file": str(leaf.key_file)},
            "apple": {"base_url": emulator.issuer}, "access": {"public_paths": ["/pub/**", "/bytes"]},
        }, overrides), port=port)
        sc.emulator = emulator
        return sc, HTTPSClient(port, ca.client_context()), leaf
    return start


def peer_serial(port, context):
    with context.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=5),
                             server_hostname="127.0.0.1") as s:
        return x509.load_der_x509_certificate(s.getpeercert(binary_form=True)).serial_number


def openssl(*args, data=b"Q\n", timeout=15):
    return subprocess.run(["openssl", "s_client", *args], input=data, capture_output=True, timeout=timeout)


def issue_rsa(ca, stem, days=1, not_before_days=0, dns=("localhost",)):
    """An RSA-2048 leaf (the TestCA issues EC ones); `days` < 0 gives an expired one."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = datetime.datetime.now(datetime.timezone.utc)
    start = now + datetime.timedelta(days=not_before_days) - datetime.timedelta(days=2 if days < 0 else 0, minutes=5)
    import ipaddress
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, stem)]))
            .issuer_name(ca.cert.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))] + [x509.DNSName(d) for d in dns]), critical=False)
            .sign(ca.key, hashes.SHA256()))
    cert_file, key_file = ca.dir / (stem + ".pem"), ca.dir / (stem + ".key")
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM) + ca.cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file


# -- sign-in and proxying over https ---------------------------------------------------------
def test_sign_in_over_https_end_to_end(tls_site, ca):
    sc, client, _ = tls_site()
    b = Browser(client, sc.emulator)
    r, _ = b.login(rd="/private/page")
    assert r.status == 303 and r.header("Location") == "/private/page", (r.status, r.body)
    cookie = [c for c in r.header_all("Set-Cookie") if c.startswith("__Host-sidecar=")]
    assert cookie and "; Secure" in cookie[0] and "; HttpOnly" in cookie[0], r.header_all("Set-Cookie")
    r = b.get("/echo")
    assert r.status == 200, (r.status, r.body[:300])
    echoed = {n.lower(): v for n, v in r.json()["headers"]}
    assert echoed["x-forwarded-proto"] == "https"
    assert echoed["x-auth-email"] == "maria.ruiz@example.com"
    assert "cookie" not in echoed or "__Host-sidecar" not in echoed["cookie"]
    # A client-sent X-Forwarded-Proto does not change it (the peer is not a trusted proxy).
    r = b.request("GET", "/pub/x", [("X-Forwarded-Proto", "http")])
    assert {n.lower(): v for n, v in r.json()["headers"]}["x-forwarded-proto"] == "https"
    # curl with the CA, the session cookie and HTTP/2 offered: ALPN settles on h2, and the
    # session opens the same over it.
    name, value = b.session_cookie
    done = subprocess.run(["curl", "-sS", "--http2", "--cacert", str(ca.cert_file), "-H", "Cookie: %s=%s" % (name, value),
                           "-w", "\n%{http_version} %{http_code}", "https://127.0.0.1:%d/.auth/me" % sc.port],
                          capture_output=True, text=True, timeout=15)
    body, _, status = done.stdout.rpartition("\n")
    assert status == "2 200", done.stdout + done.stderr
    assert json.loads(body)["email"] == "maria.ruiz@example.com"


def test_alpn_keep_alive_and_resumption(tls_site, ca):
    # Two workers share one TLS context: a session resumes whichever worker accepts it.
    sc, client, _ = tls_site({"workers": 2})
    context = ca.client_context()
    context.set_alpn_protocols(["http/1.1"])  # (h2 offered: tests of HTTP/2)
    with TLSConn(sc.port, context) as c:
        assert c.sock.selected_alpn_protocol() == "http/1.1"
        assert c.sock.version() == "TLSv1.3"
        for _ in range(3):  # keep-alive on one TLS connection
            assert c.request("GET", "/pub/x").status == 200
        session = c.sock.session
    assert session is not None
    for _ in range(4):
        with TLSConn(sc.port, context, session=session) as c:
            assert c.request("GET", "/pub/x").status == 200
            assert c.sock.session_reused, "the TLS session was not resumed"
    # TLS 1.2 resumes too (session ids / tickets).
    tls12 = ca.client_context()
    tls12.maximum_version = ssl.TLSVersion.TLSv1_2
    with TLSConn(sc.port, tls12) as c:
        assert c.sock.version() == "TLSv1.2" and c.request("GET", "/pub/x").status == 200
        session = c.sock.session
    with TLSConn(sc.port, tls12, session=session) as c:
        assert c.sock.session_reused and c.request("GET", "/pub/x").status == 200


def test_large_bodies_both_ways(tls_site):
    sc, client, _ = tls_site()
    body = bytes(range(256)) * 4096  # 1 MiB up
    with TLSConn(sc.port, client.context) as c:
        r = c.request("POST", "/pub/upload", [("Content-Type", "application/octet-stream")], body)
        assert r.status == 200 and r.json()["body_len"] == len(body), r.body[:300]
        r = c.request("GET", "/bytes?n=3000000")
        assert r.status == 200 and len(r.body) == 3000000, (r.status, len(r.body))
        assert c.request("GET", "/pub/x").status == 200, "keep-alive after large bodies"


def test_websocket_and_connection_close_over_tls(tls_site):
    sc, client, _ = tls_site({"access": {"public_paths": ["/pub/**", "/bytes", "/ws"]}})
    with TLSConn(sc.port, client.context) as c:
        c.send(rawhttp.build_request("GET", "/ws", [
            ("Upgrade", "websocket"), ("Connection", "Upgrade"),
            ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="), ("Sec-WebSocket-Version", "13")]))
        assert c.read_response().status == 101
        c.send(rawhttp.ws_frame(0x1, b"hello"))
        assert rawhttp.ws_read_frame(c) == (0x1, b"hello")
        big = bytes(range(256)) * 300
        c.send(rawhttp.ws_frame(0x2, big))
        assert rawhttp.ws_read_frame(c) == (0x2, big)
    # `Connection: close`: the whole response, then close_notify and the end of the stream.
    with TLSConn(sc.port, client.context) as c:
        r = c.request("GET", "/bytes?n=200000", [("Connection", "close")])
        assert r.status == 200 and len(r.body) == 200000
        assert c.wait_closed(5)  # at once; 5 s of noise


# -- protocol versions and plain http --------------------------------------------------------
@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl not installed")
def test_only_tls12_and_tls13_are_accepted(tls_site, ca):
    sc, _, _ = tls_site()
    target = "127.0.0.1:%d" % sc.port
    for version in ("-tls1_2", "-tls1_3"):
        done = openssl("-connect", target, "-CAfile", str(ca.cert_file), "-verify_return_error", version)
        assert done.returncode == 0, (version, done.stdout[-800:], done.stderr[-800:])
    for version in ("-tls1", "-tls1_1"):
        # SECLEVEL=0 so that the client itself would speak them: the refusal is the server's.
        done = openssl("-connect", target, "-CAfile", str(ca.cert_file), version, "-cipher", "DEFAULT@SECLEVEL=0")
        assert done.returncode != 0, (version, done.stdout[-800:])
        assert b"alert protocol version" in done.stderr or b"unsupported protocol" in done.stderr \
            or b"no protocols available" in done.stderr, done.stderr[-800:]
    assert sc.proc.poll() is None


def test_plain_http_on_the_tls_port_gets_400_and_a_close(tls_site):
    sc, _, _ = tls_site()
    started = time.monotonic()
    with rawhttp.Conn(sc.port, timeout=10) as c:
        c.send(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        data = b""
        while True:
            chunk = c.sock.recv(4096)
            if not chunk:
                break
            data += chunk
    assert data.startswith(b"HTTP/1.1 400 "), data
    assert b"HTTPS" in data
    # Answered and closed at once: 5 s covers a loaded 2-core machine.
    assert time.monotonic() - started < 5, "the connection was not closed promptly"


def test_half_finished_handshake_is_cut_at_header_timeout(tls_site):
    # header_timeout 1 s and idle_timeout 5 s: each bound below (a minimum, +3 s for a loaded
    # 2-core machine) tells the two apart.
    sc, client, _ = tls_site({"limits": {"header_timeout": "1s", "idle_timeout": "5s"}})
    cases = {
        "nothing": b"",
        # A TLS record header promising a 512-byte ClientHello, and 5 bytes of it.
        "partial ClientHello": b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03",
    }
    for name, data in cases.items():
        started = time.monotonic()  # before the connection: the deadline starts at its accept
        with socket.create_connection(("127.0.0.1", sc.port), timeout=10) as s:
            if data:
                s.sendall(data)
            try:
                got = s.recv(100)
            except ConnectionResetError:
                got = b""
            elapsed = time.monotonic() - started
        assert got == b"", (name, got)
        assert 1.0 <= elapsed <= 4.0, (name, elapsed)  # header_timeout 1 s, +3 s
    # A completed handshake with a slow head is cut by the same header_timeout (408).
    with TLSConn(sc.port, client.context, timeout=10) as c:
        started = time.monotonic()  # before the head's first byte
        c.send(b"GET /pub/x HTTP/1.1\r\nHost: a\r\n")
        r = c.read_response()
        elapsed = time.monotonic() - started
        assert r.status == 408 and 1.0 <= elapsed <= 4.0, (r.status, elapsed)  # header_timeout 1 s, +3 s
    # A completed handshake with no request yet is idle, not slow (a browser's preconnect):
    # it is kept past header_timeout and served, and closed only at idle_timeout.
    with TLSConn(sc.port, client.context, timeout=10) as c:
        # Twice header_timeout; a slow machine may stretch it up to 3 s more before the
        # 5 s idle_timeout would close the connection first.
        time.sleep(2)
        sent = time.monotonic()  # the idle time starts after this (once the answer is out)...
        assert c.request("GET", "/pub/x").status == 200
        answered = time.monotonic()  # ...and before this
        assert c.sock.recv(100) == b""
        closed = time.monotonic()
        # idle_timeout 5 s is a minimum (measured from before it can have started); the close
        # comes at most 5 s after the answer, +3 s for a loaded 2-core machine.
        assert closed - sent >= 5.0 and closed - answered <= 8.0, (closed - sent, closed - answered)
    # A healthy client is served meanwhile.
    assert client.request("GET", "/pub/x").status == 200


# -- reloads ---------------------------------------------------------------------------------
def test_sighup_with_a_new_certificate_serves_it_to_new_connections(tls_site, ca):
    sc, client, leaf = tls_site()
    old_serial = leaf.cert.serial_number
    assert peer_serial(sc.port, client.context) == old_serial
    with TLSConn(sc.port, client.context) as old:
        assert old.request("GET", "/pub/x").status == 200
        fresh = ca.issue("site2")
        leaf.cert_file.write_bytes(fresh.cert_file.read_bytes())
        leaf.key_file.write_bytes(fresh.key_file.read_bytes())
        sc.signal(signal.SIGHUP)
        assert poll(lambda: peer_serial(sc.port, client.context) == fresh.cert.serial_number), \
            "new connections still get the old certificate"
        # The connection opened before the reload completes its requests, on its certificate.
        assert old.request("GET", "/pub/x").status == 200
        assert x509.load_der_x509_certificate(old.sock.getpeercert(binary_form=True)).serial_number == old_serial
    assert sc.logged(lambda out: "tls certificate loaded" in out)  # polled: see Sidecar.logged


def test_a_bad_pair_on_reload_keeps_the_old_one(tls_site, ca):
    sc, client, leaf = tls_site()
    serial = leaf.cert.serial_number
    other = ca.issue("other")
    original_key = leaf.key_file.read_bytes()
    leaf.key_file.write_bytes(other.key_file.read_bytes())  # a key that is not the certificate's
    sc.signal(signal.SIGHUP)
    # A reload is prompt; polled for 5 s.
    assert sc.logged(lambda out: "does not belong to the certificate" in out and "reload failed" in out), \
        sc.output()[-2000:]
    assert peer_serial(sc.port, client.context) == serial
    assert client.request("GET", "/pub/x").status == 200
    assert original_key not in sc.output().encode() and other.key_file.read_bytes() not in sc.output().encode()


def test_an_rsa_certificate_is_served(tls_site, ca):
    cert_file, key_file = issue_rsa(ca, "rsa-site")
    sc, client, _ = tls_site({"tls": {"cert_file": str(cert_file), "key_file": str(key_file)}})
    tls12 = ca.client_context()
    tls12.maximum_version = ssl.TLSVersion.TLSv1_2
    with TLSConn(sc.port, tls12) as c:
        assert "RSA" in c.sock.cipher()[0] and c.request("GET", "/pub/x").status == 200
    assert client.request("GET", "/pub/x").status == 200


# -- check -----------------------------------------------------------------------------------
def run_check(path):
    return subprocess.run([str(sidecar_binary()), "check", "--config", str(path)],
                          capture_output=True, text=True, timeout=30)


def test_check_validates_the_pair(tls_site, ca, tmp_path):
    sc, _, leaf = tls_site()
    assert run_check(sc.config_path).returncode == 0

    def check_with(cert_file, key_file, name):
        path = tmp_path / (name + ".yaml")
        path.write_text(to_yaml(merge(sc.config, {"tls": {"cert_file": str(cert_file), "key_file": str(key_file)}})) + "\n")
        return run_check(path)

    other = ca.issue("mismatch")
    done = check_with(leaf.cert_file, other.key_file, "mismatch")
    assert done.returncode == 1 and "does not belong to the certificate" in done.stderr, done.stderr
    expired_cert, expired_key = issue_rsa(ca, "expired", days=-1)
    done = check_with(expired_cert, expired_key, "expired")
    assert done.returncode == 1 and "expired on" in done.stderr and str(expired_cert) in done.stderr, done.stderr
    encrypted = tmp_path / "encrypted.key"
    key = serialization.load_pem_private_key(leaf.key_file.read_bytes(), None)
    encrypted.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                            serialization.BestAvailableEncryption(b"secret")))
    done = check_with(leaf.cert_file, encrypted, "encrypted")
    assert done.returncode == 1 and "password-protected" in done.stderr, done.stderr
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    done = check_with(garbage, leaf.key_file, "garbage")
    assert done.returncode == 1 and "tls.cert_file" in done.stderr, done.stderr
    # A certificate for another host loads, with a warning naming public_url's host.
    elsewhere = ca.issue("elsewhere", ips=("10.1.2.3",), dns=("other.example",))
    done = check_with(elsewhere.cert_file, elsewhere.key_file, "elsewhere")
    assert done.returncode == 0, done.stderr
    assert "does not name 127.0.0.1" in done.stderr, done.stderr
    assert "PRIVATE KEY" not in done.stderr + done.stdout
