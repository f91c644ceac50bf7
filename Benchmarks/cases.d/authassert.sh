# "Assertion on vs off" (Benchmarks/RESULTS.md): the auth case's very requests (its session
# cookie, a spoofed X-Auth-User-Id) to a second sidecar that differs only by
# `assertion.enabled: true`, so every forwarded request also carries a signed ES256 assertion
# (X-Auth-Assertion, ~600 bytes more per upstream head). Signing is once per session per
# `assertion.ttl`, not per request: compare `authassert` with `auth` (target: within 10 %).
# The sessions are sealed with the same secret and cookie name, so the auth case's login
# serves both. Sourced by proxy-bench.sh after auth.sh (which it sources if not named).
declare -F wrk_args_auth >/dev/null || . Benchmarks/cases.d/auth.sh  # (sessions.sh logs in too, without the auth case)
has_case authassert || CASES+=(authassert)

ASSERT_PORT=$(free_port); ASSERT_ADMIN=$(free_port)
write_sidecar_config "$WORK/sidecar-assert.yaml" "$ASSERT_PORT" "$ASSERT_ADMIN" '[]' \
  "http://127.0.0.1:$EMULATOR_PORT"
printf 'assertion:\n  enabled: true\n  private_key_file: %s\n' "$WORK/assertion.pem" >>"$WORK/sidecar-assert.yaml"
start_sidecar_with "$WORK/sidecar-assert.yaml"; SIDECAR_ASSERT_PID=$SIDECAR_PID
wait_port "$ASSERT_ADMIN" /healthz

seen=$(curl -s -H "Cookie: $AUTH_COOKIE" -H 'X-Auth-Assertion: forged' "http://127.0.0.1:$ASSERT_PORT/echo-assertion")
case "$seen" in
  "[eyJ"*) echo "== authassert: the upstream received a signed assertion (${#seen} bytes with brackets), not the forged one" ;;
  *) echo "authassert case: the upstream saw '$seen' instead of a signed assertion" >&2; exit 1 ;;
esac

case_authassert() { CASE_PORT=$ASSERT_PORT; CASE_PIDS="$SIDECAR_ASSERT_PID"; }
wrk_args_authassert() { wrk_args_auth; }
