"""A cheap Sign in with Apple client for the benchmarks: keep-alive HTTP/1.1 over raw
sockets and the browser's login chain against a sidecar whose apple.base_url is a local
`sidecar emulator --auto-approve …`:

  GET /.auth/login → 302 to the emulator's /auth/authorize (+ login-state cookie)
  GET /auth/authorize → 200 auto-submitting form_post page (code, state, user)
  POST /.auth/callback (login cookie + the form's fields) → 303 + session cookie

Standard library only; nothing is imported from Tests/.
"""
import html
import re
import socket
from urllib.parse import urlencode, urlsplit

HTML_ACCEPT = "text/html,application/xhtml+xml"
_INPUT = re.compile(rb'<input type="hidden" name="([^"]*)" value="([^"]*)">')
_ACTION = re.compile(rb'<form method="post" action="([^"]*)"')


class LoginError(Exception):
    pass


class Response:
    __slots__ = ("status", "headers", "body")

    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    def header(self, name):
        name = name.lower()
        for k, v in self.headers:
            if k == name:
                return v
        return None

    def set_cookies(self):
        """{name: value} of the Set-Cookie fields that set (not clear) a cookie."""
        out = {}
        for k, v in self.headers:
            if k != "set-cookie":
                continue
            pair, _, attrs = v.partition(";")
            name, _, value = pair.strip().partition("=")
            if "max-age=0" not in attrs.lower().replace(" ", ""):
                out[name] = value
        return out


class Conn:
    """One keep-alive connection to 127.0.0.1:port; reconnects when the server closed it."""

    def __init__(self, port, timeout=10.0):
        self.port, self.timeout = port, timeout
        self.sock, self.buf = None, b""

    def close(self):
        if self.sock:
            self.sock.close()
        self.sock, self.buf = None, b""

    def request(self, method, target, headers=(), body=b""):
        head = ["%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % (method, target, self.port)]
        head += ["%s: %s\r\n" % kv for kv in headers]
        if body or method == "POST":
            head.append("Content-Length: %d\r\n" % len(body))
        data = ("".join(head) + "\r\n").encode() + body
        for attempt in (0, 1):
            if self.sock is None:
                self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=self.timeout)
                self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            try:
                self.sock.sendall(data)
                return self._read(method)
            except (ConnectionError, EOFError):
                self.close()  # a keep-alive connection the server had closed: once more
                if attempt:
                    raise

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise EOFError("connection closed")
        self.buf += chunk

    def _read(self, method):
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        raw, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers = []
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers.append((k.strip().lower(), v.strip()))
        resp = Response(status, headers, b"")
        if method == "HEAD" or status in (204, 304):
            body = b""
        elif (resp.header("transfer-encoding") or "").lower() == "chunked":
            body = self._read_chunked()
        else:
            n = int(resp.header("content-length") or 0)
            while len(self.buf) < n:
                self._fill()
            body, self.buf = self.buf[:n], self.buf[n:]
        resp.body = body
        if (resp.header("connection") or "").lower() == "close":
            self.close()
        return resp

    def _read_chunked(self):
        body = b""
        while True:
            while b"\r\n" not in self.buf:
                self._fill()
            size_line, self.buf = self.buf.split(b"\r\n", 1)
            size = int(size_line.split(b";")[0], 16)
            while len(self.buf) < size + 2:
                self._fill()
            body, self.buf = body + self.buf[:size], self.buf[size + 2:]
            if size == 0:
                while not self.buf.startswith(b"\r\n") and b"\r\n\r\n" not in self.buf:
                    self._fill()  # (trailers: none expected)
                self.buf = self.buf.split(b"\r\n", 1)[1] if self.buf.startswith(b"\r\n") else \
                    self.buf.split(b"\r\n\r\n", 1)[1]
                return body


def prepare_callback(sidecar, emulator):
    """Steps 1-2 (sidecar /login, emulator authorize): returns (login cookie header value,
    urlencoded callback body) ready for POST /.auth/callback."""
    r = sidecar.request("GET", "/.auth/login", [("Accept", HTML_ACCEPT)])
    location = r.header("location")
    if r.status != 302 or not location:
        raise LoginError("GET /.auth/login: %d %r" % (r.status, r.body[:200]))
    cookies = r.set_cookies()
    if len(cookies) != 1:
        raise LoginError("GET /.auth/login set %d cookies" % len(cookies))
    where = urlsplit(location)
    if where.port != emulator.port:
        raise LoginError("login redirects to %s, not the emulator on port %d" % (location, emulator.port))
    r = emulator.request("GET", where.path + "?" + where.query)
    if r.status != 200:
        raise LoginError("emulator authorize: %d %r" % (r.status, r.body[:200]))
    action = _ACTION.search(r.body)
    if not action or urlsplit(html.unescape(action.group(1).decode())).path != "/.auth/callback":
        raise LoginError("emulator did not answer with a form_post to /.auth/callback")
    fields = [(html.unescape(n.decode()), html.unescape(v.decode())) for n, v in _INPUT.findall(r.body)]
    cookie = "; ".join("%s=%s" % kv for kv in cookies.items())
    return cookie, urlencode(fields).encode()


def finish_callback(sidecar, cookie, body):
    """Step 3: POST /.auth/callback; returns (session cookie name, value)."""
    r = sidecar.request("POST", "/.auth/callback", [
        ("Accept", HTML_ACCEPT), ("Cookie", cookie),
        ("Content-Type", "application/x-www-form-urlencoded")], body)
    if r.status != 303:
        raise LoginError("POST /.auth/callback: %d %r" % (r.status, r.body[:300]))
    session = [(n, v) for n, v in r.set_cookies().items() if "-login-" not in n]
    if len(session) != 1:
        raise LoginError("callback set no session cookie: %r" % r.headers)
    return session[0]


def login(sidecar, emulator):
    """The whole chain on the given Conns; returns (session cookie name, value)."""
    cookie, body = prepare_callback(sidecar, emulator)
    return finish_callback(sidecar, cookie, body)


if __name__ == "__main__":
    # siwa_client.py SIDECAR_PORT EMULATOR_PORT → prints `name=value` of a fresh session cookie
    import sys
    name, value = login(Conn(int(sys.argv[1])), Conn(int(sys.argv[2])))
    print("%s=%s" % (name, value))
