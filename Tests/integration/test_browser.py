"""A real browser signs in: headless Chromium, the sidecar on
http://localhost and the Apple emulator on https://127.0.0.1 — two different sites, so
Apple's `form_post` back to the callback is a cross-site POST that carries the state cookie
only because it is `SameSite=None; Secure`.

The emulator's certificate comes from a test CA (browser_ca): the sidecar trusts it through
`apple.ca_file`, Chromium through the leaf's SPKI pin (no blanket certificate-error bypass).
"""
import json
from urllib.parse import parse_qs, urlsplit

import pytest

from browser_support import chromium, find_browser, wait_until  # noqa: F401 (fixture)
from conftest import free_port, poll

USER_EMAIL = "grace.hopper@example.com"


@pytest.fixture
def cross_site_login(browser_ca, start_sidecar, start_emulator):
    """(sidecar, emulator, leaf): the sidecar at http://localhost:<port> (public_url), the
    emulator at https://127.0.0.1:<port> with a certificate of the test CA."""
    find_browser()  # skip (or fail in CI) before starting anything
    ca = browser_ca
    leaf = ca.issue("emulator", ips=("127.0.0.1",), dns=())
    port = free_port()
    public_url = "http://localhost:%d" % port
    emulator = start_emulator([public_url + "/.auth/callback"],
                              ["--tls-cert", str(leaf.cert_file), "--tls-key", str(leaf.key_file)])
    assert emulator.issuer.startswith("https://127.0.0.1:"), emulator.issuer
    sidecar = start_sidecar({
        "public_url": public_url,
        "apple": {"base_url": emulator.issuer, "ca_file": str(ca.cert_file)},
        "access": {"public_paths": ["/pub/**"]},
    }, port=port)
    return sidecar, emulator, leaf


def page_json(browser):
    """The JSON document the browser shows (Chromium wraps it in a <pre>)."""
    from selenium.webdriver.common.by import By
    return json.loads(browser.find_element(By.TAG_NAME, "body").text)


def localhost_cookies(browser):
    """Every cookie the browser holds for localhost, whatever page it is on (WebDriver's own
    get_cookies() sees only the current page's site)."""
    cookies = browser.execute_cdp_cmd("Network.getAllCookies", {})["cookies"]
    return {c["name"]: c for c in cookies if c["domain"] == "localhost"}


def click_link(browser, href):
    """Adds a link to the current page and clicks it: a real user navigation."""
    from selenium.webdriver.common.by import By
    browser.execute_script("""
        const a = document.createElement('a');
        a.href = arguments[0]; a.id = 'e2e-link'; a.textContent = 'go';
        document.body.appendChild(a);""", href)
    browser.find_element(By.ID, "e2e-link").click()


def echoed_headers(echo):
    headers = {}
    for name, value in echo["headers"]:
        headers.setdefault(name.lower(), []).append(value)
    return headers


