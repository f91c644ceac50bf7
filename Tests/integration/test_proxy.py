"""Proxying end to end: the real sidecar in front of the real upstream process."""
import hashlib
import os
import re
import select
import socket
import threading
import time

import pytest

import rawhttp
from conftest import free_port, poll
from upstream import pattern

MiB = 1 << 20
REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,128}$")


def connected(sock):
    """Whether a non-blocking connect has completed (its handshake is done)."""
    _, writable, _ = select.select([], [sock], [], 0)
    return bool(writable) and sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0


def seen(echo, name):
    """Values of header `name` (case-insensitive) as the upstream received them."""
    return [v for n, v in echo["headers"] if n.lower() == name.lower()]


def seen_names(echo):
    return [n for n, _ in echo["headers"]]


class RssSampler:
    """Samples the sidecar's RSS every 20 ms in a thread; .peak_growth_kib after exit."""

    def __init__(self, sidecar):
        self.sidecar, self.stop, self.peak = sidecar, threading.Event(), 0

    def run(self):
        while not self.stop.wait(0.02):
            try:
                self.peak = max(self.peak, self.sidecar.rss_kib())
            except (FileNotFoundError, ProcessLookupError):
                return

    def __enter__(self):
        self.base = self.sidecar.rss_kib()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()
        self.peak_growth_kib = max(0, self.peak - self.base)


# -- request headers -------------------------------------------------------------------------
def test_forwarded_headers_are_replaced_for_untrusted_peer(sidecar):
    e = sidecar.request("GET", "/echo", [
        ("X-Forwarded-For", "1.2.3.4"), ("X-Forwarded-Proto", "https"),
        ("X-Forwarded-Host", "evil.example")], host="app.test").json()
    assert seen(e, "X-Forwarded-For") == ["127.0.0.1"]
    assert seen(e, "X-Forwarded-Proto") == ["http"]
    assert seen(e, "X-Forwarded-Host") == ["app.test"]


def test_forwarded_headers_from_peer_outside_trusted_proxies_are_replaced(start_sidecar):
    sc = start_sidecar({"trusted_proxies": ["10.0.0.0/8", "::1/128"]})
    e = sc.request("GET", "/echo", [("X-Forwarded-For", "1.2.3.4"),
                                    ("X-Forwarded-Proto", "https")], host="app.test").json()
    assert seen(e, "X-Forwarded-For") == ["127.0.0.1"]
    assert seen(e, "X-Forwarded-Proto") == ["http"]


def test_forwarded_headers_from_trusted_proxy_are_honoured(start_sidecar):
    sc = start_sidecar({"trusted_proxies": ["127.0.0.0/8"]})
    e = sc.request("GET", "/echo", [
        ("X-Forwarded-For", "1.2.3.4"), ("X-Forwarded-Proto", "https"),
        ("X-Forwarded-Host", "public.example")], host="app.test").json()
    assert ", ".join(seen(e, "X-Forwarded-For")) == "1.2.3.4, 127.0.0.1"
    assert seen(e, "X-Forwarded-Proto") == ["https"]
    assert seen(e, "X-Forwarded-Host") == ["public.example"]
    e = sc.request("GET", "/echo", [("X-Forwarded-For", "1.1.1.1"),
                                    ("X-Forwarded-For", "2.2.2.2")], host="app.test").json()
    assert ", ".join(seen(e, "X-Forwarded-For")) == "1.1.1.1, 2.2.2.2, 127.0.0.1"
    e = sc.request("GET", "/echo", host="app.test").json()
    assert seen(e, "X-Forwarded-For") == ["127.0.0.1"]
    assert seen(e, "X-Forwarded-Proto") == ["http"]
    assert seen(e, "X-Forwarded-Host") == ["app.test"]


@pytest.mark.parametrize("rid", ["abc-123", "A.b_C-9", "x" * 128])
def test_valid_request_id_is_kept(sidecar, rid):
    e = sidecar.request("GET", "/echo", [("X-Request-Id", rid)]).json()
    assert seen(e, "X-Request-Id") == [rid]


@pytest.mark.parametrize("rid", ["has space", "semi;colon", "x" * 129, "", "üñí",
                                 "<script>"])
def test_invalid_request_id_is_replaced(sidecar, rid):
    e = sidecar.request("GET", "/echo", [("X-Request-Id", rid)]).json()
    values = seen(e, "X-Request-Id")
    assert len(values) == 1 and values[0] != rid and REQUEST_ID.match(values[0]), values


