# Many users, sourced by proxy-bench.sh: N distinct real sessions sent one per
# request in turn (Benchmarks/sessions.lua), to the sidecar and to two peers sent the very same
# requests — nginx proxy_pass and haproxy (nbthread 1, http-reuse always) — each adding the
# sidecar's forwarding header set (X-Forwarded-For/-Proto/-Host, X-Request-Id) and removing the
# client's X-Auth-User-Id, with access logs off and on (to a file: the sidecar's per-worker
# 32 KiB buffer, nginx `buffer=32k flush=200ms`, haproxy one line per request to stdout, which
# is all it offers short of syslog).
#
# The sessions: one real login through the emulator (lib/auth-login.sh) is the template;
# session-mint opens it with the configuration's secret and seals N copies with fresh ids and
# distinct subjects using the sidecar's own sealing code — sessions the sidecar would accept
# in production (the run fails on any non-2xx answer).
#
# Cases, for each N in SESSION_COUNTS [1 2000 100000] (labels 1, 2k, 100k) and each log mode
# in SESSION_LOGS [off on] (suffix _log when on): sessions_<N>, nginxs_<N>, haproxy_<N>, and
# SESSION_WORKERS2 [0]=1 adds sessionsw2_<N> and nginxsw2_<N>: the sidecar with workers: 2 and
# nginx with worker_processes 2 (give them two cores: BENCH_SERVER_CPUS=0,1);
# SESSION_BASELINE_BIN [none], another sidecar binary (say, main's before a change), adds
# sessionsbase_<N>: an A/B of two builds in the same rounds, which is what separates a change of
# a few per cent from the machine's drift between runs; with SESSION_WORKERS2=1 as well,
# sessionsbasew2_<N> is that build with workers: 2.
# proxy-bench.sh compares sessions_* with nginxs_* and haproxy_* of the same N and log mode,
# and at the end session_latency_report gives each server's p99 at a fixed offered load.
. Benchmarks/lib/auth-login.sh

read -ra SESSION_COUNTS <<<"${SESSION_COUNTS:-1 2000 100000}"
read -ra SESSION_LOGS <<<"${SESSION_LOGS:-off on}"
session_label() { case $1 in *000) echo "$(($1 / 1000))k" ;; *) echo "$1" ;; esac; }

echo "== swift build -c release --product session-mint"
swift build -c release --static-swift-stdlib --product session-mint >/dev/null
SESSION_MINT=$(swift build -c release --static-swift-stdlib --show-bin-path)/session-mint
for n in "${SESSION_COUNTS[@]}"; do
  "$SESSION_MINT" --config "$WORK/sidecar-auth.yaml" --template "${AUTH_COOKIE#*=}" --count "$n" \
    >"$WORK/sessions-$n.txt"
  printf 'SESSIONS_FILE = "%s"\ndofile("%s")\n' "$WORK/sessions-$n.txt" "$PWD/Benchmarks/sessions.lua" \
    >"$WORK/sessions-$n.lua"
done
# A minted session must be served as its own user (not the template's), and a forged one refused.
first_minted=$(head -1 "$WORK/sessions-${SESSION_COUNTS[-1]}.txt")
minted_status=$(auth_get /echo-user-id -H "Cookie: $first_minted" -H 'X-Auth-User-Id: evil')
minted_user=$(cat "$WORK/auth-body")
forged=${first_minted%?????}AAAAA
forged_status=$(auth_get / -H "Cookie: $forged")
if [ "$minted_status" != 200 ] || [ "$minted_user" = "[evil]" ] || [ "$minted_user" = "$seen" ] \
   || [ "$forged_status" != 401 ]; then
  echo "sessions: minted session got $minted_status $minted_user (template user $seen), forged got $forged_status" >&2
  exit 1
fi
echo "== sessions: minted ${SESSION_COUNTS[*]} sessions; one is served as $minted_user (the template as $seen), a forged one gets $forged_status"

