"""Per-test CPU of the whole process tree, for finding what makes the end-to-end suite
expensive. Off by default; `SIDECAR_TEST_CPU=FILE` turns it on (conftest registers it), and
every test appends one JSON line to FILE:

    {"test": nodeid, "worker": "gw3", "cpu": seconds, "self": ..., "wall": ..., "by_command": {...}}

`cpu` is the CPU the pytest process and all its descendants spent from the test's setup to
the end of its teardown: the process itself (getrusage SELF), the children it reaped
(getrusage CHILDREN, which includes what they had reaped), and the live descendants read from
/proc (utime + stime + cutime + cstime). That sum only grows, so its difference across a test is
exact, but for a process that leaves the tree (reparented to init when its parent exits): then
`cpu` is at least what the samples below saw of it.
Session- and module-scoped fixtures are charged to the test that first needs them, and a
long-lived helper (the upstream) to whichever test runs while it works.

`by_command` splits the same CPU by process name (comm): each process's own utime + stime,
sampled every SAMPLE_INTERVAL seconds; what a process spent after its last sample before it
exited is under "(reaped, unsampled)".

`python3 Tests/integration/cpu_accounting.py FILE` prints the totals and the top tests.
"""
import json
import os
import resource
import sys
import threading
import time
from collections import defaultdict

import pytest

TICKS = os.sysconf("SC_CLK_TCK")
SAMPLE_INTERVAL = 0.25


def _children(pid):
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return []
    out = []
    for tid in tasks:
        try:
            with open("/proc/%d/task/%s/children" % (pid, tid)) as f:
                out.extend(int(p) for p in f.read().split())
        except OSError:
            pass
    return out


def _stat(pid):
    """(comm, utime + stime, cutime + cstime) in seconds of a live process, or None."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
    except OSError:
        return None
    comm = stat[stat.index("(") + 1:stat.rindex(")")]
    fields = stat.rsplit(")", 1)[1].split()
    return comm, (int(fields[11]) + int(fields[12])) / TICKS, (int(fields[13]) + int(fields[14])) / TICKS


def _descendants():
    """{pid: (comm, own cpu seconds, reaped children's cpu seconds)} of every live descendant."""
    out, todo = {}, _children(os.getpid())
    while todo:
        pid = todo.pop()
        stat = _stat(pid)
        if stat is not None:
            out[pid] = stat
            todo.extend(_children(pid))
    return out


def _rusage_seconds(who):
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


class CpuAccounting:
    def __init__(self, path):
        self.path = path
        self.worker = os.environ.get("PYTEST_XDIST_WORKER", "main")

    def _tree_total(self, live):
        return (_rusage_seconds(resource.RUSAGE_SELF) + _rusage_seconds(resource.RUSAGE_CHILDREN)
                + sum(own + reaped for _, own, reaped in live.values()))

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        start_live = _descendants()
        start_total = self._tree_total(start_live)
        start_self = _rusage_seconds(resource.RUSAGE_SELF)
        start_wall = time.monotonic()
        # per pid: (comm, cpu at its first sight, cpu at its last sight)
        seen = {pid: (comm, cpu, cpu) for pid, (comm, cpu, _) in start_live.items()}
        stop = threading.Event()

        def sample():
            while not stop.wait(SAMPLE_INTERVAL):
                for pid, (comm, cpu, _) in _descendants().items():
                    first = seen[pid][1] if pid in seen else 0.0
                    seen[pid] = (comm, first, cpu)
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        yield
        stop.set()
        sampler.join()
        end_live = _descendants()
        for pid, (comm, cpu, _) in end_live.items():
            first = seen[pid][1] if pid in seen else 0.0
            seen[pid] = (comm, first, cpu)
        total = self._tree_total(end_live) - start_total
        own = _rusage_seconds(resource.RUSAGE_SELF) - start_self
        by_command = defaultdict(float)
        by_command["(pytest)"] = own
        for comm, first, last in seen.values():
            by_command[comm] += last - first
        # A process orphaned out of the tree (Chromium's, once chromedriver has gone) takes its
        # CPU out of `total` with it; what was sampled of it is still a lower bound.
        total = max(total, sum(by_command.values()))
        by_command["(reaped, unsampled)"] = total - sum(by_command.values())
        record = {"test": item.nodeid, "worker": self.worker, "cpu": round(total, 3),
                  "self": round(own, 3), "wall": round(time.monotonic() - start_wall, 3),
                  "by_command": {k: round(v, 3) for k, v in by_command.items() if abs(v) >= 0.005}}
        with open(self.path, "a") as f:
            f.write(json.dumps(record) + "\n")


    def pytest_sessionfinish(self, session):
        """One more line per process: everything it and its tree spent, collection and the
        time between tests included (the sum over tests leaves those out)."""
        record = {"process": self.worker, "cpu": round(self._tree_total(_descendants()), 3),
                  "self": round(_rusage_seconds(resource.RUSAGE_SELF), 3)}
        with open(self.path, "a") as f:
            f.write(json.dumps(record) + "\n")


def summarize(path, top=30):
    lines = [json.loads(line) for line in open(path)]
    records = [r for r in lines if "test" in r]
    processes = [r for r in lines if "process" in r]
    workers = [r for r in processes if r["process"] != "main"]
    controller = [r for r in processes if r["process"] == "main"]
    if workers:  # under xdist the controller's tree holds the workers': only its own CPU counts
        print("%d xdist workers: %.1f CPU s in all with their trees (%.1f in the workers themselves); "
              "the controller %.1f" % (len(workers), sum(r["cpu"] for r in workers),
                                      sum(r["self"] for r in workers), sum(r["self"] for r in controller)))
    elif controller:
        print("the pytest process: %.1f CPU s with its tree (%.1f itself)" % (controller[0]["cpu"], controller[0]["self"]))
    total = sum(r["cpu"] for r in records)
    by_command, by_file = defaultdict(float), defaultdict(float)
    for r in records:
        for k, v in r["by_command"].items():
            by_command[k] += v
        by_file[r["test"].split("::")[0]] += r["cpu"]
    print("%d tests, %.1f CPU s in all (%.1f in the pytest processes themselves)"
          % (len(records), total, sum(r["self"] for r in records)))
    print("\nby command:")
    for k, v in sorted(by_command.items(), key=lambda kv: -kv[1])[:15]:
        print("  %8.1f  %s" % (v, k))
    print("\nby file:")
    for k, v in sorted(by_file.items(), key=lambda kv: -kv[1])[:25]:
        print("  %8.1f  %s" % (v, k))
    print("\ntop %d tests:" % top)
    for r in sorted(records, key=lambda r: -r["cpu"])[:top]:
        split = ", ".join("%s %.1f" % kv for kv in sorted(r["by_command"].items(), key=lambda kv: -kv[1])[:3])
        print("  %6.2f  %s  (%s)" % (r["cpu"], r["test"], split))


if __name__ == "__main__":
    summarize(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 30)
