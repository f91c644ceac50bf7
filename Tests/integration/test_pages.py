"""The sidecar's own pages in a real browser: headless Chromium gets
each page the way a person would, the test checks what it says, its status and security
headers, that its style applied under the strict CSP, and saves a screenshot of it.

Like test_browser.py, the emulator ("Apple") runs on https://127.0.0.1 with a test CA and the
sidecar on http://localhost: two sites, as in production.
"""
import re
from urllib.parse import urlsplit

import pytest

from browser_support import chromium, find_browser, wait_until  # noqa: F401 (fixture)
from conftest import free_port
from pages_support import (assert_dark_variant, assert_designed_page, body_text, document_response,
                           screenshot)


@pytest.fixture
def site(browser_ca, start_sidecar, start_emulator):
    """site(overrides=None) -> (sidecar, emulator, spki pin, origin)."""
    find_browser()  # skip (or fail in CI) before starting anything
    ca = browser_ca
    leaf = ca.issue("emulator", ips=("127.0.0.1",), dns=())

    def start(overrides=None):
        port = free_port()
        origin = "http://localhost:%d" % port
        emulator = start_emulator([origin + "/.auth/callback"],
                                  ["--tls-cert", str(leaf.cert_file), "--tls-key", str(leaf.key_file)])
        config = {"public_url": origin, "apple": {"base_url": emulator.issuer, "ca_file": str(ca.cert_file)},
                  "access": {"public_paths": ["/pub/**"]}}
        for key, value in (overrides or {}).items():
            config[key] = {**config.get(key, {}), **value} if isinstance(value, dict) else value
        sidecar = start_sidecar(config, port=port)
        return sidecar, emulator, leaf.spki_sha256_b64, origin
    return start


def post_form(browser, action, fields=()):
    """Submits a POST form from the current page: a real browser navigation."""
    browser.execute_script("""
        const form = document.createElement('form');
        form.method = 'post'; form.action = arguments[0];
        for (const [name, value] of arguments[1]) {
            const input = document.createElement('input');
            input.type = 'hidden'; input.name = name; input.value = value; form.appendChild(input);
        }
        document.body.appendChild(form); form.submit();""", action, [list(f) for f in fields])


