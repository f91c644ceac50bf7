"""Response heads over HTTP/2 as the upstream sent them. libnghttp2 is handed each head by
reference and serializes it when the stream's turn comes, which may be long after the upstream
answered: behind other streams' frames, or behind a client that reads nothing for a while.
Every head must arrive as its own upstream wrote it, whatever other streams were answered or
reset in the meantime."""
import pytest

from h2_support import H2Client
from upstream import head_fields

STREAMS = 60


def expected(tag, n, size):
    return [(name.lower(), value) for name, value in head_fields(tag, n, size)]


@pytest.mark.deadline(60)
def test_large_heads_held_behind_a_full_socket_arrive_as_the_upstream_sent_them(sidecar, upstream):
    # A receive buffer of a few kilobytes and no reading: once the socket and the connection's
    # hold are full (~64 KiB, a few heads), the later heads wait in the session, queued.
    c = H2Client(sidecar.port, receive_buffer=4096, timeout=30.0)
    heads = {}
    for i in range(STREAMS):
        n, size = 30 + i % 20, 150 + 7 * i  # 4.5 to 18 KiB each, different per stream
        tag = "stream-%d" % i
        sid = c.start("GET", "/heads?tag=%s&n=%d&size=%d" % (tag, n, size))
        heads[sid] = (tag, n, size)
    stats = upstream.wait_for(lambda s: s["requests"] >= STREAMS, timeout=20.0)
    assert stats["requests"] >= STREAMS, stats
    # Streams reset while their heads may still be queued: their frames are dropped, and the
    # heads around them must not be disturbed by it.
    reset = set(list(heads)[5::9])
    for sid in reset:
        c.conn.reset_stream(sid)
    c.flush()
    c.pump(timeout=30.0, until=lambda: all(
        c.responses[sid].ended or c.responses[sid].reset is not None for sid in heads if sid not in reset))
    for sid, (tag, n, size) in heads.items():
        if sid in reset:
            continue
        r = c.responses[sid]
        assert r.status == 200 and r.ended, (sid, r.status, r.reset)
        got = [(name, value) for name, value in r.headers if name.startswith("x-head-")]
        assert got == expected(tag, n, size), (sid, tag)
        assert r.body == b"heads:" + tag.encode()
    # The connection goes on: a later head comes out whole as well.
    r = c.request("GET", "/heads?tag=after&n=45&size=300")
    assert r.status == 200 and r.ended
    assert [(name, value) for name, value in r.headers if name.startswith("x-head-")] == expected("after", 45, 300)
    c.close()


def test_heads_of_streams_answered_together_each_keep_their_own_fields(sidecar):
    c = H2Client(sidecar.port)
    for round in range(3):
        ids = {c.start("GET", "/heads?tag=r%d-%d&n=%d&size=%d" % (round, i, 5 + i, 20 + i)): i for i in range(40)}
        c.pump(timeout=10.0, until=lambda: all(c.responses[sid].ended for sid in ids))
        for sid, i in ids.items():
            r = c.responses[sid]
            assert r.status == 200 and r.ended, (sid, r.status, r.reset)
            got = [(name, value) for name, value in r.headers if name.startswith("x-head-")]
            assert got == expected("r%d-%d" % (round, i), 5 + i, 20 + i), sid
    c.close()


def test_the_settings_say_no_rfc7540_priorities(sidecar):
    """RFC 9218 §2.1: the server keeps no RFC 7540 priority tree and says so; a client's
    PRIORITY frames are read and ignored (a flood of them still ends the connection)."""
    c = H2Client(sidecar.port)
    no_rfc7540_priorities = 0x9
    assert c.pump(until=lambda: no_rfc7540_priorities in c.conn.remote_settings)
    assert c.conn.remote_settings[no_rfc7540_priorities] == 1
    r = c.request("GET", "/heads?tag=after-settings&n=3&size=10")
    assert r.status == 200 and r.ended
    c.close()
