"""Spans exported to an OTLP/HTTP collector (`tracing.otlp_endpoint`): a proxied request's
server and upstream spans, the calls to Apple and to the store a request makes (sign-in,
account deletion, logout, a session's revalidation, Apple's notifications and their forward
queue), sampling (`tracing.sample_ratio` and a trusted parent's flag), an https collector
verified against `tracing.otlp_ca_file`, and a collector that is down, hangs or is not trusted
losing spans, never requests."""
import json
import re
import signal
import socket
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import free_port, merge, poll, seen, to_yaml
from native_support import (  # noqa: F401 (fixture)
    JSON_HEADERS, bearer, body_of, device, post_native, signed_in, start_native, web_user)
from test_notifications import Receiver, emulator_key, event_claims, sign
from tls_support import TestCA

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"
HTML = ("Accept", "text/html,application/xhtml+xml")
FORMAT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")


class Collector:
    """An OTLP/HTTP receiver: every POST /v1/traces body decoded and kept; answers 200. With
    `leaf` (a tls_support certificate) it serves HTTPS and notes the names clients sent (SNI)."""

    def __init__(self, leaf=None):
        self.batches, self.paths, self.server_names = [], [], []
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                collector.paths.append((self.path, self.headers["Content-Type"]))
                collector.batches.append(json.loads(body))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = "http://127.0.0.1:%d" % self.port
        if leaf:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(str(leaf.cert_file), str(leaf.key_file))
            context.sni_callback = lambda _sock, name, _context: collector.server_names.append(name)
            # A handshake that fails (the sidecar refused the certificate) is an OSError the
            # server's accept swallows: nothing is handled, nothing recorded.
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
            self.url = "https://localhost:%d" % self.port
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def spans(self):
        """Every span received, each with its resource's attributes under "_resource"."""
        out = []
        for batch in self.batches:
            for rs in batch["resourceSpans"]:
                resource = {a["key"]: a["value"] for a in rs["resource"]["attributes"]}
                for ss in rs["scopeSpans"]:
                    for span in ss["spans"]:
                        out.append(dict(span, _resource=resource, _scope=ss["scope"]))
        return out

    def of_trace(self, trace, count, timeout=8.0):
        """The spans of `trace` once at least `count` arrived (batches go out about once a second)."""
        found = poll(lambda: [s for s in self.spans() if s["traceId"] == trace] if len(
            [s for s in self.spans() if s["traceId"] == trace]) >= count else None, timeout)
        assert found, "spans of %s: %r" % (trace, self.spans())
        return found

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class HangingCollector:
    """Accepts connections and reads, never answers."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.url = "http://127.0.0.1:%d" % self.port
        self.held, self.stopped = [], False
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while not self.stopped:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)

    def close(self):
        self.stopped = True
        self.sock.close()
        for conn in self.held:
            conn.close()


@pytest.fixture
def collector():
    c = Collector()
    yield c
    c.close()


def attrs(span):
    return {a["key"]: next(iter(a["value"].values())) for a in span["attributes"]}


def forwarded(echo):
    values = seen(echo, "traceparent")
    assert len(values) == 1, echo["headers"]
    return FORMAT.match(values[0]).groups()


def metric(sc, name):
    text = sc.admin("/metrics").body.decode()
    match = re.search(r"^%s (\d+)$" % name, text, re.M)
    assert match, text
    return int(match.group(1))


def tracing(url, **more):
    return {"tracing": dict({"otlp_endpoint": url}, **more)}


def test_a_proxied_authenticated_request_exports_a_server_and_an_upstream_span(start_auth_sidecar, browser, collector):
    sc, apple = start_auth_sidecar(tracing(collector.url))
    b = browser(sc, apple)
    assert b.login()[0].status == 303
    r = b.request("GET", "/echo", [("traceparent", "00-%s-%s-01" % (TRACE, PARENT))])
    assert r.status == 200
    trace, sidecar_span, flags = forwarded(r.json())
    assert (trace, flags) == (TRACE, "01")

    spans = collector.of_trace(TRACE, 2)
    server = next(s for s in spans if s["kind"] == 2)
    client = next(s for s in spans if s["kind"] == 3)
    # The server span is the one the upstream was told is its parent; it continues the client's.
    assert server["spanId"] == sidecar_span and server["parentSpanId"] == PARENT
    assert server["name"] == "GET" and attrs(server) == {"http.request.method": "GET", "http.response.status_code": "200"}
    assert client["name"] == "upstream" and client["parentSpanId"] == sidecar_span
    assert client["spanId"] not in (sidecar_span, PARENT) and attrs(client)["http.response.status_code"] == "200"
    for span in (server, client):
        assert int(span["startTimeUnixNano"]) <= int(span["endTimeUnixNano"])
        assert abs(int(span["startTimeUnixNano"]) / 1e9 - time.time()) < 60
        assert span["status"] == {"code": 0}
    assert int(server["startTimeUnixNano"]) <= int(client["startTimeUnixNano"])
    assert server["_resource"]["service.name"] == {"stringValue": "siwa-sidecar"}
    assert collector.paths[0] == ("/v1/traces", "application/json")
    assert poll(lambda: metric(sc, "sidecar_trace_spans_exported_total") >= 2)


def test_a_login_exports_the_callback_and_its_apple_token_exchange(start_auth_sidecar, browser, collector):
    sc, apple = start_auth_sidecar(tracing(collector.url))
    b = browser(sc, apple)
    _, location = b.start_login()
    fields, _ = b.authorize(location)
    r = b.callback(fields, headers=(HTML, ("traceparent", "00-%s-%s-01" % (TRACE, PARENT))))
    assert r.status == 303
    spans = collector.of_trace(TRACE, 3)
    server = next(s for s in spans if s["kind"] == 2)
    token = next(s for s in spans if s["name"] == "apple token exchange")
    claim = next(s for s in spans if s["name"] == "store claim")
    assert server["name"] == "POST" and server["parentSpanId"] == PARENT
    assert attrs(server)["http.response.status_code"] == "303"
    assert token["kind"] == 3 and token["parentSpanId"] == server["spanId"]
    assert attrs(token) == {"http.request.method": "POST", "http.response.status_code": "200"}
    assert int(server["startTimeUnixNano"]) <= int(token["startTimeUnixNano"]) <= int(token["endTimeUnixNano"]) \
        <= int(server["endTimeUnixNano"])
    # The login state was spent in the store before Apple was asked.
    assert claim["kind"] == 3 and claim["parentSpanId"] == server["spanId"] and claim["status"] == {"code": 0}
    assert attrs(claim) == {"db.operation.name": "claim"}
    assert int(claim["endTimeUnixNano"]) <= int(token["startTimeUnixNano"])
    assert len(spans) == 3


def test_a_native_sign_in_exports_its_apple_token_exchange(start_native, collector):
    sc, apple = start_native(tracing(collector.url))
    headers = JSON_HEADERS + [("traceparent", "00-%s-%s-01" % (TRACE, PARENT))]
    r = post_native(sc, body_of(device(apple)), headers=headers)
    assert r.status == 200, r.body
    spans = collector.of_trace(TRACE, 2)
    server = next(s for s in spans if s["kind"] == 2)
    token = next(s for s in spans if s["name"] == "apple token exchange")
    assert server["name"] == "POST" and attrs(server)["http.response.status_code"] == "200"
    assert token["parentSpanId"] == server["spanId"] and attrs(token)["http.response.status_code"] == "200"


def test_a_failed_upstream_is_an_error_span(start_sidecar, collector):
    sc = start_sidecar(merge(tracing(collector.url), {"upstream": "http://127.0.0.1:%d" % free_port()}))
    r = sc.request("GET", "/x", [("traceparent", "00-%s-%s-01" % (TRACE, PARENT))])
    assert r.status == 502
    spans = collector.of_trace(TRACE, 2)
    client = next(s for s in spans if s["kind"] == 3)
    server = next(s for s in spans if s["kind"] == 2)
    assert client["status"] == {"code": 2} and attrs(client)["error.type"] == "no_response"
    assert server["status"] == {"code": 2} and attrs(server)["http.response.status_code"] == "502"


def test_sample_ratio_zero_sends_none_and_says_so_upstream(start_sidecar, collector):
    sc = start_sidecar(tracing(collector.url, sample_ratio=0.0))
    for _ in range(20):
        assert forwarded(sc.request("GET", "/echo").json())[2] == "00"
    time.sleep(2.5)
    assert collector.spans() == []
    assert metric(sc, "sidecar_trace_spans_exported_total") == 0


def test_a_trusted_sampled_parent_is_recorded_whatever_the_ratio(start_sidecar, collector):
    sc = start_sidecar(tracing(collector.url, sample_ratio=0.0))
    assert forwarded(sc.request("GET", "/echo", [("traceparent", "00-%s-%s-01" % (TRACE, PARENT))]).json())[2] == "01"
    unsampled = "5bf92f3577b34da6a3ce929d0e0e4736"
    assert forwarded(sc.request("GET", "/echo", [("traceparent", "00-%s-%s-00" % (unsampled, PARENT))]).json())[2] == "00"
    collector.of_trace(TRACE, 2)
    time.sleep(1.5)
    assert not [s for s in collector.spans() if s["traceId"] == unsampled]


def test_half_the_new_traces_are_sampled_at_ratio_one_half(start_sidecar, collector):
    sc = start_sidecar(tracing(collector.url, sample_ratio=0.5))
    sampled = set()
    with sc.conn() as c:
        for _ in range(200):
            trace, _, flags = forwarded(c.request("GET", "/echo").json())
            if flags == "01":
                sampled.add(trace)
    assert 60 <= len(sampled) <= 140
    assert poll(lambda: {s["traceId"] for s in collector.spans()} == sampled, 8), \
        (len(sampled), len({s["traceId"] for s in collector.spans()}))


def requests_stay_fast(sc, count=40):
    slowest = 0.0
    with sc.conn() as c:
        for _ in range(count):
            start = time.monotonic()
            assert c.request("GET", "/echo").status == 200
            slowest = max(slowest, time.monotonic() - start)
    return slowest


def test_a_collector_that_is_down_loses_spans_not_requests(start_sidecar):
    sc = start_sidecar(tracing("http://127.0.0.1:%d" % free_port()))
    assert requests_stay_fast(sc) < 0.5
    assert poll(lambda: metric(sc, "sidecar_trace_spans_dropped_total") >= 80, 8), sc.admin("/metrics").body
    assert metric(sc, "sidecar_trace_export_failures_total") >= 1
    assert sc.logged(lambda out: "spans could not be exported" in out)
    assert requests_stay_fast(sc) < 0.5


def test_a_collector_that_hangs_loses_spans_not_requests(start_sidecar):
    hanging = HangingCollector()
    try:
        sc = start_sidecar(tracing(hanging.url))
        deadline = time.monotonic() + 4  # past the exporter's first wait on the collector
        while time.monotonic() < deadline:
            assert requests_stay_fast(sc, 10) < 0.5
        assert hanging.held, "the exporter never connected"
        assert poll(lambda: metric(sc, "sidecar_trace_spans_dropped_total") > 0, 8), sc.admin("/metrics").body
        assert metric(sc, "sidecar_trace_spans_exported_total") == 0
        # Shutdown waits for the exporter's post under way and one last one, both bounded.
        assert requests_stay_fast(sc, 10) < 0.5
        start = time.monotonic()
        sc.signal(signal.SIGTERM)
        assert sc.wait_exit(10) == 0, sc.log_tail()
        assert time.monotonic() - start < 5
    finally:
        hanging.close()


def test_sighup_moves_the_export_to_a_new_collector(start_sidecar, collector):
    sc = start_sidecar({"tracing": {"sample_ratio": 1.0}})
    assert forwarded(sc.request("GET", "/echo").json())[2] == "01"
    time.sleep(1.5)
    assert collector.spans() == []  # no endpoint: nothing recorded
    sc.config_path.write_text(to_yaml(merge(sc.config, tracing(collector.url))) + "\n")
    assert sc.sighup()

    def exported():
        trace = forwarded(sc.request("GET", "/echo").json())[0]
        return trace if poll(lambda: [s for s in collector.spans() if s["traceId"] == trace], 1.5) else None
    trace = poll(exported, 8)
    assert trace and len(collector.of_trace(trace, 2)) == 2
    second = Collector()
    try:
        sc.config_path.write_text(to_yaml(merge(sc.config, tracing(second.url))) + "\n")
        assert sc.sighup()
        time.sleep(0.5)
        trace = forwarded(sc.request("GET", "/echo").json())[0]
        second.of_trace(trace, 2)
    finally:
        second.close()
    sc.config_path.write_text(to_yaml(merge(sc.config, tracing(None, sample_ratio=0.0))) + "\n")
    assert sc.sighup()
    assert poll(lambda: forwarded(sc.request("GET", "/echo").json())[2] == "00")


def test_a_login_with_a_new_apple_key_exports_the_keys_refetch(start_auth_sidecar, browser, collector):
    sc, apple = start_auth_sidecar(tracing(collector.url))
    assert sc.logged(lambda out: "apple keys fetched" in out)
    r = apple.control("POST", "/emulator/rotate-keys")
    assert r.status == 200, r.body
    b = browser(sc, apple)
    _, location = b.start_login()
    fields, _ = b.authorize(location)
    r = b.callback(fields, headers=(HTML, ("traceparent", "00-%s-%s-01" % (TRACE, PARENT))))
    assert r.status == 303, r.body
    spans = collector.of_trace(TRACE, 4)
    server = next(s for s in spans if s["kind"] == 2)
    keys = next(s for s in spans if s["name"] == "apple keys fetch")
    token = next(s for s in spans if s["name"] == "apple token exchange")
    assert keys["kind"] == 3 and keys["parentSpanId"] == server["spanId"] and keys["status"] == {"code": 0}
    assert attrs(keys) == {"http.request.method": "GET"}
    assert int(token["endTimeUnixNano"]) <= int(keys["startTimeUnixNano"]) <= int(server["endTimeUnixNano"])


def test_spans_arrive_over_https_from_a_collector_the_ca_file_vouches_for(start_sidecar, tmp_path):
    ca = TestCA(tmp_path)
    collector = Collector(ca.issue("collector", dns=("localhost",)))
    try:
        sc = start_sidecar(tracing(collector.url, otlp_ca_file=str(ca.cert_file)))
        r = sc.request("GET", "/echo", [("traceparent", "00-%s-%s-01" % (TRACE, PARENT))])
        assert r.status == 200
        spans = collector.of_trace(TRACE, 2)
        assert {s["kind"] for s in spans} == {2, 3}
        assert collector.paths[0] == ("/v1/traces", "application/json")
        assert collector.server_names and set(collector.server_names) == {"localhost"}, collector.server_names
        assert poll(lambda: metric(sc, "sidecar_trace_spans_exported_total") >= 2)
        assert metric(sc, "sidecar_trace_export_failures_total") == 0
    finally:
        collector.close()


@pytest.mark.parametrize("trust", ["system store", "another CA"])
def test_a_collector_whose_certificate_is_not_trusted_gets_no_spans(start_sidecar, tmp_path, trust):
    collector = Collector(TestCA(tmp_path).issue("collector"))
    try:
        more = {}
        if trust == "another CA":
            other = tmp_path / "other"
            other.mkdir()
            more["otlp_ca_file"] = str(TestCA(other, name="another test CA").cert_file)
        sc = start_sidecar(tracing(collector.url, **more))
        assert requests_stay_fast(sc) < 0.5
        assert poll(lambda: metric(sc, "sidecar_trace_export_failures_total") >= 1, 8), sc.admin("/metrics").body
        assert poll(lambda: metric(sc, "sidecar_trace_spans_dropped_total") >= 80, 8), sc.admin("/metrics").body
        assert sc.logged(lambda out: "spans could not be exported" in out and "not verified" in out), sc.log_tail()
        assert requests_stay_fast(sc) < 0.5
        time.sleep(1.5)  # another export cycle: still refused, still one warning
        assert collector.batches == []
        assert metric(sc, "sidecar_trace_spans_exported_total") == 0
        assert sc.output().count("spans could not be exported") == 1, sc.log_tail()
    finally:
        collector.close()


def traced(*headers, trace=TRACE):
    return list(headers) + [("traceparent", "00-%s-%s-01" % (trace, PARENT))]


def children(spans, name):
    """The server span and the spans named `name`, each a client span of it."""
    server = next(s for s in spans if s["kind"] == 2)
    named = [s for s in spans if s["name"] == name]
    assert named, [s["name"] for s in spans]
    for span in named:
        assert span["kind"] == 3 and span["parentSpanId"] == server["spanId"], span
        assert span["traceId"] == server["traceId"] and span["spanId"] != server["spanId"]
        assert int(server["startTimeUnixNano"]) <= int(span["startTimeUnixNano"]) <= int(span["endTimeUnixNano"])
    return server, named


def test_an_account_deletion_exports_the_revoke_at_apple_and_the_revocation_stored(start_native, browser, collector):
    sc, apple = start_native(tracing(collector.url))
    b = web_user(sc, apple, browser)
    origin = ("Origin", "http://127.0.0.1:%d" % sc.port)
    r = b.request("POST", "/.auth/revoke", traced(("Accept", "application/json"), origin))
    assert r.status == 200, r.body
    spans = collector.of_trace(TRACE, 3)
    server, (revoke,) = children(spans, "apple token revoke")
    _, (stored,) = children(spans, "store revoke")
    assert server["name"] == "POST" and server["parentSpanId"] == PARENT
    assert attrs(revoke) == {"http.request.method": "POST", "http.response.status_code": "200"}
    assert attrs(stored) == {"db.operation.name": "revoke"} and stored["status"] == {"code": 0}
    # Apple first, then the store; both before the answer.
    assert int(revoke["endTimeUnixNano"]) <= int(stored["startTimeUnixNano"])
    assert int(stored["endTimeUnixNano"]) <= int(server["endTimeUnixNano"])
    assert len(spans) == 3


def test_a_logout_exports_the_revocation_stored_and_the_revoke_at_apple(start_native, browser, collector):
    sc, apple = start_native(tracing(collector.url))
    b = web_user(sc, apple, browser)
    r = b.request("POST", "/.auth/logout", traced(("Accept", "application/json")))
    assert r.status == 204, r.body
    # Apple's revocation runs after the answer: its span may come in a later batch.
    spans = collector.of_trace(TRACE, 3)
    server, (stored,) = children(spans, "store revoke")
    _, (revoke,) = children(spans, "apple token revoke")
    assert attrs(server)["http.response.status_code"] == "204"
    assert attrs(stored) == {"db.operation.name": "revoke"}
    assert int(stored["endTimeUnixNano"]) <= int(server["endTimeUnixNano"])
    assert attrs(revoke) == {"http.request.method": "POST", "http.response.status_code": "200"}
    assert int(stored["endTimeUnixNano"]) <= int(revoke["startTimeUnixNano"])
    assert len(spans) == 3


def test_a_native_refresh_that_revalidates_exports_the_apple_refresh(start_native, collector):
    sc, apple = start_native(merge(tracing(collector.url), {"session": {"revalidate": "2s"}}))
    answer = signed_in(sc, apple)
    time.sleep(2.2)  # due: whole seconds, at most the period
    r = sc.request("POST", "/.auth/native/refresh", traced(*bearer(answer["token"])))
    assert r.status == 200, r.body
    # The check runs behind the answer, still a span of the request that started it.
    spans = collector.of_trace(TRACE, 2)
    server, (refresh,) = children(spans, "apple token refresh")
    assert server["name"] == "POST" and attrs(server)["http.response.status_code"] == "200"
    assert attrs(refresh) == {"http.request.method": "POST", "http.response.status_code": "200"}
    assert refresh["status"] == {"code": 0}
    assert len(spans) == 2


def test_an_apple_notification_exports_the_revocation_stored_and_its_jti_claim(
        start_auth_sidecar, browser, emulator_keys, collector):
    sc, apple = start_auth_sidecar(tracing(collector.url))
    key, kid = emulator_key(emulator_keys)
    b = browser(sc, apple)
    assert b.login()[0].status == 303
    sub = b.request("GET", "/.auth/me", [("Accept", "application/json")]).json()["id"]
    payload = json.dumps({"payload": sign(event_claims(apple.issuer, sub), key, kid)}).encode()
    r = sc.request("POST", "/.auth/apple/notifications", traced(("Content-Type", "application/json")), payload)
    assert r.status == 200, r.body
    spans = collector.of_trace(TRACE, 3)
    server, (stored,) = children(spans, "store revoke")
    _, (claim,) = children(spans, "store claim")
    assert attrs(stored) == {"db.operation.name": "revoke"} and attrs(claim) == {"db.operation.name": "claim"}
    # The sessions end first; the jti is spent last, so a failure before it lets Apple retry.
    assert int(stored["endTimeUnixNano"]) <= int(claim["startTimeUnixNano"])
    assert int(claim["endTimeUnixNano"]) <= int(server["endTimeUnixNano"])
    assert len(spans) == 3


def test_a_proxied_request_that_revalidates_its_session_exports_the_apple_refresh(start_native, browser, collector):
    sc, apple = start_native(merge(tracing(collector.url), {"session": {"revalidate": "2s"}}))
    b = web_user(sc, apple, browser)
    time.sleep(2.2)  # due: whole seconds, at most the period
    r = b.request("GET", "/private", traced(HTML))
    assert r.status == 200, r.body
    spans = collector.of_trace(TRACE, 3)
    server, (refresh,) = children(spans, "apple token refresh")
    _, (upstream,) = children(spans, "upstream")
    assert server["name"] == "GET" and server["parentSpanId"] == PARENT
    assert attrs(refresh) == {"http.request.method": "POST", "http.response.status_code": "200"}
    assert len(spans) == 3


def test_a_forwarded_notification_exports_its_queued_event_and_a_duplicate_the_event_dropped(
        start_auth_sidecar, browser, emulator_keys, collector):
    receiver = Receiver()
    try:
        sc, apple = start_auth_sidecar(merge(
            tracing(collector.url), {"notifications": {"forward_to": "http://127.0.0.1:%d/hooks" % receiver.port}}))
        key, kid = emulator_key(emulator_keys)
        b = browser(sc, apple)
        assert b.login()[0].status == 303
        sub = b.request("GET", "/.auth/me", [("Accept", "application/json")]).json()["id"]
        payload = json.dumps({"payload": sign(event_claims(apple.issuer, sub, jti="traced-1"), key, kid)}).encode()
        json_type = ("Content-Type", "application/json")
        assert sc.request("POST", "/.auth/apple/notifications", traced(json_type), payload).status == 200
        spans = collector.of_trace(TRACE, 4)
        _, (stored,) = children(spans, "store revoke")
        _, (queued,) = children(spans, "store enqueue")
        _, (claim,) = children(spans, "store claim")
        assert attrs(queued) == {"db.operation.name": "enqueue"} and queued["status"] == {"code": 0}
        assert int(stored["endTimeUnixNano"]) <= int(queued["startTimeUnixNano"])
        assert int(queued["endTimeUnixNano"]) <= int(claim["startTimeUnixNano"])
        assert len(spans) == 4

        # Apple's duplicate: queued again, its jti found spent, the second event dropped.
        again = "5" * 32
        assert sc.request("POST", "/.auth/apple/notifications", traced(json_type, trace=again), payload).status == 200
        spans = collector.of_trace(again, 5)
        _, (ack,) = children(spans, "store ack")
        _, (claim,) = children(spans, "store claim")
        assert attrs(ack) == {"db.operation.name": "ack"} and ack["status"] == {"code": 0}
        assert int(claim["endTimeUnixNano"]) <= int(ack["startTimeUnixNano"])
        assert len(spans) == 5
    finally:
        receiver.close()


def test_incoming_sampled_traces_are_limited_per_second(start_sidecar, collector):
    """A client sending sampled traceparents as fast as it can gets a burst of
    `max_incoming_sampled_per_second` recorded; beyond it, its traces are continued unsampled
    (flag 00 upstream, no span exported), so it cannot flood the collector."""
    config = tracing(collector.url, sample_ratio=0.0)
    config["tracing"]["max_incoming_sampled_per_second"] = 3
    sc = start_sidecar(config)
    sampled, unsampled = [], []
    with sc.conn() as c:
        for i in range(30):
            trace = "%032x" % (0xabc000 + i)
            flags = forwarded(c.request("GET", "/echo", [("traceparent", "00-%s-%s-01" % (trace, PARENT))]).json())[2]
            (sampled if flags == "01" else unsampled).append(trace)
    assert 3 <= len(sampled) <= 6, sampled
    for trace in sampled:
        collector.of_trace(trace, 2)
    time.sleep(1.5)
    assert not [s for s in collector.spans() if s["traceId"] in unsampled]
    # The budget refills: a second later, sampled parents are honoured again.
    time.sleep(1.0)
    trace = "%032x" % 0xdef000
    assert forwarded(sc.request("GET", "/echo", [("traceparent", "00-%s-%s-01" % (trace, PARENT))]).json())[2] == "01"
    collector.of_trace(trace, 2)
