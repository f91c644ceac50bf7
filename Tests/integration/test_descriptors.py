"""File descriptors: the soft limit raised at start, a warning when
max_connections cannot fit, and at the limit a log line, a counter and accepting resumed by
freeing idle connections — never a silent stall."""
import json
import resource
import socket
import subprocess
import time

import pytest

import rawhttp
from conftest import free_port, poll, sidecar_binary, to_yaml


def limit_nofile(soft, hard=None):
    def apply():
        _, current_hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard if hard is not None else current_hard))
    return apply


def lines(sc):
    return [json.loads(l) for l in sc.output().splitlines() if l.strip()]


def metric(sc, name):
    for line in sc.admin("/metrics").body.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])



def settled_fd_count(sc):
    """The sidecar's descriptors once its start-up is over: Apple's keys fetched (a connection
    the fetch may keep), then no change for 0.3 s. Counted earlier, on a loaded machine, the
    count can miss descriptors opened a moment later, and a test at a small limit then expects
    room that is not there."""
    assert sc.logged(lambda out: "apple keys fetched" in out), sc.log_tail()
    last, stable_since = sc.fd_count(), time.monotonic()
    deadline = time.monotonic() + 5
    while time.monotonic() - stable_since < 0.3 and time.monotonic() < deadline:
        time.sleep(0.05)
        now = sc.fd_count()
        if now != last:
            last, stable_since = now, time.monotonic()
    return last

def test_a_low_soft_limit_is_raised_to_the_hard_limit_at_start(start_sidecar):
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    sc = start_sidecar(preexec=limit_nofile(256))
    raised = next(e for e in lines(sc) if e["msg"] == "raised the file-descriptor soft limit")
    assert raised["from"] == 256 and raised["to"] == hard
    soft_now = int(open("/proc/%d/limits" % sc.pid).read().split("Max open files")[1].split()[0])
    assert soft_now == hard
    if hard >= 20128:
        assert not any("max_connections" in e["msg"] for e in lines(sc))


def test_max_connections_beyond_the_hard_limit_is_warned_about_once_naming_both_numbers(start_sidecar):
    """`run` under nofile 256:256 with max_connections 10000 set warns at start, naming what
    is needed and what the limit is — once: the configuration's warnings and the server's own
    start-up check once both logged it. Would catch no warning, one without the numbers, and
    the duplicate."""
    sc = start_sidecar({"limits": {"max_connections": 10000}}, preexec=limit_nofile(256, 256))
    warnings = [e for e in lines(sc) if "limits.max_connections" in e["msg"]]
    assert len(warnings) == 1, warnings
    warning = warnings[0]
    assert warning["level"] == "warning"
    assert "10000 connections need about 20128 file descriptors" in warning["msg"]
    assert "the limit is 256" in warning["msg"], warning


def test_the_default_max_connections_is_lowered_to_what_the_limit_allows_without_a_warning(start_sidecar):
    """Defaults never warn: unset, max_connections is the default 10000 or what the descriptor
    limit serves, whichever is less ((256 - 128) / 2 = 64 under nofile 256:256), said once
    at info level."""
    sc = start_sidecar(preexec=limit_nofile(256, 256))
    said = [e for e in lines(sc) if "limits.max_connections" in e["msg"]]
    assert len(said) == 1 and said[0]["level"] == "info", said
    assert said[0]["msg"].startswith("limits.max_connections: 64,"), said
    assert not any(e["level"] == "warning" and "descriptor" in e["msg"] for e in lines(sc))


def test_a_default_lowered_by_a_few_percent_is_not_said_at_every_start(start_sidecar):
    """Under nofile 20000 the default 10,000 becomes 9,936: no line about it (it was logged at
    every start of every normal installation)."""
    sc = start_sidecar(preexec=limit_nofile(20000, 20000))
    assert sc.logged(lambda out: '"msg":"listening"' in out)
    assert not [e for e in lines(sc) if "limits.max_connections" in e["msg"]], lines(sc)


@pytest.mark.parametrize("max_connections,warned", [(None, False), (10000, True), (64, False)],
                         ids=["default", "set-too-high", "fits"])
def test_check_warns_when_max_connections_cannot_fit_the_descriptor_limit(base_config, tmp_path, max_connections, warned):
    """`sidecar check` under nofile 256:256: with max_connections 10000 set (about 20128
    descriptors) one warning on stderr naming both numbers, exit 0; with 64 (64 x 2 + 128 =
    256, it fits) none; unset, none either (the default adapts to the limit). Would catch a
    check that never looks at the limit, one that warns whatever the numbers, one that warns
    about a default, and a message without the numbers."""
    config = base_config(free_port(), free_port())
    if max_connections is not None:
        config["limits"] = {"max_connections": max_connections}
    path = tmp_path / "sidecar.yaml"
    path.write_text(to_yaml(config) + "\n")
    done = subprocess.run([str(sidecar_binary()), "check", "--config", str(path)], capture_output=True, text=True,
                          timeout=30, preexec_fn=limit_nofile(256, 256))
    assert done.returncode == 0, done.stdout + done.stderr
    warnings = [l for l in done.stderr.splitlines() if "limits.max_connections" in l]
    if not warned:
        assert warnings == [], done.stderr
        return
    assert len(warnings) == 1, done.stderr
    assert warnings[0].startswith("%s: warning: limits.max_connections: " % path), warnings
    assert "10000 connections need about 20128 file descriptors" in warnings[0], warnings
    assert "the limit is 256 (soft 256, hard 256)" in warnings[0], warnings


