#!/usr/bin/env python3
"""A real upstream for the end-to-end tests: a raw-socket asyncio HTTP/1.1 server.

Written on bare streams (not http.server) so each endpoint controls its own framing.
It listens on a TCP port (and optionally a unix socket) for the proxied traffic, and on a
separate control port for the tests themselves, so that looking at the statistics never
changes them.

Proxied endpoints:
  /echo            the request as received (line, headers in order, body length/sha256/body,
                   the trailer fields of a chunked body)
  /bytes?n=N       Content-Length body of N bytes written in pieces (&piece=, &abort_after=;
                   &stall_after=K: K bytes, then nothing until the proxy closes, at most &stall=S s)
  /chunked?n=N&size=S   chunked body of N bytes in chunks of S bytes (&bad_after=K: after K
                   bytes a chunk-size line that is not hex, then close; &trailers=a:1|b:2:
                   these trailer fields after the last chunk)
  /eof?n=N         body delimited by closing the connection (no length, no chunking)
  /slow?delay=S    answers after S seconds (or closes as soon as the proxy closes)
  /close?linger=S  answers, then closes S seconds later without sending `Connection: close`
  /hop             a response carrying hop-by-hop headers the proxy must remove
  /status?code=C   an empty response with that status (204/304 carry no body)
  /garbage         not HTTP at all, then close
  /badresp?kind=K  a response with ambiguous framing (cl_te, two_cl, bad_cl, te_gzip)
  /ws              WebSocket echo (RFC 6455 handshake, echoes data frames, answers close)
  anything else    same as /echo
`Expect: 100-continue` is answered with `100 Continue` before the body is read.
Control endpoints (control port): /_stats, /_reset, /auth/keys (a JWKS file, if given).
"""
import argparse
import asyncio
import base64
import hashlib
import json
import os
import sys
from urllib.parse import parse_qs, urlsplit

WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
ECHO_BODY_LIMIT = 1 << 20


class Stats:
    def __init__(self):
        self.open_connections = 0
        self.reset()

    def reset(self):
        """Zeroes the counters. `open_connections` is a gauge, not a counter: it is never
        reset, or a connection of an earlier test closing after the reset would leave it
        one short (the close and the next test's reset race)."""
        self.connections = 0
        self.requests = 0
        self.targets = []

    def as_json(self):
        return {
            "connections": self.connections,
            "open_connections": self.open_connections,
            "requests": self.requests,
            "targets": self.targets[-500:],
        }


STATS = Stats()
JWKS = b'{"keys":[]}'
DELAY = 0.0  # --delay: seconds every proxied request waits before it is answered (a slow server)


class BadRequest(Exception):
    pass


async def read_head(reader):
    """Returns (method, target, version, [(name, value)]) or None at a clean EOF."""
    try:
        raw = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as e:
        if e.partial.strip() == b"":
            return None
        raise BadRequest("truncated head")
    except asyncio.LimitOverrunError:
        raise BadRequest("head too large")
    lines = raw[:-4].split(b"\r\n")
    parts = lines[0].split(b" ")
    if len(parts) != 3:
        raise BadRequest("bad request line %r" % lines[0])
    method, target, version = (p.decode("latin-1") for p in parts)
    headers = []
    for line in lines[1:]:
        name, sep, value = line.partition(b":")
        if not sep:
            raise BadRequest("bad header line %r" % line)
        headers.append((name.decode("latin-1"), value.strip(b" \t").decode("latin-1")))
    return method, target, version, headers


def header(headers, name):
    values = [v for n, v in headers if n.lower() == name]
    return ", ".join(values) if values else None


