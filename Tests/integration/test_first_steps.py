"""What a newcomer meets first, through the release binary: the Debian package's configuration
refused by `sidecar check` until its placeholders are replaced, a configuration error printed
once, the help of `run`, `--version` at the top level only, and a first start's log."""
import json
import re
import subprocess
from pathlib import Path

from conftest import sidecar_binary

ROOT = Path(__file__).resolve().parents[2]
PACKAGED = ROOT / "packaging" / "debian" / "sidecar.yaml"
SECRET = "q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq80="


def run(args, env=None, timeout=30):
    p = subprocess.run([str(sidecar_binary())] + args, capture_output=True, text=True, timeout=timeout,
                       stdin=subprocess.DEVNULL, env=env)
    return p.returncode, p.stdout, p.stderr


def installed(tmp_path, keydir, key_name="AuthKey_placeholder.p8"):
    """The packaged sidecar.yaml with /etc/sidecar/ moved to tmp_path, and what postinst
    makes there: the cookie secret and a stand-in key (any P-256 key)."""
    (tmp_path / "cookie-secret").write_text(SECRET + "\n")
    (tmp_path / key_name).write_bytes((keydir / "AuthKey_KEY123ABCD.p8").read_bytes())
    text = PACKAGED.read_text().replace("/etc/sidecar/", str(tmp_path) + "/")
    text = text.replace("file:/var/lib/sidecar/store", "memory")
    path = tmp_path / "sidecar.yaml"
    path.write_text(text)
    return path, text


def line_of(text, prefix):
    return next(n for n, line in enumerate(text.splitlines(), 1) if line.startswith(prefix))


def test_check_refuses_the_packaged_configuration_naming_each_placeholder(tmp_path, keydir):
    path, text = installed(tmp_path, keydir)
    code, out, err = run(["check", "--config", str(path)])
    assert code == 1, out + err
    assert "OK" not in out, out
    for key, prefix in [("apple.team_id", "  team_id:"), ("apple.key_id", "  key_id:"),
                        ("apple.private_key_file", "  private_key_file:")]:
        assert re.search(r"^%s:%d:\d+: %s: " % (re.escape(str(path)), line_of(text, prefix), re.escape(key)),
                         err, re.M), (key, err)
    assert '"TEAMID0000" is a placeholder: put your Team ID here' in err, err
    assert '"KEYID00000" is a placeholder' in err, err
    assert "stand-in key" in err and "AuthKey_<key id>.p8" in err, err
    assert "3 errors" in err, err


def test_the_packaged_configuration_filled_in_passes_check(tmp_path, keydir):
    path, text = installed(tmp_path, keydir, key_name="AuthKey_XYZ123ABCD.p8")
    path.write_text(text.replace("TEAMID0000", "ABCDE12345").replace("KEYID00000", "XYZ123ABCD")
                    .replace("AuthKey_placeholder.p8", "AuthKey_XYZ123ABCD.p8"))
    code, out, err = run(["check", "--config", str(path)])
    assert code == 0, out + err
    assert out.startswith("%s: OK" % path), out


def test_run_refuses_the_placeholders_and_prints_each_error_once(tmp_path, keydir):
    path, _ = installed(tmp_path, keydir)
    code, out, err = run(["run", "--config", str(path)])
    assert code == 1, out + err
    both = out + err
    assert both.count("apple.team_id:") == 1, both
    assert both.count("invalid configuration") <= 1, both


def test_run_help_says_what_run_does():
    code, out, err = run(["run", "--help"])
    assert code == 0, err
    for needed in ("default command", "SIGHUP", "SIGTERM", "EXIT STATUS", "admin.listen", "/metrics"):
        assert needed in out, (needed, out)


def test_only_the_top_level_lists_version():
    code, out, _ = run(["--help"])
    assert code == 0 and "--version" in out, out
    for command in ("run", "check", "secret", "demo", "emulator", "version"):
        code, out, err = run([command, "--help"])
        assert code == 0, (command, err)
        assert "--version" not in out, (command, out)
    code, out, _ = run(["--version"])
    assert code == 0 and out.startswith("sidecar "), out


def test_a_first_start_logs_the_new_store_file_as_news_not_a_warning(start_sidecar, tmp_path):
    store = tmp_path / "state" / "sidecar.store"
    store.parent.mkdir()
    sc = start_sidecar({"revocations": {"store": "file:%s" % store}})
    lines = [json.loads(l) for l in sc.output().splitlines() if l.startswith("{")]
    created = [e for e in lines if "created store file" in e["msg"]]
    assert len(created) == 1 and created[0]["level"] == "info", created
    assert not [e for e in lines if e["level"] == "warning" and "store" in e["msg"]], lines
