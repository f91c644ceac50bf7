"""Red-team attacks on the trust boundary (SPEC §4.2, §4.3, §5, §6), against the real binary.

The upstream trusts the injected identity headers, so a client must never forge them, reach
the upstream with a credential meant for the sidecar, smuggle a request past the sidecar,
obtain a session it should not have, or be redirected off-site. Each test is one attack
class and asserts the safe behaviour the SPEC demands; attacks already covered elsewhere
(test_framing, test_proxy, test_auth_*) are not repeated here.
"""
import pytest

HTML = ("Accept", "text/html,application/xhtml+xml")


def seen(echo, name):
    return [v for n, v in echo["headers"] if n.lower().replace("_", "-") == name.lower()]


@pytest.fixture
def signed_in(start_auth_sidecar, browser):
    sc, apple = start_auth_sidecar()
    b = browser(sc, apple)
    assert b.login()[0].status == 303
    return sc, apple, b


def second_session(sc, apple, browser):
    b = browser(sc, apple)
    assert b.login(email="john.appleseed@example.com")[0].status == 303
    return b.session_cookie[1]


# -- credentials meant for the sidecar never reach the upstream ------------------------------
def test_no_copy_of_a_session_bearer_token_reaches_the_upstream(signed_in, browser):
    """SPEC §4.3: "A bearer session token is removed from the forwarded request". Repeating
    the Authorization field (same token, or a second user's token) must not smuggle one
    through; a foreign token next to it still passes unchanged."""
    sc, apple, b = signed_in
    _, token = b.session_cookie
    other = second_session(sc, apple, browser)
    for extra in (token, other):
        e = sc.request("GET", "/api/x", [("Authorization", "Bearer " + token),
                                         ("Authorization", "Bearer " + extra),
                                         ("Authorization", "Bearer upstream-token")]).json()
        assert seen(e, "Authorization") == ["Bearer upstream-token"], e["headers"]
        assert seen(e, "X-Auth-Email") == ["maria.ruiz@example.com"]


# -- resource exhaustion -----------------------------------------------------------------------
def cpu_ticks(sc):
    return sum(sc.thread_cpu_ticks().values())


def test_a_flood_of_abandoned_logins_costs_constant_time_and_keeps_replay_protection(
        start_auth_sidecar, browser):
    """Anyone can mint login states (/login, then a cancelled callback): the memory of used
    states must not make every later callback scan all of them (that cost grew with each
    one, under one lock shared by every worker), and a recent state still cannot be replayed."""
    import threading
    from urllib.parse import parse_qs, urlencode, urlsplit
    sc, apple = start_auth_sidecar()
    form = ("Content-Type", "application/x-www-form-urlencoded")

    def in_parallel(items, each):
        def run(part):
            with sc.conn() as c:
                for item in part:
                    each(c, item)
        threads = [threading.Thread(target=run, args=(items[i::4],)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def mint(n):
        minted = []

        def login(c, _):
            r = c.request("GET", "/.auth/login", [HTML])
            state = parse_qs(urlsplit(r.header("Location")).query)["state"][0]
            minted.append((("Cookie", r.header_all("Set-Cookie")[-1].split(";")[0]),
                           urlencode({"state": state, "error": "user_cancelled_authorize"}).encode()))
        in_parallel(range(n), login)
        return minted

    def cancel(c, login):
        assert c.request("POST", "/.auth/callback", [HTML, login[0], form], login[1]).status == 401

    def callback_ticks(logins):
        before = cpu_ticks(sc)
        in_parallel(logins, cancel)
        return cpu_ticks(sc) - before

    early = callback_ticks(mint(2000))
    in_parallel(mint(8000), cancel)
    late = callback_ticks(mint(2000))
    assert late < 1.5 * early + 10, "callbacks got slower with every used state: %d vs %d ticks" % (late, early)
    with sc.conn() as c:
        login = mint(1)[0]
        cancel(c, login)
        r = c.request("POST", "/.auth/callback", [HTML, login[0], form], login[1])
        assert r.status == 400, (r.status, r.body[:200])  # state_replayed
    assert browser(sc, apple).login()[0].status == 303
