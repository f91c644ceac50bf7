"""The emulator's console and the demo's whole lifecycle in a real browser: sign in
through `sidecar demo`, use every console control, send a consent-revoked notification from
the console and watch the demo app's session end, then delete the account from the app.

The run's screenshots of the signed-in demo app and of the console are the README's.
"""
import re
import subprocess

import pytest

import rawhttp
from browser_support import chromium, find_browser, wait_until  # noqa: F401 (fixture)
from conftest import STARTUP_TIMEOUT, free_port, poll, sidecar_binary
from pages_support import assert_designed_page, body_text, document_response, screenshot


@pytest.fixture
def demo():
    """(sidecar origin, emulator origin) of a running `sidecar demo`."""
    find_browser()
    port = free_port()
    proc = subprocess.Popen([str(sidecar_binary()), "demo", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    lines = []
    while not any("Press Ctrl-C" in line for line in lines):
        line = proc.stdout.readline().decode()
        assert line, "demo exited: %s" % "".join(lines)
        lines.append(line)
    emulator = re.search(r"Apple emulator\s+(http://127\.0\.0\.1:\d+)/emulator", "".join(lines))
    assert emulator, lines
    # Serving (its signal handlers installed) once it answers: only then may it be stopped.
    # Start-up, given as long as every sidecar the tests start.
    assert poll(lambda: _answers(port), timeout=STARTUP_TIMEOUT), "the demo's sidecar never answered"
    yield "http://localhost:%d" % port, emulator.group(1)
    proc.terminate()
    assert proc.wait(10) == 0


def _answers(port):
    try:
        return rawhttp.request(port, "GET", "/", [("Accept", "text/html")], timeout=2).status == 302
    except (OSError, rawhttp.Closed):
        return False


def click(browser, element_id):
    browser.find_element("id", element_id).click()


def console_log(browser):
    return browser.find_element("id", "console-log").text


def sign_in(browser, origin):
    browser.get(origin + "/")
    wait_until(browser, lambda b: b.find_elements("id", "approve"), "no authorize page (at %s)" % browser.current_url)
    click(browser, "approve")  # the first test user, Maria Ruiz
    wait_until(browser, lambda b: b.current_url == origin + "/" and "Hello," in b.title + body_text(b),
               "not signed in (at %s): %s" % (browser.current_url, browser.page_source[:1000]))


def test_console_drives_the_emulator_and_ends_a_demo_session(demo, chromium):
    origin, issuer = demo
    browser = chromium()

    # 1. The demo app, signed in: who you are, sign out, delete, and where the console is.
    sign_in(browser, origin)
    text = body_text(browser)
    assert "Hello, Maria Ruiz" in text and "maria.ruiz@example.com" in text
    assert browser.find_element("id", "sign-out").text == "Sign out"
    assert browser.find_element("id", "delete-account").text == "Delete my account"
    assert browser.find_element("id", "console-link").get_attribute("href") == issuer + "/emulator"
    screenshot(browser, "demo-app-signed-in", dark=True)

    # 2. The console, in the sidecar's design.
    click(browser, "console-link")
    wait_until(browser, lambda b: b.current_url == issuer + "/emulator", "the banner's link did not open the console")
    status, headers = document_response(browser, "/emulator")
    assert_designed_page(browser, status, headers, 200, title="Apple emulator console")
    assert headers.get("x-frame-options") == "DENY"
    assert "maria.ruiz@example.com" in body_text(browser)

    # 3. Every control, each a same-origin form POST answered by a redirect back.
    browser.find_element("id", "new-email").send_keys("ada.lovelace@example.com")
    browser.find_element("id", "new-first-name").send_keys("Ada")
    browser.find_element("id", "new-last-name").send_keys("Lovelace")
    click(browser, "add-user")
    wait_until(browser, lambda b: "Added ada.lovelace@example.com." in console_log(b), "user not added")
    users = rawhttp.request(int(issuer.rsplit(":", 1)[1]), "GET", "/emulator/users").json()
    assert {"email": "ada.lovelace@example.com", "firstName": "Ada", "lastName": "Lovelace",
            "hideMyEmail": False} in users

    index = [u["email"] for u in users].index("ada.lovelace@example.com")
    click(browser, "pick-%d" % index)
    wait_until(browser, lambda b: "on, as ada.lovelace@example.com" in b.find_element("id", "auto-approve-state").text,
               "auto-approval not on")
    click(browser, "auto-approve-off")
    wait_until(browser, lambda b: b.find_element("id", "auto-approve-state").text.startswith("off"), "still on")

    browser.find_element("id", "fault").send_keys("invalid_grant")
    click(browser, "arm-fault")
    wait_until(browser, lambda b: b.find_element("id", "armed-faults").text == "invalid_grant", "fault not armed")
    click(browser, "disarm-faults")
    wait_until(browser, lambda b: b.find_element("id", "armed-faults").text == "none", "faults not disarmed")

    kids = browser.find_element("id", "key-ids").text.split(", ")
    click(browser, "rotate-keys")
    wait_until(browser, lambda b: len(b.find_element("id", "key-ids").text.split(", ")) == len(kids) + 1, "no new key")

    click(browser, "revoke-%d" % index)
    wait_until(browser, lambda b: "Consent revoked for ada.lovelace@example.com" in console_log(b), "no consent revoked")

    # 4. Maria's consent-revoked event, signed like Apple's, to the sidecar: her session ends.
    assert browser.find_element("id", "notify-url").get_attribute("value") == origin + "/.auth/apple/notifications"
    browser.find_element("id", "notify-type").send_keys("consent-revoked")
    browser.find_element("id", "notify-user").send_keys("maria.ruiz@example.com")
    screenshot(browser, "emulator-console", dark=True)
    click(browser, "send-notification")
    wait_until(browser, lambda b: "Sent consent-revoked for maria.ruiz@example.com" in console_log(b), "not sent")
    assert "HTTP 200, accepted." in console_log(browser), console_log(browser)

    browser.get(origin + "/")
    wait_until(browser, lambda b: b.find_elements("id", "approve"),
               "the demo app still served a revoked session (at %s)" % browser.current_url)
    assert browser.current_url.startswith(issuer + "/auth/authorize")

    # 5. Signed in again, the app's "Delete my account": Apple's token revoked, signed out.
    click(browser, "approve")
    wait_until(browser, lambda b: b.current_url == origin + "/", "not signed in again")
    click(browser, "delete-account")
    wait_until(browser, lambda b: b.current_url == origin + "/.auth/revoke", "not posted")
    status, headers = document_response(browser, "/.auth/revoke")
    text = assert_designed_page(browser, status, headers, 200, title="Account deleted")
    assert "signed out on every device" in text
    screenshot(browser, "account-deleted")
    revocations = rawhttp.request(int(issuer.rsplit(":", 1)[1]), "GET", "/emulator/revocations").json()
    assert any(r.get("token_known") for r in revocations), revocations

    # 6. Sign out from the app: the signed-out page, not the login again.
    sign_in(browser, origin)
    click(browser, "sign-out")
    wait_until(browser, lambda b: b.current_url == origin + "/.auth/logout", "not posted")
    status, headers = document_response(browser, "/.auth/logout")
    assert_designed_page(browser, status, headers, 200, title="You are signed out")


def test_console_refuses_forms_from_other_sites(demo):
    _, issuer = demo
    port = int(issuer.rsplit(":", 1)[1])
    form = [("Content-Type", "application/x-www-form-urlencoded")]
    for headers in ([("Origin", "http://evil.example")], [("Sec-Fetch-Site", "cross-site"), ("Origin", issuer)], []):
        r = rawhttp.request(port, "POST", "/emulator/console", form + headers, b"action=arm-fault&fault=invalid_grant")
        assert r.status == 403, (headers, r.status, r.body)
    assert rawhttp.request(port, "GET", "/emulator/faults").json() == {"armed": []}
    ok = rawhttp.request(port, "POST", "/emulator/console", form + [("Origin", issuer)],
                         b"action=arm-fault&fault=invalid_grant")
    assert ok.status == 303 and ok.header("Location") == "/emulator"
    assert rawhttp.request(port, "GET", "/emulator/faults").json() == {"armed": ["invalid_grant"]}
    # Scripts keep the plain-text list of the JSON control API.
    r = rawhttp.request(port, "GET", "/emulator")
    assert r.status == 200 and r.header("Content-Type").startswith("text/plain") and b"/emulator/faults" in r.body
