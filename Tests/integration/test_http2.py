"""HTTP/2 for clients: h2c with prior knowledge on the plain listener, each stream an exchange
under every rule of HTTP/1.1, the upstream spoken to in HTTP/1.1 as before."""
import hashlib
import json
import shutil
import subprocess

import pytest

from conftest import access_line, seen
from h2_support import H2Client, H2Response
from native_support import metric



def test_h2c_prior_knowledge_proxies_a_request_to_the_http11_upstream(sidecar):
    c = H2Client(sidecar.port)
    r = c.request("GET", "/echo?x=1", [("x-request-id", "h2-basic"), ("user-agent", "h2-test")])
    assert r.status == 200 and r.ended, (r.status, r.body)
    echo = json.loads(r.body)
    assert (echo["method"], echo["target"], echo["version"]) == ("GET", "/echo?x=1", "HTTP/1.1")
    assert seen(echo, "x-forwarded-host") == ["127.0.0.1"]
    assert seen(echo, "x-request-id") == ["h2-basic"]
    line = access_line(sidecar, "h2-basic")
    assert line["protocol"] == "HTTP/2.0" and line["status"] == 200 and line["method"] == "GET"
    c.close()


def test_many_streams_on_one_connection_each_get_their_own_answer(sidecar):
    c = H2Client(sidecar.port)
    ids = [c.start("GET", "/echo?n=%d" % i) for i in range(20)]
    c.pump(until=lambda: all(c.responses[i].ended for i in ids))
    for n, sid in enumerate(ids):
        r = c.responses[sid]
        assert r.status == 200, (sid, r.status, r.reset)
        assert json.loads(r.body)["target"] == "/echo?n=%d" % n
    c.close()


def test_streams_after_broken_ones_on_one_connection_are_exchanges_of_their_own(sidecar, upstream):
    """A stream's exchange may serve a later stream of the connection once it answered in
    full: nothing of a stream that ended early (a body its content-length contradicts, a
    reset in the middle of an upload, a body the answer did not wait for) may reach the next
    one as the start of a request, and every stream gets its own request id and access line."""
    upstream.reset()
    c = H2Client(sidecar.port)
    short = c.request("POST", "/echo", [("content-length", "10")], body=b"12345")
    assert short.reset is not None and short.status is None, (short.status, short.reset)
    cut = c.start("POST", "/echo", [("content-length", "100")], body=b"GET /smuggled HTTP/1.1\r\n", end=False)
    c.conn.reset_stream(cut)
    c.flush()
    early = c.request("POST", "/a/..;/echo", body=b"x" * 10, end=False)
    assert early.status == 400, (early.status, early.reset)
    for n in range(30):
        body = b"body-%d" % n if n % 2 else None
        r = c.request("POST" if body else "GET", "/echo?n=%d" % n, [("x-request-id", "h2-reuse-%d" % n)], body=body)
        assert r.status == 200 and r.ended, (n, r.status, r.reset)
        echo = json.loads(r.body)
        assert (echo["method"], echo["target"]) == ("POST" if body else "GET", "/echo?n=%d" % n)
        assert seen(echo, "x-request-id") == ["h2-reuse-%d" % n]
        assert echo.get("body", "") == (body or b"").decode(), echo
    for n in range(30):
        assert access_line(sidecar, "h2-reuse-%d" % n)["protocol"] == "HTTP/2.0"
    targets = upstream.stats()["targets"]
    assert not any("smuggled" in t for t in targets), targets
    assert all(sum(t.endswith(" /echo?n=%d" % n) for t in targets) == 1 for n in range(30)), targets
    c.close()


