"""Names that move: an upstream given by a name that a DNS server (the `resolver`) answers with
addresses that change. Each address is a server of its own; addresses added are used, removed
ones no longer; a name that stops resolving keeps its last addresses and the log says so."""
import re
import subprocess
import time
import sys
from pathlib import Path

import pytest

import rawhttp
from conftest import free_port, poll
from dns_support import DNSServer

HERE = Path(__file__).resolve().parent


class Pod:
    """upstream.py on one loopback address: a pod of a headless Service."""

    def __init__(self, ip, port):
        self.ip, self.control = ip, free_port()
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "upstream.py"), "--host", ip, "--port", str(port),
             "--control-port", str(self.control)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert self.proc.stdout.readline(), "upstream.py did not start"

    def requests(self):
        return rawhttp.request(self.control, "GET", "/_stats", timeout=5).json()["requests"]

    def stop(self):
        self.proc.kill()
        self.proc.wait(5)


@pytest.fixture
def dns():
    server = DNSServer()
    yield server
    server.stop()


@pytest.fixture
def pods():
    started = []
    port = free_port()

    def start(ip):
        pod = Pod(ip, port)
        started.append(pod)
        return pod

    start.port = port
    yield start
    for pod in started:
        pod.stop()


def spread(sc, n=12):
    for _ in range(n):
        assert sc.request("GET", "/echo").status == 200


def test_a_name_that_gains_and_loses_addresses_is_followed(start_sidecar, dns, pods):
    a, b = pods("127.0.0.2"), pods("127.0.0.3")
    dns.set("app.test", ["127.0.0.2"])
    sc = start_sidecar({"upstream": "http://app.test:%d" % pods.port, "resolver": "127.0.0.1:%d" % dns.port,
                        "upstream_resolve_interval": "200ms"})
    spread(sc)
    assert (a.requests(), b.requests()) == (12, 0)
    dns.set("app.test", ["127.0.0.2", "127.0.0.3"])  # the Service gained a pod
    assert sc.logged(lambda out: "resolves to new addresses" in out and "127.0.0.3" in out), sc.log_tail()
    spread(sc)
    assert a.requests() == 18 and b.requests() == 6, "both addresses take requests"
    dns.set("app.test", ["127.0.0.3"])  # and lost the first
    assert poll(lambda: sc.output().count("resolves to new addresses") >= 2)
    before = a.requests()
    spread(sc)
    assert a.requests() == before, "a removed address gets no new request"
    # The access lines follow their responses (polled: the two race).
    answered = sc.logged(lambda out: [l for l in out.splitlines() if "127.0.0.3" in l and '"status":200' in l])
    assert answered and "app.test:%d@127.0.0.3" % pods.port in answered[-1], "access lines name the address that answered"


def test_a_name_that_stops_resolving_keeps_its_last_addresses(start_sidecar, dns, pods):
    pods("127.0.0.2")
    dns.set("app.test", ["127.0.0.2"])
    sc = start_sidecar({"upstream": "http://app.test:%d" % pods.port, "resolver": "127.0.0.1:%d" % dns.port,
                        "upstream_resolve_interval": "200ms"})
    dns.set("app.test", None)
    assert sc.logged(lambda out: "no longer resolves" in out and "127.0.0.2" in out), sc.log_tail()
    spread(sc, 4)
    queries = dns.queries
    assert poll(lambda: dns.queries > queries + 2), "it keeps asking"
    assert sc.output().count("no longer resolves") == 1, "said once, not at every lookup"


def test_lookups_do_not_hold_up_requests(start_sidecar, dns, pods):
    """The DNS server answers nothing at all for a while: requests go on being served."""
    pods("127.0.0.2")
    dns.set("app.test", ["127.0.0.2"])
    sc = start_sidecar({"upstream": "http://app.test:%d" % pods.port, "resolver": "127.0.0.1:%d" % dns.port,
                        "upstream_resolve_interval": "100ms"})
    dns.stop()  # lookups now time out
    for _ in range(20):
        r = sc.request("GET", "/echo", timeout=2)
        assert r.status == 200


