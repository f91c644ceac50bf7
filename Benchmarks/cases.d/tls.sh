# "TLS: sidecar vs nginx, both terminating TLS, keep-alive, authenticated" (Benchmarks/RESULTS.md):
#   tls      : a sidecar serving HTTPS itself (tls.cert_file/key_file, ECDSA P-256 certificate),
#              no public paths, the auth case's session cookie and spoofed header
#   nginxtls : nginx 1 worker terminating TLS with the same certificate (TLS 1.2/1.3, session
#              cache), proxy_pass with upstream keepalive, sent the very same requests
#   tlsbase  : (TLS_BASELINE_BIN=another sidecar binary) the tls case with that build: an A/B of
#              two builds in the same rounds
#   tlsw2, nginxtlsw2 (TLS_WORKERS2=1): the same with workers: 2 and worker_processes 2, for
#              BENCH_SERVER_CPUS=0,1 (two cores for the proxies; wrk and the upstream elsewhere)
# wrk keeps its connections (one handshake each), so this measures TLS record processing
# and the proxying behind it. Sourced by proxy-bench.sh after auth.sh (sourced if not named).
declare -F wrk_args_auth >/dev/null || . Benchmarks/cases.d/auth.sh  # (sessions.sh logs in too, without the auth case)
has_case tls || CASES+=(tls)
has_case nginxtls || CASES+=(nginxtls)

TLS_CERT="$WORK/tls-cert.pem"; TLS_KEY="$WORK/tls-key.pem"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=127.0.0.1 \
  -addext "subjectAltName=IP:127.0.0.1" -keyout "$TLS_KEY" -out "$TLS_CERT" 2>/dev/null

TLS_PORT=$(free_port); TLS_ADMIN=$(free_port)
write_sidecar_config "$WORK/sidecar-tls.yaml" "$TLS_PORT" "$TLS_ADMIN" '[]' "http://127.0.0.1:$EMULATOR_PORT"
# https public_url; the auth case's cookie name, so its session (same secret) opens here too.
sed -i "s|^public_url: .*|public_url: https://127.0.0.1:$TLS_PORT|" "$WORK/sidecar-tls.yaml"
printf 'tls:\n  cert_file: %s\n  key_file: %s\n' "$TLS_CERT" "$TLS_KEY" >>"$WORK/sidecar-tls.yaml"
sed -i "s|^session:|session:\n  cookie_name: ${AUTH_COOKIE%%=*}|" "$WORK/sidecar-tls.yaml"
start_sidecar_with "$WORK/sidecar-tls.yaml"; SIDECAR_TLS_PID=$SIDECAR_PID
wait_port "$TLS_ADMIN" /healthz

