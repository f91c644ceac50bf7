"""Several servers behind one upstream: balanced round robin by weight or by fewest busy
connections; a server stopped mid-load costs no idempotent request, is taken out after
`upstream_max_fails` failed connections and comes back when it answers again; a refused
connect is retried on another server."""
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import rawhttp
from conftest import free_port, poll

HERE = Path(__file__).resolve().parent


class Server:
    """One upstream.py on a fixed port, to stop and start again on the same port."""

    def __init__(self, workdir, delay=0.0):
        self.workdir, self.delay = workdir, delay
        self.port, self.control = free_port(), free_port()
        self.proc = None
        self.start()

    def start(self):
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "upstream.py"), "--port", str(self.port),
             "--control-port", str(self.control), "--delay", str(self.delay)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert self.proc.stdout.readline(), "upstream.py did not start"
        return self

    def kill(self):
        self.proc.kill()
        self.proc.wait(5)

    def requests(self):
        return rawhttp.request(self.control, "GET", "/_stats", timeout=5).json()["requests"]

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port


@pytest.fixture
def servers(tmp_path):
    started = []

    def make(count, delays=()):
        for i in range(count):
            delay = delays[i] if i < len(delays) else 0.0
            started.append(Server(tmp_path / ("server%d" % i), delay))
        return started[-count:]

    yield make
    for server in started:
        if server.proc.poll() is None:
            server.kill()


def log_lines(sc, text):
    found = []
    for line in sc.output().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if text in entry.get("msg", ""):
            found.append(entry)
    return found


def test_round_robin_follows_the_weights(start_sidecar, servers):
    a, b, c = servers(3)
    sc = start_sidecar({"upstream": [a.url, b.url, c.url + " weight=2"]})
    for _ in range(40):
        assert sc.request("GET", "/echo").status == 200
    assert [a.requests(), b.requests(), c.requests()] == [10, 10, 20]


def test_a_server_stopped_mid_load_costs_no_idempotent_request(start_sidecar, servers):
    a, b, c = servers(3)
    sc = start_sidecar({"upstream": [a.url, b.url, c.url], "upstream_fail_timeout": "1s"})
    statuses, stop = [], threading.Event()

    def load():
        while not stop.is_set():
            try:
                statuses.append(sc.request("GET", "/echo?load", timeout=10).status)
            except Exception as error:  # a connection the sidecar dropped is a failure too
                statuses.append(repr(error))

    threads = [threading.Thread(target=load) for _ in range(4)]
    for t in threads:
        t.start()
    try:
        assert poll(lambda: b.requests() >= 20, timeout=10)
        b.kill()
        assert sc.logged(lambda out: "upstream server taken out" in out and str(b.port) in out), sc.log_tail()
        served_while_out = len(statuses)
        time.sleep(0.5)
        assert len(statuses) > served_while_out, "the other servers go on serving"
        b.start()
        assert poll(lambda: b.requests() > 0, timeout=10), "the restarted server gets requests again"
        assert sc.logged(lambda out: "upstream server back" in out)
    finally:
        stop.set()
        for t in threads:
            t.join(15)
    failed = [s for s in statuses if s != 200]
    assert failed == [], "%d of %d requests failed: %s" % (len(failed), len(statuses), failed[:5])
    taken_out = log_lines(sc, "upstream server taken out")
    # Taken out again each time the try after its time out fails, until it is restarted.
    assert taken_out and {line["upstream"] for line in taken_out} == {"127.0.0.1:%d" % b.port}


def test_least_connections_sends_new_requests_past_a_slow_server(start_sidecar, servers):
    slow, fast = servers(2, delays=(3.0, 0.0))
    sc = start_sidecar({"upstream": [slow.url, fast.url], "upstream_balance": "least_connections"})
    statuses, stop = [], threading.Event()

    def load():
        while not stop.is_set():
            statuses.append(sc.request("GET", "/echo", timeout=10).status)

    threads = [threading.Thread(target=load) for _ in range(4)]
    for t in threads:
        t.start()
    time.sleep(2.0)
    stop.set()
    for t in threads:
        t.join(15)
    assert set(statuses) == {200}
    assert slow.requests() <= 2, "a busy server gets no new request while another is idle"
    assert fast.requests() >= 20


