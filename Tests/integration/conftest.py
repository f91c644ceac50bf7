"""Fixtures for the end-to-end tests: the real `sidecar` binary, a real upstream process,
generated keys and a complete sidecar.yaml per test.

Nothing is built here: `scripts/test` builds first and names the static release binary in
SIDECAR_BIN; without it the binary is `.build/debug/sidecar` under the package root.
"""
import base64
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
import html
import inspect
import re
from pathlib import Path
from urllib.parse import quote, urlencode, urlsplit

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

import rawhttp
from browser_support import browser_ca, chromium, chromium_pool  # noqa: F401 (fixtures for every test file)

HERE = Path(__file__).resolve().parent
PACKAGE_ROOT = HERE.parents[1]
TEST_TIMEOUT = 90  # seconds; a hung test fails instead of hanging the suite
STARTUP_TIMEOUT = 15.0


def sidecar_binary():
    return Path(os.environ.get("SIDECAR_BIN", PACKAGE_ROOT / ".build" / "debug" / "sidecar"))


def poll(fn, timeout=5.0, step=0.05):
    """fn()'s first truthy value within `timeout` seconds, else its last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(step)


def _ephemeral_low():
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


_EPHEMERAL_LOW = _ephemeral_low()


def _xdist_worker():
    """(index, count) of this pytest-xdist worker; (0, 1) when not under xdist."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    return (int(name[2:]) if name.startswith("gw") and name[2:].isdigit() else 0), max(1, count)
_handed_out = set()


def free_port():
    """A port for a server a test is about to start. Chosen below the kernel's ephemeral range,
    where neither `bind(0)` nor an outgoing connection picks its ports: a port taken with
    `bind(0)` and released is free again at once, and an emulator listening on port 0 was once
    given the very port just handed out for a sidecar not yet started. Never the same port
    twice in one run, and free when handed out."""
    low, high = 10000, _EPHEMERAL_LOW - 1
    # Under pytest-xdist each worker draws from its own slice, so two workers never hand out
    # the same port.
    worker, workers = _xdist_worker()
    if workers > 1 and high - low >= 1000 * workers:
        span = (high - low) // workers
        low, high = low + worker * span, low + (worker + 1) * span - 1
    if high - low < 1000:  # an unusual ephemeral range: fall back to the kernel's choice
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]
    for _ in range(1000):
        port = random.randint(low, high)
        if port in _handed_out:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    raise RuntimeError("no free port below %d" % _EPHEMERAL_LOW)


def b64url(n):
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


# -- YAML ----------------------------------------------------------------------------------
def to_yaml(value, indent=0):
    """Block-style YAML for dicts and lists; strings double-quoted (JSON escapes); a list's
    mappings and lists in flow style."""
    pad = "  " * indent
    lines = []
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, (dict, list)) and v:
                lines.append("%s%s:" % (pad, k))
                lines.append(to_yaml(v, indent + 1))
            else:
                lines.append("%s%s: %s" % (pad, k, scalar(v)))
    else:
        for v in value:
            lines.append("%s- %s" % (pad, scalar(v)))
    return "\n".join(lines)


def scalar(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, (list, dict)):
        return json.dumps(v)  # a flow collection (JSON is YAML): a mapping in a list, e.g. rules
    return json.dumps(str(v))


def place_ports(text, ports):
    """An example configuration with its documented ports replaced: `ports` maps each number
    the example uses ("8080") to the one chosen here, wherever it follows a colon, a space or
    `port_value: ` as a whole number. One pass: a chosen port may begin with another
    placeholder's digits (30001 after 8080 would become 353991 after a later 3000)."""
    pattern = r"(?<![0-9])(%s)(?![0-9])" % "|".join(re.escape(k) for k in ports)
    return re.sub(r"(:|port_value: )" + pattern, lambda m: "%s%d" % (m.group(1), ports[m.group(2)]), text)


def merge(base, overrides):
    """Deep-merges overrides into a copy of base; a None value removes the key."""
    out = dict(base)
    for k, v in (overrides or {}).items():
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = v
    return out


