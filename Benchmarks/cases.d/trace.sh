# provides: traceoff trace0 trace1 tracebase
# The cost of span export per request, sourced by proxy-bench.sh: the sidecar case's config
# (public paths, no access log) on this build with
#   traceoff  : no tracing.otlp_endpoint (nothing recorded: the sidecar case itself)
#   trace0    : tracing.otlp_endpoint at a local sink (lib/otlp-sink.py), sample_ratio 0
#               (each new trace decided, none recorded)
#   trace1    : the same at sample_ratio 1 (every request's server and upstream spans
#               recorded, queued and posted by the exporter thread, whose work callgrind counts)
#   tracebase : (TRACE_BASELINE_BIN=another sidecar binary) the sidecar case on that build,
#               e.g. the one before span export, in the same rounds
# Named alone (BENCH_CASES="sidecar trace0 trace1"), only the named cases run.
trace_named=0
if [ -z "${BENCH_CASES:-}" ] || has_case trace; then trace_named=1; fi
for c in traceoff trace0 trace1; do
  if [ "$trace_named" = 1 ]; then has_case "$c" || CASES+=("$c"); fi
done

TRACE_SINK_PORT=$(free_port)
python3 Benchmarks/lib/otlp-sink.py "$TRACE_SINK_PORT" >"$WORK/otlp-sink.log" 2>&1 &
TRACE_SINK_PID=$!; PIDS+=("$TRACE_SINK_PID")

start_trace_case() {  # start_trace_case NAME TRACING_YAML [BINARY] → sets <NAME>_PORT/_ADMIN/_PID
  local port admin
  port=$(free_port); admin=$(free_port)
  write_sidecar_config "$WORK/sidecar-$1.yaml" "$port" "$admin" '["/**"]'
  printf '%s' "$2" >>"$WORK/sidecar-$1.yaml"
  start_sidecar_with "$WORK/sidecar-$1.yaml" "${3:-$SIDECAR_BIN}"
  printf -v "${1^^}_PORT" '%s' "$port"; printf -v "${1^^}_ADMIN" '%s' "$admin"
  printf -v "${1^^}_PID" '%s' "$SIDECAR_PID"
  wait_port "$admin" /healthz
}

if has_case traceoff; then start_trace_case traceoff ""; fi
if has_case trace0; then
  start_trace_case trace0 "tracing:
  otlp_endpoint: http://127.0.0.1:$TRACE_SINK_PORT
  sample_ratio: 0
"
fi
if has_case trace1; then
  start_trace_case trace1 "tracing:
  otlp_endpoint: http://127.0.0.1:$TRACE_SINK_PORT
  sample_ratio: 1
"
fi
if [ -n "${TRACE_BASELINE_BIN:-}" ]; then
  if [ "$INSTRUCTIONS" = 1 ]; then strip -g -o "$WORK/sidecar-tracebase" "$TRACE_BASELINE_BIN"; TRACE_BASELINE_BIN=$WORK/sidecar-tracebase; fi
  has_case tracebase || CASES+=(tracebase)
  start_trace_case tracebase "" "$TRACE_BASELINE_BIN"
fi

case_traceoff() { CASE_PORT=$TRACEOFF_PORT; CASE_PIDS="$TRACEOFF_PID"; }
case_trace0() { CASE_PORT=$TRACE0_PORT; CASE_PIDS="$TRACE0_PID"; }
case_trace1() { CASE_PORT=$TRACE1_PORT; CASE_PIDS="$TRACE1_PID"; }
case_tracebase() { CASE_PORT=$TRACEBASE_PORT; CASE_PIDS="$TRACEBASE_PID"; }

# What the exporting sidecars sent: their counters and what the sink received.
trace_report() {
  local c admin
  echo
  for c in trace0 trace1; do
    has_case "$c" || continue
    admin=${c^^}_ADMIN
    printf '%-10s ' "$c"
    curl -s "http://127.0.0.1:${!admin}/metrics" \
      | awk '/^sidecar_trace_(spans_exported|spans_dropped|export_failures)_total / {printf "%s %s  ", $1, $2} END {print ""}'
  done
}
