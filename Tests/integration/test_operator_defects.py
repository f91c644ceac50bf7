""""What operators meet first": the defects a new user hit first, each against the
real binary — a key `check` passed and `run` refused, a valid idle_timeout refused because of
a default, the Apple-unreachable start-up message, the demo's leftover secrets, --version."""
import os
import re
import signal
import socket
import subprocess
import time

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

import rawhttp
from conftest import STARTUP_TIMEOUT, free_port, merge, sidecar_binary, to_yaml

NEED_P256 = "Apple client secrets need a P-256 (ES256) key"


def run_once(args, timeout=15, env=None):
    """Runs the binary to completion; returns (exit code, stdout + stderr)."""
    p = subprocess.run([str(sidecar_binary())] + args, capture_output=True, timeout=timeout,
                       stdin=subprocess.DEVNULL, env=env)
    return p.returncode, (p.stdout + p.stderr).decode(errors="replace")


def pem(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


WRONG_KEYS = {
    "rsa": (lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048), "an RSA key"),
    "p384": (lambda: ec.generate_private_key(ec.SECP384R1()), "a P-384 key"),
}


def value_position(text, key):
    """(line, column) of the value of the first `key:` line, 1-based, as the config reader
    reports it (the opening quote of a quoted value)."""
    for number, line in enumerate(text.splitlines(), 1):
        match = re.match(r"\s*%s:\s*" % re.escape(key), line)
        if match:
            return number, match.end() + 1
    raise AssertionError("no %s in\n%s" % (key, text))


# -- 2. check says OK to a key that cannot sign client secrets ------------------------------
@pytest.mark.parametrize("command", ["check", "run"])
@pytest.mark.parametrize("kind", sorted(WRONG_KEYS))
def test_a_key_that_cannot_sign_is_refused_with_file_line_and_column(base_config, tmp_path, command, kind):
    generate, described = WRONG_KEYS[kind]
    (tmp_path / "AuthKey.p8").write_bytes(pem(generate()))
    config = merge(base_config(free_port(), free_port()), {"apple": {"private_key_file": "AuthKey.p8"}})
    path = tmp_path / "sidecar.yaml"
    path.write_text(to_yaml(config) + "\n")
    line, column = value_position(path.read_text(), "private_key_file")

    code, out = run_once([command, "--config", str(path)])
    assert code == 1, out
    expected = "sidecar.yaml:%d:%d: apple.private_key_file: AuthKey.p8 is %s; %s" % (
        line, column, described, NEED_P256)
    assert expected in out, out
    assert "OK" not in out, out


@pytest.mark.parametrize("command", ["check", "run"])
def test_a_key_from_the_environment_is_checked_the_same_way(base_config, tmp_path, command):
    config = base_config(free_port(), free_port())
    config["apple"] = merge(config["apple"], {"private_key_file": None, "private_key": "env:SIDECAR_TEST_APPLE_KEY"})
    path = tmp_path / "sidecar.yaml"
    path.write_text(to_yaml(config) + "\n")
    line, column = value_position(path.read_text(), "private_key")
    env = dict(os.environ, SIDECAR_TEST_APPLE_KEY=pem(ec.generate_private_key(ec.SECP384R1())).decode())

    code, out = run_once([command, "--config", str(path)], env=env)
    assert code == 1, out
    assert ("sidecar.yaml:%d:%d: apple.private_key: env:SIDECAR_TEST_APPLE_KEY is a P-384 key; %s"
            % (line, column, NEED_P256)) in out, out
    assert "BEGIN" not in out, "key material in the message"


def test_check_accepts_the_p256_key_run_signs_with(base_config, tmp_path):
    path = tmp_path / "sidecar.yaml"
    path.write_text(to_yaml(base_config(free_port(), free_port())) + "\n")
    code, out = run_once(["check", "--config", str(path)])
    assert code == 0, out
    assert "sidecar.yaml: OK" in out, out


