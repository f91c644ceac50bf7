# Authenticated proxying (the first performance target), sourced by proxy-bench.sh:
# the sidecar with NO public paths and the session cookie of one real login through the
# emulator (lib/auth-login.sh); wrk then sends that cookie and a
# spoofed X-Auth-User-Id on every request (so the session is opened, the spoofed header
# stripped and the identity headers injected each time). Any non-2xx answer fails the run.
has_case auth || CASES+=(auth)

. Benchmarks/lib/auth-login.sh

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
