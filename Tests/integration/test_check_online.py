"""`sidecar check --online` asks Apple (here the emulator) what only Apple can say: that its key
set answers and that each Services ID's client secret is accepted."""
import subprocess

from conftest import sidecar_binary


def check_online(config_path):
    return subprocess.run([str(sidecar_binary()), "check", "--online", "--config", str(config_path)],
                          capture_output=True, text=True, timeout=60)


def test_a_good_configuration_is_accepted_by_apple(start_auth_sidecar):
    sc, _ = start_auth_sidecar()
    done = check_online(sc.config_path)
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert "online: apple keys:" in done.stdout
    assert "accepted by Apple" in done.stdout, done.stdout


def test_a_key_id_apple_does_not_know_is_named(start_auth_sidecar):
    sc, _ = start_auth_sidecar()
    text = sc.config_path.read_text()
    assert "key_id: \"KEY123ABCD\"" in text
    wrong = sc.config_path.parent / "wrong-key-id.yaml"
    wrong.write_text(text.replace("key_id: \"KEY123ABCD\"", "key_id: \"KEY999WXYZ\""))
    offline = subprocess.run([str(sidecar_binary()), "check", "--config", str(wrong)],
                             capture_output=True, text=True, timeout=30)
    assert offline.returncode == 0, "the offline check cannot tell"
    done = check_online(wrong)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "invalid_client" in done.stderr and "apple.key_id KEY999WXYZ" in done.stderr, done.stderr


def test_apple_unreachable_fails_the_check(start_auth_sidecar):
    sc, apple = start_auth_sidecar()
    apple.stop()
    done = check_online(sc.config_path)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "apple keys:" in done.stderr and "no answer" in done.stderr, done.stderr
