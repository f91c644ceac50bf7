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


@pytest.fixture
def chromium(tmp_path):
    """chromium(spki_pins=()) -> a started WebDriver; every one is quit after the test."""
    started = []

    def start(spki_pins=()):
        profile = tmp_path / ("chromium-profile%d" % len(started))
        profile.mkdir()
        browser = start_chromium(profile, spki_pins, tmp_path / ("chromedriver%d.log" % len(started)))
        started.append(browser)
        return browser

    yield start
    for browser in started:
        browser.quit()
