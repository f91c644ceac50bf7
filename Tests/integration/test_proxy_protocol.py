"""`proxy_protocol: true`: every connection on the public listener begins with a PROXY protocol
v1 or v2 header, accepted only from a peer in `trusted_proxies`, whose source is then the
client (X-Forwarded-For, the access line). Raw sockets write the headers byte by byte, over
plain TCP and in front of a TLS handshake; haproxy's `send-proxy` and `send-proxy-v2`, and
nginx's stream module with `proxy_protocol on`, write them as a real load balancer does.
Anything else — no header, a malformed, oversized or slow one, a peer outside the list — is
closed without a byte reaching the upstream."""
import ipaddress
import json
import os
import re
import shutil
import socket
import ssl
import struct
import subprocess
import time
from pathlib import Path

import pytest

import rawhttp
from conftest import free_port, poll, seen
from h2_support import H2Client
from nginx_support import Nginx, TLSConn
from tls_support import TestCA

TRUSTED = {"proxy_protocol": True, "trusted_proxies": ["127.0.0.1/32"]}
V2_SIGNATURE = b"\r\n\r\n\x00\r\nQUIT\n"


def v1(source, sport=40000, dport=443):
    family, destination = ("TCP6", "::1") if ":" in source else ("TCP4", "127.0.0.1")
    return ("PROXY %s %s %s %d %d\r\n" % (family, source, destination, sport, dport)).encode()


def v2(source, destination=None, sport=40000, dport=443, tlvs=b""):
    src = ipaddress.ip_address(source)
    dst = ipaddress.ip_address(destination or ("::1" if src.version == 6 else "127.0.0.1"))
    family = 0x21 if src.version == 6 else 0x11  # AF_INET6 / AF_INET, STREAM
    block = src.packed + dst.packed + struct.pack("!HH", sport, dport) + tlvs
    return V2_SIGNATURE + bytes([0x21, family]) + struct.pack("!H", len(block)) + block


V2_LOCAL = V2_SIGNATURE + bytes([0x20, 0x00, 0x00, 0x00])


def get(request_id, headers=()):
    extra = "".join("%s: %s\r\n" % h for h in headers)
    return ("GET /echo HTTP/1.1\r\nHost: t\r\nX-Request-Id: %s\r\n%sConnection: close\r\n\r\n"
            % (request_id, extra)).encode()


def exchange(port, *pieces, source=None, pause=0.0, timeout=5.0):
    """Sends `pieces` on one connection (`pause` seconds apart); returns (response or None,
    whether the connection was closed)."""
    with rawhttp.Conn(port, timeout=timeout, source=source) as c:
        try:
            for i, piece in enumerate(pieces):
                if i and pause:
                    time.sleep(pause)
                c.send(piece)
        except (BrokenPipeError, ConnectionResetError):
            return None, True
        try:
            resp = c.read_response()
        except (rawhttp.Closed, ConnectionResetError):
            return None, True
        return resp, c.wait_closed(timeout)


def access_entry(sc, request_id):
    def find():
        for line in sc.output().splitlines():
            if line.startswith("{"):
                entry = json.loads(line)
                if entry.get("request_id") == request_id:
                    return entry
        return None
    return poll(find, timeout=5)


def refusals(sc, reason):
    """sidecar_proxy_protocol_refusals_total{reason}, once published (about once a second)."""
    label = 'sidecar_proxy_protocol_refusals_total{reason="%s"} ' % reason
    for line in sc.admin("/metrics").body.decode().splitlines():
        if line.startswith(label):
            return int(float(line[len(label):]))
    return None


def assert_refused(sc, upstream, *pieces, source=None, pause=0.0):
    resp, closed = exchange(sc.port, *pieces, source=source, pause=pause)
    assert resp is None and closed, resp
    assert upstream.stats()["requests"] == 0


