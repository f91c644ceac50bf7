"""Configuration from SIDECAR_* variables, end to end: the real binary, real sockets."""
import base64
import os
import signal
import subprocess

import rawhttp
from conftest import free_port, poll, sidecar_binary, to_yaml

HTML = ("Accept", "text/html")


def check(path, env):
    proc = subprocess.run([str(sidecar_binary()), "check", "--config", str(path)],
                          env={**os.environ, **env}, capture_output=True, text=True, timeout=30)
    return proc.returncode, proc.stdout, proc.stderr


def big_head_status(sc):
    resp, _ = rawhttp.send_raw(sc.port, rawhttp.build_request("GET", "/echo", [("X-Big", "a" * 2000)]), wait_close=False)
    return resp.status if resp is not None else None


def test_a_limit_from_the_environment_applies(start_sidecar, upstream):
    plain = start_sidecar()
    assert big_head_status(plain) == 200
    limited = start_sidecar(env={"SIDECAR_LIMITS_MAX_HEADER_BYTES": "1KiB"})
    assert limited.request("GET", "/echo", [("X-Pad", "a" * 600)]).status == 200
    assert big_head_status(limited) == 431


def test_the_environment_overrides_the_files_public_paths_and_survives_a_reload(start_sidecar):
    sc = start_sidecar({"access": {"public_paths": ["/**"]}},
                       env={"SIDECAR_ACCESS_PUBLIC_PATHS": "/pub/**, /health"})
    assert sc.request("GET", "/pub/page", [HTML]).status == 200
    assert sc.request("GET", "/health", [HTML]).status == 200
    assert sc.request("GET", "/private", [HTML]).status == 302

    # The reload reads the file again and lays the same variables over it.
    sc.config_path.write_text(sc.config_path.read_text() + "preserve_host: true\n")
    sc.proc.send_signal(signal.SIGHUP)
    assert poll(lambda: "configuration reloaded" in sc.output()), sc.output()
    assert sc.request("GET", "/pub/page", [HTML]).status == 200
    assert sc.request("GET", "/private", [HTML]).status == 302


def test_a_bad_value_names_the_variable(start_sidecar):
    sc = start_sidecar(env={"SIDECAR_SESSION_LIFETIME": "7x"}, ready=False)
    assert sc.wait_exit(15) == 1, sc.log_tail()
    sc.stopped = True
    assert ('environment SIDECAR_SESSION_LIFETIME: session.lifetime: invalid duration "7x"'
            in sc.output()), sc.output()


def test_run_without_a_file(start_sidecar, upstream):
    def settings(config):
        return {
            "SIDECAR_LISTEN": config["listen"],
            "SIDECAR_PUBLIC_URL": config["public_url"],
            "SIDECAR_UPSTREAM": config["upstream"],
            "SIDECAR_WORKERS": "1",
            "SIDECAR_APPLE_TEAM_ID": config["apple"]["team_id"],
            "SIDECAR_APPLE_CLIENT_ID": config["apple"]["client_id"],
            "SIDECAR_APPLE_KEY_ID": config["apple"]["key_id"],
            "SIDECAR_APPLE_PRIVATE_KEY_FILE": config["apple"]["private_key_file"],
            "SIDECAR_APPLE_BASE_URL": config["apple"]["base_url"],
            "SIDECAR_SESSION_SECRETS": config["session"]["secrets"][0],
            "SIDECAR_ADMIN_LISTEN": config["admin"]["listen"],
            "SIDECAR_ACCESS_PUBLIC_PATHS": "/echo",
        }
    sc = start_sidecar(args=["run", "--config", "none"], env=settings)
    assert sc.request("GET", "/echo").status == 200
    assert sc.request("GET", "/private", [HTML]).status == 302


def test_run_without_a_file_needs_none_spelt_out(tmp_path):
    """A file that is not there is an error, never an empty configuration (its access
    lists would be lost, admitting every Apple ID)."""
    proc = subprocess.run([str(sidecar_binary()), "run", "--config", str(tmp_path / "sidecar.yaml")],
                          env={**os.environ, "SIDECAR_UPSTREAM": "http://127.0.0.1:1"},
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 1, proc.stderr
    assert "sidecar.yaml" in proc.stderr


def test_check_says_which_keys_came_from_the_environment(base_config, tmp_path):
    path = tmp_path / "sidecar.yaml"
    path.write_text(to_yaml(base_config(free_port(), free_port())) + "\n")
    secret = base64.b64encode(os.urandom(32)).decode()
    code, out, err = check(path, {
        "SIDECAR_SESSION_LIFETIME": "7d",
        "SIDECAR_SESSION_SECRETS": secret,
        "SIDECAR_SESION_IDLE_TIMEOUT": "1h",
    })
    assert code == 0, err
    assert "session.lifetime = 7d (from SIDECAR_SESSION_LIFETIME)\n" in out, out
    assert "session.secrets = (set) (from SIDECAR_SESSION_SECRETS, overriding line " in out, out
    assert "2 keys from SIDECAR_* variables, the rest from %s" % path in out, out
    assert secret not in out + err
    assert "SIDECAR_SESION_IDLE_TIMEOUT is ignored" in err and "SIDECAR_SESSION_IDLE_TIMEOUT" in err, err

    code, out, err = check(path, {"SIDECAR_LIMITS_MAX_BODY_BYTES": "lots"})
    assert code == 1, out
    assert 'environment SIDECAR_LIMITS_MAX_BODY_BYTES: limits.max_body_bytes: invalid size "lots"' in err, err


def test_check_without_a_file_names_the_variables_to_set():
    code, out, err = check("none", {"SIDECAR_UPSTREAM": "http://127.0.0.1:3000"})
    assert code == 1, out
    assert 'environment: public_url: missing required key "public_url"; set SIDECAR_PUBLIC_URL' in err, err
    assert "environment: apple.team_id:" in err and "set SIDECAR_APPLE_TEAM_ID" in err, err


def test_check_never_prints_a_urls_password(tmp_path, base_config):
    """`user:password@` in a refused URL — from the file or a SIDECAR_* variable — is shown
    as `***@`: the error names the key and the host, never the credential."""
    config = base_config(free_port(), free_port())
    config["upstream"] = "http://deploy:hunter2-upstream@127.0.0.1:3000"
    config["public_url"] = "https://admin:hunter2-public@app.example.com"
    config["tracing"] = {"otlp_endpoint": "https://otel:hunter2/otlp@collector.example.com:4318"}
    path = tmp_path / "sidecar.yaml"
    path.write_text(to_yaml(config) + "\n")
    rc, out, err = check(path, {})
    assert rc == 1, (out, err)
    assert "hunter2" not in out + err, err
    for key in ("upstream", "public_url", "tracing.otlp_endpoint"):
        assert key + ":" in err, err
    assert "http://***@127.0.0.1:3000" in err and "https://***@app.example.com" in err, err

    del config["tracing"]
    config["upstream"] = "http://127.0.0.1:3000"
    config["public_url"] = "http://127.0.0.1:8080"
    path.write_text(to_yaml(config) + "\n")
    rc, out, err = check(path, {"SIDECAR_UPSTREAM": "http://u:hunter2-env@127.0.0.1:3000",
                                "SIDECAR_TRACING_OTLP_ENDPOINT": "http://u:hunter2@env@collector:4318"})
    assert rc == 1, (out, err)
    assert "hunter2" not in out + err, err
    assert "environment SIDECAR_UPSTREAM: upstream:" in err and "http://***@127.0.0.1:3000" in err, err
    assert "environment SIDECAR_TRACING_OTLP_ENDPOINT" in err and "http://***@collector:4318" in err, err