async def read_body(reader, headers, sink, trailers=None):
    """Reads the request body by its framing, feeding `sink(bytes)` (and a chunked body's
    trailer fields to the list `trailers`); returns the framing."""
    te = header(headers, "transfer-encoding")
    if te is not None:
        if te.lower() != "chunked":
            raise BadRequest("transfer-encoding %r" % te)
        while True:
            size_line = await reader.readuntil(b"\r\n")
            size = int(size_line.split(b";")[0].strip(), 16)
            if size == 0:
                while (line := await reader.readuntil(b"\r\n")) != b"\r\n":
                    if trailers is not None:
                        name, _, value = line[:-2].partition(b":")
                        trailers.append([name.decode("latin-1"), value.strip(b" \t").decode("latin-1")])
                return "chunked"
            remaining = size
            while remaining:
                data = await reader.read(min(remaining, 1 << 16))
                if not data:
                    raise BadRequest("truncated chunk")
                sink(data)
                remaining -= len(data)
            if await reader.readexactly(2) != b"\r\n":
                raise BadRequest("chunk not followed by CRLF")
    cl = header(headers, "content-length")
    if cl is None:
        return "none"
    remaining = int(cl)
    while remaining:
        data = await reader.read(min(remaining, 1 << 16))
        if not data:
            raise BadRequest("truncated body")
        sink(data)
        remaining -= len(data)
    return "length"