NGINX_TLS_PORT=$(free_port)
NGINX_TLS_DIR=$(nginx_conf proxytls "ssl_certificate $TLS_CERT; ssl_certificate_key $TLS_KEY;
    ssl_protocols TLSv1.2 TLSv1.3; ssl_session_cache shared:SSL:10m;
    location / { proxy_pass http://backend; proxy_http_version 1.1; proxy_set_header Connection \"\"; }" \
  "upstream backend { server 127.0.0.1:$UP_PORT; keepalive 64; }" "$NGINX_TLS_PORT" \
  "$([ "$INSTRUCTIONS" = 1 ] && echo 'master_process off;')")
sed -i "s|listen 127.0.0.1:$NGINX_TLS_PORT reuseport;|listen 127.0.0.1:$NGINX_TLS_PORT ssl reuseport;|" \
  "$NGINX_TLS_DIR/nginx.conf"
start_nginx "$NGINX_TLS_DIR" "${PROXY_PREFIX[@]}"; NGINX_TLS_PID=$NGINX_PID

if [ -n "${TLS_BASELINE_BIN:-}" ]; then
  has_case tlsbase || CASES+=(tlsbase)
  TLSBASE_PORT=$(free_port); TLSBASE_ADMIN=$(free_port)
  sed -e "s|127.0.0.1:$TLS_PORT|127.0.0.1:$TLSBASE_PORT|g" -e "s|127.0.0.1:$TLS_ADMIN|127.0.0.1:$TLSBASE_ADMIN|" \
    "$WORK/sidecar-tls.yaml" >"$WORK/sidecar-tlsbase.yaml"
  start_sidecar_with "$WORK/sidecar-tlsbase.yaml" "$TLS_BASELINE_BIN"; SIDECAR_TLSBASE_PID=$SIDECAR_PID
  wait_port "$TLSBASE_ADMIN" /healthz
  case_tlsbase() { CASE_PORT=$TLSBASE_PORT; CASE_PIDS="$SIDECAR_TLSBASE_PID"; CASE_SCHEME=https; }
  wrk_args_tlsbase() { wrk_args_auth; }
fi
if [ "${TLS_WORKERS2:-0}" = 1 ]; then
  has_case tlsw2 || CASES+=(tlsw2)
  has_case nginxtlsw2 || CASES+=(nginxtlsw2)
  TLSW2_PORT=$(free_port); TLSW2_ADMIN=$(free_port)
  sed -e "s|127.0.0.1:$TLS_PORT|127.0.0.1:$TLSW2_PORT|g" -e "s|127.0.0.1:$TLS_ADMIN|127.0.0.1:$TLSW2_ADMIN|" \
    -e 's/^workers: 1/workers: 2/' "$WORK/sidecar-tls.yaml" >"$WORK/sidecar-tlsw2.yaml"
  grep -q '^workers: 2' "$WORK/sidecar-tlsw2.yaml" || { echo "tls case: no workers line to raise" >&2; exit 1; }
  start_sidecar_with "$WORK/sidecar-tlsw2.yaml"; SIDECAR_TLSW2_PID=$SIDECAR_PID
  wait_port "$TLSW2_ADMIN" /healthz
  NGINX_TLSW2_PORT=$(free_port); NGINX_TLSW2_DIR=$WORK/proxytlsw2
  cp -r "$NGINX_TLS_DIR" "$NGINX_TLSW2_DIR"
  sed -i -e "s|$NGINX_TLS_DIR|$NGINX_TLSW2_DIR|g" -e "s|127.0.0.1:$NGINX_TLS_PORT |127.0.0.1:$NGINX_TLSW2_PORT |" \
    -e 's/^worker_processes 1;/worker_processes 2;/' "$NGINX_TLSW2_DIR/nginx.conf"
  start_nginx "$NGINX_TLSW2_DIR" "${PROXY_PREFIX[@]}"; NGINX_TLSW2_PID=$NGINX_PID
  case_tlsw2() { CASE_PORT=$TLSW2_PORT; CASE_PIDS="$SIDECAR_TLSW2_PID"; CASE_SCHEME=https; }
  wrk_args_tlsw2() { wrk_args_auth; }
  case_nginxtlsw2() { CASE_PORT=$NGINX_TLSW2_PORT; CASE_PIDS="$NGINX_TLSW2_PID"; CASE_SCHEME=https; }
  wrk_args_nginxtlsw2() { wrk_args_auth; }
fi

tls_status() { curl -sk -o /dev/null -w '%{http_code}' "$@"; }
for _ in $(seq 1 100); do [ "$(tls_status "https://127.0.0.1:$NGINX_TLS_PORT/")" = 200 ] && break; sleep 0.05; done
with=$(tls_status -H "Cookie: $AUTH_COOKIE" "https://127.0.0.1:$TLS_PORT/")
without=$(tls_status -H 'Accept: application/json' "https://127.0.0.1:$TLS_PORT/")
nginx_status=$(tls_status "https://127.0.0.1:$NGINX_TLS_PORT/")
if [ "${TLS_WORKERS2:-0}" = 1 ]; then
  for _ in $(seq 1 100); do [ "$(tls_status "https://127.0.0.1:$NGINX_TLSW2_PORT/")" = 200 ] && break; sleep 0.05; done
  w2=$(tls_status -H "Cookie: $AUTH_COOKIE" "https://127.0.0.1:$TLSW2_PORT/")
  [ "$w2" = 200 ] && [ "$(tls_status "https://127.0.0.1:$NGINX_TLSW2_PORT/")" = 200 ] \
    || { echo "tls case: workers: 2 servers do not answer 200 (sidecar $w2)" >&2; exit 1; }
fi
if [ "$with" != 200 ] || [ "$without" != 401 ] || [ "$nginx_status" != 200 ]; then
  echo "tls case: https checks failed (sidecar with cookie $with, without $without; nginx $nginx_status)" >&2
  cat "$WORK/sidecar-tls.yaml.log" >&2; exit 1
fi
echo "== tls: sidecar over https: cookie → $with, none → $without; nginx over https → $nginx_status"

case_tls() { CASE_PORT=$TLS_PORT; CASE_PIDS="$SIDECAR_TLS_PID"; CASE_SCHEME=https; }
wrk_args_tls() { wrk_args_auth; }
case_nginxtls() { CASE_PORT=$NGINX_TLS_PORT; CASE_PIDS="$NGINX_TLS_PID"; CASE_SCHEME=https; }
wrk_args_nginxtls() { wrk_args_auth; }