def to_apple(browser, origin, path="/private"):
    """A protected page sends the browser to the emulator's authorize page."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    browser.get(origin + path)
    wait_until(browser, EC.presence_of_element_located((By.ID, "approve")),
               "no authorize page (at %s)" % browser.current_url)


def click_and_land(browser, element_id, url):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    browser.find_element(By.ID, element_id).click()
    wait_until(browser, EC.url_to_be(url), "did not land on %s (at %s): %s"
               % (url, browser.current_url, browser.page_source[:1500]))


def test_sign_in_required_page_for_a_browser_post(site, chromium):
    sidecar, _, pin, origin = site()
    browser = chromium([pin])
    browser.get(origin + "/pub/start")
    document_response(browser, "/pub/start")
    post_form(browser, "/private/save?draft=1", [("text", "hello")])
    wait_until(browser, lambda b: b.current_url == origin + "/private/save?draft=1", "the POST was not sent")
    status, headers = document_response(browser, "/private/save")
    text = assert_designed_page(browser, status, headers, 401, title="Sign in required", reason="unauthenticated")
    assert "Sign in with your Apple ID, then try again." in text
    link = browser.execute_script("return document.getElementById('sign-in-with-apple').getAttribute('href')")
    assert link == "/.auth/login?rd=/private/save%3Fdraft%3D1"
    assert_dark_variant(browser)
    screenshot(browser, "401-sign-in-required", dark=True)


def test_cancelled_sign_in_says_so_and_nothing_else(site, chromium):
    sidecar, _, pin, origin = site()
    browser = chromium([pin])
    to_apple(browser, origin)
    click_and_land(browser, "cancel", origin + "/.auth/callback")
    status, headers = document_response(browser, "/.auth/callback")
    text = assert_designed_page(browser, status, headers, 401, title="Sign-in cancelled", reason="apple_cancelled")
    assert "You cancelled signing in with Apple." in text
    for contradiction in ("expired", "used already", "could not", "Try again in a moment"):
        assert contradiction not in text, text
    screenshot(browser, "sign-in-cancelled")


@pytest.mark.parametrize("fault, status, title, reason", [
    ("http_500", 502, "Sign in with Apple is not available right now", "apple_server_error"),
    ("wrong_aud", 401, "Sign-in could not be verified", "token_"),
    ("invalid_grant", 502, "Sign in with Apple is not available right now", "exchange_invalid_grant"),
])
def test_sign_in_failure_pages(site, chromium, fault, status, title, reason):
    sidecar, emulator, pin, origin = site()
    browser = chromium([pin])
    # The emulator speaks TLS here: arm the fault the way a person would, in its console.
    browser.get(emulator.issuer + "/emulator")
    browser.find_element("id", "fault").send_keys(fault)
    browser.find_element("id", "arm-fault").click()
    wait_until(browser, lambda b: b.find_element("id", "armed-faults").text == fault, "fault not armed")
    to_apple(browser, origin)
    click_and_land(browser, "approve", origin + "/.auth/callback")
    got, headers = document_response(browser, "/.auth/callback")
    text = assert_designed_page(browser, got, headers, status, title=title)
    assert re.search(r"Reason %s\S*" % re.escape(reason), text), text
    assert "Request ID %s" % headers["x-request-id"] in text
    assert browser.execute_script("return document.getElementById('sign-in-again').getAttribute('href')") \
        == "/.auth/login"
    assert "__Host-sidecar" not in {c["name"] for c in browser.get_cookies()}
    screenshot(browser, "sign-in-failed-%s" % fault)


def test_expired_sign_in_page(site, chromium):
    """A callback the browser has no state cookie for (an old tab, a second submit)."""
    sidecar, _, pin, origin = site()
    browser = chromium([pin])
    browser.get(origin + "/pub/old-tab")
    post_form(browser, "/.auth/callback", [("state", "stale"), ("code", "c")])
    wait_until(browser, lambda b: b.current_url == origin + "/.auth/callback", "not posted")
    status, headers = document_response(browser, "/.auth/callback")
    text = assert_designed_page(browser, status, headers, 400, title="This sign-in could not be matched to your browser",
                                reason="state_missing")
    assert "Allow cookies for this site, then start a new sign-in." in text
    screenshot(browser, "sign-in-expired")


def test_policy_denied_page(site, chromium):
    sidecar, _, pin, origin = site({"access": {"public_paths": ["/pub/**"], "allowed_emails": ["boss@example.com"]}})
    browser = chromium([pin])
    to_apple(browser, origin)
    click_and_land(browser, "approve", origin + "/.auth/callback")
    status, headers = document_response(browser, "/.auth/callback")
    text = assert_designed_page(browser, status, headers, 403, title="You are not allowed to sign in here",
                                reason="policy_denied_email")
    assert "not on this site's list of allowed accounts" in text
    assert "Use another Apple ID" in text
    screenshot(browser, "policy-denied")


def test_method_not_allowed_and_not_found_pages(site, chromium):
    sidecar, _, pin, origin = site()
    browser = chromium([pin])
    browser.get(origin + "/.auth/callback")
    status, headers = document_response(browser, "/.auth/callback")
    assert headers.get("allow") == "POST"
    assert_designed_page(browser, status, headers, 405, title="Not allowed here", reason="method_not_allowed")
    screenshot(browser, "method-not-allowed")
    browser.get(origin + "/.auth/nowhere")
    status, headers = document_response(browser, "/.auth/nowhere")
    assert_designed_page(browser, status, headers, 404, title="Page not found", reason="not_found")
    # API clients keep one plain line.
    r = sidecar.request("GET", "/.auth/callback", [("Accept", "application/json")])
    assert r.status == 405 and r.header("Content-Type").startswith("text/plain")


def test_upstream_down_page(start_sidecar, chromium):
    find_browser()
    sidecar = start_sidecar({"upstream": "http://127.0.0.1:%d" % free_port()})
    browser = chromium()
    browser.get("http://127.0.0.1:%d/report" % sidecar.port)
    status, headers = document_response(browser, "/report")
    text = assert_designed_page(browser, status, headers, 502, title="The site is not answering",
                                reason="upstream_unavailable")
    assert "Try again in a moment." in text
    screenshot(browser, "upstream-unavailable")
    r = sidecar.request("GET", "/report", [("Accept", "application/json")])
    assert r.status == 502 and r.body == b"bad gateway: the upstream failed\n"


def test_signed_out_page_and_a_cross_site_logout_link(site, chromium):
    sidecar, emulator, pin, origin = site()
    browser = chromium([pin])
    to_apple(browser, origin)
    click_and_land(browser, "approve", origin + "/private")
    assert "__Host-sidecar" in {c["name"] for c in browser.get_cookies()}

    # A link to the logout on another site ("Apple's") does not sign out: its page asks.
    browser.get(emulator.issuer + "/emulator")
    browser.execute_script("""
        const a = document.createElement('a'); a.href = arguments[0]; a.id = 'e2e-link'; a.textContent = 'go';
        document.body.appendChild(a);""", origin + "/.auth/logout")
    browser.find_element("id", "e2e-link").click()
    wait_until(browser, lambda b: b.current_url == origin + "/.auth/logout", "the link was not followed")
    status, headers = document_response(browser, "/.auth/logout")
    text = assert_designed_page(browser, status, headers, 403, title="Sign out?", reason="logout_cross_site")
    assert "came from another site" in text
    assert "__Host-sidecar" in {c["name"] for c in browser.get_cookies()}
    screenshot(browser, "sign-out-confirm")

    # Its button is a same-site POST without rd: the signed-out page, not the login again.
    browser.find_element("id", "sign-out").click()
    wait_until(browser, lambda b: "signed out" in b.title, "no signed-out page (at %s)" % browser.current_url)
    status, headers = document_response(browser, "/.auth/logout")
    text = assert_designed_page(browser, status, headers, 200, title="You are signed out")
    assert "Close this window, or sign in again to continue." in text
    assert "__Host-sidecar" not in {c["name"] for c in browser.get_cookies()}
    assert browser.execute_script("return document.getElementById('sign-in-again').getAttribute('href')") \
        == "/.auth/login?rd=%2F"
    screenshot(browser, "signed-out", dark=True)


def test_sign_in_page_with_apples_button(site, chromium):
    sidecar, _, pin, origin = site({"pages": {"sign_in": True}})
    browser = chromium([pin])
    browser.get(origin + "/reports?year=2026")
    status, headers = document_response(browser, "/reports")
    text = assert_designed_page(browser, status, headers, 401, title="Sign in")
    assert "Sign in with your Apple ID to continue to this site." in text
    button = browser.execute_script("""
        const a = document.getElementById('sign-in-with-apple'), r = a.getBoundingClientRect(), s = getComputedStyle(a);
        return {href: a.getAttribute('href'), text: a.textContent.trim(), width: r.width, height: r.height,
                background: s.backgroundColor, color: s.color, radius: parseFloat(s.borderTopLeftRadius),
                logo: a.querySelector('svg path') !== null, buttons: document.querySelectorAll('a.apple').length};""")
    assert button["href"] == "/.auth/login?rd=/reports%3Fyear%3D2026"
    assert button["text"] == "Sign in with Apple" and button["logo"] and button["buttons"] == 1
    assert button["width"] >= 140 and button["height"] >= 30, button
    assert button["background"] == "rgb(0, 0, 0)" and button["color"] == "rgb(255, 255, 255)", button
    assert button["radius"] > 0
    screenshot(browser, "sign-in-page", dark=True)
    from pages_support import set_dark
    set_dark(browser, True)
    assert browser.execute_script(
        "return getComputedStyle(document.getElementById('sign-in-with-apple')).backgroundColor") == "rgb(255, 255, 255)"
    set_dark(browser, False)

    browser.find_element("id", "sign-in-with-apple").click()
    wait_until(browser, lambda b: urlsplit(b.current_url).path == "/auth/authorize", "the button did not lead to Apple")
    click_and_land(browser, "approve", origin + "/reports?year=2026")
    # Without pages.sign_in's page: API clients and non-GET browser requests are as before.
    r = sidecar.request("GET", "/reports", [("Accept", "application/json")])
    assert r.status == 401 and r.json() == {"error": "unauthenticated", "login": "/.auth/login"}


# -- operator templates (pages.templates) ----------------------------------------------------
CORP_UNAUTHORIZED = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{title}} - Example Corp %s</title><style>body{background:rgb(1, 2, 3);color:#fff}</style></head>
<body><h1>Example Corp: {{ title }}</h1><p id="msg">{{message}}</p>
<p><a id="login" href="{{login_url}}">Sign in</a></p>
<p id="support">{{status}} {{reason}} {{request_id}} [{{user_name}}]</p></body></html>
"""


