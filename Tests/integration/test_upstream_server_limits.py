"""Several servers at their limits: `upstream_max_connections` caps each server (a request the
balancer would send to a full server takes a free one elsewhere; with none free it queues
within its own connect deadline, then gets 503 with Retry-After), and a server that never
answers the SYN (a blackhole) costs each request at most one connect timeout: it is taken out
and the request goes to another server."""
import re
import socket
import threading
import time

import pytest

from conftest import poll
from test_upstream_servers import log_lines, servers  # noqa: F401 (a fixture)


def concurrently(sc, requests, timeout=15):
    """Each (method, target) on a connection of its own, all at once: [(status, response, seconds)].
    A POST carries a small body."""
    results = [None] * len(requests)

    def one(index, method, target):
        started = time.monotonic()
        body = b"once" if method == "POST" else b""
        headers = [("Content-Type", "text/plain")] if body else None
        try:
            r = sc.request(method, target, headers=headers, body=body, timeout=timeout)
            results[index] = (r.status, r, time.monotonic() - started)
        except Exception as error:  # a dropped connection is a failure too
            results[index] = (repr(error), None, time.monotonic() - started)

    threads = [threading.Thread(target=one, args=(i, m, t)) for i, (m, t) in enumerate(requests)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout + 5)
    return results


@pytest.mark.deadline(60)
def test_the_cap_is_per_server_and_a_full_one_sends_the_request_to_another(start_sidecar, servers):
    # Weights 3:1 send the first two requests to `heavy`; capped at one, the second takes `light`.
    heavy, light = servers(2, delays=(1.5, 1.5))
    sc = start_sidecar({"upstream": [heavy.url + " weight=3", light.url], "upstream_max_connections": 1,
                        "upstream_connect_timeout": "5s"})
    results = concurrently(sc, [("GET", "/echo?a"), ("GET", "/echo?b")])
    assert [r[0] for r in results] == [200, 200], results
    assert (heavy.requests(), light.requests()) == (1, 1)
    assert max(r[2] for r in results) < 2.8, "neither waited for the other's server"


@pytest.mark.deadline(60)
def test_with_every_server_full_a_request_queues_then_gets_503_with_retry_after(start_sidecar, servers):
    a, b = servers(2, delays=(4.0, 4.0))
    sc = start_sidecar({"upstream": [a.url, b.url], "upstream_max_connections": 1,
                        "upstream_connect_timeout": "1s"})
    statuses = []
    holders = [threading.Thread(target=lambda t=t: statuses.append(sc.request("GET", t, timeout=15).status))
               for t in ("/echo?1", "/echo?2")]
    for thread in holders:
        thread.start()
    assert poll(lambda: a.requests() + b.requests() == 2, timeout=5)
    started = time.monotonic()
    r = sc.request("GET", "/echo?3", timeout=10)
    waited = time.monotonic() - started
    assert r.status == 503 and r.header("retry-after") == "1", (r.status, r.headers)
    assert 0.9 <= waited < 2.5, "it waited its connect deadline for a free server, no longer: %.2f s" % waited
    for thread in holders:
        thread.join(15)
    assert statuses == [200, 200], "the two holding the servers were answered"
    assert (a.requests(), b.requests()) == (1, 1)


@pytest.mark.deadline(60)
def test_a_queued_request_takes_the_first_server_that_frees_up(start_sidecar, servers):
    a, b = servers(2, delays=(0.6, 0.6))
    sc = start_sidecar({"upstream": [a.url, b.url], "upstream_max_connections": 1,
                        "upstream_connect_timeout": "5s"})
    results = concurrently(sc, [("GET", "/echo?%d" % i) for i in range(4)])
    assert [r[0] for r in results] == [200] * 4, results
    assert (a.requests(), b.requests()) == (2, 2), "each server at most one at a time, both used"
    assert sorted(r[2] for r in results)[-1] >= 1.1, "two of them waited for a free server"


class Blackhole:
    """A listening socket whose accept queue is full and never accepted: a SYN sent to it gets
    no answer (Linux drops it), as with a host that vanished or a firewall that drops."""

    def __init__(self):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(0)
        self.port = self.listener.getsockname()[1]
        self.filler = socket.create_connection(("127.0.0.1", self.port), timeout=2)
        probe = socket.socket()
        probe.settimeout(0.5)
        try:
            probe.connect(("127.0.0.1", self.port))
            raise AssertionError("the accept queue is not full: the blackhole answers")
        except socket.timeout:
            pass
        finally:
            probe.close()

    def close(self):
        self.filler.close()
        self.listener.close()


@pytest.fixture
def blackhole():
    hole = Blackhole()
    yield hole
    hole.close()


@pytest.mark.deadline(90)
def test_a_blackholed_server_costs_no_request_and_at_most_one_connect_timeout_each(start_sidecar, servers, blackhole):
    a, b = servers(2)
    dead = "http://127.0.0.1:%d" % blackhole.port
    sc = start_sidecar({"upstream": [dead, a.url, b.url], "upstream_connect_timeout": "1s",
                        "upstream_max_fails": 2, "upstream_fail_timeout": "30s"})
    results = concurrently(sc, [("GET", "/echo?%d" % i) for i in range(4)])
    results += concurrently(sc, [("POST", "/echo")] + [("GET", "/echo?more%d" % i) for i in range(8)])
    for _ in range(6):
        results += concurrently(sc, [("GET", "/echo?seq")])
    statuses = [r[0] for r in results]
    assert statuses == [200] * len(results), statuses
    slowest = max(r[2] for r in results)
    assert slowest < 2.0, "a request waited %.2f s: more than one connect timeout" % slowest
    waited = sum(1 for r in results if r[2] >= 0.9)
    assert 1 <= waited <= 4, "only the requests that met the blackhole before it was out waited (%d)" % waited
    taken_out = log_lines(sc, "upstream server taken out")
    assert taken_out and {line["upstream"] for line in taken_out} == {"127.0.0.1:%d" % blackhole.port}
    assert a.requests() + b.requests() == len(results)
    assert sc.logged(lambda out: "connect()" in out and str(blackhole.port) in out)
    # The connect failures are the blackhole's, each server named in the metrics.
    def failures():
        text = sc.admin("/metrics").body.decode()
        return {server: int(count) for server, count in re.findall(
            r'sidecar_upstream_connect_failures_total\{upstream="default",server="([^"]+)"\} (\d+)', text)}
    counts = poll(lambda: (lambda f: f if f.get("127.0.0.1:%d" % blackhole.port) else None)(failures()))
    assert counts and counts["127.0.0.1:%d" % blackhole.port] >= 1, failures()
    assert counts["127.0.0.1:%d" % a.port] == 0 and counts["127.0.0.1:%d" % b.port] == 0, counts
