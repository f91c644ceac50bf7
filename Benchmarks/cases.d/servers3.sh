# servers3: the sidecar case (everything public, GET /) with its upstream given as three
# servers, balanced round robin, for "several servers cost no more than one"
# (Benchmarks/RESULTS.md). The three are the one benchmark upstream named three times: three
# pools, the balancer's every pick, the same upstream work. Compare with the sidecar case in the
# same run.
has_case servers3 || CASES+=(servers3)

SERVERS3_PORT=$(free_port); SERVERS3_ADMIN=$(free_port)
write_sidecar_config "$WORK/sidecar-servers3.yaml" "$SERVERS3_PORT" "$SERVERS3_ADMIN" '["/**"]'
sed -i "s|^upstream: .*|upstream: [http://127.0.0.1:$UP_PORT, http://127.0.0.1:$UP_PORT, http://127.0.0.1:$UP_PORT]|" \
  "$WORK/sidecar-servers3.yaml"
start_sidecar_with "$WORK/sidecar-servers3.yaml"; SIDECAR_SERVERS3_PID=$SIDECAR_PID
wait_port "$SERVERS3_PORT"
case_servers3() { CASE_PORT=$SERVERS3_PORT; CASE_PIDS="$SIDECAR_SERVERS3_PID"; }
