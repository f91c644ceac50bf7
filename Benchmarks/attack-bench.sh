#!/usr/bin/env bash
# Attack benchmark (the limits.* defences against slow clients) — not a test.
# slowhttptest in its slowloris (-H), slow-body (-B), slow-read (-X) and range (-R) modes,
# the same parameters against:
#   sidecar : the release-built sidecar (workers: 1, default limits, log.access: false), started
#             with a soft descriptor limit of 1,024 (the common default; the sidecar raises it
#             to the hard limit itself)
#   nginx   : nginx 1 worker proxy_pass (keepalive 64, HTTP/1.1 upstream, worker_rlimit_nofile
#             at the hard limit, every timeout at its default)
# both in front of one upstream nginx: `/` a small response, `/big` a 1 MiB file (slow read,
# range), `/body` which reads whole request bodies before answering (it proxies to itself with
# request buffering on; slow body). Each (mode, server) gets a fresh server process, except
# slow read, run twice in a row on the same process (rounds 1 and 2). Then slowloris once more
# against a sidecar whose soft and hard descriptor limits are both 1,024.
# Per run: slowhttptest's verdict (seconds its own probe found the service unavailable, exit
# status), our probe (curl, 2 s timeout, every 0.5 s during the attack), the attack
# connections' hold time from slowhttptest's CSV (first close; median hold = distance between
# the opened and closed curves at half of all opened), peak and after-attack (10 s after) RSS
# and peak descriptors of the server (nginx: master + worker), sampled every 0.5 s.
# Prints one markdown table; exits non-zero only on setup errors, never on a missed target.
#
# Env: CONNS [4000], RATE [500] connections/s, DURATION [30s] (the results in
#      RESULTS.md used 70 s: long enough to see nginx's 60 s timeouts), AFTER [10] seconds before the after-attack RSS,
#      SIDECAR_BIN [/tmp/attack-sidecar if present, else .build/release/sidecar],
#      ATTACK_MODES ["slowloris slowbody slowread range fdlimit"], ATTACK_SERVERS ["sidecar nginx"],
#      KEEP [none]: a directory to copy the CSVs, samples, probes and logs into.
# Pinning: slowhttptest and the probe on CPU 0, the servers (and the upstream) on CPU 1.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/deps.sh
ensure_bench_deps
apt_ensure slowhttptest curl util-linux

CONNS=${CONNS:-4000}; RATE=${RATE:-500}; DURATION=${DURATION:-30s}; AFTER=${AFTER:-10}
DUR_S=${DURATION%s}
read -ra MODES <<<"${ATTACK_MODES:-slowloris slowbody slowread range fdlimit}"
read -ra SERVERS <<<"${ATTACK_SERVERS:-sidecar nginx}"
if [ -z "${SIDECAR_BIN:-}" ]; then
  if [ -x /tmp/attack-sidecar ]; then SIDECAR_BIN=/tmp/attack-sidecar; else SIDECAR_BIN=.build/release/sidecar; fi
fi
[ -x "$SIDECAR_BIN" ] || { echo "no sidecar binary at $SIDECAR_BIN (swift build -c release)" >&2; exit 2; }
HARD_NOFILE=$(ulimit -Hn)
ulimit -n "$HARD_NOFILE"
[ "$HARD_NOFILE" = unlimited ] && HARD_NOFILE=1048576
if [ "$HARD_NOFILE" -lt $((CONNS * 2 + 256)) ]; then
  echo "the hard descriptor limit ($HARD_NOFILE) is too low for CONNS=$CONNS" >&2; exit 2
fi