# -- accepted headers ---------------------------------------------------------------------------
@pytest.mark.parametrize("header, client", [
    (v1("203.0.113.9"), "203.0.113.9"),
    (v2("198.51.100.7"), "198.51.100.7"),
    (v1("2001:db8::7"), "2001:db8::7"),
    (v2("2001:db8::1:2"), "2001:db8::1:2"),
    (v2("::ffff:192.0.2.44"), "192.0.2.44"),
    (v2("192.0.2.8", tlvs=b"\x05\x00\x04abcd"), "192.0.2.8"),  # a TLV (unique id) is skipped
], ids=["v1", "v2", "v1-ipv6", "v2-ipv6", "v2-ipv4-mapped", "v2-tlv"])
def test_the_header_source_is_the_client(start_sidecar, header, client):
    """Header and request in separate sends, then in one: the upstream's X-Forwarded-For and
    the access line's client are the header's source, not the balancer's address."""
    sc = start_sidecar(TRUSTED)
    for rid, pieces in (("pp-apart", (header, get("pp-apart"))), ("pp-together", (header + get("pp-together"),))):
        resp, _ = exchange(sc.port, *pieces, pause=0.05)
        assert resp is not None and resp.status == 200, rid
        assert seen(resp.json(), "X-Forwarded-For") == [client], rid
        entry = access_entry(sc, rid)
        assert entry and entry["client"] == client, (rid, entry)


UNNAMED_CLIENT_HEADERS = [
    b"PROXY UNKNOWN\r\n",
    b"PROXY UNKNOWN 1.2.3.4 5.6.7.8 1 2\r\n",
    V2_LOCAL,
    # LOCAL with an address block: the addresses are to be ignored
    V2_SIGNATURE + bytes([0x20, 0x11, 0x00, 0x0C]) + bytes([203, 0, 113, 9, 127, 0, 0, 1]) + struct.pack("!HH", 1, 2),
    V2_SIGNATURE + bytes([0x21, 0x31]) + struct.pack("!H", 216) + b"/run/lb.sock".ljust(216, b"\0"),  # AF_UNIX
    V2_SIGNATURE + bytes([0x21, 0x00, 0x00, 0x00]),  # AF_UNSPEC
]
UNNAMED_CLIENT_IDS = ["v1-unknown", "v1-unknown-with-addresses", "v2-local", "v2-local-with-addresses", "v2-unix",
                      "v2-unspec"]


@pytest.mark.parametrize("header", UNNAMED_CLIENT_HEADERS, ids=UNNAMED_CLIENT_IDS)
def test_local_and_unknown_mean_the_peer_itself(start_sidecar, header):
    """A balancer's own connection (a health check) names no client: the peer's address is
    the client's."""
    sc = start_sidecar(TRUSTED)
    resp, _ = exchange(sc.port, header + get("pp-local"))
    assert resp is not None and resp.status == 200
    assert seen(resp.json(), "X-Forwarded-For") == ["127.0.0.1"]


@pytest.mark.parametrize("header", UNNAMED_CLIENT_HEADERS, ids=UNNAMED_CLIENT_IDS)
def test_a_header_naming_no_client_does_not_lend_the_balancer_trust(start_sidecar, header):
    """Whoever is behind UNKNOWN, LOCAL, a unix or unspecified family is not the balancer:
    its forwarding fields are stripped, and neither the upstream nor the access line takes
    its word for its address."""
    sc = start_sidecar(TRUSTED)
    resp, _ = exchange(sc.port, header + get("pp-unnamed", [
        ("X-Forwarded-For", "6.6.6.6"), ("X-Real-IP", "6.6.6.6"), ("Forwarded", "for=6.6.6.6;host=evil.test"),
        ("X-Forwarded-Host", "evil.test"), ("X-Forwarded-Proto", "https")]))
    assert resp is not None and resp.status == 200
    e = resp.json()
    assert seen(e, "X-Forwarded-For") == ["127.0.0.1"]
    assert seen(e, "X-Real-IP") == [] and seen(e, "Forwarded") == []
    assert seen(e, "X-Forwarded-Host") == ["t"]
    assert seen(e, "X-Forwarded-Proto") == ["http"]
    assert "6.6.6.6" not in json.dumps(e) and "evil.test" not in json.dumps(e)
    assert access_entry(sc, "pp-unnamed")["client"] == "127.0.0.1"


