"""Operations end to end: admin endpoints, signals, exit codes and config errors."""
import re
import signal
import socket
import subprocess
import time

import pytest

import rawhttp
from conftest import free_port, merge, sidecar_binary, to_yaml, poll


def run_once(args, timeout=15):
    """Runs the binary to completion; returns (exit code, stdout + stderr)."""
    p = subprocess.run([str(sidecar_binary())] + args, capture_output=True, timeout=timeout,
                       stdin=subprocess.DEVNULL)
    return p.returncode, (p.stdout + p.stderr).decode(errors="replace")



def test_healthz_and_readyz(sidecar):
    assert sidecar.admin("/healthz").status == 200
    assert sidecar.request("GET", "/echo").status == 200
    ready = poll(lambda: sidecar.admin("/readyz").status == 200)
    assert ready, "/readyz never became 200 with upstream up and Apple keys served"


def test_readyz_is_503_while_upstream_is_unreachable(start_sidecar):
    sc = start_sidecar({"upstream": "http://127.0.0.1:%d" % free_port()})
    assert sc.admin("/healthz").status == 200
    assert sc.request("GET", "/echo").status == 502
    assert sc.admin("/readyz").status == 503


def test_metrics_are_prometheus_text(sidecar):
    assert sidecar.request("GET", "/echo").status == 200
    r = sidecar.admin("/metrics")
    assert r.status == 200
    assert (r.header("Content-Type") or "").startswith("text/plain")
    assert b"# TYPE " in r.body


def test_access_log_is_one_json_line_per_request_without_secrets(sidecar):
    import json
    r = sidecar.request("GET", "/echo/logged?code=QUERYSECRET789", [
        ("Cookie", "s=COOKIESECRET123"), ("Authorization", "Bearer TOKENSECRET456"),
        ("X-Request-Id", "rid-logged-1")])
    assert r.status == 200

    def line():
        for l in sidecar.output().splitlines():
            if "rid-logged-1" in l:
                return json.loads(l)
    entry = poll(line)
    assert entry, "no access-log line for the request:\n" + sidecar.output()
    values = set(map(str, entry.values()))
    assert {"GET", "200", "rid-logged-1"} <= values, entry
    assert any(v.startswith("/echo/logged") for v in values), entry
    out = sidecar.output()
    for secret in ("COOKIESECRET123", "TOKENSECRET456", "QUERYSECRET789"):
        assert secret not in out, "%s was logged" % secret


def test_admin_endpoints_are_not_on_the_public_port(sidecar, upstream):
    e = sidecar.request("GET", "/healthz").json()  # forwarded: everything is public
    assert e["target"] == "/healthz"


def test_sigterm_finishes_in_flight_request_then_exits_0(sidecar, upstream):
    with sidecar.conn(timeout=10) as c:
        # In flight for 4 s: longer than the 3 s the listener is given to close below.
        c.send(rawhttp.build_request("GET", "/slow?delay=4"))
        stats = upstream.wait_for(lambda s: s["requests"] >= 1)
        assert stats["requests"] == 1
        sidecar.signal(signal.SIGTERM)

        def refused():
            try:
                socket.create_connection(("127.0.0.1", sidecar.port), timeout=0.5).close()
                return False
            except OSError:
                return True
        # The listener closes at once: 3 s covers a loaded 2-core machine.
        assert poll(refused, 3.0), "still accepting connections after SIGTERM"
        r = c.read_response()
        assert r.status == 200 and r.body == b"slow done"
    assert sidecar.wait_exit(10) == 0, sidecar.log_tail()


def test_sigint_exits_0(sidecar):
    sidecar.signal(signal.SIGINT)
    assert sidecar.wait_exit(10) == 0, sidecar.log_tail()


@pytest.mark.parametrize("round_", range(6))
def test_shutdown_with_several_workers_never_hangs(start_sidecar, round_):
    # Workers finishing together coalesce their "done" notifications on one eventfd; each one
    # must still be counted, or the process waits forever after "shutting down".
    sc = start_sidecar({"workers": 4})
    assert sc.request("GET", "/echo").status == 200
    sc.signal(signal.SIGTERM)
    assert sc.wait_exit(10) == 0, sc.log_tail()


def test_sighup_reloads_config_without_dropping_connections(sidecar):
    with sidecar.conn() as c:
        e = c.request("GET", "/echo", [("X-Reload-Test", "1")]).json()
        assert [n for n, _ in e["headers"] if n == "X-Reload-Test"]
        sidecar.config_path.write_text(
            to_yaml(merge(sidecar.config, {"headers": {"strip": ["X-Reload-Test"]}})) + "\n")
        sidecar.proc.send_signal(signal.SIGHUP)

        def reloaded():
            e = sidecar.request("GET", "/echo", [("X-Reload-Test", "1")]).json()
            return not [n for n, _ in e["headers"] if n == "X-Reload-Test"]
        assert poll(reloaded), "SIGHUP did not apply the new config"
        assert c.request("GET", "/echo").status == 200, "keep-alive connection dropped"
    assert sidecar.proc.poll() is None


def test_sighup_with_bad_config_keeps_the_old_one(sidecar):
    with sidecar.conn() as c:
        assert c.request("GET", "/echo").status == 200
        sidecar.config_path.write_text(sidecar.config_path.read_text() + "upstreem: x\n")
        sidecar.proc.send_signal(signal.SIGHUP)
        assert poll(lambda: "upstreem" in sidecar.output()), "reload failure not logged"
        assert sidecar.proc.poll() is None, "a bad reload stopped the sidecar"
        assert c.request("GET", "/echo").status == 200
    assert sidecar.request("GET", "/echo").status == 200


