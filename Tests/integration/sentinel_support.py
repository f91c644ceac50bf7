"""A real Redis Sentinel set for the failover tests: a master, a replica and three
sentinels (Debian's redis-server and redis-sentinel) on loopback ports, with short
failure detection so a failover takes seconds."""
import shutil
import socket
import subprocess
import time

import pytest

from conftest import free_port, poll
from redis_support import RedisServer

MASTER_NAME = "mymaster"


class Sentinel:
    def __init__(self, workdir, master_port, down_after_ms, failover_timeout_ms, password=None, tls=None):
        self.workdir, self.port, self.password, self.tls = workdir, free_port(), password, tls
        conf = workdir / "sentinel.conf"
        # With TLS every link is TLS: clients, and the sentinel's own to the servers and the
        # other sentinels (tls-replication).
        listen = (["port 0", "tls-port %d" % self.port, "tls-cert-file %s" % tls["cert"], "tls-key-file %s" % tls["key"],
                   "tls-ca-cert-file %s" % tls["ca"], "tls-auth-clients no", "tls-replication yes"]
                  if tls else ["port %d" % self.port])
        conf.write_text("\n".join(listen + [
            "bind 127.0.0.1", "protected-mode no", "daemonize no",
            "dir %s" % workdir,
            "sentinel monitor %s 127.0.0.1 %d 2" % (MASTER_NAME, master_port),
            "sentinel down-after-milliseconds %s %d" % (MASTER_NAME, down_after_ms),
            "sentinel failover-timeout %s %d" % (MASTER_NAME, failover_timeout_ms),
            "sentinel parallel-syncs %s 1" % MASTER_NAME]
            # With requirepass a sentinel also authenticates to the others with it.
            + (["requirepass %s" % password] if password else []) + [""]))
        log = open(workdir / "sentinel.log", "ab")
        self.proc = subprocess.Popen(["redis-sentinel", str(conf)], stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        log.close()
        assert poll(self._up, timeout=10), "redis-sentinel did not start: " + (workdir / "sentinel.log").read_text()

    def _up(self):
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
            return True
        except OSError:
            return False

    def cli(self, *args):
        auth = ["--no-auth-warning", "-a", self.password] if self.password else []
        auth += ["--tls", "--cacert", self.tls["ca"]] if self.tls else []
        return subprocess.run(["redis-cli", "-p", str(self.port)] + auth + list(args),
                              capture_output=True, text=True, timeout=10).stdout.strip()

    def master_port(self):
        lines = self.cli("SENTINEL", "get-master-addr-by-name", MASTER_NAME).splitlines()
        return int(lines[1]) if len(lines) == 2 else None

    def master_facts(self):
        lines = self.cli("SENTINEL", "master", MASTER_NAME).splitlines()
        return dict(zip(lines[0::2], lines[1::2]))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)


class SentinelSet:
    """master, replica, sentinels; `url` is the store URL for the sidecar."""

    def __init__(self, tmp_path, down_after_ms=1000, failover_timeout_ms=3000, sentinel_password=None, tls=None):
        self.tls = tls
        def workdir(name):
            path = tmp_path / name
            path.mkdir()
            return path
        self.master = RedisServer(workdir("master"), tls=tls)
        self.replica = RedisServer(workdir("replica"), tls=tls,
                                   extra_args=["--replicaof", "127.0.0.1", str(self.master.port)]
                                   + (["--tls-replication", "yes"] if tls else []))
        # Sentinels learn the replica from the master's INFO: let it be attached first.
        assert poll(lambda: "master_link_status:up" in self.replica.cli("INFO", "replication"), timeout=10), \
            self.replica.cli("INFO", "replication")
        self.sentinels = [Sentinel(workdir("sentinel%d" % i), self.master.port, down_after_ms, failover_timeout_ms,
                                   sentinel_password, tls) for i in range(3)]
        # A failover needs a majority of sentinels that know each other (hello messages every 2 s).
        assert poll(lambda: all(s.master_facts().get("num-other-sentinels") == "2"
                                and s.master_facts().get("num-slaves") == "1" for s in self.sentinels), timeout=15), \
            [s.master_facts() for s in self.sentinels]

    @property
    def url(self):
        return "%s+sentinel://%s/%s" % ("rediss" if self.tls else "redis",",".join("127.0.0.1:%d" % s.port for s in self.sentinels), MASTER_NAME)

    def stop(self):
        for sentinel in self.sentinels:
            sentinel.stop()
        self.replica.stop()
        self.master.stop()


@pytest.fixture
def sentinel_set(tmp_path):
    """sentinel_set(**options) -> SentinelSet (stopped after the test)."""
    for tool in ("redis-server", "redis-sentinel"):
        if not shutil.which(tool):
            pytest.fail("%s is not installed (scripts/test installs it)" % tool)
    started = []

    def start(**options):
        base = tmp_path / ("sentinel-set%d" % len(started))
        base.mkdir()
        made = SentinelSet(base, **options)
        started.append(made)
        return made
    yield start
    for made in started:
        made.stop()