def test_an_h2_connection_behind_a_header_naming_no_client_is_untrusted(start_sidecar, monkeypatch):
    """The same over h2c: each stream's ClientConnection inherits the connection's trust."""
    sc = start_sidecar(TRUSTED)
    connect = socket.create_connection

    def behind_unknown(*args, **kwargs):
        sock = connect(*args, **kwargs)
        sock.sendall(b"PROXY UNKNOWN\r\n")
        return sock
    monkeypatch.setattr(socket, "create_connection", behind_unknown)
    c = H2Client(sc.port)
    try:
        r = c.request("GET", "/echo", [("x-forwarded-for", "6.6.6.6"), ("x-real-ip", "6.6.6.6"),
                                       ("x-request-id", "pp-unnamed-h2")])
        assert r.status == 200, (r.status, r.reset)
        e = json.loads(r.body)
    finally:
        c.close()
    assert seen(e, "X-Forwarded-For") == ["127.0.0.1"] and seen(e, "X-Real-IP") == []
    assert access_entry(sc, "pp-unnamed-h2")["client"] == "127.0.0.1"


def test_a_header_naming_no_client_shares_the_balancer_sign_in_budget(start_auth_sidecar):
    """The sign-in rate limiter's key is the balancer's address, whatever X-Forwarded-For the
    client behind an UNKNOWN header claims: a new claim per request buys no new budget."""
    sc, _ = start_auth_sidecar({**TRUSTED, "limits": {"sign_in_rate": "1/m", "sign_in_burst": 2}})
    statuses = []
    for i in range(3):
        with rawhttp.Conn(sc.port, timeout=5) as c:
            c.send(b"PROXY UNKNOWN\r\n")
            statuses.append(c.request("GET", "/.auth/login", [
                ("Accept", "text/html"), ("X-Forwarded-For", "6.6.6.%d" % i)]).status)
    assert statuses == [302, 302, 429]


def test_keep_alive_requests_after_the_header_keep_its_client(start_sidecar):
    sc = start_sidecar(TRUSTED)
    with rawhttp.Conn(sc.port, timeout=5) as c:
        c.send(v2("203.0.113.50"))
        for _ in range(3):
            resp = c.request("GET", "/echo", [("Host", "t")])
            assert seen(resp.json(), "X-Forwarded-For") == ["203.0.113.50"]


def test_a_client_forwarded_for_behind_the_header_is_replaced(start_sidecar):
    """The client behind the balancer is not a trusted proxy: what it claims is replaced, and
    the fields only trusted proxies may set are removed."""
    sc = start_sidecar(TRUSTED)
    resp, _ = exchange(sc.port, v1("203.0.113.9") + get("pp-spoof", [
        ("X-Forwarded-For", "10.9.9.9"), ("X-Real-IP", "10.9.9.9"), ("X-Forwarded-Host", "evil.test")]))
    e = resp.json()
    assert seen(e, "X-Forwarded-For") == ["203.0.113.9"]
    assert seen(e, "X-Real-IP") == []
    assert seen(e, "X-Forwarded-Host") == ["t"]
    assert access_entry(sc, "pp-spoof")["client"] == "203.0.113.9"


def test_a_source_that_is_itself_a_trusted_proxy_is_believed(start_sidecar):
    """A second proxy behind the balancer (its address in trusted_proxies) may forward its own
    client's address: appended to, as for a directly connected trusted proxy."""
    sc = start_sidecar({"proxy_protocol": True, "trusted_proxies": ["127.0.0.1/32", "10.0.0.0/8"]})
    resp, _ = exchange(sc.port, v2("10.1.2.3") + get("pp-chain", [("X-Forwarded-For", "198.51.100.1")]))
    assert seen(resp.json(), "X-Forwarded-For") == ["198.51.100.1, 10.1.2.3"]
    assert access_entry(sc, "pp-chain")["client"] == "198.51.100.1"


