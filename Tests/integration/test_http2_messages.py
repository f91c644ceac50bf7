"""RFC 9113's message rules, which the sidecar's HTTP/2 codec holds itself (libnghttp2's HTTP
messaging checks are off, so that each field is read once): malformed field values, a body that
does not match its content-length, and trailer sections that do not end the stream or carry
what a trailer may not. Each is a stream error (RST_STREAM with PROTOCOL_ERROR) that nothing of
reaches the upstream, and the connection goes on serving its other streams."""
import json

import hyperframe.frame
import pytest

from h2_support import H2Client, H2Response

PROTOCOL_ERROR = 1


def ends_in_protocol_error(c, sid):
    r = c.responses[sid]
    c.pump(until=lambda: r.ended or r.reset is not None or c.closed)
    return r.status is None and r.reset == PROTOCOL_ERROR


def still_serves(c, upstream, before):
    """The connection serves a next stream, and the upstream saw only it since `before`."""
    assert c.request("GET", "/echo?next=1").status == 200
    targets = upstream.stats()["targets"]
    assert targets[before:] == ["GET /echo?next=1"], targets[before:]


@pytest.mark.parametrize("value", [" lead", "trail ", "tab\t", "a\x00b", "a\rb", "a\nb", "a\x01b", "a\x7fb"])
def test_a_field_value_rfc9113_refuses_is_a_stream_error(sidecar, upstream, value):
    upstream.reset()
    c = H2Client(sidecar.port)
    sid = c.start("GET", "/echo", [("x-note", value)])
    assert ends_in_protocol_error(c, sid), (value, c.responses[sid].status, c.responses[sid].reset)
    still_serves(c, upstream, 0)
    c.close()


@pytest.mark.parametrize("authority", ["", " a", "a\t"])
def test_an_empty_or_padded_authority_is_a_stream_error(sidecar, upstream, authority):
    upstream.reset()
    c = H2Client(sidecar.port)
    sid = c.start("GET", "/echo", authority=authority)
    assert ends_in_protocol_error(c, sid), repr(authority)
    still_serves(c, upstream, 0)
    c.close()


@pytest.mark.parametrize("lengths", [["5"], ["3", "3"], ["+3"], ["0x3"], ["3 "]])
def test_a_content_length_no_body_can_match_is_a_stream_error(sidecar, upstream, lengths):
    """A head that ends the stream yet promises bytes, or a content-length that is not one
    number: RFC 9113 §8.1.1."""
    upstream.reset()
    c = H2Client(sidecar.port)
    sid = c.start("POST", "/echo", [("content-length", v) for v in lengths])
    assert ends_in_protocol_error(c, sid), lengths
    still_serves(c, upstream, 0)
    c.close()


def test_bytes_past_the_content_length_never_reach_the_upstream(sidecar, upstream):
    """The DATA after the promised length would follow the body on the upstream connection,
    where an HTTP/1.1 server reads it as the next request (request smuggling)."""
    upstream.reset()
    c = H2Client(sidecar.port)
    # HEADERS and both DATA frames in one write: the sidecar reads the excess before it can
    # have answered the request, so the stream must end in PROTOCOL_ERROR.
    sid = c.conn.get_next_available_stream_id()
    c.conn.send_headers(sid, [(":method", "POST"), (":path", "/echo"), (":scheme", "http"),
                              (":authority", "127.0.0.1"), ("content-length", "5")])
    c.conn.send_data(sid, b"hello")
    c.conn.send_data(sid, b"GET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n", end_stream=True)
    c.responses[sid] = H2Response()
    c.flush()
    assert ends_in_protocol_error(c, sid)
    c.request("GET", "/echo?next=1")
    targets = upstream.stats()["targets"]
    assert not any("smuggled" in t for t in targets), targets
    # The same promise kept is a request like any other.
    r = c.request("POST", "/echo", [("content-length", "5")], body=b"hello")
    assert r.status == 200 and json.loads(r.body)["body"] == "hello"
    c.close()


def test_bytes_past_the_content_length_after_the_answer_never_reach_the_upstream(sidecar, upstream):
    """The excess sent after the declared body, in a write of its own: the sidecar may have
    forwarded the five bytes and answered by then (a complete request), or reset the stream;
    either way the excess goes nowhere and the connection serves on."""
    upstream.reset()
    c = H2Client(sidecar.port)
    sid = c.start("POST", "/echo", [("content-length", "5")], body=b"hello", end=False)
    c.send_body(sid, b"GET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n", end=True)
    r = c.responses[sid]
    c.pump(until=lambda: r.ended or r.reset is not None or c.closed)
    assert r.reset == PROTOCOL_ERROR or (r.status == 200 and json.loads(r.body)["body"] == "hello"), \
        (r.status, r.reset, r.body)
    assert c.request("GET", "/echo?next=1").status == 200
    targets = upstream.stats()["targets"]
    assert not any("smuggled" in t for t in targets), targets
    c.close()


def test_a_body_short_of_its_content_length_is_a_stream_error(sidecar, upstream):
    upstream.reset()
    c = H2Client(sidecar.port)
    sid = c.start("POST", "/echo", [("content-length", "10")], body=b"12345", end=True)
    assert ends_in_protocol_error(c, sid)
    c.close()


def test_trailers_must_end_the_stream(sidecar, upstream):
    upstream.reset()
    c = H2Client(sidecar.port)
    sid = c.start("POST", "/echo", body=b"x", end=False)
    # A HEADERS frame after the body without END_STREAM (the h2 library will not send one).
    frame = hyperframe.frame.HeadersFrame(sid)
    frame.data = c.conn.encoder.encode([("x-checksum", "1")])
    frame.flags.add("END_HEADERS")
    c.send_raw(frame.serialize())
    assert ends_in_protocol_error(c, sid)
    c.close()


@pytest.mark.parametrize("trailer", [(":path", "/admin"), ("Grpc-Status", "0"), ("x-sum", " 1"),
                                     ("transfer-encoding", "chunked"), ("te", "gzip")])
def test_a_trailer_field_rfc9113_refuses_is_a_stream_error(sidecar, upstream, trailer):
    upstream.reset()
    c = H2Client(sidecar.port)
    sid = c.start("POST", "/echo", body=b"hello", end=False)
    c.send_trailers(sid, [("x-ok", "1"), trailer])
    assert ends_in_protocol_error(c, sid), trailer
    # The request never completed upstream: no answer from it reached the client.
    assert c.responses[sid].body == b""
    still_serves(c, upstream, len(upstream.stats()["targets"]))
    c.close()
