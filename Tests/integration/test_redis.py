"""Several replicas sharing one Redis store, each a real sidecar process
against a real redis-server: what one replica learns, the others know within a second, and
a Redis outage never lets a revoked session back in nor a single-use value be used twice."""
import json
import time

from conftest import poll
from native_support import BUNDLE, body_of, device, new_nonce, post_native
from redis_support import redis_server, replicas  # noqa: F401 (fixtures)
from test_notifications import emulator_key, event_claims, post, sign

HTML = ("Accept", "text/html,application/xhtml+xml")


def signed_in(b, sc):
    b.sidecar = sc
    return b.get("/private").status == 200


def logged_in_browser(browser, sc, apple, email="maria@example.com"):
    b = browser(sc, apple)
    assert b.login(email=email)[0].status == 303
    return b


def refused_within(promise, check):
    """Every replica learns a revocation within 1 s. Call this once the revocation is
    made (its answer is in), so that `promise` seconds from now are at or after the promise's
    end. Polls check() (True once the replica refuses) and fails only if a check sent after
    that end still finds the session: an earlier one may race the publication, and a check
    sent in time but answered late on a loaded machine is not a late revocation."""
    end = time.monotonic() + promise
    while True:
        sent = time.monotonic()
        if check():
            return True
        if sent >= end:
            return False
        time.sleep(0.02)


def test_a_session_sealed_at_one_replica_opens_at_another(replicas, browser):
    (a, b), apple, _ = replicas(2)
    user = logged_in_browser(browser, a, apple)
    assert signed_in(user, a) and signed_in(user, b)


def test_a_logout_at_one_replica_is_refused_at_the_other_within_a_second(replicas, browser):
    (a, b), apple, redis = replicas(2)
    user = logged_in_browser(browser, a, apple)
    cookie = dict(user.jar)
    assert signed_in(user, b)
    user.sidecar = a
    r = user.request("POST", "/.auth/logout", [("Accept", "application/json")])
    assert r.status == 204, (r.status, r.body)
    user.jar = cookie  # a copy of the cookie, kept by someone
    assert refused_within(1.0, lambda: not signed_in(user, b)), "still signed in at B after 1 s"
    assert redis.cli("HLEN", "sidecar:revoked:sessions") == "1"


def test_an_apple_event_at_one_replica_revokes_at_the_other_within_a_second(replicas, browser, emulator_keys):
    (a, b), apple, _ = replicas(2)
    key, kid = emulator_key(emulator_keys)
    user = logged_in_browser(browser, a, apple)
    sub = user.request("GET", "/.auth/me", [("Accept", "application/json")]).json()["id"]
    other = logged_in_browser(browser, a, apple, "omar@example.com")
    r = post(b, sign(event_claims(apple.issuer, sub), key, kid))
    assert r.status == 200, r.body
    assert refused_within(1.0, lambda: not signed_in(user, a)), "still signed in at A after 1 s"
    assert signed_in(other, a)


def test_a_callback_replayed_at_another_replica_is_refused_before_apple_is_asked(replicas, browser):
    (a, b), apple, _ = replicas(2)
    user = browser(a, apple)
    _, location = user.start_login("/")
    fields, _ = user.authorize(location)
    jar = dict(user.jar)
    assert user.callback(fields).status == 303
    exchanges = len(apple.control("GET", "/emulator/token-requests").json())
    replay = browser(b, apple)
    replay.jar = jar
    r = replay.callback(fields, headers=[("Accept", "application/json")])
    assert r.status == 400 and r.json()["reason"] == "state_replayed", (r.status, r.body)
    assert len(apple.control("GET", "/emulator/token-requests").json()) == exchanges


def test_a_native_nonce_spent_at_one_replica_is_refused_at_the_other(replicas):
    (a, b), apple, _ = replicas(2, overrides={"apple": {"native_audiences": [BUNDLE]}}, emulator_args=["--client", BUNDLE])
    nonce = new_nonce(a)
    first = device(apple, nonce=nonce)
    r = post_native(a, body_of(first, nonce=nonce))
    assert r.status == 200, (r.status, r.body)
    second = device(apple, nonce=nonce)
    r = post_native(b, body_of(second, nonce=nonce))
    assert r.status == 401 and r.json() == {"error": "nonce_replayed"}, (r.status, r.body)


