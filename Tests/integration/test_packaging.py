"""Deployment files checked as their tools check them:
the hardened systemd unit passes `systemd-analyze verify` against the built binary and raises
the descriptor limit enough for the default max_connections."""
import re
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import sidecar_binary

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "Examples" / "systemd" / "sidecar.service"


def directives(text):
    out = {}
    for line in text.splitlines():
        m = re.match(r"^([A-Za-z]+)=(.*)$", line.strip())
        if m:
            out.setdefault(m.group(1), []).append(m.group(2))
    return out


def test_the_systemd_unit_is_hardened_and_sized_for_max_connections():
    d = directives(UNIT.read_text())
    for key, value in [("DynamicUser", "yes"), ("ProtectSystem", "strict"), ("NoNewPrivileges", "yes"),
                       ("ProtectHome", "yes"), ("PrivateTmp", "yes")]:
        assert d.get(key) == [value], (key, d.get(key))
    assert d["ExecReload"] == ["/bin/kill -HUP $MAINPID"]
    assert any("check --config" in v for v in d["ExecStartPre"])
    assert int(d["LimitNOFILE"][0]) >= 2 * 10000 + 128  # the default max_connections fits
    # setrlimit (raising the soft limit at start) must not be filtered away.
    assert not any("@resources" in v for v in d.get("SystemCallFilter", []))


@pytest.mark.skipif(shutil.which("systemd-analyze") is None and not os.environ.get("CI"),
                    reason="systemd-analyze not installed")
def test_systemd_analyze_verifies_the_unit(tmp_path):
    unit = tmp_path / "sidecar.service"
    unit.write_text(UNIT.read_text().replace("/usr/local/bin/sidecar", str(sidecar_binary())))
    r = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60)
    problems = [l for l in (r.stdout + r.stderr).splitlines() if "sidecar.service" in l]
    assert r.returncode == 0 and not problems, r.stdout + r.stderr


K8S = ROOT / "Examples" / "kubernetes" / "sidecar-pod.yaml"
CONTAINERFILE = ROOT / "Examples" / "container" / "Containerfile"


def k8s_documents():
    import yaml  # pinned in requirements.txt: a missing module fails, never skips
    return {doc["kind"]: doc for doc in yaml.safe_load_all(K8S.read_text())}