# -- the servers: each proxy with access logs off and on -------------------------------------
declare -A SESSION_SERVER_PORT SESSION_SERVER_PIDS SESSION_RSS_BEFORE
start_session_servers() {  # start_session_servers LOG(off|on)
  local log=$1 suffix="" port admin
  [ "$log" = on ] && suffix=_log
  # the sidecar
  port=$(free_port); admin=$(free_port)
  write_sidecar_config "$WORK/sidecar-sessions$suffix.yaml" "$port" "$admin" '[]'
  [ "$log" = on ] && sed -i 's/^  access: false/  access: true/' "$WORK/sidecar-sessions$suffix.yaml"
  start_sidecar_with "$WORK/sidecar-sessions$suffix.yaml"
  SESSION_SERVER_PORT[sessions$suffix]=$port; SESSION_SERVER_PIDS[sessions$suffix]=$SIDECAR_PID
  wait_port "$admin" /healthz
  if [ "${SESSION_WORKERS2:-0}" = 1 ]; then
    port=$(free_port); admin=$(free_port)
    write_sidecar_config "$WORK/sidecar-sessionsw2$suffix.yaml" "$port" "$admin" '[]'
    sed -i 's/^workers: 1/workers: 2/' "$WORK/sidecar-sessionsw2$suffix.yaml"
    [ "$log" = on ] && sed -i 's/^  access: false/  access: true/' "$WORK/sidecar-sessionsw2$suffix.yaml"
    start_sidecar_with "$WORK/sidecar-sessionsw2$suffix.yaml"
    SESSION_SERVER_PORT[sessionsw2$suffix]=$port; SESSION_SERVER_PIDS[sessionsw2$suffix]=$SIDECAR_PID
    wait_port "$admin" /healthz
  fi
  if [ -n "${SESSION_BASELINE_BIN:-}" ]; then
    port=$(free_port); admin=$(free_port)
    write_sidecar_config "$WORK/sidecar-sessionsbase$suffix.yaml" "$port" "$admin" '[]'
    [ "$log" = on ] && sed -i 's/^  access: false/  access: true/' "$WORK/sidecar-sessionsbase$suffix.yaml"
    start_sidecar_with "$WORK/sidecar-sessionsbase$suffix.yaml" "$SESSION_BASELINE_BIN"
    SESSION_SERVER_PORT[sessionsbase$suffix]=$port; SESSION_SERVER_PIDS[sessionsbase$suffix]=$SIDECAR_PID
    wait_port "$admin" /healthz
    if [ "${SESSION_WORKERS2:-0}" = 1 ]; then
      port=$(free_port); admin=$(free_port)
      write_sidecar_config "$WORK/sidecar-sessionsbasew2$suffix.yaml" "$port" "$admin" '[]'
      sed -i 's/^workers: 1/workers: 2/' "$WORK/sidecar-sessionsbasew2$suffix.yaml"
      [ "$log" = on ] && sed -i 's/^  access: false/  access: true/' "$WORK/sidecar-sessionsbasew2$suffix.yaml"
      start_sidecar_with "$WORK/sidecar-sessionsbasew2$suffix.yaml" "$SESSION_BASELINE_BIN"
      SESSION_SERVER_PORT[sessionsbasew2$suffix]=$port; SESSION_SERVER_PIDS[sessionsbasew2$suffix]=$SIDECAR_PID
      wait_port "$admin" /healthz
    fi
  fi
  # nginx proxy_pass with the sidecar's forwarding header set
  port=$(free_port)
  local access="access_log off;"
  [ "$log" = on ] && access="access_log $WORK/nginxs$suffix/access.log combined buffer=32k flush=200ms;"
  local dir
  dir=$(nginx_conf "nginxs$suffix" "location / {
      proxy_pass http://backend; proxy_http_version 1.1; proxy_set_header Connection \"\";
      proxy_set_header Host \$host;
      proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto \$scheme;
      proxy_set_header X-Forwarded-Host \$host;
      proxy_set_header X-Request-Id \$request_id;
      proxy_set_header X-Auth-User-Id \"\";
      $access
    }" "upstream backend { server 127.0.0.1:$UP_PORT; keepalive 64; }" "$port" \
    "$([ "$INSTRUCTIONS" = 1 ] && echo 'master_process off;')")
  start_nginx "$dir" "${PROXY_PREFIX[@]}"
  SESSION_SERVER_PORT[nginxs$suffix]=$port; SESSION_SERVER_PIDS[nginxs$suffix]=$NGINX_PID
  wait_port "$port"
  if [ "${SESSION_WORKERS2:-0}" = 1 ]; then  # nginx worker_processes 2, the same otherwise
    local w2dir=$WORK/nginxsw2$suffix w2port
    w2port=$(free_port); cp -r "$dir" "$w2dir"
    sed -i -e "s|$dir|$w2dir|g" -e "s|127.0.0.1:$port |127.0.0.1:$w2port |" \
      -e 's/^worker_processes 1;/worker_processes 2;/' "$w2dir/nginx.conf"
    start_nginx "$w2dir" "${PROXY_PREFIX[@]}"
    SESSION_SERVER_PORT[nginxsw2$suffix]=$w2port; SESSION_SERVER_PIDS[nginxsw2$suffix]=$NGINX_PID
    wait_port "$w2port"
  fi
  # haproxy, the same
  port=$(free_port); dir="$WORK/haproxy$suffix"; mkdir -p "$dir"
  local global_log="" defaults_log=""
  if [ "$log" = on ]; then global_log="log stdout format raw local0"; defaults_log="log global
  option httplog"; fi
  cat >"$dir/haproxy.cfg" <<CFG
global
  nbthread 1
  maxconn 4096
  $global_log
defaults
  mode http
  timeout connect 5s
  timeout client 60s
  timeout server 60s
  timeout http-keep-alive 60s
  http-reuse always
  $defaults_log
frontend bench
  bind 127.0.0.1:$port
  option forwardfor
  unique-id-format %{+X}o%ci%cp%Ts%rt
  http-request set-header X-Request-Id %[unique-id]
  http-request set-header X-Forwarded-Proto http
  http-request set-header X-Forwarded-Host %[req.hdr(host)]
  http-request del-header X-Auth-User-Id
  default_backend upstream
backend upstream
  server upstream 127.0.0.1:$UP_PORT
CFG
  haproxy -c -q -f "$dir/haproxy.cfg" || { echo "haproxy config refused" >&2; exit 1; }
  "${PROXY_PREFIX[@]}" haproxy -db -f "$dir/haproxy.cfg" >>"$dir/access.log" 2>"$dir/error.log" &
  PIDS+=("$!")
  SESSION_SERVER_PORT[haproxy$suffix]=$port; SESSION_SERVER_PIDS[haproxy$suffix]=$!
  wait_port "$port"
}
for log in "${SESSION_LOGS[@]}"; do start_session_servers "$log"; done

