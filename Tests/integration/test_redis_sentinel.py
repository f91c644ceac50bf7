"""Redis Sentinel: the sidecar finds the master through the sentinels, follows it across a
failover under a sign-in and revocation workload, never writes to a replica, and refuses a
master name the sentinels do not know. Real redis-server and redis-sentinel processes."""
import socket
import threading
import time

from conftest import free_port, poll
from redis_support import redis_server, replicas  # noqa: F401 (fixtures)
from sentinel_support import MASTER_NAME, sentinel_set  # noqa: F401 (fixture)
from test_redis import logged_in_browser, refused_within, signed_in

JSON = ("Accept", "application/json")


class Workload(threading.Thread):
    """Signs in and out again and again, alternating between the replicas: each round a
    callback (a single-use login state) and a logout (a revocation). Records when each
    round ended and how: "ok", "503", or anything else as an unexpected answer."""

    def __init__(self, browser, sidecars, apple):
        super().__init__(daemon=True)
        self.browser, self.sidecars, self.apple = browser, sidecars, apple
        self.rounds = []
        self.halt = threading.Event()

    def run(self):
        turn = 0
        while not self.halt.is_set():
            sc = self.sidecars[turn % len(self.sidecars)]
            turn += 1
            try:
                how = self.round(sc)
            except Exception as error:  # a refused connection, an assertion in a helper
                how = "error: %r" % error
            self.rounds.append((time.monotonic(), how))
            time.sleep(0.02)

    def round(self, sc):
        user = self.browser(sc, self.apple)
        _, location = user.start_login("/")
        fields, _ = user.authorize(location, "load-%d@example.com" % len(self.rounds))
        r = user.callback(fields, headers=[JSON])
        if r.status == 503 and r.json().get("reason") == "store_unavailable":
            return "503"
        if r.status not in (200, 303):
            return "callback %d %r" % (r.status, r.body[:200])
        r = user.request("POST", "/.auth/logout", [JSON])
        if r.status == 503:
            return "503"
        return "ok" if r.status == 204 else "logout %d %r" % (r.status, r.body[:200])

    def stop(self):
        self.halt.set()
        self.join(15)


