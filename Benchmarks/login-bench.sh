#!/usr/bin/env bash
# Login throughput probe (target: ≥ 500 complete logins/s against the local emulator) —
# not a test. Builds the release binary unless SIDECAR_BIN is set, then runs
# Benchmarks/login-bench.py (its options pass through: --workers 1,2 --duration 10 --clients 16).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${SIDECAR_BIN:-}" ]; then
  # Static Swift runtime and Foundation: ~6 MiB less RSS than the shared libraries.
  echo "== swift build -c release --static-swift-stdlib --product sidecar"
  swift build -c release --static-swift-stdlib --product sidecar >/dev/null
  SIDECAR_BIN=$(swift build -c release --static-swift-stdlib --show-bin-path)/sidecar
fi
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
exec python3 Benchmarks/login-bench.py --bin "$SIDECAR_BIN" "$@"
