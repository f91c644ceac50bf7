"""Metrics for the sign-in world: /metrics counts logins, sessions and Apple key fetches;
/readyz waits for Apple's keys and names the condition that fails."""
import re
import time

import pytest

from conftest import free_port

HTML = ("Accept", "text/html")
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\.)*)"')


def parse_labels(text):
    labels, rest = {}, text
    while rest:
        m = LABEL.match(rest)
        assert m, "bad label set %r" % text
        assert m.group(1) not in labels, "label %s twice in %r" % (m.group(1), text)
        labels[m.group(1)] = m.group(2)
        rest = rest[m.end():]
        if rest:
            assert rest.startswith(","), "bad label set %r" % text
            rest = rest[1:]
    return labels


def parse(text):
    """Checks the Prometheus text format 0.0.4 and returns {(name, labels): value}: every
    sample line is `name{labels} value`, belongs to a family declared before it by `# HELP`
    and `# TYPE`, counters end in `_total`, no sample appears twice."""
    helps, types, samples = set(), {}, {}
    for line in text.splitlines():
        if line.startswith("# HELP "):
            helps.add(line.split(" ", 3)[2])
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            assert kind in ("counter", "gauge", "histogram", "summary", "untyped"), line
            assert name not in types, "family %s declared twice" % name
            types[name] = kind
            continue
        assert line and not line.startswith("#"), "unexpected line %r" % line
        m = SAMPLE.match(line)
        assert m, "not `name{labels} value`: %r" % line
        name, labels, value = m.group(1), parse_labels(m.group(2) or ""), float(m.group(3))
        family = name
        for suffix in ("_bucket", "_sum", "_count"):
            base = name[:-len(suffix)]
            if name.endswith(suffix) and types.get(base) == "histogram":
                family = base
        assert family in types and family in helps, "%s has no HELP/TYPE before it" % name
        if types[family] == "counter":
            assert name.endswith("_total"), "counter %s does not end in _total" % name
            assert value >= 0
        key = (name, frozenset(labels.items()))
        assert key not in samples, "sample %r twice" % line
        samples[key] = value
    return samples


def metrics(sc):
    r = sc.admin("/metrics")
    assert r.status == 200
    assert r.header("Content-Type").startswith("text/plain; version=0.0.4")
    return parse(r.body.decode())


def value(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())), 0.0)


def wait_for_metric(sc, name, at_least, **labels):
    """Polls /metrics (workers publish at most once a second: 5 s leaves 4 s for a loaded
    2-core machine) until the sample reaches `at_least`; returns all samples."""
    deadline = time.monotonic() + 5
    while True:
        samples = metrics(sc)
        if value(samples, name, **labels) >= at_least or time.monotonic() > deadline:
            assert value(samples, name, **labels) >= at_least, (name, labels, value(samples, name, **labels))
            return samples
        time.sleep(0.1)


def poll(fn, timeout=10.0):
    """fn()'s first truthy value within `timeout` seconds (readiness follows Apple's key fetch,
    retried after 1, 2, 4 s: 10 s covers the next try and a loaded 2-core machine)."""
    deadline = time.monotonic() + timeout
    while True:
        result = fn()
        if result or time.monotonic() > deadline:
            return result
        time.sleep(0.1)


@pytest.fixture
def site(start_auth_sidecar):
    return start_auth_sidecar()


def test_exposition_parses_and_declares_every_family(site):
    sc, _ = site
    assert sc.request("GET", "/pub/x").status == 200
    samples = wait_for_metric(sc, "sidecar_requests_total", 1, route="upstream", code="2xx")
    families = {name for name, _ in samples}
    for name in ("sidecar_logins_total", "sidecar_sessions_total", "sidecar_session_reseals_total",
                 "sidecar_jwks_refreshes_total", "sidecar_apple_request_seconds_bucket",
                 "sidecar_upstream_response_seconds_count", "sidecar_upstream_connect_failures_total",
                 "sidecar_open_connections", "sidecar_session_cache_total"):
        assert name in families, name
    assert ("sidecar_logins_total", frozenset({"outcome": "ok"}.items())) in samples
    # Label values come from fixed sets only.
    outcomes = {dict(labels).get("reason") for name, labels in samples if name == "sidecar_sessions_total"}
    assert outcomes == {"ok", "malformed", "unsupported_version", "unknown_key", "authentication_failed",
                        "invalid_payload", "expired", "idle_expired", "revoked"}