def test_request_id_is_generated_when_absent(sidecar):
    ids = [seen(sidecar.request("GET", "/echo").json(), "X-Request-Id") for _ in range(3)]
    assert all(len(v) == 1 and REQUEST_ID.match(v[0]) for v in ids), ids
    assert len({v[0] for v in ids}) == 3, "generated request ids repeat: %s" % ids


def test_host_is_the_upstreams_unless_preserve_host(start_sidecar, upstream):
    sc = start_sidecar()
    e = sc.request("GET", "/echo", host="app.test").json()
    assert seen(e, "Host") == ["127.0.0.1:%d" % upstream.port]
    sc = start_sidecar({"preserve_host": True})
    e = sc.request("GET", "/echo", host="app.test").json()
    assert seen(e, "Host") == ["app.test"]


def test_hop_by_hop_request_headers_are_removed(sidecar):
    e = sidecar.request("GET", "/echo", [
        ("Connection", "keep-alive, X-Custom-Hop"), ("X-Custom-Hop", "secret"),
        ("Keep-Alive", "timeout=5"), ("TE", "trailers"), ("Trailer", "X-T"),
        ("Upgrade", "foo/1"), ("Proxy-Authorization", "Basic eDp5"),
        ("Proxy-Connection", "keep-alive"), ("Proxy-Anything", "1"), ("X-Keep", "kept")]).json()
    names = {n.lower() for n in seen_names(e)}
    for gone in ("x-custom-hop", "keep-alive", "te", "trailer", "upgrade",
                 "proxy-authorization", "proxy-connection", "proxy-anything"):
        assert gone not in names, "%s reached the upstream: %s" % (gone, e["headers"])
    assert seen(e, "X-Keep") == ["kept"]
    for value in seen(e, "Connection"):
        tokens = {t.strip().lower() for t in value.split(",")}
        assert tokens <= {"keep-alive", "close"}, value


def test_hop_by_hop_response_headers_are_removed(sidecar):
    r = sidecar.request("GET", "/hop")
    assert r.status == 200 and r.body == b"hop"
    names = {n.lower() for n, _ in r.headers}
    for gone in ("x-resp-hop", "proxy-resp", "upgrade"):
        assert gone not in names, r.headers
    assert r.header("Keep-Alive") != "timeout=99"
    assert "x-resp-hop" not in (r.header("Connection") or "").lower()
    assert r.header("X-Resp-Keep") == "kept"


IDENTITY = ["X-Auth-User-Id", "X-Auth-Email", "X-Auth-Email-Verified",
            "X-Auth-Private-Email", "X-Auth-Name", "X-Auth-Assertion"]


def spellings(name):
    return [name, name.lower(), name.upper(), name.replace("-", "_"),
            name.lower().replace("-", "_"), name]  # the last one: a duplicate


def squash(name):
    return name.lower().replace("_", "-")


def test_identity_headers_are_stripped_in_every_spelling(sidecar):
    sent = [(s, "forged") for name in IDENTITY for s in spellings(name)]
    e = sidecar.request("GET", "/echo", sent + [("X-Auth-Other", "kept")]).json()
    leaked = [n for n in seen_names(e) if squash(n) in {squash(i) for i in IDENTITY}]
    assert not leaked, "identity headers reached the upstream: %s" % leaked
    assert seen(e, "X-Auth-Other") == ["kept"]


def test_configured_header_names_are_stripped(start_sidecar):
    sc = start_sidecar({"headers": {"user_id": "X-User", "strip": ["X-Internal-Secret"]}})
    e = sc.request("GET", "/echo", [
        ("X-User", "forged"), ("x-user", "forged"), ("X_User", "forged"),
        ("X-Internal-Secret", "s"), ("x-internal-secret", "s"), ("X-INTERNAL-SECRET", "s"),
        ("X-Other", "kept")]).json()
    names = {squash(n) for n in seen_names(e)}
    assert "x-user" not in names and "x-internal-secret" not in names, e["headers"]
    assert seen(e, "X-Other") == ["kept"]


