"""A real browser over a certificate the sidecar obtained itself: headless Chromium trusting
Pebble's root (added to the profile's NSS database, as an operator's private CA would be) signs
in through the whole flow and loads the page over the issued certificate — no pin on the leaf."""
import os
import subprocess

from browser_support import find_browser, start_chromium, wait_until
from conftest import free_port
from pebble_support import DOMAIN, Pebble, acme_config, need_pebble, wait_issued
from test_browser import echoed_headers, page_json
from tls_support import TestCA

USER_EMAIL = "ada.lovelace@example.com"


def trusting_home(tmp_path, root_pem):
    """A HOME whose NSS database trusts `root_pem` as a CA for servers (what Chromium on Linux
    reads for local trust anchors)."""
    home = tmp_path / "home"
    nssdb = home / ".pki" / "nssdb"
    nssdb.mkdir(parents=True)
    root = tmp_path / "pebble-root.pem"
    root.write_bytes(root_pem)
    subprocess.run(["certutil", "-d", "sql:%s" % nssdb, "-N", "--empty-password"], check=True)
    subprocess.run(["certutil", "-d", "sql:%s" % nssdb, "-A", "-t", "C,,", "-n", "pebble", "-i", str(root)], check=True)
    return home


def test_chromium_signs_in_over_the_certificate_pebble_issued(tmp_path, start_sidecar, start_emulator):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC

    need_pebble()
    find_browser()
    port, http_port = free_port(), free_port()
    pebble = Pebble(tmp_path / "pebble", http_port, port).start()
    browser = None
    try:
        ca = TestCA(tmp_path)
        apple_leaf = ca.issue("emulator", ips=("127.0.0.1",), dns=())
        origin = "https://%s:%d" % (DOMAIN, port)
        emulator = start_emulator([origin + "/.auth/callback"],
                                  ["--tls-cert", str(apple_leaf.cert_file), "--tls-key", str(apple_leaf.key_file)])
        config = acme_config(pebble, port, tmp_path, "http-01", http_port)
        config.update({"apple": {"base_url": emulator.issuer, "ca_file": str(ca.cert_file)},
                       "access": {"public_paths": ["/pub/**"]}})
        sidecar = start_sidecar(config, port=port)
        wait_issued(sidecar)
        home = trusting_home(tmp_path, pebble.root_pem())
        profile = tmp_path / "profile"
        profile.mkdir()
        browser = start_chromium(profile, [apple_leaf.spki_sha256_b64], tmp_path / "chromedriver.log",
                                 extra_args=["--host-resolver-rules=MAP %s 127.0.0.1" % DOMAIN],
                                 env={**os.environ, "HOME": str(home)})
        browser.get(origin + "/after/login?x=1")
        wait_until(browser, EC.presence_of_element_located((By.ID, "approve")),
                   "the emulator's authorize page never appeared (at %s): %s"
                   % (browser.current_url, browser.page_source[:500]))
        browser.find_element(By.ID, "email").send_keys(USER_EMAIL)
        browser.find_element(By.ID, "approve").click()
        wait_until(browser, EC.url_to_be(origin + "/after/login?x=1"),
                   "the browser did not come back to the page (at %s): %s"
                   % (browser.current_url, browser.page_source[:2000]))
        assert echoed_headers(page_json(browser))["x-auth-email"] == [USER_EMAIL]
        # The page came over TLS with the issued certificate, trusted through Pebble's root.
        assert browser.execute_script("return window.isSecureContext") is True
    finally:
        if browser:
            browser.quit()
        pebble.stop()
