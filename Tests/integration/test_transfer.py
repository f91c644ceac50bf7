"""Moving the app to another team (TN3159) end to end: `sidecar transfer export` on the sending
team's configuration, the app transferred in the emulator, `sidecar transfer import` on the
recipient's — a thousand users, the export killed and Apple failing mid-way, each run resumed
from its progress file."""
import hashlib
import os
import signal
import subprocess
import time

from conftest import free_port, merge, poll, sidecar_binary, to_yaml

RECIPIENT = "NEWTEAM123"
SENDER = "TEAM123456"


def subject(team, email):
    """The emulator's sub of a user at a team (AppleIdentifiers.subject)."""
    digest = hashlib.sha256(("sub\0%s\0%s" % (team, email.lower())).encode()).digest()
    head = ((digest[0] << 8) | digest[1]) % 1000
    tail = ((digest[18] << 8) | digest[19]) % 10000
    return "000%03d.%s.%04d" % (head, digest[2:18].hex(), tail)


def relay(team, email):
    digest = hashlib.sha256(("relay\0%s\0%s" % (team, email.lower())).encode()).digest()
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    return "".join(alphabet[b % len(alphabet)] for b in digest[:10]) + "@privaterelay.appleid.com"


def write_config(tmp_path, base_config, apple, team, name):
    config = merge(base_config(free_port(), free_port()), {"apple": {"base_url": apple.issuer, "team_id": team}})
    path = tmp_path / name
    path.write_text(to_yaml(config) + "\n")
    return path


