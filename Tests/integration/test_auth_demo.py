"""`sidecar demo`: zero set-up, a real sign-in through its in-process emulator."""
import html
import re
import subprocess
import time
from urllib.parse import quote, urlsplit

import rawhttp
from conftest import free_port, sidecar_binary

HTML = ("Accept", "text/html")


def test_demo_signs_in_end_to_end(tmp_path):
    port = free_port()
    proc = subprocess.Popen([str(sidecar_binary()), "demo", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        lines = []
        while not any("Press Ctrl-C" in l for l in lines):
            line = proc.stdout.readline().decode()
            assert line, "demo exited: %s" % "".join(lines)
            lines.append(line)
        text = "".join(lines)
        assert "http://localhost:%d/" % port in text
        emulator = re.search(r"Apple emulator\s+http://127\.0\.0\.1:(\d+)", text)
        assert emulator, text
        emulator_port = int(emulator.group(1))
        admin = re.search(r"admin\s+http://127\.0\.0\.1:(\d+)/metrics", text)
        assert admin, text  # the demo names its admin listener: an operator's next stop
        assert rawhttp.request(int(admin.group(1)), "GET", "/metrics").status == 200
        first = sign_in(port, emulator_port)
        assert b"Hello, Maria Ruiz" in first
        assert b"maria.ruiz@example.com" in first
        assert b'action="/.auth/logout"' in first
        assert b'id="name-note"' not in first
        # Apple sends the name only at the first authorization: the page says so the second time.
        second = sign_in(port, emulator_port)
        assert b"Hello, there" in second
        assert b'id="name-note"' in second and b"only at their first" in second
        # What the note says to do: revoke the consent in the emulator's console (Apple's "Stop
        # using Sign in with Apple"); the next sign-in is a first authorization again, with the name.
        revoked = rawhttp.request(emulator_port, "POST", "/emulator/console", [
            ("Sec-Fetch-Site", "same-origin"), ("Content-Type", "application/x-www-form-urlencoded")],
            b"action=revoke-consent&email=maria.ruiz%40example.com")
        assert revoked.status in (200, 303), (revoked.status, revoked.body)
        third = sign_in(port, emulator_port)
        assert b"Hello, Maria Ruiz" in third and b'id="name-note"' not in third
        proc.terminate()
        log = proc.stdout.read().decode()
        # The log names the admin listener the banner shows, not the configured port 0.
        listening = [l for l in log.splitlines() if "listening" in l]
        assert listening and "admin=127.0.0.1:%s" % admin.group(1) in listening[0], log
    finally:
        proc.terminate()
        assert proc.wait(10) == 0


def sign_in(port, emulator_port):
    """A whole web sign-in as maria.ruiz through the demo; the demo app's page after it."""
    # Unauthenticated: to the login, then to Apple (the emulator, another site).
    r = rawhttp.request(port, "GET", "/", [HTML, ("Host", "localhost:%d" % port)])
    assert r.status == 302 and r.header("Location").startswith("/.auth/login")
    r = rawhttp.request(port, "GET", r.header("Location"), [HTML])
    assert r.status == 302
    cookies = [c.split(";")[0] for c in r.header_all("Set-Cookie")]
    loc = urlsplit(r.header("Location"))
    assert loc.netloc == "127.0.0.1:%d" % emulator_port
    page = rawhttp.request(emulator_port, "GET", loc.path + "?" + loc.query
                           + "&emulator_auto_approve=" + quote("maria.ruiz@example.com")).body.decode()
    fields = re.findall(r'<input type="hidden" name="([^"]*)" value="([^"]*)">', page)
    body = "&".join("%s=%s" % (n, quote(html.unescape(v), safe="")) for n, v in fields).encode()
    r = rawhttp.request(port, "POST", "/.auth/callback", [
        HTML, ("Cookie", "; ".join(cookies)),
        ("Content-Type", "application/x-www-form-urlencoded")], body)
    assert r.status == 303, (r.status, r.body)
    session = [c.split(";")[0] for c in r.header_all("Set-Cookie") if "login" not in c.split("=")[0]]
    r = rawhttp.request(port, "GET", "/", [HTML, ("Cookie", session[0])])
    assert r.status == 200
    return r.body