def test_the_sidecar_follows_a_failover_and_keeps_what_was_revoked(replicas, sentinel_set, browser, start_sidecar):
    redis = sentinel_set()
    old_port, new_port = redis.master.port, redis.replica.port
    # Rounds come faster than the default per-address sign-in rate allows.
    (a, b), apple, _ = replicas(2, redis=redis, overrides={"limits": {"sign_in_rate": 0}})
    # Apple's keys are fetched just after start; 5 s covers a loaded 2-core machine.
    assert poll(lambda: a.admin("/readyz").status == 200 and b.admin("/readyz").status == 200, timeout=5)
    assert a.logged(lambda out: "%s\\\" is at 127.0.0.1:%d" % (MASTER_NAME, old_port) in out)  # JSON-escaped quote

    kept = logged_in_browser(browser, a, apple)
    revoked = logged_in_browser(browser, a, apple, "omar@example.com")
    copy = dict(revoked.jar)
    assert revoked.request("POST", "/.auth/logout", [JSON]).status == 204
    revoked.jar = copy
    assert refused_within(1.0, lambda: not signed_in(revoked, b)), "still signed in at B after 1 s"
    # Replicated before the master goes, so the new master holds it too.
    assert poll(lambda: redis.replica.cli("HLEN", "sidecar:revoked:sessions") == "1", timeout=5)

    workload = Workload(browser, [a, b], apple)
    workload.start()
    try:
        assert poll(lambda: sum(1 for _, how in workload.rounds if how == "ok") >= 3, timeout=10), workload.rounds
        killed = time.monotonic()
        redis.master.proc.kill()
        redis.master.proc.wait(5)
        # Detection (down-after 1 s), agreement, election and promotion; 20 s covers a loaded
        # 2-core machine.
        assert poll(lambda: redis.sentinels[0].master_port() == new_port, timeout=20), redis.sentinels[0].master_facts()
        failed_over = time.monotonic()
        assert poll(lambda: any(t > failed_over and how == "ok" for t, how in workload.rounds), timeout=10), \
            (workload.rounds[-10:], a.log_tail(), b.log_tail())
        assert poll(lambda: a.admin("/readyz").status == 200 and b.admin("/readyz").status == 200, timeout=10)
        ready_again = time.monotonic()
        # A worker's own connection retries at least once a second: past that, the switch is over.
        switch_over = ready_again + 1.5
        assert poll(lambda: sum(1 for t, how in workload.rounds if t > switch_over and how == "ok") >= 10, timeout=15)
    finally:
        workload.stop()

    rounds = workload.rounds
    timeline = [(round(t - killed, 2), how) for t, how in rounds]
    unexpected = [(at, how) for at, how in timeline if how not in ("ok", "503")]
    assert not unexpected, unexpected
    unavailable = [t for t, how in rounds if how == "503"]
    # 503 only during the switch: not before the kill, not once the switch is over.
    assert all(killed < t < switch_over for t in unavailable), timeline
    assert all(how == "ok" for t, how in rounds if t >= switch_over), timeline
    recovered = min(t for t, how in rounds if how == "ok" and t > max(unavailable, default=killed))
    print("\nsentinel failover: the sentinels promoted the replica %.2f s after the master was killed; "
          "the sidecars were ready again after %.2f s; sign-in and revocation rounds succeeded again after %.2f s "
          "(%d rounds answered 503, %d succeeded)"
          % (failed_over - killed, ready_again - killed, recovered - killed, len(unavailable),
             sum(1 for _, h in rounds if h == "ok")))

    # What was revoked before the failover stays refused; what was valid stays valid.
    for sc in (a, b):
        assert not signed_in(revoked, sc), "a revocation made before the failover was forgotten"
        assert signed_in(kept, sc)
    # The new master has it (not just the replicas' memory): a replica started now refuses it.
    c = start_sidecar({key: a.config[key] for key in ("public_url", "apple", "session", "access", "revocations")})
    assert poll(lambda: c.admin("/readyz").status == 200, timeout=10)
    assert not signed_in(revoked, c)
    assert signed_in(kept, c)
    # Revocations flow through the new master.
    copy = dict(kept.jar)
    kept.sidecar = b
    assert kept.request("POST", "/.auth/logout", [JSON]).status == 204
    kept.jar = copy
    assert refused_within(1.0, lambda: not signed_in(kept, a)), "still signed in at A after 1 s"
    assert redis.replica.cli("ROLE").splitlines()[0] == "master"
    # What an operator reads: the outage, the move (old and new master), and readiness again.
    switch = "switched from 127.0.0.1:%d to 127.0.0.1:%d" % (old_port, new_port)
    moved = "moved from 127.0.0.1:%d to 127.0.0.1:%d" % (old_port, new_port)
    for sc in (a, b):
        assert sc.logged(lambda out: switch in out or moved in out), sc.log_tail()
        out = sc.output()
        assert "store unavailable" in out and out.rfind("store ready") > out.rfind("store unavailable"), sc.log_tail()
    print("what replica A logged about the store:\n" + "\n".join(
        line for line in a.output().splitlines() if '"sidecar.store"' in line))


def test_a_master_name_the_sentinels_do_not_know_is_a_clear_start_up_error(sentinel_set, start_sidecar):
    redis = sentinel_set()
    url = redis.url.replace("/" + MASTER_NAME, "/no-such-master")
    sc = start_sidecar({"revocations": {"store": url}}, ready=False)
    assert sc.wait_exit(10) == 1, sc.log_tail()
    sc.stopped = True  # the exit is the expected outcome
    out = sc.output()
    assert "revocations.store" in out and 'no sentinel knows a master named "no-such-master"' in out, out


def test_the_sentinels_get_their_own_password_and_a_wrong_one_stops_the_start(sentinel_set, start_sidecar, tmp_path):
    redis = sentinel_set(sentinel_password="sentinel-secret")
    wrong = tmp_path / "wrong"
    wrong.write_text("not-the-sentinel-secret\n")
    sc = start_sidecar({"revocations": {"store": redis.url, "sentinel_password": "file:%s" % wrong}}, ready=False)
    assert sc.wait_exit(10) == 1, sc.log_tail()
    sc.stopped = True  # the exit is the expected outcome
    out = sc.output()
    assert "revocations.store" in out and "authentication failed" in out and "revocations.sentinel_password" in out, out
    assert "not-the-sentinel-secret" not in out
    right = tmp_path / "right"
    right.write_text("sentinel-secret\n")
    sc = start_sidecar({"revocations": {"store": redis.url, "sentinel_password": "file:%s" % right}})
    assert poll(lambda: sc.admin("/readyz").status == 200, timeout=5), sc.log_tail()
    assert "sentinel-secret" not in sc.output()


