"""The sidecar's pages in the browser's language, end to end: headless Chromium asks in each of
the twelve languages (its Accept-Language, as a browser set to that language sends it), and each
page — the sign-in page, sign-in required, the 403 of a rule, a sign-in error, 404, 405, signed
out, the sign-out confirmation — must come back in that language with Content-Language and
Vary: Accept-Language, mirror for Arabic and Hebrew, and fit: Chromium measures that no element
overflows its box or sticks out of its parent, on a desktop and on a phone-sized viewport. The
Japanese and Arabic sign-in pages' buttons are also checked in the screenshot's pixels.

Over plain sockets: hostile Accept-Language values never reach a page or a header, and the same
chosen language gives the same bytes whatever the field said.
"""
import re

import pytest

from browser_support import chromium, find_browser, wait_until  # noqa: F401 (fixture)
from pages_support import SCREENSHOT_DIR, document_response, png_pixels, screenshot

# Accept-Language as a browser set to each language sends it (Chromium's own form).
ACCEPT = {
    "en": "en-US,en;q=0.9", "de": "de-DE,de;q=0.9,en;q=0.8", "fr": "fr-FR,fr;q=0.9,en;q=0.8",
    "es": "es-ES,es;q=0.9", "it": "it-IT,it;q=0.9", "pt-BR": "pt-BR,pt;q=0.9,en-US;q=0.8,en;q=0.7",
    "ja": "ja,en-US;q=0.9,en;q=0.8", "ko": "ko-KR,ko;q=0.9,en-US;q=0.8", "zh-Hans": "zh-CN,zh;q=0.9",
    "zh-Hant": "zh-TW,zh;q=0.9,en-US;q=0.8", "ar": "ar,en-US;q=0.7", "he": "he-IL,he;q=0.9,en-US;q=0.8",
}
RIGHT_TO_LEFT = {"ar", "he"}
# Apple's localized "Sign in with Apple" titles (ASAuthorizationAppleIDButton's strings; pt-BR
# as Apple's Brazilian support pages write it). Docs/pages.md lists them with their sources.
APPLES_TITLE = {
    "en": "Sign in with Apple", "de": "Mit Apple anmelden", "fr": "Connexion avec Apple",
    "es": "Iniciar sesión con Apple", "it": "Accedi con Apple", "pt-BR": "Iniciar sessão com a Apple",
    "ja": "Appleでサインイン", "ko": "Apple로 로그인", "zh-Hans": "通过Apple登录", "zh-Hant": "使用Apple登入",
    "ar": "تسجيل الدخول باستخدام Apple", "he": "התחברות באמצעות Apple",
}
# A font that has the script's glyphs must draw it (else the page is tofu): one of these
# words is in the family name of a font Chromium used for the page's heading (DejaVu Sans,
# Debian's default sans, has Arabic and Hebrew; CJK needs fonts-noto-cjk).
SCRIPT_FONTS = {"ja": ("CJK",), "ko": ("CJK",), "zh-Hans": ("CJK",), "zh-Hant": ("CJK",),
                "ar": ("Arabic", "DejaVu"), "he": ("Hebrew", "DejaVu")}
VIEWPORTS = ((1024, 768, False), (360, 740, True), (320, 568, True))  # a desktop, a phone, the smallest phone

