"""Every claim the app may need, named as the operator likes: real_user_status, auth_time,
the session's start, and after an app transfer transfer_sub and the app's previous user id —
each header renamed or turned off (`none`), every client copy of each removed in every spelling,
and the signed assertion carrying the same claims. Against the real binary and the emulator."""
import base64
import json

from conftest import free_port, merge, seen
from native_support import BUNDLE, bearer, body_of, device, post_native
from test_transfer import RECIPIENT, SENDER, subject

FORGED = [("X-Auth-Real-User-Status", "2"), ("X-Auth-Transfer-Sub", "forged"), ("X_Auth_Previous_User_Id", "admin"),
          ("X-Auth-Auth-Time", "1"), ("X-Auth-Session-Issued-At", "1"), ("X-Auth-Email", "forged@evil.example"),
          ("x-session-start", "1")]


def transfer_sub(email):
    """The emulator's transfer identifier of a user moving from SENDER to RECIPIENT: what
    `sidecar transfer export` lists beside the old sub, and id_tokens carry for 60 days."""
    return subject("transfer\0%s\0%s" % (SENDER, RECIPIENT), email)


def claims(jwt):
    payload = jwt.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def test_native_first_sign_in_forwards_real_user_status_and_renamed_or_dropped_headers(start_sidecar, start_emulator):
    port = free_port()
    apple = start_emulator(["http://127.0.0.1:%d/.auth/callback" % port], extra_args=["--client", BUNDLE])
    sc = start_sidecar({"apple": {"base_url": apple.issuer, "native_audiences": [BUNDLE]},
                        "access": {"public_paths": ["/pub/**"]}, "assertion": {"enabled": True},
                        "headers": {"auth_time": "X-Auth-Auth-Time", "session_issued_at": "X-Session-Start",
                                    "email": "none", "real_user_status": "X-Real-User"}}, port=port)
    first = post_native(sc, body_of(device(apple, email="maria.ruiz@example.com"))).json()
    echo = sc.request("GET", "/api/x", bearer(first["token"]) + FORGED).json()
    assert seen(echo, "X-Real-User") == ["2"], "Apple sends real_user_status at a native first sign-in"
    auth_time = seen(echo, "X-Auth-Auth-Time")
    started = seen(echo, "X-Session-Start")
    assert len(auth_time) == 1 and auth_time[0].isdigit() and int(auth_time[0]) > 1_700_000_000, echo
    assert len(started) == 1 and int(started[0]) >= int(auth_time[0])
    # email: none — not sent, and the default name a client forged is removed all the same.
    assert seen(echo, "X-Auth-Email") == []
    # Renamed: the default names clients forged are removed too; nothing of the forgery passes.
    for name in ("X-Auth-Real-User-Status", "X-Auth-Transfer-Sub", "X-Auth-Previous-User-Id", "X-Auth-Session-Issued-At"):
        assert seen(echo, name) == [], (name, echo["headers"])
    asserted = claims(seen(echo, "X-Auth-Assertion")[0])
    assert asserted["real_user_status"] == 2 and asserted["auth_time"] == int(auth_time[0])
    assert asserted["session_issued_at"] == int(started[0]) and asserted["is_private_email"] is False
    assert "transfer_sub" not in asserted

    # A second sign-in of the same user: Apple says nothing of the user's realness, nor does the header.
    again = post_native(sc, body_of(device(apple, email="maria.ruiz@example.com"))).json()
    echo = sc.request("GET", "/api/x", bearer(again["token"]) + FORGED).json()
    assert seen(echo, "X-Real-User") == [] and seen(echo, "X-Auth-Real-User-Status") == []
    assert "real_user_status" not in claims(seen(echo, "X-Auth-Assertion")[0])


def test_defaults_add_nothing_to_a_web_session_and_forgeries_are_removed(start_auth_sidecar, browser):
    sc, apple = start_auth_sidecar()
    user = browser(sc, apple)
    assert user.login()[0].status == 303
    echo = user.request("GET", "/private", FORGED).json()
    for name in ("X-Auth-Real-User-Status", "X-Auth-Transfer-Sub", "X-Auth-Previous-User-Id", "X-Auth-Auth-Time",
                 "X-Auth-Session-Issued-At"):
        assert seen(echo, name) == [], (name, echo["headers"])
    assert seen(echo, "X-Auth-Email") == ["maria.ruiz@example.com"]


