#!/usr/bin/env python3
"""Native sign-in throughput probe (native sign-ins per second with the emulator) —
not a test. Same set-up and CPU accounting as login-bench.py: `sidecar emulator` (one loop
thread) registering the bundle id, and a sidecar per --workers value with it in
apple.native_audiences. Then, per sidecar:

  full   : CLIENTS threads each loop for DURATION seconds over a whole native sign-in as an
           app does it — GET /.auth/native/nonce → the "device" (emulator POST /emulator/native:
           an RS256 identity token carrying the nonce, and a code) → POST /.auth/native, where
           the sidecar opens the nonce, verifies the identity token, spends the nonce, exchanges
           the code at the emulator's /auth/token (client_id = bundle id, no redirect_uri),
           verifies the id_token of that answer and seals the session → 200 {"token", …}.
  signin : nonces and device credentials made beforehand; only the POST /.auth/native — the
           server side of a native sign-in.

Usage: native-bench.py [--bin PATH] [--workers 1,2] [--duration 10] [--clients 16]
"""
import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from siwa_client import Conn, LoginError  # noqa: E402

_spec = importlib.util.spec_from_file_location("login_bench", HERE / "login-bench.py")
lb = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lb)

BUNDLE = "com.example.bench.ios"
JSON = [("Content-Type", "application/json"), ("Accept", "application/json")]


def nonce(sc):
    r = sc.request("GET", "/.auth/native/nonce", [("Accept", "application/json")])
    if r.status != 200:
        raise LoginError("nonce: %d" % r.status)
    return json.loads(r.body)["nonce"]


def device(em, n):
    r = em.request("POST", "/emulator/native", JSON, json.dumps({"client_id": BUNDLE, "nonce": n}).encode())
    if r.status != 200:
        raise LoginError("emulator: %d %r" % (r.status, r.body[:200]))
    cred = json.loads(r.body)
    return json.dumps({"identityToken": cred["identityToken"], "authorizationCode": cred["authorizationCode"],
                       "nonce": n}).encode()


def sign_in(sc, body):
    r = sc.request("POST", "/.auth/native", JSON, body)
    if r.status != 200:
        raise LoginError("native: %d %r" % (r.status, r.body[:200]))


def bench(sidecar_port, emulator_port, pids, clients, duration):
    results = {}
    deadline = [0.0]

    def full(i):
        sc, em, count = Conn(sidecar_port), Conn(emulator_port), 0
        while time.monotonic() < deadline[0]:
            sign_in(sc, device(em, nonce(sc)))
            count += 1
        return count

    threads_before = lb.thread_cpu_ms(pids["sidecar"])
    deadline[0] = time.monotonic() + duration
    (seconds, count, errors), used = lb.measured(pids, lambda: lb.run_threads(clients, full))
    threads = {k: v - threads_before.get(k, 0) for k, v in lb.thread_cpu_ms(pids["sidecar"]).items()}
    results["full"] = lb.report("full", seconds, count, errors, used, threads)

    batch = max(1000, min(20000, int(results["full"] * 2 * min(duration, 5))))
    prepared = []

    def prepare(i):
        sc, em, mine = Conn(sidecar_port), Conn(emulator_port), []
        for _ in range(batch // clients):
            mine.append(device(em, nonce(sc)))
        prepared.extend(mine)
        return len(mine)

    lb.run_threads(clients, prepare)
    items = iter(prepared)

    def signins(i):
        sc, count = Conn(sidecar_port), 0
        for body in items:
            sign_in(sc, body)
            count += 1
        return count

    threads_before = lb.thread_cpu_ms(pids["sidecar"])
    (seconds, count, errors), used = lb.measured(pids, lambda: lb.run_threads(clients, signins))
    threads = {k: v - threads_before.get(k, 0) for k, v in lb.thread_cpu_ms(pids["sidecar"]).items()}
    results["signin"] = lb.report("signin", seconds, count, errors, used, threads)
    return results


class NativeServers(lb.Servers):
    """login-bench's servers with the bundle id registered and listed."""

    def emulator(self, sidecar_ports):
        port = lb.free_port()
        uris = ",".join("http://127.0.0.1:%d/.auth/callback" % p for p in sidecar_ports)
        proc = self.spawn("emulator", [
            "emulator", "--listen", "127.0.0.1:%d" % port, "--team-id", "BENCH12345",
            "--client", "com.example.bench=" + uris, "--client", BUNDLE,
            "--client-key", "BENCH12345=%s" % self.key, "--auto-approve", "bench.user@example.com"])
        log = self.workdir / "emulator.log"
        lb.wait_until(lambda: "issuer " in log.read_text(errors="replace"), "the emulator")
        return proc, port

    def sidecar(self, port, workers, emulator_port):
        original = Path.write_text

        def with_native(path, text, *a, **kw):  # the base config, plus the app's bundle id
            text = text.replace("  base_url:", "  native_audiences: [%s]\n  native_require_nonce: true\n  base_url:"
                                % BUNDLE, 1)
            return original(path, text, *a, **kw)
        Path.write_text = with_native
        try:
            return super().sidecar(port, workers, emulator_port)
        finally:
            Path.write_text = original


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=os.environ.get("SIDECAR_BIN", HERE.parent / ".build" / "release" / "sidecar"))
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--clients", type=int, default=16)
    args = ap.parse_args()
    workers = [int(w) for w in args.workers.split(",")]
    load = os.getloadavg()
    print("== native-bench: %d client threads, %.0f s per run, load %.2f %.2f %.2f, %d CPUs"
          % (args.clients, args.duration, load[0], load[1], load[2], os.cpu_count()))
    with tempfile.TemporaryDirectory(prefix="native-bench.") as tmp:
        servers = NativeServers(Path(args.bin), Path(tmp))
        try:
            ports = [lb.free_port() for _ in workers]
            emulator, emulator_port = servers.emulator(ports)
            summary = []
            for w, port in zip(workers, ports):
                sidecar = servers.sidecar(port, w, emulator_port)
                print("sidecar workers: %d" % w)
                summary.append((w, bench(port, emulator_port, {"sidecar": sidecar.pid, "emulator": emulator.pid},
                                         args.clients, args.duration)))
                sidecar.terminate()
                sidecar.wait(5)
        finally:
            servers.close()
    print()
    for w, r in summary:
        print("workers %d: %.0f full native sign-ins/s, %.0f server-side sign-ins/s" % (w, r["full"], r["signin"]))


if __name__ == "__main__":
    main()
