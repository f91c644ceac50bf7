"""The trust boundary per HTTP/2 stream: sessions from split cookie crumbs, identity headers
stripped in every spelling and injected, bearer tokens removed, `..;` refused, forwarding
fields from untrusted peers dropped, the sign-in flow itself, and RFC 9113's malformed
requests as stream errors — over h2c and over h2 negotiated by ALPN."""
import json
import shutil
import ssl
import subprocess
from urllib.parse import urlencode, urlsplit

import pytest

from conftest import poll, seen
from h2_support import H2Client
from test_tls import ca, tls_site  # noqa: F401 (fixtures)

HTML = ("accept", "text/html,application/xhtml+xml")
JSON = ("accept", "application/json")
PROTOCOL_ERROR = 1


def cookie_of(sc_browser):
    name, value = sc_browser.session_cookie
    return name, value


def test_a_session_in_split_cookie_crumbs_is_read_and_the_identity_injected(signed_in):
    sc, _, b = signed_in
    name, value = b.session_cookie
    c = H2Client(sc.port)
    r = c.request("GET", "/private", [HTML, ("cookie", "theme=dark"), ("cookie", "%s=%s" % (name, value)),
                                      ("cookie", "lang=en")])
    assert r.status == 200, (r.status, r.body[:300])
    e = json.loads(r.body)
    assert seen(e, "X-Auth-Email") == ["maria.ruiz@example.com"], e["headers"]
    forwarded = "; ".join(seen(e, "cookie"))
    assert "theme=dark" in forwarded and "lang=en" in forwarded and value not in forwarded, forwarded
    c.close()


FORGED = [("x-auth-email", "evil@example.com"), ("x-auth-user-id", "evil"), ("x_auth_email", "evil@example.com"),
          ("x-auth-name", "evil"), ("x-auth-email-verified", "evil")]


def test_forged_identity_headers_are_removed_and_replaced(signed_in):
    sc, _, b = signed_in
    name, value = b.session_cookie
    c = H2Client(sc.port)
    r = c.request("GET", "/private", [HTML, ("cookie", "%s=%s" % (name, value))] + FORGED)
    e = json.loads(r.body)
    assert seen(e, "X-Auth-Email") == ["maria.ruiz@example.com"], e["headers"]
    assert "evil" not in json.dumps(e["headers"])
    r = c.request("GET", "/pub/x", FORGED)
    e = json.loads(r.body)
    assert seen(e, "X-Auth-Email") == [] and seen(e, "X-Auth-User-Id") == [], e["headers"]
    c.close()


@pytest.mark.parametrize("name", ["X-Auth-Email", "x-Auth-email", "Cookie", "HOST"])
def test_a_field_name_with_uppercase_is_a_stream_error(signed_in, name, upstream):
    sc, _, _ = signed_in
    upstream.reset()
    c = H2Client(sc.port)
    r = c.request("GET", "/pub/x", [(name, "evil")])
    assert r.reset == PROTOCOL_ERROR and r.status is None, (r.status, r.reset)
    assert c.request("GET", "/pub/ok").status == 200  # only the stream, not the connection
    assert upstream.stats()["targets"] == ["GET /pub/ok"]
    c.close()


@pytest.mark.parametrize("field", [("connection", "keep-alive"), ("transfer-encoding", "chunked"), ("upgrade", "h2c"),
                                   ("keep-alive", "5"), ("proxy-connection", "x"), ("te", "gzip")])
def test_connection_specific_fields_are_stream_errors(sidecar, upstream, field):
    upstream.reset()
    c = H2Client(sidecar.port)
    r = c.request("GET", "/echo", [field])
    assert r.reset == PROTOCOL_ERROR, (field, r.status, r.reset)
    assert upstream.stats()["requests"] == 0
    c.close()


def test_te_trailers_is_allowed_and_not_forwarded(sidecar):
    c = H2Client(sidecar.port)
    r = c.request("GET", "/echo", [("te", "trailers")])
    assert r.status == 200 and seen(json.loads(r.body), "te") == []


