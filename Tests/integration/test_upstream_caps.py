"""HTTP/2 must not multiply what one client can hold: the upstream connections one client
connection holds at once are capped (`limits.upstream_connections_per_client`), each upstream's
too (`upstream_max_connections`, `upstreams.<name>.max_connections`), and a worker's by its
share of the descriptor budget; streams beyond a cap queue, and get 503 with Retry-After when
no connection frees within `upstream_connect_timeout`. A small descriptor limit still serves
clients side by side."""
import json
import resource
import socket
import subprocess
import threading
import time

import pytest

import rawhttp
from conftest import free_port, poll, sidecar_binary, to_yaml
from h2_support import H2Client


def limit_nofile(soft, hard):
    def apply():
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    return apply


def lines(sc):
    out = []
    for l in sc.output().splitlines():
        try:
            out.append(json.loads(l))
        except ValueError:
            pass
    return out


class SilentUpstream:
    """Accepts connections and never answers (nor reads): every request sent to it holds its
    upstream connection until the sidecar gives up. Counts the connections it accepted."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4096)
        self.port = self.sock.getsockname()[1]
        self.held = []
        self.stopped = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        self.sock.settimeout(0.2)
        while not self.stopped:
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.held.append(conn)

    @property
    def accepted(self):
        return len(self.held)

    def close(self):
        self.stopped = True
        self.thread.join(2)
        self.sock.close()
        for c in self.held:
            c.close()


@pytest.fixture
def silent():
    s = SilentUpstream()
    yield s
    s.close()


def answered_quickly(fn, limit=1.0):
    started = time.monotonic()
    result = fn()
    return result, time.monotonic() - started


def login(sc):
    return rawhttp.request(sc.port, "GET", "/.auth/login?rd=/", timeout=5)


def open_streams(port, clients, streams, method="GET", body=None):
    conns = []
    for _ in range(clients):
        c = H2Client(port)
        for i in range(streams):
            if body is None:
                c.start(method, "/hold/%d" % i)
            else:  # a body announced and never sent
                c.start(method, "/hold/%d" % i, headers=[("content-length", str(body))], end=False)
        conns.append(c)
    return conns


def pump_all(conns, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for c in conns:
            c.pump(timeout=0.05)


@pytest.mark.deadline(60)
def test_ten_h2_connections_of_100_streams_to_a_silent_upstream_leave_room_for_everyone_else(start_sidecar, silent):
    """Under nofile 1024:1024, 10 h2c connections x 100 streams to an upstream that never
    answers held 986 upstream sockets; accept4() and connect() then failed with EMFILE and
    /healthz and /.auth/login timed out. Now each connection holds at most 32 upstream
    connections (the other streams queue), nothing meets EMFILE, descriptors stay within
    what max_connections promises (2 each + the reserve), and a newcomer's /healthz and
    sign-in start answer within 1 s."""
    sc = start_sidecar({"upstream": "http://127.0.0.1:%d" % silent.port}, preexec=limit_nofile(1024, 1024))
    auto = [e for e in lines(sc) if e["msg"].startswith("limits.max_connections: ")]
    assert len(auto) == 1, auto
    max_connections = int(auto[0]["msg"].split(":")[1].split(",")[0])
    conns = open_streams(sc.port, 10, 100)
    try:
        pump_all(conns, 1.5)
        assert poll(lambda: silent.accepted >= 300, 5), silent.accepted
        pump_all(conns, 0.5)
        assert silent.accepted <= 10 * 32, silent.accepted
        fds = sc.fd_count()
        assert fds <= 2 * max_connections + 128, (fds, max_connections)
        assert fds <= 10 + 10 * 32 + 64, fds
        health, took = answered_quickly(lambda: sc.admin("/healthz"))
        assert health.status == 200 and took < 1.0, (health.status, took)
        r, took = answered_quickly(lambda: login(sc))
        assert r.status in (302, 303) and r.header("Location"), (r.status, r.body[:200])
        assert took < 1.0, took
        assert "Too many open files" not in sc.output(), sc.log_tail()
    finally:
        for c in conns:
            c.close()


@pytest.mark.deadline(60)
def test_posts_that_never_send_their_bodies_hold_at_most_the_cap_per_connection(start_sidecar, silent):
    """At defaults, 3 connections x 100 POSTs that never send their bodies held 301 upstream
    connections; now 32 per connection at most."""
    sc = start_sidecar({"upstream": "http://127.0.0.1:%d" % silent.port})
    conns = open_streams(sc.port, 3, 100, method="POST", body=1000)
    try:
        pump_all(conns, 1.0)
        assert poll(lambda: silent.accepted >= 90, 5), silent.accepted
        pump_all(conns, 1.0)
        assert silent.accepted <= 3 * 32, silent.accepted
    finally:
        for c in conns:
            c.close()


@pytest.mark.deadline(60)
def test_streams_beyond_the_caps_queue_and_all_are_answered(start_sidecar, upstream):
    """upstream_max_connections 4 and 3 per client: 12 streams to a 1 s handler are all
    answered 200 (queued, never failed while a connection frees within their deadline), and
    the upstream never sees more than 3 connections from the one client connection at once
    (each wave reuses the pooled connections: 3 accepted in all)."""
    sc = start_sidecar({"upstream_max_connections": 4, "limits": {"upstream_connections_per_client": 3}})
    c = H2Client(sc.port)
    try:
        ids = [c.start("GET", "/slow?delay=0.5") for _ in range(12)]
        assert c.pump(timeout=20, until=lambda: all(c.responses[i].ended or c.responses[i].reset is not None
                                                    for i in ids))
        assert [c.responses[i].status for i in ids] == [200] * 12
        assert upstream.stats()["connections"] <= 3, upstream.stats()
    finally:
        c.close()


@pytest.mark.deadline(60)
def test_a_stream_that_finds_no_connection_within_its_connect_deadline_gets_503_with_retry_after(start_sidecar, silent):
    """upstream_max_connections 1, upstream_connect_timeout 1s: the second stream waits 1 s
    for the first one's connection, then 503 with Retry-After; the first stays pending."""
    sc = start_sidecar({"upstream": "http://127.0.0.1:%d" % silent.port, "upstream_max_connections": 1,
                        "upstream_connect_timeout": "1s"})
    c = H2Client(sc.port)
    try:
        first = c.start("GET", "/a")
        c.pump(timeout=0.3)
        started = time.monotonic()
        second = c.start("GET", "/b")
        r = c.responses[second]
        assert c.pump(timeout=5, until=lambda: r.ended or r.reset is not None)
        waited = time.monotonic() - started
        assert r.status == 503 and r.header("retry-after") == "1", (r.status, r.headers)
        assert 0.9 <= waited < 3, waited
        assert c.responses[first].status is None
        assert silent.accepted == 1
        assert sc.logged(lambda out: "no upstream connection free within upstream_connect_timeout" in out)
    finally:
        c.close()


