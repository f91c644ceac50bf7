# Shared set-up of the benchmark scripts (proxy-bench.sh, stream-bench.sh, drain-bench.sh):
# the benchmark dependencies, the sidecar binary (the static release build, ~6 MiB less RSS
# than the shared Swift libraries; skipped with STANDALONE_NO_SIDECAR=1), a work directory
# whose servers (PIDS) are stopped and which is removed on exit, and free loopback ports.
# Sourced from the repo root.
. scripts/lib/deps.sh
ensure_bench_deps
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
if [ -z "${SIDECAR_BIN:-}" ] && [ "${STANDALONE_NO_SIDECAR:-0}" != 1 ]; then
  echo "== swift build -c release --static-swift-stdlib --product sidecar"
  swift build -c release --static-swift-stdlib --product sidecar >/dev/null
  SIDECAR_BIN=$(swift build -c release --static-swift-stdlib --show-bin-path)/sidecar
fi
WORK=$(mktemp -d "/tmp/$(basename "$0" .sh).XXXXXX")
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