def tls_files(tmp_path):
    from tls_support import TestCA
    ca = TestCA(tmp_path)
    leaf = ca.issue("redis")
    return {"cert": str(leaf.cert_file), "key": str(leaf.key_file), "ca": str(ca.cert_file)}, ca


def test_rediss_sentinel_with_a_private_ca_shares_revocations(sentinel_set, replicas, browser, start_sidecar, tmp_path):
    files, ca = tls_files(tmp_path)
    redis = sentinel_set(tls=files)
    assert redis.url.startswith("rediss+sentinel://")
    sc = start_sidecar({"revocations": {"store": redis.url}}, ready=False)  # without the private CA
    assert sc.wait_exit(10) == 1, sc.log_tail()
    sc.stopped = True  # the exit is the expected outcome
    out = sc.output()
    assert "revocations.store" in out and "TLS certificate not trusted at the sentinels" in out, out
    (a, b), apple, _ = replicas(2, redis=redis, overrides={"revocations": {"ca_file": str(ca.cert_file)}})
    assert poll(lambda: a.admin("/readyz").status == 200 and b.admin("/readyz").status == 200, timeout=5)
    assert a.logged(lambda out: "is at 127.0.0.1:%d" % redis.master.port in out)
    user = logged_in_browser(browser, a, apple)
    copy = dict(user.jar)
    assert user.request("POST", "/.auth/logout", [JSON]).status == 204
    user.jar = copy
    assert refused_within(1.0, lambda: not signed_in(user, b)), "still signed in at B after 1 s"
    assert redis.master.cli("HLEN", "sidecar:revoked:sessions") == "1"


class FakeSentinel(threading.Thread):
    """A sentinel that names `master_port` as the master whatever it is: here a replica."""

    def __init__(self, master_port):
        super().__init__(daemon=True)
        self.master_port = master_port
        self.server = socket.create_server(("127.0.0.1", free_port()))
        self.port = self.server.getsockname()[1]
        self.asked = 0

    def run(self):
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def serve(self, conn):
        buffer = b""
        with conn:
            while True:
                data = conn.recv(65536)
                if not data:
                    return
                buffer += data
                while True:
                    command, buffer = _command(buffer)
                    if command is None:
                        break
                    conn.sendall(self.answer([part.upper() if i == 0 else part for i, part in enumerate(command)]))

    def answer(self, command):
        if command[0] == b"SENTINEL" and command[1].lower() == b"get-master-addr-by-name":
            self.asked += 1
            port = str(self.master_port).encode()
            return b"*2\r\n$9\r\n127.0.0.1\r\n$%d\r\n%s\r\n" % (len(port), port)
        if command[0] == b"SUBSCRIBE":
            return b"*3\r\n$9\r\nsubscribe\r\n$%d\r\n%s\r\n:1\r\n" % (len(command[1]), command[1])
        if command[0] == b"PING":
            return b"+PONG\r\n"
        return b"-ERR unknown command\r\n"

    def close(self):
        self.server.close()


def _command(buffer):
    """One RESP command (an array of bulk strings) from the front of buffer."""
    if not buffer.startswith(b"*") or b"\r\n" not in buffer:
        return None, buffer
    head, rest = buffer.split(b"\r\n", 1)
    parts = []
    for _ in range(int(head[1:])):
        if b"\r\n" not in rest:
            return None, buffer
        length_line, rest = rest.split(b"\r\n", 1)
        length = int(length_line[1:])
        if len(rest) < length + 2:
            return None, buffer
        parts.append(rest[:length])
        rest = rest[length + 2:]
    return parts, rest


