"""A tiny raw-socket HTTP/1.1 client for the end-to-end tests.

Requests are written byte for byte as the test spells them (so malformed ones can be sent);
responses are read by their own framing (RFC 9112 §6.3), so keep-alive and pipelining can be
checked exactly. Every socket has a timeout: a test never hangs on a silent peer.
"""
import json
import os
import socket
import struct
from dataclasses import dataclass, field

DEFAULT_TIMEOUT = 10.0


class Closed(Exception):
    """The peer closed (or reset) the connection before a complete response."""


@dataclass
class Response:
    status: int
    reason: str
    headers: list = field(default_factory=list)  # [(name, value)] in order received
    body: bytes = b""
    body_len: int = 0
    framing: str = "none"  # "length", "chunked", "close" or "none"

    def header(self, name):
        values = [v for n, v in self.headers if n.lower() == name.lower()]
        return ", ".join(values) if values else None

    def header_all(self, name):
        return [v for n, v in self.headers if n.lower() == name.lower()]

    def json(self):
        return json.loads(self.body)


class Conn:
    def __init__(self, port=None, host="127.0.0.1", timeout=DEFAULT_TIMEOUT, unix=None,
                 rcvbuf=None, source=None):
        """`source`: the local address to connect from (e.g. "127.0.0.2": another client)."""
        if unix:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        else:
            self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if source:
            self.sock.bind((source, 0))
        if rcvbuf:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(timeout)
        self.sock.connect(unix if unix else (host, port))
        self.buf = bytearray()
        self.eof = False

    # -- low level -------------------------------------------------------------------------
    def send(self, data):
        self.sock.sendall(data)

    def settimeout(self, t):
        self.sock.settimeout(t)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _fill(self, n=65536):
        if self.eof:
            return False
        try:
            data = self.sock.recv(n)
        except ConnectionResetError:
            data = b""
        if not data:
            self.eof = True
            return False
        self.buf += data
        return True

    def read_until(self, marker):
        while True:
            i = self.buf.find(marker)
            if i >= 0:
                out = bytes(self.buf[:i + len(marker)])
                del self.buf[:i + len(marker)]
                return out
            if not self._fill():
                raise Closed("connection closed while waiting for %r (got %r)"
                             % (marker, bytes(self.buf[:200])))

    def read_exact(self, n, sink=None):
        """Reads n bytes; returns them, or feeds them to sink(bytes) and returns b""."""
        out = bytearray()
        while n:
            if not self.buf and not self._fill(min(max(n, 4096), 1 << 20)):
                raise Closed("connection closed with %d body bytes missing" % n)
            k = min(n, len(self.buf))
            piece = bytes(self.buf[:k])
            del self.buf[:k]
            n -= k
            if sink:
                sink(piece)
            else:
                out += piece
        return bytes(out)

    def read_available(self, timeout):
        """Whatever arrives within `timeout` seconds (b"" at EOF)."""
        old = self.sock.gettimeout()
        self.sock.settimeout(timeout)
        try:
            if not self.buf:
                self._fill()
        except socket.timeout:
            pass
        finally:
            self.sock.settimeout(old)
        out = bytes(self.buf)
        self.buf.clear()
        return out

    def wait_closed(self, timeout):
        """True when the peer closes within `timeout` seconds (any data is discarded)."""
        old = self.sock.gettimeout()
        self.sock.settimeout(timeout)
        try:
            while self._fill():
                self.buf.clear()
            return True
        except socket.timeout:
            return False
        finally:
            self.sock.settimeout(old)

    # -- HTTP ------------------------------------------------------------------------------
    def read_head(self):
        raw = self.read_until(b"\r\n\r\n")
        lines = raw[:-4].decode("latin-1").split("\r\n")
        version, _, rest = lines[0].partition(" ")
        code, _, reason = rest.partition(" ")
        if not version.startswith("HTTP/1.") or not code.isdigit():
            raise AssertionError("not an HTTP/1.x status line: %r" % lines[0])
        headers = []
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            assert sep and name == name.strip(), "malformed response header %r" % line
            headers.append((name, value.strip(" \t")))
        return Response(int(code), reason, headers)

    def read_response(self, method="GET", sink=None, skip_interim=True):
        """Reads one response; with sink, body bytes go to sink(bytes) instead of .body."""
        while True:
            resp = self.read_head()
            if not (skip_interim and 100 <= resp.status < 200 and resp.status != 101):
                break
        if method == "HEAD" or resp.status in (204, 304) or 100 <= resp.status < 200:
            return resp
        body = bytearray()
        total = 0

        def take(piece):
            nonlocal total
            total += len(piece)
            if sink:
                sink(piece)
            else:
                body.extend(piece)

        te = resp.header("transfer-encoding")
        cl = resp.header("content-length")
        if te is not None:
            assert te.lower() == "chunked", "unexpected response Transfer-Encoding %r" % te
            resp.framing = "chunked"
            while True:
                size = int(self.read_until(b"\r\n").split(b";")[0].strip(), 16)
                if size == 0:
                    while self.read_until(b"\r\n") != b"\r\n":
                        pass
                    break
                self.read_exact(size, take)
                assert self.read_exact(2) == b"\r\n", "chunk data not followed by CRLF"
        elif cl is not None:
            resp.framing = "length"
            self.read_exact(int(cl), take)
        else:
            resp.framing = "close"
            while True:
                if self.buf:
                    take(bytes(self.buf))
                    self.buf.clear()
                if not self._fill(1 << 20):
                    break
        resp.body = bytes(body)
        resp.body_len = total
        return resp

    def request(self, method="GET", target="/echo", headers=None, body=b"", host="test.local",
                read=True, sink=None):
        """Sends a well-formed request (Host first unless given) and reads its response."""
        self.send(build_request(method, target, headers, body, host))
        return self.read_response(method, sink) if read else None


