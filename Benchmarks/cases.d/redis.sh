# The Redis store, sourced by proxy-bench.sh after auth.sh (whose login cookie,
# emulator and sidecar config it reuses; every sidecar here shares SESSION_SECRET):
#   redis       : the auth case's sidecar with `revocations.store: redis://` — the per-request
#                 cost of the shared store against `auth` (memory) in the same run
#   replicas    : 3 such sidecars behind haproxy (nbthread 1, roundrobin, http-reuse always)
#   replicasmem : the same 3 behind haproxy with the memory store
# CPU per request counts every process of the case (haproxy, the sidecars, redis-server).
declare -F wrk_args_auth >/dev/null || . Benchmarks/cases.d/auth.sh  # (sessions.sh logs in too, without the auth case)
command -v redis-server >/dev/null || apt_ensure redis-server
command -v haproxy >/dev/null || apt_ensure haproxy
has_case redis || CASES+=(redis)

REDIS_PORT=$(free_port)
"${SERVER_CPU[@]}" redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no \
  >"$WORK/redis.log" 2>&1 &
REDIS_PID=$!; PIDS+=("$REDIS_PID")

redis_sidecar() {  # redis_sidecar NAME STORE → sets RS_PORT RS_PID
  local admin; RS_PORT=$(free_port); admin=$(free_port)
  write_sidecar_config "$WORK/sidecar-$1.yaml" "$RS_PORT" "$admin" '[]' "http://127.0.0.1:$EMULATOR_PORT"
  printf 'revocations:\n  store: %s\n' "$2" >>"$WORK/sidecar-$1.yaml"
  start_sidecar_with "$WORK/sidecar-$1.yaml"; RS_PID=$SIDECAR_PID
  wait_port "$admin" /readyz
  local status
  status=$(curl -s -o /dev/null -w '%{http_code}' -H "Cookie: $AUTH_COOKIE" "http://127.0.0.1:$RS_PORT/")
  [ "$status" = 200 ] || { echo "$1: the session cookie got $status" >&2; exit 1; }
}

redis_sidecar redis "redis://127.0.0.1:$REDIS_PORT/0"; REDIS_SIDECAR_PORT=$RS_PORT; REDIS_SIDECAR_PID=$RS_PID
case_redis() { CASE_PORT=$REDIS_SIDECAR_PORT; CASE_PIDS="$REDIS_SIDECAR_PID $REDIS_PID"; }
wrk_args_redis() { wrk_args_auth; }

behind_haproxy() {  # behind_haproxy NAME STORE → sets HA_PORT HA_PIDS (haproxy + 3 sidecars)
  local servers="" i
  HA_PIDS=""
  for i in 1 2 3; do
    redis_sidecar "$1-$i" "$2"
    servers+="    server s$i 127.0.0.1:$RS_PORT"$'\n'
    HA_PIDS+="$RS_PID "
  done
  HA_PORT=$(free_port)
  cat >"$WORK/haproxy-$1.cfg" <<CFG
global
    nbthread 1
defaults
    mode http
    timeout connect 5s
    timeout client 60s
    timeout server 60s
    http-reuse always
frontend front
    bind 127.0.0.1:$HA_PORT
    default_backend sidecars
backend sidecars
    balance roundrobin
$servers
CFG
  "${SERVER_CPU[@]}" haproxy -f "$WORK/haproxy-$1.cfg" >"$WORK/haproxy-$1.log" 2>&1 &
  PIDS+=("$!"); HA_PIDS+="$!"
  local n
  for n in $(seq 1 100); do  # any answer will do: without a cookie it is a redirect
    curl -s -o /dev/null "http://127.0.0.1:$HA_PORT/" && return 0
    sleep 0.05
  done
  echo "haproxy ($1) did not come up" >&2; exit 1
}

if has_case replicas; then
  behind_haproxy replicas "redis://127.0.0.1:$REDIS_PORT/0"; REPLICAS_PORT=$HA_PORT; REPLICAS_PIDS="$HA_PIDS $REDIS_PID"
fi
case_replicas() { CASE_PORT=$REPLICAS_PORT; CASE_PIDS="$REPLICAS_PIDS"; }
wrk_args_replicas() { wrk_args_auth; }

if has_case replicasmem; then
  behind_haproxy replicasmem memory; REPLICASMEM_PORT=$HA_PORT; REPLICASMEM_PIDS="$HA_PIDS"
fi
case_replicasmem() { CASE_PORT=$REPLICASMEM_PORT; CASE_PIDS="$REPLICASMEM_PIDS"; }
wrk_args_replicasmem() { wrk_args_auth; }