def test_the_sign_in_rate_counts_the_header_source(start_auth_sidecar):
    """Clients behind one balancer each have their own sign-in budget: a flood from one source
    is refused with 429 while another source, through the same balancer, is served."""
    sc, _ = start_auth_sidecar({**TRUSTED, "limits": {"sign_in_rate": "1/m", "sign_in_burst": 3}})
    html = ("Accept", "text/html")
    with rawhttp.Conn(sc.port, timeout=5) as c:
        c.send(v2("203.0.113.1"))
        assert [c.request("GET", "/.auth/login", [html]).status for _ in range(4)] == [302, 302, 302, 429]
    with rawhttp.Conn(sc.port, timeout=5) as c:
        c.send(v1("203.0.113.2"))
        assert c.request("GET", "/.auth/login", [html]).status == 302


# -- refused connections ------------------------------------------------------------------------
@pytest.mark.parametrize("pieces", [
    (get("pp-none"),),
    (b"PROXY TCP4 203.0.113.9 127.0.0.1 40000 443\n" + get("pp-lf"),),  # LF only
    (b"PROXY TCP4 203.0.113.999 127.0.0.1 40000 443\r\n" + get("pp-bad-address"),),
    (b"PROXY TCP6 203.0.113.9 127.0.0.1 40000 443\r\n" + get("pp-wrong-family"),),
    (b"PROXY TCP4 " + b"1" * 120 + b"\r\n" + get("pp-long"),),
    (b"PROXY TCP4 " + b"1" * 200,),  # no line end within 107 bytes: refused without waiting
    (V2_SIGNATURE + bytes([0x31, 0x11, 0x00, 0x0C]) + bytes(12) + get("pp-v3"),),
    (V2_SIGNATURE + bytes([0x21, 0x11, 0xFF, 0xFF]) + bytes(64),),  # a 64 KiB v2 block
    (V2_SIGNATURE + bytes([0x21, 0x11, 0x00, 0x08]) + bytes(8) + get("pp-short-block"),),
], ids=["none", "lf-only", "bad-address", "wrong-family", "v1-oversized", "v1-unterminated", "v2-version",
        "v2-oversized", "v2-short-block"])
def test_a_missing_or_malformed_header_closes_the_connection(start_sidecar, upstream, pieces):
    sc = start_sidecar(TRUSTED)
    assert_refused(sc, upstream, *pieces)
    assert poll(lambda: refusals(sc, "invalid") == 1, timeout=3)


def test_a_header_split_across_sends_is_assembled(start_sidecar):
    header = v2("203.0.113.77")
    sc = start_sidecar(TRUSTED)
    resp, _ = exchange(sc.port, header[:5], header[5:14], header[14:20], header[20:] + get("pp-split"), pause=0.1)
    assert seen(resp.json(), "X-Forwarded-For") == ["203.0.113.77"]


def test_a_slow_header_is_cut_at_header_timeout_from_accept(start_sidecar, upstream):
    """The header's deadline runs from the accept: bytes trickling in do not extend it."""
    sc = start_sidecar({**TRUSTED, "limits": {"header_timeout": "1s"}})
    started = time.monotonic()
    with rawhttp.Conn(sc.port, timeout=5) as c:
        c.send(b"PROXY TCP4 203.0.113.9 ")
        time.sleep(0.6)
        c.send(b"127.0.0.1 ")
        assert c.wait_closed(4)
    assert 0.9 < time.monotonic() - started < 3.5
    assert upstream.stats()["requests"] == 0
    assert poll(lambda: refusals(sc, "timeout") == 1, timeout=3)


