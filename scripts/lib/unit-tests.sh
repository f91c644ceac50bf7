#!/usr/bin/env bash
# The Swift unit tests, as `swift build --build-tests` left them, in UNIT_SHARDS processes at
# once (default 8), each one xctest process over every UNIT_SHARDS-th test. Why not
# `swift test --parallel`: it starts one process per test, and 760 starts of a 40 MB debug
# binary cost more CPU than the tests; why not one process: the tests mostly wait on timers and
# sockets (143 s one after another, 29 s of CPU), so eight at a time finish in about a sixth.
# Tests must not depend on running alone in their process, as `swift test --parallel` already
# required; a test that crashes its process fails its shard, which prints its log.
set -euo pipefail
cd "$(dirname "$0")/../.."
# UNIT_CONFIGURATION: the build whose tests run (debug, or release as scripts/test builds it).
configuration="${UNIT_CONFIGURATION:-debug}"
bin=".build/$configuration/sidecarPackageTests.xctest"
[ -x "$bin" ] || { echo "no $bin: run \`swift build -c $configuration --build-tests\` first" >&2; exit 1; }
shards="${UNIT_SHARDS:-8}"
logs="$(mktemp -d "${TMPDIR:-/tmp}/sidecar-unit.XXXXXX")"
trap 'rm -rf "$logs"' EXIT

# "Module.Class/testName", one a line: spread round-robin, so one class's slow tests spread too.
"$bin" --list-tests | grep '/' | sed 's/^[[:space:]]*//' > "$logs/all"
total=$(wc -l < "$logs/all")
[ "$total" -gt 0 ] || { echo "no unit tests listed by $bin" >&2; exit 1; }
pids=()
for ((i = 0; i < shards; i++)); do
  awk -v n="$shards" -v i="$i" '(NR - 1) % n == i' "$logs/all" | paste -sd, > "$logs/list$i"
  if [ -s "$logs/list$i" ]; then
    "$bin" "$(cat "$logs/list$i")" > "$logs/shard$i" 2>&1 &
    pids[i]=$!
  fi
done
failed=0
executed=0
for i in "${!pids[@]}"; do
  status=0
  wait "${pids[$i]}" || status=$?
  ran=$(grep -oE "Executed [0-9]+ tests?" "$logs/shard$i" | tail -n 1 | grep -oE "[0-9]+" || echo 0)
  executed=$((executed + ran))
  if [ "$status" != 0 ]; then
    failed=$((failed + 1))
    echo "-- unit test shard $i failed (exit $status): its failures, then its last lines"
    grep -E "error: |failed \(|Fatal error|Crash" "$logs/shard$i" | head -n 50 || true
    tail -n 30 "$logs/shard$i"
  fi
done
echo "unit tests: $executed of $total ran in $shards processes; $failed process(es) failed"
[ "$failed" = 0 ] && [ "$executed" = "$total" ]