@pytest.mark.parametrize("which", ["listen", "admin"])
def test_port_in_use_exits_2_with_a_clear_message(base_config, tmp_path, which):
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen()
    busy = blocker.getsockname()[1]
    try:
        port, admin = (busy, free_port()) if which == "listen" else (free_port(), busy)
        path = tmp_path / "sidecar.yaml"
        path.write_text(to_yaml(base_config(port, admin)) + "\n")
        code, out = run_once(["run", "--config", str(path)])
    finally:
        blocker.close()
    assert code == 2, out
    assert str(busy) in out, out


def write_config(tmp_path, base_config, edit):
    lines = to_yaml(base_config(free_port(), free_port())).split("\n")
    lines = edit(lines)
    path = tmp_path / "sidecar.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_unknown_key_exits_1_naming_file_line_and_column(base_config, tmp_path):
    path = write_config(tmp_path, base_config, lambda ls: ls[:2] + ["upstreem: x"] + ls[2:])
    code, out = run_once(["run", "--config", str(path)])
    assert code == 1, out
    assert "sidecar.yaml:3:1" in out, out
    assert "upstreem" in out, out


def test_bad_value_exits_1_naming_key_and_line(base_config, tmp_path):
    path = write_config(tmp_path, base_config,
                        lambda ls: ls + ["limits:", "  max_header_bytes: lots"])
    line = len(path.read_text().splitlines())
    code, out = run_once(["run", "--config", str(path)])
    assert code == 1, out
    assert "sidecar.yaml:%d:" % line in out, out
    assert "max_header_bytes" in out, out


def test_yaml_syntax_error_exits_1_naming_line(base_config, tmp_path):
    path = write_config(tmp_path, base_config, lambda ls: ls + ["trusted_proxies: [unclosed"])
    code, out = run_once(["run", "--config", str(path)])
    assert code == 1, out
    assert "sidecar.yaml:" in out, out


def test_missing_required_key_exits_1_naming_it(base_config, tmp_path):
    path = write_config(tmp_path, base_config,
                        lambda ls: [l for l in ls if not l.startswith("upstream:")])
    code, out = run_once(["run", "--config", str(path)])
    assert code == 1, out
    assert "upstream" in out, out


def test_plain_http_public_url_on_a_public_host_exits_1(base_config, tmp_path):
    path = write_config(tmp_path, base_config, lambda ls: [
        'public_url: "http://app.example.com"' if l.startswith("public_url:") else l
        for l in ls])
    code, out = run_once(["run", "--config", str(path)])
    assert code == 1, out
    assert "public_url" in out, out


def test_plain_http_apple_base_url_is_warned_about(base_config, tmp_path):
    path = write_config(tmp_path, base_config, lambda ls: ls)
    code, out = run_once(["check", "--config", str(path)])
    assert code == 0, out
    assert "apple.base_url" in out and "plain http" in out, out


def test_missing_config_file_exits_1(tmp_path):
    missing = tmp_path / "nope.yaml"
    code, out = run_once(["run", "--config", str(missing)])
    assert code == 1, out
    assert "nope.yaml" in out, out


def test_root_command_accepts_config_and_serves(start_sidecar):
    sc = start_sidecar(args=["--config", "{config}"])
    assert sc.request("GET", "/echo").status == 200


def test_help_on_run(tmp_path):
    code, out = run_once(["run", "--help"])
    assert code == 0 and "--config" in out, out


@pytest.mark.parametrize("command", [[], ["run"], ["check"], ["demo"], ["emulator"], ["secret"]])
def test_help_wraps_cleanly_and_stands_alone(command):
    """The help is all an installed binary carries: no line wider than a terminal's 80
    columns (ArgumentParser re-wraps longer ones mid-phrase) and no reference to documents
    a user does not have."""
    done = subprocess.run([str(sidecar_binary())] + command + ["--help"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    # The USAGE line is ArgumentParser's own synopsis of the options, one line by design.
    wide = [line for line in done.stdout.splitlines() if len(line) > 80 and not line.startswith("USAGE:")]
    assert wide == [], wide
    assert "SPEC" not in done.stdout and "../shared" not in done.stdout, done.stdout


def test_check_summary_names_who_may_sign_in_what_is_public_and_the_notification_url(base_config, tmp_path):
    config = base_config(free_port(), free_port())
    config["access"] = {"allowed_emails": ["maria@example.com"], "allowed_email_domains": ["corp.example"],
                        "public_paths": ["/pub/**", "/healthz"], "api_paths": ["/api/**"]}
    path = tmp_path / "sidecar.yaml"
    path.write_text(to_yaml(config) + "\n")
    code, out = run_once(["check", "--config", str(path)])
    assert code == 0, out
    rows = dict(re.findall(r"^  (\S+(?: paths)?)\s{2,}(.*)$", out, re.M))
    assert rows["access"] == "emails maria@example.com; domains corp.example", rows
    assert rows["public paths"] == "/pub/**, /healthz" and rows["api paths"] == "/api/**", rows
    assert rows["notifications"] == config["public_url"] + "/.auth/apple/notifications (register at Apple)", rows
