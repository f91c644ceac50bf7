"""Examples/kubernetes/ingress-nginx rendered by `kubectl kustomize` (Debian's kubectl 1.20 and
later), with a Secret's files made for the test, and the objects checked as a cluster would
rely on them: the sidecar non-root with a read-only root, probes at the admin listener's
health endpoints, the generated Secret and ConfigMap referenced by their hashed names and
their paths matching the configuration, which `sidecar check` accepts; the Service, the
PodDisruptionBudget and the NetworkPolicies selecting the sidecar's pods; the Ingress asking
the Service's address and naming the sidecar's routes."""
import base64
import os
import shutil
import subprocess
from urllib.parse import urlsplit

import pytest
import yaml

from conftest import sidecar_binary
from ingress_nginx_support import EXAMPLE, PREFIX

SECRETS = "/var/run/secrets/siwa"


def kubectl():
    path = os.environ.get("KUBECTL") or shutil.which("kubectl")
    if not path:
        if os.environ.get("CI"):
            pytest.fail("CI must render the Kubernetes manifests, but kubectl is not installed")
        pytest.skip("kubectl is not installed (Debian package `kubernetes-client`)")
    return path


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """(objects by (kind, name), the Secret's files, the directory): the kustomization copied
    beside made-up secret files, as an operator would create them, and rendered."""
    work = tmp_path_factory.mktemp("kustomize") / "ingress-nginx"
    shutil.copytree(EXAMPLE, work)
    secrets = work / "secrets"
    secrets.mkdir()
    secret = subprocess.run([str(sidecar_binary()), "secret"], capture_output=True, text=True, check=True)
    (secrets / "cookie-secret").write_text(secret.stdout)
    subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-out", str(secrets / "AuthKey.p8")], check=True, capture_output=True)
    (secrets / "redis-password").write_text("test-redis-password")
    r = subprocess.run([kubectl(), "kustomize", str(work)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    objects = {}
    for doc in yaml.safe_load_all(r.stdout):
        key = (doc["kind"], doc["metadata"]["name"])
        assert key not in objects, key
        objects[key] = doc
    return objects, secrets, work


def one(objects, kind, prefix=""):
    found = [o for (k, n), o in objects.items() if k == kind and n.startswith(prefix)]
    assert len(found) == 1, (kind, prefix, list(objects))
    return found[0]


def sidecar_config(objects):
    return yaml.safe_load(one(objects, "ConfigMap", "siwa-sidecar-config")["data"]["sidecar.yaml"])


def port_of(address):
    return int(address.rsplit(":", 1)[1])


def test_kustomize_renders_every_object_in_the_apps_namespace(rendered):
    objects, _, _ = rendered
    kinds = sorted(k for k, _ in objects)
    assert kinds == ["ConfigMap", "ConfigMap", "Deployment", "Ingress", "Ingress", "NetworkPolicy",
                     "NetworkPolicy", "PodDisruptionBudget", "Secret", "Service"], kinds
    assert {o["metadata"].get("namespace") for o in objects.values()} == {"web"}


def test_the_sidecar_runs_non_root_read_only_with_probes_on_the_admin_listener(rendered):
    objects, _, _ = rendered
    deployment = objects[("Deployment", "siwa-sidecar")]
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    # The image's own user (scripts/image), so its files and the Secret's group line up.
    assert (pod["securityContext"]["runAsUser"], pod["securityContext"]["runAsGroup"]) == (10001, 10001)
    assert pod["securityContext"]["fsGroup"] == 10001
    assert pod["automountServiceAccountToken"] is False
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True and security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert container["resources"]["requests"]["memory"] and container["resources"]["limits"]["memory"]

    config = sidecar_config(objects)
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"http": port_of(config["listen"]), "admin": port_of(config["admin"]["listen"])}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "admin"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "admin"}
    assert container["startupProbe"]["httpGet"] == {"path": "/readyz", "port": "admin"}
    assert container["args"] == ["run", "--config", "/etc/sidecar/sidecar.yaml"]
    version = subprocess.run([str(sidecar_binary()), "--version"], capture_output=True, text=True).stdout.split()[1]
    assert container["image"] == "localhost/siwa-sidecar:%s" % version, "the name scripts/image gives it"
    # The drain (1 s grace + 10 s in-flight) and the preStop pause fit in the grace period.
    assert pod["terminationGracePeriodSeconds"] >= container["lifecycle"]["preStop"]["sleep"]["seconds"] + 11