@pytest.mark.deadline(60)
def test_a_named_upstreams_own_cap(start_sidecar, upstream, silent):
    """upstreams.<name>.max_connections caps that upstream only: 2 to the silent one, while
    the top-level upstream still answers."""
    sc = start_sidecar({
        "upstreams": {"quiet": {"url": "http://127.0.0.1:%d" % silent.port, "max_connections": 2,
                                "upstream_connect_timeout": "1s"}},
        "rules": [{"path": "/quiet/**", "public": True, "upstream": "quiet"}],
    })
    c = H2Client(sc.port)
    try:
        ids = [c.start("GET", "/quiet/%d" % i) for i in range(5)]
        assert c.pump(timeout=5, until=lambda: sum(c.responses[i].ended for i in ids) >= 3)
        assert sorted(c.responses[i].status for i in ids if c.responses[i].ended) == [503, 503, 503]
        assert silent.accepted == 2
        assert c.request("GET", "/echo").status == 200
    finally:
        c.close()


def slow_head(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"GET /echo HTTP/1.1\r\nHost: x\r\n")
    return s


@pytest.mark.parametrize("limit", [64, 128])
@pytest.mark.deadline(60)
def test_a_small_descriptor_limit_serves_new_clients_while_older_heads_are_unfinished(start_sidecar, limit):
    """nofile 64:64 and 128:128 left room for one connection (a fixed reserve of 128): one
    slow client stalled every other. The reserve now scales with the limit (half of it below
    256), the start-up line warns that few clients fit, and new clients are served at once
    while older unfinished heads and a slow exchange hold descriptors."""
    sc = start_sidecar(preexec=limit_nofile(limit, limit))
    heads = [slow_head(sc.port) for _ in range(4)]
    slow = rawhttp.Conn(sc.port, timeout=10)
    try:
        slow.send(b"GET /slow?delay=3 HTTP/1.1\r\nHost: x\r\n\r\n")
        time.sleep(0.3)
        for _ in range(3):
            r, took = answered_quickly(lambda: rawhttp.request(sc.port, "GET", "/echo", timeout=5))
            assert r.status == 200 and took < 1.0, (r.status, took)
        results = []

        def one():
            results.append(rawhttp.request(sc.port, "GET", "/echo", timeout=5).status)
        threads = [threading.Thread(target=one) for _ in range(4)]
        started = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join(5)
        assert results == [200] * 4 and time.monotonic() - started < 1.5, results
    finally:
        for s in heads:
            s.close()
        slow.close()
    said = [e for e in lines(sc) if e["msg"].startswith("limits.max_connections: ")]
    assert len(said) == 1 and said[0]["level"] == "warning", said
    assert said[0]["msg"].startswith("limits.max_connections: %d," % ((limit - limit // 2) // 2)), said
    assert "clients can be served at once" in said[0]["msg"], said


@pytest.mark.deadline(60)
def test_at_the_descriptor_limit_the_busiest_h2_connection_sheds_its_oldest_streams(start_sidecar, silent):
    """max_connections set far beyond nofile 256:256, so only the limit itself stops 10 h2c
    connections x 40 streams to a silent upstream. With nothing idle and no unfinished head
    to close, the guard freed nothing ("freed":0) and a new client waited forever; now the
    connection holding the most upstream connections gets GOAWAY and its oldest streams are
    reset, and the newcomer's sign-in start is answered."""
    sc = start_sidecar({"upstream": "http://127.0.0.1:%d" % silent.port, "limits": {"max_connections": 10000}},
                       preexec=limit_nofile(256, 256))
    conns = []
    try:
        for _ in range(10):  # one at a time, each read in full before the next comes
            conns += open_streams(sc.port, 1, 40)
            pump_all(conns, 0.3)
        pump_all(conns, 1.0)
        r, took = answered_quickly(lambda: login(sc))
        assert r.status in (302, 303), (r.status, r.body[:200])
        assert took < 3.0, took
        exhausted = [e for e in lines(sc) if e["msg"].startswith("accept4() failed (24")]
        assert exhausted and any(e["freed"] > 0 for e in exhausted), exhausted
        pump_all(conns, 1.0)
        shed = [c for c in conns if c.goaway is not None]
        assert shed and all(any(r.reset == 11 for r in c.responses.values()) for c in shed), \
            [(c.closed, c.goaway, [r.reset for r in c.responses.values() if r.reset]) for c in conns]
    finally:
        for c in conns:
            c.close()


def test_check_warns_when_the_limit_leaves_room_for_few_clients(base_config, tmp_path):
    """`sidecar check` under nofile 128:128 with max_connections unset: one warning that only
    32 clients fit, naming the limit and the reserve (at 256 and above: none, see
    test_descriptors)."""
    path = tmp_path / "sidecar.yaml"
    path.write_text(to_yaml(base_config(free_port(), free_port())) + "\n")
    done = subprocess.run([str(sidecar_binary()), "check", "--config", str(path)], capture_output=True, text=True,
                          timeout=30, preexec_fn=limit_nofile(128, 128))
    assert done.returncode == 0, done.stdout + done.stderr
    warnings = [l for l in done.stderr.splitlines() if "limits.max_connections" in l]
    assert len(warnings) == 1, done.stderr
    assert warnings[0].startswith("%s: warning: limits.max_connections: 32, " % path), warnings
    assert "only 32 clients can be served at once (the limit is 128, 64 kept aside)" in warnings[0], warnings