def test_chromium_signs_in_across_sites_and_out_again(cross_site_login, chromium):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import Select

    sidecar, emulator, leaf = cross_site_login
    origin = "http://localhost:%d" % sidecar.port
    browser = chromium([leaf.spki_sha256_b64])

    # 1. A protected page sends the browser to the login, and the login to "Apple".
    browser.get(origin + "/some/page?x=1")
    wait_until(browser, EC.presence_of_element_located((By.ID, "approve")),
               "the emulator's authorize page never appeared (at %s)" % browser.current_url)
    authorize = urlsplit(browser.current_url)
    assert "%s://%s" % (authorize.scheme, authorize.netloc) == emulator.issuer
    assert authorize.path == "/auth/authorize"
    query = parse_qs(authorize.query)
    assert query["redirect_uri"] == [origin + "/.auth/callback"]
    assert query["response_mode"] == ["form_post"]
    state_cookies = localhost_cookies(browser)
    assert state_cookies, "the login set no state cookie on localhost"
    for c in state_cookies.values():
        assert c["secure"] and c["httpOnly"] and c.get("sameSite") == "None", c

    # 2. Type a user on Apple's page and approve: Apple form_posts across sites.
    Select(browser.find_element(By.ID, "known")).select_by_value("")
    browser.find_element(By.ID, "email").send_keys(USER_EMAIL)
    browser.find_element(By.ID, "first_name").send_keys("Grace")
    browser.find_element(By.ID, "last_name").send_keys("Hopper")
    browser.find_element(By.ID, "approve").click()

    # 3. The callback's 303 lands on the original page, which the upstream serves.
    wait_until(browser, EC.url_to_be(origin + "/some/page?x=1"),
               "the browser did not come back to the original page (at %s): %s"
               % (browser.current_url, browser.page_source[:2000]))
    echo = page_json(browser)
    assert echo["target"] == "/some/page?x=1"
    headers = echoed_headers(echo)
    assert headers["x-auth-email"] == [USER_EMAIL]
    assert headers["x-auth-name"] == ["Grace%20Hopper"]
    assert headers["x-auth-email-verified"] == ["true"]
    user_id = headers["x-auth-user-id"]
    assert len(user_id) == 1 and user_id[0]
    cookies = localhost_cookies(browser)
    session = cookies.get("__Host-sidecar")
    assert session, "no session cookie; cookies: %s" % sorted(cookies)
    assert session["secure"] and session["httpOnly"] and session["sameSite"] == "Lax"
    assert session["path"] == "/"
    assert not set(state_cookies) & set(cookies), "state cookie not cleared"

    # 4. /.auth/me shows the same user.
    browser.get(origin + "/.auth/me")
    me = page_json(browser)
    assert me["id"] == user_id[0]
    assert me["email"] == USER_EMAIL
    assert me["name"] == "Grace Hopper"

    # 5. A cross-site link to the logout (from "Apple's" site) does not sign anyone out:
    #    Chromium itself says Sec-Fetch-Site: cross-site.
    browser.get(emulator.issuer + "/emulator")
    click_link(browser, origin + "/.auth/logout")
    wait_until(browser, EC.url_to_be(origin + "/.auth/logout"), "the link was not followed")
    assert "__Host-sidecar" in localhost_cookies(browser), "a cross-site GET signed the user out"
    browser.get(origin + "/.auth/me")
    assert page_json(browser)["email"] == USER_EMAIL

    # 6. Sign out with a POST form from our own page; the session is gone.
    browser.get(origin + "/pub/bye-page")
    browser.execute_script("""
        const form = document.createElement('form');
        form.method = 'post';
        form.action = '/.auth/logout?rd=/pub/signed-out';
        document.body.appendChild(form);
        form.submit();""")
    wait_until(browser, EC.url_to_be(origin + "/pub/signed-out"),
               "logout did not redirect to rd (at %s)" % browser.current_url)
    assert "x-auth-user-id" not in echoed_headers(page_json(browser))
    assert "__Host-sidecar" not in localhost_cookies(browser)
    browser.get(origin + "/.auth/me")
    assert page_json(browser) == {"error": "unauthenticated", "login": "/.auth/login"}

    # 7. The protected page asks for a sign-in again.
    browser.get(origin + "/some/page?x=2")
    wait_until(browser, EC.presence_of_element_located((By.ID, "approve")),
               "a signed-out browser was not sent to sign in (at %s)" % browser.current_url)


def test_chromium_cancel_on_apple_page_shows_an_error_and_no_session(cross_site_login, chromium):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC

    sidecar, emulator, leaf = cross_site_login
    origin = "http://localhost:%d" % sidecar.port
    browser = chromium([leaf.spki_sha256_b64])
    browser.get(origin + "/private")
    wait_until(browser, EC.presence_of_element_located((By.ID, "cancel")),
               "the emulator's authorize page never appeared (at %s)" % browser.current_url)
    browser.find_element(By.ID, "cancel").click()
    wait_until(browser, EC.url_to_be(origin + "/.auth/callback"),
               "the cancel was not posted back to the callback (at %s)" % browser.current_url)
    assert localhost_cookies(browser) == {}, "a session or the state cookie is left behind"
    browser.get(origin + "/.auth/me")
    assert page_json(browser)["error"] == "unauthenticated"


