"""Floods of the cheap sign-in requests: a per-address
limit answers 429 with Retry-After while other clients are served; each kind of single-use
key has its own capacity, so a flood of login states never lets a spent native nonce be
replayed; a cancelled (`error`) callback stores nothing."""
import re
import threading
import time
from urllib.parse import parse_qs, urlencode, urlsplit

from native_support import (  # noqa: F401 (fixtures)
    BUNDLE, JSON_HEADERS, body_of, device, new_nonce, post_native, start_native)

HTML = ("Accept", "text/html,application/xhtml+xml")
FORM = ("Content-Type", "application/x-www-form-urlencoded")


def mint_login(conn):
    """GET /login on `conn`: (the login cookie as a Cookie field, the state)."""
    r = conn.request("GET", "/.auth/login", [HTML])
    assert r.status == 302, (r.status, r.body[:200])
    state = parse_qs(urlsplit(r.header("Location")).query)["state"][0]
    return ("Cookie", r.header_all("Set-Cookie")[-1].split(";")[0]), state


def callback(conn, login, **fields):
    cookie, state = login
    return conn.request("POST", "/.auth/callback", [HTML, FORM, cookie], urlencode(dict(state=state, **fields)).encode())


def samples(sc, family):
    """{labels: value} of one /metrics family ('' for an unlabelled sample)."""
    text = sc.admin("/metrics").body.decode()
    out = {}
    for m in re.finditer(r"^%s(\{[^}]*\})? (\S+)$" % re.escape(family), text, re.M):
        out[m.group(1) or ""] = float(m.group(2))
    return out


# -- limits.sign_in_rate ---------------------------------------------------------------------
def test_a_burst_from_one_address_is_refused_with_429_while_another_address_is_served(start_auth_sidecar):
    """The default (20/s, burst 100): a burst well past 100 logins on one connection from
    127.0.0.1 meets 429 with Retry-After; a client at 127.0.0.2 is served meanwhile."""
    sc, _ = start_auth_sidecar()
    statuses, limited = [], None
    with sc.conn() as c:
        for _ in range(300):
            r = c.request("GET", "/.auth/login", [HTML])
            statuses.append(r.status)
            if r.status == 429:
                limited = r
                break
    assert statuses[:100] == [302] * 100, statuses
    assert limited is not None, "no 429 after %d logins from one address" % len(statuses)
    assert int(limited.header("Retry-After")) >= 1
    assert limited.header("Content-Type").startswith("text/plain") and len(limited.body) < 100
    with sc.conn(source="127.0.0.2") as other:
        assert other.request("GET", "/.auth/login", [HTML]).status == 302
    assert samples(sc, "sidecar_sign_in_rate_limited_total")[""] >= 1
    assert "sign_in_rate_limited" in sc.output()


def test_every_sign_in_endpoint_counts_and_json_clients_get_json(start_native):
    sc, _ = start_native({"limits": {"sign_in_rate": "1/m", "sign_in_burst": 3}})
    with sc.conn() as c:
        assert c.request("GET", "/.auth/native/nonce", JSON_HEADERS).status == 200
        assert c.request("GET", "/.auth/login", [HTML]).status == 302
        assert c.request("POST", "/.auth/native/refresh", JSON_HEADERS).status == 401
        r = c.request("GET", "/.auth/native/nonce", JSON_HEADERS)
    assert r.status == 429, (r.status, r.body)
    assert r.json() == {"error": "rate_limited", "retry_after": int(r.header("Retry-After"))}
    assert 1 <= int(r.header("Retry-After")) <= 60
    # A refused POST's body is never read: the connection closes after the answer.
    with sc.conn() as c:
        r = c.request("POST", "/.auth/native", JSON_HEADERS, b'{"identityToken": "x"}')
        assert r.status == 429 and r.header("Connection") == "close"
    # Endpoints that neither store a key nor start a sign-in are not limited.
    assert sc.request("GET", "/.auth/me", [("Accept", "application/json")]).status == 401
    assert sc.request("GET", "/.auth/jwks.json").status == 404


def test_the_rate_holds_per_address_across_workers(start_auth_sidecar):
    """One set of buckets for the whole process: fresh connections (spread over the workers)
    share the address's burst."""
    sc, _ = start_auth_sidecar({"workers": 4, "limits": {"sign_in_rate": "1/m", "sign_in_burst": 3}})
    statuses = []
    for _ in range(12):
        with sc.conn() as c:
            statuses.append(c.request("GET", "/.auth/login", [HTML]).status)
    assert statuses.count(302) == 3 and statuses.count(429) == 9, statuses


def test_behind_a_trusted_proxy_the_forwarded_client_counts(start_auth_sidecar):
    sc, _ = start_auth_sidecar({"trusted_proxies": ["127.0.0.1/32"],
                                "limits": {"sign_in_rate": "1/m", "sign_in_burst": 2}})

    def login(xff, source=None):
        with sc.conn(source=source) as c:
            return c.request("GET", "/.auth/login", [HTML, ("X-Forwarded-For", xff)]).status
    assert [login("203.0.113.1") for _ in range(3)] == [302, 302, 429]
    assert login("203.0.113.2") == 302
    assert login("198.51.100.9, 203.0.113.1") == 429  # the entry the proxy added is the client
    # An untrusted peer's X-Forwarded-For is its own invention: the peer counts.
    assert [login("192.0.2.%d" % i, source="127.0.0.3") for i in range(3)] == [302, 302, 429]


