# Authenticated proxying (SPEC §8 first target), sourced by proxy-bench.sh:
# `sidecar emulator` as Apple, a sidecar with NO public paths in front of the nginx upstream,
# one real login through the emulator for a session cookie; wrk then sends that cookie and a
# spoofed X-Auth-User-Id on every request (so the session is opened, the spoofed header
# stripped and the identity headers injected each time). Any non-2xx answer fails the run.
has_case auth || CASES+=(auth)

AUTH_PORT=$(free_port); AUTH_ADMIN=$(free_port); EMULATOR_PORT=$(free_port)
"${SERVER_CPU[@]}" "$SIDECAR_BIN" emulator --listen "127.0.0.1:$EMULATOR_PORT" --team-id BENCH12345 \
  --client "com.example.bench=http://127.0.0.1:$AUTH_PORT/.auth/callback" \
  --client-key "BENCH12345=$APPLE_KEY" --auto-approve bench.user@example.com \
  >"$WORK/emulator.log" 2>&1 &
EMULATOR_PID=$!; PIDS+=("$EMULATOR_PID")
for _ in $(seq 1 200); do grep -q "issuer " "$WORK/emulator.log" && break; sleep 0.05; done
grep -q "issuer " "$WORK/emulator.log" || { cat "$WORK/emulator.log" >&2; echo "emulator did not start" >&2; exit 1; }

write_sidecar_config "$WORK/sidecar-auth.yaml" "$AUTH_PORT" "$AUTH_ADMIN" '[]' \
  "http://127.0.0.1:$EMULATOR_PORT"
start_sidecar_with "$WORK/sidecar-auth.yaml"; SIDECAR_AUTH_PID=$SIDECAR_PID
wait_port "$AUTH_ADMIN" /healthz

AUTH_COOKIE=$(python3 Benchmarks/siwa_client.py "$AUTH_PORT" "$EMULATOR_PORT")
auth_get() {  # auth_get PATH [CURL_ARGS…] → status; the body is left in $WORK/auth-body
  local path=$1; shift
  curl -s -o "$WORK/auth-body" -w '%{http_code}' "$@" "http://127.0.0.1:$AUTH_PORT$path"
}
without=$(auth_get / -H 'Accept: text/html')
with=$(auth_get / -H "Cookie: $AUTH_COOKIE")
echo_status=$(auth_get /echo-user-id -H "Cookie: $AUTH_COOKIE" -H 'X-Auth-User-Id: evil')
seen=$(cat "$WORK/auth-body")
if [ "$without" != 302 ] || [ "$with" != 200 ] || [ "$echo_status" != 200 ] \
   || [ "$seen" = "[evil]" ] || [ "$seen" = "[]" ]; then
  echo "auth case: session check failed (no cookie: $without, cookie: $with, upstream saw: $echo_status $seen)" >&2
  exit 1
fi
echo "== auth: login via emulator ok; no cookie → $without, cookie → $with;" \
  "spoofed X-Auth-User-Id: evil reached the upstream as $seen"

case_auth() { CASE_PORT=$AUTH_PORT; CASE_PIDS="$SIDECAR_AUTH_PID"; }
wrk_args_auth() { printf '%s\n' -H "Cookie: $AUTH_COOKIE" -H "X-Auth-User-Id: evil"; }

# Like for like: nginx proxy_pass sent the very requests of the auth case (the session cookie
# and the spoofed header, which nginx forwards as they are), for the cost of the larger head.
has_case nginxcookie || CASES+=(nginxcookie)
case_nginxcookie() { case_nginx; }
wrk_args_nginxcookie() { wrk_args_auth; }

# The same session as `Authorization: Bearer <token>` (a native app's requests): the token is
# found in another header and removed before forwarding; the cookie case's cost otherwise.
bearer_status=$(auth_get /echo-user-id -H "Authorization: Bearer ${AUTH_COOKIE#*=}")
[ "$bearer_status" = 200 ] || { echo "bearer case: the session as a bearer token got $bearer_status" >&2; exit 1; }
has_case bearer || CASES+=(bearer)
case_bearer() { case_auth; }
wrk_args_bearer() { printf '%s\n' -H "Authorization: Bearer ${AUTH_COOKIE#*=}" -H "X-Auth-User-Id: evil"; }