def test_a_peer_outside_trusted_proxies_is_refused_even_with_a_valid_header(start_sidecar, upstream):
    sc = start_sidecar(TRUSTED)
    assert_refused(sc, upstream, v1("203.0.113.9") + get("pp-untrusted"), source="127.0.0.2")
    assert_refused(sc, upstream, get("pp-untrusted-plain"), source="127.0.0.2")
    assert poll(lambda: refusals(sc, "untrusted_peer") == 2, timeout=3)
    assert sc.logged(lambda out: any('"peer":"127.0.0.2"' in line and "PROXY protocol" in line
                                     and '"level":"info"' in line for line in out.splitlines()))


def test_without_proxy_protocol_a_header_is_not_taken_for_one(start_sidecar, upstream):
    """Off (the default), a PROXY line is just a malformed request line: 400, nothing believed."""
    sc = start_sidecar({"trusted_proxies": ["127.0.0.1/32"]})
    resp, _ = exchange(sc.port, v1("203.0.113.9") + get("pp-off"))
    assert resp is not None and resp.status == 400
    assert upstream.stats()["requests"] == 0


def test_a_reload_turns_it_on_for_new_connections(start_sidecar):
    """SIGHUP applies proxy_protocol to connections accepted from then on; one already open
    keeps being served as it began."""
    sc = start_sidecar({"trusted_proxies": ["127.0.0.1/32"]})
    with rawhttp.Conn(sc.port, timeout=5) as held:
        assert held.request("GET", "/echo").status == 200
        sc.config_path.write_text(sc.config_path.read_text() + "proxy_protocol: true\n")
        assert sc.sighup(), "the reload failed"
        # The worker takes the new settings up on its next loop turn.
        assert poll(lambda: exchange(sc.port, get("pp-before-header"))[0] is None, timeout=3)
        resp, _ = exchange(sc.port, v1("203.0.113.4") + get("pp-reloaded"))
        assert seen(resp.json(), "X-Forwarded-For") == ["203.0.113.4"]
        assert seen(held.request("GET", "/echo").json(), "X-Forwarded-For") == ["127.0.0.1"]


# -- over TLS -----------------------------------------------------------------------------------
def test_a_v2_header_then_the_tls_handshake(start_sidecar, tmp_path):
    """The header comes in the clear before the ClientHello; the ClientHello sent in the same
    segment as the header is not lost."""
    ca = TestCA(tmp_path)
    leaf = ca.issue("site")
    port = free_port()
    sc = start_sidecar({**TRUSTED, "public_url": "https://127.0.0.1:%d" % port,
                        "tls": {"cert_file": str(leaf.cert_file), "key_file": str(leaf.key_file)}}, port=port)
    context = ca.client_context()
    for rid, separate in (("pp-tls-apart", True), ("pp-tls-together", False)):
        raw = socket.create_connection(("127.0.0.1", port), timeout=5)
        header = v2("2001:db8::42")
        if separate:
            raw.sendall(header)
        else:
            # Holds the header back until the ClientHello is queued behind it (one segment).
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
            raw.sendall(header)
        with context.wrap_socket(raw, server_hostname="127.0.0.1", do_handshake_on_connect=False) as tls:
            if not separate:
                tls.setblocking(False)
                try:
                    tls.do_handshake()
                except ssl.SSLWantReadError:
                    pass
                tls.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 0)
                tls.setblocking(True)
                tls.settimeout(5)
            tls.do_handshake()
            tls.sendall(get(rid))
            data = b""
            while True:
                piece = tls.recv(65536)
                if not piece:
                    break
                data += piece
        head, _, body = data.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200"), (rid, head)
        assert seen(json.loads(body), "X-Forwarded-For") == ["2001:db8::42"], rid
        entry = access_entry(sc, rid)
        assert entry and entry["client"] == "2001:db8::42", entry