WORK=$(mktemp -d /tmp/attack-bench.XXXXXX)
chmod 755 "$WORK"  # nginx workers (not root) read the 1 MiB file and write temp files here
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP"; cp -r "$WORK"/runs "$KEEP"/ 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$WORK/runs"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
SERVER_CPU=(taskset -c 1); CLIENT_CPU=(taskset -c 0)
wait_port() {  # wait_port PORT [PATH]: until an HTTP GET answers 200
  local i
  for i in $(seq 1 200); do
    if curl -fsS -o /dev/null -m 1 "http://127.0.0.1:$1${2:-/}" 2>/dev/null; then return 0; fi
    sleep 0.05
  done
  echo "server on port $1 did not come up" >&2; return 1
}
stop() {  # stop PID: TERM, wait
  kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true
}
tree_pids() { echo "$1"; pgrep -P "$1" || true; }  # nginx: master and its worker
rss_kib() {  # summed VmRSS of PID and its children
  local p k=0 r
  for p in $(tree_pids "$1"); do
    r=$(awk '/^VmRSS:/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0); k=$((k + ${r:-0}))
  done
  echo "$k"
}
fd_count() {
  local p n=0
  for p in $(tree_pids "$1"); do n=$((n + $(ls -U "/proc/$p/fd" 2>/dev/null | wc -l))); done
  echo "$n"
}
mib() { awk -v k="$1" 'BEGIN {printf "%.0f", k / 1024}'; }

# -- nginx (as proxy-bench.sh) ---------------------------------------------------------------
nginx_conf() {  # nginx_conf NAME SERVER_BLOCK_BODY HTTP_EXTRA PORT → prints its directory
  local dir="$WORK/$1"; mkdir -p "$dir/logs"
  cat >"$dir/nginx.conf" <<EOF
worker_processes 1;
worker_rlimit_nofile $HARD_NOFILE;
daemon off;
pid $dir/nginx.pid;
error_log $dir/logs/error.log warn;
events { worker_connections $((CONNS * 2 + 1024)); }
http {
  access_log off;
  client_body_temp_path $dir/body; proxy_temp_path $dir/proxy;
  fastcgi_temp_path $dir/fcgi; uwsgi_temp_path $dir/uwsgi; scgi_temp_path $dir/scgi;
  keepalive_requests 1000000;
  ${3:-}
  server {
    listen 127.0.0.1:$4 reuseport;
    $2
  }
}
EOF
  echo "$dir"
}
start_nginx() {  # start_nginx DIR → sets NGINX_PID (master)
  "${SERVER_CPU[@]}" nginx -p "$1" -c "$1/nginx.conf" -e "$1/logs/error.log" &
  NGINX_PID=$!; PIDS+=("$NGINX_PID")
}

# -- the upstream ----------------------------------------------------------------------------
mkdir -p "$WORK/www"
head -c $((1 << 20)) /dev/urandom >"$WORK/www/big"; chmod -R a+rX "$WORK/www"
UP_PORT=$(free_port)
UP_DIR=$(nginx_conf upstream "location / { return 200 \"ok\\n\"; }
    location = /big { root $WORK/www; }
    location = /ok { return 200 \"ok\\n\"; }
    location = /body { client_body_timeout 600s; proxy_pass http://127.0.0.1:$UP_PORT/ok; }
    location = /auth/keys { default_type application/json; return 200 \"{\\\"keys\\\":[]}\"; }" \
  "" "$UP_PORT")
start_nginx "$UP_DIR"; UP_PID=$NGINX_PID
wait_port "$UP_PORT"; wait_port "$UP_PORT" /big
curl -fsS -o /dev/null -m 2 --data x "http://127.0.0.1:$UP_PORT/body" \
  || { echo "upstream /body does not answer" >&2; exit 2; }

# -- the servers under attack ----------------------------------------------------------------
APPLE_KEY="$WORK/AuthKey_BENCH12345.p8"
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$APPLE_KEY" 2>/dev/null
SESSION_SECRET=$(openssl rand -base64 32)
write_sidecar_config() {  # write_sidecar_config FILE PORT ADMIN_PORT
  cat >"$1" <<EOF
listen: 127.0.0.1:$2
public_url: http://127.0.0.1:$2
upstream: http://127.0.0.1:$UP_PORT
workers: 1
apple:
  team_id: BENCH12345
  client_id: com.example.bench
  key_id: BENCH12345
  private_key_file: $APPLE_KEY
  base_url: http://127.0.0.1:$UP_PORT
session:
  secrets: ["$SESSION_SECRET"]
  revalidate: 0s
admin:
  listen: 127.0.0.1:$3
access:
  public_paths: ["/**"]
log:
  access: false
  level: warning
EOF
}
start_server() {  # start_server sidecar|nginx|sidecar1024 → SERVER_PID, SERVER_PORT, SERVER_LOG
  SERVER_PORT=$(free_port)
  case $1 in
    sidecar|sidecar1024)
      local admin cfg nofile=1024:$HARD_NOFILE
      admin=$(free_port); cfg="$WORK/sidecar-$SERVER_PORT.yaml"; SERVER_ADMIN=$admin
      [ "$1" = sidecar1024 ] && nofile=1024:1024
      write_sidecar_config "$cfg" "$SERVER_PORT" "$admin"
      SERVER_LOG="$cfg.log"
      "${SERVER_CPU[@]}" prlimit --nofile="$nofile" "$SIDECAR_BIN" run --config "$cfg" >"$SERVER_LOG" 2>&1 &
      SERVER_PID=$!; PIDS+=("$SERVER_PID") ;;
    nginx)
      local dir
      dir=$(nginx_conf "proxy-$SERVER_PORT" 'location / {
      proxy_pass http://backend; proxy_http_version 1.1; proxy_set_header Connection "";
    }' "upstream backend { server 127.0.0.1:$UP_PORT; keepalive 64; }" "$SERVER_PORT")
      SERVER_LOG="$dir/logs/error.log"
      start_nginx "$dir"; SERVER_PID=$NGINX_PID ;;
  esac
  wait_port "$SERVER_PORT"; wait_port "$SERVER_PORT" /big
}

# -- one attack ------------------------------------------------------------------------------
attack_args() {  # attack_args MODE → slowhttptest's mode arguments and the path attacked
  case $1 in
    slowloris) echo "-H -i 10 -x 24 /" ;;
    slowbody)  echo "-B -i 10 -x 24 -s 8192 /body" ;;
    slowread)  echo "-X -w 512 -y 1024 -n 5 -z 32 -k 1 /big" ;;
    range)     echo "-R -a 10 -b 3000 /big" ;;
  esac
}
sampler() {  # sampler PID OUT: "t rss_kib fds" every 0.5 s until killed
  while :; do
    printf '%s %s %s\n' "$(date +%s.%N)" "$(rss_kib "$1")" "$(fd_count "$1")" >>"$2"
    sleep 0.5
  done
}
prober() {  # prober PORT OUT: a GET every 0.5 s, 2 s timeout, "t code seconds" (code 000: failed)
  while :; do
    ( r=$(curl -s -o /dev/null -m 2 -w '%{http_code} %{time_total}' "http://127.0.0.1:$1/" 2>/dev/null) || true
      echo "$(date +%s.%N) ${r:-000 2}" >>"$2" ) &
    sleep 0.5
  done
}
# run_attack LABEL MODE PID PORT: runs one attack against a started server, appends a row.
run_attack() {
  local label=$1 mode=$2 pid=$3 port=$4 dir args path pre samp prob t0 t1
  dir="$WORK/runs/$mode-$(tr -c 'A-Za-z0-9\n' _ <<<"$label")"; mkdir -p "$dir"
  read -ra args <<<"$(attack_args "$mode")"; path=${args[-1]}; unset 'args[-1]'
  sleep 1; pre=$(rss_kib "$pid")
  sampler "$pid" "$dir/samples" & samp=$!
  prober "$port" "$dir/probe" & prob=$!
  t0=$(date +%s.%N)
  "${CLIENT_CPU[@]}" slowhttptest "${args[@]}" -c "$CONNS" -r "$RATE" -l "$DUR_S" -p 2 \
    -u "http://127.0.0.1:$port$path" -g -o "$dir/slow" >"$dir/slowhttptest.out" 2>&1 || true
  t1=$(date +%s.%N)
  kill "$prob" 2>/dev/null || true; wait "$prob" 2>/dev/null || true
  sleep "$AFTER"
  local after; after=$(rss_kib "$pid")
  kill "$samp" 2>/dev/null || true; wait "$samp" 2>/dev/null || true
  sleep 2.5  # the last probes (2 s timeout) finish writing
  local status peak peakfd probes fails holds unavail
  status=$(sed 's/\x1b\[[0-9;]*m//g' "$dir/slowhttptest.out" | awk -F': *' '/^Exit status/ {print $2}' | tail -1)
  # CSV: Seconds,Closed,Pending,Connected,Service Available (0 = slowhttptest's probe failed)
  unavail=$(awk -F, 'NR > 1 && $5 == 0 {n[$1] = 1} END {print length(n)}' "$dir/slow.csv" 2>/dev/null || echo "?")
  holds=$(awk -F, 'NR > 1 {t[NR] = $1; c[NR] = $2; cn[NR] = $4; o[NR] = $2 + $4; if ($4 > pk) pk = $4; last = NR; if (o[NR] > omax) omax = o[NR]}
    END {
      half = omax / 2; to = ""; tc = ""; fc = "";
      for (i = 2; i <= last; i++) {
        if (fc == "" && c[i] > 0) fc = t[i];
        if (to == "" && o[i] >= half) to = t[i];
        if (tc == "" && c[i] >= half) tc = t[i];
      }
      printf "%d %s %s %d", pk, (fc == "" ? "none" : fc), (tc == "" ? "open" : tc - to), cn[last] }' \
    "$dir/slow.csv" 2>/dev/null || echo "? ? ? ?")
  peak=$(awk 'NR == 1 || $2 > m {m = $2} END {print m + 0}' "$dir/samples" 2>/dev/null || echo 0)
  peakfd=$(awk 'NR == 1 || $3 > m {m = $3} END {print m + 0}' "$dir/samples" 2>/dev/null || echo 0)
  probes=$(awk -v a="$t0" -v b="$t1" '$1 >= a && $1 <= b + 2.5 {n++; if ($2 != "200") f++} END {printf "%d %d", n, f}' "$dir/probe" 2>/dev/null || echo "0 0")
  printf '%s|%s|%s|%s|%s|%s|%s|%s|%s\n' "$label" "$mode" "$status" "$unavail" "$holds" "$probes" "$pre" \
    "$peak $after" "$peakfd" >>"$WORK/rows"
  read -r pk fc med left <<<"$holds"; read -r pn pf <<<"$probes"
  printf '  %-22s %-9s verdict: %s s unavailable (%s); probe %s/%s failed; peak conns %s, first close %s s, median hold %s s; RSS %s → peak %s → after %s MiB; peak fds %s\n' \
    "$label" "$mode" "$unavail" "$status" "$pf" "$pn" "$pk" "$fc" "$med" "$(mib "$pre")" "$(mib "$peak")" \
    "$(mib "$after")" "$peakfd"
  cp "$SERVER_LOG" "$dir/server.log" 2>/dev/null || true
}

: >"$WORK/rows"
echo "== slowhttptest -c $CONNS -r $RATE -l $DUR_S, probe every 0.5 s (2 s timeout); load on CPU 0, servers on CPU 1"
for mode in "${MODES[@]}"; do
  if [ "$mode" = fdlimit ]; then
    [[ " ${SERVERS[*]} " == *" sidecar "* ]] || continue
    start_server sidecar1024
    run_attack "sidecar (nofile 1024:1024)" slowloris "$SERVER_PID" "$SERVER_PORT"
    FD_LOGLINES=$(grep -c 'accept4() failed' "$SERVER_LOG" || true)
    FD_LOGLINE=$(grep -m1 'accept4() failed' "$SERVER_LOG" || true)
    FD_STARTWARN=$(grep -m1 -i 'max_connections' "$SERVER_LOG" || true)
    FD_METRIC=$(curl -s -m 2 "http://127.0.0.1:$SERVER_ADMIN/metrics" | awk '/^sidecar_accept_descriptor_exhausted_total/ {print $2}')
    stop "$SERVER_PID"
    continue
  fi
  for server in "${SERVERS[@]}"; do
    start_server "$server"
    if [ "$mode" = slowread ]; then
      run_attack "$server (round 1)" slowread "$SERVER_PID" "$SERVER_PORT"
      run_attack "$server (round 2)" slowread "$SERVER_PID" "$SERVER_PORT"
    else
      run_attack "$server" "$mode" "$SERVER_PID" "$SERVER_PORT"
    fi
    stop "$SERVER_PID"
  done
done

# -- the table -------------------------------------------------------------------------------
echo
echo "| mode | server | slowhttptest: s unavailable (exit) | probe failed | peak attack conns | first close (s) | median hold (s) | RSS before → peak → after (MiB) | peak fds |"
echo "|---|---|---|---|---|---|---|---|---|"
while IFS='|' read -r label mode status unavail holds probes pre peakafter peakfd; do
  read -r pk fc med _ <<<"$holds"; read -r pn pf <<<"$probes"; read -r peak after <<<"$peakafter"
  printf '| %s | %s | %s (%s) | %s/%s (%s %%) | %s | %s | %s | %s → %s → %s | %s |\n' "$mode" "$label" "$unavail" \
    "$status" "$pf" "$pn" "$(awk -v f="$pf" -v n="$pn" 'BEGIN {printf "%.1f", n ? 100 * f / n : 0}')" "$pk" "$fc" \
    "$med" "$(mib "$pre")" "$(mib "$peak")" "$(mib "$after")" "$peakfd"
done <"$WORK/rows"
echo
echo "Targets, checked on the sidecar's rows:"
LIMIT_KIB=$((CONNS * 64 + 64 * 1024))
while IFS='|' read -r label mode status unavail holds probes pre peakafter peakfd; do
  [[ "$label" == sidecar* ]] || continue
  read -r pk fc med _ <<<"$holds"; read -r pn pf <<<"$probes"; read -r peak after <<<"$peakafter"
  case "$label/$mode" in
    "sidecar (round "*/slowread)
      awk -v l="$label" -v p="$peak" -v a="$after" -v b="$pre" -v lim="$LIMIT_KIB" -v c="$CONNS" 'BEGIN {
        printf "- slow read %s: peak %.0f MiB vs <= %d x 64 KiB + 64 MiB = %.0f MiB: %s; after %.0f MiB vs before %.0f MiB (within 32 MiB): %s\n",
          l, p / 1024, c, lim / 1024, (p <= lim ? "met" : "MISSED"), a / 1024, b / 1024, (a - b <= 32768 ? "met" : "MISSED") }' ;;
    sidecar/slowloris)
      echo "- slowloris (started with soft limit 1,024, hard $HARD_NOFILE): $unavail s unavailable, probe $pf/$pn failed: $([ "$unavail" = 0 ] && [ "$pf" = 0 ] && echo met || echo MISSED)" ;;
    sidecar/slowbody)
      echo "- slow body: median hold $med s (<= 15 s), probe $pf/$pn failed: $([[ "$med" =~ ^[0-9]+$ ]] && [ "$med" -le 15 ] && [ "$pf" = 0 ] && echo met || echo MISSED)" ;;
    "sidecar (nofile 1024:1024)"/slowloris)
      echo "- slowloris at 1024:1024: probe $pf/$pn failed ($(awk -v f="$pf" -v n="$pn" 'BEGIN {printf "%.1f", n ? 100 * f / n : 0}') % <= 5 %: $(awk -v f="$pf" -v n="$pn" 'BEGIN {print (n && f / n <= 0.05) ? "met" : "MISSED"}')); 'accept4() failed' log lines: ${FD_LOGLINES:-0} (${FD_LOGLINES:+$([ "${FD_LOGLINES:-0}" -gt 0 ] && echo met || echo MISSED)}); sidecar_accept_descriptor_exhausted_total ${FD_METRIC:-?}"
      [ -n "${FD_LOGLINE:-}" ] && echo "  log: ${FD_LOGLINE:0:400}"
      [ -n "${FD_STARTWARN:-}" ] && echo "  start warning: ${FD_STARTWARN:0:400}" ;;
  esac
done <"$WORK/rows"
slowread_rows=$(grep -c '^sidecar (round' "$WORK/rows" || true)
if [ "$slowread_rows" = 2 ]; then
  awk -F'|' '$1 ~ /^sidecar \(round/ {split($8, pa, " "); a[++n] = pa[2]} END {
    printf "- slow read, two attacks in a row end at the same level: after round 1 %.0f MiB, round 2 %.0f MiB: %s\n",
      a[1] / 1024, a[2] / 1024, ((a[2] - a[1] <= 32768 && a[1] - a[2] <= 32768) ? "met (within 32 MiB)" : "MISSED") }' "$WORK/rows"
fi
echo
echo "(median hold: the time between the opened and the closed curves of slowhttptest's CSV at half"
echo " of all connections opened; 'open' = fewer than half were closed before the attack ended."
echo " RSS after: $AFTER s after slowhttptest exited. nginx: master + worker summed.)"