# -- keys ----------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def keydir(tmp_path_factory):
    d = tmp_path_factory.mktemp("keys")
    apple_key = ec.generate_private_key(ec.SECP256R1())
    (d / "AuthKey_KEY123ABCD.p8").write_bytes(apple_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    jwks_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pub = jwks_key.public_key().public_numbers()
    (d / "jwks.json").write_text(json.dumps({"keys": [{
        "kty": "RSA", "kid": "test-kid-1", "use": "sig", "alg": "RS256",
        "n": b64url(pub.n), "e": b64url(pub.e)}]}))
    return d


# -- upstream ------------------------------------------------------------------------------
class Upstream:
    def __init__(self, proc, port, control, unix):
        self.proc, self.port, self.control, self.unix = proc, port, control, unix

    def _control(self, path):
        return rawhttp.request(self.control, "GET", path, timeout=5).json()

    def stats(self):
        return self._control("/_stats")

    def reset(self):
        self._control("/_reset")

    def wait_for(self, predicate, timeout=5.0):
        """Polls the stats until predicate(stats) holds; returns the last stats."""
        deadline = time.monotonic() + timeout
        while True:
            s = self.stats()
            if predicate(s) or time.monotonic() > deadline:
                return s
            time.sleep(0.02)


@pytest.fixture(scope="session")
def upstream(tmp_path_factory, keydir):
    d = tmp_path_factory.mktemp("upstream")
    unix = str(d / "up.sock")
    err = open(d / "stderr.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "upstream.py"), "--unix", unix,
         "--jwks", str(keydir / "jwks.json")],
        stdout=subprocess.PIPE, stderr=err)
    line = proc.stdout.readline()
    if not line:
        proc.wait(5)
        pytest.fail("upstream.py did not start: %s" % (d / "stderr.log").read_text())
    ports = json.loads(line)
    yield Upstream(proc, ports["port"], ports["control"], unix)
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
    err.close()


@pytest.fixture(autouse=True)
def _per_test(request):
    """Per-test deadline (SIGALRM) and fresh upstream counters. A test that builds something
    (`@pytest.mark.deadline(seconds)`) gets a longer one."""
    marker = request.node.get_closest_marker("deadline")
    limit = marker.args[0] if marker else TEST_TIMEOUT

    def on_alarm(signum, frame):
        raise TimeoutError("test exceeded %d s" % limit)
    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)
    if "upstream" in request.fixturenames:
        request.getfixturevalue("upstream").reset()
    yield
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, old)


