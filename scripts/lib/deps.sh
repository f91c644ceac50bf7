# Shared by scripts/*: install what this machine lacks (Debian + PyPI only).
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
apt_missing() { local p; for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done; }
apt_ensure() {
  local missing; missing=$(apt_missing "$@")
  if [ -n "$missing" ]; then
    echo "== installing: $missing"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
  fi
}
ensure_build_deps() { apt_ensure libevent-dev libssl-dev liburing-dev libnghttp2-dev pkg-config; }
ensure_test_deps() {
  apt_ensure nginx libnginx-mod-stream openssl curl chromium chromium-driver caddy redis-server redis-sentinel redis-tools haproxy nghttp2-client
  python3 -c 'import pytest, cryptography' 2>/dev/null || python3 -m pip install -q pytest cryptography
  python3 -c 'import selenium' 2>/dev/null || python3 -m pip install -q selenium
  python3 -c 'import jwt' 2>/dev/null || python3 -m pip install -q pyjwt
  python3 -c 'import h2, httpx' 2>/dev/null || python3 -m pip install -q h2 'httpx[http2]'
}
ensure_bench_deps() { apt_ensure nginx wrk openssl procps haproxy; }