def test_with_redis_stopped_sessions_are_still_checked_and_single_use_steps_answer_503(replicas, browser):
    (a, b), apple, redis = replicas(2)
    kept = logged_in_browser(browser, a, apple)
    revoked = logged_in_browser(browser, a, apple, "omar@example.com")
    copy = dict(revoked.jar)
    revoked.sidecar = a
    assert revoked.request("POST", "/.auth/logout", [("Accept", "application/json")]).status == 204
    revoked.jar = copy
    assert refused_within(1.0, lambda: not signed_in(revoked, b)), "still signed in at B after 1 s"
    # A login started before the outage, finished during it.
    pending = browser(a, apple)
    _, location = pending.start_login("/")
    fields, _ = pending.authorize(location)

    redis.stop()
    # The outage is seen at once (the connections close); 5 s covers a loaded 2-core machine.
    assert poll(lambda: a.admin("/readyz").status == 503 and b.admin("/readyz").status == 503, timeout=5)
    assert "store" in a.admin("/readyz").body.decode()
    for sc in (a, b):
        assert signed_in(kept, sc), "a valid session must still be served"
        assert not signed_in(revoked, sc), "a revoked session must stay revoked"
    r = pending.callback(fields, headers=[("Accept", "application/json")])
    assert r.status == 503 and r.json()["reason"] == "store_unavailable", (r.status, r.body)
    kept.sidecar = b
    r = kept.request("POST", "/.auth/logout", [("Accept", "application/json")])
    assert r.status == 503, (r.status, r.body)
    assert a.proc.poll() is None and b.proc.poll() is None

    def unavailable_lines():
        return [line for line in a.output().splitlines() if "store unavailable" in line]
    a.logged(lambda _: unavailable_lines())  # the line and /readyz's answer race
    assert len(unavailable_lines()) == 1, unavailable_lines()  # once per state change, not per retry

    redis.start()  # empty: what replicas knew is pushed back by nobody, but kept in memory
    # Reconnects back off up to 5 s; 10 s covers a loaded 2-core machine.
    assert poll(lambda: a.admin("/readyz").status == 200 and b.admin("/readyz").status == 200, timeout=10)
    assert not signed_in(revoked, a) and not signed_in(revoked, b)
    assert a.logged(lambda out: any("store ready" in line for line in out.splitlines()))  # races /readyz
    # Revocations flow again.
    fresh = logged_in_browser(browser, b, apple, "lea@example.com")
    copy = dict(fresh.jar)
    assert fresh.request("POST", "/.auth/logout", [("Accept", "application/json")]).status == 204
    fresh.jar = copy
    assert refused_within(1.0, lambda: not signed_in(fresh, a)), "still signed in at A after 1 s"
    text = a.admin("/metrics").body.decode()
    assert 'sidecar_store_up{backend="redis",state="ready"} 1' in text
    assert "sidecar_store_resyncs_total" in text


def test_a_revocation_made_while_a_replica_was_cut_off_reaches_it_by_resync(replicas, browser, start_sidecar):
    (a, b), apple, redis = replicas(2)
    user = logged_in_browser(browser, a, apple)
    copy = dict(user.jar)
    # B is paused (as a partitioned replica would be): it misses the publication.
    import signal as sig
    b.proc.send_signal(sig.SIGSTOP)
    try:
        user.sidecar = a
        assert user.request("POST", "/.auth/logout", [("Accept", "application/json")]).status == 204
        # Redis drops B's subscription when its output buffer is gone: simulate by a kill of clients.
        redis.cli("CLIENT", "KILL", "TYPE", "pubsub")
    finally:
        b.proc.send_signal(sig.SIGCONT)
    user.jar = copy
    # Learnt by the resync on reconnect (back-off up to 1 s, then within the promised 1 s);
    # 5 s covers a loaded 2-core machine.
    assert poll(lambda: not signed_in(user, b), timeout=5.0)


