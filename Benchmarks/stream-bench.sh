#!/usr/bin/env bash
# Streaming benchmark — not a test: one 200 MB response (SIZE_MB) through
# the sidecar and through nginx proxy_pass, from an nginx upstream serving the file from the
# page cache (sendfile), read by curl into /dev/null; ROUNDS alternating rounds, the servers on
# CPU 0 and curl on CPU 1. Prints GB/s per round and the medians.
#
# Env: SIZE_MB [200], ROUNDS [5], SIDECAR_BIN [release build], BEFORE_BIN [none]: a second
# sidecar binary (e.g. an older build) measured the same way, as `before`.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE_MB=${SIZE_MB:-200}; ROUNDS=${ROUNDS:-5}
. Benchmarks/lib/standalone.sh
wait_port() {
  for _ in $(seq 1 200); do
    curl -s -o /dev/null "http://127.0.0.1:$1${2:-/}" && return 0
    sleep 0.05
  done
  echo "nothing answers on port $1" >&2; exit 1
}

head -c "$((SIZE_MB * 1000 * 1000))" /dev/urandom >"$WORK/big"
chmod 755 "$WORK"; chmod 644 "$WORK/big"  # nginx workers run as nobody when started as root
UP_PORT=$(free_port); NGINX_PORT=$(free_port)
nginx_conf() {  # nginx_conf NAME PORT LOCATION_BODY [HTTP_EXTRA]
  mkdir -p "$WORK/$1/logs"
  cat >"$WORK/$1/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $WORK/$1/nginx.pid;
error_log $WORK/$1/logs/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $WORK/$1/body; proxy_temp_path $WORK/$1/proxy;
  fastcgi_temp_path $WORK/$1/fcgi; uwsgi_temp_path $WORK/$1/uwsgi; scgi_temp_path $WORK/$1/scgi;
  sendfile on;
  ${4:-}
  server { listen 127.0.0.1:$2; location / { $3 } }
}
CONF
  taskset -c 0 nginx -p "$WORK/$1" -c "$WORK/$1/nginx.conf" -e "$WORK/$1/logs/error.log" &
  PIDS+=("$!")
}
nginx_conf upstream "$UP_PORT" "root $WORK;"
# nginx in front: upstream keepalive, the response streamed through its buffers (the default
# proxy_buffering, with no temp file so nothing touches the disk).
nginx_conf proxy "$NGINX_PORT" "proxy_pass http://backend; proxy_http_version 1.1;
    proxy_set_header Connection \"\"; proxy_max_temp_file_size 0;" \
  "upstream backend { server 127.0.0.1:$UP_PORT; keepalive 16; }"
wait_port "$UP_PORT" /big; wait_port "$NGINX_PORT" /big

KEY="$WORK/AuthKey_BENCH12345.p8"
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$KEY" 2>/dev/null
# Not run in a command substitution: its PIDS+= would stay in the subshell and cleanup would
# leave the sidecar running.
start_sidecar() {  # start_sidecar NAME BINARY → sets PORT[NAME]
  local port admin
  port=$(free_port); admin=$(free_port)
  cat >"$WORK/$1.yaml" <<YAML
listen: 127.0.0.1:$port
public_url: http://127.0.0.1:$port
upstream: http://127.0.0.1:$UP_PORT
workers: 1
apple: {team_id: BENCH12345, client_id: com.example.bench, key_id: BENCH12345, private_key_file: $KEY, base_url: "http://127.0.0.1:$UP_PORT"}
session: {secrets: ["$(openssl rand -base64 32)"]}
admin: {listen: "127.0.0.1:$admin"}
access: {public_paths: ["/**"]}
log: {access: false, level: warning}
YAML
  taskset -c 0 "$2" run --config "$WORK/$1.yaml" >"$WORK/$1.log" 2>&1 &
  PIDS+=("$!")
  PORT[$1]=$port
}
declare -A PORT
start_sidecar sidecar "$SIDECAR_BIN"
CASES=(nginx sidecar)
PORT[nginx]=$NGINX_PORT
if [ -n "${BEFORE_BIN:-}" ]; then start_sidecar before "$BEFORE_BIN"; CASES+=(before); fi
for c in "${CASES[@]}"; do wait_port "${PORT[$c]}" /big; done

echo "== ${SIZE_MB} MB through each, $ROUNDS rounds (curl on CPU 1, servers on CPU 0)"
declare -A RATES
for round in $(seq 1 "$ROUNDS"); do
  for c in "${CASES[@]}"; do
    out=$(taskset -c 1 curl -s -o /dev/null -w '%{http_code} %{size_download} %{speed_download}' \
      "http://127.0.0.1:${PORT[$c]}/big")
    read -r code size speed <<<"$out"
    if [ "$code" != 200 ] || [ "$size" != "$((SIZE_MB * 1000 * 1000))" ]; then
      echo "$c: status $code, $size bytes" >&2; exit 1
    fi
    gbs=$(awk -v s="$speed" 'BEGIN {printf "%.2f", s / 1e9}')
    RATES[$c]="${RATES[$c]:-} $gbs"
    printf '  round %d %-8s %6s GB/s\n' "$round" "$c" "$gbs"
  done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
for c in "${CASES[@]}"; do
  printf '%-8s %6.2f GB/s (median)\n' "$c" "$(median <<<"${RATES[$c]}")"
done
awk -v s="$(median <<<"${RATES[sidecar]}")" -v n="$(median <<<"${RATES[nginx]}")" \
  'BEGIN {printf "sidecar / nginx: %.2f (target: ahead of nginx)\n", s / n}'
if [ -n "${BEFORE_BIN:-}" ]; then
  awk -v s="$(median <<<"${RATES[sidecar]}")" -v b="$(median <<<"${RATES[before]}")" \
    'BEGIN {printf "sidecar / before: %.2f (must not regress)\n", s / b}'
fi