# -- bodies ----------------------------------------------------------------------------------
def test_100_mib_response_streams_to_a_slow_client_in_bounded_memory(sidecar):
    n = 100 * MiB
    expected = hashlib.sha256(pattern(0, n)).hexdigest()
    digest = hashlib.sha256()
    got = 0

    def slow_sink(piece):
        nonlocal got
        before = got
        got += len(piece)
        digest.update(piece)
        if got // (512 * 1024) != before // (512 * 1024):
            time.sleep(0.005)

    with RssSampler(sidecar) as rss, sidecar.conn(rcvbuf=64 * 1024, timeout=30) as c:
        r = c.request("GET", "/bytes?n=%d" % n, sink=slow_sink)
        assert r.status == 200 and r.body_len == n
        assert digest.hexdigest() == expected, "response body corrupted in transit"
        assert c.request("GET", "/echo").status == 200  # connection still usable
    assert rss.peak_growth_kib < 64 * 1024, "RSS grew %d KiB" % rss.peak_growth_kib


@pytest.mark.parametrize("framing", ["length", "chunked"])
def test_50_mib_upload_is_streamed(sidecar, framing):
    data = os.urandom(50 * MiB)
    if framing == "length":
        headers, body = [("Content-Length", str(len(data)))], data
    else:
        headers, body = [("Transfer-Encoding", "chunked")], rawhttp.chunked(data, 256 * 1024)
    with RssSampler(sidecar) as rss, sidecar.conn(timeout=30) as c:
        c.send(rawhttp.build_request("POST", "/echo", headers))
        for i in range(0, len(body), MiB):
            c.send(body[i:i + MiB])
        r = c.read_response()
    assert r.status == 200
    e = r.json()
    assert e["body_len"] == len(data)
    assert e["body_sha256"] == hashlib.sha256(data).hexdigest()
    assert rss.peak_growth_kib < 64 * 1024, "RSS grew %d KiB" % rss.peak_growth_kib


def test_chunked_request_and_chunked_response(sidecar):
    data = os.urandom(300000)
    with sidecar.conn() as c:
        r = c.request("POST", "/echo", [("Transfer-Encoding", "chunked")],
                      rawhttp.chunked(data, 7000))
        assert r.status == 200
        assert r.json()["body_sha256"] == hashlib.sha256(data).hexdigest()
        r = c.request("GET", "/chunked?n=1000000&size=3000")
        assert r.status == 200 and r.body == pattern(0, 1000000)
        r = c.request("GET", "/chunked?n=0")
        assert r.status == 200 and r.body == b""
        assert c.request("GET", "/echo").status == 200


def test_close_delimited_response_reaches_client_whole(sidecar):
    with sidecar.conn() as c:
        r = c.request("GET", "/eof?n=200000")
        assert r.status == 200 and r.body == pattern(0, 200000)


def test_bodiless_responses_do_not_confuse_keepalive(sidecar):
    with sidecar.conn() as c:
        r = c.request("HEAD", "/bytes?n=1000")
        assert r.status == 200 and r.header("Content-Length") == "1000"
        r = c.request("GET", "/status?code=204")
        assert r.status == 204
        r = c.request("GET", "/status?code=304")
        assert r.status == 304
        r = c.request("GET", "/bytes?n=10")
        assert r.status == 200 and r.body == pattern(0, 10)


# -- connections -----------------------------------------------------------------------------
def test_keepalive_on_both_sides(sidecar, upstream):
    with sidecar.conn() as c:
        for i in range(20):
            assert c.request("GET", "/echo?i=%d" % i).status == 200
    for i in range(10):  # new client connections reuse the pooled upstream connection
        assert sidecar.request("GET", "/echo?j=%d" % i).status == 200
    stats = upstream.stats()
    assert stats["requests"] == 30
    assert stats["connections"] == 1, "upstream connections: %d" % stats["connections"]


def test_a_burst_wider_than_a_small_idle_pool_is_served_again_on_the_same_upstream_connections(start_sidecar, upstream):
    """160 requests at once, twice: the second burst finds the first one's upstream
    connections idle in the pool and opens none (an idle pool of 128 closed the rest after
    each burst, so that every burst reconnected: 9 system calls a request under load)."""
    from concurrent.futures import ThreadPoolExecutor
    sc = start_sidecar({"workers": 1})

    def burst():
        with ThreadPoolExecutor(160) as pool:
            statuses = list(pool.map(lambda i: sc.request("GET", "/slow?delay=1&i=%d" % i, timeout=30).status,
                                     range(160)))
        assert statuses == [200] * 160

    upstream.reset()
    burst()
    first = upstream.stats()["connections"]
    assert first > 128, "the first burst did not hold more than 128 upstream connections at once: %d" % first
    upstream.reset()
    burst()
    assert upstream.stats()["connections"] == 0, upstream.stats()


