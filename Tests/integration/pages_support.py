"""Helpers for the page tests: what a real browser got for a page (status and
headers from Chromium's network log), the design checks every page must pass, and the
screenshots the run saves.

Screenshots go to $SCREENSHOT_DIR, by default `.build/screenshots` in the repository (kept out
of git; the README's two are copied to Docs/screenshots by hand from a run).
"""
import json
import os
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCREENSHOT_DIR = Path(os.environ.get("SCREENSHOT_DIR") or REPO / ".build" / "screenshots")

LIGHT_BACKGROUND = "rgb(245, 245, 247)"  # --bg of the design: proves the CSP let the style in
DARK_BACKGROUND = "rgb(0, 0, 0)"


def screenshot(browser, name, dark=False):
    """Saves the current page as SCREENSHOT_DIR/<name>.png (and <name>-dark.png with dark)."""
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    size = None
    for _ in range(3):  # the whole page: the window grows by what its frame takes
        frame, height = browser.execute_script(
            "return [window.outerHeight - window.innerHeight, document.documentElement.scrollHeight]")
        wanted = max(600, min(int(height) + int(frame), 3000))
        if wanted == size:
            break  # the page fits the window as it is
        browser.set_window_size(1024, wanted)
        size = wanted
    browser.execute_script("window.scrollTo(0, 0)")
    path = SCREENSHOT_DIR / (name + ".png")
    browser.save_screenshot(str(path))
    if dark:
        set_dark(browser, True)
        browser.save_screenshot(str(SCREENSHOT_DIR / (name + "-dark.png")))
        set_dark(browser, False)
    browser.set_window_size(1024, 768)
    return path


def set_dark(browser, dark):
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {
        "features": [{"name": "prefers-color-scheme", "value": "dark" if dark else "light"}]})


def document_response(browser, url_part):
    """(status, headers with lower-case names) of the newest top-level document whose URL
    contains url_part, from the performance log (drained: call once per navigation)."""
    found = None
    for entry in browser.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") != "Network.responseReceived":
            continue
        params = message["params"]
        if params.get("type") == "Document" and url_part in params["response"]["url"]:
            response = params["response"]
            found = (response["status"], {k.lower(): v for k, v in response["headers"].items()})
    assert found, "no document response for %r in the browser's network log" % url_part
    return found


def body_text(browser):
    from selenium.webdriver.common.by import By
    return browser.find_element(By.TAG_NAME, "body").text


def assert_designed_page(browser, status, headers, expected_status, title=None, reason=None):
    """What a page the browser shows must be: status, headers, structure, style applied
    under the CSP (the stylesheet's hash matched, or the background would be white), and the
    reason code and request id for support."""
    assert status == expected_status, (status, headers)
    assert headers.get("content-type") == "text/html; charset=utf-8", headers
    assert headers.get("cache-control") == "no-store", headers
    assert headers.get("x-content-type-options") == "nosniff", headers
    assert headers.get("referrer-policy") == "no-referrer", headers
    csp = headers.get("content-security-policy", "")
    assert csp.startswith("default-src 'none'; style-src 'sha256-"), csp
    assert "unsafe-inline" not in csp and "script-src" not in csp, csp
    assert browser.execute_script("return document.documentElement.lang") == "en"
    assert browser.execute_script(
        "return document.querySelector('meta[name=viewport]').content") == "width=device-width, initial-scale=1"
    assert browser.execute_script("return document.querySelectorAll('link, script, img, iframe').length") == 0
    assert browser.execute_script("return getComputedStyle(document.body).backgroundColor") == LIGHT_BACKGROUND, \
        "the page's style did not apply (blocked by its CSP?)"
    if title is not None:
        assert browser.title == title, browser.title
        assert browser.execute_script("return document.querySelector('h1').textContent") == title
    text = body_text(browser)
    if reason is not None:
        assert "Reason %s" % reason in text, text
        request_id = headers.get("x-request-id")
        assert request_id and re.fullmatch(r"[A-Za-z0-9._-]{1,128}", request_id), headers
        assert "Request ID %s" % request_id in text, text
    return text


def assert_dark_variant(browser):
    set_dark(browser, True)
    try:
        assert browser.execute_script("return getComputedStyle(document.body).backgroundColor") == DARK_BACKGROUND
    finally:
        set_dark(browser, False)


def png_pixels(data):
    """(width, height, bytes per pixel, rows) of an 8-bit, non-interlaced RGB or RGBA PNG (what
    Chromium's screenshots are): each row a bytearray of `width * bpp` channel values."""
    import struct
    import zlib
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, compressed = 8, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            compressed += chunk
    assert depth == 8 and color in (2, 6) and interlace == 0, (depth, color, interlace)
    bpp = 3 if color == 2 else 4
    raw, stride, rows, previous, i = zlib.decompress(compressed), width * bpp, [], bytearray(width * bpp), 0
    for _ in range(height):
        kind, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = previous[x]
            c = previous[x - bpp] if x >= bpp else 0
            if kind == 1:
                line[x] = (line[x] + a) & 255
            elif kind == 2:
                line[x] = (line[x] + b) & 255
            elif kind == 3:
                line[x] = (line[x] + ((a + b) >> 1)) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        previous = line
    return width, height, bpp, rows