@pytest.mark.deadline(60)
def test_streams_reset_mid_response_and_opened_in_the_same_write_each_get_their_own_answer(sidecar, upstream):
    """The exchanges of streams answered in full serve later streams of the connection: new
    streams opened in the same write that resets others in the middle of their responses must
    each get their own request's answer (method, target, request id, body), and the reset
    ones nothing more."""
    c = H2Client(sidecar.port, timeout=20.0)
    for round in range(4):
        # Downloads the upstream stops sending in the middle of (it waits until the sidecar
        # hangs up), and short answers whose exchanges are then kept for later streams.
        downloads = [c.start("GET", "/bytes?n=1000000&stall_after=%d&stall=30" % (20000 * (k + 1))) for k in range(3)]
        echoes = {c.start("GET", "/echo?round=%d&n=%d" % (round, i), [("x-request-id", "h2-pool-%d-%d" % (round, i))]): i
                  for i in range(6)}
        assert c.pump(timeout=15.0, until=lambda: all(c.responses[s].ended for s in echoes)
                      and all(c.responses[s].status == 200 and c.responses[s].body for s in downloads))
        for sid, i in echoes.items():
            echo = json.loads(c.responses[sid].body)
            assert echo["target"] == "/echo?round=%d&n=%d" % (round, i), (sid, echo["target"])
        # One write: the downloads reset mid-body, then new streams, half of them with a body
        # (with and without a content-length: forwarded as is, or chunked).
        for sid in downloads:
            c.conn.reset_stream(sid, error_code=8)
        opened = {}
        for i in range(8):
            body = b"round-%d-body-%d" % (round, i) if i % 2 else None
            sid = c.conn.get_next_available_stream_id()
            fields = [(":method", "POST" if body else "GET"), (":path", "/echo?after=%d&n=%d" % (round, i)),
                      (":scheme", "http"), (":authority", "127.0.0.1"), ("x-request-id", "h2-pool-after-%d-%d" % (round, i))]
            if body is not None and i % 4 == 1:
                fields.append(("content-length", str(len(body))))
            c.conn.send_headers(sid, fields, end_stream=body is None)
            if body is not None:
                c.conn.send_data(sid, body, end_stream=True)
            c.responses[sid] = H2Response()
            opened[sid] = (i, body)
        c.flush()
        reset_seen = {sid: len(c.responses[sid].body) for sid in downloads}
        assert c.pump(timeout=15.0, until=lambda: all(c.responses[s].ended or c.responses[s].reset is not None
                                                     for s in opened))
        for sid, (i, body) in opened.items():
            r = c.responses[sid]
            assert r.status == 200 and r.ended, (sid, r.status, r.reset)
            echo = json.loads(r.body)
            assert (echo["method"], echo["target"]) == ("POST" if body else "GET", "/echo?after=%d&n=%d" % (round, i))
            assert seen(echo, "x-request-id") == ["h2-pool-after-%d-%d" % (round, i)]
            assert echo.get("body", "") == (body or b"").decode(), echo
        for sid in downloads:
            r = c.responses[sid]
            assert not r.ended and len(r.body) < 1000000, (sid, len(r.body), reset_seen[sid])
    c.close()


def test_requests_are_counted_by_the_protocol_the_client_spoke(start_sidecar):
    sc = start_sidecar()
    c = H2Client(sc.port)
    for n in range(3):
        assert c.request("GET", "/echo?n=%d" % n).status == 200
    c.close()
    assert sc.request("GET", "/echo").status == 200
    assert metric(sc, 'sidecar_requests_by_protocol_total{protocol="http2"} 3')
    assert metric(sc, 'sidecar_requests_by_protocol_total{protocol="http1"} 1')


@pytest.mark.parametrize("size", [0, 1, 70_000, 1_000_000])
def test_request_bodies_reach_the_upstream_whole(sidecar, size):
    body = bytes((i * 7) % 251 for i in range(size))
    c = H2Client(sidecar.port)
    r = c.request("POST", "/echo", [("content-type", "application/octet-stream")], body=body)
    assert r.status == 200, (r.status, r.body[:200])
    echo = json.loads(r.body)
    assert echo["body_len"] == size
    assert echo["body_sha256"] == hashlib.sha256(body).hexdigest()
    c.close()


def test_a_body_with_content_length_is_passed_as_is(sidecar):
    c = H2Client(sidecar.port)
    r = c.request("POST", "/echo", [("content-length", "5")], body=b"hello")
    echo = json.loads(r.body)
    assert r.status == 200 and echo["body_len"] == 5
    assert seen(echo, "content-length") == ["5"] and not seen(echo, "transfer-encoding")
    c.close()


@pytest.mark.parametrize("target,size", [("/bytes?n=300000", 300000), ("/chunked?n=200000&size=7000", 200000),
                                         ("/eof?n=100000", 100000), ("/status?code=204", 0)])
def test_response_bodies_of_every_framing_arrive_whole(sidecar, target, size):
    c = H2Client(sidecar.port)
    r = c.request("GET", target)
    assert r.ended and r.reset is None, (r.status, r.reset)
    assert len(r.body) == size
    assert r.header("connection") is None and r.header("transfer-encoding") is None
    c.close()


def test_hop_by_hop_fields_of_the_upstream_never_reach_an_h2_client(sidecar):
    c = H2Client(sidecar.port)
    r = c.request("GET", "/hop")
    assert r.status == 200
    names = {n for n, _ in r.headers}
    assert not names & {"connection", "keep-alive", "transfer-encoding", "upgrade", "proxy-connection"}
    c.close()


def test_curl_speaks_h2c_with_prior_knowledge(sidecar):
    curl = shutil.which("curl")
    assert curl, "curl is installed by the test command"
    out = subprocess.run([curl, "-sS", "--http2-prior-knowledge", "-o", "/dev/null", "-w", "%{http_version} %{http_code}",
                          "http://127.0.0.1:%d/echo" % sidecar.port], capture_output=True, text=True, timeout=10)
    assert out.stdout == "2 200", (out.stdout, out.stderr)


def test_http11_still_works_beside_h2c(sidecar):
    r = sidecar.request("GET", "/echo")
    assert r.status == 200


def test_http2_false_keeps_the_listener_http11_only(start_sidecar):
    sc = start_sidecar({"http2": False})
    c = H2Client(sc.port)
    c.pump(timeout=2, until=lambda: c.closed)
    assert c.closed or c.goaway is not None
    assert sc.request("GET", "/echo").status == 200