# -- the cases ---------------------------------------------------------------------------------
session_case() {  # session_case SERVER N LOG: defines case_<server>_<label>[_log] and its wrk args
  local server=$1 n=$2 suffix="" name
  [ "$3" = on ] && suffix=_log
  name=${server}_$(session_label "$n")$suffix
  has_case "$name" || CASES+=("$name")
  eval "case_$name() { CASE_PORT=${SESSION_SERVER_PORT[$server$suffix]}; CASE_PIDS=${SESSION_SERVER_PIDS[$server$suffix]}; }"
  eval "wrk_args_$name() { printf '%s\n' -s '$WORK/sessions-$n.lua'; }"
}
SESSION_SERVERS=(sessions nginxs haproxy)
[ "${SESSION_WORKERS2:-0}" = 1 ] && SESSION_SERVERS+=(sessionsw2 nginxsw2)
[ -n "${SESSION_BASELINE_BIN:-}" ] && SESSION_SERVERS+=(sessionsbase)
[ -n "${SESSION_BASELINE_BIN:-}" ] && [ "${SESSION_WORKERS2:-0}" = 1 ] && SESSION_SERVERS+=(sessionsbasew2)
for log in "${SESSION_LOGS[@]}"; do
  for n in "${SESSION_COUNTS[@]}"; do
    for server in "${SESSION_SERVERS[@]}"; do session_case "$server" "$n" "$log"; done
  done
done
# Access logs grow by about 100 MB per case and round: emptied after every run (all three
# write with O_APPEND, so the next line starts the file again).
truncate_access_logs() {
  local f
  for f in "$WORK"/sidecar-sessions*.yaml.log "$WORK"/nginxs*/access.log "$WORK"/haproxy*/access.log; do
    [ -e "$f" ] && : >"$f"
  done
}

# Memory per cached session: the log-off sidecar's RSS now (no session opened yet) and, at the
# end, after the runs filled its cache (SessionCache.defaultCapacity entries when more distinct
# sessions than that were sent).
SESSION_CACHE_ENTRIES=8192
for log in "${SESSION_LOGS[@]}"; do
  suffix=""; [ "$log" = on ] && suffix=_log
  SESSION_RSS_BEFORE[sessions$suffix]=$(rss_kib "${SESSION_SERVER_PIDS[sessions$suffix]}")
done
session_memory_report() {
  local name pid after before
  for name in "${!SESSION_RSS_BEFORE[@]}"; do
    pid=${SESSION_SERVER_PIDS[$name]}; before=${SESSION_RSS_BEFORE[$name]}; after=$(rss_kib "$pid")
    awk -v n="$name" -v b="$before" -v a="$after" -v e="$SESSION_CACHE_ENTRIES" -v max="${SESSION_COUNTS[-1]}" 'BEGIN {
      printf "%s: RSS %.1f MiB before any session, %.1f MiB after the runs", n, b / 1024, a / 1024
      if (max >= e) printf " (cache full: %d entries): %.0f bytes per cached session", e, (a - b) * 1024 / e
      printf "\n" }'
  done
}