@pytest.mark.parametrize("command", ["run", "check"])
def test_proxy_protocol_without_trusted_proxies_is_a_config_error(start_sidecar, command):
    """Nothing could ever connect: the error names the file, line, column and key."""
    sc = start_sidecar({"proxy_protocol": True}, ready=False, args=[command, "--config", "{config}"])
    assert sc.wait_exit(10) == 1, sc.log_tail()
    sc.stopped = True
    assert re.search(r"sidecar\.yaml:\d+:\d+: proxy_protocol: true with no trusted_proxies", sc.output()), sc.output()


def test_check_shows_proxy_protocol_on_the_listen_line(start_sidecar):
    sc = start_sidecar(TRUSTED, ready=False, args=["check", "--config", "{config}"])
    assert sc.wait_exit(10) == 0, sc.log_tail()
    sc.stopped = True
    assert re.search(r"listen +127\.0\.0\.1:\d+, 1 worker, PROXY protocol from 127\.0\.0\.1/32", sc.output()), sc.output()


# -- haproxy in front ---------------------------------------------------------------------------
EXAMPLE = Path(__file__).resolve().parents[2] / "Examples" / "haproxy-proxy-protocol.cfg"


def render_example(example, replacements):
    """The committed example with its placeholders replaced (each must occur: an example that
    drifts from what is tested fails here)."""
    text = example.read_text()
    for placeholder, value in replacements.items():
        assert placeholder in text, "the example no longer contains %r" % placeholder
        text = text.replace(placeholder, value)
    return text


