"""The container image: scripts/image builds it with buildah from the binary under test
(FROM scratch: the binary, its shared libraries, the CA bundle, user 10001, no shell), twice
to the same digest; podman runs it on loopback, read-only and without capabilities, as the
Kubernetes manifests do: the demo, signed in through end to end, then `sidecar check` on a
mounted configuration.

Each test gets containers storage of its own (vfs, under its temporary directory), so nothing
is left in the machine's image store. Where buildah or podman is missing the tests skip (fail
under CI=1: scripts/test installs them); where this machine does not let podman start a
container (a container without the privileges, cgroups or limits a runtime needs), the run
test skips with podman's own words, and the build and contents tests still run."""
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile

import pytest

from conftest import free_port, sidecar_binary
from test_auth_demo import sign_in

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TAG = "localhost/siwa-sidecar:test"
USER = "10001:10001"

pytestmark = [pytest.mark.deadline(240),
              pytest.mark.skipif(bool(os.environ.get("SIDECAR_SANITIZED")),
                                 reason="an image of a sanitized build tests the sanitizer's libraries")]


def need(tool):
    path = shutil.which(tool)
    if not path:
        if os.environ.get("CI"):
            pytest.fail("CI must run the image tests, but %s is not installed" % tool)
        pytest.skip("%s is not installed (Debian package `%s`)" % (tool, tool))
    return path


@pytest.fixture
def containers(tmp_path):
    """The environment that points buildah and podman at storage of this test's own. Podman's
    default limits (a million descriptors) are not asked for: raising a hard limit needs
    CAP_SYS_RESOURCE, which a CI container lacks; the container inherits the test's limits.
    Without systemd running, cgroups are podman's own to manage (asking systemd, the default,
    costs a 20 s time-out at every container's exit)."""
    need("buildah")
    conf = tmp_path / "containers"
    conf.mkdir()
    # conmon's sockets live under the run root: a short path, within a socket's 108 bytes.
    run = tempfile.mkdtemp(prefix="podman-")
    (conf / "storage.conf").write_text(
        '[storage]\ndriver = "vfs"\ngraphroot = "%s"\nrunroot = "%s"\n' % (conf / "graph", run))
    # Podman's own state (locks, exit codes) beside the storage, not in the machine's /run/libpod.
    engine = '[engine]\ntmp_dir = "%s/libpod"\nlock_type = "file"\n' % run
    if not os.path.isdir("/run/systemd/system"):
        engine += 'cgroup_manager = "cgroupfs"\n'
    (conf / "containers.conf").write_text("[containers]\ndefault_ulimits = []\n" + engine)
    yield dict(os.environ, CONTAINERS_STORAGE_CONF=str(conf / "storage.conf"),
               CONTAINERS_CONF=str(conf / "containers.conf"), TMPDIR=str(tmp_path))
    shutil.rmtree(run, ignore_errors=True)
    shutil.rmtree(conf / "graph", ignore_errors=True)  # a copy of the image per container: not kept


def build(env, archive=None, epoch="1700000000"):
    args = [os.path.join(ROOT, "scripts", "image"), "--binary", str(sidecar_binary()), "--tag", TAG]
    if archive:
        args += ["--archive", str(archive)]
    r = subprocess.run(args, capture_output=True, text=True, timeout=180,
                       env=dict(env, SOURCE_DATE_EPOCH=epoch))
    assert r.returncode == 0, r.stdout + r.stderr
    image_id = r.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"[0-9a-f]{64}", image_id), r.stdout
    return image_id


def layer_members(archive):
    """{path: TarInfo} of the image's one layer, read from the OCI archive scripts/image wrote."""
    with tarfile.open(archive) as oci:
        index = json.load(oci.extractfile("index.json"))
        blob = lambda digest: oci.extractfile("blobs/sha256/" + digest.split(":")[1])  # noqa: E731
        manifest = json.load(blob(index["manifests"][0]["digest"]))
        config = json.load(blob(manifest["config"]["digest"]))
        assert len(manifest["layers"]) == 1, manifest
        with tarfile.open(fileobj=blob(manifest["layers"][0]["digest"])) as layer:
            members = {m.name.lstrip("./").rstrip("/"): m for m in layer.getmembers()}
            read = lambda path: layer.extractfile(members[path]).read()  # noqa: E731
            files = {p: read(p) for p in ("etc/ssl/certs/ca-certificates.crt", "etc/passwd")}
    return config, members, files


def test_the_image_is_reproducible_non_root_from_scratch_with_ca_certificates_and_no_shell(containers, tmp_path):
    archive = tmp_path / "image.tar"
    first = build(containers, archive)
    assert build(containers) == first, "the same binary and SOURCE_DATE_EPOCH built another image"

    config, members, files = layer_members(archive)
    run = config["config"]
    assert run["User"] == USER
    assert run["Entrypoint"] == ["/usr/local/bin/sidecar"]
    assert run["Cmd"] == ["run", "--config", "/etc/sidecar/sidecar.yaml"]
    assert set(run["ExposedPorts"]) == {"8080/tcp", "9090/tcp"}
    assert config["created"] == "2023-11-14T22:13:20Z"
    assert all(m.mtime == 1700000000 for m in members.values())

    binary = members["usr/local/bin/sidecar"]
    assert binary.isfile() and binary.mode & 0o755 == 0o755 and binary.uid == 0
    # Nothing to log in with or run scripts by: no shell, no package manager, no setuid file.
    names = {os.path.basename(p) for p in members}
    assert not names & {"sh", "bash", "dash", "ash", "busybox", "apt", "dpkg", "su", "sudo"}, names
    assert not [p for p, m in members.items() if m.mode & 0o6000], "setuid/setgid files"
    assert not [p for p, m in members.items() if m.uid != 0 and not p.startswith("var/lib/sidecar")]
    state = members["var/lib/sidecar"]
    assert state.isdir() and (state.uid, state.gid, state.mode & 0o777) == (10001, 10001, 0o700)
    assert b"\nsidecar:x:10001:10001:" in files["etc/passwd"]
    # Every shared library the binary links is in it, with the loader.
    ldd = subprocess.run(["ldd", str(sidecar_binary())], capture_output=True, text=True, check=True).stdout
    for lib in re.findall(r"=> (/\S+)", ldd) + re.findall(r"^\s*(/\S+ld-linux\S*)", ldd, re.M):
        assert lib.lstrip("/") in members, lib
    # The CA bundle where OpenSSL's default verify paths (Debian's /usr/lib/ssl) lead.
    assert files["etc/ssl/certs/ca-certificates.crt"].count(b"-----BEGIN CERTIFICATE-----") > 50
    assert members["usr/lib/ssl/cert.pem"].linkname == "/etc/ssl/certs/ca-certificates.crt"
    assert members["usr/lib/ssl/certs"].linkname == "/etc/ssl/certs"
    assert "usr/share/doc/libssl3/copyright" in members and "usr/share/doc/sidecar/LICENSE" in members
    archive.unlink()  # 75 MB


