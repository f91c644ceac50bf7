"""A real nginx running one of the committed Examples/*.conf, and a small cookie-keeping HTTP
client for signing in through it.

The examples are readable production configs with placeholder addresses (documented in their
header comments); `render` replaces each placeholder and insists that it occurs, so an example
that drifts away from what the tests exercise fails loudly instead of testing something else.
"""
import html
import os
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import pytest

import rawhttp

EXAMPLES = Path(__file__).resolve().parents[2] / "Examples"
START_TIMEOUT = 10.0
HTML = ("Accept", "text/html,application/xhtml+xml")


def render(example, replacements, workdir):
    """Examples/<example> with every placeholder replaced, plus the scratch paths a test nginx
    needs (temp directories inside `workdir`, not the distribution's /var/lib/nginx)."""
    text = (EXAMPLES / example).read_text()
    for placeholder, value in replacements.items():
        assert placeholder in text, "%s no longer contains %r" % (example, placeholder)
        text = text.replace(placeholder, value)
    temp = "".join("    %s_temp_path %s;\n" % (kind, workdir / ("tmp-" + kind))
                   for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    access = "    access_log %s;\n" % (workdir / "access.log")
    assert text.count("http {\n") == 1, example
    return text.replace("http {\n", "http {\n" + temp + access, 1)


def find_nginx():
    nginx = os.environ.get("NGINX_BIN") or shutil.which("nginx") or (
        "/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if not nginx:
        if os.environ.get("CI"):
            pytest.fail("CI must run the nginx tests, but nginx is not installed")
        pytest.skip("nginx is not installed (Debian package `nginx`)")
    return nginx


class Nginx:
    def __init__(self, workdir, conf_text, port):
        self.workdir, self.port = workdir, port
        self.conf = workdir / "nginx.conf"
        self.conf.write_text(conf_text)
        self.err_path = workdir / "nginx.stderr"
        directives = "daemon off; master_process on; pid %s; error_log stderr notice;" % (
            workdir / "nginx.pid")
        if os.geteuid() == 0:
            directives += " user root;"  # workers can reach the private pytest tmp dirs
        with open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(
                [find_nginx(), "-p", str(workdir), "-e", "stderr", "-c", str(self.conf),
                 "-g", directives],
                stdin=subprocess.DEVNULL, stdout=err, stderr=err)

    def log(self):
        return self.err_path.read_text(errors="replace")

    def wait_ready(self):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("nginx exited during start-up:\n%s" % self.log())
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.02)
        raise AssertionError("nginx not listening on %d:\n%s" % (self.port, self.log()))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()  # SIGTERM: fast shutdown of master and workers
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


@pytest.fixture
def start_nginx(request, tmp_path):
    """start_nginx(example, replacements, port) -> a running Nginx; stopped after the test,
    its error log attached to a failing test's report."""
    started = []

    def start(example, replacements, port):
        workdir = tmp_path / ("nginx%d" % len(started))
        workdir.mkdir()
        (workdir / "logs").mkdir()
        nginx = Nginx(workdir, render(example, replacements, workdir), port)
        started.append(nginx)
        return nginx.wait_ready()

    yield start
    for nginx in started:
        nginx.stop()
    if getattr(request.node, "_call_failed", False):
        for nginx in started:
            print("--- nginx %s ---\n%s" % (nginx.conf, nginx.log()))


class CookieClient:
    """A browser-like client for one origin (127.0.0.1:<port>, plain or through `connect`):
    keeps cookies by name and path (Secure ones too: loopback is a secure context), never
    follows redirects."""

    def __init__(self, port, connect=None):
        self.port = port
        self.connect = connect or (lambda: rawhttp.Conn(port, timeout=10))
        self.jar = {}  # name -> (value, path)

    def _cookie_header(self, target):
        path = target.split("?", 1)[0]
        pairs = ["%s=%s" % (n, v) for n, (v, p) in self.jar.items()
                 if path == p or path.startswith(p.rstrip("/") + "/")]
        return [("Cookie", "; ".join(pairs))] if pairs else []

    def _absorb(self, response):
        for line in response.header_all("Set-Cookie"):
            parts = [p.strip() for p in line.split(";")]
            name, _, value = parts[0].partition("=")
            attrs = {k.lower(): v for k, _, v in (p.partition("=") for p in parts[1:])}
            if attrs.get("max-age") == "0" or not value:
                self.jar.pop(name, None)
            else:
                self.jar[name] = (value, attrs.get("path", "/"))
        return response

    def request(self, method, target, headers=(HTML,), body=b""):
        hs = list(headers) + self._cookie_header(target)
        if body:
            hs.append(("Content-Type", "application/x-www-form-urlencoded"))
        with self.connect() as conn:
            return self._absorb(conn.request(method, target, hs, body,
                                             host="127.0.0.1:%d" % self.port))

    def get(self, target, headers=(HTML,)):
        return self.request("GET", target, headers)


def apple_form_post(authorize_url):
    """Loads the emulator's authorize URL (auto-approving) like a browser would and returns
    the auto-submitting form's (action, fields) — what Apple posts back to the callback."""
    url = urlsplit(authorize_url)
    r = rawhttp.request(url.port, "GET", url.path + "?" + url.query, [HTML], timeout=10)
    assert r.status == 200, (r.status, r.body[:500])
    page = r.body.decode()
    action = re.search(r'<form method="post" action="([^"]*)"', page)
    assert action, page[:1000]
    fields = [(html.unescape(n), html.unescape(v)) for n, v in
              re.findall(r'<input type="hidden" name="([^"]*)" value="([^"]*)">', page)]
    return html.unescape(action.group(1)), urlencode(fields).encode()


class TLSConn(rawhttp.Conn):
    """rawhttp.Conn over TLS (verified against `context`), optionally from a chosen source
    address — 127.0.0.3 makes the client distinguishable from nginx (127.0.0.1)."""

    def __init__(self, port, context, source="127.0.0.1", timeout=10.0):
        raw = socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                       source_address=(source, 0))
        self.sock = context.wrap_socket(raw, server_hostname="127.0.0.1")
        self.buf = bytearray()
        self.eof = False
