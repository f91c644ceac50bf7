#!/usr/bin/env bash
# Links the `sidecar` the last release build compiled (dynamically linked, as `swift build -c
# release` leaves it) a second time with the Swift runtime and Foundation inside, as
# `--static-swift-stdlib` links it: the same objects, so the binary the unit tests' build
# compiled is the one the end-to-end tests drive and the package carries, without compiling the
# whole package a second time (a `--static-swift-stdlib` build compiles every module again
# against the static resource directory, where XCTest is not: the unit tests cannot use it).
# Usage: scripts/lib/link-static.sh OUTPUT
# The link is SwiftPM's own (the command its build plan recorded for the product), plus
# `-static-stdlib` and the libraries the static Foundation modules name for themselves (read
# off a probe compiled against the static resource directory, so no list here goes stale).
set -euo pipefail
cd "$(dirname "$0")/../.."
output="$1"
plan=".build/release.yaml"
[ -f "$plan" ] || { echo "link-static: no $plan: run \`swift build -c release\` first" >&2; exit 1; }
bin_dir="$(swift build -c release --show-bin-path)"

work="$(mktemp -d "${TMPDIR:-/tmp}/sidecar-link.XXXXXX")"
trap 'rm -rf "$work"' EXIT
printf 'import Foundation\nimport FoundationEssentials\nimport FoundationInternationalization\nimport Dispatch\n' \
  > "$work/probe.swift"
swiftc -O -static-stdlib -parse-as-library -c "$work/probe.swift" -o "$work/probe.o"
swift-autolink-extract "$work/probe.o" -o "$work/static-libraries"

python3 - "$plan" "$bin_dir/sidecar" "$output" "$work/static-libraries" > "$work/link-args" <<'PY'
import json, os, sys
plan, product, output, libraries = sys.argv[1:]
# The build plan is YAML whose command entries keep their arguments as one JSON array a line.
lines = open(plan).read().split("\n")
target = os.path.realpath(product)
for i, line in enumerate(lines):
    entry = line.strip()
    if entry.startswith("outputs: [") and len(json.loads(entry[len("outputs: "):])) == 1 \
            and os.path.realpath(json.loads(entry[len("outputs: "):])[0]) == target \
            and lines[i + 1].strip().startswith('description: "Linking') and lines[i + 2].strip().startswith("args: ["):
        args = json.loads(lines[i + 2].strip()[len("args: "):])
        break
else:
    sys.exit("link-static: no link command for %s in %s" % (product, plan))
args[args.index("-o") + 1] = output
args.insert(1, "-static-stdlib")
args += sorted(set(open(libraries).read().split()) - set(args))
print("\n".join(args))
PY
mapfile -t link < "$work/link-args"
# (The static Foundation's objects draw one linker warning, about its use of mktemp.)
"${link[@]}" > "$work/link-log" 2>&1 || { cat "$work/link-log"; echo "link-static: the link failed" >&2; exit 1; }
grep -v "the use of \`mktemp' is dangerous" "$work/link-log" || true
"$output" --version >/dev/null
