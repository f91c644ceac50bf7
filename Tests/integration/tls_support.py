"""A throw-away certificate authority for tests that need real TLS on loopback: the emulator
as "Apple" on https://127.0.0.1, nginx terminating TLS in front of the sidecar.

Clients trust it explicitly (the sidecar via `apple.ca_file`, Python via an SSLContext with
`cafile`, Chromium via the leaf's SPKI pin) — never by switching verification off.
"""
import base64
import datetime
import hashlib
import ipaddress
import ssl
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def _pem_key(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


class Leaf:
    """A server certificate issued by a TestCA: files on disk plus its SPKI pin."""

    def __init__(self, cert, cert_file, key_file):
        self.cert, self.cert_file, self.key_file = cert, cert_file, key_file

    @property
    def spki_sha256_b64(self):
        """base64(SHA-256(SubjectPublicKeyInfo)): Chromium's --ignore-certificate-errors-spki-list."""
        spki = self.cert.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
        return base64.b64encode(hashlib.sha256(spki).digest()).decode()


class TestCA:
    __test__ = False  # not a pytest test class

    def __init__(self, directory, name="sidecar e2e test CA"):
        self.dir = Path(directory)
        self.key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = datetime.datetime.now(datetime.timezone.utc)
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(subject).issuer_name(subject)
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(
                digital_signature=False, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self.key.public_key()),
                           critical=False)
            .sign(self.key, hashes.SHA256()))
        self.cert_file = self.dir / "ca.pem"
        self.cert_file.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))

    def issue(self, stem, ips=("127.0.0.1",), dns=("localhost",), expired=False, client=False):
        """A leaf for these IP/DNS names, written as <stem>.pem (leaf + CA) and <stem>.key.
        `expired`: valid until an hour ago. `client`: for TLS client authentication."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        if expired:
            now -= datetime.timedelta(days=1, hours=1)
        usage = ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH
        names = [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
        names += [x509.DNSName(d) for d in dns]
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, stem)]))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()),
                           critical=False)
            .sign(self.key, hashes.SHA256()))
        cert_file, key_file = self.dir / (stem + ".pem"), self.dir / (stem + ".key")
        cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM)
                              + self.cert.public_bytes(serialization.Encoding.PEM))
        key_file.write_bytes(_pem_key(key))
        key_file.chmod(0o600)
        return Leaf(cert, cert_file, key_file)

    def client_context(self):
        """An SSLContext that trusts this CA only, with host-name checks on."""
        return ssl.create_default_context(cafile=str(self.cert_file))


class IssuedOnce:
    """A TestCA whose leaves are issued once per (stem, names) and then handed out again: for
    tests that must present the same certificate as other tests do (a pooled Chromium trusts
    the leaves pinned when it started)."""

    def __init__(self, directory):
        self.ca = TestCA(directory)
        self.cert_file = self.ca.cert_file
        self.leaves = {}

    def issue(self, stem, ips=("127.0.0.1",), dns=("localhost",)):
        key = (stem, tuple(ips), tuple(dns))
        if key not in self.leaves:
            self.leaves[key] = self.ca.issue(stem, ips=ips, dns=dns)
        return self.leaves[key]

    def client_context(self):
        return self.ca.client_context()
