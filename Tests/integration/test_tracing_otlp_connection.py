"""The OTLP exporter's connection to the collector: kept alive from batch to batch while the
collector keeps it open, a new one when the collector closed it (no batch lost), and closed
after an answer that does not leave it usable."""
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import poll
from test_tracing_otlp import metric, tracing


class CountingCollector:
    """An HTTP/1.1 OTLP receiver that counts the connections it accepts. `close_after_answer`:
    it closes each connection after answering without saying so, as a collector's idle time-out
    may just as the next batch goes out; `chunked`: its answers are chunked."""

    def __init__(self, close_after_answer=False, chunked=False):
        self.batches, self.connections = [], 0
        lock = threading.Lock()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                super().setup()
                with lock:
                    collector.connections += 1

            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with lock:
                    collector.batches.append(json.loads(body))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                if chunked:
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    self.wfile.write(b"2\r\n{}\r\n0\r\n\r\n")
                else:
                    self.send_header("Content-Length", "2")
                    self.end_headers()
                    self.wfile.write(b"{}")
                if close_after_answer:
                    self.close_connection = True

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def span_count(self):
        return sum(len(ss["spans"]) for b in self.batches for rs in b["resourceSpans"] for ss in rs["scopeSpans"])

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def requests_over(sc, seconds):
    """A request every 0.2 s for `seconds`: spans for several one-a-second batches."""
    sent, end = 0, time.monotonic() + seconds
    with sc.conn() as c:
        while time.monotonic() < end:
            assert c.request("GET", "/echo").status == 200
            sent += 1
            time.sleep(0.2)
    return sent


def exported_all(sc, collector, sent):
    """Every request's two spans (server, upstream) reached the collector; nothing dropped."""
    assert poll(lambda: collector.span_count() == 2 * sent, 8), (collector.span_count(), sent)
    assert poll(lambda: metric(sc, "sidecar_trace_spans_exported_total") == 2 * sent, 4)
    assert metric(sc, "sidecar_trace_spans_dropped_total") == 0
    assert metric(sc, "sidecar_trace_export_failures_total") == 0


@pytest.fixture
def collectors():
    made = []

    def make(**options):
        made.append(CountingCollector(**options))
        return made[-1]
    yield make
    for c in made:
        c.close()


@pytest.mark.parametrize("options, kept", [
    ({}, True),  # one connection for every batch
    ({"close_after_answer": True}, False),  # closed by the collector after each: a new one each time
    ({"chunked": True}, False),  # an answer not framed by a length: not kept
], ids=["kept alive", "closed by the collector", "chunked answers"])
def test_batches_go_over_one_connection_while_the_collector_keeps_it(start_sidecar, collectors, options, kept):
    collector = collectors(**options)
    sc = start_sidecar(tracing(collector.url))
    exported_all(sc, collector, requests_over(sc, 3.5))
    assert len(collector.batches) >= 2
    assert collector.connections == (1 if kept else len(collector.batches))