def test_at_the_descriptor_limit_it_logs_counts_frees_idle_connections_and_keeps_serving(start_sidecar):
    sc = start_sidecar({"limits": {"max_connections": 10000}}, preexec=limit_nofile(64, 64))
    held = []
    try:
        for _ in range(90):  # more than the process can hold: idle keep-alive connections
            s = socket.create_connection(("127.0.0.1", sc.port), timeout=5)
            held.append(s)
        time.sleep(0.5)
        answered = False
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not answered:
            try:
                answered = rawhttp.request(sc.port, "GET", "/echo", timeout=3).status == 200
            except (OSError, rawhttp.Closed):
                time.sleep(0.2)
        assert answered, "no request was served at the descriptor limit\n" + sc.log_tail()
        exhausted = [e for e in lines(sc) if e["msg"].startswith("accept4() failed (24: Too many open files)")]
        assert len(exhausted) == 1, exhausted  # once per episode, not per failed accept
        assert exhausted[0]["limit_soft"] == 64 and exhausted[0]["level"] == "error"
        deadline = time.monotonic() + 3  # workers publish their counters about once a second
        while metric(sc, "sidecar_accept_descriptor_exhausted_total") < 1 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert metric(sc, "sidecar_accept_descriptor_exhausted_total") >= 1
        closed = 0
        for s in held:  # the oldest idle connections were the ones closed to make room
            s.settimeout(0.05)
            try:
                if s.recv(1) == b"":
                    closed += 1
            except socket.timeout:
                pass
            except OSError:
                closed += 1
        assert closed > 0
    finally:
        for s in held:
            s.close()
    time.sleep(0.5)
    assert rawhttp.request(sc.port, "GET", "/echo", timeout=5).status == 200


def server_side_sockets(port):
    """(receive queue, inode) of every established server-side socket of `port`, from
    /proc/net/tcp; the inode is 0 while the socket waits in the listen queue, so a non-zero
    one means the sidecar accepted it (counting the sidecar's descriptors instead raced with
    its own short-lived connections, such as the Apple key fetch at start)."""
    sockets = []
    for line in open("/proc/net/tcp").read().splitlines()[1:]:
        fields = line.split()
        if int(fields[1].split(":")[1], 16) == port and fields[3] == "01":
            sockets.append((int(fields[4].split(":")[1], 16), int(fields[9])))
    return sockets


def server_side_queues(port):
    """The receive queue of every established server-side socket of `port` (accepted or
    still in the listen queue), from /proc/net/tcp: 0 once the sidecar has read what its
    client sent."""
    queues = []
    for line in open("/proc/net/tcp").read().splitlines()[1:]:
        fields = line.split()
        if int(fields[1].split(":")[1], 16) == port and fields[3] == "01":
            queues.append(int(fields[4].split(":")[1], 16))
    return queues


def is_closed(s):
    s.settimeout(0.05)
    try:
        return s.recv(1) == b""
    except socket.timeout:
        return False
    except OSError:
        return True


