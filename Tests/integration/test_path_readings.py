"""The strictest reading wins (SPEC §4.3): every spelling of a path that some upstream reads
as a restricted one is held to that restriction, before and after sign-in, over HTTP/1.1,
h2c and `/.auth/check`, in front of upstreams that decode: a WSGI static-file server reading
paths as leniently as Tomcat, IIS, Express and WSGI do (lenient_upstream.py), and nginx
serving files with merge_slashes."""
import json
import subprocess
import sys

import pytest

import rawhttp
from conftest import HERE, free_port, sidecar_binary
from h2_support import H2Client
from nginx_support import Nginx

HTML = ("Accept", "text/html,application/xhtml+xml")
JSON = ("Accept", "application/json")

SECRET = b"SECRET-FILE-CONTENT"
ADMIN = b"ADMIN-PAGE-CONTENT"
INTERNAL = b"INTERNAL-PAGE-CONTENT"
OPEN = b"OPEN-PAGE-CONTENT"


def site_root(root):
    (root / "open").mkdir(parents=True)
    (root / "admin").mkdir()
    (root / "internal").mkdir()
    (root / "writes").mkdir()
    (root / "secret.txt").write_bytes(SECRET)
    (root / "open" / "readme.txt").write_bytes(OPEN)
    (root / "admin" / "x").write_bytes(ADMIN)
    (root / "admin" / "y").write_bytes(ADMIN)
    (root / "internal" / "x").write_bytes(INTERNAL)
    (root / "writes" / "x").write_bytes(b"WRITES")
    return root