def test_successful_login_and_its_session_are_counted(site, browser):
    sc, apple = site
    b = browser(sc, apple)
    r, _ = b.login()
    assert r.status == 303
    samples = wait_for_metric(sc, "sidecar_logins_total", 1, outcome="ok")
    assert value(samples, "sidecar_jwks_refreshes_total", result="ok") >= 1
    assert value(samples, "sidecar_apple_request_seconds_count", call="token") == 1
    assert value(samples, "sidecar_apple_request_seconds_count", call="keys") >= 1
    assert b.get("/private").status == 200
    assert b.get("/private").status == 200
    samples = wait_for_metric(sc, "sidecar_sessions_total", 2, via="cookie", result="accepted", reason="ok")
    assert value(samples, "sidecar_logins_total", outcome="ok") == 1
    assert value(samples, "sidecar_sessions_total", via="cookie", result="rejected",
                 reason="authentication_failed") == 0


def test_session_cache_hits_and_misses_are_counted(start_auth_sidecar, browser):
    """The first request of a session opens it (a miss) and keeps it; the next ones find it.
    With session.cache_entries at its smallest (16), the same holds for one user."""
    sc, apple = start_auth_sidecar({"session": {"cache_entries": 16}})
    b = browser(sc, apple)
    r, _ = b.login()
    assert r.status == 303
    for _ in range(3):
        assert b.get("/private").status == 200
    samples = wait_for_metric(sc, "sidecar_session_cache_total", 2, result="hit")
    hits = value(samples, "sidecar_session_cache_total", result="hit")
    misses = value(samples, "sidecar_session_cache_total", result="miss")
    assert (hits, misses) == (2, 1), (hits, misses)
    assert value(samples, "sidecar_sessions_total", via="cookie", result="accepted", reason="ok") == 3


def test_state_mismatch_counts_its_reason(site, browser):
    sc, apple = site
    b = browser(sc, apple)
    _, location = b.start_login()
    fields, _ = b.authorize(location)
    fields["state"] = "A" * 32
    assert b.callback(fields).status == 400
    samples = wait_for_metric(sc, "sidecar_logins_total", 1, outcome="state_mismatch")
    assert value(samples, "sidecar_logins_total", outcome="ok") == 0


def test_apple_refusal_counts_a_bounded_reason(site, browser):
    sc, apple = site
    apple.arm("invalid_grant")
    r, _ = browser(sc, apple).login()
    assert r.status == 502
    wait_for_metric(sc, "sidecar_logins_total", 1, outcome="exchange_invalid_grant")


def test_tampered_cookie_is_counted_as_rejected(site, browser):
    sc, apple = site
    b = browser(sc, apple)
    b.login()
    name, cookie = b.session_cookie
    middle = len(cookie) // 2
    tampered = cookie[:middle] + ("B" if cookie[middle] != "B" else "C") + cookie[middle + 1:]
    assert sc.request("GET", "/private", [HTML, ("Cookie", "%s=%s" % (name, tampered))]).status == 302
    samples = wait_for_metric(sc, "sidecar_sessions_total", 1, via="cookie", result="rejected",
                              reason="authentication_failed")
    assert value(samples, "sidecar_sessions_total", via="cookie", result="accepted", reason="ok") == 0