# -- sidecar -------------------------------------------------------------------------------
class Sidecar:
    """One running `sidecar run --config F` process."""

    def __init__(self, config_path, port, admin_port, workdir, args=None, preexec=None, env=None):
        self.config_path, self.port, self.admin_port = config_path, port, admin_port
        self.out_path, self.err_path = workdir / "stdout.log", workdir / "stderr.log"
        self.stopped = False
        args = args or ["run", "--config", "{config}"]
        cmd = [str(sidecar_binary())] + [a.replace("{config}", str(config_path)) for a in args]
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                         preexec_fn=preexec,
                                         env=None if env is None else {**os.environ, **env})
        self.pid = self.proc.pid

    def output(self):
        return self.out_path.read_text(errors="replace") + self.err_path.read_text(
            errors="replace")

    def log_tail(self, n=8000):
        return "exit=%s\n--- stdout ---\n%s\n--- stderr ---\n%s" % (
            self.proc.poll(), self.out_path.read_text(errors="replace")[-n:],
            self.err_path.read_text(errors="replace")[-n:])

    def wait_ready(self, timeout=STARTUP_TIMEOUT):
        deadline = time.monotonic() + timeout
        step = "listen port %d" % self.port
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("sidecar exited during start-up (%s)\n%s"
                                     % (step, self.log_tail()))
            try:
                if step.startswith("listen"):
                    socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                    step = "admin /healthz on %d" % self.admin_port
                if rawhttp.request(self.admin_port, "GET", "/healthz", timeout=2).status == 200:
                    return self
            except (OSError, rawhttp.Closed):
                pass
            time.sleep(0.02)
        raise AssertionError("sidecar not ready after %.0f s (waiting for %s)\n%s"
                             % (timeout, step, self.log_tail()))

    # -- talking to it --------------------------------------------------------------------
    def conn(self, **kw):
        return rawhttp.Conn(self.port, **kw)

    def request(self, method="GET", target="/echo", headers=None, body=b"", **kw):
        return rawhttp.request(self.port, method, target, headers, body, **kw)

    def admin(self, target):
        return rawhttp.request(self.admin_port, "GET", target, timeout=5)

    # -- its log --------------------------------------------------------------------------
    def logged(self, predicate, timeout=5.0):
        """predicate(output)'s first truthy value, polled for up to `timeout` seconds.

        A log line and the response it belongs to are two events that race (a client may
        read the answer before the line reaches the file), so a test that expects a line
        after a response polls for it. 5 s: the line is written while the request is
        handled; the rest covers a loaded 2-core machine."""
        return poll(lambda: predicate(self.output()), timeout)

    def reloads(self):
        """(reloaded, failed): the SIGHUPs the log shows answered so far."""
        out = self.output()
        return out.count("configuration reloaded"), out.count("reload failed")

    def sighup(self, timeout=5.0):
        """SIGHUP, then waits for that reload's own log line; returns whether it reloaded
        (False: it failed and the previous configuration is kept). A reload is prompt: 5 s
        covers a loaded 2-core machine. (The line follows the new settings' publication;
        each worker takes them up on its next loop turn.)"""
        reloaded, failed = self.reloads()
        self.proc.send_signal(signal.SIGHUP)
        assert poll(lambda: sum(self.reloads()) > reloaded + failed, timeout), \
            "no reload logged %.0f s after SIGHUP\n%s" % (timeout, self.log_tail())
        return self.reloads()[0] > reloaded

    # -- observing it from /proc ----------------------------------------------------------
    def rss_kib(self):
        for line in Path("/proc/%d/status" % self.pid).read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS for pid %d" % self.pid)

    def fd_count(self):
        return len(os.listdir("/proc/%d/fd" % self.pid))

    def thread_cpu_ticks(self):
        """{tid: utime+stime clock ticks} of every thread."""
        out = {}
        for tid in os.listdir("/proc/%d/task" % self.pid):
            try:
                stat = Path("/proc/%d/task/%s/stat" % (self.pid, tid)).read_text()
            except FileNotFoundError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            out[tid] = int(fields[11]) + int(fields[12])
        return out

    # -- stopping it ----------------------------------------------------------------------
    def signal(self, sig):
        self.stopped = True
        self.proc.send_signal(sig)

    def wait_exit(self, timeout):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self):
        if self.proc.poll() is None:
            self.signal(signal.SIGTERM)
            # A sanitizer that found something is still writing its report (unwinding every
            # thread's stack): killed meanwhile, the report ends after its first lines.
            grace = 60 if os.environ.get("SIDECAR_SANITIZED") else 5
            if self.wait_exit(grace) is None:
                self.proc.kill()
                self.proc.wait(5)


@pytest.fixture
def base_config(upstream, keydir):
    """A complete valid config in front of the test upstream; everything public."""
    def make(port, admin_port):
        return {
            "listen": "127.0.0.1:%d" % port,
            "public_url": "http://127.0.0.1:%d" % port,
            "upstream": "http://127.0.0.1:%d" % upstream.port,
            "workers": 1,
            "apple": {
                "team_id": "TEAM123456",
                "client_id": "com.example.web",
                "key_id": "KEY123ABCD",
                "private_key_file": str(keydir / "AuthKey_KEY123ABCD.p8"),
                "base_url": "http://127.0.0.1:%d" % upstream.control,
            },
            "session": {"secrets": [base64.b64encode(os.urandom(32)).decode()]},
            "admin": {"listen": "127.0.0.1:%d" % admin_port},
            "access": {"public_paths": ["/**"]},
        }
    return make


