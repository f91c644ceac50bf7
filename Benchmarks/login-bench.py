#!/usr/bin/env python3
"""Login throughput probe (target: ≥ 500 complete logins/s against the local
emulator).

Starts `sidecar emulator` (its own process, one event-loop thread, --auto-approve) and, for
each --workers value, a sidecar with that many workers whose apple.base_url is the emulator.
Then, per sidecar:

  full     : CLIENTS threads each run whole logins in a loop for DURATION seconds —
             GET /.auth/login → emulator GET /auth/authorize (auto-approved form_post page)
             → POST /.auth/callback, where the sidecar opens the login-state cookie, signs
             (cached) its client secret, exchanges the code at the emulator's /auth/token,
             verifies the RS256 id_token and seals the session → 303 + session cookie.
  callback : the first two steps done beforehand for a batch of logins; then only the
             callbacks, as fast as the threads go — the step the target names ("callback + code
             exchange + id_token verification").

For each it prints logins/s and the CPU milliseconds per login spent by the sidecar, the
emulator and this client (from /proc/<pid>/stat and os.times()), so the bottleneck is
visible on a small machine where all three share the cores: 1000 / (sidecar CPU ms per
login) is what one core of sidecar could sustain if the emulator and client were free.

Usage: login-bench.py [--bin PATH] [--workers 1,2] [--duration 10] [--clients 16]
"""
import argparse
import itertools
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from siwa_client import Conn, LoginError, finish_callback, login, prepare_callback  # noqa: E402

TICK_MS = 1000.0 / os.sysconf("SC_CLK_TCK")


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_ms(pid):
    """utime + stime of a whole process, in milliseconds."""
    fields = Path("/proc/%d/stat" % pid).read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * TICK_MS


def thread_cpu_ms(pid):
    """{"<comm>#<tid>": utime+stime ms} of every thread of a process."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        base = "/proc/%d/task/%s/" % (pid, tid)
        try:
            fields = Path(base + "stat").read_text().rsplit(")", 1)[1].split()
            name = Path(base + "comm").read_text().strip()
        except FileNotFoundError:
            continue
        out["%s#%s" % (name, tid)] = (int(fields[11]) + int(fields[12])) * TICK_MS
    return out


def self_cpu_ms():
    t = os.times()
    return (t.user + t.system) * 1000.0


def wait_until(check, what, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except (OSError, EOFError):
            pass
        time.sleep(0.05)
    sys.exit("login-bench: %s did not come up" % what)


class Servers:
    """The emulator and the sidecars, all stopped by close()."""

    def __init__(self, binary, workdir):
        self.binary, self.workdir, self.procs = binary, workdir, []
        self.key = workdir / "AuthKey_BENCH12345.p8"
        subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-out", str(self.key)],
                       check=True, capture_output=True)
        self.secret = subprocess.run(["openssl", "rand", "-base64", "32"], check=True,
                                     capture_output=True, text=True).stdout.strip()

    def spawn(self, name, args):
        log = open(self.workdir / (name + ".log"), "wb")
        proc = subprocess.Popen([str(self.binary)] + args, stdout=log, stderr=log,
                                stdin=subprocess.DEVNULL)
        self.procs.append(proc)
        return proc

    def emulator(self, sidecar_ports):
        port = free_port()
        uris = ",".join("http://127.0.0.1:%d/.auth/callback" % p for p in sidecar_ports)
        proc = self.spawn("emulator", [
            "emulator", "--listen", "127.0.0.1:%d" % port, "--team-id", "BENCH12345",
            "--client", "com.example.bench=" + uris, "--client-key", "BENCH12345=%s" % self.key,
            "--auto-approve", "bench.user@example.com"])
        log = self.workdir / "emulator.log"
        wait_until(lambda: "issuer " in log.read_text(errors="replace"), "the emulator")
        return proc, port

    def sidecar(self, port, workers, emulator_port):
        admin = free_port()
        config = self.workdir / ("sidecar-%d.yaml" % port)
        # The upstream is never reached (login endpoints are the sidecar's own); any address.
        config.write_text("""listen: 127.0.0.1:%(port)d
public_url: http://127.0.0.1:%(port)d
upstream: http://127.0.0.1:%(emulator)d
workers: %(workers)d
apple:
  team_id: BENCH12345
  client_id: com.example.bench
  key_id: BENCH12345
  private_key_file: %(key)s
  base_url: http://127.0.0.1:%(emulator)d
session:
  secrets: ["%(secret)s"]
admin:
  listen: 127.0.0.1:%(admin)d
access:
  public_paths: []
log:
  access: false
  level: warning
limits:
  sign_in_rate: 0  # every login comes from one address: measure the login path, not the limit