# -- 4. a valid session.idle_timeout refused because of a default ---------------------------
def test_idle_timeout_alone_is_accepted_by_check(base_config, tmp_path):
    path = tmp_path / "sidecar.yaml"
    path.write_text(to_yaml(merge(base_config(free_port(), free_port()),
                                  {"session": {"idle_timeout": "30m"}})) + "\n")
    code, out = run_once(["check", "--config", str(path)])
    assert code == 0, out
    assert "refresh_after" not in out, out


def test_idle_timeout_alone_is_accepted_by_run(start_sidecar):
    sc = start_sidecar({"session": {"idle_timeout": "30m"}})
    assert sc.request("GET", "/echo").status == 200


def test_an_explicit_refresh_after_that_conflicts_is_still_an_error(base_config, tmp_path):
    path = tmp_path / "sidecar.yaml"
    path.write_text(to_yaml(merge(base_config(free_port(), free_port()),
                                  {"session": {"idle_timeout": "30m", "refresh_after": "1h"}})) + "\n")
    line, column = value_position(path.read_text(), "refresh_after")
    code, out = run_once(["check", "--config", str(path)])
    assert code == 1, out
    assert "sidecar.yaml:%d:%d: session.refresh_after: must be shorter than session.idle_timeout (30m)" % (
        line, column) in out, out


# -- 6. the start-up message when Apple is unreachable ---------------------------------------
def test_apple_unreachable_at_start_is_one_clear_message_for_all_workers(start_sidecar):
    dead = free_port()
    url = "http://127.0.0.1:%d/auth/keys" % dead
    sc = start_sidecar({"workers": 2, "apple": {"base_url": "http://127.0.0.1:%d" % dead}})
    started = time.monotonic()  # serving: the first fetches are made at start
    # Both workers fail at once (polled for: the line is written on the sidecar's schedule)...
    assert sc.logged(lambda out: "fetch from" in out), sc.output()
    # ...then retry after 1 and 2 s: give the retries 4.5 s to log anything more. (Something
    # that must not happen: a slow machine can only make this weaker, never fail it.)
    time.sleep(max(0, started + 4.5 - time.monotonic()))
    assert sc.admin("/readyz").status == 503
    lines = [l for l in sc.output().splitlines() if "apple keys" in l]
    failures = [l for l in lines if "fetch from" in l]
    assert len(failures) == 1, "\n".join(lines)
    message = failures[0]
    assert "apple keys: fetch from %s failed (" % url in message, message
    assert "no keys yet, sign-ins will fail until a fetch succeeds; retrying in 1s" in message, message
    assert "keeping the previous set" not in sc.output(), sc.output()


# -- 7. the demo leaves its private key and cookie secret behind ----------------------------
class Demo:
    def __init__(self, tmpdir, port=None):
        self.tmpdir, self.port = tmpdir, port or free_port()
        env = dict(os.environ, TMPDIR=str(tmpdir))
        self.proc = subprocess.Popen([str(sidecar_binary()), "demo", "--port", str(self.port)],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=env)
        self.lines = []

    def wait_for_url(self):
        """Reads the banner; returns the directory it names for the demo's files, after
        checking that it is in TMPDIR and holds the key and the cookie secret."""
        while not any("Press Ctrl-C" in l for l in self.lines):
            line = self.proc.stdout.readline().decode()
            assert line, "demo exited: %s" % "".join(self.lines)
            self.lines.append(line)
        text = "".join(self.lines)
        assert "http://localhost:%d/" % self.port in text, text
        directory = re.search(r"^\s*files\s+(\S+)", text, re.M).group(1)
        assert os.path.dirname(directory) == str(self.tmpdir), "not in TMPDIR: %s" % directory
        held = os.listdir(directory)
        assert "cookie-secret" in held and any(n.endswith(".p8") for n in held), held
        return directory

    def wait_serving(self):
        deadline = time.monotonic() + STARTUP_TIMEOUT  # start-up, as for every sidecar the tests start
        while time.monotonic() < deadline:
            try:
                if rawhttp.request(self.port, "GET", "/", [("Accept", "text/html")], timeout=2).status == 302:
                    return
            except (OSError, rawhttp.Closed):
                pass
            time.sleep(0.05)
        raise AssertionError("demo not serving: %s" % "".join(self.lines))

    def finish(self, timeout=10):
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
            raise
        self.lines.append(self.proc.stdout.read().decode(errors="replace"))
        return code


