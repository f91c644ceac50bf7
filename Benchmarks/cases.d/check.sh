# Forward auth (sourced by proxy-bench.sh): `/.auth/check` with the auth case's session cookie,
# as nginx `auth_request` or Caddy `forward_auth` ask it once per request they serve: the
# session opened (from the cache) and its identity headers answered. No peer: nginx's
# auth_request cost is the subrequest around it.
has_case check || CASES+=(check)

. Benchmarks/lib/auth-login.sh

check_status=$(auth_get /.auth/check -H "Cookie: $AUTH_COOKIE")
[ "$check_status" = 200 ] || { echo "check case: /.auth/check with the session got $check_status" >&2; exit 1; }
case_check() { CASE_PORT=$AUTH_PORT; CASE_PIDS="$SIDECAR_AUTH_PID"; CASE_PATH=/.auth/check; }
wrk_args_check() { printf '%s\n' -H "Cookie: $AUTH_COOKIE"; }
