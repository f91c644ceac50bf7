"""Headless Chromium driven by Selenium for the real-browser sign-in test.

Chromium and chromedriver come from Debian (`chromium`, `chromium-driver`), Selenium from
PyPI; `scripts/lib/deps.sh` installs them. Without them the browser tests skip with the
reason — except in CI (env `CI` set), where a missing browser is a failure, not a skip.
"""
import os
import shutil

import pytest

PAGE_LOAD_TIMEOUT = 15  # seconds for any navigation
WAIT_TIMEOUT = 10  # seconds for any explicit wait


def _unavailable(reason):
    if os.environ.get("CI"):
        pytest.fail("CI must run the browser tests, but: %s (scripts/lib/deps.sh installs "
                    "chromium, chromium-driver and selenium)" % reason)
    pytest.skip(reason)


def find_browser():
    """(chromium binary, chromedriver binary), skipping (failing in CI) when absent."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        _unavailable("the selenium Python package is not installed")
    chromium = os.environ.get("CHROMIUM_BIN") or shutil.which("chromium") or shutil.which(
        "chromium-browser")
    driver = os.environ.get("CHROMEDRIVER_BIN") or shutil.which("chromedriver")
    if not chromium:
        _unavailable("no chromium binary on PATH (Debian package `chromium`)")
    if not driver:
        _unavailable("no chromedriver on PATH (Debian package `chromium-driver`)")
    return chromium, driver


def start_chromium(profile_dir, spki_pins=(), log_path=None, extra_args=(), env=None):
    """A headless Chromium with its own profile that trusts exactly the given leaf SPKI pins
    (base64 SHA-256) beyond the system store. Returns a selenium WebDriver whose performance
    log holds the network events (for the status and headers of the pages it loads)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium, driver = find_browser()
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--user-data-dir=%s" % profile_dir, "--disable-gpu",
                "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check",
                "--disable-background-networking", "--disable-extensions",
                "--disable-component-update", "--disable-sync", "--window-size=1024,768"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    if spki_pins:
        options.add_argument("--ignore-certificate-errors-spki-list=" + ",".join(spki_pins))
    for arg in extra_args:
        options.add_argument(arg)
    if os.geteuid() == 0:
        options.add_argument("--no-sandbox")  # Chromium's sandbox refuses to run as root
    service = Service(executable_path=driver, log_output=str(log_path) if log_path else None, env=env)
    browser = webdriver.Chrome(options=options, service=service)
    browser.set_page_load_timeout(PAGE_LOAD_TIMEOUT)
    browser.set_script_timeout(WAIT_TIMEOUT)
    return browser


def wait_until(browser, condition, message):
    """Polls condition; an element read while the page is being replaced counts as not yet.
    Chromium reports that race in several ways (no such element, a stale reference, or an
    "unknown error: Node with given id does not belong to the document"), so every WebDriver
    error is a "not yet"; one that persists ends in the timeout with `message`."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.support.ui import WebDriverWait
    return WebDriverWait(browser, WAIT_TIMEOUT, ignored_exceptions=(WebDriverException,)).until(condition, message)


class BrowserPool:
    """This pytest process's started Chromiums that are idle between tests, one per set of SPKI
    pins (a launch flag, so a browser only serves tests that pin the same certificates).
    Starting Chromium costs more CPU than most of the tests that drive it."""

    def __init__(self, directory):
        self.dir, self.idle, self.started = directory, {}, 0

    def take(self, spki_pins):
        key = tuple(sorted(spki_pins))
        browser = self.idle.pop(key, None)
        if browser is None:
            profile = self.dir / ("chromium-profile%d" % self.started)
            profile.mkdir()
            browser = start_chromium(profile, key, self.dir / ("chromedriver%d.log" % self.started))
            self.started += 1
        return browser

    def give_back(self, browser, spki_pins):
        """Idle again, as a fresh start would have it: one new tab (so no page, history or
        per-tab emulation is left: user agent, language, media, metrics), no cookies, an empty
        cache, the start's window size, and the performance log drained. A browser that does
        not come back clean is quit instead."""
        key = tuple(sorted(spki_pins))
        try:
            old_tabs = browser.window_handles
            browser.switch_to.window(old_tabs[0])
            browser.switch_to.new_window("tab")
            fresh = browser.current_window_handle
            for tab in old_tabs:
                browser.switch_to.window(tab)
                browser.close()
            browser.switch_to.window(fresh)
            browser.execute_cdp_cmd("Network.clearBrowserCookies", {})
            browser.execute_cdp_cmd("Network.clearBrowserCache", {})
            browser.set_window_size(1024, 768)
            browser.get_log("performance")
            assert browser.window_handles == [fresh] and browser.current_url == "about:blank"
            assert browser.execute_cdp_cmd("Network.getAllCookies", {})["cookies"] == []
        except Exception:
            browser.quit()
            return
        if key in self.idle:
            self.idle[key].quit()
        self.idle[key] = browser

    def close(self):
        for browser in self.idle.values():
            browser.quit()
        self.idle.clear()


@pytest.fixture(scope="session")
def browser_ca(tmp_path_factory):
    """A test CA for the sites a browser test serves over TLS, per pytest process: each leaf is
    issued once, so every test pinning it can share a pooled Chromium."""
    from tls_support import IssuedOnce
    return IssuedOnce(tmp_path_factory.mktemp("browser-ca"))


@pytest.fixture(scope="session")
def chromium_pool(tmp_path_factory):
    """Per pytest process (xdist worker): started once, quit at the end of the run."""
    pool = BrowserPool(tmp_path_factory.mktemp("chromium"))
    yield pool
    pool.close()


@pytest.fixture
def chromium(request, chromium_pool):
    """chromium(spki_pins=()) -> a WebDriver in a fresh browser state; an idle one from this
    process's pool when one with the same pins is there, else a new one. After a test that
    passed it is reset and goes back to the pool; after one that failed it is quit, so no
    state a failure left can reach another test."""
    taken = []

    def start(spki_pins=()):
        browser = chromium_pool.take(spki_pins)
        taken.append((browser, spki_pins))
        return browser

    yield start
    passed = not getattr(request.node, "_call_failed", True)
    for browser, spki_pins in taken:
        if passed:
            chromium_pool.give_back(browser, spki_pins)
        else:
            browser.quit()