def test_at_the_descriptor_limit_idle_connections_are_freed_before_unfinished_heads_then_the_oldest_heads(start_sidecar):
    """Slots are freed idle keep-alive connections first, then the oldest
    unfinished request heads. With nofile 64:64 and one worker: 8 connections holding half a
    request head (the oldest), 8 idle ones (newer), heads up to 2 below the limit (newer
    still), then 16 more heads. The idle ones must go first although they are younger than the
    first heads; once none is left, the oldest heads go, never the newer ones — nor the
    connections just accepted with their head still unread in the socket, which are not idle.
    Would catch freeing by age alone (the first heads would go before the idle ones), freeing
    heads before idle connections, newest-first freeing, counting a just-accepted connection
    whose request is still in the socket as idle (its request would be lost), and freeing
    nothing."""
    sc = start_sidecar({"workers": 1, "limits": {"max_connections": 10000, "header_timeout": "60s",
                                                 "idle_timeout": "60s"}}, preexec=limit_nofile(64, 64))
    head = b"GET /echo HTTP/1.1\r\nHost: t\r\n"  # no blank line: the head is unfinished
    base = settled_fd_count(sc)
    room = 64 - base
    assert room >= 36, "the sidecar already holds %d descriptors" % base
    held = []

    def connect(n, data):
        group = []
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", sc.port), timeout=5)
            if data:
                s.sendall(data)
            group.append(s)
        held.extend(group)
        return group

    def settled(count):
        """All `count` connections accepted and everything they sent read by the sidecar."""
        def done():
            sockets = server_side_sockets(sc.port)
            return len(sockets) == count and all(inode and not queue for queue, inode in sockets)
        return poll(done, timeout=10)

    try:
        oldest_heads = connect(8, head)
        assert settled(8), sc.log_tail()
        idle = connect(8, None)
        assert settled(16), sc.log_tail()
        time.sleep(0.5)  # silent past the new-connection grace (250 ms): idle from here on
        fill = connect(room - 16 - 2, head)
        assert settled(room - 2), sc.log_tail()
        assert not any("accept4() failed" in e["msg"] for e in lines(sc)), "the limit was met before the test meant to"
        overflow = connect(16, head)
        # 2 accepted; the limit: the 8 idle closed; 8 more accepted; the limit again: the 8
        # oldest heads closed; the last 6 accepted. room - 2 connections remain.
        state = lambda: "".join("x" if is_closed(s) else "." for s in held)  # noqa: E731
        assert poll(lambda: len(server_side_queues(sc.port)) == room - 2 and not any(server_side_queues(sc.port)),
                    timeout=10), (room, server_side_queues(sc.port), state(), sc.log_tail())
        assert all(is_closed(s) for s in idle), "an idle connection was kept while heads were closed"
        assert not any(is_closed(s) for s in fill + overflow), "newer heads were closed before the oldest: " + state()
        assert all(is_closed(s) for s in oldest_heads), "with no idle connection left, the oldest heads were not freed: " + state()
        exhausted = [e for e in lines(sc) if e["msg"].startswith("accept4() failed (24: Too many open files)")]
        assert len(exhausted) == 1 and exhausted[0]["freed"] == 8, exhausted  # the first freeing: the 8 idle
    finally:
        for s in held:
            s.close()
    assert poll(lambda: rawhttp.request(sc.port, "GET", "/echo", timeout=5).status == 200, timeout=5)


def test_connections_accepted_just_before_the_limit_is_met_again_keep_their_requests(start_sidecar):
    """At the descriptor limit slots are freed from idle connections and the oldest
    unfinished heads, never from connections that have just been accepted and whose request is
    on its way. With nofile 64:64 and one worker: heads beyond the limit (the listener backs off
    100 ms after freeing the 8 oldest), then 20 new connections queued while it waits, each
    sending a whole GET 0.6 s after connecting. At the next rounds the sidecar accepts 8 of
    them and meets the limit again: it must free older heads, not the 8 it just accepted
    (quiet only because their requests have not arrived yet). Every one of the 20 is answered.
    Would catch a just-accepted connection taken for idle and closed unanswered."""
    sc = start_sidecar({"workers": 1, "limits": {"max_connections": 10000, "header_timeout": "60s",
                                                 "idle_timeout": "60s"}}, preexec=limit_nofile(64, 64))
    head = b"GET /echo HTTP/1.1\r\nHost: t\r\n"  # no blank line: the head is unfinished
    room = 64 - settled_fd_count(sc)
    held = []
    try:
        for _ in range(room + 4):
            s = socket.create_connection(("127.0.0.1", sc.port), timeout=5)
            s.sendall(head)
            held.append(s)
        newcomers = [socket.create_connection(("127.0.0.1", sc.port), timeout=5) for _ in range(20)]
        held.extend(newcomers)
        time.sleep(0.6)
        unanswered = []
        for i, s in enumerate(newcomers):  # one at a time: each needs an upstream descriptor too
            try:
                s.sendall(b"GET /echo HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
                s.settimeout(10)
                reply = b""
                while b"\r\n\r\n" not in reply:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    reply += chunk
                if not reply.startswith(b"HTTP/1.1 200"):
                    unanswered.append((i, reply[:40]))
            except OSError as error:
                unanswered.append((i, repr(error)))
        assert not unanswered, "closed without an answer: %r\n%s" % (unanswered, sc.log_tail())
    finally:
        for s in held:
            s.close()


def test_a_whole_request_arriving_after_the_limit_was_met_by_unfinished_heads_is_served(start_sidecar):
    """At the descriptor limit a complete request is served, not dropped. With nofile
    128:128 and the default workers, 160 connections hold unfinished heads (more than fit:
    slots are freed oldest head first), then one more client sends a whole GET a second later:
    it gets its answer, never a close."""
    sc = start_sidecar({"limits": {"max_connections": 10000}}, preexec=limit_nofile(128, 128))
    head = b"GET /echo HTTP/1.1\r\nHost: t\r\n"
    held = []
    try:
        for _ in range(160):
            s = socket.create_connection(("127.0.0.1", sc.port), timeout=5)
            s.sendall(head)
            held.append(s)
        time.sleep(1.0)
        started = time.monotonic()
        response = rawhttp.request(sc.port, "GET", "/echo", timeout=10)
        assert response.status == 200, response
        # The sidecar serves on and resumes by itself; resumed by itself; a few 100 ms back-off rounds at most,
        # and 5 s covers a loaded 2-core machine.
        assert time.monotonic() - started < 5.0
    finally:
        for s in held:
            s.close()