def podman_runtime(env):
    """The OCI runtime podman can start the image with here: its default, else runc (crun
    refuses a host with cgroup v1 and v2 hierarchies mixed, as in many CI containers). Skips
    with podman's own errors where none can."""
    need("podman")
    errors = []
    candidates = [[]] + ([["--runtime", shutil.which("runc")]] if shutil.which("runc") else [])
    for runtime in candidates:
        r = subprocess.run(["podman"] + runtime + ["run", "--rm", "--network", "host", TAG, "--version"],
                           capture_output=True, text=True, timeout=120, env=env)
        if r.returncode == 0 and r.stdout.startswith("sidecar "):
            return runtime
        errors.append("%s: %s" % (" ".join(runtime) or "default runtime", (r.stderr or r.stdout).strip()))
    pytest.skip("this machine does not let podman start a container: " + " | ".join(errors))


def podman_run(runtime, *args):
    """podman run of the image as Kubernetes runs it (Examples/kubernetes/base): its own user,
    read-only root, every capability dropped, no privilege escalation; host network, so its
    loopback listeners are this machine's."""
    return ["podman"] + runtime + ["run", "--rm", "--network", "host", "--read-only", "--cap-drop", "all",
                                   "--security-opt", "no-new-privileges"] + list(args)


def test_podman_runs_the_demo_and_checks_a_mounted_config(containers, tmp_path, keydir):
    build(containers)
    runtime = podman_runtime(containers)

    port, emulator_port, upstream_port = free_port(), free_port(), free_port()
    name = "sidecar-demo-%d" % port
    proc = subprocess.Popen(
        podman_run(runtime, "--name", name, TAG, "demo", "--port", str(port),
                   "--emulator-port", str(emulator_port), "--upstream-port", str(upstream_port)),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=containers)
    try:
        lines = []
        while not any("Press Ctrl-C" in l for l in lines):
            line = proc.stdout.readline().decode()
            assert line, "the demo's container exited: %s" % "".join(lines)
            lines.append(line)
        # A whole sign-in against the demo inside the container: login, the emulator, the
        # callback, the app's page with the identity.
        page = sign_in(port, emulator_port)
        assert b"Hello, Maria Ruiz" in page and b"maria.ruiz@example.com" in page
        top = subprocess.run(["podman", "top", name, "huser", "hgroup"], capture_output=True, text=True,
                             timeout=30, env=containers)
        assert top.returncode == 0, top.stderr
        assert [l.split() for l in top.stdout.splitlines()[1:]] == [["10001", "10001"]], top.stdout
    finally:
        subprocess.run(["podman", "stop", "--time", "5", name], capture_output=True, timeout=60, env=containers)
        proc.wait(30)
    assert proc.returncode == 0, "".join(lines) + proc.stdout.read().decode()  # SIGTERM: a clean stop

    # `sidecar check` on a configuration mounted read-only, as from a ConfigMap and a Secret.
    config = tmp_path / "config"
    config.mkdir(mode=0o755)
    key = config / "AuthKey.p8"
    key.write_bytes((keydir / "AuthKey_KEY123ABCD.p8").read_bytes())
    good = ("listen: 0.0.0.0:8080\npublic_url: https://app.example.com\nupstream: http://127.0.0.1:3000\n"
            "apple:\n  team_id: ABCDE12345\n  client_id: com.example.web\n  key_id: KEY123ABCD\n"
            "  private_key_file: /etc/sidecar/AuthKey.p8\nsession:\n  secrets: [env:SIDECAR_COOKIE_SECRET]\n")
    (config / "sidecar.yaml").write_text(good)
    (config / "bad.yaml").write_text(good.replace("team_id: ABCDE12345", "team_id: nope"))
    for f in config.iterdir():
        f.chmod(0o644)  # readable by the image's user 10001, as a ConfigMap's and a Secret's files are

    def check(name):
        args = podman_run(runtime, "-v", "%s:/etc/sidecar:ro" % config,
                          "-e", "SIDECAR_COOKIE_SECRET=" + "A" * 43 + "=", TAG,
                          "check", "--config", "/etc/sidecar/" + name)
        return subprocess.run(args, capture_output=True, text=True, timeout=120, env=containers)

    r = check("sidecar.yaml")
    assert r.returncode == 0, r.stdout + r.stderr
    r = check("bad.yaml")
    assert r.returncode != 0 and "team_id" in r.stdout + r.stderr, r.stdout + r.stderr