def test_operator_templates_replace_pages_and_reload_on_sighup(site, chromium, tmp_path):
    import signal
    import time
    pages = tmp_path / "my-pages"
    pages.mkdir()
    (pages / "unauthorized.html").write_text(CORP_UNAUTHORIZED % "v1")
    (pages / "notes.txt").write_text("not a template: ignored")
    sidecar, _, pin, origin = site({"pages": {"templates": str(pages)}})
    browser = chromium([pin])
    browser.get(origin + "/pub/start")
    post_form(browser, "/private?q=a%3Cb")
    wait_until(browser, lambda b: urlsplit(b.current_url).path == "/private", "not posted")
    status, headers = document_response(browser, "/private")
    assert status == 401 and headers["content-type"] == "text/html; charset=utf-8"
    assert headers["content-security-policy"].startswith("default-src 'none'; style-src 'sha256-")
    assert headers["x-content-type-options"] == "nosniff" and headers["cache-control"] == "no-store"
    assert browser.title == "Sign in required - Example Corp v1"
    assert browser.execute_script("return getComputedStyle(document.body).backgroundColor") == "rgb(1, 2, 3)", \
        "the operator's own style is allowed by the page's CSP"
    assert browser.find_element("id", "login").get_attribute("href") == origin + "/.auth/login?rd=/private%3Fq%3Da%253Cb"
    assert browser.find_element("id", "support").text == "401 unauthenticated %s []" % headers["x-request-id"]
    screenshot(browser, "operator-template-unauthorized")
    # Pages without a file stay built in.
    r = sidecar.request("GET", "/.auth/callback", [("Accept", "text/html")])
    assert r.status == 405 and b"Not allowed here" in r.body

    def page_title():
        r = sidecar.request("POST", "/private", [("Accept", "text/html")])
        return re.search(rb"<title>(.*)</title>", r.body).group(1).decode()

    (pages / "unauthorized.html").write_text(CORP_UNAUTHORIZED % "v2")
    sidecar.proc.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 5  # a reload is prompt; 5 s covers a loaded 2-core machine
    while page_title() != "Sign in required - Example Corp v2" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert page_title() == "Sign in required - Example Corp v2"

    (pages / "unauthorized.html").write_text("<p>{{titel}}</p>")
    sidecar.proc.send_signal(signal.SIGHUP)
    # A reload is prompt; 5 s covers a loaded 2-core machine.
    assert sidecar.logged(lambda out: "reload failed" in out
                          and "unauthorized.html:1:4: unknown placeholder {{titel}}" in out), sidecar.output()
    assert page_title() == "Sign in required - Example Corp v2", "a bad reload keeps the previous pages"


