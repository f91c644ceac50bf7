# Shared by scripts/*: install what this machine lacks (Debian + PyPI only).
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
apt_missing() { local p; for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done; }
APT_UPDATED="${APT_UPDATED:-}"
apt_ensure() {
  local missing; missing=$(apt_missing "$@")
  [ -n "$missing" ] || return 0
  echo "== installing: $missing"
  if [ -z "$APT_UPDATED" ]; then
    $SUDO apt-get update -qq
    APT_UPDATED=1
  fi
  local options=()
  if [ -n "${CI:-}" ]; then
    # CI's machine is new and thrown away after the run: dpkg need not sync each file to disk,
    # and nobody reads man-db's index, which each install would otherwise rebuild.
    options=(-o Dpkg::Options::=--force-unsafe-io)
    $SUDO rm -f /var/lib/man-db/auto-update
  fi
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${options[@]}" $missing >/dev/null
}
ensure_build_deps() { apt_ensure libevent-dev libssl-dev liburing-dev libnghttp2-dev pkg-config; }
ensure_test_deps() {
  # One apt-get run: dpkg's triggers (fontconfig's cache, the desktop databases) run once.
  local packages=(nginx libnginx-mod-stream libnginx-mod-http-set-misc openssl curl chromium chromium-driver caddy
    redis-server redis-sentinel redis-tools haproxy nghttp2-client buildah podman runc pebble libnss3-tools)
  # Fonts for the pages' Japanese, Korean, Chinese, Arabic and Hebrew screenshots (test_pages_languages.py).
  packages+=(fonts-noto-cjk fonts-noto-core)
  # kubectl (`kubectl kustomize`): Debian's, unless one is installed already (another package's
  # /usr/bin/kubectl, a cloud SDK's, would make installing kubernetes-client fail).
  command -v kubectl >/dev/null || packages+=(kubernetes-client)
  apt_ensure "${packages[@]}"
  # The pinned versions, installed only where one is missing or differs (pip's own check).
  local requirements=Tests/integration/requirements.txt
  if ! python3 - "$requirements" <<'PY' 2>/dev/null; then
import sys
from importlib.metadata import version
for line in open(sys.argv[1]):
    line = line.split("#", 1)[0].strip()
    if line:
        name, pinned = line.split("==")
        assert version(name.split("[")[0]) == pinned, name
PY
    echo "== installing the pinned Python test dependencies ($requirements)"
    python3 -m pip install -q -r "$requirements"
  fi
}
ensure_bench_deps() { apt_ensure nginx wrk openssl procps haproxy; }
