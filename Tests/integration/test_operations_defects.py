"""Defects on the request path, each against the real binary: a paused reader,
a stalled reader, a port already taken, a dead upstream, one log schema, SIGTERM and
SIGHUP under keep-alive load."""
import hashlib
import json
import re
import signal
import socket
import threading
import time

import pytest

import rawhttp
from conftest import free_port, poll
from upstream import pattern

TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")



def metric(sc, name, labels):
    text = sc.admin("/metrics").body.decode()
    for line in text.splitlines():
        if line.startswith(name + "{" + labels + "}") or (not labels and line.startswith(name + " ")):
            return float(line.rsplit(" ", 1)[1])
    return None


def json_lines(sc):
    out = []
    for line in sc.output().splitlines():
        if line.strip():
            out.append(json.loads(line))  # every line, access and application alike, is JSON
    return out


def read_body(conn, head):
    """The body of a response whose head was read, by its framing; returns (bytes, complete)."""
    length = re.search(rb"\r\ncontent-length: *(\d+)", head, re.I)
    body = bytearray()
    try:
        if length:
            conn.read_exact(int(length.group(1)), sink=body.extend)  # keeps what came before a close
        else:
            while True:
                size = int(conn.read_until(b"\r\n").strip(), 16)
                if size == 0:
                    conn.read_until(b"\r\n")
                    break
                body += conn.read_exact(size)
                conn.read_exact(2)
    except rawhttp.Closed:
        return bytes(body), False
    return bytes(body), True


# -- 1. a paused reader is not cut off by upstream_timeout ---------------------------------

@pytest.mark.parametrize("target", ["/bytes?n=%d" % (24 << 20), "/chunked?n=%d&size=65536" % (24 << 20)],
                         ids=["content-length", "chunked"])
