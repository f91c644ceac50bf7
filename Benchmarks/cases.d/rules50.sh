# rules50: the sidecar case (everything public, GET /) with 50 rules in front of the decision,
# for "rules cost nothing measurable" (Benchmarks/RESULTS.md): 40 subtrees with an email
# domain each, 5 extension globs and 3 exact paths at the root, a deny by method, then `/**`
# public — so GET / walks the trie's root, tries the 5 globs hung there and matches the last
# rule. Compare with the sidecar case (the same config without rules) in the same run.
# RULES_BASELINE_BIN [none], another sidecar binary (say, main's before a change), adds
# rules50base: the same configuration on that build, in the same rounds (an A/B of deciding).
# RULES_PATH [/]: the path wrk asks for (say /Section07/X;v=1 to price the lenient reading).
has_case rules50 || CASES+=(rules50)

RULES_PORT=$(free_port); RULES_ADMIN=$(free_port)
write_sidecar_config "$WORK/sidecar-rules50.yaml" "$RULES_PORT" "$RULES_ADMIN" '["/**"]'
{
  echo "rules:"
  for i in $(seq -w 0 39); do echo "  - {path: /section$i/**, allowed_email_domains: [example.com]}"; done
  for ext in css js png svg woff2; do echo "  - {path: \"/*.$ext\", public: true}"; done
  for p in robots.txt favicon.ico healthz; do echo "  - {path: /$p, public: true}"; done
  echo "  - {path: /admin/**, methods: [POST, DELETE], deny: true}"
  echo "  - {path: /**, public: true}"
} >>"$WORK/sidecar-rules50.yaml"
start_sidecar_with "$WORK/sidecar-rules50.yaml"; SIDECAR_RULES_PID=$SIDECAR_PID
wait_port "$RULES_PORT"
case_rules50() { CASE_PORT=$RULES_PORT; CASE_PIDS="$SIDECAR_RULES_PID"; CASE_PATH=${RULES_PATH:-/}; }
if [ -n "${RULES_BASELINE_BIN:-}" ]; then
  has_case rules50base || CASES+=(rules50base)
  if [ "$INSTRUCTIONS" = 1 ]; then strip -g -o "$WORK/sidecar-rulesbase" "$RULES_BASELINE_BIN"; RULES_BASELINE_BIN=$WORK/sidecar-rulesbase; fi
  RULESBASE_PORT=$(free_port); RULESBASE_ADMIN=$(free_port)
  sed -e "s|127.0.0.1:$RULES_PORT|127.0.0.1:$RULESBASE_PORT|g" -e "s|127.0.0.1:$RULES_ADMIN|127.0.0.1:$RULESBASE_ADMIN|" \
    "$WORK/sidecar-rules50.yaml" >"$WORK/sidecar-rules50base.yaml"
  start_sidecar_with "$WORK/sidecar-rules50base.yaml" "$RULES_BASELINE_BIN"; SIDECAR_RULESBASE_PID=$SIDECAR_PID
  wait_port "$RULESBASE_PORT"
  case_rules50base() { CASE_PORT=$RULESBASE_PORT; CASE_PIDS="$SIDECAR_RULESBASE_PID"; CASE_PATH=${RULES_PATH:-/}; }
fi