def test_a_name_the_resolver_does_not_know_is_a_start_error(start_sidecar, dns):
    sc = start_sidecar({"upstream": "http://nowhere.test:3000", "resolver": "127.0.0.1:%d" % dns.port}, ready=False)
    assert sc.wait_exit(15) == 2, sc.log_tail()
    sc.stopped = True
    assert "nowhere.test does not resolve" in sc.output()


def served_by(sc):
    """{server label: responses} of the default upstream, from /metrics."""
    text = sc.admin("/metrics").body.decode()
    return {server: int(count) for server, count in re.findall(
        r'sidecar_upstream_response_seconds_count\{upstream="default",server="([^"]+)"\} (\d+)', text)}


def test_metrics_and_readyz_follow_the_addresses_the_name_resolves_to_now(start_sidecar, dns, pods):
    a = pods("127.0.0.2")
    dns.set("app.test", ["127.0.0.2"])
    sc = start_sidecar({"upstream": "http://app.test:%d" % pods.port, "resolver": "127.0.0.1:%d" % dns.port,
                        "upstream_resolve_interval": "200ms"})
    spread(sc)
    first = "app.test:%d@127.0.0.2" % pods.port
    assert poll(lambda: served_by(sc).get(first) == 12), served_by(sc)
    assert poll(lambda: sc.admin("/readyz").status == 200)
    dns.set("app.test", ["127.0.0.3"])  # the pod moved; nothing answers there yet
    assert sc.logged(lambda out: "resolves to new addresses" in out and "127.0.0.3" in out), sc.log_tail()
    moved = "upstream unreachable (app.test:%d@127.0.0.3)\n" % pods.port
    assert poll(lambda: sc.admin("/readyz").body.decode() == moved), sc.admin("/readyz").body
    assert sc.admin("/readyz").status == 503
    b = pods("127.0.0.3")
    assert poll(lambda: sc.admin("/readyz").status == 200), sc.admin("/readyz").body
    spread(sc, 3)
    second = "app.test:%d@127.0.0.3" % pods.port
    assert poll(lambda: served_by(sc).get(second) == 3), served_by(sc)
    assert served_by(sc)[first] == 12, "the first address keeps its count"
    assert b.requests() == 3 and a.requests() == 12


def test_a_short_ttl_brings_the_next_lookup_forward(start_sidecar, dns, pods):
    pods("127.0.0.2"), pods("127.0.0.3")
    dns.set("app.test", ["127.0.0.2"])
    dns.ttl = 1
    sc = start_sidecar({"upstream": "http://app.test:%d" % pods.port, "resolver": "127.0.0.1:%d" % dns.port,
                        "upstream_resolve_interval": "1h"})
    assert sc.request("GET", "/echo").status == 200
    dns.set("app.test", ["127.0.0.2", "127.0.0.3"])
    assert sc.logged(lambda out: "resolves to new addresses" in out and "127.0.0.3" in out, timeout=6), \
        "a 1 s TTL is asked again within seconds, not after the 1 h interval"


def test_a_zero_ttl_is_asked_again_at_most_once_a_second(start_sidecar, dns, pods):
    pods("127.0.0.2")
    dns.set("app.test", ["127.0.0.2"])
    dns.ttl = 0
    sc = start_sidecar({"upstream": "http://app.test:%d" % pods.port, "resolver": "127.0.0.1:%d" % dns.port,
                        "upstream_resolve_interval": "1h", "workers": 1})
    assert poll(lambda: dns.queries >= 4)  # at start, and the worker's first round (A and AAAA each)
    before, started = dns.queries, time.monotonic()
    assert poll(lambda: dns.queries >= before + 8, timeout=15), "a TTL of 0 is still followed"
    elapsed = time.monotonic() - started
    assert elapsed >= 2.8, "four rounds came in %.2f s: a TTL of 0 must not spin" % elapsed
    assert sc.request("GET", "/echo").status == 200
