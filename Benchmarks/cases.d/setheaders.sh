# provides: setheaders authbase
# setheaders: the auth case's very requests (its session cookie, a spoofed X-Auth-User-Id) to a
# second sidecar that differs by `rules`: one rule, `/**`, with `set_headers` of two fields
# (X-Tenant, X-Plan), so every request is decided by a rule, opens the session, drops the
# client's copies of the rule's names and gets the rule's fields, copied from the block
# rendered at load. Compare with `auth` in the same run (Benchmarks/RESULTS.md, "set_headers").
# AUTH_BASELINE_BIN [none], another sidecar binary (say, the branch's base), adds authbase: the
# auth case's configuration on that build, in the same rounds (an A/B of the auth path).
declare -F wrk_args_auth >/dev/null || . Benchmarks/cases.d/auth.sh
has_case setheaders || CASES+=(setheaders)

SETH_PORT=$(free_port); SETH_ADMIN=$(free_port)
write_sidecar_config "$WORK/sidecar-setheaders.yaml" "$SETH_PORT" "$SETH_ADMIN" '[]' \
  "http://127.0.0.1:$EMULATOR_PORT"
printf 'rules:\n  - {path: "/**", set_headers: {X-Tenant: acme, X-Plan: pro}}\n' >>"$WORK/sidecar-setheaders.yaml"
start_sidecar_with "$WORK/sidecar-setheaders.yaml"; SIDECAR_SETH_PID=$SIDECAR_PID
wait_port "$SETH_ADMIN" /healthz
seen=$(curl -s -H "Cookie: $AUTH_COOKIE" -H 'X-Tenant: evil' "http://127.0.0.1:$SETH_PORT/echo-user-id")
[ -n "$seen" ] && [ "$seen" != "[]" ] || { echo "setheaders case: the session was not accepted ($seen)" >&2; exit 1; }
case_setheaders() { CASE_PORT=$SETH_PORT; CASE_PIDS="$SIDECAR_SETH_PID"; }
wrk_args_setheaders() { wrk_args_auth; }

if [ -n "${AUTH_BASELINE_BIN:-}" ]; then
  has_case authbase || CASES+=(authbase)
  if [ "$INSTRUCTIONS" = 1 ]; then strip -g -o "$WORK/sidecar-authbase" "$AUTH_BASELINE_BIN"; AUTH_BASELINE_BIN=$WORK/sidecar-authbase; fi
  AUTHBASE_PORT=$(free_port); AUTHBASE_ADMIN=$(free_port)
  write_sidecar_config "$WORK/sidecar-authbase.yaml" "$AUTHBASE_PORT" "$AUTHBASE_ADMIN" '[]' \
    "http://127.0.0.1:$EMULATOR_PORT"
  start_sidecar_with "$WORK/sidecar-authbase.yaml" "$AUTH_BASELINE_BIN"; SIDECAR_AUTHBASE_PID=$SIDECAR_PID
  wait_port "$AUTHBASE_ADMIN" /healthz
  case_authbase() { CASE_PORT=$AUTHBASE_PORT; CASE_PIDS="$SIDECAR_AUTHBASE_PID"; }
  wrk_args_authbase() { wrk_args_auth; }
fi