# What Chromium measures: each element of the page's card that overflows its own box (its
# content wider or taller than it, as scrollWidth/scrollHeight tell) or sticks out of its
# parent sideways, and a page wider than the viewport. An empty list: the text fits.
FIT_PROBLEMS = """
const problems = [], root = document.documentElement;
const name = e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (e.className && e.className.baseVal === undefined
    ? '.' + e.className : '');
if (root.scrollWidth > root.clientWidth) problems.push('the page scrolls sideways: ' + root.scrollWidth + ' > ' + root.clientWidth);
for (const e of document.querySelectorAll('main, main *')) {
  const box = e.getBoundingClientRect(), parent = e.parentElement.getBoundingClientRect();
  if (box.width === 0 && box.height === 0) continue;
  if (e instanceof HTMLElement && getComputedStyle(e).display !== 'inline') {
    if (e.scrollWidth > e.clientWidth + 1) problems.push(name(e) + ' is wider inside than its box: ' + e.scrollWidth + ' > ' + e.clientWidth);
    if (e.scrollHeight > e.clientHeight + 1) problems.push(name(e) + ' is taller inside than its box: ' + e.scrollHeight + ' > ' + e.clientHeight);
  }
  if (e !== document.querySelector('main') && (box.left < parent.left - 0.5 || box.right > parent.right + 0.5))
    problems.push(name(e) + ' sticks out of ' + name(e.parentElement) + ': ' + [box.left, box.right] + ' vs ' + [parent.left, parent.right]);
}
const button = document.getElementById('sign-in-with-apple');
if (button) {
  const b = button.getBoundingClientRect(), range = document.createRange();
  range.selectNodeContents(button.querySelector('span'));
  const lines = range.getClientRects(), tops = new Set([...lines].map(r => Math.round(r.top)));
  // One rectangle per bidi run (Apple's name inside Arabic text): lines are the distinct tops.
  if (tops.size !== 1) problems.push("the button's title takes " + tops.size + ' lines (one, as Apple draws its titles)');
  for (const line of lines)
    if (line.left < b.left + 8 || line.right > b.right - 8 || line.top < b.top || line.bottom > b.bottom)
      problems.push("the button's title is not inside the button with room to spare");
}
return problems;
"""


def set_language(browser, tag):
    """Chromium sends this Accept-Language from now on, as if set to the language."""
    agent = browser.execute_script("return navigator.userAgent")
    browser.execute_cdp_cmd("Emulation.setUserAgentOverride", {"userAgent": agent, "acceptLanguage": ACCEPT[tag]})