@pytest.fixture(scope="module")
def lenient(tmp_path_factory):
    """The lenient WSGI upstream over a small site: /secret.txt, /open/, /admin/, /internal/."""
    root = site_root(tmp_path_factory.mktemp("lenient-site"))
    proc = subprocess.Popen([sys.executable, str(HERE / "lenient_upstream.py"), "--root", str(root)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    port = json.loads(proc.stdout.readline())["port"]
    yield port
    proc.terminate()
    proc.wait(5)


RULES = [
    {"path": "/**", "host": "admin.example.com", "deny": True},       # 0
    {"path": "/open/**", "public": True},                             # 1
    {"path": "/admin/**", "allowed_emails": ["boss@example.com"]},    # 2
    {"path": "/internal/**", "deny": True},                           # 3
    {"path": "/writes/**", "methods": ["DELETE"], "deny": True},      # 4
]


def config(port, **more):
    c = {"upstream": "http://127.0.0.1:%d" % port, "rules": RULES, "access": {"public_paths": []}}
    c.update(more)
    return c


def get(sc, target, headers=(), method="GET", host="test.local"):
    """One request as raw bytes (the target exactly as written), on its own connection."""
    head = "%s %s HTTP/1.1\r\nHost: %s\r\n" % (method, target, host)
    head += "".join("%s: %s\r\n" % h for h in headers) + "Connection: close\r\n\r\n"
    c = rawhttp.Conn(sc.port, timeout=10)
    try:
        c.send(head.encode("latin-1"))
        return c.read_response(method=method)
    finally:
        c.close()


def h2get(sc, target, headers=(), host="test.local"):
    c = H2Client(sc.port)
    try:
        return c.request("GET", target, [(n.lower(), v) for n, v in headers], authority=host)
    finally:
        c.close()


def cookie(b):
    name, value = b.session_cookie
    return ("Cookie", "%s=%s" % (name, value))


ENCODED_SEPARATORS = ["/open/..%2Fsecret.txt", "/open/%2e%2e%2fsecret.txt", "/open/..%2fsecret.txt",
                      "/open/..%5Csecret.txt", "/open/%2E%2E%5csecret.txt", "/open/..\\secret.txt"]


@pytest.mark.parametrize("over", ["http1", "h2c"])
def test_encoded_separators_are_refused_before_any_decision(start_auth_sidecar, lenient, over):
    """`/open/..%2Fsecret.txt` was decided as public and read by a decoding upstream as
    `/secret.txt`: now 400 before any decision, and the secret never leaves the upstream."""
    sc, _ = start_auth_sidecar(config(lenient))
    fetch = get if over == "http1" else h2get
    assert fetch(sc, "/open/readme.txt").body == OPEN, "public path as written"
    assert fetch(sc, "/secret.txt", [JSON]).status == 401, "the protected file as written"
    for target in ENCODED_SEPARATORS:
        r = fetch(sc, target, [JSON])
        assert r.status == 400, (over, target, r.status, r.body[:200])
        assert SECRET not in r.body, target
    assert sc.logged(lambda out: '"msg":"request path refused with 400"' in out
                     and '"path":"/open/..%2Fsecret.txt","reason":"path_encoded_separator"' in out)


def test_decode_reads_encoded_separators_as_slashes(start_auth_sidecar, lenient):
    """`paths.encoded_slashes: decode`: `%2F` is `/`, so the decision is made on, and the
    upstream receives, `/secret.txt`, which needs a session."""
    sc, _ = start_auth_sidecar(config(lenient, paths={"encoded_slashes": "decode"}))
    for target in ENCODED_SEPARATORS:
        r = get(sc, target, [JSON])
        assert r.status == 401, (target, r.status, r.body[:200])
    r = get(sc, "/open/sub%2F..%2Freadme.txt")
    assert r.status == 200 and r.body == OPEN
    assert r.header("X-Seen-Target") == "/open/readme.txt", "forwarded as decided"


def test_keep_is_warned_about_by_check(start_sidecar, lenient):
    sc = start_sidecar(config(lenient, paths={"encoded_slashes": "keep"}))
    out = subprocess.run([str(sidecar_binary()), "check", "--config", str(sc.config_path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "paths.encoded_slashes" in out.stdout + out.stderr and "decodes" in out.stdout + out.stderr


SPELLINGS_OF_ADMIN = ["//admin/x", "/ADMIN/x", "/Admin/x", "/admin;x/y", "/admin./x", "/admin%20/x",
                      "/admin.;jsessionid=1/x", "///admin//x", "/open/../ADMIN/x"]
SPELLINGS_OF_INTERNAL = ["/internal/x", "//internal/x", "/INTERNAL/x", "/internal;/x", "/internal./x",
                         "/Internal;a=b./x"]


@pytest.mark.parametrize("over", ["http1", "h2c"])
def test_every_spelling_of_a_restricted_path_is_held_to_its_rule(start_auth_sidecar, browser, lenient, over):
    sc, apple = start_auth_sidecar(config(lenient))
    maria, boss = browser(sc, apple), browser(sc, apple)
    assert maria.login()[0].status == 303
    assert boss.login(email="boss@example.com")[0].status == 303
    fetch = get if over == "http1" else h2get
    for target in SPELLINGS_OF_ADMIN:
        r = fetch(sc, target, [HTML, cookie(maria)])
        assert r.status == 403 and ADMIN not in r.body, (over, target, r.status)
        r = fetch(sc, target, [HTML])
        assert r.status == 302, (over, target, r.status)
        r = fetch(sc, target, [HTML, cookie(boss)])
        assert r.status == 200 and r.body == ADMIN, (over, target, r.status)
    for target in SPELLINGS_OF_INTERNAL:
        for who in ([], [cookie(boss)]):
            r = fetch(sc, target, [HTML] + who)
            assert r.status == 403 and INTERNAL not in r.body, (over, target, r.status)
    for target in ["/admin%2Fx", "/internal%2Fx", "/admin%5cx"]:
        assert fetch(sc, target, [HTML, cookie(maria)]).status == 400, target


def test_the_upstream_receives_the_path_that_was_decided_on(start_auth_sidecar, browser, lenient):
    sc, apple = start_auth_sidecar(config(lenient))
    boss = browser(sc, apple)
    assert boss.login(email="boss@example.com")[0].status == 303
    for sent, forwarded in [("//admin/x", "/admin/x"), ("///admin//x", "/admin/x"), ("/open/./..//admin/x", "/admin/x"),
                            ("/admin;x/y", "/admin;x/y"), ("/ADMIN/x", "/ADMIN/x"), ("/admin%2e/x", "/admin./x")]:
        r = get(sc, sent, [HTML, cookie(boss)])
        assert r.status == 200, (sent, r.status)
        assert r.header("X-Seen-Target") == forwarded, (sent, r.header("X-Seen-Target"))


@pytest.mark.parametrize("over", ["http1", "h2c"])
def test_public_admits_only_the_exact_spelling(start_auth_sidecar, lenient, over):
    sc, _ = start_auth_sidecar(config(lenient))
    fetch = get if over == "http1" else h2get
    assert fetch(sc, "/open/readme.txt").status == 200
    assert fetch(sc, "/open/readme.txt;v=2").status == 200, "parameters on a later segment keep it public"
    for target in ["/OPEN/readme.txt", "/Open/readme.txt", "/open;x/readme.txt", "/open./readme.txt"]:
        assert fetch(sc, target, [JSON]).status == 401, (over, target)


@pytest.mark.parametrize("target", ["/;x/admin/x", "/.../secret.txt", "/open/..%20/secret.txt", "/open/...;/secret.txt",
                                    "/open/.%20/x"])
def test_segments_an_upstream_reads_as_nothing_are_refused(start_auth_sidecar, lenient, target):
    sc, _ = start_auth_sidecar(config(lenient))
    r = get(sc, target, [JSON])
    assert r.status == 400 and SECRET not in r.body, (target, r.status)


@pytest.mark.parametrize("over", ["http1", "h2c"])
def test_a_host_rule_holds_for_every_spelling_of_the_host(start_auth_sidecar, browser, lenient, over):
    sc, apple = start_auth_sidecar(config(lenient))
    boss = browser(sc, apple)
    assert boss.login(email="boss@example.com")[0].status == 303
    fetch = get if over == "http1" else h2get
    assert fetch(sc, "/open/readme.txt", host="www.example.com").status == 200
    for host in ["admin.example.com", "admin.example.com.", "ADMIN.Example.COM", "admin.example.com.:8080",
                 "Admin.Example.Com..:443"]:
        r = fetch(sc, "/open/readme.txt", [HTML, cookie(boss)], host=host)
        assert r.status == 403, (over, host, r.status)


@pytest.mark.parametrize("field", ["X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override"])
def test_a_method_override_is_held_to_a_rule_denying_that_method(start_auth_sidecar, browser, lenient, field):
    sc, apple = start_auth_sidecar(config(lenient))
    boss = browser(sc, apple)
    assert boss.login(email="boss@example.com")[0].status == 303
    assert get(sc, "/writes/x", [HTML, cookie(boss)]).status == 200
    assert get(sc, "/writes/x", [HTML, cookie(boss)], method="DELETE").status == 403
    for value in ["DELETE", "delete", " Delete ", "GET, DELETE"]:
        r = get(sc, "/writes/x", [HTML, cookie(boss), (field, value)])
        assert r.status == 403, (field, value, r.status, r.header("X-Ran-Method"))
        r = get(sc, "/WRITES/x", [HTML, cookie(boss), (field, value)], method="POST")
        assert r.status == 403, (field, value, r.status)
    r = h2get(sc, "/writes/x", [HTML, cookie(boss), (field, "DELETE")])
    assert r.status == 403


def check(sc, uri, headers=(), method="GET"):
    hs = [("X-Forwarded-Uri", uri), ("X-Forwarded-Method", method), ("X-Forwarded-Host", "test.local")]
    return sc.request("GET", "/.auth/check", hs + list(headers))


def test_forward_auth_applies_the_same_readings(start_auth_sidecar, browser, lenient):
    sc, apple = start_auth_sidecar(config(lenient, trusted_proxies=["127.0.0.1/32"]))
    maria, boss = browser(sc, apple), browser(sc, apple)
    assert maria.login()[0].status == 303
    assert boss.login(email="boss@example.com")[0].status == 303
    assert check(sc, "/open/readme.txt").status == 200
    assert check(sc, "/admin/x", [cookie(boss)]).status == 200
    for uri in SPELLINGS_OF_ADMIN:
        assert check(sc, uri, [cookie(maria)]).status == 403, uri
        assert check(sc, uri, [cookie(boss)]).status == 200, uri
    for uri in SPELLINGS_OF_INTERNAL:
        assert check(sc, uri, [cookie(boss)]).status == 403, uri
    for uri in ENCODED_SEPARATORS + ["/admin%2Fx"]:
        assert check(sc, uri).status == 403, uri
    for uri in ["/OPEN/readme.txt", "/open;x/readme.txt"]:
        assert check(sc, uri).status == 401, uri
    assert check(sc, "/writes/x", [cookie(boss), ("X-HTTP-Method-Override", "DELETE")]).status == 403
    r = sc.request("GET", "/.auth/check", [("X-Forwarded-Uri", "/open/readme.txt"),
                                           ("X-Forwarded-Host", "Admin.Example.com."), cookie(boss)])
    assert r.status == 403


NGINX_UPSTREAM = """
events {}
http {
    access_log off;
    client_body_temp_path %(dir)s/tmp-body;
    proxy_temp_path %(dir)s/tmp-proxy;
    fastcgi_temp_path %(dir)s/tmp-fastcgi;
    uwsgi_temp_path %(dir)s/tmp-uwsgi;
    scgi_temp_path %(dir)s/tmp-scgi;
    server {
        listen 127.0.0.1:%(port)d;
        merge_slashes on;
        root %(root)s;
        location / { add_header X-Seen-Uri $request_uri; }
    }
}
"""


def test_in_front_of_nginx_serving_files(start_auth_sidecar, tmp_path):
    """nginx decodes `%2F`, merges slashes and resolves `..` before serving a file: every
    spelling of the protected file is refused or decided as the file itself."""
    root = site_root(tmp_path / "site")
    workdir = tmp_path / "nginx"
    workdir.mkdir()
    (workdir / "logs").mkdir()
    port = free_port()
    nginx = Nginx(workdir, NGINX_UPSTREAM % {"dir": workdir, "port": port, "root": root}, port).wait_ready()
    try:
        direct = rawhttp.request(port, "GET", "/open/..%2Fsecret.txt")
        assert direct.status == 200 and direct.body == SECRET, "nginx itself reads %2F as a separator"
        sc, _ = start_auth_sidecar(config(port))
        assert get(sc, "/open/readme.txt").body == OPEN
        for target in ENCODED_SEPARATORS:
            r = get(sc, target, [JSON])
            assert r.status == 400 and SECRET not in r.body, (target, r.status)
        for target in ["/open//..//secret.txt", "/open/./../secret.txt", "//secret.txt"]:
            r = get(sc, target, [JSON])
            assert r.status == 401 and SECRET not in r.body, (target, r.status)
    finally:
        nginx.stop()