def transfer(args, config, stdin, progress, extra=()):
    return subprocess.Popen(
        [str(sidecar_binary()), "transfer"] + args + ["--config", str(config), "--progress", str(progress)]
        + list(extra), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finish(proc, stdin, timeout=120):
    out, err = proc.communicate(stdin, timeout=timeout)
    return proc.returncode, out.decode(), err.decode()


def answered(progress):
    """Users the progress file holds (its header is the first line)."""
    try:
        return max(0, progress.read_bytes().count(b"\n") - 1)
    except FileNotFoundError:
        return 0


def test_a_thousand_users_move_to_another_team_through_a_crash_and_an_apple_outage(
        start_emulator, base_config, tmp_path):
    apple = start_emulator(["http://127.0.0.1:1/.auth/callback"])
    emails = ["user%04d@example.com" % i for i in range(1000)]
    users = [{"email": e, "hideMyEmail": i % 3 == 0} for i, e in enumerate(emails)]
    assert apple.control("POST", "/emulator/users", users).status == 200
    sending = write_config(tmp_path, base_config, apple, SENDER, "sending.yaml")
    receiving = write_config(tmp_path, base_config, apple, RECIPIENT, "receiving.yaml")
    subs = [subject(SENDER, e) for e in emails]
    stdin = ("# the app's users\n" + "\n".join(subs) + "\n").encode()
    progress = tmp_path / "export.progress"
    export = ["export", "--recipient-team", RECIPIENT]
    # 200 calls a second: the run lasts about five seconds, room to interrupt it.
    pace = ["--rate", "200", "--batch", "25", "--retries", "1"]

    # 1. Killed (as by a crash) a third of the way: nothing on standard output, progress kept.
    first = transfer(export, sending, stdin, progress, pace)
    first.stdin.write(stdin)
    first.stdin.close()
    assert poll(lambda: answered(progress) >= 300, timeout=60, step=0.01), first.stderr.read()
    first.send_signal(signal.SIGKILL)
    first.wait(10)
    assert first.stdout.read() == b""
    kept = answered(progress)
    assert 300 <= kept < 1000, kept

    # 2. Resumed, then Apple fails (HTTP 500) past the retries: exit 2, resumable, said so.
    second = transfer(export, sending, stdin, progress, pace)
    second.stdin.write(stdin)
    second.stdin.close()
    assert poll(lambda: answered(progress) >= kept + 200, timeout=60, step=0.01)
    apple.arm("http_500", "http_500")
    second.wait(60)
    err = second.stderr.read().decode()
    assert second.returncode == 2, (second.returncode, err)
    assert "run the same command again to resume" in err and "apple_server_error_500" in err, err
    assert second.stdout.read() == b""
    stopped_at = answered(progress)
    assert kept + 200 <= stopped_at < 1000

    # 3. Resumed once more, with five users Apple does not know: every user answered once.
    unknown = [subject(SENDER, "stranger%d@example.com" % i) for i in range(5)]
    code, out, err = finish(transfer(export, sending, None, progress, pace),
                            stdin + ("\n".join(unknown) + "\n").encode())
    assert code == 3, (code, err)  # some refused by Apple
    assert "1005 users, 1000 answered, 5 refused by Apple" in err, err
    rows = out.splitlines()
    assert rows[0] == "sub,transfer_sub,error"
    table = {r.split(",")[0]: r.split(",") for r in rows[1:]}
    assert len(rows) == 1006 and len(table) == 1005
    for sub in subs:
        assert table[sub][1] and table[sub][2] == "", table[sub]
    for sub in unknown:
        assert table[sub][1:] == ["", "invalid_request"], table[sub]
    assert len({table[s][1] for s in subs}) == 1000, "one transfer_sub per user"
    # Run again: answered from the progress file alone, the same CSV.
    assert finish(transfer(export, sending, None, progress, pace), stdin + ("\n".join(unknown) + "\n").encode())[1] == out

    # Before the transfer the recipient's exchange is refused: nothing is recorded for it.
    import_progress = tmp_path / "import.progress"
    early = finish(transfer(["import"], receiving, None, import_progress, pace), out.encode())
    assert early[0] == 2 and "Apple refused the access token (invalid_client" in early[2], early

    assert apple.control("POST", "/emulator/transfer", {"client_id": "com.example.web", "team_id": RECIPIENT}).status == 200
    code, mapped, err = finish(transfer(["import"], receiving, None, import_progress,
                                        ["--rate", "1000", "--batch", "100"]), out.encode())
    assert code == 0, (code, err)
    rows = mapped.splitlines()
    assert rows[0] == "old_sub,new_sub,email,is_private_email,error"
    mapping = {r.split(",")[0]: r.split(",") for r in rows[1:]}
    assert len(mapping) == 1000, "the refused users have no transfer_sub to exchange"
    for i, email in enumerate(emails):
        old, new, address, private, error = mapping[subject(SENDER, email)]
        assert new == subject(RECIPIENT, email) and error == ""
        if i % 3 == 0:
            assert (address, private) == (relay(RECIPIENT, email), "true")
        else:
            assert (address, private) == ("", "false")


def test_a_progress_file_of_another_job_is_refused_and_bad_input_names_its_line(
        start_emulator, base_config, tmp_path):
    apple = start_emulator(["http://127.0.0.1:1/.auth/callback"])
    sending = write_config(tmp_path, base_config, apple, SENDER, "sending.yaml")
    progress = tmp_path / "p"
    sub = subject(SENDER, "maria.ruiz@example.com")
    code, out, err = finish(transfer(["export", "--recipient-team", RECIPIENT], sending, None, progress), sub.encode())
    assert code == 0, err
    code, _, err = finish(transfer(["export", "--recipient-team", "OTHERTEAM1"], sending, None, progress), sub.encode())
    assert code == 2 and "progress file of another job" in err, err
    code, _, err = finish(transfer(["export", "--recipient-team", RECIPIENT], sending, None, tmp_path / "q"),
                          (sub + "\nnot,a,sub\n").encode())
    assert code == 1 and "line 2" in err, err
    code, _, err = finish(transfer(["export", "--recipient-team", "lower"], sending, None, tmp_path / "r"), b"")
    assert code == 1 and "--recipient-team" in err, err
    # A torn last line (a crash in the middle of an append) is dropped, not read.
    torn = tmp_path / "torn"
    torn.write_bytes(progress.read_bytes() + b"0001.half")
    code, again, err = finish(transfer(["export", "--recipient-team", RECIPIENT], sending, None, torn), sub.encode())
    assert code == 0 and again == out, err
    assert torn.read_bytes() == progress.read_bytes()
