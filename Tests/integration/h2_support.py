"""A small HTTP/2 client over the Python `h2` library and a raw socket: what curl and httpx
cannot send (forged frames, floods, resets) and what they can, with every frame in view."""
import socket
import ssl
import time

import h2.config
import h2.connection
import h2.events
import h2.exceptions


class H2Response:
    def __init__(self):
        self.status = None
        self.headers = []
        self.body = b""
        self.ended = False
        self.reset = None
        self.trailers = []

    def header(self, name):
        for n, v in self.headers:
            if n == name.lower():
                return v
        return None

    def header_all(self, name):
        return [v for n, v in self.headers if n == name.lower()]


class H2Client:
    """One HTTP/2 connection. `tls_context`: h2 over TLS (ALPN h2), else h2c with prior
    knowledge."""

    def __init__(self, port, tls_context=None, host="127.0.0.1", timeout=5.0, settings=None, receive_buffer=None):
        if receive_buffer is None:
            raw = socket.create_connection((host, port), timeout=timeout)
        else:  # a small window for the server's bytes: set before connecting, or TCP ignores it
            raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
            raw.settimeout(timeout)
            raw.connect((host, port))
        if tls_context is not None:
            raw = tls_context.wrap_socket(raw, server_hostname="localhost")
            assert raw.selected_alpn_protocol() == "h2", raw.selected_alpn_protocol()
        self.sock = raw
        self.conn = h2.connection.H2Connection(
            config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8", validate_outbound_headers=False,
                                             normalize_outbound_headers=False, validate_inbound_headers=False))
        self.conn.initiate_connection()
        if settings:
            self.conn.update_settings(settings)
        self.responses = {}
        self.goaway = None
        self.closed = False
        self.flush()

    def flush(self):
        data = self.conn.data_to_send()
        if data:
            try:
                self.sock.sendall(data)
            except OSError:
                self.closed = True

    def send_raw(self, data):
        try:
            self.sock.sendall(data)
        except OSError:
            self.closed = True

    def start(self, method, path, headers=(), body=None, authority="127.0.0.1", scheme="http", end=True):
        sid = self.conn.get_next_available_stream_id()
        fields = [(":method", method), (":path", path), (":scheme", scheme), (":authority", authority)]
        fields += [(n, v) for n, v in headers]
        self.conn.send_headers(sid, fields, end_stream=(body is None and end))
        self.responses[sid] = H2Response()
        self.flush()
        if body is not None:
            self.send_body(sid, body, end)
        return sid

    def send_body(self, sid, body, end=True, timeout=10.0):
        """Sends `body` as the windows allow, reading WINDOW_UPDATEs in between."""
        view = memoryview(body)
        while True:
            room = min(self.conn.local_flow_control_window(sid), self.conn.max_outbound_frame_size, len(view))
            if room > 0 or not view:
                last = room == len(view)
                self.conn.send_data(sid, bytes(view[:room]), end_stream=end and last)
                view = view[room:]
                self.flush()
                if last:
                    return
                continue
            before = self.conn.local_flow_control_window(sid)
            r = self.responses[sid]
            if not self.pump(timeout=timeout, until=lambda: self.conn.local_flow_control_window(sid) > before
                             or r.ended or r.reset is not None or self.closed):
                raise TimeoutError("no WINDOW_UPDATE for stream %d" % sid)
            if r.ended or r.reset is not None or self.closed:
                return

    def pump(self, timeout=5.0, until=None):
        """Reads frames until `until()` holds, the connection closes, or `timeout`."""
        deadline = time.monotonic() + timeout
        while not (until and until()):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            self.sock.settimeout(remaining)
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                return False
            except (ConnectionResetError, ssl.SSLError, OSError):
                self.closed = True
                return bool(until and until())
            if not data:
                self.closed = True
                return bool(until and until())
            try:
                events = self.conn.receive_data(data)
            except h2.exceptions.ProtocolError:
                self.closed = True
                return bool(until and until())
            for event in events:
                self.handle(event)
            self.flush()
        return True

    def handle(self, event):
        if isinstance(event, h2.events.ResponseReceived):
            r = self.responses.setdefault(event.stream_id, H2Response())
            for n, v in event.headers:
                if n == ":status":
                    r.status = int(v)
                else:
                    r.headers.append((n, v))
        elif isinstance(event, h2.events.DataReceived):
            self.responses[event.stream_id].body += event.data
            self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, h2.events.TrailersReceived):
            self.responses[event.stream_id].trailers += list(event.headers)
        elif isinstance(event, h2.events.StreamEnded):
            self.responses[event.stream_id].ended = True
        elif isinstance(event, h2.events.StreamReset):
            if event.stream_id in self.responses:
                self.responses[event.stream_id].reset = event.error_code
        elif isinstance(event, h2.events.ConnectionTerminated):
            self.goaway = event

    def send_trailers(self, sid, trailers):
        """Ends stream `sid` with a HEADERS frame of trailer fields."""
        self.conn.send_headers(sid, list(trailers), end_stream=True)
        self.flush()

    def request(self, method="GET", path="/echo", headers=(), body=None, **kw):
        sid = self.start(method, path, headers, body, **kw)
        r = self.responses[sid]
        self.pump(until=lambda: r.ended or r.reset is not None or self.closed)
        return r

    def wait_goaway(self, timeout=5.0):
        self.pump(timeout=timeout, until=lambda: self.goaway is not None or self.closed)
        return self.goaway

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass
