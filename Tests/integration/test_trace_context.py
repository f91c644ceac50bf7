"""W3C trace context: a client's traceparent is continued (when trusted), otherwise a trace is
started; the upstream gets the sidecar's own span; the access line and every other line of a
request carry its trace_id."""
import re

import pytest

from conftest import access_line, log_entries as entries, poll, seen

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"
VALID = "00-%s-%s-00" % (TRACE, PARENT)
FORMAT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")
HTML = ("Accept", "text/html,application/xhtml+xml")


def forwarded(echo):
    """(trace id, parent id, flags) of the one traceparent the upstream got."""
    values = seen(echo, "traceparent")
    assert len(values) == 1, echo["headers"]
    match = FORMAT.match(values[0])
    assert match, values
    return match.groups()



def test_a_valid_traceparent_is_continued_with_the_sidecars_span(sidecar):
    e = sidecar.request("GET", "/echo", [("traceparent", VALID), ("tracestate", "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"),
                                         ("X-Request-Id", "trace-valid")]).json()
    trace, parent, flags = forwarded(e)
    assert (trace, flags) == (TRACE, "00") and parent != PARENT and parent != "0" * 16
    assert seen(e, "tracestate") == ["congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"]
    assert access_line(sidecar, "trace-valid")["trace_id"] == TRACE


def test_the_sampled_flag_and_every_tracestate_field_are_kept(sidecar):
    e = sidecar.request("GET", "/echo", [("traceparent", "00-%s-%s-01" % (TRACE, PARENT)),
                                         ("tracestate", "a=1"), ("tracestate", "b=2")]).json()
    assert forwarded(e)[0::2] == (TRACE, "01")
    assert seen(e, "tracestate") == ["a=1,b=2"]


@pytest.mark.parametrize("value", [
    "00-%s-%s-01" % (TRACE.upper(), PARENT),
    "00-%s-%s-01" % ("0" * 32, PARENT),
    "00-%s-%s-01" % (TRACE, "0" * 16),
    "00-%s-%s-01-extra" % (TRACE, PARENT),
    "ff-%s-%s-01" % (TRACE, PARENT),
    "00-%s-%s-1" % (TRACE, PARENT),
    "00-%s -%s-01" % (TRACE, PARENT),
    "garbage",
])
def test_an_invalid_traceparent_starts_a_trace_without_its_tracestate(sidecar, value):
    e = sidecar.request("GET", "/echo", [("traceparent", value), ("tracestate", "a=1")]).json()
    trace, parent, flags = forwarded(e)
    assert trace != TRACE and trace != "0" * 32 and flags == "01"
    assert seen(e, "tracestate") == []


def test_two_traceparents_are_as_good_as_none(sidecar):
    e = sidecar.request("GET", "/echo", [("traceparent", VALID), ("traceparent", VALID), ("tracestate", "a=1")]).json()
    assert forwarded(e)[0] != TRACE
    assert seen(e, "tracestate") == []


def test_a_higher_version_is_read_forward_compatibly(sidecar):
    e = sidecar.request("GET", "/echo", [("traceparent", "cc-%s-%s-01-later" % (TRACE, PARENT))]).json()
    assert forwarded(e)[0::2] == (TRACE, "01")


def test_an_oversized_tracestate_is_dropped(sidecar):
    e = sidecar.request("GET", "/echo", [("traceparent", VALID), ("tracestate", "a=" + "x" * 511)]).json()
    assert forwarded(e)[0] == TRACE
    assert seen(e, "tracestate") == []


def test_without_a_traceparent_each_request_starts_its_own_trace(sidecar):
    traces = set()
    with sidecar.conn() as c:
        for i in range(5):
            e = c.request("GET", "/echo", [("X-Request-Id", "new-%d" % i)]).json()
            trace, _, flags = forwarded(e)
            assert flags == "01"
            assert access_line(sidecar, "new-%d" % i)["trace_id"] == trace
            traces.add(trace)
    assert len(traces) == 5


def test_a_tracestate_without_a_traceparent_is_not_forwarded(sidecar):
    e = sidecar.request("GET", "/echo", [("tracestate", "a=1")]).json()
    assert seen(e, "tracestate") == []


def test_untrusted_clients_start_a_trace_when_trust_incoming_is_off(start_sidecar):
    sc = start_sidecar({"tracing": {"trust_incoming": False}, "trusted_proxies": ["10.0.0.0/8"]})
    e = sc.request("GET", "/echo", [("traceparent", VALID), ("tracestate", "a=1")]).json()
    assert forwarded(e)[0] != TRACE and seen(e, "tracestate") == []


def test_a_trusted_proxy_keeps_its_trace_when_trust_incoming_is_off(start_sidecar):
    sc = start_sidecar({"tracing": {"trust_incoming": False}, "trusted_proxies": ["127.0.0.1/32"]})
    e = sc.request("GET", "/echo", [("traceparent", VALID), ("tracestate", "a=1")]).json()
    assert forwarded(e)[0] == TRACE and seen(e, "tracestate") == ["a=1"]