def test_the_kubernetes_pod_keeps_the_app_on_loopback_behind_the_sidecar():
    docs = k8s_documents()
    pod = docs["Deployment"]["spec"]["template"]["spec"]
    containers = {c["name"]: c for c in pod["containers"]}
    app, sidecar = containers["app"], containers["sidecar"]
    assert "ports" not in app, "the app must not be exposed; only the sidecar is"
    assert {"name": "LISTEN", "value": "127.0.0.1:3000"} in app["env"]
    ports = {p["name"]: p["containerPort"] for p in sidecar["ports"]}
    assert docs["Service"]["spec"]["ports"][0]["targetPort"] == "http" and ports["http"] == 8080
    assert sidecar["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "admin"}
    assert sidecar["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "admin"}
    secret_env = [e for e in sidecar["env"] if "valueFrom" in e]
    assert secret_env and all("secretKeyRef" in e["valueFrom"] for e in secret_env)
    assert sidecar["securityContext"]["allowPrivilegeEscalation"] is False
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["terminationGracePeriodSeconds"] > 11  # the drain: 1 s grace + 10 s in-flight


def test_the_kubernetes_config_is_one_sidecar_check_accepts(tmp_path, keydir):
    import os
    docs = k8s_documents()
    config = docs["ConfigMap"]["data"]["sidecar.yaml"]
    assert "upstream: http://127.0.0.1:3000" in config
    path = tmp_path / "sidecar.yaml"
    path.write_text(config.replace("/var/run/secrets/siwa/AuthKey.p8", str(keydir / "AuthKey_KEY123ABCD.p8")))
    env = dict(os.environ, SIDECAR_COOKIE_SECRET="A" * 43 + "=")
    r = subprocess.run([str(sidecar_binary()), "check", "--config", str(path)], capture_output=True, text=True,
                       timeout=30, env=env)
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_containerfile_builds_the_static_binary_and_runs_it_unprivileged():
    text = CONTAINERFILE.read_text()
    stages = re.findall(r"^FROM (\S+)(?: AS (\S+))?$", text, re.M)
    assert len(stages) == 2 and stages[0][1] == "build"
    assert "--static-swift-stdlib" in text and "install -D -s" in text
    assert re.search(r"^USER 10001:10001$", text, re.M)
    assert re.search(r'^ENTRYPOINT \["/usr/local/bin/sidecar"\]$', text, re.M)


K8S_REPLICAS = ROOT / "Examples" / "kubernetes" / "sidecar-replicas.yaml"
REPLICAS = ROOT / "Examples" / "replicas"


def test_the_kubernetes_replicas_share_secrets_and_a_redis_url_from_a_secret(tmp_path, keydir):
    import os
    import yaml  # pinned in requirements.txt: a missing module fails, never skips
    docs = {doc["kind"]: doc for doc in yaml.safe_load_all(K8S_REPLICAS.read_text())}
    deployment = docs["Deployment"]["spec"]
    assert deployment["replicas"] == 3
    sidecar = {c["name"]: c for c in deployment["template"]["spec"]["containers"]}["sidecar"]
    from_secret = {e["name"]: e["valueFrom"]["secretKeyRef"]["key"] for e in sidecar["env"] if "valueFrom" in e}
    assert from_secret == {"SIDECAR_COOKIE_SECRET": "cookie-secret", "SIDECAR_REDIS_URL": "redis-url",
                           "SIDECAR_REDIS_PASSWORD": "redis-password"}
    assert sidecar["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "admin"}
    config = docs["ConfigMap"]["data"]["sidecar.yaml"]
    assert "store: env:SIDECAR_REDIS_URL" in config
    path = tmp_path / "sidecar.yaml"
    path.write_text(config.replace("/var/run/secrets/siwa/AuthKey.p8", str(keydir / "AuthKey_KEY123ABCD.p8")))
    env = dict(os.environ, SIDECAR_COOKIE_SECRET="A" * 43 + "=", SIDECAR_REDIS_URL="redis://redis.default.svc:6379/0",
               SIDECAR_REDIS_PASSWORD="pw")
    r = subprocess.run([str(sidecar_binary()), "check", "--config", str(path)], capture_output=True, text=True,
                       timeout=30, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    env["SIDECAR_REDIS_URL"] = "redis://user:pw@redis:6379"
    r = subprocess.run([str(sidecar_binary()), "check", "--config", str(path)], capture_output=True, text=True,
                       timeout=30, env=env)
    assert r.returncode != 0 and "revocations.store" in r.stdout + r.stderr and "pw@" not in r.stdout + r.stderr


def test_the_replicas_example_is_a_config_check_accepts_and_a_valid_haproxy_config(tmp_path, keydir):
    import os
    import shutil
    config = (REPLICAS / "sidecar.yaml").read_text()
    path = tmp_path / "sidecar.yaml"
    path.write_text(config.replace("/etc/sidecar/AuthKey_XYZ123ABCD.p8", str(keydir / "AuthKey_KEY123ABCD.p8")))
    env = dict(os.environ, SIDECAR_COOKIE_SECRET="A" * 43 + "=", SIDECAR_REDIS_PASSWORD="pw")
    r = subprocess.run([str(sidecar_binary()), "check", "--config", str(path)], capture_output=True, text=True,
                       timeout=30, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert shutil.which("haproxy"), "haproxy is not installed (scripts/test installs it)"
    cfg = (REPLICAS / "haproxy.cfg").read_text()
    # The certificate path is the operator's; the syntax check needs a real one.
    from tls_support import TestCA
    leaf = TestCA(tmp_path).issue("app")
    pem = tmp_path / "app.pem"
    pem.write_bytes(leaf.cert_file.read_bytes() + leaf.key_file.read_bytes())
    checked = tmp_path / "haproxy.cfg"
    checked.write_text(cfg.replace("/etc/haproxy/app.example.com.pem", str(pem)))
    r = subprocess.run(["haproxy", "-c", "-f", str(checked)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.deadline(1500)  # a static release build, unless SIDECAR_BINARY names one (scripts/test does)
def test_scripts_install_puts_a_static_stripped_binary_and_its_manual_page_in_place(tmp_path):
    # The real script, into a DESTDIR (a package build's staging root), as an operator runs it.
    r = subprocess.run([str(ROOT / "scripts" / "install"), "/usr/local"], cwd=ROOT, capture_output=True, text=True,
                       timeout=1500, env=dict(__import__("os").environ, DESTDIR=str(tmp_path / "stage")))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    binary = tmp_path / "stage" / "usr" / "local" / "bin" / "sidecar"
    manual = tmp_path / "stage" / "usr" / "local" / "share" / "man" / "man1" / "sidecar.1"
    described = subprocess.run(["file", "-b", str(binary)], capture_output=True, text=True).stdout \
        if shutil.which("file") else ""
    if described:
        assert "stripped" in described and "not stripped" not in described, described
    linked = subprocess.run(["ldd", str(binary)], capture_output=True, text=True).stdout
    assert "libswiftCore" not in linked and "libFoundation" not in linked, linked  # the Swift runtime is inside
    assert subprocess.run([str(binary), "version"], capture_output=True, text=True).returncode == 0
    help_text = subprocess.run([str(binary), "--help"], capture_output=True, text=True).stdout
    for section in ("FILES", "SIGNALS", "EXIT STATUS", "ENVIRONMENT", "EXAMPLES"):
        assert section in help_text, help_text
    page = manual.read_text()
    assert page.startswith(".") and "SIGHUP" in page and (".Sh" in page or ".SH" in page), page[:500]
