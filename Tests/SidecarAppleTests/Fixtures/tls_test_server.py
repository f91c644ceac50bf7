#!/usr/bin/env python3
"""Local stand-in servers for the Apple HTTP client tests.

Usage: tls_test_server.py WORKDIR
Generates a test CA, a CA-signed leaf for localhost/127.0.0.1, a CA-signed leaf for
other.example and a self-signed localhost leaf in WORKDIR, starts one listener per case on
127.0.0.1 and prints {"ca": path, "<listener>": port, ...} as one JSON line. Exits, removing
WORKDIR, when its stdin closes (the test process ended).
"""
import datetime
import ipaddress
import json
import os
import shutil
import socket
import ssl
import sys
import threading
import warnings
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def _name(cn):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _cert(subject, subject_key, issuer, issuer_key, sans, is_ca):
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer))
        .public_key(subject_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=is_ca, path_length=None), critical=True)
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    if is_ca:
        builder = builder.add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
    return builder.sign(issuer_key, hashes.SHA256())


def _write(workdir, name, cert, key):
    cert_path = os.path.join(workdir, name + ".pem")
    key_path = os.path.join(workdir, name + ".key")
    with open(cert_path, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(key_path, "wb") as f:
        f.write(key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption()))
    return cert_path, key_path


def make_certificates(workdir):
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _cert("Sidecar Test CA", ca_key, "Sidecar Test CA", ca_key, None, True)
    ca_path, _ = _write(workdir, "ca", ca, ca_key)
    local_sans = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    key = ec.generate_private_key(ec.SECP256R1())
    local = _write(workdir, "localhost", _cert("localhost", key, "Sidecar Test CA", ca_key, local_sans, False), key)
    key = ec.generate_private_key(ec.SECP256R1())
    other = _write(workdir, "other", _cert("other.example", key, "Sidecar Test CA", ca_key,
                                            [x509.DNSName("other.example")], False), key)
    key = ec.generate_private_key(ec.SECP256R1())
    selfsigned = _write(workdir, "selfsigned", _cert("localhost", key, "localhost", key, local_sans, False), key)
    return ca_path, local, other, selfsigned


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(self, status, body, content_type="application/json", chunks=None):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Connection", "close")
        if chunks is None:
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for chunk in chunks:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        self.close_connection = True

    def _raw(self, data):
        self.wfile.write(data)
        self.wfile.flush()
        self.close_connection = True

    def do_GET(self):
        self._route(b"")

    def do_POST(self):
        self._route(self._body())

    def _route(self, body):
        path = self.path
        if path.endswith("/echo"):
            echo = {
                "method": self.command,
                "path": path,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": body.decode("latin-1"),
            }
            self._send(200, json.dumps(echo).encode())
        elif path.endswith("/length"):
            self._send(200, b"exactly these bytes", "text/plain")
        elif path.endswith("/chunked"):
            self._send(200, b"", "text/plain", chunks=[b"first,", b"second,", b"x" * 5000, b"end"])
        elif path.endswith("/until-close"):
            self._raw(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nbody until close")
        elif path.endswith("/big"):
            self._send(200, b"a" * (2 * 1024 * 1024), "text/plain")
        elif path.endswith("/big-chunked"):
            self._send(200, b"", "text/plain", chunks=[b"b" * 65536] * 32)
        elif path.endswith("/truncated"):
            self._raw(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly a part")
        elif path.endswith("/malformed"):
            self._raw(b"HTTP/1.1 2x0 Nope\r\n\r\n")
        elif path.endswith("/auth/token"):
            self._token(dict(parse_qsl(body.decode(), keep_blank_values=True)))
        elif path.endswith("/auth/revoke"):
            form = dict(parse_qsl(body.decode(), keep_blank_values=True))
            if form.get("client_secret") != "secret":
                self._send(400, b'{"error":"invalid_client"}')
            else:
                self._send(200, b"", "text/plain")
        elif path.endswith("/auth/keys"):
            self._send(200, b'{"keys":[{"kty":"RSA","kid":"k1","use":"sig","alg":"RS256","n":"AQAB","e":"AQAB"}]}')
        else:
            self._send(404, b'{"error":"not_found"}')

    def _token(self, form):
        if form.get("client_secret") != "secret":
            return self._send(400, b'{"error":"invalid_client"}')
        grant = form.get("grant_type")
        code = form.get("code") or form.get("refresh_token")
        if grant not in ("authorization_code", "refresh_token"):
            return self._send(400, b'{"error":"unsupported_grant_type"}')
        if code == "used":
            return self._send(400, b'{"error":"invalid_grant","error_description":"The code has already been used."}')
        if code == "server-error":
            return self._send(503, b"<html>busy</html>", "text/html")
        if code == "html-400":
            return self._send(400, b"<html>bad</html>", "text/html")
        if code == "not-json":
            return self._send(200, b"[1,2]")
        token = {"access_token": "at." + code, "token_type": "bEaReR", "expires_in": 3600,
                 "id_token": "id." + code}
        if grant == "authorization_code":
            token["refresh_token"] = "rt." + code
            token["echo"] = form
        self._send(200, json.dumps(token).encode())


def serve_tls(cert, key, tls11_only=False):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    if tls11_only:
        context.set_ciphers("ALL:@SECLEVEL=0")
        context.minimum_version = ssl.TLSVersion.TLSv1_1
        context.maximum_version = ssl.TLSVersion.TLSv1_1
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)

    # Handshake in the handler thread so a failing client does not stall the listener.
    def get_request():
        sock, addr = server.socket.accept()
        sock.settimeout(10)
        return sock, addr

    def finish_request(request, client_address):
        try:
            request.do_handshake()
        except (ssl.SSLError, OSError):
            return
        Handler(request, client_address, server)

    server.get_request = get_request
    server.finish_request = finish_request
    server.handle_error = lambda request, client_address: None
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1]


def serve_plain():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.handle_error = lambda request, client_address: None
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1]


def main():
    warnings.simplefilter("ignore", DeprecationWarning)
    workdir = sys.argv[1]
    ca, local, other, selfsigned = make_certificates(workdir)
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)  # accepted by the kernel, never answered
    ports = {
        "ca": ca,
        "good": serve_tls(*local),
        "other": serve_tls(*other),
        "selfsigned": serve_tls(*selfsigned),
        "tls11": serve_tls(*local, tls11_only=True),
        "plain": serve_plain(),
        "silent": silent.getsockname()[1],
    }
    print(json.dumps(ports), flush=True)
    sys.stdin.read()
    # The folder is this script's to keep while the tests run, and to remove after them.
    shutil.rmtree(workdir, ignore_errors=True)
    os._exit(0)


if __name__ == "__main__":
    main()