@pytest.fixture
def start_sidecar(request, base_config, tmp_path):
    """start_sidecar(overrides=None, text=None, ready=True, args=None, port=None, preexec=None,
    env=None) -> Sidecar.

    `args` replaces `run --config {config}` ({config} is the written file's path).
    `env` adds variables to the sidecar's environment: a dict, or a function of the config
    dict (to reach the ports chosen for it).
    `overrides` is deep-merged into the base config (None removes a key); `text` replaces
    the YAML entirely. Every started sidecar is stopped after the test, and its output is
    attached to the report of a failing test.
    """
    started = []
    request.node._sidecars = started

    def start(overrides=None, text=None, ready=True, args=None, port=None, preexec=None, env=None):
        # free_port() can race with other processes on the machine: when the ports were ours
        # to pick and the sidecar lost that race (exit 2, "address already in use"), pick again.
        fixed_ports = port is not None or text is not None or not ready
        for attempt in range(3):
            workdir = tmp_path / ("sidecar%d" % len(started))
            workdir.mkdir()
            chosen, admin_port = port or free_port(), free_port()
            config = merge(base_config(chosen, admin_port), overrides)
            path = workdir / "sidecar.yaml"
            path.write_text(text if text is not None else to_yaml(config) + "\n")
            extra_env = env(config) if callable(env) else env
            sc = Sidecar(path, chosen, admin_port, workdir, args, preexec, extra_env)
            sc.config = config
            started.append(sc)
            if not ready:
                return sc
            try:
                return sc.wait_ready()
            except AssertionError:
                lost_race = sc.proc.poll() == 2 and "address already in use" in sc.output()
                if fixed_ports or not lost_race or attempt == 2:
                    raise
                sc.stopped = True  # expected exit: not a crash of the test's sidecar

    yield start
    crashed = []
    for sc in started:
        if not sc.stopped and sc.proc.poll() is not None:
            crashed.append(sc)
        sc.stop()
    if crashed and not getattr(request.node, "_call_failed", False):
        pytest.fail("sidecar exited on its own during the test\n" +
                    "\n".join(sc.log_tail() for sc in crashed))


@pytest.fixture
def sidecar(start_sidecar):
    """A sidecar with the base config."""
    return start_sidecar()