def build_request(method="GET", target="/echo", headers=None, body=b"", host="test.local"):
    headers = list(headers or [])
    names = {n.lower() for n, _ in headers}
    if host is not None and "host" not in names:
        headers.insert(0, ("Host", host))
    if body and "content-length" not in names and "transfer-encoding" not in names:
        headers.append(("Content-Length", str(len(body))))
    head = "%s %s HTTP/1.1\r\n" % (method, target)
    head += "".join("%s: %s\r\n" % h for h in headers) + "\r\n"
    return head.encode("latin-1") + body


def request(port, method="GET", target="/echo", headers=None, body=b"", host="test.local",
            timeout=DEFAULT_TIMEOUT, unix=None):
    with Conn(port, timeout=timeout, unix=unix) as c:
        return c.request(method, target, headers, body, host)


def send_raw(port, data, timeout=5.0, wait_close=True):
    """Sends raw bytes on a fresh connection; returns (response or None, closed_after).
    `timeout` bounds the wait for the answer and for the close after it: a refusal and its
    close come at once, and 5 s covers a loaded 2-core machine. A caller that does not ask
    whether the connection closed passes wait_close=False (closed_after is then None): a
    kept-alive connection would otherwise cost it the whole timeout."""
    with Conn(port, timeout=timeout) as c:
        try:
            c.send(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        try:
            resp = c.read_response()
        except Closed:
            return None, True
        return resp, (c.wait_closed(timeout) if wait_close else None)


def chunked(data, size):
    out = bytearray()
    for i in range(0, len(data), size):
        piece = data[i:i + size]
        out += b"%x\r\n" % len(piece) + piece + b"\r\n"
    return bytes(out + b"0\r\n\r\n")


# -- WebSocket (RFC 6455) client frames ------------------------------------------------------
def ws_frame(opcode, payload, fin=True):
    mask = os.urandom(4)
    n = len(payload)
    head = bytes([(0x80 if fin else 0) | opcode])
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 65536:
        head += bytes([0x80 | 126]) + struct.pack(">H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack(">Q", n)
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return head + mask + masked


def ws_read_frame(conn):
    """Returns (opcode, payload) of one server frame (servers never mask)."""
    b0, b1 = conn.read_exact(2)
    n = b1 & 0x7F
    if n == 126:
        n = struct.unpack(">H", conn.read_exact(2))[0]
    elif n == 127:
        n = struct.unpack(">Q", conn.read_exact(8))[0]
    assert not b1 & 0x80, "server frames must not be masked"
    return b0 & 0x0F, conn.read_exact(n)