def test_a_wrong_password_is_a_clear_start_up_error(start_sidecar, redis_server, tmp_path):
    redis = redis_server(password="right-password")
    secret = tmp_path / "redis-password"
    secret.write_text("wrong-password\n")
    sc = start_sidecar({"revocations": {"store": redis.url, "password": "file:%s" % secret}}, ready=False)
    assert sc.wait_exit(10) == 1
    sc.stopped = True  # the exit is the expected outcome
    out = sc.output()
    assert "revocations.store" in out and "authentication failed" in out and "revocations.password" in out, out
    assert "wrong-password" not in out


def test_the_right_password_is_used(replicas, redis_server, browser, tmp_path):
    redis = redis_server(password="s3cret-pw")
    secret = tmp_path / "pw"
    secret.write_text("s3cret-pw\n")
    (a, b), apple, _ = replicas(2, overrides={"revocations": {"password": "file:%s" % secret}}, redis=redis)
    user = logged_in_browser(browser, a, apple)
    assert signed_in(user, b)
    assert redis.cli("HLEN", "sidecar:revoked:sessions") == "0"


def rediss_server(redis_server, tmp_path):
    from tls_support import TestCA
    ca = TestCA(tmp_path)
    leaf = ca.issue("redis")
    return redis_server(tls={"cert": str(leaf.cert_file), "key": str(leaf.key_file), "ca": str(ca.cert_file)}), ca


def test_rediss_with_a_private_ca_shares_revocations(replicas, redis_server, browser, tmp_path):
    redis, ca = rediss_server(redis_server, tmp_path)
    (a, b), apple, _ = replicas(2, overrides={"revocations": {"ca_file": str(ca.cert_file)}}, redis=redis)
    assert a.admin("/readyz").status == 200
    user = logged_in_browser(browser, a, apple)
    copy = dict(user.jar)
    assert user.request("POST", "/.auth/logout", [("Accept", "application/json")]).status == 204
    user.jar = copy
    assert refused_within(1.0, lambda: not signed_in(user, b)), "still signed in at B after 1 s"


def test_rediss_without_the_ca_is_a_clear_start_up_error(start_sidecar, redis_server, tmp_path):
    redis, _ = rediss_server(redis_server, tmp_path)
    sc = start_sidecar({"revocations": {"store": redis.url}}, ready=False)
    assert sc.wait_exit(10) == 1
    sc.stopped = True
    out = sc.output()
    assert "revocations.store" in out and "TLS certificate not trusted" in out, out


HAPROXY_CFG = """
global
    nbthread 1
defaults
    mode http
    timeout connect 2s
    timeout client 10s
    timeout server 10s
    http-reuse always
frontend front
    bind 127.0.0.1:%(front)d
    default_backend sidecars
backend sidecars
    balance roundrobin
%(servers)s
"""