@pytest.mark.parametrize("send", ["send-proxy-v2", "send-proxy"])
def test_haproxy_in_front(start_sidecar, tmp_path, send):
    """Examples/haproxy-proxy-protocol.cfg: haproxy accepts the client's connection (from
    127.0.0.5) and opens its own to the sidecar (from 127.0.0.1, the trusted proxy): the
    upstream is told 127.0.0.5, with v2 headers and with v1."""
    if not shutil.which("haproxy"):
        if os.environ.get("CI"):
            pytest.fail("CI must run the haproxy tests, but haproxy is not installed")
        pytest.skip("haproxy is not installed (Debian package `haproxy`)")
    sc = start_sidecar(TRUSTED)
    front = free_port()
    cfg = tmp_path / "haproxy.cfg"
    cfg.write_text(render_example(EXAMPLE, {
        "bind :443": "bind 127.0.0.1:%d" % front,
        "10.0.0.5:8443 send-proxy-v2": "127.0.0.1:%d %s" % (sc.port, send),
        "log stdout format raw local0": "nbthread 1",
    }))
    proc = subprocess.Popen(["haproxy", "-f", str(cfg)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        def answer():
            try:
                return exchange(front, get("pp-haproxy"), source="127.0.0.5", timeout=2)[0]
            except OSError:
                return None
        resp = poll(answer, timeout=10)  # haproxy's start-up; 10 s covers a loaded 2-core machine
        assert resp is not None and resp.status == 200
        assert seen(resp.json(), "X-Forwarded-For") == ["127.0.0.5"]
        assert access_entry(sc, "pp-haproxy")["client"] == "127.0.0.5"
        assert refusals(sc, "invalid") == 0
    finally:
        proc.terminate()
        proc.wait(5)


# -- nginx stream in front ----------------------------------------------------------------------
NGINX_STREAM = EXAMPLE.parent / "nginx-stream-proxy-protocol.conf"
STREAM_MODULE = "/usr/lib/nginx/modules/ngx_stream_module.so"


@pytest.fixture
def start_stream_nginx(request, tmp_path):
    """start_stream_nginx(sidecar_port) -> the front port of a real nginx running
    Examples/nginx-stream-proxy-protocol.conf on loopback; stopped after the test, its log
    attached to a failing test's report."""
    started = []

    def start(sidecar_port):
        if not Path(STREAM_MODULE).exists():
            if os.environ.get("CI"):
                pytest.fail("CI must run the nginx stream tests, but libnginx-mod-stream is not installed")
            pytest.skip("nginx's stream module is not installed (Debian package `libnginx-mod-stream`)")
        front = free_port()
        workdir = tmp_path / "nginx-stream"
        workdir.mkdir()
        (workdir / "logs").mkdir()
        text = render_example(NGINX_STREAM, {
            "listen 443;": "listen 127.0.0.1:%d;" % front,
            "10.0.0.5:8443": "127.0.0.1:%d" % sidecar_port,
            # unchanged, but it must occur: the example loads the module from Debian's path
            "load_module %s;" % STREAM_MODULE: "load_module %s;" % STREAM_MODULE,
        })
        nginx = Nginx(workdir, text, front)
        started.append(nginx)
        nginx.wait_ready()
        return front

    yield start
    for nginx in started:
        nginx.stop()
    if getattr(request.node, "_call_failed", False):
        for nginx in started:
            print("--- nginx %s ---\n%s" % (nginx.conf, nginx.log()))


def test_nginx_stream_in_front(start_sidecar, upstream, start_stream_nginx):
    """Examples/nginx-stream-proxy-protocol.conf: nginx accepts the client's connection (from
    127.0.0.5) and opens its own to the sidecar (from 127.0.0.1, the trusted proxy) with a v1
    header: the upstream is told 127.0.0.5, also for the later requests of a kept-alive
    connection. The same client connecting to the sidecar directly, around nginx, is refused,
    and so is a connection from nginx's own address that skips nginx (no header)."""
    sc = start_sidecar(TRUSTED)
    assert_refused(sc, upstream, get("pp-nginx-bypass"), source="127.0.0.5")
    assert_refused(sc, upstream, get("pp-nginx-no-header"))
    assert poll(lambda: refusals(sc, "untrusted_peer") == 1 and refusals(sc, "invalid") == 1, timeout=3)

    front = start_stream_nginx(sc.port)
    resp, _ = exchange(front, get("pp-nginx"), source="127.0.0.5")
    assert resp is not None and resp.status == 200
    assert seen(resp.json(), "X-Forwarded-For") == ["127.0.0.5"]
    entry = access_entry(sc, "pp-nginx")
    assert entry and entry["client"] == "127.0.0.5", entry
    with rawhttp.Conn(front, timeout=5, source="127.0.0.6") as c:
        for _ in range(3):
            assert seen(c.request("GET", "/echo", [("Host", "t")]).json(), "X-Forwarded-For") == ["127.0.0.6"]
    assert refusals(sc, "invalid") == 1 and refusals(sc, "untrusted_peer") == 1


def test_nginx_stream_passes_tls_through(start_sidecar, upstream, start_stream_nginx, tmp_path):
    """nginx forwards the TLS bytes untouched behind its header; the sidecar terminates TLS
    with its own certificate, which the client verifies end to end, and the upstream is told
    the client's address. A TLS client going around nginx is refused before the handshake."""
    ca = TestCA(tmp_path)
    leaf = ca.issue("site")
    port = free_port()
    sc = start_sidecar({**TRUSTED, "public_url": "https://127.0.0.1:%d" % port,
                        "tls": {"cert_file": str(leaf.cert_file), "key_file": str(leaf.key_file)}}, port=port)
    front = start_stream_nginx(sc.port)
    with TLSConn(front, ca.client_context(), source="127.0.0.5") as c:
        resp = c.request("GET", "/echo", [("Host", "t"), ("X-Request-Id", "pp-nginx-tls")])
    assert resp.status == 200
    assert seen(resp.json(), "X-Forwarded-For") == ["127.0.0.5"]
    entry = access_entry(sc, "pp-nginx-tls")
    assert entry and entry["client"] == "127.0.0.5", entry
    requests = upstream.stats()["requests"]
    with pytest.raises((ssl.SSLError, OSError)):
        TLSConn(sc.port, ca.client_context(), source="127.0.0.5", timeout=5).close()
    assert upstream.stats()["requests"] == requests
    assert poll(lambda: refusals(sc, "untrusted_peer") == 1, timeout=3)