# -- Apple emulator ------------------------------------------------------------------------
class Emulator:
    """One `sidecar emulator` process with its test controls."""

    def __init__(self, proc, issuer, workdir):
        self.proc, self.issuer, self.workdir = proc, issuer, workdir
        self.port = int(issuer.rsplit(":", 1)[1])

    def control(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else b""
        headers = [("Content-Type", "application/json")] if body is not None else []
        return rawhttp.request(self.port, method, path, headers, data, timeout=5)

    def arm(self, *faults):
        r = self.control("POST", "/emulator/faults", {"faults": list(faults)})
        assert r.status == 200, r.body

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


@pytest.fixture(scope="session")
def emulator_keys(tmp_path_factory):
    """RS256 signing keys shared by every emulator of the session (generated once)."""
    return tmp_path_factory.mktemp("emulator-keys")


@pytest.fixture
def start_emulator(tmp_path, keydir, emulator_keys):
    """start_emulator(redirect_uris) -> Emulator for client com.example.web, team TEAM123456,
    client key KEY123ABCD (the keydir .p8)."""
    started = []

    def start(redirect_uris, extra_args=()):
        workdir = tmp_path / ("emulator%d" % len(started))
        workdir.mkdir()
        err = open(workdir / "stderr.log", "wb")
        proc = subprocess.Popen(
            [str(sidecar_binary()), "emulator", "--listen", "127.0.0.1:0", "--team-id", "TEAM123456",
             "--client", "com.example.web=" + ",".join(redirect_uris),
             "--client-key", "KEY123ABCD=%s" % (keydir / "AuthKey_KEY123ABCD.p8"),
             "--keys-dir", str(emulator_keys)] + list(extra_args),
            stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL)
        line = proc.stdout.readline().decode()
        err.close()
        if "issuer " not in line:
            proc.kill()
            pytest.fail("emulator did not start: %r %s" % (line, (workdir / "stderr.log").read_text()))
        emulator = Emulator(proc, line.split("issuer ", 1)[1].split()[0], workdir)
        started.append(emulator)
        return emulator

    yield start
    for emulator in started:
        emulator.stop()


@pytest.fixture
def start_auth_sidecar(start_sidecar, start_emulator):
    """start_auth_sidecar(overrides=None) -> (Sidecar, Emulator): a sidecar whose
    apple.base_url is a fresh emulator registered with its callback URL; /pub/** is public,
    everything else needs a session."""
    def start(overrides=None):
        port = free_port()
        emulator = start_emulator(["http://127.0.0.1:%d/.auth/callback" % port])
        base = {"apple": {"base_url": emulator.issuer}, "access": {"public_paths": ["/pub/**"]}}
        sc = start_sidecar(merge(base, overrides), port=port)
        sc.emulator = emulator
        return sc, emulator
    return start


class Browser:
    """A cookie jar and the sign-in chain as a browser runs it: /login → Apple's authorize
    page (auto-approved) → its auto-submitting form_post → /callback → 303."""

    HTML = ("Accept", "text/html,application/xhtml+xml")

    def __init__(self, sidecar, emulator):
        self.sidecar, self.emulator = sidecar, emulator
        self.jar = {}  # name -> (value, path)

    def cookie_header(self, target):
        path = target.split("?", 1)[0]
        pairs = ["%s=%s" % (n, v) for n, (v, p) in self.jar.items()
                 if path == p or path.startswith(p.rstrip("/") + "/")]
        return [("Cookie", "; ".join(pairs))] if pairs else []

    def absorb(self, response):
        for line in response.header_all("Set-Cookie"):
            parts = [p.strip() for p in line.split(";")]
            name, _, value = parts[0].partition("=")
            attrs = {k.lower(): v for k, _, v in (p.partition("=") for p in parts[1:])}
            if attrs.get("max-age") == "0":
                self.jar.pop(name, None)
            else:
                self.jar[name] = (value, attrs.get("path", "/"))
        return response

    def request(self, method, target, headers=(), body=b"", jar=True):
        hs = list(headers) + (self.cookie_header(target) if jar else [])
        if body:
            hs.append(("Content-Type", "application/x-www-form-urlencoded"))
        return self.absorb(self.sidecar.request(method, target, hs, body))

    def get(self, target, headers=(HTML,)):
        return self.request("GET", target, headers)

    def start_login(self, rd=None):
        """GET /login; returns (response, authorize URL parts)."""
        target = "/.auth/login" + ("?rd=" + quote(rd, safe="") if rd is not None else "")
        r = self.get(target)
        assert r.status == 302, (r.status, r.body)
        return r, urlsplit(r.header("Location"))

    def authorize(self, location, email="maria.ruiz@example.com"):
        """Apple's side: returns the form_post fields (dict) and its action URL."""
        query = location.query + "&emulator_auto_approve=" + quote(email, safe="")
        r = rawhttp.request(self.emulator.port, "GET", location.path + "?" + query, timeout=5)
        assert r.status == 200, (r.status, r.body)
        page = r.body.decode()
        action = html.unescape(re.search(r'<form method="post" action="([^"]*)"', page).group(1))
        fields = {html.unescape(n): html.unescape(v) for n, v in
                  re.findall(r'<input type="hidden" name="([^"]*)" value="([^"]*)">', page)}
        return fields, action

    def callback(self, fields, headers=(HTML,), jar=True):
        body = urlencode(list(fields.items())).encode()
        return self.request("POST", "/.auth/callback", headers, body, jar=jar)

    def login(self, rd=None, email="maria.ruiz@example.com"):
        """The whole chain; returns (callback response, form_post fields)."""
        _, location = self.start_login(rd)
        fields, action = self.authorize(location, email)
        assert urlsplit(action).path == "/.auth/callback"
        return self.callback(fields), fields

    @property
    def session_cookie(self):
        for name, (value, _) in self.jar.items():
            if "login" not in name:
                return name, value
        return None


def log_entries(sc):
    """The sidecar's JSON log lines so far, parsed."""
    return [json.loads(line) for line in sc.output().splitlines() if line.startswith("{")]


def access_line(sc, request_id):
    """The access line of the request with this X-Request-Id, once it is written."""
    def find():
        return next((e for e in log_entries(sc) if e.get("request_id") == request_id and e["msg"] == "request"), None)
    line = poll(find)
    assert line, sc.output()
    return line


def seen(echo, name):
    """Values of header `name` as the echo upstream received them: case-insensitive, with `_`
    read as `-` (the underscore spellings a forged identity header may use)."""
    return [v for n, v in echo["headers"] if n.lower().replace("_", "-") == name.lower()]


@pytest.fixture
def signed_in(start_auth_sidecar, browser):
    """(Sidecar, Emulator, Browser) with the browser signed in through the whole web flow."""
    sc, apple = start_auth_sidecar()
    b = browser(sc, apple)
    assert b.login()[0].status == 303
    return sc, apple, b


@pytest.fixture
def browser():
    """browser(sidecar, emulator) -> a fresh Browser."""
    return Browser


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.when == "call":
        item._call_failed = rep.failed
    if rep.failed:
        for i, sc in enumerate(getattr(item, "_sidecars", [])):
            rep.sections.append(("sidecar #%d (port %d) output" % (i, sc.port), sc.log_tail()))


def pytest_sessionstart(session):
    if not sidecar_binary().exists():
        raise pytest.UsageError("no sidecar binary at %s: run `swift build --product sidecar`"
                                " first (or set SIDECAR_BIN)" % sidecar_binary())


def pytest_configure(config):
    if os.environ.get("SIDECAR_TEST_CPU"):  # per-test CPU of the process tree (cpu_accounting.py)
        import cpu_accounting
        config.pluginmanager.register(cpu_accounting.CpuAccounting(os.environ["SIDECAR_TEST_CPU"]),
                                      "cpu-accounting")
    config.addinivalue_line("markers", "deadline(seconds): a longer per-test deadline than TEST_TIMEOUT")
    config.addinivalue_line("markers", "serial: measures memory, descriptors or floods of its own; run alone "
                            "(scripts/test runs `-m 'not serial'` in parallel, then `-m serial`)")


# Files whose tests measure what the sidecar holds (RSS, descriptors) or time floods of
# hundreds of connections: on two cores shared with other workers' sidecars they would measure
# the neighbours, so they run after the parallel part, one at a time.
SERIAL_FILES = {"test_attack_limits.py", "test_sign_in_floods.py", "test_descriptors.py", "test_upstream_caps.py"}
# ...except those that only wait on the sidecar's own clock.
PARALLEL_IN_SERIAL_FILES = {"test_a_body_slower_than_min_body_rate_gets_408_and_a_fast_enough_upload_passes"}


def pytest_collection_modifyitems(config, items):
    sanitized = bool(os.environ.get("SIDECAR_SANITIZED"))
    for item in items:
        if item.path.name in SERIAL_FILES and item.originalname not in PARALLEL_IN_SERIAL_FILES:
            item.add_marker(pytest.mark.serial)
        # Under a sanitizer (scripts/test-sanitized) the process's RSS is mostly shadow memory
        # and the allocator's quarantine: a bound on it would measure the sanitizer.
        if sanitized and getattr(item, "function", None) is not None:
            source = inspect.getsource(item.function)
            if "rss_kib" in source or "RssSampler" in source:
                item.add_marker(pytest.mark.skip(reason="measures RSS, which a sanitizer inflates"))