def test_a_client_pausing_longer_than_upstream_timeout_gets_the_whole_response(start_sidecar, target):
    sc = start_sidecar({"upstream_timeout": "2s"})
    n = 24 << 20
    with rawhttp.Conn(sc.port, rcvbuf=16384, timeout=20) as conn:
        conn.send(b"GET %s HTTP/1.1\r\nHost: t\r\n\r\n" % target.encode())
        head = conn.read_until(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200")
        # Longer than upstream_timeout (2 s): the sidecar holds the upstream back meanwhile.
        # A slow machine only makes the pause longer, still far below the client's own send
        # bound (idle_timeout, 60 s).
        time.sleep(3.5)
        body, complete = read_body(conn, head)
    assert complete and len(body) == n, "response cut off after %d of %d bytes" % (len(body), n)
    assert hashlib.sha256(body).digest() == hashlib.sha256(pattern(0, n)).digest()
    # Something that must not have happened: a late publication can only hide it, never fake it.
    assert metric(sc, "sidecar_responses_incomplete_total", 'reason="upstream_timeout"') == 0


def test_a_client_that_stops_reading_is_closed_at_its_own_bound_and_logged(start_sidecar):
    sc = start_sidecar({"upstream_timeout": "60s", "limits": {"idle_timeout": "2s"}})
    n = 32 << 20
    with rawhttp.Conn(sc.port, rcvbuf=16384, timeout=20) as conn:
        conn.send(b"GET /bytes?n=%d HTTP/1.1\r\nHost: t\r\nX-Request-Id: stalled-1\r\n\r\n" % n)
        head = conn.read_until(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200")
        # Read nothing until the sidecar has given up on this client (its access line says
        # so): reading earlier would be progress, and the two would race. The send bound is
        # idle_timeout (2 s) from the last progress, when the buffers filled: cut after about
        # 2 s; 10 s covers a loaded 2-core machine and is still far below upstream_timeout
        # (60 s), which must not be what ends it.
        entry = access_entry(sc, "stalled-1", timeout=10)
        assert entry, "a stalled reader was never cut off\n" + sc.output()
        received = 0
        started = time.monotonic()
        while not conn.eof and time.monotonic() - started < 10:  # what was in flight, then the close
            chunk = conn.read_available(1)
            received += len(chunk)
            conn.buf.clear()
        assert conn.eof, "a stalled reader was never closed"
    assert received < n
    assert entry["status"] == 200 and entry["error"] == "client_send_timeout"
    assert isinstance(entry["bytes"], int) and 0 < entry["bytes"] < n
    assert entry["level"] == "warning"
    assert poll(lambda: metric(sc, "sidecar_responses_incomplete_total", 'reason="client_send_timeout"') == 1, 5)


def test_a_response_the_upstream_cuts_short_is_logged_as_incomplete(sidecar):
    with rawhttp.Conn(sidecar.port) as conn:
        conn.send(b"GET /bytes?n=1000000&abort_after=300000 HTTP/1.1\r\nHost: t\r\nX-Request-Id: cut-1\r\n\r\n")
        head = conn.read_until(b"\r\n\r\n")
        body, complete = read_body(conn, head)
        assert not complete and len(body) < 1000000
    entry = poll(lambda: next((e for e in json_lines(sidecar) if e.get("request_id") == "cut-1"), None))
    assert entry["status"] == 200 and entry["error"] == "upstream_closed", entry
    assert entry["bytes"] < 1000000
    assert poll(lambda: metric(sidecar, "sidecar_responses_incomplete_total", 'reason="upstream_closed"') == 1, 5)


def access_entry(sc, request_id, timeout=5.0):
    """The access line of `request_id`, polled: the line and the response race (see
    Sidecar.logged)."""
    return poll(lambda: next((e for e in json_lines(sc) if e.get("request_id") == request_id), None), timeout)


def test_an_upstream_silent_in_the_middle_of_a_body_is_cut_at_upstream_timeout_and_logged(start_sidecar):
    """An upstream that stops sending half-way through a Content-Length body (the client is
    reading: nothing is held back for it) is given up at upstream_timeout: the client gets
    what was sent and a close, the access line says status 200, the bytes the client got and
    error=upstream_timeout at warning, and the reason is counted. Would catch a response that
    hangs until the upstream gives up (30 s here), one logged as a success or with another
    reason, and a byte count that is not what the client received."""
    sc = start_sidecar({"upstream_timeout": "1s"})
    n, sent = 1000000, 300000
    with rawhttp.Conn(sc.port, timeout=20) as conn:
        conn.send(b"GET /bytes?n=%d&stall_after=%d&stall=30 HTTP/1.1\r\nHost: t\r\n"
                  b"X-Request-Id: silent-1\r\n\r\n" % (n, sent))
        head = conn.read_until(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200")
        started = time.monotonic()
        body, complete = read_body(conn, head)
        waited = time.monotonic() - started
    assert not complete and len(body) == sent, (complete, len(body))
    assert body == pattern(0, sent)
    # upstream_timeout (1 s) after the upstream's last byte, which is at about the head's
    # arrival; +9 s for a loaded 2-core machine, far below the upstream's own 30 s stall.
    assert waited < 10, "cut after %.1f s, not at upstream_timeout (1 s)" % waited
    entry = access_entry(sc, "silent-1")
    assert entry, sc.output()
    assert entry["status"] == 200 and entry["error"] == "upstream_timeout", entry
    assert entry["bytes"] == sent and entry["level"] == "warning", entry
    assert poll(lambda: metric(sc, "sidecar_responses_incomplete_total", 'reason="upstream_timeout"') == 1, 5)
    assert metric(sc, "sidecar_responses_incomplete_total", 'reason="upstream_closed"') == 0


def test_a_client_that_closes_in_the_middle_of_a_body_is_logged_as_client_closed(start_sidecar, upstream):
    """A client that reads part of a large response and closes its connection: the access line
    says status 200 (what the upstream answered, not 499), the bytes sent before the close
    (more than the client read, less than the body) and error=client_closed at warning; the
    reason is counted and the upstream connection is closed, not kept streaming. Would catch
    a client close logged as a success, as 499 or as an upstream fault, and a sidecar that
    keeps reading the upstream for a client that is gone."""
    sc = start_sidecar()
    n = 64 << 20
    conn = rawhttp.Conn(sc.port, rcvbuf=16384, timeout=20)
    conn.send(b"GET /bytes?n=%d HTTP/1.1\r\nHost: t\r\nX-Request-Id: gone-1\r\n\r\n" % n)
    head = conn.read_until(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    conn.read_exact(100000)
    conn.close()  # unread data left: the kernel resets the connection
    entry = access_entry(sc, "gone-1")
    assert entry, sc.output()
    assert entry["status"] == 200 and entry["error"] == "client_closed", entry
    assert isinstance(entry["bytes"], int) and 100000 <= entry["bytes"] < n, entry
    assert entry["level"] == "warning", entry
    assert poll(lambda: metric(sc, "sidecar_responses_incomplete_total", 'reason="client_closed"') == 1, 5)
    assert upstream.wait_for(lambda s: s["open_connections"] == 0)["open_connections"] == 0  # at once; 5 s


def test_an_upstream_body_that_breaks_its_framing_is_logged_as_upstream_invalid_body(start_sidecar):
    """A chunked body whose next chunk-size line is not hex, after 3 good chunks: the client
    gets the good chunks and a close (never a terminating chunk that would make the truncated
    body look whole), the access line says status 200, the bytes relayed and
    error=upstream_invalid_body at warning, and the reason is counted. Would catch a broken
    upstream body passed on as complete, logged as a success or as upstream_closed."""
    sc = start_sidecar()
    good = 3 * 65536
    with rawhttp.Conn(sc.port, timeout=20) as conn:
        conn.send(b"GET /chunked?n=1000000&size=65536&bad_after=%d HTTP/1.1\r\nHost: t\r\n"
                  b"X-Request-Id: broken-1\r\n\r\n" % good)
        head = conn.read_until(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200")
        body, complete = read_body(conn, head)
    assert not complete and len(body) == good and body == pattern(0, good), (complete, len(body))
    entry = access_entry(sc, "broken-1")
    assert entry, sc.output()
    assert entry["status"] == 200 and entry["error"] == "upstream_invalid_body", entry
    assert entry["bytes"] == good and entry["level"] == "warning", entry
    assert poll(lambda: metric(sc, "sidecar_responses_incomplete_total", 'reason="upstream_invalid_body"') == 1, 5)
    assert metric(sc, "sidecar_responses_incomplete_total", 'reason="upstream_closed"') == 0


# -- 3. a port some other socket listens on, even with SO_REUSEPORT --------------------------

@pytest.mark.parametrize("reuseport", [True, False], ids=["SO_REUSEPORT", "plain"])
def test_a_port_another_socket_listens_on_is_refused_with_exit_2(start_sidecar, reuseport):
    holder = socket.socket()
    if reuseport:
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    holder.bind(("127.0.0.1", 0))
    holder.listen(8)
    port = holder.getsockname()[1]
    try:
        sc = start_sidecar(port=port, ready=False)
        assert sc.wait_exit(10) == 2, sc.log_tail()
        sc.stopped = True  # the exit is the expected outcome
        assert "127.0.0.1:%d" % port in sc.output() and "in use" in sc.output()
    finally:
        holder.close()


def test_a_second_sidecar_on_the_same_port_exits_2(start_sidecar, sidecar):
    second = start_sidecar(port=sidecar.port, ready=False)
    assert second.wait_exit(10) == 2, second.log_tail()
    second.stopped = True
    assert "in use" in second.output()
    assert sidecar.request("GET", "/echo").status == 200


# -- 5. a dead upstream is named in the log, rate-limited, counted under the upstream --------

def test_a_dead_upstream_is_logged_with_its_address_and_errno(start_sidecar):
    dead = free_port()
    sc = start_sidecar({"upstream": "http://127.0.0.1:%d" % dead})
    started = time.monotonic()
    for _ in range(5):
        assert sc.request("GET", "/x").status == 502
    spanned = time.monotonic() - started
    lines = poll(lambda: [e for e in json_lines(sc) if "upstream connect() failed" in e.get("msg", "")])
    # One line per 10 s interval, not one per request: the 5 requests take far less than
    # 10 s, but a machine slow enough to spread them wider is allowed a line per interval.
    assert 1 <= len(lines) <= 1 + int(spanned // 10), "one line per interval, not one per request: %r" % lines
    line = lines[0]
    assert "(111: Connection refused)" in line["msg"] and line["upstream"] == "127.0.0.1:%d" % dead
    assert line["level"] == "error" and line["errno"] == 111
    assert poll(lambda: metric(sc, "sidecar_requests_total", 'route="upstream",code="5xx"') == 5, 5)
    assert metric(sc, "sidecar_requests_total", 'route="sidecar",code="5xx"') == 0
    access = [e for e in json_lines(sc) if e.get("msg") == "request"]
    assert access and all(e["upstream"] == "127.0.0.1:%d" % dead and "upstream_status" not in e for e in access)


# -- one log schema ---------------------------------------------------------------------------

def test_every_json_log_line_has_one_schema_and_access_lines_the_operator_fields(start_sidecar):
    sc = start_sidecar()
    r = sc.request("GET", "/echo/a?x=1&code=SECRETCODE&state=SECRETSTATE&id_token=SECRETTOKEN&y=2", [
        ("User-Agent", "probe/1.0 (test)"), ("X-Request-Id", "schema-1")], host="app.test")
    assert r.status == 200
    sc.request("GET", "/status?code=404")
    assert sc.sighup(), "the reload failed"  # an application-log line too (waited for, not slept for)
    entries = poll(lambda: (lambda es: es if any(e.get("request_id") == "schema-1" for e in es) else None)(json_lines(sc)))
    assert entries, sc.output()
    for e in entries:
        assert TS.match(e["ts"]), e
        assert e["level"] in ("debug", "info", "notice", "warning", "error", "critical"), e
        assert isinstance(e["msg"], str) and e["msg"], e
    assert any(e.get("msg") != "request" for e in entries), "no application line seen"
    access = next(e for e in entries if e.get("request_id") == "schema-1")
    assert access["msg"] == "request" and access["method"] == "GET" and access["path"] == "/echo/a"
    assert access["query"] == "x=1&code=***&state=***&id_token=***&y=2"
    assert access["client"] == "127.0.0.1" and access["host"] == "app.test"
    assert access["user_agent"] == "probe/1.0 (test)"
    assert access["status"] == 200 and access["upstream_status"] == 200
    assert access["upstream"] == sc.config["upstream"][len("http://"):]
    for key in ("status", "bytes", "duration_ms", "upstream_ms"):
        assert isinstance(access[key], int), (key, access)
    assert "SECRET" not in sc.output()


def test_the_access_line_names_the_signed_in_user_and_only_them(start_auth_sidecar, browser):
    """user_id on an access line is the session's subject: for a cookie and for the same
    session as a bearer; absent for an anonymous request and for a cookie that no longer
    opens (after logout). Would catch a missing or wrong user_id, and one taken from a
    session that was refused (a revoked user logged as signed in)."""
    sc, apple = start_auth_sidecar()
    b = browser(sc, apple)
    assert b.login()[0].status == 303
    sub = b.get("/.auth/me").json()["id"]
    name, value = b.session_cookie
    html = ("Accept", "text/html")
    assert b.request("GET", "/private", [html, ("X-Request-Id", "user-cookie")]).status == 200
    assert sc.request("GET", "/api", [("Authorization", "Bearer " + value), ("X-Request-Id", "user-bearer")]).status == 200
    assert sc.request("GET", "/pub/x", [("X-Request-Id", "user-none")]).status == 200
    assert b.request("GET", "/.auth/check", [("X-Request-Id", "user-check")]).status == 200
    assert b.request("POST", "/.auth/logout", [("Accept", "application/json")]).status == 204
    after = sc.request("GET", "/private", [html, ("Cookie", "%s=%s" % (name, value)), ("X-Request-Id", "user-revoked")])
    assert after.status == 302
    entries = {rid: access_entry(sc, rid) for rid in ("user-cookie", "user-bearer", "user-none", "user-revoked",
                                                       "user-check")}
    assert all(entries.values()), sc.output()
    assert entries["user-cookie"]["user_id"] == sub and entries["user-bearer"]["user_id"] == sub, entries
    assert entries["user-check"]["user_id"] == sub, entries
    assert "user_id" not in entries["user-none"] and "user_id" not in entries["user-revoked"], entries


def get_from(port, source, headers, request_id):
    """A GET sent from the loopback address `source` (127.0.0.2 is another peer than
    127.0.0.1 to the sidecar); returns (status, body)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
    with sock:
        extra = "".join("%s: %s\r\n" % h for h in headers)
        sock.sendall(("GET /echo HTTP/1.1\r\nHost: t\r\nX-Request-Id: %s\r\n%sConnection: close\r\n\r\n"
                      % (request_id, extra)).encode())
        data = b""
        while True:
            piece = sock.recv(65536)
            if not piece:
                break
            data += piece
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


def test_the_access_line_client_is_the_forwarded_address_only_from_a_trusted_peer(start_sidecar):
    """Client on an access line, with trusted_proxies =
    [127.0.0.2/32] and requests from both 127.0.0.2 and 127.0.0.1 to one process: from the
    trusted peer it is the address the proxy saw (the last X-Forwarded-For entry), or the
    peer itself without the header; from the untrusted peer a spoofed X-Forwarded-For is
    ignored and client is the peer's own address. Would catch an access log that believes any
    peer's header (a client hiding behind a forged address), one that ignores a trusted
    proxy's (every line naming the proxy), and one that takes the first, client-written
    entry of a chain."""
    sc = start_sidecar({"trusted_proxies": ["127.0.0.2/32"]})
    cases = [
        ("127.0.0.2", [("X-Forwarded-For", "203.0.113.9")], "203.0.113.9", "xff-trusted"),
        ("127.0.0.2", [("X-Forwarded-For", "198.51.100.1, 203.0.113.9")], "203.0.113.9", "xff-chain"),
        ("127.0.0.2", [], "127.0.0.2", "xff-none"),
        ("127.0.0.1", [("X-Forwarded-For", "203.0.113.66")], "127.0.0.1", "xff-spoofed"),
        ("127.0.0.1", [], "127.0.0.1", "xff-plain"),
    ]
    for source, headers, _, rid in cases:
        assert get_from(sc.port, source, headers, rid)[0] == 200, rid
    for _, _, client, rid in cases:
        entry = access_entry(sc, rid)
        assert entry, (rid, sc.output())
        assert entry["client"] == client, (rid, entry)


def test_the_access_line_client_is_taken_from_the_last_x_forwarded_for_field(start_sidecar):
    """A proxy that adds its own X-Forwarded-For field after the one the client sent (HAProxy's
    `option forwardfor` does) is trusted for its field only: the access line's client is the
    last entry of the last field, as the upstream's X-Forwarded-For chain shows it. Would catch
    an access log that reads the first field, i.e. logs the address the client made up."""
    sc = start_sidecar({"trusted_proxies": ["127.0.0.2/32"]})
    headers = [("X-Forwarded-For", "203.0.113.66"), ("X-Forwarded-For", "198.51.100.7")]
    status, body = get_from(sc.port, "127.0.0.2", headers, "xff-two-fields")
    assert status == 200
    forwarded = [v for n, v in json.loads(body)["headers"] if n.lower() == "x-forwarded-for"]
    assert forwarded == ["203.0.113.66, 198.51.100.7, 127.0.0.2"], forwarded  # what the upstream is told
    entry = access_entry(sc, "xff-two-fields")
    assert entry, sc.output()
    assert entry["client"] == "198.51.100.7", entry


def test_text_format_logs_access_lines_as_text_too(start_sidecar):
    sc = start_sidecar({"log": {"format": "text"}})
    sc.request("GET", "/echo/t?token=SECRET", [("X-Request-Id", "text-1"), ("User-Agent", "two words")])
    sc.signal(signal.SIGHUP)
    line_re = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) (debug|info|notice|warning|error|critical) \S")

    def lines():
        ls = [l for l in sc.output().splitlines() if l.strip()]
        return ls if any("text-1" in l for l in ls) else None
    got = poll(lines)
    assert got, sc.output()
    for l in got:
        assert line_re.match(l), l
        assert not l.startswith("{"), l
    access = next(l for l in got if "request_id=text-1" in l)
    assert " info request " in access and " status=200" in access and " path=/echo/t" in access
    assert ' user_agent="two words"' in access and " query=token=***" in access
    assert "SECRET" not in sc.output()
    listening = next(l for l in got if " listening " in l)
    assert " logger=sidecar " in listening or listening.endswith(" logger=sidecar"), listening  # as in JSON


# -- 8. SIGTERM and SIGHUP under concurrent keep-alive load ------------------------------------

class KeepAliveLoad:
    """`connections` clients each sending GETs back to back on one keep-alive connection (as
    wrk does). Counts answered requests and requests written on an open connection that got
    no answer — the failures a drain must not cause. A refused reconnect after the listener
    closed is expected and counted apart."""

    def __init__(self, port, connections=64):
        self.port, self.answered, self.unanswered, self.refused = port, 0, 0, 0
        self.errors = []
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run, daemon=True) for _ in range(connections)]

    def start(self):
        for t in self.threads:
            t.start()
        return self

    def run(self):
        conn = None
        while not self.stop.is_set():
            if conn is None:
                try:
                    conn = rawhttp.Conn(self.port, timeout=10)
                except OSError:
                    with self.lock:
                        self.refused += 1
                    time.sleep(0.05)
                    continue
            if self.closed_by_peer(conn):
                # As curl and browsers do before reusing a connection: one the server already
                # closed is not used (a request written after its FIN cannot be answered).
                conn.close()
                conn = None
                continue
            try:
                conn.send(b"GET /echo HTTP/1.1\r\nHost: t\r\n\r\n")
            except OSError:
                conn.close()  # closed before this request was written: not an unanswered request
                conn = None
                continue
            try:
                head = conn.read_until(b"\r\n\r\n")
                body, complete = read_body(conn, head)
                assert complete
            except (rawhttp.Closed, OSError, AssertionError) as e:
                with self.lock:
                    self.unanswered += 1
                    self.errors.append(repr(e))
                conn.close()
                conn = None
                continue
            with self.lock:
                self.answered += 1
            if b"connection: close" in head.lower():
                conn.close()
                conn = None

    @staticmethod
    def closed_by_peer(conn):
        import select
        readable, _, _ = select.select([conn.sock], [], [], 0)
        if not readable:
            return False
        try:
            return conn.sock.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(15)


def test_sigterm_under_keep_alive_load_answers_every_request_it_received(start_sidecar):
    sc = start_sidecar({"workers": 2})
    load = KeepAliveLoad(sc.port).start()
    # Under way before the signal: waited for rather than assumed after a fixed time (a loaded
    # 2-core machine may need several seconds for 100 answers to 64 Python threads).
    before = poll(lambda: load.answered > 100 and load.answered, timeout=30)
    sc.signal(signal.SIGTERM)
    assert sc.wait_exit(15) == 0, sc.log_tail()
    load.finish()
    assert before, "the load never got going (%d answered)" % load.answered
    assert load.unanswered == 0, "%d requests got no answer: %s" % (load.unanswered, load.errors[:5])


def test_sigterm_answers_a_request_waiting_in_the_listen_queue(start_sidecar):
    # At max_connections the listener is paused: a second client completes its handshake in
    # the kernel's queue and sends a request. Closing the listener would reset it; the drain
    # accepts what the kernel already holds and answers it with Connection: close.
    sc = start_sidecar({"workers": 1, "limits": {"max_connections": 1}})
    first = rawhttp.Conn(sc.port)
    first.send(b"GET /echo HTTP/1.1\r\nHost: t\r\n\r\n")
    assert b" 200 " in first.read_until(b"\r\n\r\n")
    queued = rawhttp.Conn(sc.port)
    queued.send(b"GET /echo HTTP/1.1\r\nHost: t\r\n\r\n")
    time.sleep(0.3)
    sc.signal(signal.SIGTERM)
    head = queued.read_until(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 "), head
    assert b"connection: close" in head.lower()
    assert sc.wait_exit(15) == 0, sc.log_tail()


def test_sighup_under_keep_alive_load_loses_nothing(start_sidecar):
    sc = start_sidecar({"workers": 2})
    load = KeepAliveLoad(sc.port).start()
    # Each reload lands in a stream of requests: 100 answers before each SIGHUP and after the
    # last, waited for rather than assumed after a fixed time (a loaded 2-core machine may
    # need several seconds for them).
    for round_ in range(1, 5):
        assert poll(lambda: load.answered >= 100 * round_, timeout=30), "the load stalled (%d answered)" % load.answered
        if round_ < 4:
            sc.proc.send_signal(signal.SIGHUP)
    load.finish()
    assert load.answered >= 400
    assert load.unanswered == 0 and load.refused == 0, (load.unanswered, load.refused, load.errors[:5])
    assert sc.proc.poll() is None


# -- build and process metrics ----------------------------------------------------------------

def test_metrics_carry_build_info_and_standard_process_families(sidecar):
    text = sidecar.admin("/metrics").body.decode()
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    assert values["process_resident_memory_bytes"] > 1 << 20
    assert values["process_open_fds"] >= 4 and values["process_max_fds"] >= values["process_open_fds"]
    assert abs(values["process_start_time_seconds"] - time.time()) < 120  # started seconds ago; 120 s of slack
    assert values["process_cpu_seconds_total"] > 0
    build = [n for n in values if n.startswith("sidecar_build_info{version=")]
    assert len(build) == 1 and values[build[0]] == 1, build
    started = sidecar.logged(lambda out: next((l for l in out.splitlines() if '"msg":"listening"' in l), None))
    assert started, sidecar.output()
    assert '"version":' in started


def test_a_failed_sign_in_is_logged_with_the_request_id(start_auth_sidecar):
    sc, _ = start_auth_sidecar()
    r = sc.request("POST", "/.auth/callback", [
        ("Content-Type", "application/x-www-form-urlencoded"), ("X-Request-Id", "login-fail-7")],
        body=b"state=forged&code=x")
    assert r.status == 400
    line = poll(lambda: next((e for e in json_lines(sc) if e.get("msg") == "login failed"), None))
    assert line and line["request_id"] == "login-fail-7" and line["status"] == 400, line
    access = poll(lambda: next((e for e in json_lines(sc)
                                if e.get("msg") == "request" and e.get("request_id") == "login-fail-7"), None))
    assert access and access["status"] == 400