def test_an_idle_upstream_connection_is_closed_after_upstream_idle_timeout(start_sidecar, upstream):
    sc = start_sidecar({"workers": 1, "upstream_idle_timeout": "1s"})
    kept = start_sidecar({"workers": 1})
    before = upstream.stats()["open_connections"]
    assert sc.request("GET", "/echo").status == 200 and kept.request("GET", "/echo").status == 200
    assert upstream.stats()["open_connections"] == before + 2
    started = time.monotonic()
    stats = upstream.wait_for(lambda s: s["open_connections"] == before + 1, timeout=5)
    waited = time.monotonic() - started
    assert stats["open_connections"] == before + 1, stats
    assert waited >= 0.8, "closed after %.2f s, before its 1 s" % waited
    time.sleep(0.5)  # the default (60 s) keeps the other sidecar's
    assert upstream.stats()["open_connections"] == before + 1
    assert sc.request("GET", "/echo").status == 200  # and a new request opens a new one


def test_upstream_closing_after_response_causes_no_502(sidecar, upstream):
    with sidecar.conn() as c:
        for i in range(30):
            r = c.request("GET", "/close")
            assert r.status == 200 and r.body == b"closing", (i, r.status)
            r = c.request("POST", "/echo", body=b"after close")
            assert r.status == 200 and r.json()["body"] == "after close", (i, r.status)


def test_pooled_connection_closed_by_upstream_while_idle_is_not_reused(sidecar, upstream):
    """The upstream closes its side 0.1 s after answering; a POST (not retryable) sent later
    must not be written into that dead pooled connection."""
    with sidecar.conn() as c:
        for i in range(5):
            assert c.request("GET", "/close?linger=0.1").status == 200
            # The upstream closes 0.1 s after answering; 5 s covers a loaded 2-core machine
            # (sent earlier, the POST below would race that close instead of testing it).
            stats = upstream.wait_for(lambda s: s["open_connections"] == 0, timeout=5)
            assert stats["open_connections"] == 0, stats
            r = c.request("POST", "/echo", body=b"not retryable")
            assert r.status == 200 and r.json()["body"] == "not retryable", (i, r.status)


def test_client_connection_close_is_honoured(sidecar):
    with sidecar.conn() as c:
        r = c.request("GET", "/echo", [("Connection", "close")])
        assert r.status == 200
        assert c.wait_closed(5), "connection kept open after Connection: close"  # at once; 5 s of noise
    with sidecar.conn() as c:
        c.send(b"GET /echo HTTP/1.0\r\nHost: test.local\r\n\r\n")
        r = c.read_response()
        assert r.status == 200 and r.json()["target"] == "/echo"
        assert c.wait_closed(5), "HTTP/1.0 connection without keep-alive left open"  # as above


def test_expect_100_continue(sidecar):
    with sidecar.conn(timeout=5) as c:  # 100 Continue comes at once (not after a body wait); 5 s of noise
        c.send(rawhttp.build_request("POST", "/echo", [("Content-Length", "5"),
                                                       ("Expect", "100-continue")]))
        interim = c.read_response(skip_interim=False)
        assert interim.status == 100, "no 100 Continue for Expect: 100-continue"
        c.send(b"hello")
        r = c.read_response()
        assert r.status == 200 and r.json()["body"] == "hello"


def test_upstream_down_is_502_quickly(start_sidecar):
    sc = start_sidecar({"upstream": "http://127.0.0.1:%d" % free_port()})
    for _ in range(3):
        t0 = time.monotonic()
        r = sc.request("GET", "/echo")
        assert r.status == 502
        # A refused connect fails at once: 3 s of noise for a loaded 2-core machine, still
        # short of the 5 s upstream_connect_timeout a hanging attempt would wait.
        assert time.monotonic() - t0 < 3.0
        assert 0 < len(r.body) < 4096


