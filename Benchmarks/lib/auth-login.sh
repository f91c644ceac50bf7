# Sourced by cases.d files that need a real session (auth.sh, sessions.sh), once:
# `sidecar emulator` as Apple, a sidecar with NO public paths in front of the nginx upstream,
# and one real login through the emulator → AUTH_COOKIE (`name=value`), SIDECAR_AUTH_PID,
# AUTH_PORT. Every sidecar written by write_sidecar_config shares its session secret, so the
# cookie (and sessions minted from it) open at all of them.
[ -n "${AUTH_LOGIN_DONE:-}" ] && return 0
AUTH_LOGIN_DONE=1

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