def fonts_of(browser, selector):
    """The families of the fonts Chromium drew the element's text with."""
    browser.execute_cdp_cmd("DOM.enable", {})
    browser.execute_cdp_cmd("CSS.enable", {})
    root = browser.execute_cdp_cmd("DOM.getDocument", {})["root"]["nodeId"]
    node = browser.execute_cdp_cmd("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
    fonts = browser.execute_cdp_cmd("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]
    return [f["familyName"] for f in fonts if f["glyphCount"] > 0]


def assert_fits(browser, what):
    # One viewport straight after another, the window's own restored once at the end: each
    # change of metrics lays the page out again.
    try:
        for width, height, mobile in VIEWPORTS:
            browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
                "width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile})
            problems = browser.execute_script(FIT_PROBLEMS)
            assert problems == [], "%s at %dx%d: %s" % (what, width, height, problems)
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def check_page(browser, url_part, tag, status, what):
    """The page the browser shows now is in `tag`, says so in its headers, mirrors when it
    should, and fits."""
    got, headers = document_response(browser, url_part)
    assert got == status, (what, got)
    assert headers.get("content-language") == tag, (what, headers)
    assert "Accept-Language" in headers.get("vary", ""), (what, headers)
    page = browser.execute_script("""
        const h1 = document.querySelector('h1');
        return {lang: document.documentElement.lang, dir: document.documentElement.dir,
                direction: getComputedStyle(h1).direction, title: document.title, h1: h1.textContent,
                h1Align: getComputedStyle(h1).textAlign};""")
    rtl = tag in RIGHT_TO_LEFT
    assert page["lang"] == tag and page["dir"] == ("rtl" if rtl else "ltr"), (what, page)
    assert page["direction"] == ("rtl" if rtl else "ltr") and page["h1Align"] == "start", (what, page)
    assert page["title"] == page["h1"] and page["h1"].strip(), (what, page)
    if rtl:
        # Logical properties: the labels' spacing is on their left, the end side in a
        # right-to-left page.
        margins = browser.execute_script("""
            const s = document.querySelector('.meta span'); if (!s) return null;
            const c = getComputedStyle(s); return [c.marginLeft, c.marginRight];""")
        assert margins in (None, ["16px", "0px"]), (what, margins)
    if tag == "ko":
        # Korean breaks lines between words (at spaces), not inside them.
        assert browser.execute_script("return getComputedStyle(document.querySelector('main p')).wordBreak") \
            == "keep-all", what
    if tag in SCRIPT_FONTS:
        fonts = fonts_of(browser, "h1")
        assert any(word in family for family in fonts for word in SCRIPT_FONTS[tag]), \
            "%s: the %s heading was drawn with %s, none of %s: install fonts-noto-cjk and fonts-noto-core " \
            "(scripts/lib/deps.sh)" % (what, tag, fonts, SCRIPT_FONTS[tag])
    assert_fits(browser, "%s (%s)" % (what, tag))
    return page


def post_form(browser, action):
    browser.execute_script("""
        const form = document.createElement('form'); form.method = 'post'; form.action = arguments[0];
        document.body.appendChild(form); form.submit();""", action)


@pytest.fixture
def sidecar(start_sidecar):
    find_browser()
    return start_sidecar({"pages": {"sign_in": True}, "access": {"public_paths": ["/pub/**"]},
                          "rules": [{"path": "/internal/**", "deny": True}]})


@pytest.mark.parametrize("tag", sorted(ACCEPT))
def test_every_page_in_the_browsers_language_fits(sidecar, chromium, tag):
    origin = "http://127.0.0.1:%d" % sidecar.port
    browser = chromium()
    set_language(browser, tag)
    english = set()
    shots = SCREENSHOT_DIR / "languages"
    shots.mkdir(parents=True, exist_ok=True)

    # The sign-in page, with Apple's button in Apple's words for the language.
    browser.get(origin + "/reports?year=2026")
    page = check_page(browser, "/reports", tag, 401, "sign-in page")
    english.add(page["h1"] == "Sign in")
    button = browser.execute_script("""
        const a = document.getElementById('sign-in-with-apple'), r = a.getBoundingClientRect();
        const logo = a.querySelector('svg').getBoundingClientRect(), text = a.querySelector('span').getBoundingClientRect();
        return {text: a.textContent.trim(), width: r.width, height: r.height, logoLeft: logo.left, textLeft: text.left,
                font: parseFloat(getComputedStyle(a).fontSize), href: a.getAttribute('href')};""")
    assert button["text"] == APPLES_TITLE[tag], button
    assert button["width"] >= 140 and button["height"] >= 30, button
    assert button["href"] == "/.auth/login?rd=/reports%3Fyear%3D2026", button
    # Apple's logo leads its title: on the left, or on the right in a right-to-left page.
    assert (button["logoLeft"] > button["textLeft"]) == (tag in RIGHT_TO_LEFT), button
    screenshot(browser, "languages/%s-sign-in" % tag, dark=tag in ("ja", "ar"))

    # Sign-in required (a POST without a session).
    browser.get(origin + "/pub/start")
    post_form(browser, "/private/save")
    wait_until(browser, lambda b: b.current_url == origin + "/private/save", "the POST was not sent")
    page = check_page(browser, "/private/save", tag, 401, "sign-in required")
    english.add(page["h1"] == "Sign in required")
    screenshot(browser, "languages/%s-401" % tag)

    # A rule's 403, a sign-in that cannot be matched to the browser, 404 and 405.
    for path, status, name in (("/internal/report", 403, "403"), ("/.auth/nowhere", 404, "404"),
                               ("/.auth/callback", 405, "405")):
        browser.get(origin + path)
        page = check_page(browser, path, tag, status, name)
        english.add(page["h1"] in ("Not open to your account", "Page not found", "Not allowed here"))
        screenshot(browser, "languages/%s-%s" % (tag, name))
    post_form(browser, "/.auth/callback")
    wait_until(browser, lambda b: b.current_url == origin + "/.auth/callback", "not posted")
    page = check_page(browser, "/.auth/callback", tag, 400, "sign-in error")
    screenshot(browser, "languages/%s-sign-in-error" % tag)

    # Signed out, and the confirmation a sign-out link from another site gets.
    browser.get(origin + "/.auth/logout")
    page = check_page(browser, "/.auth/logout", tag, 200, "signed out")
    english.add(page["h1"] == "You are signed out")
    screenshot(browser, "languages/%s-signed-out" % tag)
    browser.get("http://localhost:%d/pub/elsewhere" % sidecar.port)
    browser.execute_script("""
        const a = document.createElement('a'); a.href = arguments[0]; a.id = 'e2e-link'; a.textContent = 'go';
        document.body.appendChild(a);""", origin + "/.auth/logout")
    browser.find_element("id", "e2e-link").click()
    wait_until(browser, lambda b: b.current_url == origin + "/.auth/logout", "the link was not followed")
    check_page(browser, "/.auth/logout", tag, 403, "sign-out confirmation")
    screenshot(browser, "languages/%s-sign-out-confirm" % tag)
    assert english == ({True} if tag == "en" else {False}), "every page is in the language"
    assert (shots / ("%s-sign-in.png" % tag)).stat().st_size > 0


def test_the_fit_probe_sees_text_that_does_not_fit(sidecar, chromium):
    """The measurement above can fail: a button squeezed narrower than Apple's title, and a
    heading held to one line too short for it, are both reported."""
    browser = chromium()
    set_language(browser, "ar")
    browser.get("http://127.0.0.1:%d/" % sidecar.port)
    assert browser.execute_script(FIT_PROBLEMS) == []
    browser.execute_script("""
        const a = document.getElementById('sign-in-with-apple');
        a.style.minWidth = '0'; a.style.width = '120px'; a.style.whiteSpace = 'nowrap';""")
    problems = browser.execute_script(FIT_PROBLEMS)
    assert any("a#sign-in-with-apple" in p for p in problems), problems
    assert any("title is not inside the button" in p for p in problems), problems
    browser.refresh()
    browser.execute_script("const h = document.querySelector('h1'); h.style.whiteSpace = 'nowrap'; h.style.width = '3em';"
                           "h.style.overflow = 'hidden';")
    assert any(p.startswith("h1 is wider inside") for p in browser.execute_script(FIT_PROBLEMS))


def ink_columns(png, background):
    """The x of each column of a PNG with a pixel far from `background` (an (r, g, b)), in its
    middle half of rows (the rounded corners show the card behind the button)."""
    width, height, bpp, rows = png_pixels(png)
    columns = set()
    for row in rows[height // 4:height - height // 4]:
        for x in range(width):
            pixel = row[x * bpp:x * bpp + 3]
            if sum(abs(p - b) for p, b in zip(pixel, background)) > 150:
                columns.add(x)
    return width, sorted(columns)


@pytest.mark.parametrize("tag", ["ja", "ar"])
def test_japanese_and_arabic_buttons_in_the_screenshot(sidecar, chromium, tag):
    """The pixels of the button as Chromium drew it: white ink on black, all of it inside the
    button with room to spare, in two groups (the logo, then the title) whose order follows
    the language's direction, and the title's ink about as wide as its text box."""
    browser = chromium()
    set_language(browser, tag)
    browser.get("http://127.0.0.1:%d/" % sidecar.port)
    document_response(browser, "127.0.0.1")
    button = browser.find_element("id", "sign-in-with-apple")
    assert button.text == APPLES_TITLE[tag]
    png = button.screenshot_as_png
    (SCREENSHOT_DIR / "languages").mkdir(parents=True, exist_ok=True)
    (SCREENSHOT_DIR / "languages" / ("%s-button.png" % tag)).write_bytes(png)
    box = browser.execute_script("""
        const a = document.getElementById('sign-in-with-apple'), r = a.getBoundingClientRect();
        const l = a.querySelector('svg').getBoundingClientRect(), t = a.querySelector('span').getBoundingClientRect();
        return {left: r.left, logo: [l.left - r.left, l.right - r.left], text: [t.left - r.left, t.right - r.left]};""")
    width, columns = ink_columns(png, (0, 0, 0))
    assert columns, "no ink on the button"
    assert columns[0] >= 8 and columns[-1] <= width - 9, (columns[0], columns[-1], width)
    groups, start = [], columns[0]
    for previous, x in zip(columns, columns[1:]):
        if x - previous > 4:  # a gap wider than between letters: logo | title
            groups.append((start, previous))
            start = x
    groups.append((start, columns[-1]))
    logo = [g for g in groups if g[0] >= box["logo"][0] - 2 and g[1] <= box["logo"][1] + 2]
    assert logo, (groups, box)
    text_ink = [x for x in columns if box["text"][0] - 1 <= x <= box["text"][1] + 1]
    assert text_ink[-1] - text_ink[0] >= 0.8 * (box["text"][1] - box["text"][0]), (text_ink[:3], text_ink[-3:], box)
    if tag == "ar":
        assert logo[0][0] > text_ink[-1], "the logo leads on the right in Arabic: %s %s" % (groups, box)
    else:
        assert logo[-1][1] < text_ink[0], "the logo leads on the left: %s %s" % (groups, box)


# -- over plain sockets ----------------------------------------------------------------------
def page(sidecar, accept_language, path="/reports"):
    headers = [("Accept", "text/html"), ("X-Request-Id", "fixed-id")]
    headers += [("Accept-Language", v) for v in accept_language]
    return sidecar.request("GET", path, headers)


def test_same_language_same_bytes_and_headers_for_caches(sidecar):
    answers = [page(sidecar, values) for values in (
        ["ja"], ["ja-JP"], ["JA-jp;q=0.9, en;q=0.1"], ["xx, <b>, ja-Jpan-JP;q=1"], ["de;q=0", "ja;q=0.5, *;q=0.1"])]
    for r in answers:
        assert r.status == 401 and r.header("Content-Language") == "ja"
        assert r.header("Vary") == "Accept-Language"
        assert r.body == answers[0].body, "the same language, the same bytes"
    assert "Appleでサインイン".encode() in answers[0].body
    default = page(sidecar, [])
    assert default.header("Content-Language") == "en" and default.header("Vary") == "Accept-Language"
    # A 404 and a 405 page vary too; API clients' answers are not pages.
    assert page(sidecar, ["fr"], "/.auth/nowhere").header("Content-Language") == "fr"
    api = sidecar.request("GET", "/reports", [("Accept", "application/json"), ("Accept-Language", "fr")])
    assert api.status == 401 and api.header("Content-Language") is None


HOSTILE = [
    "<script>alert(1)</script>", 'ja"><img src=x onerror=alert(1)>', "ja' onmouseover='alert(1)",
    "</title><script>alert(1)</script>", "ja;q=0.5.5, ja;q=2, ja;q=-1, ja;q=NaN, ja;q=1e0",
    ", ".join("x%d-y;q=0.%03d" % (i, i % 1000) for i in range(600)) + ", ja",
    "a" * 12000, "ja-" + "x" * 5000, "*;q=1, *", "ja;q=0", "\u00e9\u00e8, ja\u00ff".encode().decode("latin-1"),
]


@pytest.mark.parametrize("value", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_accept_language_is_never_reflected(sidecar, value):
    r = page(sidecar, [value])
    assert r.status == 401, r.status
    assert r.header("Content-Language") == "en", r.header("Content-Language")
    assert r.body == page(sidecar, []).body, "a field naming no known language is the default page"
    for fragment in (b"alert(1)", b"<img", b"x599-y", b"aaaaaaaa", b"xxxxxxxx"):
        assert fragment not in r.body and fragment.decode() not in repr(r.headers), fragment


def test_control_bytes_in_accept_language_end_at_the_parser(sidecar):
    for value in ("ja\x01", "ja\x7f", "ja\x00en"):
        r = sidecar.request("GET", "/reports", [("Accept", "text/html"), ("Accept-Language", value)])
        assert r.status == 400, (value, r.status)
    assert page(sidecar, ["ko"]).header("Content-Language") == "ko", "the sidecar is still serving"


def test_a_huge_field_costs_a_bounded_scan(sidecar):
    """Thousands of ranges in the largest head the sidecar takes: the answer is the default
    page, and fast (the scan stops at LanguageLookup's bound)."""
    import time
    value = ",".join(["zz"] * 4000)
    start = time.monotonic()
    for _ in range(20):
        r = page(sidecar, [value])
        assert r.status == 401 and r.header("Content-Language") == "en", r.status
    assert time.monotonic() - start < 5, "20 requests with a 12 KB Accept-Language"
    assert re.fullmatch(r"[a-z]{2}(-[A-Za-z]+)?", page(sidecar, ["he"]).header("Content-Language"))


def test_the_default_and_the_override(start_sidecar):
    protected = {"public_paths": ["/pub/**"]}
    german = start_sidecar({"pages": {"sign_in": True, "language": "de"}, "access": protected})
    r = page(german, ["sv, nl;q=0.9"])
    assert r.header("Content-Language") == "de" and "Mit Apple anmelden".encode() in r.body
    assert page(german, ["ar"]).header("Content-Language") == "ar"
    hebrew = start_sidecar({"pages": {"sign_in": True, "language": "de", "language_override": "he"}, "access": protected})
    r = page(hebrew, ["ja, en;q=0.5"])
    assert r.header("Content-Language") == "he" and r.header("Vary") is None
    assert b'<html lang="he" dir="rtl">' in r.body


def test_the_language_settings_are_read_again_on_sighup(start_sidecar):
    import signal
    import time
    from conftest import merge, to_yaml
    sidecar = start_sidecar({"pages": {"sign_in": True}, "access": {"public_paths": ["/pub/**"]}})
    assert page(sidecar, ["ja"]).header("Content-Language") == "ja"
    sidecar.config_path.write_text(to_yaml(merge(sidecar.config, {"pages": {"language_override": "ar"}})) + "\n")
    sidecar.proc.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 5  # a reload is prompt; 5 s covers a loaded 2-core machine
    while page(sidecar, ["ja"]).header("Content-Language") != "ar" and time.monotonic() < deadline:
        time.sleep(0.05)
    r = page(sidecar, ["ja"])
    assert r.header("Content-Language") == "ar" and r.header("Vary") is None
    assert "تسجيل الدخول باستخدام Apple".encode() in r.body


def test_operator_templates_get_the_language(start_sidecar, tmp_path):
    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "sign_in.html").write_text(
        '<!doctype html><html lang="{{language}}" dir="{{direction}}"><title>{{title}}</title>'
        '<a href="{{login_url}}">{{sign_in_with_apple}}</a></html>\n', encoding="utf-8")
    sidecar = start_sidecar({"pages": {"sign_in": True, "templates": str(pages)},
                             "access": {"public_paths": ["/pub/**"]}})
    r = page(sidecar, ["he-IL, en;q=0.5"])
    assert r.status == 401 and r.header("Content-Language") == "he" and r.header("Vary") == "Accept-Language"
    assert r.body.decode() == ('<!doctype html><html lang="he" dir="rtl"><title>התחברות</title>'
                               '<a href="/.auth/login?rd=/reports">התחברות באמצעות Apple</a></html>\n')
    r = page(sidecar, ["<script>"])
    assert '<html lang="en" dir="ltr"><title>Sign in</title>' in r.body.decode()


def test_a_page_over_http2_is_in_the_streams_language(sidecar):
    """h2c: the same choice from the stream's accept-language fields (two of them here)."""
    from h2_support import H2Client
    client = H2Client(sidecar.port)
    try:
        r = client.request("GET", "/reports", [("accept", "text/html"), ("x-request-id", "fixed-id"),
                                               ("accept-language", "xx"), ("accept-language", "ko;q=0.8")])
        assert r.status == 401 and r.header("content-language") == "ko", (r.status, r.headers)
        assert r.header("vary") == "Accept-Language"
        assert r.body == page(sidecar, ["ko"]).body, "HTTP/2 and HTTP/1.1 get the same page"
    finally:
        client.close()