def test_chromium_two_tabs_signing_in_at_once_both_succeed(cross_site_login, chromium):
    """Logins in flight in different tabs must not break each other."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC

    sidecar, emulator, leaf = cross_site_login
    origin = "http://localhost:%d" % sidecar.port
    browser = chromium([leaf.spki_sha256_b64])
    tabs = {}
    for page in ("/first?tab=1", "/second?tab=2"):
        if tabs:
            browser.switch_to.new_window("tab")
        browser.get(origin + page)
        wait_until(browser, EC.presence_of_element_located((By.ID, "approve")),
                   "no authorize page for %s (at %s)" % (page, browser.current_url))
        tabs[page] = browser.current_window_handle
    # Approve the later login first, then the earlier one.
    for page in ("/second?tab=2", "/first?tab=1"):
        browser.switch_to.window(tabs[page])
        browser.find_element(By.ID, "approve").click()  # the first known user
        wait_until(browser, EC.url_to_be(origin + page),
                   "the login of %s did not complete (at %s): %s"
                   % (page, browser.current_url, browser.page_source[:1000]))
        assert echoed_headers(page_json(browser))["x-auth-email"] == ["maria.ruiz@example.com"]
    assert set(localhost_cookies(browser)) == {"__Host-sidecar"}, "a state cookie is left behind"


def test_chromium_signs_in_over_https_and_loads_the_page_over_h2(browser_ca, start_sidecar, start_emulator, chromium):
    """The sidecar serving HTTPS itself: Chromium negotiates h2 by ALPN, signs in through the
    cross-site form_post, and the page after the login comes over HTTP/2."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC

    find_browser()
    ca = browser_ca
    site = ca.issue("site", ips=("127.0.0.1",), dns=("localhost",))
    apple_leaf = ca.issue("emulator", ips=("127.0.0.1",), dns=())
    port = free_port()
    origin = "https://localhost:%d" % port
    emulator = start_emulator([origin + "/.auth/callback"],
                              ["--tls-cert", str(apple_leaf.cert_file), "--tls-key", str(apple_leaf.key_file)])
    sidecar = start_sidecar({
        "public_url": origin,
        "tls": {"cert_file": str(site.cert_file), "key_file": str(site.key_file)},
        "apple": {"base_url": emulator.issuer, "ca_file": str(ca.cert_file)},
        "access": {"public_paths": ["/pub/**"]},
    }, port=port)
    browser = chromium([site.spki_sha256_b64, apple_leaf.spki_sha256_b64])

    browser.get(origin + "/after/login?x=1")
    wait_until(browser, EC.presence_of_element_located((By.ID, "approve")),
               "the emulator's authorize page never appeared (at %s)" % browser.current_url)
    browser.find_element(By.ID, "email").send_keys(USER_EMAIL)
    browser.find_element(By.ID, "approve").click()
    wait_until(browser, EC.url_to_be(origin + "/after/login?x=1"),
               "the browser did not come back to the page (at %s): %s"
               % (browser.current_url, browser.page_source[:2000]))
    assert browser.execute_script("return performance.getEntries()[0].nextHopProtocol") == "h2"
    echo = page_json(browser)
    assert echoed_headers(echo)["x-auth-email"] == [USER_EMAIL]

    def page_line():
        lines = [json.loads(x) for x in sidecar.output().splitlines() if x.startswith("{")]
        return next((e for e in lines if e.get("msg") == "request" and e.get("path") == "/after/login"
                     and e["status"] == 200), None)
    line = poll(page_line)
    assert line and line.get("protocol") == "HTTP/2.0", line
