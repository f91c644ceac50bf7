"""HTTP/2 attacks, sent frame by frame: too many streams, rapid reset (CVE-2023-44487),
CONTINUATION floods (CVE-2024-27316), HPACK bombs, SETTINGS/PING/PRIORITY/empty-DATA floods,
zero-window readers, slow heads, idle connections, and GOAWAY on SIGTERM."""
import json
import shutil
import signal
import subprocess
import time

import hpack
import pytest
from hyperframe.frame import (ContinuationFrame, DataFrame, HeadersFrame, PingFrame, PriorityFrame,
                              RstStreamFrame, SettingsFrame)

from conftest import poll
from h2_support import H2Client

ENHANCE_YOUR_CALM = 11
REFUSED_STREAM = 7
BASICS = [(":method", "GET"), (":scheme", "http"), (":authority", "127.0.0.1"), (":path", "/echo")]


def metric(sc, sample):
    """The sample's value once the workers have published it (about once a second)."""
    def read():
        text = sc.admin("/metrics").body.decode()
        values = [float(line.split(" ")[1]) for line in text.splitlines() if line.split(" ")[0] == sample]
        return values[0] if values and values[0] > 0 else None
    return poll(read, timeout=4) or 0


def calm(c):
    goaway = c.wait_goaway(timeout=5)
    assert goaway is not None, "no GOAWAY"
    assert goaway.error_code == ENHANCE_YOUR_CALM, goaway
    return goaway


def test_streams_beyond_max_streams_are_refused(start_sidecar):
    sc = start_sidecar({"limits": {"max_streams": 10}})
    c = H2Client(sc.port)  # streams opened before the server's SETTINGS arrive
    ids = [c.start("GET", "/slow?delay=1") for _ in range(12)]
    c.pump(timeout=8, until=lambda: all(c.responses[i].ended or c.responses[i].reset is not None for i in ids))
    refused = [i for i in ids if c.responses[i].reset == REFUSED_STREAM]
    served = [i for i in ids if c.responses[i].status == 200]
    assert len(served) == 10 and len(refused) == 2, [(c.responses[i].status, c.responses[i].reset) for i in ids]


def test_rapid_reset_ends_the_connection(sidecar, upstream):
    c = H2Client(sidecar.port)
    encoder = hpack.Encoder()
    block = encoder.encode(BASICS)
    burst = b""
    for n in range(1000):
        sid = 1 + 2 * n
        burst += HeadersFrame(sid, block, flags=["END_HEADERS", "END_STREAM"]).serialize()
        burst += RstStreamFrame(sid, error_code=8).serialize()
    c.send_raw(burst)
    calm(c)
    assert metric(sidecar, 'sidecar_http2_refusals_total{reason="rapid_reset"}') == 1
    # Far fewer than the thousand streams reached the upstream.
    assert upstream.stats()["requests"] < 400
    assert sidecar.request("GET", "/echo").status == 200