def test_unanswered_upstream_connect_gives_up_after_connect_timeout(start_sidecar):
    """A listener whose accept queue is full drops SYNs: connecting to it hangs."""
    blackhole = socket.socket()
    blackhole.bind(("127.0.0.1", 0))
    blackhole.listen(0)
    fillers = []
    try:
        for _ in range(3):
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex(blackhole.getsockname())
            fillers.append(s)
        # The accept queue is full once a filler's handshake has completed: wait for that
        # rather than for a fixed time (a connect of the sidecar's that got in first would be
        # answered by no one and time out as upstream_timeout instead).
        assert poll(lambda: any(connected(s) for s in fillers), timeout=5), "no filler connected"
        sc = start_sidecar({"upstream": "http://127.0.0.1:%d" % blackhole.getsockname()[1],
                            "upstream_connect_timeout": "1s"})
        t0 = time.monotonic()  # before the request: the connect starts later
        r = sc.request("GET", "/echo")
        elapsed = time.monotonic() - t0
        assert r.status in (502, 504), r.status
        # Promised: upstream_connect_timeout 1 s is a minimum; +3 s covers a loaded 2-core machine.
        assert 1.0 <= elapsed <= 4.0, elapsed
    finally:
        for s in fillers:
            s.close()
        blackhole.close()


def test_slow_upstream_does_not_hold_up_other_clients(sidecar, upstream):
    with sidecar.conn() as slow:
        slow.send(rawhttp.build_request("GET", "/slow?delay=6"))
        # Only once the slow request is at the upstream is anything waiting on it.
        stats = upstream.wait_for(lambda s: any("/slow" in t for t in s["targets"]))  # at once; 5 s
        assert any("/slow" in t for t in stats["targets"]), stats
        t0 = time.monotonic()
        assert sidecar.request("GET", "/echo").status == 200
        # Answered at once: 3 s of noise for a loaded 2-core machine, still well under the
        # 6 s the slow request waits (a sidecar that serialized them would take that long).
        assert time.monotonic() - t0 < 3.0
        assert slow.read_response().status == 200


def test_stalled_reader_does_not_hold_up_other_clients(sidecar):
    with sidecar.conn(rcvbuf=16 * 1024) as stalled:
        stalled.send(rawhttp.build_request("GET", "/bytes?n=%d" % (100 * MiB)))
        stalled.read_exact(64 * 1024)  # then stop reading
        for _ in range(5):
            t0 = time.monotonic()
            assert sidecar.request("GET", "/echo").status == 200
            # Answered at once: 3 s of noise for a loaded 2-core machine (a sidecar blocked
            # on the stalled reader would never answer).
            assert time.monotonic() - t0 < 3.0


def test_slow_upstream_is_504_after_upstream_timeout(start_sidecar):
    sc = start_sidecar({"upstream_timeout": "1s"})
    t0 = time.monotonic()  # before the request: the upstream wait starts later
    r = sc.request("GET", "/slow?delay=8")  # far beyond the bound below: no race with a late 200
    elapsed = time.monotonic() - t0
    assert r.status == 504
    # Promised: upstream_timeout 1 s is a minimum; +3 s covers a loaded 2-core machine.
    assert 1.0 <= elapsed <= 4.0, elapsed
    assert 0 < len(r.body) < 4096
    assert sc.request("GET", "/slow?delay=0.1").status == 200


def test_upstream_breaking_mid_response_closes_client(sidecar):
    with sidecar.conn(timeout=5) as c:
        c.send(rawhttp.build_request("GET", "/bytes?n=1000000&abort_after=300000"))
        try:
            r = c.read_response()
            raise AssertionError("truncated body delivered as complete: %d bytes" % r.body_len)
        except rawhttp.Closed:
            pass
    assert sidecar.request("GET", "/echo").status == 200


def test_upstream_speaking_garbage_is_502(sidecar):
    r = sidecar.request("GET", "/garbage")
    assert r.status == 502
    assert sidecar.request("GET", "/echo").status == 200


@pytest.mark.parametrize("kind", ["cl_te", "two_cl", "bad_cl", "te_gzip"])
def test_ambiguous_upstream_response_is_502(sidecar, kind):
    r = sidecar.request("GET", "/badresp?kind=" + kind)
    assert r.status == 502
    assert sidecar.request("GET", "/echo").status == 200


def test_client_disconnect_mid_stream_leaks_nothing(sidecar, upstream):
    assert sidecar.request("GET", "/echo").status == 200
    fds = sidecar.fd_count()
    for _ in range(20):
        c = sidecar.conn()
        c.send(rawhttp.build_request("GET", "/bytes?n=%d" % (100 * MiB)))
        c.read_exact(256 * 1024)
        c.close()
    assert sidecar.request("GET", "/echo").status == 200
    deadline = time.monotonic() + 5  # closes are handled at once; 5 s of noise
    while sidecar.fd_count() > fds + 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sidecar.fd_count() <= fds + 2, "fds %d -> %d" % (fds, sidecar.fd_count())
    stats = upstream.wait_for(lambda s: s["open_connections"] <= 2)  # closed at once; polled for 5 s
    assert stats["open_connections"] <= 2, stats


