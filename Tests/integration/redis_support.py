"""A real redis-server for the scale-out tests: started on a loopback port,
stopped and restarted by the tests, optionally with a password or TLS."""
import os
import shutil
import socket
import subprocess
import time

import pytest

from conftest import free_port, merge


class RedisServer:
    def __init__(self, workdir, password=None, tls=None, extra_args=()):
        self.workdir, self.password, self.tls, self.extra_args = workdir, password, tls, list(extra_args)
        self.port = free_port()
        self.proc = None
        self.start()

    def start(self):
        args = ["redis-server", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                "--dir", str(self.workdir), "--protected-mode", "no"]
        if self.tls:
            args += ["--port", "0", "--tls-port", str(self.port), "--tls-cert-file", self.tls["cert"],
                     "--tls-key-file", self.tls["key"], "--tls-ca-cert-file", self.tls["ca"], "--tls-auth-clients", "no"]
        else:
            args += ["--port", str(self.port)]
        if self.password:
            args += ["--requirepass", self.password]
        args += self.extra_args
        log = open(os.path.join(str(self.workdir), "redis.log"), "ab")
        self.proc = subprocess.Popen(args, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        log.close()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return self
            except OSError:
                time.sleep(0.05)
        raise AssertionError("redis-server did not start: " + open(os.path.join(str(self.workdir), "redis.log")).read())

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)

    def cli(self, *args):
        command = ["redis-cli", "-p", str(self.port)]
        if self.tls:
            command += ["--tls", "--cacert", self.tls["ca"]]
        if self.password:
            command += ["--no-auth-warning", "-a", self.password]
        return subprocess.run(command + list(args), capture_output=True, text=True, timeout=10).stdout.strip()

    @property
    def url(self):
        return "%s://127.0.0.1:%d/0" % ("rediss" if self.tls else "redis", self.port)


@pytest.fixture
def redis_server(tmp_path):
    """redis_server(password=None, tls=None) -> RedisServer (stopped after the test)."""
    if not shutil.which("redis-server"):
        pytest.fail("redis-server is not installed (scripts/test installs it)")
    started = []

    def start(password=None, tls=None):
        workdir = tmp_path / ("redis%d" % len(started))
        workdir.mkdir()
        server = RedisServer(workdir, password, tls)
        started.append(server)
        return server
    yield start
    for server in started:
        server.stop()


@pytest.fixture
def replicas(start_sidecar, start_emulator, redis_server):
    """replicas(n, overrides=None, front_port=None) -> (sidecars, emulator, redis): n sidecars
    sharing one secret, one public_url (the balancer's, `front_port`) and one Redis store."""
    import base64

    def make(n=2, overrides=None, front_port=None, redis=None, emulator_args=()):
        redis = redis or redis_server()
        front = front_port or free_port()
        emulator = start_emulator(["http://127.0.0.1:%d/.auth/callback" % front], extra_args=emulator_args)
        secret = base64.b64encode(os.urandom(32)).decode()
        base = {"public_url": "http://127.0.0.1:%d" % front,
                "apple": {"base_url": emulator.issuer},
                "session": {"secrets": [secret]},
                "access": {"public_paths": ["/pub/**"]},
                "revocations": {"store": redis.url}}
        sidecars = [start_sidecar(merge(base, overrides)) for _ in range(n)]
        return sidecars, emulator, redis
    return make