""" % {"port": port, "emulator": emulator_port, "workers": workers, "key": self.key,
       "secret": self.secret, "admin": admin})
        proc = self.spawn("sidecar-%d" % port, ["run", "--config", str(config)])
        wait_until(lambda: Conn(admin).request("GET", "/healthz").status == 200,
                   "the sidecar on port %d" % port)
        return proc

    def close(self):
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()


def run_threads(clients, work):
    """Runs work(thread_index) in `clients` threads; returns (seconds, completed, errors)."""
    counts, errors = [0] * clients, []

    def body(i):
        try:
            counts[i] = work(i)
        except (LoginError, OSError, EOFError, ValueError) as e:
            errors.append("%s: %s" % (type(e).__name__, e))

    threads = [threading.Thread(target=body, args=(i,)) for i in range(clients)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.monotonic() - start, sum(counts), errors


def measured(pids, fn):
    """Calls fn() and returns (its result, {name: CPU ms used meanwhile})."""
    before = {name: cpu_ms(pid) for name, pid in pids.items()}
    client_before = self_cpu_ms()
    result = fn()
    used = {name: cpu_ms(pid) - before[name] for name, pid in pids.items()}
    used["client"] = self_cpu_ms() - client_before
    return result, used


def report(label, seconds, logins, errors, used, sidecar_threads):
    rate = logins / seconds if seconds > 0 else 0.0
    per = {k: (v / logins if logins else float("nan")) for k, v in used.items()}
    print("  %-9s %7.0f logins/s  (%d in %.1f s, %d errors)" % (label, rate, logins, seconds,
                                                                 len(errors)))
    print("            CPU ms per login: sidecar %.3f, emulator %.3f, client %.3f"
          " → sidecar alone ≈ %.0f logins/s per core"
          % (per["sidecar"], per["emulator"], per["client"],
             1000.0 / per["sidecar"] if per["sidecar"] > 0 else float("inf")))
    busy = sorted(((v, k) for k, v in sidecar_threads.items() if v > 0), reverse=True)[:4]
    if busy and logins:
        print("            sidecar threads (CPU ms per login): " +
              ", ".join("%s %.3f" % (k.split("#")[0], v / logins) for v, k in busy))
    for e in sorted(set(errors))[:3]:
        print("            error: %s" % e)
    return rate


def bench(sidecar_port, emulator_port, pids, clients, duration):
    results = {}

    # full logins
    deadline = [0.0]

    def full(i):
        sc, em, n = Conn(sidecar_port), Conn(emulator_port), 0
        while time.monotonic() < deadline[0]:
            login(sc, em)
            n += 1
        return n

    threads_before = thread_cpu_ms(pids["sidecar"])
    deadline[0] = time.monotonic() + duration
    (seconds, logins, errors), used = measured(pids, lambda: run_threads(clients, full))
    threads = {k: v - threads_before.get(k, 0) for k, v in thread_cpu_ms(pids["sidecar"]).items()}
    results["full"] = report("full", seconds, logins, errors, used, threads)

    # callbacks only, steps 1-2 prepared beforehand
    batch = max(1000, min(20000, int(results["full"] * 2 * min(duration, 5))))
    prepared = []

    def prepare(i):
        sc, em, mine = Conn(sidecar_port), Conn(emulator_port), []
        for _ in range(batch // clients):
            mine.append(prepare_callback(sc, em))
        prepared.extend(mine)
        return len(mine)

    run_threads(clients, prepare)
    items = iter(prepared)  # next() on a list iterator is atomic under the GIL

    def callbacks(i):
        sc, n = Conn(sidecar_port), 0
        for cookie, body in items:
            finish_callback(sc, cookie, body)
            n += 1
        return n

    threads_before = thread_cpu_ms(pids["sidecar"])
    (seconds, logins, errors), used = measured(pids, lambda: run_threads(clients, callbacks))
    threads = {k: v - threads_before.get(k, 0) for k, v in thread_cpu_ms(pids["sidecar"]).items()}
    results["callback"] = report("callback", seconds, logins, errors, used, threads)
    return results


def main():
    here = Path(__file__).resolve().parent
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=os.environ.get("SIDECAR_BIN",
                                                    here.parent / ".build" / "release" / "sidecar"))
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--clients", type=int, default=16)
    args = ap.parse_args()
    workers = [int(w) for w in args.workers.split(",")]

    load = os.getloadavg()
    print("== login-bench: %d client threads, %.0f s per run, load %.2f %.2f %.2f, %d CPUs"
          % (args.clients, args.duration, load[0], load[1], load[2], os.cpu_count()))
    with tempfile.TemporaryDirectory(prefix="login-bench.") as tmp:
        servers = Servers(Path(args.bin), Path(tmp))
        try:
            ports = [free_port() for _ in workers]
            emulator, emulator_port = servers.emulator(ports)
            summary = []
            for w, port in zip(workers, ports):
                sidecar = servers.sidecar(port, w, emulator_port)
                print("sidecar workers: %d" % w)
                r = bench(port, emulator_port, {"sidecar": sidecar.pid, "emulator": emulator.pid},
                          args.clients, args.duration)
                summary.append((w, r))
                sidecar.terminate()
                sidecar.wait(5)
        finally:
            servers.close()
    print()
    for w, r in summary:
        print("workers %d: %.0f full logins/s, %.0f callbacks/s (target >= 500/s)"
              % (w, r["full"], r["callback"]))


if __name__ == "__main__":
    main()