def test_foreign_bearer_and_revoked_session_are_counted_by_carrier(site, browser):
    sc, apple = site
    b = browser(sc, apple)
    b.login()
    name, cookie = b.session_cookie
    assert b.get("/private", headers=(HTML, ("Authorization", "Bearer not.a.session"))).status == 200
    assert b.request("POST", "/.auth/logout", [HTML]).status == 200  # the signed-out page
    assert sc.request("GET", "/private", [HTML, ("Cookie", "%s=%s" % (name, cookie))]).status == 302
    samples = wait_for_metric(sc, "sidecar_sessions_total", 1, via="cookie", result="rejected", reason="revoked")
    assert value(samples, "sidecar_sessions_total", via="bearer", result="rejected", reason="malformed") == 1


def test_a_request_refused_for_its_session_says_why_in_its_access_line(site, browser):
    """The access line of a request whose session was refused carries the reason
    `sidecar_sessions_total` counts it under, prefixed `session_`."""
    import json
    sc, apple = site
    b = browser(sc, apple)
    b.login()
    name, cookie = b.session_cookie
    assert b.request("POST", "/.auth/logout", [HTML]).status == 200
    sc.request("GET", "/private", [HTML, ("Cookie", "%s=%s" % (name, cookie)), ("X-Request-Id", "revoked-1")])
    middle = len(cookie) // 2  # a middle character: the last one's spare bits could make it non-canonical
    tampered = cookie[:middle] + ("B" if cookie[middle] != "B" else "C") + cookie[middle + 1:]
    sc.request("GET", "/private", [HTML, ("Cookie", "%s=%s" % (name, tampered)), ("X-Request-Id", "tampered-1")])
    sc.request("GET", "/pub/x", [HTML, ("X-Request-Id", "public-1")])

    def entries():
        found = {}
        for line in sc.output().splitlines():
            if line.startswith("{") and '"msg":"request"' in line:
                e = json.loads(line)
                found[e["request_id"]] = e
        return found if {"revoked-1", "tampered-1", "public-1"} <= found.keys() else None
    found = poll(entries)
    assert found, sc.output()
    assert found["revoked-1"]["reason"] == "session_revoked" and found["revoked-1"]["status"] == 302
    assert found["tampered-1"]["reason"] == "session_authentication_failed"
    assert "reason" not in found["public-1"]


def test_request_durations_are_a_histogram_by_who_answered(site):
    sc, _ = site
    assert sc.request("GET", "/pub/x").status == 200
    assert sc.request("GET", "/.auth/me", [("Accept", "application/json")]).status == 401
    samples = wait_for_metric(sc, "sidecar_request_duration_seconds_count", 1, route="upstream")
    samples = wait_for_metric(sc, "sidecar_request_duration_seconds_count", 1, route="sidecar")
    assert value(samples, "sidecar_request_duration_seconds_bucket", route="upstream", le="+Inf") >= 1
    routes = {dict(labels).get("route") for name, labels in samples if name == "sidecar_request_duration_seconds_count"}
    assert routes == {"upstream", "sidecar"}


def test_readyz_waits_for_apple_keys(start_sidecar, start_emulator):
    port, apple_port = free_port(), free_port()
    sc = start_sidecar({"apple": {"base_url": "http://127.0.0.1:%d" % apple_port}}, port=port)
    r = sc.admin("/readyz")
    assert r.status == 503 and r.body == b"apple keys not fetched\n", (r.status, r.body)
    wait_for_metric(sc, "sidecar_jwks_refreshes_total", 1, result="error")
    start_emulator(["http://127.0.0.1:%d/.auth/callback" % port],
                   extra_args=("--listen", "127.0.0.1:%d" % apple_port))
    assert poll(lambda: sc.admin("/readyz").status == 200), sc.admin("/readyz").body
    assert sc.admin("/readyz").body == b"ready\n"
    wait_for_metric(sc, "sidecar_jwks_refreshes_total", 1, result="ok")


def test_readyz_names_an_unreachable_upstream(start_sidecar):
    sc = start_sidecar({"upstream": "http://127.0.0.1:%d" % free_port()})
    # Apple's keys come from the test upstream's control port, so only the upstream fails.
    body = poll(lambda: sc.admin("/readyz").body == b"upstream unreachable\n")
    assert body, sc.admin("/readyz").body
    assert sc.admin("/readyz").status == 503