def test_a_replica_named_as_master_is_refused_and_never_written_to(redis_server, start_sidecar, start_emulator, browser):
    import base64
    import os
    master = redis_server()
    replica = redis_server()
    replica.cli("REPLICAOF", "127.0.0.1", str(master.port))
    assert poll(lambda: "master_link_status:up" in replica.cli("INFO", "replication"), timeout=10)
    lying = FakeSentinel(replica.port)
    lying.start()
    try:
        front = free_port()
        apple = start_emulator(["http://127.0.0.1:%d/.auth/callback" % front])
        sc = start_sidecar({"public_url": "http://127.0.0.1:%d" % front, "apple": {"base_url": apple.issuer},
                            "session": {"secrets": [base64.b64encode(os.urandom(32)).decode()]},
                            "revocations": {"store": "redis+sentinel://127.0.0.1:%d/%s" % (lying.port, MASTER_NAME)}})
        assert poll(lambda: sc.admin("/readyz").status == 503, timeout=5)
        reason = "127.0.0.1:%d is a replica (ROLE slave), not the master" % replica.port
        assert sc.logged(lambda out: reason in out), sc.log_tail()
        user = browser(sc, apple)
        _, location = user.start_login("/")
        fields, _ = user.authorize(location)
        r = user.callback(fields, headers=[JSON])
        assert r.status == 503 and r.json()["reason"] == "store_unavailable", (r.status, r.body)
        # It keeps asking the sentinels (the answer may change), and still writes nothing.
        asked = lying.asked
        assert poll(lambda: lying.asked > asked, timeout=5)
        assert replica.cli("DBSIZE") == "0" and master.cli("DBSIZE") == "0"
        stats = replica.cli("INFO", "commandstats")
        # The handshake is pipelined, so the refused server saw ROLE, SUBSCRIBE and PING (reads);
        # no command that writes ever reached it.
        called = {line.split(":")[0][len("cmdstat_"):] for line in stats.splitlines() if line.startswith("cmdstat_")}
        assert "role" in called and not called & {"set", "eval", "evalsha", "hset", "hdel", "publish", "del"}, stats
    finally:
        lying.close()


def test_a_master_demoted_under_open_connections_sends_the_sidecar_back_to_the_sentinels(
        redis_server, start_sidecar, start_emulator, browser):
    import base64
    import os
    old, new = redis_server(), redis_server()
    lying = FakeSentinel(old.port)
    lying.start()
    try:
        front = free_port()
        apple = start_emulator(["http://127.0.0.1:%d/.auth/callback" % front])
        sc = start_sidecar({"public_url": "http://127.0.0.1:%d" % front, "apple": {"base_url": apple.issuer},
                            "session": {"secrets": [base64.b64encode(os.urandom(32)).decode()]},
                            "access": {"public_paths": []},
                            "revocations": {"store": "redis+sentinel://127.0.0.1:%d/%s" % (lying.port, MASTER_NAME)}})
        assert poll(lambda: sc.admin("/readyz").status == 200, timeout=5), sc.log_tail()
        assert browser(sc, apple).login()[0].status == 303
        # Demoted without its clients being dropped (REPLICAOF alone keeps them, unlike a
        # Sentinel failover): the open connections now meet -READONLY on their next write.
        lying.master_port = new.port
        assert old.cli("REPLICAOF", "127.0.0.1", str(new.port)) == "OK"

        def signs_in():
            user = browser(sc, apple)
            _, location = user.start_login("/")
            fields, _ = user.authorize(location)
            r = user.callback(fields, headers=[JSON])
            assert r.status in (303, 503), (r.status, r.body)
            return r.status == 303
        # The first write after the demotion may answer 503; then the sidecar is on the new
        # master. 5 s covers a loaded 2-core machine.
        assert poll(signs_in, timeout=5), sc.log_tail()
        assert "errorstat_READONLY:count=" in old.cli("INFO", "errorstats")  # the write it refused
        assert sc.logged(lambda out: "moved from 127.0.0.1:%d to 127.0.0.1:%d" % (old.port, new.port) in out), sc.log_tail()
        assert new.cli("EVAL", "return #redis.call('KEYS', 'sidecar:claim:*')", "0") != "0"
        assert poll(lambda: sc.admin("/readyz").status == 200, timeout=5), sc.log_tail()
    finally:
        lying.close()