@pytest.mark.parametrize("command", ["check", "run"])
def test_unknown_placeholder_is_refused_with_file_line_and_column(start_sidecar, tmp_path, command):
    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "signed_out.html").write_text("<!doctype html>\n<title>{{title}}</title>\n  <p>héllo {{mesage}}</p>\n")
    (pages / "welcome.html").write_text("<p>hi</p>")
    sc = start_sidecar({"pages": {"templates": str(pages)}}, ready=False, args=[command, "--config", "{config}"])
    assert sc.proc.wait(10) == 1
    sc.stopped = True  # the exit is the point
    out = sc.output()
    assert "%s/signed_out.html:3:12: unknown placeholder {{mesage}}" % pages in out, out
    assert "%s/welcome.html: not a page template name" % pages in out, out
    assert "pages.templates in %s" % sc.config_path in out, out


def test_check_accepts_a_good_template_directory(start_sidecar, tmp_path):
    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "error.html").write_text("<h1>{{status}} {{title}}</h1><p>{{message}} {{reason}} {{request_id}}</p>")
    sc = start_sidecar({"pages": {"templates": str(pages), "sign_in": True}}, ready=False,
                       args=["check", "--config", "{config}"])
    assert sc.proc.wait(10) == 0, sc.output()
    sc.stopped = True
    assert re.search(r"\n  pages +sign-in page, templates from %s\n" % re.escape(str(pages)), sc.output()), sc.output()