def test_round_robin_waits_for_a_slow_server_where_least_connections_does_not(start_sidecar, servers):
    """The test of the test above: the same load under round robin does reach the slow server."""
    slow, fast = servers(2, delays=(1.0, 0.0))
    sc = start_sidecar({"upstream": [slow.url, fast.url]})
    results = []
    threads = [threading.Thread(target=lambda: results.append(sc.request("GET", "/echo", timeout=10).status))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(15)
    assert results == [200] * 4
    assert slow.requests() == 2


def test_a_refused_connect_goes_to_another_server(start_sidecar, servers):
    live, = servers(1)
    dead = free_port()  # nothing listens there
    sc = start_sidecar({"upstream": ["http://127.0.0.1:%d" % dead, live.url], "upstream_max_fails": 2})
    for _ in range(6):
        assert sc.request("GET", "/echo").status == 200
        assert sc.request("POST", "/echo", headers=[("Content-Type", "text/plain")], body=b"once").status == 200
    assert live.requests() == 12
    assert log_lines(sc, "upstream server taken out")


def test_servers_must_be_alike(start_sidecar, servers):
    a, = servers(1)
    sc = start_sidecar({"upstream": [a.url, "https://127.0.0.1:1"]}, ready=False)
    assert sc.wait_exit(15) == 1, sc.log_tail()
    sc.stopped = True
    assert "upstream[1]" in sc.output() and "mix https with plain servers" in sc.output()


def targets(server):
    return rawhttp.request(server.control, "GET", "/_stats", timeout=5).json()["targets"]


def test_active_health_check_takes_a_slow_server_out_before_a_request_goes_there(start_sidecar, servers):
    slow, fast = servers(2, delays=(3.0, 0.0))
    sc = start_sidecar({"upstream": [slow.url, fast.url], "upstream_health_check": {
        "path": "/status?code=204", "interval": "300ms", "timeout": "500ms", "status": "2xx"}})
    assert sc.logged(lambda out: "failed its health check" in out and str(slow.port) in out), sc.log_tail()
    for _ in range(10):
        assert sc.request("GET", "/echo?user").status == 200
    assert not [t for t in targets(slow) if "/echo" in t], "no request goes to a server failing its check"
    assert any("/status?code=204" in t for t in targets(fast)), "the check asks the configured path"


def test_active_health_check_follows_a_server_that_stops_and_restarts(start_sidecar, servers):
    a, b = servers(2)
    sc = start_sidecar({"upstream": [a.url, b.url], "upstream_health_check": {
        "path": "/status?code=200", "interval": "200ms", "timeout": "500ms"}})
    b.kill()
    assert sc.logged(lambda out: "failed its health check" in out and str(b.port) in out), sc.log_tail()
    for _ in range(6):
        assert sc.request("GET", "/echo").status == 200
    assert "upstream server taken out after" not in sc.output(), "the check found it before any request failed"
    b.start()
    assert sc.logged(lambda out: "passed its health check" in out and str(b.port) in out, timeout=10)
    assert poll(lambda: sc.request("GET", "/echo").status == 200 and any("/echo" in t for t in targets(b)))


def test_a_health_check_expecting_another_status_fails(start_sidecar, servers):
    a, b = servers(2)
    sc = start_sidecar({"upstream": [a.url, b.url], "upstream_health_check": {
        "path": "/status?code=503", "interval": "300ms"}})
    assert sc.logged(lambda out: out.count("failed its health check") >= 2 and "status 503" in out), sc.log_tail()


def test_readyz_fails_only_when_no_server_is_reachable_and_names_them(start_sidecar, servers):
    live, = servers(1)
    dead1, dead2 = free_port(), free_port()
    sc = start_sidecar({"upstream": ["http://127.0.0.1:%d" % dead1, live.url]})
    assert poll(lambda: sc.admin("/readyz").status == 200), sc.admin("/readyz").body
    down = start_sidecar({"upstream": ["http://127.0.0.1:%d" % dead1, "http://127.0.0.1:%d" % dead2]})
    expected = "upstream unreachable (127.0.0.1:%d, 127.0.0.1:%d)\n" % (dead1, dead2)
    assert poll(lambda: down.admin("/readyz").body.decode() == expected), down.admin("/readyz").body
    assert down.admin("/readyz").status == 503