def test_after_an_app_transfer_the_old_sub_and_the_apps_previous_id_are_forwarded(
        start_sidecar, start_emulator, browser, tmp_path):
    port = free_port()
    apple = start_emulator(["http://127.0.0.1:%d/.auth/callback" % port])
    email = "maria.ruiz@example.com"
    new_sub = subject(RECIPIENT, email)
    assert apple.control("POST", "/emulator/transfer", {"client_id": "com.example.web", "team_id": RECIPIENT}).status == 200
    mapping = tmp_path / "mapping.csv"
    mapping.write_text("old_sub,new_sub,email,is_private_email,error\nlegacy-4711,%s,,false,\n" % new_sub)
    sc = start_sidecar({"apple": {"base_url": apple.issuer, "team_id": RECIPIENT, "transfer": {"mapping_file": str(mapping)}},
                        "access": {"public_paths": ["/pub/**"]}, "assertion": {"enabled": True}}, port=port)
    user = browser(sc, apple)
    assert user.login(email=email)[0].status == 303
    echo = user.request("GET", "/private", FORGED).json()
    assert seen(echo, "X-Auth-User-Id") == [new_sub]
    assert seen(echo, "X-Auth-Transfer-Sub") == [transfer_sub(email)], "the id_token's transfer_sub, as exported"
    assert seen(echo, "X-Auth-Previous-User-Id") == ["legacy-4711"]
    asserted = claims(seen(echo, "X-Auth-Assertion")[0])
    assert asserted["transfer_sub"] == transfer_sub(email) and asserted["previous_user_id"] == "legacy-4711"
    # A user the mapping does not name gets the transfer_sub only.
    other = browser(sc, apple)
    assert other.login(email="omar@example.com")[0].status == 303
    echo = other.request("GET", "/private", FORGED).json()
    assert seen(echo, "X-Auth-Transfer-Sub") == [transfer_sub("omar@example.com")]
    assert seen(echo, "X-Auth-Previous-User-Id") == []


def test_sixty_days_after_a_transfer_tokens_carry_no_transfer_sub_and_none_is_forwarded(
        start_sidecar, start_emulator, browser):
    port = free_port()
    apple = start_emulator(["http://127.0.0.1:%d/.auth/callback" % port])
    email = "maria.ruiz@example.com"
    assert apple.control("POST", "/emulator/transfer", {"client_id": "com.example.web", "team_id": RECIPIENT}).status == 200
    sc = start_sidecar({"apple": {"base_url": apple.issuer, "team_id": RECIPIENT},
                        "access": {"public_paths": ["/pub/**"]}, "assertion": {"enabled": True}}, port=port)
    # Day 59 (the emulator's control API moves the transfer into the past; tokens keep the
    # real clock): still inside the window.
    r = apple.control("POST", "/emulator/transfer/age", {"client_id": "com.example.web", "days": 59})
    assert r.status == 200, r.body
    early = browser(sc, apple)
    assert early.login(email=email)[0].status == 303
    assert seen(early.request("GET", "/private", FORGED).json(), "X-Auth-Transfer-Sub") == [transfer_sub(email)]
    # Day 60: the window closed. A token minted now has no transfer_sub, and the sidecar
    # forwards none (the client's forged copies still never pass).
    assert apple.control("POST", "/emulator/transfer/age", {"client_id": "com.example.web", "days": 1}).status == 200
    late = browser(sc, apple)
    assert late.login(email=email)[0].status == 303
    echo = late.request("GET", "/private", FORGED).json()
    assert seen(echo, "X-Auth-User-Id") == [subject(RECIPIENT, email)], "still the recipient team's sub"
    assert seen(echo, "X-Auth-Transfer-Sub") == [], echo["headers"]
    assert "transfer_sub" not in claims(seen(echo, "X-Auth-Assertion")[0])
    token_requests = apple.control("GET", "/emulator/token-requests").json()
    assert token_requests and token_requests[-1]["client_authenticated"], "the id_token came from a real exchange"
    # The session signed in on day 59 keeps what its id_token said, until it expires.
    assert seen(early.request("GET", "/private", FORGED).json(), "X-Auth-Transfer-Sub") == [transfer_sub(email)]


def test_a_bad_mapping_file_is_refused_at_start_naming_its_line(start_sidecar, tmp_path):
    mapping = tmp_path / "mapping.csv"
    mapping.write_text("old_sub,new_sub\nlegacy 1,000111.aa.0001\n")
    sc = start_sidecar({"apple": {"transfer": {"mapping_file": str(mapping)}}}, ready=False)
    assert sc.wait_exit(15) == 1, sc.output()
    sc.stopped = True  # the exit is the point
    assert "apple.transfer.mapping_file" in sc.output() and "line 2" in sc.output(), sc.output()
