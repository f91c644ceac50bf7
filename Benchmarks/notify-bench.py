#!/usr/bin/env python3
"""Apple server-to-server notifications per second — not a test.

`sidecar emulator` signs the notifications (RS256, as Apple does: `POST /emulator/notify`,
a fresh `jti` each); a sidecar with one worker verifies and applies them. Per store
(`memory`, then `file:` — every accepted notification is an fsynced record there, the
revocation and the spent jti) CLIENTS threads POST prepared payloads to
`/.auth/apple/notifications` for the whole batch: half `consent-revoked` (a subject
revocation through the store), half `email-disabled` (jti only).

Usage: notify-bench.py [--bin PATH] [--count 4000] [--clients 8]
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

JSON = [("Content-Type", "application/json")]


class StoreServers(lb.Servers):
    """login-bench's servers, the sidecar on the store given."""
    store = "memory"

    def sidecar(self, port, workers, emulator_port):
        original = Path.write_text
        store = self.store

        def with_store(path, text, *a, **kw):
            text = text.replace("admin:\n", "revocations:\n  store: %s\nadmin:\n" % store, 1)
            text = text.replace("session:\n", "session:\n  revalidate: 0s\n", 1)
            return original(path, text, *a, **kw)
        Path.write_text = with_store
        try:
            return super().sidecar(port, workers, emulator_port)
        finally:
            Path.write_text = original


def prepare(emulator_port, count, clients):
    payloads = []

    def make(i):
        em, mine = Conn(emulator_port), []
        for k in range(count // clients):
            kind = "consent-revoked" if k % 2 == 0 else "email-disabled"
            body = {"type": kind, "sub": "000%03d.bench%05d.%04d" % (i, k, k), "aud": "com.example.bench"}
            r = em.request("POST", "/emulator/notify", JSON, json.dumps(body).encode())
            if r.status != 200:
                raise LoginError("emulator notify: %d %r" % (r.status, r.body[:200]))
            mine.append(json.dumps({"payload": json.loads(r.body)["payload"]}).encode())
        payloads.extend(mine)
        return len(mine)

    lb.run_threads(clients, make)
    return payloads


def bench(sidecar_port, pids, payloads, clients):
    items = iter(payloads)

    def post(i):
        sc, count = Conn(sidecar_port), 0
        for body in items:
            r = sc.request("POST", "/.auth/apple/notifications", JSON, body)
            if r.status != 200:
                raise LoginError("notification: %d %r" % (r.status, r.body[:200]))
            count += 1
        return count

    threads_before = lb.thread_cpu_ms(pids["sidecar"])
    (seconds, count, errors), used = lb.measured(pids, lambda: lb.run_threads(clients, post))
    threads = {k: v - threads_before.get(k, 0) for k, v in lb.thread_cpu_ms(pids["sidecar"]).items()}
    return lb.report("notifications", seconds, count, errors, used, threads)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=os.environ.get("SIDECAR_BIN", HERE.parent / ".build" / "release" / "sidecar"))
    ap.add_argument("--count", type=int, default=4000)
    ap.add_argument("--clients", type=int, default=8)
    args = ap.parse_args()
    load = os.getloadavg()
    print("== notify-bench: %d notifications, %d client threads, load %.2f %.2f %.2f, %d CPUs"
          % (args.count, args.clients, load[0], load[1], load[2], os.cpu_count()))
    summary = []
    with tempfile.TemporaryDirectory(prefix="notify-bench.") as tmp:
        servers = StoreServers(Path(args.bin), Path(tmp))
        try:
            ports = [lb.free_port(), lb.free_port()]
            emulator, emulator_port = servers.emulator(ports)
            for store, port in zip(["memory", "file:%s/store" % tmp], ports):
                servers.store = store
                sidecar = servers.sidecar(port, 1, emulator_port)
                payloads = prepare(emulator_port, args.count, args.clients)
                print("store: %s" % store.split("/")[0])
                summary.append((store.split(":")[0], bench(port, {"sidecar": sidecar.pid, "emulator": emulator.pid},
                                                           payloads, args.clients)))
                sidecar.terminate()
                sidecar.wait(5)
        finally:
            servers.close()
    print()
    for store, rate in summary:
        print("%-6s store: %.0f notifications/s (workers: 1)" % (store, rate))


if __name__ == "__main__":
    main()