def response_head(status, headers):
    reason = {101: "Switching Protocols", 200: "OK", 204: "No Content", 304: "Not Modified",
              400: "Bad Request", 404: "Not Found"}.get(status, "Status")
    lines = ["HTTP/1.1 %d %s" % (status, reason)] + ["%s: %s" % h for h in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def head_fields(tag, n, size):
    """`n` fields of about `size` bytes, names in mixed case, each value unique to `tag` and
    its place (a client checks them against the same function)."""
    fields = []
    for i in range(n):
        seed = hashlib.sha256(("%s/%d" % (tag, i)).encode()).hexdigest()
        fields.append(("X-Head-%s-%d" % ("Abc"[i % 3], i), (seed * (size // len(seed) + 1))[:size]))
    return fields


def pattern(offset, n):
    """Deterministic body bytes: byte i of a body is (i % 251)."""
    block = bytes(range(251)) * 2
    out = bytearray()
    while len(out) < n:
        start = (offset + len(out)) % 251
        out += block[start:start + min(251, n - len(out))]
    return bytes(out)


async def send_pattern(writer, n, piece, abort_after=None):
    sent = 0
    chunk = pattern(0, piece + 251)
    limit = n if abort_after is None else min(n, abort_after)
    while sent < limit:
        k = min(piece, limit - sent)
        start = sent % 251
        writer.write(chunk[start:start + k])
        sent += k
        await writer.drain()
    return sent


async def serve_ws(reader, writer, headers):
    key = header(headers, "sec-websocket-key") or ""
    accept = base64.b64encode(hashlib.sha1(key.encode() + WS_GUID).digest()).decode()
    writer.write(response_head(101, [("Upgrade", "websocket"), ("Connection", "Upgrade"),
                                     ("Sec-WebSocket-Accept", accept)]))
    await writer.drain()
    while True:
        b0, b1 = await reader.readexactly(2)
        opcode, length = b0 & 0x0F, b1 & 0x7F
        if length == 126:
            length = int.from_bytes(await reader.readexactly(2), "big")
        elif length == 127:
            length = int.from_bytes(await reader.readexactly(8), "big")
        mask = await reader.readexactly(4) if b1 & 0x80 else b"\0\0\0\0"
        data = bytearray(await reader.readexactly(length))
        for i in range(length):
            data[i] ^= mask[i % 4]
        if length < 126:
            head = bytes([0x80 | opcode, length])
        elif length < 65536:
            head = bytes([0x80 | opcode, 126]) + length.to_bytes(2, "big")
        else:
            head = bytes([0x80 | opcode, 127]) + length.to_bytes(8, "big")
        writer.write(head + bytes(data))
        await writer.drain()
        if opcode == 0x8:
            return


async def handle_request(reader, writer, method, target, version, headers):
    """Serves one request; returns False when the connection must be closed."""
    url = urlsplit(target)
    q = {k: v[0] for k, v in parse_qs(url.query).items()}
    path = url.path
    digest = hashlib.sha256()
    kept = bytearray()
    body_len = 0

    def sink(data):
        nonlocal body_len
        digest.update(data)
        body_len += len(data)
        if len(kept) < ECHO_BODY_LIMIT:
            kept.extend(data[:ECHO_BODY_LIMIT - len(kept)])

    if path == "/ws" and (header(headers, "upgrade") or "").lower() == "websocket":
        await serve_ws(reader, writer, headers)
        return False
    if (header(headers, "expect") or "").lower() == "100-continue":
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        await writer.drain()
    trailers = []
    framing = await read_body(reader, headers, sink, trailers)
    head_only = method == "HEAD"

    def send_simple(status, body, extra=(), content_type="application/octet-stream"):
        hs = [("Content-Type", content_type), ("Content-Length", str(len(body)))] + list(extra)
        writer.write(response_head(status, hs) + (b"" if head_only else body))

    if path == "/bytes":
        n = int(q.get("n", "0"))
        piece = int(q.get("piece", "65536"))
        abort_after = int(q["abort_after"]) if "abort_after" in q else None
        stall_after = int(q["stall_after"]) if "stall_after" in q else None
        writer.write(response_head(200, [("Content-Type", "application/octet-stream"),
                                         ("Content-Length", str(n))]))
        if head_only:
            return True
        sent = await send_pattern(writer, n, piece, stall_after if stall_after is not None else abort_after)
        if stall_after is not None:
            try:  # silent in the middle of the body until the proxy gives up on us (EOF)
                await asyncio.wait_for(reader.read(1), float(q.get("stall", "30")))
            except asyncio.TimeoutError:
                pass
            return False
        return sent == n
    if path == "/chunked":
        n, size = int(q.get("n", "0")), int(q.get("size", "4096"))
        writer.write(response_head(200, [("Content-Type", "application/octet-stream"),
                                         ("Transfer-Encoding", "chunked")]))
        if head_only:
            return True
        bad_after = int(q["bad_after"]) if "bad_after" in q else None
        sent = 0
        while sent < n:
            if bad_after is not None and sent >= bad_after:
                writer.write(b"zz\r\n")  # not a chunk size: the body breaks its own framing
                await writer.drain()
                return False
            k = min(size, n - sent)
            writer.write(b"%x\r\n" % k + pattern(sent, k) + b"\r\n")
            sent += k
            await writer.drain()
        extra = "".join("%s\r\n" % t for t in q.get("trailers", "").split("|") if t)
        writer.write(b"0\r\n" + extra.encode("latin-1") + b"\r\n")
        return True
    if path == "/eof":
        n = int(q.get("n", "0"))
        writer.write(response_head(200, [("Content-Type", "application/octet-stream")]))
        if not head_only:
            await send_pattern(writer, n, 65536)
        return False
    if path == "/slow":
        # A proxy that gave up on us (its upstream_timeout) closes the connection: stop
        # waiting then, so that this connection does not stay open into later tests.
        try:
            await asyncio.wait_for(reader.read(1), float(q.get("delay", "1")))
            return False  # the proxy hung up (nothing else is sent before our answer)
        except asyncio.TimeoutError:
            pass
        send_simple(200, b"slow done", content_type="text/plain")
        return True
    if path == "/close":
        send_simple(200, b"closing", content_type="text/plain")
        await writer.drain()
        await asyncio.sleep(float(q.get("linger", "0")))
        return False
    if path == "/heads":  # a large head whose every field depends on `tag`: see `head_fields`
        send_simple(200, b"heads:" + q.get("tag", "").encode(), content_type="text/plain",
                    extra=head_fields(q.get("tag", ""), int(q.get("n", "40")), int(q.get("size", "100"))))
        return True
    if path == "/hop":
        send_simple(200, b"hop", content_type="text/plain", extra=[
            ("Connection", "X-Resp-Hop"), ("X-Resp-Hop", "secret"),
            ("Keep-Alive", "timeout=99"), ("Proxy-Resp", "1"), ("Upgrade", "foo"),
            ("X-Resp-Keep", "kept")])
        return True
    if path == "/status":
        code = int(q.get("code", "200"))
        if code in (204, 304):
            writer.write(response_head(code, [("X-Status", str(code))]))
        else:
            send_simple(code, b"", content_type="text/plain")
        return True
    if path == "/badresp":  # ambiguous response framing: a proxy must not pass it on
        kind = q.get("kind", "cl_te")
        framing = {"cl_te": b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
                   "two_cl": b"Content-Length: 5\r\nContent-Length: 50\r\n",
                   "bad_cl": b"Content-Length: +5\r\n",
                   "te_gzip": b"Transfer-Encoding: gzip\r\n"}[kind]
        writer.write(b"HTTP/1.1 200 OK\r\n" + framing + b"\r\n0\r\n\r\n")
        return False
    if path == "/garbage":
        writer.write(b"HELLO THIS IS NOT HTTP\r\n\r\n")
        return False
    echo = {
        "method": method, "target": target, "version": version,
        "headers": [[n, v] for n, v in headers],
        "framing": framing, "body_len": body_len, "body_sha256": digest.hexdigest(),
        "body": bytes(kept).decode("latin-1"), "trailers": trailers,
    }
    send_simple(200, json.dumps(echo).encode(), content_type="application/json")
    return True


async def serve_proxied(reader, writer):
    STATS.connections += 1
    STATS.open_connections += 1
    try:
        while True:
            head = await read_head(reader)
            if head is None:
                return
            method, target, version, headers = head
            STATS.requests += 1
            STATS.targets.append("%s %s" % (method, target))
            if DELAY:
                await asyncio.sleep(DELAY)
            keep = await handle_request(reader, writer, method, target, version, headers)
            await writer.drain()
            if not keep:
                return
    except BadRequest as e:
        writer.write(response_head(400, [("Content-Length", str(len(str(e)))),
                                         ("Connection", "close")]) + str(e).encode())
    except (asyncio.IncompleteReadError, ConnectionError, ValueError):
        pass
    finally:
        STATS.open_connections -= 1
        try:
            writer.close()
        except Exception:
            pass


async def serve_control(reader, writer):
    try:
        while True:
            head = await read_head(reader)
            if head is None:
                return
            _, target, _, headers = head
            await read_body(reader, headers, lambda _: None)
            path = urlsplit(target).path
            if path == "/_reset":
                STATS.reset()
                body = b"{}"
            elif path == "/_stats":
                body = json.dumps(STATS.as_json()).encode()
            elif path == "/auth/keys":
                body = JWKS
            else:
                body = b'{"error":"not found"}'
            writer.write(response_head(200 if body != b'{"error":"not found"}' else 404, [
                ("Content-Type", "application/json"), ("Content-Length", str(len(body)))]) + body)
            await writer.drain()
    except (BadRequest, asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main():
    global JWKS, DELAY
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--control-port", type=int, default=0)
    ap.add_argument("--unix", help="also serve the proxied endpoints on this unix socket")
    ap.add_argument("--jwks", help="a JWKS file served at /auth/keys on the control port")
    ap.add_argument("--delay", type=float, default=0.0, help="seconds each proxied request waits first")
    ap.add_argument("--host", default="127.0.0.1", help="the address the proxied endpoints listen on")
    args = ap.parse_args()
    DELAY = args.delay
    if args.jwks:
        with open(args.jwks, "rb") as f:
            JWKS = f.read()
    limit = 1 << 20
    main_srv = await asyncio.start_server(serve_proxied, args.host, args.port, limit=limit,
                                          backlog=1024)
    ctl_srv = await asyncio.start_server(serve_control, "127.0.0.1", args.control_port)
    if args.unix:
        if os.path.exists(args.unix):
            os.unlink(args.unix)
        await asyncio.start_unix_server(serve_proxied, args.unix, limit=limit, backlog=1024)
    ports = {"port": main_srv.sockets[0].getsockname()[1],
             "control": ctl_srv.sockets[0].getsockname()[1]}
    print(json.dumps(ports), flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