def test_the_generated_secret_and_config_are_mounted_and_sidecar_check_accepts_them(rendered, tmp_path):
    objects, secrets, _ = rendered
    pod = objects[("Deployment", "siwa-sidecar")]["spec"]["template"]["spec"]
    mounts = {m["name"]: m for m in pod["containers"][0]["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    secret = one(objects, "Secret", "siwa-sidecar")
    config_map = one(objects, "ConfigMap", "siwa-sidecar-config")
    # kustomize's hashed names, rewritten into the Deployment: a changed key rolls the pods.
    assert volumes["secrets"]["secret"]["secretName"] == secret["metadata"]["name"] != "siwa-sidecar"
    assert volumes["config"]["configMap"]["name"] == config_map["metadata"]["name"]
    assert volumes["secrets"]["secret"]["defaultMode"] == 0o440
    assert mounts["secrets"] == {"name": "secrets", "mountPath": SECRETS, "readOnly": True}
    assert mounts["config"] == {"name": "config", "mountPath": "/etc/sidecar", "readOnly": True}
    assert sorted(secret["data"]) == ["AuthKey.p8", "cookie-secret", "redis-password"]
    assert base64.b64decode(secret["data"]["AuthKey.p8"]) == (secrets / "AuthKey.p8").read_bytes()

    # The configuration reads each secret where the Secret is mounted; run `sidecar check` on
    # it with the Secret's decoded files in place of the mount.
    text = config_map["data"]["sidecar.yaml"]
    config = yaml.safe_load(text)
    assert config["apple"]["private_key_file"] == SECRETS + "/AuthKey.p8"
    assert config["session"]["secrets"] == ["file:%s/cookie-secret" % SECRETS]
    assert config["revocations"]["password"] == "file:%s/redis-password" % SECRETS
    mounted = tmp_path / "secrets"
    mounted.mkdir()
    for name, value in secret["data"].items():
        (mounted / name).write_bytes(base64.b64decode(value))
    path = tmp_path / "sidecar.yaml"
    path.write_text(text.replace(SECRETS, str(mounted)))
    r = subprocess.run([str(sidecar_binary()), "check", "--config", str(path)], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_service_pdb_and_network_policies_select_the_sidecars_pods(rendered):
    objects, _, _ = rendered
    deployment = objects[("Deployment", "siwa-sidecar")]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    selects = lambda selector: all(labels.get(k) == v for k, v in selector.items())  # noqa: E731
    assert selects(deployment["spec"]["selector"]["matchLabels"])

    service = objects[("Service", "siwa-sidecar")]
    assert selects(service["spec"]["selector"])
    assert [p["targetPort"] for p in service["spec"]["ports"]] == ["http"], "the admin port stays private"

    pdb = objects[("PodDisruptionBudget", "siwa-sidecar")]
    assert pdb["apiVersion"] == "policy/v1" and selects(pdb["spec"]["selector"]["matchLabels"])
    assert 1 <= pdb["spec"]["minAvailable"] < deployment["spec"]["replicas"], "a drain must be able to proceed"

    policy = objects[("NetworkPolicy", "siwa-sidecar")]
    assert selects(policy["spec"]["podSelector"]["matchLabels"])
    assert sorted(policy["spec"]["policyTypes"]) == ["Egress", "Ingress"]
    (allowed,) = policy["spec"]["ingress"]
    assert allowed["from"] == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}}}]
    assert allowed["ports"] == [{"protocol": "TCP", "port": port_of(sidecar_config(objects)["listen"])}]
    egress_ports = {p["port"] for rule in policy["spec"]["egress"] for p in rule.get("ports", [])}
    assert {53, 443, 6379} <= egress_ports  # DNS, Apple, Redis

    # The app takes requests from ingress-nginx (and the sidecar's readiness probe) only: any
    # other pod could send it identity headers of its choosing.
    app = objects[("NetworkPolicy", "app-from-ingress-only")]
    assert app["spec"]["policyTypes"] == ["Ingress"]
    sources = [peer for rule in app["spec"]["ingress"] for peer in rule["from"]]
    assert {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}}} in sources
    assert len(sources) == 2 and any(selects(p.get("podSelector", {}).get("matchLabels", {"x": "y"})) for p in sources)


def test_the_ingress_asks_the_sidecars_service_and_routes_its_endpoints(rendered):
    objects, _, _ = rendered
    config = sidecar_config(objects)
    public = urlsplit(config["public_url"])
    app, own = objects[("Ingress", "app")], objects[("Ingress", "siwa-sidecar")]
    notes = {k[len(PREFIX):]: v for k, v in app["metadata"]["annotations"].items()}
    service = objects[("Service", "siwa-sidecar")]
    auth = urlsplit(notes["auth-url"])
    assert auth.hostname == "%s.%s.svc.cluster.local" % (service["metadata"]["name"], service["metadata"]["namespace"])
    assert auth.port == service["spec"]["ports"][0]["port"] and auth.path == "/.auth/check"
    assert urlsplit(notes["auth-signin"]).path == "/.auth/login"
    namespace, name = notes["auth-proxy-set-headers"].split("/")
    assert (namespace, name) == (app["metadata"]["namespace"], name) and ("ConfigMap", name) in objects
    for ingress in (app, own):
        (rule,) = ingress["spec"]["rules"]
        assert rule["host"] == public.hostname, "public_url is the Ingress host"
        assert ingress["spec"]["tls"][0]["hosts"] == [public.hostname]
    (path,) = own["spec"]["rules"][0]["http"]["paths"]
    assert (path["path"], path["pathType"]) == ("/.auth", "Prefix")
    assert path["backend"]["service"] == {"name": service["metadata"]["name"], "port": {"name": "http"}}
    assert not [k for k in own["metadata"].get("annotations", {}) if "auth-url" in k], "sign-in needs no session"
