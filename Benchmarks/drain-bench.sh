#!/usr/bin/env bash
# SIGTERM under load — not a test: wrk -c256 against the sidecar (public paths,
# keep-alive) in front of an nginx upstream; SIGTERM at DRAIN_AFTER seconds; wrk's socket
# errors are printed. `read` errors are requests the sidecar received and did not answer (the
# target is 0); `connect` errors are new connections refused once the listener is closed.
# Env: CONNS [256], DURATION [6s], DRAIN_AFTER [2], SIDECAR_BIN [release build].
set -euo pipefail
cd "$(dirname "$0")/.."
CONNS=${CONNS:-256}; DURATION=${DURATION:-6s}; DRAIN_AFTER=${DRAIN_AFTER:-2}
. Benchmarks/lib/standalone.sh
UP=$(free_port); PORT=$(free_port); ADMIN=$(free_port)
mkdir -p "$WORK/up/logs"
cat >"$WORK/up/nginx.conf" <<CONF
worker_processes 1; daemon off; pid $WORK/up/nginx.pid; error_log $WORK/up/logs/error.log warn;
events { worker_connections 4096; }
http { access_log off; keepalive_requests 1000000;
  client_body_temp_path $WORK/up/b; proxy_temp_path $WORK/up/p; fastcgi_temp_path $WORK/up/f;
  uwsgi_temp_path $WORK/up/u; scgi_temp_path $WORK/up/s;
  server { listen 127.0.0.1:$UP; location / { return 200 "ok\n"; } } }
CONF
taskset -c 0 nginx -p "$WORK/up" -c "$WORK/up/nginx.conf" -e "$WORK/up/logs/error.log" & PIDS+=("$!")
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$WORK/key.p8" 2>/dev/null
cat >"$WORK/sidecar.yaml" <<YAML
listen: 127.0.0.1:$PORT
public_url: http://127.0.0.1:$PORT
upstream: http://127.0.0.1:$UP
workers: 1
apple: {team_id: BENCH12345, client_id: com.example.bench, key_id: BENCH12345, private_key_file: $WORK/key.p8, base_url: "http://127.0.0.1:$UP"}
session: {secrets: ["$(openssl rand -base64 32)"]}
admin: {listen: "127.0.0.1:$ADMIN"}
access: {public_paths: ["/**"]}
log: {access: false, level: warning}
YAML
taskset -c 0 "$SIDECAR_BIN" run --config "$WORK/sidecar.yaml" >"$WORK/sidecar.log" 2>&1 & SIDECAR=$!; PIDS+=("$SIDECAR")
for _ in $(seq 1 200); do curl -s -o /dev/null "http://127.0.0.1:$PORT/" && break; sleep 0.05; done
( sleep "$DRAIN_AFTER"; kill -TERM "$SIDECAR" ) &
taskset -c 1 wrk -t1 -c"$CONNS" -d"$DURATION" "http://127.0.0.1:$PORT/" | tee "$WORK/wrk.txt"
wait "$SIDECAR" && status=0 || status=$?
echo "sidecar exit status after SIGTERM: $status"
grep -q "Socket errors" "$WORK/wrk.txt" || echo "Socket errors: none"
grep "Socket errors" "$WORK/wrk.txt" | grep -q "read 0," && echo "read errors: 0 (target 0)" \
  || { grep -q "Socket errors" "$WORK/wrk.txt" && echo "read errors: NOT 0"; } || true