def test_text_access_lines_carry_the_trace_id(start_sidecar):
    sc = start_sidecar({"log": {"format": "text"}})
    sc.request("GET", "/echo", [("traceparent", VALID), ("X-Request-Id", "text-1")])
    assert sc.logged(lambda out: "request_id=text-1" in out and ("trace_id=" + TRACE) in out), sc.output()


def test_the_sidecars_own_answers_and_refusals_log_a_trace_id(sidecar):
    assert sidecar.request("GET", "/.auth/nothing-here", [("traceparent", VALID), ("X-Request-Id", "own-1")]).status == 404
    assert access_line(sidecar, "own-1")["trace_id"] == TRACE
    with sidecar.conn() as c:
        c.send(b"GET /echo HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n")
        assert c.read_response().status == 400

    def refused():
        return next((e for e in entries(sidecar) if e["msg"] == "request" and e.get("status") == 400), None)
    line = poll(refused)
    assert line and re.fullmatch("[0-9a-f]{32}", line["trace_id"]) and line["trace_id"] != "0" * 32, sidecar.output()


def test_a_login_failure_is_logged_with_the_requests_trace_id(start_auth_sidecar, browser):
    sc, apple = start_auth_sidecar()
    b = browser(sc, apple)
    _, location = b.start_login()
    fields, _ = b.authorize(location)
    fields["state"] = "A" * 32
    r = b.callback(fields, headers=(HTML, ("X-Request-Id", "cb-trace"), ("traceparent", VALID)))
    assert r.status == 400

    def failure():
        return next((e for e in entries(sc) if e.get("request_id") == "cb-trace" and e["msg"] != "request"), None)
    line = poll(failure)
    assert line and line["trace_id"] == TRACE, sc.output()
    assert access_line(sc, "cb-trace")["trace_id"] == TRACE


# -- tracestate per W3C Trace Context level 1 ---------------------------------------------------
@pytest.mark.parametrize("value", [
    '<script>,"},{"inj":1',
    '<script>,"},{"inj":1' + "x" * 490,  # 512 bytes: the size alone let it through
    "a=1,a=2",  # a key twice
    ",".join("k%d=v" % i for i in range(33)),  # 33 members
    "A=1",  # keys are lower-case
    "1a=1",  # a simple key starts with a letter
    "a",  # no value
    "a=",  # an empty value
    "=1",  # an empty key
    "a=b=c",  # `=` in a value
    "t@1system=1",  # a system id starts with a letter
    "t@systemidtoolong=1",  # a system id of 15
    "@s=1",  # an empty tenant
    "a=1;b=2",  # `;` is no separator, and `=` cannot be in a value
    "k" * 257 + "=1",  # a key of 257
    "a=" + "v" * 257,  # a value of 257
], ids=["injection", "injection-512", "duplicate", "33-members", "upper-case", "digit-first", "no-value", "empty-value",
        "empty-key", "equals-in-value", "system-digit-first", "system-too-long", "empty-tenant", "semicolon",
        "key-257", "value-257"])
def test_an_invalid_tracestate_is_dropped(sidecar, value):
    e = sidecar.request("GET", "/echo", [("traceparent", VALID), ("tracestate", value)]).json()
    assert forwarded(e)[0] == TRACE
    assert seen(e, "tracestate") == []


def test_an_invalid_tracestate_field_beside_a_valid_one_drops_both(sidecar):
    e = sidecar.request("GET", "/echo", [("traceparent", VALID), ("tracestate", "a=1"), ("tracestate", "a=2")]).json()
    assert seen(e, "tracestate") == []
    e = sidecar.request("GET", "/echo", [("traceparent", VALID), ("tracestate", "a=1"), ("tracestate", "B=2")]).json()
    assert seen(e, "tracestate") == []


@pytest.mark.parametrize("value", [
    "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7",
    "tenant@system=v",
    "1tenant@sys=x",
    "a*/-_9=x y <z> \"q\"",
    "a=1, ,b=2",  # empty members are allowed
    "a=1,\tb=2 ,c=3",
    ",".join("k%d=v" % i for i in range(32)),
    "k" * 256 + "=1",
], ids=["example", "multi-tenant", "tenant-digit-first", "every-key-char", "empty-member", "ows", "32-members",
        "key-256"])
def test_a_valid_tracestate_is_forwarded(sidecar, value):
    e = sidecar.request("GET", "/echo", [("traceparent", VALID), ("tracestate", value)]).json()
    assert seen(e, "tracestate") == [value]


@pytest.mark.parametrize("flags, sent", [("01", "01"), ("00", "00"), ("ff", "01"), ("fe", "00"), ("02", "00"), ("81", "01")])
def test_version_00_forwards_only_the_sampled_flag(sidecar, flags, sent):
    e = sidecar.request("GET", "/echo", [("traceparent", "00-%s-%s-%s" % (TRACE, PARENT, flags))]).json()
    assert forwarded(e)[0::2] == (TRACE, sent)
