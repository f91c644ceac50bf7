#!/usr/bin/env bash
# Many cores, several sidecar configurations against nginx in the same rounds. Runs from a
# self-contained folder (so the benchmark machine needs nothing but a kernel and bash), beside
# this file: bin/ with sidecar.xz (the static release build, xz), nginx, wrk, taskset and xz;
# lib/ with every shared library they load and the loader ld-linux-x86-64.so.2; sessions.lua
# (from this folder) and sessions-N.txt (`cookie=value` lines from session-mint, built from
# Benchmarks/SessionMint, N distinct real sessions); tls-cert.pem and tls-key.pem (127.0.0.1);
# AuthKey_BENCH12345.p8 (any P-256 key) and secret.txt (the session secret the sessions were
# sealed with); optionally perfkit.tar.xz (perf and its libraries).
#
#   CASES="tls:2000 plain:20000" VARIANTS_plain="sc:8192 sc32k:32768" W_LIST="1 2 4 6" \
#     ROUNDS=3 DUR=4s PERF_W="1 2" OUT=/tmp/out bash multicore-variants.sh
#
# A case is SCHEME:SESSIONS. A variant is NAME:CACHE_ENTRIES (session.cache_entries), or
# NAME:CACHE_ENTRIES:BUILD to run another sidecar build, bin/sidecar-BUILD.xz in the folder (the
# commit before a change: an A/B of two builds in the same rounds); every
# variant and nginx (worker_processes W) are sent the very same requests, in rounds whose
# order rotates, each pinned to cores 0..W-1 (one logical CPU per physical core); wrk and the
# upstream (nginx `return 200`) run on cores of their own. At the W in PERF_W, each proxy's
# user and system CPU per request over 3 s of an extra 4 s run, with `perf stat` (from perfkit/,
# when present) in the same window; PERF_RECORD names the proxies `perf record -g` samples there.
# At the W in DIRECT_W, a `direct` entry (wrk straight to the upstream) joins the rounds: the
# rate the load generator and the upstream reach without a proxy, which bounds every ratio there.
set -u
D=$(cd "$(dirname "$0")" && pwd); OUT=${OUT:-/tmp/variants-out}; mkdir -p "$OUT"
CASES=${CASES:-"tls:2000 plain:20000"}; W_LIST=${W_LIST:-"1 2 4 6"}; ROUNDS=${ROUNDS:-3}; DUR=${DUR:-4s}
LD="$D/lib/ld-linux-x86-64.so.2"
pin() { local c=$1; shift; exec "$LD" --library-path "$D/lib" "$D/bin/taskset" -c "$c" "$LD" --library-path "$D/lib" "$@"; }
W=$(mktemp -d /tmp/variants.XXXX); PIDS=()
"$LD" --library-path "$D/lib" "$D/bin/xz" -d -k -c "$D/bin/sidecar.xz" >"$W/sidecar" && chmod +x "$W/sidecar"
if [ -f "$D/perfkit.tar.xz" ] && [ ! -d "$D/perfkit" ] && command -v tar >/dev/null; then
  "$LD" --library-path "$D/lib" "$D/bin/xz" -d -c "$D/perfkit.tar.xz" | tar xf - -C "$D"
fi
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; sleep 0.3; for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done; }
trap cleanup EXIT
log() { echo "$*" | tee -a "$OUT/results.txt"; }
wait_port() { local i; for i in $(seq 1 200); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.05; done; echo "port $1 never opened" >&2; return 1; }
ulimit -n "$(ulimit -Hn)" 2>/dev/null

# One logical CPU per physical core for the proxies; wrk and the upstream on the others.
PRIMARY=()
for c in $(ls -d /sys/devices/system/cpu/cpu[0-9]* | sed 's/.*cpu//' | sort -n); do
  sib=$(cat "/sys/devices/system/cpu/cpu$c/topology/thread_siblings_list" 2>/dev/null || echo "$c")
  [ "${sib%%[,-]*}" = "$c" ] && PRIMARY+=("$c")
