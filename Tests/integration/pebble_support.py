"""Pebble (Let's Encrypt's ACME test CA, Debian's `pebble`) and its challenge test server as
the DNS that sends every name to 127.0.0.1, so Pebble's validation really connects to the
sidecar's listeners on loopback.

Pebble's own HTTPS is served with a leaf of a throw-away TestCA, which the sidecar trusts via
`tls.acme.ca_file`; the certificates Pebble issues chain to its own root, read from its
management interface for the clients that check them.
"""
import json
import os
import shutil
import ssl
import subprocess
import time
import urllib.request

import pytest

from conftest import free_port, poll
from tls_support import TestCA

DOMAIN = "app.acme.test"


def pebble_available():
    return shutil.which("pebble") and shutil.which("pebble-challtestsrv")


def need_pebble():
    if not pebble_available():
        if os.environ.get("CI"):
            pytest.fail("pebble is not installed (Debian: pebble)")
        pytest.skip("pebble is not installed (Debian: pebble)")


class Pebble:
    """One Pebble with its DNS; `http_port`/`tls_port` are where it validates challenges."""

    def __init__(self, workdir, http_port, tls_port, validity=None, env=None, eab_keys=None):
        self.dir = workdir
        self.dir.mkdir(parents=True, exist_ok=True)
        self.ca = TestCA(self.dir, name="pebble https test CA")
        leaf = self.ca.issue("pebble", ips=("127.0.0.1",), dns=("localhost",))
        self.port, self.management = free_port(), free_port()
        self.dns_port = free_port()
        config = {
            "listenAddress": "127.0.0.1:%d" % self.port,
            "managementListenAddress": "127.0.0.1:%d" % self.management,
            "certificate": str(leaf.cert_file), "privateKey": str(leaf.key_file),
            "httpPort": http_port, "tlsPort": tls_port, "ocspResponderURL": "",
            "externalAccountBindingRequired": False,
        }
        if validity:
            config["certificateValidityPeriod"] = validity
        if eab_keys:  # {kid: base64url MAC key}: every new account must be bound to one
            config["externalAccountBindingRequired"] = True
            config["externalAccountMACKeys"] = eab_keys
        self.config_file = self.dir / "pebble.json"
        self.config_file.write_text(json.dumps({"pebble": config}))
        self.env = {"PEBBLE_VA_NOSLEEP": "1", "PEBBLE_WFE_NONCEREJECT": "0", "PEBBLE_AUTHZREUSE": "0",
                    **(env or {})}
        self.dns = None
        self.proc = None

    @property
    def directory(self):
        return "https://127.0.0.1:%d/dir" % self.port

    def start(self):
        log = open(self.dir / "challtestsrv.log", "ab")
        self.dns = subprocess.Popen(
            ["pebble-challtestsrv", "-defaultIPv4", "127.0.0.1", "-defaultIPv6", "",
             "-dns01", "127.0.0.1:%d" % self.dns_port, "-http01", "", "-https01", "", "-tlsalpn01", "",
             "-management", "127.0.0.1:%d" % free_port()],
            stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        return self.start_ca()

    def start_ca(self):
        log = open(self.dir / "pebble.log", "ab")
        self.proc = subprocess.Popen(
            ["pebble", "-config", str(self.config_file), "-dnsserver", "127.0.0.1:%d" % self.dns_port],
            stdout=log, stderr=log, stdin=subprocess.DEVNULL, env={**os.environ, **self.env})
        assert poll(self._answers, 10), "pebble did not start\n" + self.log()
        return self

    def stop_ca(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(5)

    def stop(self):
        self.stop_ca()
        if self.dns and self.dns.poll() is None:
            self.dns.terminate()
            self.dns.wait(5)

    def _answers(self):
        try:
            with urllib.request.urlopen(self.directory, context=self.ca.client_context(), timeout=1) as r:
                return r.status == 200
        except OSError:
            return False

    def log(self):
        return "".join((self.dir / n).read_text(errors="replace")[-6000:]
                       for n in ("pebble.log", "challtestsrv.log") if (self.dir / n).exists())

    def root_pem(self):
        """Pebble's issuing root (new at every Pebble start)."""
        url = "https://127.0.0.1:%d/roots/0" % self.management
        with urllib.request.urlopen(url, context=self.ca.client_context(), timeout=5) as r:
            return r.read()

    def orders(self):
        """Orders Pebble logged as finalized, by counting its log lines."""
        return (self.dir / "pebble.log").read_text(errors="replace").count("Issued certificate serial")


def acme_config(pebble, port, workdir, challenge="http-01", http_port=None, extra=None):
    """Overrides for start_sidecar: TLS on `port` for DOMAIN, certificates from `pebble`."""
    acme = {
        "directory": pebble.directory, "ca_file": str(pebble.ca.cert_file), "email": "ops@example.com",
        "challenge": challenge, "storage": str(workdir / "acme"),
    }
    if http_port:
        acme["http_listen"] = "127.0.0.1:%d" % http_port
    acme.update(extra or {})
    return {"listen": "127.0.0.1:%d" % port, "public_url": "https://%s:%d" % (DOMAIN, port),
            "tls": {"acme": acme}}


def served_certificate(port, root_pem, tmp_path, server_name=DOMAIN):
    """The certificate the sidecar serves for DOMAIN, verified against Pebble's root."""
    root = tmp_path / "pebble-root.pem"
    root.write_bytes(root_pem)
    context = ssl.create_default_context(cafile=str(root))
    import socket
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        with context.wrap_socket(raw, server_hostname=server_name) as tls:
            return tls.getpeercert()


def ready(sc):
    try:
        return sc.admin("/readyz").status == 200
    except Exception:
        return False


def wait_issued(sc, timeout=40):
    assert poll(lambda: ready(sc), timeout, 0.2), "no certificate after %ds\n%s" % (timeout, sc.log_tail())
