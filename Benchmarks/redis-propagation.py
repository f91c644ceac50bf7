#!/usr/bin/env python3
"""How fast a revocation made at one replica is known at another — not a test.

A real redis-server, the emulator and two sidecars (A, B) sharing the cookie secret and a
`redis://` store. For each of COUNT users: sign in at A, check the cookie opens at B, log out at
A (POST /.auth/logout: answered once the revocation is in Redis), then ask B with the same
cookie, back to back on one keep-alive connection, until B refuses it. Reports the delay from
A's answer to B's first refusal: median, p90 and max.

Usage: redis-propagation.py [--bin PATH] [--count 100]
"""
import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from siwa_client import Conn, login  # noqa: E402

_spec = importlib.util.spec_from_file_location("login_bench", HERE / "login-bench.py")
lb = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lb)


def sidecar(servers, port, emulator_port, redis_port):
    admin = lb.free_port()
    config = servers.workdir / ("sidecar-%d.yaml" % port)
    config.write_text("""listen: 127.0.0.1:%(port)d
public_url: http://127.0.0.1:%(port)d
upstream: http://127.0.0.1:%(emulator)d
workers: 1
apple:
  team_id: BENCH12345
  client_id: com.example.bench
  key_id: BENCH12345
  private_key_file: %(key)s
  base_url: http://127.0.0.1:%(emulator)d
session:
  secrets: ["%(secret)s"]
revocations:
  store: redis://127.0.0.1:%(redis)d/0
admin:
  listen: 127.0.0.1:%(admin)d
access:
  api_paths: ["/**"]
log:
  access: false
  level: warning
""" % {"port": port, "emulator": emulator_port, "key": servers.key, "secret": servers.secret,
       "admin": admin, "redis": redis_port})
    servers.spawn("sidecar-%d" % port, ["run", "--config", str(config)])
    lb.wait_until(lambda: Conn(admin).request("GET", "/readyz").status == 200, "the sidecar on port %d" % port)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default=str(HERE.parent / ".build" / "release" / "sidecar"))
    parser.add_argument("--count", type=int, default=100)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="redis-propagation."))
    servers = lb.Servers(Path(args.bin), workdir)
    redis_port = lb.free_port()
    redis = subprocess.Popen(["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "",
                              "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        a_port, b_port = lb.free_port(), lb.free_port()
        _, emulator_port = servers.emulator([a_port, b_port])
        sidecar(servers, a_port, emulator_port, redis_port)
        sidecar(servers, b_port, emulator_port, redis_port)
        a, b, apple = Conn(a_port), Conn(b_port), Conn(emulator_port)
        delays, polls = [], []
        for _ in range(args.count):
            name, value = login(a, apple)
            cookie = [("Cookie", "%s=%s" % (name, value)), ("Accept", "application/json")]
            assert b.request("GET", "/x", cookie).status != 401, "the session does not open at B"
            r = a.request("POST", "/.auth/logout", cookie)
            answered = time.perf_counter()
            assert r.status == 204, r.status
            asked = 0
            while True:
                asked += 1
                if b.request("GET", "/x", cookie).status == 401:
                    delays.append((time.perf_counter() - answered) * 1000)
                    polls.append(asked)
                    break
                if time.perf_counter() - answered > 5:
                    raise SystemExit("B still accepts the cookie 5 s after the logout at A")
        delays.sort()
        print("revocations: %d   A's 204 → B refuses: median %.2f ms  p90 %.2f ms  max %.2f ms  "
              "(B asked %d times at most; a request to B takes about %.2f ms)" % (
                  len(delays), statistics.median(delays), delays[int(len(delays) * 0.9) - 1], delays[-1],
                  max(polls), min(delays) / max(1, polls[delays.index(min(delays))])))
    finally:
        servers.close()
        redis.terminate()
        redis.wait(5)


if __name__ == "__main__":
    main()