done
if [ -z "${PROXY_CPUS:-}" ] && [ ${#PRIMARY[@]} -ge 14 ]; then
  PROXY_CPUS=$(IFS=,; echo "${PRIMARY[*]:0:6}"); WRK_CORES=$(IFS=,; echo "${PRIMARY[*]:6:6}")
  UP_CORES=$(IFS=,; echo "${PRIMARY[*]:12}"); WRK_THREADS=6; UP_WORKERS=$(( ${#PRIMARY[@]} - 12 ))
fi
PROXY_CPUS=${PROXY_CPUS:-0}; WRK_CORES=${WRK_CORES:-1}; WRK_THREADS=${WRK_THREADS:-1}; UP_CORES=${UP_CORES:-1}; UP_WORKERS=${UP_WORKERS:-1}
log "== $(nproc) cpus; $(grep -m1 'model name' /proc/cpuinfo); kernel $(uname -r); physical cores ${#PRIMARY[@]}"
log "== proxies on $PROXY_CPUS, wrk -t$WRK_THREADS on $WRK_CORES, upstream ($UP_WORKERS workers) on $UP_CORES; W in $W_LIST; $ROUNDS rounds of $DUR"

nginx_conf() {  # DIR LISTEN WORKERS SERVER_BODY HTTP_EXTRA
  mkdir -p "$1/logs"
  cat >"$1/nginx.conf" <<EOF
user root;
worker_processes $3;
daemon off;
pid $1/nginx.pid;
error_log $1/logs/error.log warn;
events { worker_connections 16384; }
http {
  access_log off;
  client_body_temp_path $1/body; proxy_temp_path $1/proxy;
  fastcgi_temp_path $1/fcgi; uwsgi_temp_path $1/uwsgi; scgi_temp_path $1/scgi;
  keepalive_requests 1000000;
  $5
  server { listen 127.0.0.1:$2 reuseport; $4 }
}
EOF
}
UP=18080
nginx_conf "$W/up" $UP "$UP_WORKERS" 'location / { return 200 "ok\n"; }' ""
pin "$UP_CORES" "$D/bin/nginx" -p "$W/up" -c "$W/up/nginx.conf" -e "$W/up/logs/error.log" & PIDS+=($!)
wait_port $UP || exit 1
SECRET=$(cat "$D/secret.txt")

sidecar_conf() {  # FILE PORT WORKERS TLS CACHE_ENTRIES
  cat >"$1" <<EOF
listen: 127.0.0.1:$2
public_url: $([ "$4" = 1 ] && echo https || echo http)://127.0.0.1:$2
$([ "$4" = 1 ] && printf 'tls:\n  cert_file: %s\n  key_file: %s\n' "$D/tls-cert.pem" "$D/tls-key.pem")
upstream: http://127.0.0.1:$UP
workers: $3
apple: {team_id: BENCH12345, client_id: com.example.bench, key_id: BENCH12345, private_key_file: $D/AuthKey_BENCH12345.p8, base_url: "http://127.0.0.1:$UP"}
session: {secrets: ["$SECRET"], cache_entries: $5}
admin: {listen: "127.0.0.1:$(($2 + 5000))"}
log: {access: true, level: warning}
limits: {max_connections: 4000}
EOF
}

bench() {  # PORT SCHEME CONNS → "rps p99"
  local out; out=$(pin "$WRK_CORES" "$D/bin/wrk" -t"$WRK_THREADS" -c"$3" -d"$DUR" --latency -s "$W/s.lua" "$2://127.0.0.1:$1/" 2>&1)
  echo "$out" >>"$W/wrk.log"
  echo "$(awk '/^Requests\/sec:/ {printf "%.0f", $2}' <<<"$out") $(awk '$1 == "99%" {print $2}' <<<"$out") $(awk '/Non-2xx/ {print $NF}' <<<"$out")"
}
children() { local p; for p in /proc/[0-9]*; do [ "$(awk '{print $4}' "$p/stat" 2>/dev/null)" = "$1" ] && echo -n "${p#/proc/},"; done; }
admin_metrics() {  # PORT → the session cache's and re-seals' counters from /metrics
  exec 3<>"/dev/tcp/127.0.0.1/$1" || return
  printf 'GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&3
  grep -E '^sidecar_session_(cache|reseals)_total' <&3 | awk '$2 != 0' | tr '\n' ' '; exec 3>&-
}
cpu_ticks() {  # PIDS (comma-separated) → "utime stime" in clock ticks, summed
  local p u=0 k=0 f; for p in ${1//,/ }; do f=($(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null)); u=$((u + ${f[11]:-0})); k=$((k + ${f[12]:-0})); done; echo "$u $k"
}
perfx() { "$LD" --library-path "$D/perfkit/lib:$D/lib" "$D/perfkit/perf" "$@"; }

RES="$OUT/rows.txt"; casei=0
for case in $CASES; do
  base=$((20000 + 200 * casei)); casei=$((casei + 1))  # ports of their own: nothing waits on a closing one
  scheme=${case%%:*}; sessions=${case#*:}; tls=0; [ "$scheme" = tls ] && tls=1
  sch=http; [ $tls = 1 ] && sch=https
  printf 'SESSIONS_FILE = "%s"\ndofile("%s")\n' "$D/sessions-$sessions.txt" "$D/sessions.lua" >"$W/s.lua"
  var="VARIANTS_$scheme"; variants=${!var:-"sc:8192"}
  log "== case $case: sidecar variants $variants and nginx"
  for n in $W_LIST; do
    cores=$(echo "$PROXY_CPUS" | cut -d, -f1-"$n"); conns=$((64 * n)); [ $conns -lt 128 ] && conns=128
    declare -A PORT=() PID=(); names=(); i=0
    for v in $variants; do
      name=${v%%:*}; port=$((base + 10 * n + i)); i=$((i + 1))
      rest=${v#*:}; entries=${rest%%:*}; binary=$W/sidecar
      if [ "$rest" != "$entries" ]; then
        binary=$W/sidecar-${rest#*:}
        [ -x "$binary" ] || { "$LD" --library-path "$D/lib" "$D/bin/xz" -d -k -c "$D/bin/sidecar-${rest#*:}.xz" >"$binary" \
          && chmod +x "$binary"; } || { log "  no build bin/sidecar-${rest#*:}.xz for variant $name"; exit 1; }
      fi
      sidecar_conf "$W/$name$n.yaml" "$port" "$n" "$tls" "$entries"
      pin "$cores" "$binary" run --config "$W/$name$n.yaml" >>"$W/$name$n.log" 2>&1 & PIDS+=($!); PID[$name]=$!
      PORT[$name]=$port; names+=("$name")
    done
    ngssl=""; [ $tls = 1 ] && ngssl="ssl_certificate $D/tls-cert.pem; ssl_certificate_key $D/tls-key.pem;"
    nginx_conf "$W/ng$n$scheme" "$((base + 100 + n))$([ $tls = 1 ] && echo ' ssl')" "$n" "$ngssl location / {
        proxy_pass http://backend; proxy_http_version 1.1; proxy_set_header Connection \"\";
        proxy_set_header Host \$host; proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
        proxy_set_header X-Forwarded-Proto \$scheme; proxy_set_header X-Forwarded-Host \$host;
        proxy_set_header X-Request-Id \$request_id; proxy_set_header X-Auth-User-Id \"\";
        access_log $W/ng$n$scheme/access.log combined buffer=32k flush=200ms;
      }" "upstream backend { server 127.0.0.1:$UP; keepalive 256; }"
    pin "$cores" "$D/bin/nginx" -p "$W/ng$n$scheme" -c "$W/ng$n$scheme/nginx.conf" -e "$W/ng$n$scheme/logs/error.log" & PIDS+=($!)
    PID[ng]=$!; PORT[ng]=$((base + 100 + n)); names+=(ng)
    case " ${DIRECT_W:-} " in *" $n "*) PORT[direct]=$UP; names+=(direct) ;; esac
    for s in "${names[@]}"; do wait_port "${PORT[$s]}" || { log "  $s W=$n did not start: $(tail -3 "$W/$s$n.log" 2>/dev/null)"; }; done
    sleep 0.3
    for r in $(seq 1 "$ROUNDS"); do
      k=$(( (r - 1) % ${#names[@]} )); order=("${names[@]:k}" "${names[@]:0:k}")
      for s in "${order[@]}"; do
        s_sch=$sch; [ "$s" = direct ] && s_sch=http
        res=$(bench "${PORT[$s]}" "$s_sch" "$conns"); echo "$case $n $s $r $res" >>"$RES"
        log "  $case W=$n round $r $s: $res"
        for f in "$W"/*"$n".log; do : >"$f"; done
      done
    done
    case " ${PERF_W:-} " in *" $n "*)
      for s in "${names[@]}"; do
        [ "$s" = direct ] && continue
        pids=${PID[$s]}; [ "$s" = ng ] && pids=$(children "${PID[ng]}"); pids=${pids%,}
        (DUR=4s bench "${PORT[$s]}" "$sch" "$conns" >"$W/perf.bench") & b=$!
        sleep 0.5; before=$(cpu_ticks "$pids")
        if [ -x "$D/perfkit/perf" ]; then
          perfx stat -e task-clock,context-switches,cpu-migrations,page-faults,cycles,instructions,cache-references,cache-misses,LLC-load-misses \
            -p "$pids" -o "$OUT/stat-$scheme-W$n-$s.txt" -- sleep 3 >/dev/null 2>&1
        else sleep 3; fi
        after=$(cpu_ticks "$pids"); wait $b; rps=$(cut -d' ' -f1 "$W/perf.bench")
        log "  cpu $case W=$n $s: $(awk -v b="$before" -v a="$after" -v r="$rps" -v hz="$(getconf CLK_TCK)" 'BEGIN {
          split(b, x, " "); split(a, y, " "); u = (y[1] - x[1]) / hz * 1e6; k = (y[2] - x[2]) / hz * 1e6; n = r * 3
          printf "%d req/s; per request user %.1f us, system %.1f us, total %.1f us", r, u / n, k / n, (u + k) / n }')"
        case " ${PERF_RECORD:-} " in *" $s "*)
          if [ -x "$D/perfkit/perf" ]; then
            (DUR=4s bench "${PORT[$s]}" "$sch" "$conns" >/dev/null) & b=$!
            sleep 0.5; perfx record -F 499 -g -p "$pids" -o "$W/rec.data" -- sleep 3 >/dev/null 2>&1; wait $b
            { echo "=== perf report $case W=$n $s: by object"
              perfx report -i "$W/rec.data" --no-children --sort dso -g none --stdio 2>/dev/null | grep -v '^#' | grep . | head -12
              echo "=== perf report $case W=$n $s: kernel symbols"
              perfx report -i "$W/rec.data" --no-children --sort sym --dsos '[kernel.kallsyms]' -g none --stdio 2>/dev/null | grep -v '^#' | grep . | head -20
            } >>"$OUT/profiles.txt"
          fi ;;
        esac
      done ;;
    esac
    for s in "${names[@]}"; do [ "$s" = ng ] || [ "$s" = direct ] || log "  $case W=$n $s counters: $(admin_metrics $((PORT[$s] + 5000)))"; done
    for s in "${names[@]}"; do [ -n "${PID[$s]:-}" ] && kill "${PID[$s]}" 2>/dev/null; done; sleep 0.5
    unset PORT PID
  done
done

log ""; log "== medians (req/s) and ratios to nginx"
awk '{k=$1" "$2" "$3; v[k]=v[k]" "$5} END {for (k in v) print k, v[k]}' "$RES" | sort -k1,1 -k2,2n -k3,3 | while read -r c n s vals; do
  med=$(echo $vals | tr ' ' '\n' | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}')
  echo "$c $n $s $med"
done >"$OUT/medians.txt"
awk '{m[$1" "$2" "$3]=$4; if ($3 == "ng") ng[$1" "$2]=$4} END {
  for (k in m) { split(k, p, " "); if (p[3] != "ng") printf "%s W=%s %s %.0f nginx %.0f ratio %.2f\n", p[1], p[2], p[3], m[k], ng[p[1]" "p[2]], m[k]/ng[p[1]" "p[2]] } }' \
  "$OUT/medians.txt" | sort | tee -a "$OUT/results.txt"
cp "$W/wrk.log" "$OUT/" 2>/dev/null