@pytest.fixture
def start_demo():
    """start_demo(tmpdir, port=None) -> Demo; any demo still running after the test is killed
    (a failed assertion must not leave one serving)."""
    started = []

    def start(tmpdir, port=None):
        demo = Demo(tmpdir, port)
        started.append(demo)
        return demo
    yield start
    for demo in started:
        if demo.proc.poll() is None:
            demo.proc.kill()
            demo.proc.wait(5)


def left_behind(tmpdir, since=None, port=None):
    """Everything in tmpdir; with `since` and `port`, also demo directories made in /tmp since
    then (where a demo that ignores TMPDIR puts them) whose sidecar.yaml listens on `port`:
    another test run's demo on the same machine is not this one's leftover."""
    found = [os.path.join(root, name) for root, dirs, files in os.walk(tmpdir) for name in dirs + files]
    if since is not None:
        for name in os.listdir("/tmp"):
            path = os.path.join("/tmp", name)
            try:
                if (name.startswith("sidecar-demo-") and os.stat(path).st_mtime >= since
                        and "AuthKey_DEMOKEY001.p8" in os.listdir(path)
                        and ":%d\n" % port in open(os.path.join(path, "sidecar.yaml")).read()):
                    found.append(path)
            except OSError:
                pass  # another test's directory, gone meanwhile
    return found


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_demo_removes_its_files_when_stopped_while_serving(tmp_path, start_demo, sig):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    demo = start_demo(tmpdir)
    demo.wait_for_url()
    demo.wait_serving()
    demo.proc.send_signal(sig)
    assert demo.finish() == 0, "".join(demo.lines)
    assert left_behind(tmpdir) == [], "".join(demo.lines)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["SIGINT", "SIGTERM", "SIGHUP"])
def test_demo_removes_its_files_when_stopped_during_start_up(tmp_path, start_demo, sig):
    # The URL is printed just before the server takes over signal handling: a signal now
    # meets the demo's own start-up handler, which removes the files and dies of the signal.
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    demo = start_demo(tmpdir)
    demo.wait_for_url()
    demo.proc.send_signal(sig)
    expected = (0, -sig)
    if sig == signal.SIGHUP:
        # Lost the race: the server already handles SIGHUP, which reloads. Stop it as an
        # operator would; the files must go either way. (3 s only decides which; if the
        # start-up handler was merely slow, the SIGTERM may meet it too: it dies of that.)
        try:
            demo.proc.wait(3)
        except subprocess.TimeoutExpired:
            demo.proc.send_signal(signal.SIGTERM)
            expected = (0, -sig, -signal.SIGTERM)
    code = demo.finish()
    assert code in expected, (code, "".join(demo.lines))
    assert left_behind(tmpdir) == [], "".join(demo.lines)


def test_demo_removes_its_files_when_start_up_fails(tmp_path, start_demo):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen()
    port = blocker.getsockname()[1]
    started = time.time() - 1
    try:
        demo = start_demo(tmpdir, port=port)
        code = demo.finish()
    finally:
        blocker.close()
    assert code == 2, "".join(demo.lines)
    assert "address already in use" in "".join(demo.lines)
    assert left_behind(tmpdir, since=started, port=port) == [], "".join(demo.lines)


# -- sidecar --version ------------------------------------------------------------------------
def test_version_flag_and_command_print_the_same_version():
    flag_code, flag = run_once(["--version"])
    command_code, command = run_once(["version"])
    assert flag_code == 0 and command_code == 0, (flag, command)
    assert re.fullmatch(r"sidecar \d+\.\d+\.\d+ \(swift \d+\.\d+\+?\)\n", flag), flag
    assert command == flag