@pytest.mark.parametrize("fields", [
    [(":method", "GET"), (":scheme", "http"), (":authority", "x")],  # no :path
    [(":method", "GET"), (":path", "/echo"), (":authority", "x")],  # no :scheme
    [(":method", "GET"), (":path", "/echo"), (":scheme", "http"), (":authority", "x"), (":path", "/other")],
    [(":method", "GET"), (":path", "/echo"), (":scheme", "http"), (":authority", "x"), (":status", "200")],
    [(":method", "GET"), (":path", "echo"), (":scheme", "http"), (":authority", "x")],
    [(":method", "CONNECT"), (":authority", "example.com:443")],
    [(":method", "GET"), (":path", "/echo"), (":scheme", "http"), (":authority", "a"), ("host", "b")],
    [(":method", "GET"), ("x", "1"), (":path", "/echo"), (":scheme", "http"), (":authority", "a")],
])
def test_pseudo_header_misuse_is_a_stream_error(sidecar, upstream, fields):
    upstream.reset()
    c = H2Client(sidecar.port)
    sid = c.conn.get_next_available_stream_id()
    c.conn.send_headers(sid, fields, end_stream=True)
    c.flush()
    c.responses[sid] = r = type(c.responses.get(0, None) or __import__("h2_support").H2Response())()
    c.pump(until=lambda: r.ended or r.reset is not None or c.closed)
    assert r.status is None and (r.reset == PROTOCOL_ERROR or c.goaway is not None), (fields, r.status, r.reset)
    assert upstream.stats()["requests"] == 0


def test_a_content_length_the_data_contradicts_is_a_stream_error(sidecar, upstream):
    upstream.reset()
    c = H2Client(sidecar.port)
    r = c.request("POST", "/echo", [("content-length", "10")], body=b"12345")
    assert r.reset == PROTOCOL_ERROR or (r.status is None and c.closed), (r.status, r.reset)
    c2 = H2Client(sidecar.port)
    r = c2.request("POST", "/echo", [("content-length", "3")], body=b"12345")
    assert r.status != 200 and (r.reset is not None or c2.closed), (r.status, r.reset)


def test_a_bearer_session_token_is_removed_on_public_paths(signed_in):
    sc, _, b = signed_in
    _, token = b.session_cookie
    c = H2Client(sc.port)
    e = json.loads(c.request("GET", "/pub/x", [("authorization", "Bearer " + token)]).body)
    assert seen(e, "Authorization") == [] and seen(e, "X-Auth-User-Id") == [], e["headers"]
    e = json.loads(c.request("GET", "/pub/x", [("authorization", "Bearer upstream-token")]).body)
    assert seen(e, "Authorization") == ["Bearer upstream-token"]


@pytest.mark.parametrize("target", ["/pub/..;/private", "/pub/%2e%2e;/private", "/..;/pub/x"])
def test_a_dot_segment_with_path_parameters_is_refused(start_auth_sidecar, upstream, target):
    sc, _ = start_auth_sidecar()
    upstream.reset()
    c = H2Client(sc.port)
    assert c.request("GET", target, [JSON]).status == 400
    assert upstream.stats()["requests"] == 0


def test_forwarding_fields_from_an_untrusted_peer_are_removed(sidecar):
    c = H2Client(sidecar.port)
    fields = [("forwarded", "for=1.2.3.4"), ("x-forwarded-for", "1.2.3.4"), ("x-real-ip", "1.2.3.4"),
              ("x-forwarded-host", "evil")]
    e = json.loads(c.request("GET", "/echo", fields).body)
    assert seen(e, "forwarded") == [] and seen(e, "x-real-ip") == []
    assert seen(e, "x-forwarded-for") == ["127.0.0.1"] and seen(e, "x-forwarded-host") == ["127.0.0.1"]


def test_unauthenticated_requests_get_the_sign_in_redirect_or_401(start_auth_sidecar):
    sc, _ = start_auth_sidecar()
    c = H2Client(sc.port)
    r = c.request("GET", "/private", [HTML])
    assert r.status == 302 and r.header("location").startswith("/.auth/login?rd="), (r.status, r.header("location"))
    r = c.request("GET", "/api/x", [JSON])
    assert r.status == 401 and r.header("content-type").startswith("application/json")


def test_the_whole_sign_in_flow_runs_over_h2(start_auth_sidecar, browser):
    """/login → Apple → the cross-site form_post callback → 303 with the session cookie, every
    step of ours over HTTP/2."""
    sc, apple = start_auth_sidecar()
    c = H2Client(sc.port)
    r = c.request("GET", "/.auth/login?rd=%2Fprivate", [HTML])
    assert r.status == 302, (r.status, r.body[:300])
    login_cookies = [v.split(";", 1)[0] for v in r.header_all("set-cookie")]
    b = browser(sc, apple)
    fields, _ = b.authorize(urlsplit(r.header("location")))
    body = urlencode(list(fields.items())).encode()
    r = c.request("POST", "/.auth/callback", [HTML, ("content-type", "application/x-www-form-urlencoded"),
                                              ("origin", "https://appleid.apple.com")] +
                  [("cookie", v) for v in login_cookies], body=body)
    assert r.status == 303 and r.header("location") == "/private", (r.status, r.body[:300])
    session = [v.split(";", 1)[0] for v in r.header_all("set-cookie") if "login" not in v.split("=", 1)[0]]
    assert session
    r = c.request("GET", "/private", [HTML] + [("cookie", v) for v in session])
    assert r.status == 200 and seen(json.loads(r.body), "X-Auth-Email") == ["maria.ruiz@example.com"]
    line = poll(lambda: next((json.loads(x) for x in sc.output().splitlines()
                              if x.startswith("{") and '"path":"/.auth/callback"' in x), None))
    assert line and line["protocol"] == "HTTP/2.0"