def test_zero_disables_the_limit(start_auth_sidecar):
    sc, _ = start_auth_sidecar({"limits": {"sign_in_rate": 0}})
    with sc.conn() as c:
        assert all(c.request("GET", "/.auth/login", [HTML]).status == 302 for _ in range(250))


# -- single-use keys -------------------------------------------------------------------------
def test_a_cancelled_callback_stores_nothing(start_auth_sidecar, tmp_path):
    """Only a callback with a code or an id_token spends its login state: cancels (Apple's
    `error`) cost the store nothing, while the login cookie is still cleared."""
    store = tmp_path / "sidecar.store"
    sc, _ = start_auth_sidecar({"revocations": {"store": "file:%s" % store}})
    size = store.stat().st_size
    with sc.conn() as c:
        for _ in range(20):
            r = callback(c, mint_login(c), error="user_cancelled_authorize")
            assert r.status == 401, (r.status, r.body[:200])
            assert any("Max-Age=0" in v for v in r.header_all("Set-Cookie"))
        r = callback(c, mint_login(c))  # neither code nor id_token
        assert r.status == 400, (r.status, r.body[:200])
    assert store.stat().st_size == size, "an error callback wrote to the store"
    assert sum(samples(sc, "sidecar_store_single_use_keys").values()) == 0
    with sc.conn() as c:
        assert callback(c, mint_login(c), code="not-a-real-code").status == 502  # spent, then Apple refuses
    assert store.stat().st_size > size


def test_a_flood_of_login_states_never_lets_a_spent_native_nonce_be_replayed(start_native, browser):
    """With room for 20 keys of each kind, 60 spent login states overflow their own kind
    only: the nonce spent before the flood is still refused, a forgotten login state is
    refused (503) rather than exchanged again, and new sign-ins work. (States as old as the
    forgotten ones — expiries count in seconds — are refused too: 503 within the flood.)"""
    sc, apple = start_native({"revocations": {"max_single_use_keys": 20}, "limits": {"sign_in_rate": 0}})
    nonce = new_nonce(sc)
    r = post_native(sc, body_of(device(apple, nonce=nonce), nonce=nonce))
    assert r.status == 200, (r.status, r.body)

    logins = []
    with sc.conn() as c:
        for _ in range(60):
            logins.append(mint_login(c))
            assert callback(c, logins[-1], code="flood").status in (502, 503)
    assert samples(sc, "sidecar_store_single_use_keys")['{kind="login_state"}'] <= 20
    assert samples(sc, "sidecar_store_claim_overflows_total")['{kind="login_state"}'] >= 1
    assert samples(sc, "sidecar_store_single_use_keys")['{kind="native_nonce"}'] == 1

    r = post_native(sc, body_of(device(apple, nonce=nonce), nonce=nonce))
    assert r.status == 401 and r.json() == {"error": "nonce_replayed"}, (r.status, r.body)

    exchanges = len(apple.control("GET", "/emulator/token-requests").json())
    with sc.conn() as c:
        r = callback(c, logins[0], code="flood")  # forgotten for room: refused, Apple not asked
    assert r.status == 503, (r.status, r.body[:200])
    assert len(apple.control("GET", "/emulator/token-requests").json()) == exchanges

    other = new_nonce(sc)
    assert post_native(sc, body_of(device(apple, nonce=other), nonce=other)).status == 200
    time.sleep(1.1)  # a login state newer than the flood's (tiny) table reaches
    assert browser(sc, apple).login()[0].status == 303


def test_concurrent_floods_from_many_addresses_keep_sign_ins_working(start_auth_sidecar, browser):
    """Several clients flooding at once, each within its own bucket: the login-state table
    stays bounded and a real user still signs in."""
    sc, apple = start_auth_sidecar({"revocations": {"max_single_use_keys": 50},
                                    "limits": {"sign_in_rate": "1/m", "sign_in_burst": 40}})
    refused = []

    def flood(source):
        with sc.conn(source=source) as c:
            for _ in range(60):
                r = c.request("GET", "/.auth/login", [HTML])
                if r.status == 429:
                    refused.append(source)
                    return
                cookie, state = ("Cookie", r.header_all("Set-Cookie")[-1].split(";")[0]), \
                    parse_qs(urlsplit(r.header("Location")).query)["state"][0]
                r = callback(c, (cookie, state), code="flood")
                if r.status == 429:
                    refused.append(source)
                    return
    threads = [threading.Thread(target=flood, args=("127.0.1.%d" % i,)) for i in range(1, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(refused) == ["127.0.1.%d" % i for i in range(1, 5)]
    assert samples(sc, "sidecar_store_single_use_keys")['{kind="login_state"}'] <= 50
    time.sleep(1.1)  # see the test above
    assert browser(sc, apple).login()[0].status == 303
