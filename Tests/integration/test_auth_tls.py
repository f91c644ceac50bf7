"""The sidecar's TLS client to Apple, through the real binaries: the
emulator serves https with a test CA's certificate for 127.0.0.1 only; the sidecar must refuse
it when the CA is not trusted and when the name it dialled is not on the certificate — and
then answer the callback with a clear 502, never a session."""
import re
from urllib.parse import parse_qs

import pytest

from conftest import free_port
from tls_support import TestCA


def reasons(sc):
    return re.findall(r'"reason":"([a-z0-9_]+)"', sc.output().replace(" ", ""))


def logged_reason(sc, reason):
    """Polled: the log line and the response race (see Sidecar.logged)."""
    return sc.logged(lambda _: reason in reasons(sc))


@pytest.mark.parametrize("case", ["untrusted_issuer", "wrong_host", "trusted"])
def test_tls_to_apple_verifies_issuer_and_host(tmp_path, start_sidecar, start_emulator, browser, case):
    ca = TestCA(tmp_path)
    leaf = ca.issue("emulator", ips=("127.0.0.1",), dns=())
    port = free_port()
    apple = start_emulator(["http://127.0.0.1:%d/.auth/callback" % port],
                           ["--tls-cert", str(leaf.cert_file), "--tls-key", str(leaf.key_file)])
    assert apple.issuer.startswith("https://127.0.0.1:")
    settings = {
        "untrusted_issuer": {"base_url": apple.issuer},
        # Same server, dialled as "localhost": the certificate names only 127.0.0.1.
        "wrong_host": {"base_url": apple.issuer.replace("127.0.0.1", "localhost"),
                       "ca_file": str(ca.cert_file)},
        "trusted": {"base_url": apple.issuer, "ca_file": str(ca.cert_file)},
    }[case]
    sc = start_sidecar({"apple": settings, "access": {"public_paths": ["/pub/**"]}}, port=port)
    b = browser(sc, apple)
    _, location = b.start_login()
    state = parse_qs(location.query)["state"][0]
    r = b.callback({"state": state, "code": "c0ffee"})
    if case == "trusted":
        # TLS is fine; Apple (the emulator) itself refuses the made-up code.
        assert r.status == 502 and logged_reason(sc, "exchange_invalid_grant"), (r.status, reasons(sc))
    else:
        assert r.status == 502, (r.status, r.body)
        assert logged_reason(sc, "apple_tls_failed"), reasons(sc)
    assert b.session_cookie is None
    assert sc.request("GET", "/pub/x").status == 200, "the sidecar keeps serving"