def test_an_endpoint_body_over_its_cap_is_refused(start_auth_sidecar):
    sc, _ = start_auth_sidecar()
    c = H2Client(sc.port)
    r = c.request("POST", "/.auth/callback", [("content-type", "application/x-www-form-urlencoded"),
                                              ("content-length", str(10 << 20))], body=b"a" * 1000, end=False)
    assert r.status == 413, (r.status, r.reset)


# -- h2 over TLS (ALPN) ------------------------------------------------------------------------
def h2_context(ca):
    context = ca.client_context()
    context.set_alpn_protocols(["h2", "http/1.1"])
    return context


def test_alpn_offers_h2_then_http11_on_the_tls_listener(tls_site, ca):
    sc, _, _ = tls_site()
    c = H2Client(sc.port, tls_context=h2_context(ca))
    r = c.request("GET", "/pub/x", scheme="https")
    assert r.status == 200
    assert seen(json.loads(r.body), "x-forwarded-proto") == ["https"]
    context = ca.client_context()
    context.set_alpn_protocols(["http/1.1"])
    import socket
    with context.wrap_socket(socket.create_connection(("127.0.0.1", sc.port), timeout=5), server_hostname="localhost") as s:
        assert s.selected_alpn_protocol() == "http/1.1"


def test_curl_negotiates_h2_over_tls(tls_site, ca):
    sc, _, _ = tls_site()
    out = subprocess.run([shutil.which("curl"), "-sS", "--http2", "--cacert", str(ca.cert_file), "-o", "/dev/null",
                          "-w", "%{http_version} %{http_code}", "https://localhost:%d/pub/x" % sc.port],
                         capture_output=True, text=True, timeout=10)
    assert out.stdout == "2 200", (out.stdout, out.stderr)


def test_tls_with_http2_off_negotiates_http11_only(tls_site, ca):
    sc, _, _ = tls_site({"http2": False})
    import socket
    with h2_context(ca).wrap_socket(socket.create_connection(("127.0.0.1", sc.port), timeout=5),
                                    server_hostname="localhost") as s:
        assert s.selected_alpn_protocol() == "http/1.1"


def test_sighup_with_a_new_certificate_sends_h2_clients_goaway(tls_site, ca):
    """Open h2 connections would keep the old certificate indefinitely: a reload with a new one
    sends them GOAWAY(NO_ERROR) once their streams are done; new connections get the new one."""
    import signal
    sc, _, leaf = tls_site()
    c = H2Client(sc.port, tls_context=h2_context(ca))
    assert c.request("GET", "/pub/x", scheme="https").status == 200
    fresh = ca.issue("site2")
    leaf.cert_file.write_bytes(fresh.cert_file.read_bytes())
    leaf.key_file.write_bytes(fresh.key_file.read_bytes())
    sc.signal(signal.SIGHUP)
    goaway = c.wait_goaway(timeout=5)
    assert goaway is not None and goaway.error_code == 0, goaway
    c2 = H2Client(sc.port, tls_context=h2_context(ca))
    from cryptography import x509
    assert x509.load_der_x509_certificate(c2.sock.getpeercert(binary_form=True)).serial_number == fresh.cert.serial_number
    assert c2.request("GET", "/pub/x", scheme="https").status == 200


def test_a_path_byte_outside_the_http11_grammar_is_refused_as_over_http11(sidecar, upstream):
    """HTTP/2 lets more bytes through in :path than HTTP/1.1's request-target grammar; the
    stream's head goes through the same strict parser, so it gets the same 400."""
    upstream.reset()
    c = H2Client(sidecar.port)
    assert c.request("GET", "/x\u00bc1").status == 400
    assert c.request("GET", "/ok").status == 200
    assert upstream.stats()["targets"] == ["GET /ok"]