def test_websocket_echo_through_the_proxy(sidecar):
    with sidecar.conn() as c:
        c.send(rawhttp.build_request("GET", "/ws", [
            ("Upgrade", "websocket"), ("Connection", "Upgrade"),
            ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
            ("Sec-WebSocket-Version", "13")]))
        r = c.read_response()
        assert r.status == 101
        assert (r.header("Upgrade") or "").lower() == "websocket"
        assert "upgrade" in (r.header("Connection") or "").lower()
        assert r.header("Sec-WebSocket-Accept") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        c.send(rawhttp.ws_frame(0x1, b"hello"))
        assert rawhttp.ws_read_frame(c) == (0x1, b"hello")
        big = os.urandom(70000)
        c.send(rawhttp.ws_frame(0x2, big))
        assert rawhttp.ws_read_frame(c) == (0x2, big)
        c.send(rawhttp.ws_frame(0x8, b"\x03\xe8"))
        assert rawhttp.ws_read_frame(c)[0] == 0x8
        assert c.wait_closed(5)  # closed at once after the close frame; 5 s of noise


def load(port, connections, requests_each):
    """Runs keep-alive clients in threads; returns the list of non-200 outcomes."""
    failures = []

    def client():
        try:
            with rawhttp.Conn(port, timeout=10) as c:
                for _ in range(requests_each):
                    r = c.request("GET", "/echo")
                    if r.status != 200:
                        failures.append(r.status)
        except Exception as e:  # noqa: BLE001 - any failure counts
            failures.append(repr(e))

    threads = [threading.Thread(target=client) for _ in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return failures


def test_two_workers_both_serve_many_connections(start_sidecar):
    sc = start_sidecar({"workers": 2, "log": {"access": False}})
    before = sc.thread_cpu_ticks()
    failures = load(sc.port, 64, 60)
    assert not failures, failures[:5]
    after = sc.thread_cpu_ticks()
    busy = [t for t in after if after[t] - before.get(t, 0) >= 1]
    assert len(busy) >= 2, "only %d thread(s) did work: %s" % (len(busy), after)


def test_many_concurrent_connections(sidecar):
    assert not load(sidecar.port, 200, 3)


def test_unix_socket_upstream(start_sidecar, upstream):
    sc = start_sidecar({"upstream": "unix:" + upstream.unix})
    with sc.conn() as c:
        for _ in range(3):
            r = c.request("POST", "/echo?u=1", body=b"via unix")
            assert r.status == 200 and r.json()["body"] == "via unix"
        r = c.request("GET", "/bytes?n=500000")
        assert r.body == pattern(0, 500000)


# -- paths -----------------------------------------------------------------------------------
@pytest.mark.parametrize("sent,forwarded", [
    ("/a/./b/../c", "/a/c"),
    ("/a/%2e%2e/c", "/c"),
    ("/a/%2E%2E/c", "/c"),
    ("/a/%2e/c", "/a/c"),
    ("/x/../../y", "/y"),
    ("/a/b/..", "/a/"),
    ("/%2e%2e/%2e%2e/etc", "/etc"),
    ("//a///b", "/a/b"),
    ("/%7Euser/%41", "/~user/A"),
    ("/a%20b", "/a%20b"),
    ("/x/..?q=/../a", "/?q=/../a"),
])
def test_forwarded_path_is_normalized(sidecar, sent, forwarded):
    e = sidecar.request("GET", sent).json()
    assert e["target"] == forwarded


@pytest.mark.parametrize("sent,forwarded", [("/a%2Fb", "/a%2Fb"), ("/a%2fb/../c", "/c"), ("/a\\b", "/a%5Cb")])
def test_encoded_separators_kept_are_forwarded_escaped(start_sidecar, sent, forwarded):
    """`paths.encoded_slashes: keep`: not separators to the decision, forwarded escaped."""
    e = start_sidecar({"paths": {"encoded_slashes": "keep"}}).request("GET", sent).json()
    assert e["target"] == forwarded


@pytest.mark.parametrize("sent,forwarded", [("/a%2Fb", "/a/b"), ("/a%2fb/../c", "/a/c"), ("/a\\..\\c", "/c")])
def test_encoded_separators_decoded_are_forwarded_as_slashes(start_sidecar, sent, forwarded):
    e = start_sidecar({"paths": {"encoded_slashes": "decode"}}).request("GET", sent).json()
    assert e["target"] == forwarded


@pytest.mark.parametrize("sent", ["/a%2Fb", "/a%5cb", "/a\\b"])
def test_encoded_separators_are_refused_by_default(sidecar, upstream, sent):
    assert sidecar.request("GET", sent).status == 400
    assert upstream.stats()["requests"] == 0


def test_encoded_crlf_never_becomes_a_header(sidecar):
    e = sidecar.request("GET", "/a%0d%0aX-Injected:%201").json()
    assert not seen(e, "X-Injected")
    assert "\r" not in e["target"] and "\n" not in e["target"]
    assert e["target"].lower() == "/a%0d%0ax-injected:%201"


# -- access decision without a session -------------------------------------------------------
@pytest.fixture
def guarded(start_sidecar):
    return start_sidecar({"access": {"public_paths": ["/pub/**"], "api_paths": ["/api/**"]}})


HTML = ("Accept", "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8")


def assert_api_401(r):
    assert r.status == 401
    assert r.header("WWW-Authenticate") == 'Bearer realm="sidecar"'
    assert r.json() == {"error": "unauthenticated", "login": "/.auth/login"}


def test_browser_get_without_session_is_redirected_to_login(guarded, upstream):
    from urllib.parse import parse_qs, urlsplit
    for method in ("GET", "HEAD"):
        r = guarded.request(method, "/private/page?x=1&y=%2F", [HTML])
        assert r.status == 302, r.status
        loc = urlsplit(r.header("Location"))
        assert loc.path == "/.auth/login"
        assert loc.netloc in ("", "127.0.0.1:%d" % guarded.port)
        assert parse_qs(loc.query)["rd"] == ["/private/page?x=1&y=%2F"]
    assert upstream.stats()["requests"] == 0


def test_login_redirect_cannot_be_used_for_header_injection(guarded):
    r = guarded.request("GET", "/private%0d%0aSet-Cookie:%20x=1", [HTML])
    assert r.status == 302
    assert all("x=1" not in v for v in r.header_all("Set-Cookie")), r.headers
    assert "\r" not in r.header("Location") and "\n" not in r.header("Location")


@pytest.mark.parametrize("headers,target", [
    ([("Accept", "application/json")], "/private"),
    ([], "/private"),
    ([HTML, ("X-Requested-With", "XMLHttpRequest")], "/private"),
    ([HTML, ("Authorization", "Bearer not-a-session")], "/private"),
    ([HTML], "/api/things"),
])
def test_api_client_without_session_gets_401_json(guarded, upstream, headers, target):
    assert_api_401(guarded.request("GET", target, headers))
    assert upstream.stats()["requests"] == 0


def test_browser_post_without_session_gets_401_html(guarded, upstream):
    r = guarded.request("POST", "/private", [HTML], body=b"a=1")
    assert r.status == 401
    assert (r.header("Content-Type") or "").startswith("text/html")
    assert b"/.auth/login" in r.body
    assert upstream.stats()["requests"] == 0


@pytest.mark.parametrize("target", ["/pub/../private", "/pub/%2e%2e/private", "/pub/./../private",
                                    "//pub/../private", "/pub//..//private"])
def test_public_prefix_cannot_be_escaped(guarded, upstream, target):
    assert_api_401(guarded.request("GET", target, [("Accept", "application/json")]))
    assert upstream.stats()["requests"] == 0


def test_upgrade_on_a_protected_path_needs_a_session(guarded, upstream):
    r = guarded.request("GET", "/private/ws", [
        ("Upgrade", "websocket"), ("Connection", "Upgrade"),
        ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="), ("Sec-WebSocket-Version", "13")])
    assert r.status == 401
    assert upstream.stats()["requests"] == 0


def test_public_paths_are_forwarded_without_session(guarded):
    for target in ("/pub", "/pub/", "/pub/a/b.css?v=1"):
        r = guarded.request("GET", target, [HTML, ("X-Auth-User-Id", "forged")])
        assert r.status == 200, (target, r.status)
        assert not seen(r.json(), "X-Auth-User-Id")
