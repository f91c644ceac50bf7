# rules50: the sidecar case (everything public, GET /) with 50 rules in front of the decision,
# for "rules cost nothing measurable" (Benchmarks/RESULTS.md): 40 subtrees with an email
# domain each, 5 extension globs and 3 exact paths at the root, a deny by method, then `/**`
# public — so GET / walks the trie's root, tries the 5 globs hung there and matches the last
# rule. Compare with the sidecar case (the same config without rules) in the same run.
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
case_rules50() { CASE_PORT=$RULES_PORT; CASE_PIDS="$SIDECAR_RULES_PID"; }