def test_a_whole_browser_sign_in_through_haproxy_round_robin(replicas, browser, tmp_path):
    import shutil
    import subprocess
    from conftest import free_port
    assert shutil.which("haproxy"), "haproxy is not installed (scripts/test installs it)"
    front = free_port()
    sidecars, apple, redis = replicas(3, front_port=front)
    cfg = tmp_path / "haproxy.cfg"
    cfg.write_text(HAPROXY_CFG % {"front": front, "servers": "\n".join(
        "    server s%d 127.0.0.1:%d" % (i, sc.port) for i, sc in enumerate(sidecars))})
    proc = subprocess.Popen(["haproxy", "-f", str(cfg)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        import rawhttp

        class Front:
            port = front

            def request(self, method, target, headers, body=b""):
                return rawhttp.request(front, method, target, headers=list(headers), body=body, timeout=5)
        assert poll(lambda: _up(front), timeout=10)  # start-up; 10 s covers a loaded 2-core machine
        user = browser(Front(), apple)
        # Every step (login, Apple's form_post, the app, logout) lands on another replica.
        callback, _ = user.login(rd="/private")
        assert callback.status == 303, (callback.status, callback.body)
        for _ in range(6):
            assert user.get("/private").status == 200
        copy = dict(user.jar)
        assert user.request("POST", "/.auth/logout", [("Accept", "application/json")]).status == 204
        user.jar = copy
        # every replica knows within 1 s of the logout's answer; wait that out rather
        # than a shorter time that races the publication.
        time.sleep(1.0)
        assert all(user.get("/private").status != 200 for _ in range(6))
        # Round robin: each replica served some of the signed-in requests (access logs are
        # flushed about once a second, so wait for the lines rather than count them at once:
        # 5 s leaves 4 s for a loaded 2-core machine).
        assert poll(lambda: all(any('"path":"/private","status":200' in line for line in sc.output().splitlines())
                                for sc in sidecars), timeout=5)
    finally:
        proc.terminate()
        proc.wait(5)


def _up(port):
    import socket
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        return True
    except OSError:
        return False


def test_a_stalled_redis_fails_single_use_steps_with_503_within_the_command_timeout(replicas, browser):
    import signal as sig
    (a,), apple, redis = replicas(1)
    kept = logged_in_browser(browser, a, apple)
    pending = browser(a, apple)
    _, location = pending.start_login("/")
    fields, _ = pending.authorize(location)
    redis.proc.send_signal(sig.SIGSTOP)  # accepts nothing, answers nothing: a hung Redis
    try:
        started = time.monotonic()
        r = pending.callback(fields, headers=[("Accept", "application/json")])
        waited = time.monotonic() - started
        assert r.status == 503 and r.json()["reason"] == "store_unavailable", (r.status, r.body)
        # The command timeout is 2 s, looked at every 0.25 s; +3 s covers a loaded 2-core machine.
        assert waited < 5.25, "the callback waited %.1f s" % waited
        assert signed_in(kept, a)  # meanwhile the request path never waits for Redis
        # The store's link pings once a second and gives up 1.5 s (+0.25 s) without an answer:
        # 503 within about 2.75 s; +3 s covers a loaded 2-core machine.
        assert poll(lambda: a.admin("/readyz").status == 503, timeout=6)
    finally:
        redis.proc.send_signal(sig.SIGCONT)
    assert poll(lambda: a.admin("/readyz").status == 200, timeout=10)  # back-off up to 5 s, +5 s


def test_redis_error_replies_fail_single_use_steps_with_503_not_500(replicas, browser):
    (a,), apple, redis = replicas(1)
    pending = browser(a, apple)
    _, location = pending.start_login("/")
    fields, _ = pending.authorize(location)
    redis.cli("CONFIG", "SET", "maxmemory", "1")  # every write now answers -OOM
    redis.cli("CONFIG", "SET", "maxmemory-policy", "noeviction")
    r = pending.callback(fields, headers=[("Accept", "application/json")])
    assert r.status == 503 and r.json()["reason"] == "store_unavailable", (r.status, r.body)
    assert a.logged(lambda out: "OOM" in out), "the log names Redis's answer"
    text = a.admin("/metrics").body.decode()
    failures = [l for l in text.splitlines() if l.startswith("sidecar_store_command_failures_total ")]
    assert failures and float(failures[0].split()[1]) >= 1, failures


def test_an_undelivered_forward_lives_in_redis_and_another_replica_delivers_it(replicas, browser, emulator_keys):
    from conftest import free_port
    from test_notifications import Receiver, wait_for
    port = free_port()  # the receiver is down for now
    (a, b), apple, redis = replicas(2, overrides={"notifications": {"forward_to": "http://127.0.0.1:%d/hook" % port}})
    key, kid = emulator_key(emulator_keys)
    user = logged_in_browser(browser, a, apple)
    sub = user.request("GET", "/.auth/me", [("Accept", "application/json")]).json()["id"]
    assert post(a, sign(event_claims(apple.issuer, sub, jti="shared-1"), key, kid)).status == 200
    assert poll(lambda: redis.cli("HLEN", "sidecar:forwards") == "1", timeout=5)  # stored before the answer; 5 s
    a.proc.kill()  # the replica that took the event is gone
    a.proc.wait(5)
    a.stopped = True
    receiver = Receiver(port=port)
    try:
        # B finds it on its 5 s look at the queue, once A's back-off is over; 40 s covers a
        # loaded 2-core machine.
        assert wait_for(lambda: receiver.bodies, 40), b.log_tail()
        assert receiver.bodies[0]["jti"] == "shared-1" and receiver.bodies[0]["sub"] == sub
        assert poll(lambda: redis.cli("HLEN", "sidecar:forwards") == "0", timeout=5)  # removed at once; 5 s
    finally:
        receiver.close()
