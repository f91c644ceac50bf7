"""Logs that join up (the operations section of the README): every line a request writes
carries its request_id, and the access line of one of the sidecar's own endpoints names the
user it acted for."""

from conftest import log_entries as entries, poll

HTML = ("Accept", "text/html,application/xhtml+xml")



def test_a_sign_in_and_a_logout_join_their_access_lines(start_auth_sidecar, browser):
    sc, apple = start_auth_sidecar()
    b = browser(sc, apple)
    _, location = b.start_login()
    fields, _ = b.authorize(location)
    assert b.callback(fields, headers=(HTML, ("X-Request-Id", "cb-1"))).status == 303
    assert b.request("POST", "/.auth/logout", [HTML, ("X-Request-Id", "out-1")]).status == 200

    def lines_of(request_id):
        return [e for e in entries(sc) if e.get("request_id") == request_id]

    def both():
        return all(any(e["msg"] == "request" for e in lines_of(i)) for i in ("cb-1", "out-1"))
    assert poll(both), sc.output()
    signed_in = [e for e in lines_of("cb-1") if e["msg"] == "login succeeded"]
    assert len(signed_in) == 1, lines_of("cb-1")
    access = next(e for e in lines_of("cb-1") if e["msg"] == "request")
    assert access["user_id"] == signed_in[0]["sub"], access
    logout = [e for e in lines_of("out-1") if e["msg"] == "logout"]
    assert len(logout) == 1 and logout[0]["sub"] == signed_in[0]["sub"], lines_of("out-1")
    assert next(e for e in lines_of("out-1") if e["msg"] == "request")["user_id"] == signed_in[0]["sub"]
    # A login start is a line of its request too.
    starts = [e for e in entries(sc) if e["msg"] == "login started"]
    assert starts and all(e.get("request_id") for e in starts), starts
