# provides: httpsup nginxhttpsup
# "HTTPS upstream: sidecar vs nginx proxy_pass https://" (Benchmarks/RESULTS.md): the sidecar
# case (everything public, GET /) with its upstream an nginx serving `return 200` over TLS
# (ECDSA P-256 certificate for upstream.test and 127.0.0.1), against nginx 1 worker proxying to
# that upstream with `proxy_pass https://`, `keepalive 64` and `proxy_ssl_session_reuse on`.
# Both verify the certificate against the same CA file and send the same SNI name
# (upstream_tls.ca_file and server_name; proxy_ssl_verify, proxy_ssl_trusted_certificate and
# proxy_ssl_name), and both keep their upstream connections: this measures TLS records on the
# upstream side and the proxying around them, not handshakes.
# Named alone (BENCH_CASES="httpsup" or "nginxhttpsup"), only the named case runs.
for c in httpsup nginxhttpsup; do
  if [ -z "${BENCH_CASES:-}" ]; then has_case "$c" || CASES+=("$c"); fi
done

HTTPSUP_CERT="$WORK/httpsup-cert.pem"; HTTPSUP_KEY="$WORK/httpsup-key.pem"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=upstream.test \
  -addext "subjectAltName=DNS:upstream.test,IP:127.0.0.1" -keyout "$HTTPSUP_KEY" -out "$HTTPSUP_CERT" 2>/dev/null

UPTLS_PORT=$(free_port)
UPTLS_DIR=$(nginx_conf upstreamtls "ssl_certificate $HTTPSUP_CERT; ssl_certificate_key $HTTPSUP_KEY;
    ssl_protocols TLSv1.2 TLSv1.3; ssl_session_cache shared:SSLUP:10m;
    location / { return 200 \"ok\n\"; }" "" "$UPTLS_PORT")
sed -i "s|listen 127.0.0.1:$UPTLS_PORT reuseport;|listen 127.0.0.1:$UPTLS_PORT ssl reuseport;|" "$UPTLS_DIR/nginx.conf"
start_nginx "$UPTLS_DIR" "${UPSTREAM_CPU[@]}" env; UPTLS_PID=$NGINX_PID
for _ in $(seq 1 100); do
  [ "$(curl -sk -o /dev/null -w '%{http_code}' "https://127.0.0.1:$UPTLS_PORT/")" = 200 ] && break; sleep 0.05
done

if has_case httpsup; then
  HTTPSUP_PORT=$(free_port); HTTPSUP_ADMIN=$(free_port)
  write_sidecar_config "$WORK/sidecar-httpsup.yaml" "$HTTPSUP_PORT" "$HTTPSUP_ADMIN" '["/**"]'
  sed -i "s|^upstream: .*|upstream: https://127.0.0.1:$UPTLS_PORT|" "$WORK/sidecar-httpsup.yaml"
  printf 'upstream_tls:\n  ca_file: %s\n  server_name: upstream.test\n' "$HTTPSUP_CERT" >>"$WORK/sidecar-httpsup.yaml"
  start_sidecar_with "$WORK/sidecar-httpsup.yaml"; SIDECAR_HTTPSUP_PID=$SIDECAR_PID
  wait_port "$HTTPSUP_PORT" || { cat "$WORK/sidecar-httpsup.yaml.log" >&2; exit 1; }
fi
if has_case nginxhttpsup; then
  NGINX_HTTPSUP_PORT=$(free_port)
  NGINX_HTTPSUP_DIR=$(nginx_conf proxyhttpsup "location / {
      proxy_pass https://backend_tls; proxy_http_version 1.1; proxy_set_header Connection \"\";
      proxy_ssl_session_reuse on; proxy_ssl_server_name on; proxy_ssl_name upstream.test;
      proxy_ssl_verify on; proxy_ssl_trusted_certificate $HTTPSUP_CERT;
    }" "upstream backend_tls { server 127.0.0.1:$UPTLS_PORT; keepalive 64; }" "$NGINX_HTTPSUP_PORT" \
    "$([ "$INSTRUCTIONS" = 1 ] && echo 'master_process off;')")
  start_nginx "$NGINX_HTTPSUP_DIR" "${PROXY_PREFIX[@]}"; NGINX_HTTPSUP_PID=$NGINX_PID
  wait_port "$NGINX_HTTPSUP_PORT" || { cat "$NGINX_HTTPSUP_DIR/logs/error.log" >&2; exit 1; }
fi

case_httpsup() { CASE_PORT=$HTTPSUP_PORT; CASE_PIDS="$SIDECAR_HTTPSUP_PID"; }
case_nginxhttpsup() { CASE_PORT=$NGINX_HTTPSUP_PORT; CASE_PIDS="$NGINX_HTTPSUP_PID"; }
