"""File descriptors (SPEC §3, issue 16 item 2): the soft limit raised at start, a warning when
max_connections cannot fit, and at the limit a log line, a counter and accepting resumed by
freeing idle connections — never a silent stall."""
import json
import resource
import socket
import time

import rawhttp


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


def test_a_low_soft_limit_is_raised_to_the_hard_limit_at_start(start_sidecar):
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    sc = start_sidecar(preexec=limit_nofile(256))
    raised = next(e for e in lines(sc) if e["msg"] == "raised the file-descriptor soft limit")
    assert raised["from"] == 256 and raised["to"] == hard
    soft_now = int(open("/proc/%d/limits" % sc.pid).read().split("Max open files")[1].split()[0])
    assert soft_now == hard
    if hard >= 20128:
        assert not any("max_connections" in e["msg"] for e in lines(sc))


def test_max_connections_beyond_the_hard_limit_is_warned_about_naming_both_numbers(start_sidecar):
    sc = start_sidecar(preexec=limit_nofile(256, 256))
    warning = next(e for e in lines(sc) if "limits.max_connections" in e["msg"])
    assert warning["level"] == "warning"
    assert "10000 connections need about 20128 file descriptors" in warning["msg"] and "256" in warning["msg"]


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