@pytest.mark.parametrize("frame_bytes", [0, 16000])
def test_a_continuation_flood_ends_the_connection(sidecar, frame_bytes):
    c = H2Client(sidecar.port)
    block = hpack.Encoder().encode(BASICS)
    c.send_raw(HeadersFrame(1, block).serialize())
    for _ in range(40):
        c.send_raw(ContinuationFrame(1, b"\x40\x01a\x01b" * (frame_bytes // 5)).serialize())
        if c.closed:
            break
    calm(c)
    # Empty frames trip the count of CONTINUATION frames; full ones the bound on the block's
    # bytes, or first the decoded list's (libnghttp2 decodes each frame as it arrives).
    reasons = ["continuation_flood"] if frame_bytes == 0 else ["header_block_too_large", "header_list_too_large"]
    assert sum(metric(sidecar, 'sidecar_http2_refusals_total{reason="%s"}' % r) for r in reasons) == 1
    assert sidecar.request("GET", "/echo").status == 200


def test_an_hpack_bomb_is_bounded_by_max_header_bytes(sidecar, upstream):
    """One 4 KiB field put in the dynamic table, then referenced a thousand times: 4 MiB
    decoded from a few KiB on the wire."""
    upstream.reset()
    c = H2Client(sidecar.port)
    encoder = hpack.Encoder()
    block = encoder.encode(BASICS + [("x-bomb", "a" * 4000)])
    block += bytes([0x80 | 62]) * 1000  # indexed: the newest dynamic entry
    c.send_raw(HeadersFrame(1, block, flags=["END_HEADERS", "END_STREAM"]).serialize())
    calm(c)
    assert upstream.stats()["requests"] == 0
    assert metric(sidecar, 'sidecar_http2_refusals_total{reason="header_list_too_large"}') == 1


@pytest.mark.parametrize("kind", ["settings", "ping", "priority", "empty_data"])
def test_control_frame_floods_end_the_connection(sidecar, kind):
    c = H2Client(sidecar.port)
    frames = b""
    if kind == "empty_data":
        frames += HeadersFrame(1, hpack.Encoder().encode([(":method", "POST")] + BASICS[1:]),
                               flags=["END_HEADERS"]).serialize()
    for n in range(3000):
        if kind == "settings":
            frames += SettingsFrame(0, settings={SettingsFrame.MAX_CONCURRENT_STREAMS: 100}).serialize()
        elif kind == "ping":
            frames += PingFrame(0, opaque_data=n.to_bytes(8, "big")).serialize()
        elif kind == "priority":
            frames += PriorityFrame(3 + 2 * (n % 50), depends_on=0, stream_weight=16).serialize()
        else:
            frames += DataFrame(1, b"").serialize()
    c.send_raw(frames)
    calm(c)
    assert metric(sidecar, 'sidecar_http2_refusals_total{reason="control_frame_flood"}') == 1


def test_a_zero_window_reader_holds_bounded_memory_and_its_stream_ends(start_sidecar):
    sc = start_sidecar({"limits": {"idle_timeout": "1s", "response_buffer": "64KiB"}})
    clients = []
    for _ in range(3):  # warm up
        c = H2Client(sc.port)
        assert len(c.request("GET", "/bytes?n=%d" % (4 << 20)).body) == 4 << 20
        c.close()
    time.sleep(0.3)
    before = sc.rss_kib()
    for _ in range(50):
        c = H2Client(sc.port, settings={SettingsFrame.INITIAL_WINDOW_SIZE: 0})
        c.start("GET", "/bytes?n=%d" % (8 << 20))
        clients.append(c)
    time.sleep(0.8)
    held = sc.rss_kib() - before
    # 50 × (64 KiB held for the stream + the session's state); without the bound, 50 × 8 MiB.
    assert held < 50 * 200 + 8 * 1024, "50 zero-window readers grew RSS by %d KiB" % held
    c = clients[0]
    r = c.responses[1]
    c.pump(timeout=6, until=lambda: r.reset is not None or c.closed)
    assert r.reset is not None or c.closed, "a stream nobody reads is ended"
    line = poll(lambda: next((json.loads(x) for x in sc.output().splitlines()
                              if x.startswith("{") and '"path":"/bytes"' in x and '"error"' in x), None), timeout=6)
    assert line and line["protocol"] == "HTTP/2.0" and line["error"] == "client_send_timeout", line


def test_a_head_never_finished_closes_the_connection_at_header_timeout(start_sidecar):
    sc = start_sidecar({"limits": {"header_timeout": "1s"}})
    c = H2Client(sc.port)
    c.send_raw(HeadersFrame(1, hpack.Encoder().encode(BASICS)).serialize())  # no END_HEADERS
    started = time.monotonic()
    c.pump(timeout=5, until=lambda: c.closed)
    assert c.closed and time.monotonic() - started < 3


def test_an_idle_connection_is_closed_at_idle_timeout(start_sidecar):
    sc = start_sidecar({"limits": {"idle_timeout": "1s", "header_timeout": "1s"}})
    c = H2Client(sc.port)
    assert c.request("GET", "/echo").status == 200
    started = time.monotonic()
    c.pump(timeout=5, until=lambda: c.closed)
    assert c.closed and 0.5 < time.monotonic() - started < 3.5


def test_sigterm_sends_goaway_and_finishes_the_streams_in_flight(sidecar):
    """GOAWAY(NO_ERROR) naming the last stream taken; a stream in flight still gets its whole
    answer (curl, which keeps reading after GOAWAY), and the process exits cleanly."""
    c = H2Client(sidecar.port)
    sid = c.start("GET", "/slow?delay=1")
    curl = subprocess.Popen([shutil.which("curl"), "-sS", "--http2-prior-knowledge", "-w", " %{http_version} %{http_code}",
                             "http://127.0.0.1:%d/slow?delay=1" % sidecar.port], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    time.sleep(0.3)
    sidecar.signal(signal.SIGTERM)
    goaway = c.wait_goaway(timeout=3)
    assert goaway is not None and goaway.error_code == 0 and goaway.last_stream_id == sid, goaway
    out, err = curl.communicate(timeout=10)
    assert out.endswith(" 2 200"), (out, err)
    assert sidecar.wait_exit(10) == 0
