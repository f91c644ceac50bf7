# HTTP/2 over TLS: the sidecar (h2 by ALPN) vs nginx `listen … ssl http2`, same certificate,
# both proxying to the same upstream over HTTP/1.1 keep-alive, access logs on for both,
# authenticated requests (the auth case's session cookie and spoofed header). h2load
# (Debian's nghttp2-client) is the load: $CONNS connections, and
#   h2, nginxh2         : 1 stream at a time per connection
#   h2m100, nginxh2m100 : 100 concurrent streams per connection
#   h2base [h2m100base] : (TLS_BASELINE_BIN=another sidecar binary) h2 [and h2m100] against
#            that build's tlsbase listener: an A/B of a change in the same rounds
# Sourced by proxy-bench.sh; the sidecar is the tls case's (tls.sh, sourced if not named).
declare -F case_tls >/dev/null || . Benchmarks/cases.d/tls.sh
command -v h2load >/dev/null || { echo "h2 case: h2load not found (apt install nghttp2-client)" >&2; exit 1; }
# Under callgrind only the one-stream pair (a hundred streams a connection there is too slow
# to finish); name h2m100 to get it anyway.
H2_CASES=(h2 nginxh2 h2m100 nginxh2m100)
if [ "$INSTRUCTIONS" = 1 ]; then H2_CASES=(h2 nginxh2); has_case h2m100 && H2_CASES+=(nginxh2m100); fi
if [ -n "${TLS_BASELINE_BIN:-}" ]; then
  H2_CASES+=(h2base)
  if [ "$INSTRUCTIONS" != 1 ] || has_case h2m100; then H2_CASES+=(h2m100base); fi
fi
for c in "${H2_CASES[@]}"; do has_case "$c" || CASES+=("$c"); done

NGINX_H2_PORT=$(free_port)
NGINX_H2_DIR=$(nginx_conf proxyh2 "ssl_certificate $TLS_CERT; ssl_certificate_key $TLS_KEY;
    ssl_protocols TLSv1.2 TLSv1.3; ssl_session_cache shared:SSL:10m; http2_max_concurrent_streams 128;
    access_log \$NGINX_H2_LOG combined buffer=64k;
    location / { proxy_pass http://backend; proxy_http_version 1.1; proxy_set_header Connection \"\"; }" \
  "upstream backend { server 127.0.0.1:$UP_PORT; keepalive 64; }" "$NGINX_H2_PORT" \
  "$([ "$INSTRUCTIONS" = 1 ] && echo 'master_process off;')")
sed -i -e "s|listen 127.0.0.1:$NGINX_H2_PORT reuseport;|listen 127.0.0.1:$NGINX_H2_PORT ssl http2 reuseport;|" \
  -e "s|\\\$NGINX_H2_LOG|$NGINX_H2_DIR/logs/access.log|" "$NGINX_H2_DIR/nginx.conf"
start_nginx "$NGINX_H2_DIR" "${PROXY_PREFIX[@]}"; NGINX_H2_PID=$NGINX_PID

h2_version() { curl -sk --http2 -o /dev/null -w '%{http_version} %{http_code}' "$@"; }
for _ in $(seq 1 100); do [ "$(h2_version "https://127.0.0.1:$NGINX_H2_PORT/")" = "2 200" ] && break; sleep 0.05; done
sidecar_h2=$(h2_version -H "Cookie: $AUTH_COOKIE" "https://127.0.0.1:$TLS_PORT/")
nginx_h2=$(h2_version "https://127.0.0.1:$NGINX_H2_PORT/")
if [ "$sidecar_h2" != "2 200" ] || [ "$nginx_h2" != "2 200" ]; then
  echo "h2 case: h2 checks failed (sidecar: $sidecar_h2, nginx: $nginx_h2)" >&2; exit 1
fi
echo "== h2: sidecar over h2 with the cookie → $sidecar_h2; nginx over h2 → $nginx_h2"

case_h2() { CASE_PORT=$TLS_PORT; CASE_PIDS="$SIDECAR_TLS_PID"; CASE_SCHEME=https; }
case_nginxh2() { CASE_PORT=$NGINX_H2_PORT; CASE_PIDS="$NGINX_H2_PID"; CASE_SCHEME=https; }
case_h2m100() { case_h2; }
case_h2base() { CASE_PORT=$TLSBASE_PORT; CASE_PIDS="$SIDECAR_TLSBASE_PID"; CASE_SCHEME=https; }
case_h2m100base() { case_h2base; }
case_nginxh2m100() { case_nginxh2; }

# Under callgrind, as many connections as wrk's there (10): each connection's handshake is
# counted in the window, and fewer requests get through.
H2LOAD_CONNS=$CONNS
if [ "$INSTRUCTIONS" = 1 ]; then H2LOAD_CONNS=10; fi

# h2load in place of wrk, its summary printed in wrk's words (requests, Requests/sec, the 99%
# line from the mean request time: h2load reports no percentiles, only min/max/mean/sd).
h2load_run() {  # h2load_run STREAMS
  local out span=(-D"${DURATION%s}" --warm-up-time=1)
  # BENCH_H2_REQUESTS=N: N requests instead of $DURATION, so that builds compared under callgrind
  # on a busy machine share the connections' setup over the same number of requests.
  if [ -n "${BENCH_H2_REQUESTS:-}" ]; then span=(-n"$BENCH_H2_REQUESTS"); fi
  out=$("${CLIENT_CPU[@]}" h2load -t1 -c"$H2LOAD_CONNS" -m"$1" "${span[@]}" \
        -H "Cookie: $AUTH_COOKIE" -H "X-Auth-User-Id: evil" "$CASE_SCHEME://127.0.0.1:$CASE_PORT/" 2>&1)
  awk '
    /^finished in/ { for (i = 1; i <= NF; i++) if ($(i) ~ /req\/s,?$/) rps = $(i - 1) + 0 }
    /^requests:/ { done = $8; failed = $10 + $12 + $14 }
    /^status codes:/ { ok = $3; other = $5 + $7 + $9 }
    /^time for request:/ { mean = $6 }
    END {
      printf "  %d requests in %s\n", done, "h2load"
      printf "Requests/sec: %.2f\n", rps
      printf "     99%%    %s\n", mean
      if (other > 0 || failed > 0) printf "  Non-2xx or Socket errors: %d %d\n", other, failed
    }' <<<"$out"
}
load_h2() { h2load_run 1; }
load_nginxh2() { h2load_run 1; }
load_h2m100() { h2load_run 100; }
load_h2base() { h2load_run 1; }
load_h2m100base() { h2load_run 100; }
load_nginxh2m100() { h2load_run 100; }

# Memory per idle connection, HTTP/2 next to HTTP/1.1 over TLS: the same sidecar, the same
# number of connections, each having completed one authenticated request.
h2_memory_report() {
  idle_rss "tls h1.1" "$TLS_PORT" "$SIDECAR_TLS_PID" tls "Cookie: $AUTH_COOKIE"
  idle_rss "tls h2" "$TLS_PORT" "$SIDECAR_TLS_PID" h2 "Cookie: $AUTH_COOKIE"
}
