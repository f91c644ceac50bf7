# "TLS: sidecar vs nginx, both terminating TLS, keep-alive, authenticated" (Benchmarks/RESULTS.md):
#   tls      : a sidecar serving HTTPS itself (tls.cert_file/key_file, ECDSA P-256 certificate),
#              no public paths, the auth case's session cookie and spoofed header
#   nginxtls : nginx 1 worker terminating TLS with the same certificate (TLS 1.2/1.3, session
#              cache), proxy_pass with upstream keepalive, sent the very same requests
# wrk keeps its connections (one handshake each), so this measures TLS record processing
# and the proxying behind it. Sourced by proxy-bench.sh after auth.sh (sourced if not named).
[ -n "${AUTH_COOKIE:-}" ] || . Benchmarks/cases.d/auth.sh
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

tls_status() { curl -sk -o /dev/null -w '%{http_code}' "$@"; }
for _ in $(seq 1 100); do [ "$(tls_status "https://127.0.0.1:$NGINX_TLS_PORT/")" = 200 ] && break; sleep 0.05; done
with=$(tls_status -H "Cookie: $AUTH_COOKIE" "https://127.0.0.1:$TLS_PORT/")
without=$(tls_status -H 'Accept: application/json' "https://127.0.0.1:$TLS_PORT/")
nginx_status=$(tls_status "https://127.0.0.1:$NGINX_TLS_PORT/")
if [ "$with" != 200 ] || [ "$without" != 401 ] || [ "$nginx_status" != 200 ]; then
  echo "tls case: https checks failed (sidecar with cookie $with, without $without; nginx $nginx_status)" >&2
  cat "$WORK/sidecar-tls.yaml.log" >&2; exit 1
fi
echo "== tls: sidecar over https: cookie → $with, none → $without; nginx over https → $nginx_status"

case_tls() { CASE_PORT=$TLS_PORT; CASE_PIDS="$SIDECAR_TLS_PID"; CASE_SCHEME=https; }
wrk_args_tls() { wrk_args_auth; }
case_nginxtls() { CASE_PORT=$NGINX_TLS_PORT; CASE_PIDS="$NGINX_TLS_PID"; CASE_SCHEME=https; }
wrk_args_nginxtls() { wrk_args_auth; }