# Latency at a fixed offered load (the p99 target): at saturation the p99 of 50 connections is
# about 50 ÷ throughput, which says how fast a proxy is, not what it adds. Here each connection
# waits a random time with mean SESSION_PACE_MS [10] between a response and its next request
# (wrk's delay(), exponentially distributed: sessions.lua says why not a fixed wait), about
# 50 × 1000 / (10 + latency) req/s — far below every server's capacity — and each server's p99
# under the very same requests is compared with the upstream's own (direct), for each N, with
# access logs on (off when SESSION_LOGS has no "on").
# One long run per server let a hiccup of the VM land on whichever server was being measured
# (direct's own p99 moved from 0.27 to 2.23 ms between two rows of one run). So the servers
# take turns in SESSION_PACE_ROUNDS [5] rounds of SESSION_PACE_DURATION [4s], the order rotated
# each round, and what is reported is each server's median p99 and the median of its same-round
# added p99 (its p99 minus direct's of that round), with the rounds' range beside it.
# SESSION_BASELINE_BIN adds that build ("baseline") to the rounds: an A/B of the p99 too.
# SESSION_PACE_SERVERS [direct sessions nginxs haproxy (sessionsbase)] narrows the rounds (an
# A/B of two sidecar builds needs neither peer); direct is always among them.
session_latency_report() {
  local n suffix="" server port out p99 rps round i line label
  local rounds=${SESSION_PACE_ROUNDS:-5} servers=(direct sessions nginxs haproxy)
  [ -n "${SESSION_BASELINE_BIN:-}" ] && servers+=(sessionsbase)
  if [ -n "${SESSION_PACE_SERVERS:-}" ]; then
    read -ra servers <<<"$SESSION_PACE_SERVERS"
    [[ " ${servers[*]} " == *" direct "* ]] || servers=(direct "${servers[@]}")
  fi
  [[ " ${SESSION_LOGS[*]} " == *" on "* ]] && suffix=_log
  echo
  echo "== p99 at a fixed offered load: -c$CONNS, each connection a random ${SESSION_PACE_MS:-10} ms on average between requests, $rounds rotating rounds of ${SESSION_PACE_DURATION:-4s} (target: sidecar adds <= 0.5 ms over direct)"
  for n in "${SESSION_COUNTS[@]}"; do
    printf 'SESSIONS_FILE = "%s"\nPACE_MS = %d\ndofile("%s")\n' "$WORK/sessions-$n.txt" "${SESSION_PACE_MS:-10}" \
      "$PWD/Benchmarks/sessions.lua" >"$WORK/sessions-$n-paced.lua"
    : >"$WORK/paced-$n.txt"
    for round in $(seq 1 "$rounds"); do
      for i in "${!servers[@]}"; do
        server=${servers[$(((i + round) % ${#servers[@]}))]}
        if [ "$server" = direct ]; then port=$UP_PORT; else port=${SESSION_SERVER_PORT[$server$suffix]}; fi
        out=$("${CLIENT_CPU[@]}" wrk -t1 -c"$CONNS" -d"${SESSION_PACE_DURATION:-4s}" --latency \
              -s "$WORK/sessions-$n-paced.lua" "http://127.0.0.1:$port/")
        after_run
        if [[ "$out" == *Non-2xx* ]]; then FAILED+=("paced $server $n: non-2xx"); fi
        p99=$(to_ms "$(awk '$1 == "99%" {print $2}' <<<"$out")")
        rps=$(awk '/^Requests\/sec:/ {printf "%.0f", $2}' <<<"$out")
        echo "$round $server $p99 $rps" >>"$WORK/paced-$n.txt"
      done
    done
    line="  $(session_label "$n") sessions$suffix:"
    for server in "${servers[@]}"; do
      label=${server/sessionsbase/baseline}; label=${label/sessions/sidecar}; label=${label/nginxs/nginx}
      p99=$(awk -v s="$server" '$2 == s {print $3}' "$WORK/paced-$n.txt" | median)
      rps=$(awk -v s="$server" '$2 == s {print $4}' "$WORK/paced-$n.txt" | median)
      if [ "$server" = direct ]; then
        line+=$(printf ' direct p99 %.3f ms (%.0f req/s);' "$p99" "$rps")
        continue
      fi
      # same-round added p99: this server's p99 minus direct's in the same round
      local added
      added=$(awk -v s="$server" '$2 == "direct" {d[$1] = $3} $2 == s {p[$1] = $3}
        END {for (r in p) if (r in d) print p[r] - d[r]}' "$WORK/paced-$n.txt" | sort -g)
      line+=$(awk -v s="$label" -v p="$p99" -v m="$(median <<<"$added")" \
        -v lo="$(head -1 <<<"$added")" -v hi="$(tail -1 <<<"$added")" 'BEGIN {
        printf " %s %.3f ms (%+.3f, rounds %+.2f..%+.2f);", s, p, m, lo, hi }')
    done
    echo "$line"
  done
}
