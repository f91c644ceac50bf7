#!/usr/bin/env bash
# Build the Debian package and the release tarball (scripts/package), install the package on
# this machine, check what an operator gets, then purge it and check it left nothing behind.
# Run by scripts/test after the end-to-end tests. Refuses to run where a `sidecar` package or
# user already exists: the purge at the end would take them away.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/deps.sh

fail() { echo "package-check: FAIL: $*" >&2; exit 1; }
started=$SECONDS

status="$(dpkg-query -W -f='${db:Status-Status}' sidecar 2>/dev/null || true)"
[ -z "$status" ] || [ "$status" = not-installed ] \
  || fail "the sidecar package is on this machine ($status); remove it (dpkg --purge sidecar) first"
! getent passwd sidecar >/dev/null || fail "a user named sidecar exists here; the package's purge would delete it"

DEB_XZ_LEVEL=1 scripts/package
arch="$(dpkg --print-architecture)"
version="$("${SIDECAR_BINARY:-$(swift build -c release --static-swift-stdlib --show-bin-path)/sidecar}" --version | awk '{print $2}')"
deb="dist/sidecar_${version}_${arch}.deb"
tarball="dist/sidecar-${version}-linux-${arch}.tar.gz"

echo "== dpkg -i $deb"
trap '$SUDO dpkg --purge sidecar >/dev/null 2>&1 || true' EXIT
$SUDO dpkg -i "$deb"

[ "$(command -v sidecar)" = /usr/bin/sidecar ] || fail "sidecar is not /usr/bin/sidecar: $(command -v sidecar)"
sidecar --version
[ "$(sidecar --version)" = "$(sidecar version)" ] && sidecar --version | grep -qx "sidecar $version (swift .*)" \
  || fail "sidecar --version does not report $version"

getent passwd sidecar | grep -q ':/var/lib/sidecar:/usr/sbin/nologin$' || fail "no sidecar system user: $(getent passwd sidecar)"
[ "$(id -u sidecar)" -lt 1000 ] || fail "the sidecar user is not a system user (uid $(id -u sidecar))"
[ "$(id -gn sidecar)" = sidecar ] || fail "the sidecar user's group is $(id -gn sidecar)"

conffiles="$(dpkg-query -W -f='${Conffiles}' sidecar)"
echo "conffiles:$conffiles"
grep -q '^ /etc/sidecar/sidecar.yaml [0-9a-f]\{32\}$' <<<"$conffiles" || fail "/etc/sidecar/sidecar.yaml is not a conffile"

for file in /etc/sidecar/cookie-secret /etc/sidecar/AuthKey_placeholder.p8; do
  [ "$(stat -c '%a %U:%G' "$file")" = "640 root:sidecar" ] || fail "$file: $(stat -c '%a %U:%G' "$file")"
done
[ "$(stat -c '%a %U:%G' /etc/sidecar/sidecar.yaml)" = "644 root:root" ] || fail "sidecar.yaml: $(stat -c '%a %U:%G' /etc/sidecar/sidecar.yaml)"

# As installed the file holds the package's placeholders: `check` must refuse it (so the
# unit's ExecStartPre keeps the service from starting), naming each line to fill in; filled
# in, the service's user must be able to load it.
expect_placeholders_refused() {
  local out
  if out="$($SUDO "$@" check --config /etc/sidecar/sidecar.yaml 2>&1)"; then
    fail "sidecar check passed the packaged configuration with its placeholders: $out"
  fi
  echo "$out"
  for key in apple.team_id apple.key_id apple.private_key_file; do
    grep -q "^/etc/sidecar/sidecar.yaml:[0-9]*:[0-9]*: $key: " <<<"$out" || fail "check did not name $key: $out"
  done
  grep -q 'is a placeholder: put your Team ID here' <<<"$out" || fail "check did not say what the team id should be: $out"
}
echo "== sidecar check --config /etc/sidecar/sidecar.yaml (refused: placeholders; as root, then as the service's user)"
expect_placeholders_refused sidecar
expect_placeholders_refused runuser -u sidecar -- /usr/bin/sidecar
filled="$(mktemp)"
$SUDO cp -p /etc/sidecar/AuthKey_placeholder.p8 /etc/sidecar/AuthKey_XYZ123ABCD.p8
sed -e 's/TEAMID0000/ABCDE12345/; s/KEYID00000/XYZ123ABCD/; s/AuthKey_placeholder.p8/AuthKey_XYZ123ABCD.p8/' \
  /etc/sidecar/sidecar.yaml > "$filled"
chmod 0644 "$filled"
$SUDO runuser -u sidecar -- /usr/bin/sidecar check --config "$filled" >/dev/null \
  || { rm -f "$filled"; fail "the service's user cannot load the packaged configuration once filled in"; }
rm -f "$filled"
$SUDO rm -f /etc/sidecar/AuthKey_XYZ123ABCD.p8

unit=/lib/systemd/system/sidecar.service
grep -qx 'User=sidecar' "$unit" && ! grep -q '^DynamicUser=' "$unit" || fail "$unit does not run as the sidecar user"
# Every directive of the example unit, hardening included, with the package's paths.
missing="$(comm -23 \
  <(grep -E '^[A-Za-z]+=' Examples/systemd/sidecar.service | grep -vE '^(DynamicUser|Documentation)=' \
      | sed 's|/usr/local/bin/sidecar|/usr/bin/sidecar|' | sort) \
  <(grep -E '^[A-Za-z]+=' "$unit" | sort))"
[ -z "$missing" ] || fail "$unit lacks: $missing"
if command -v systemd-analyze >/dev/null; then
  problems="$(systemd-analyze verify "$unit" 2>&1 | grep sidecar.service || true)"
  [ -z "$problems" ] || fail "systemd-analyze verify: $problems"
fi
zcat /usr/share/man/man1/sidecar.1.gz | grep -q SIGHUP || fail "the manual page lacks the signals"
grep -q 'License: Apache-2.0' /usr/share/doc/sidecar/copyright || fail "copyright names no Apache-2.0"
[[ "$(zcat /usr/share/doc/sidecar/changelog.gz)" == "sidecar ($version) "* ]] \
  || fail "/usr/share/doc/sidecar/changelog.gz does not start with this version"

echo "== dpkg -i again (an upgrade in place keeps the generated secret)"
secret="$($SUDO sha256sum /etc/sidecar/cookie-secret)"
$SUDO dpkg -i "$deb" >/dev/null
[ "$($SUDO sha256sum /etc/sidecar/cookie-secret)" = "$secret" ] || fail "reinstalling replaced the cookie secret"
expect_placeholders_refused sidecar >/dev/null

echo "== dpkg --purge sidecar"
$SUDO dpkg --purge sidecar
trap - EXIT
[ "$(dpkg-query -W -f='${db:Status-Status}' sidecar 2>/dev/null || echo not-installed)" = not-installed ] \
  || fail "sidecar is still known to dpkg"
for path in /usr/bin/sidecar /lib/systemd/system/sidecar.service /etc/sidecar /var/lib/sidecar; do
  [ ! -e "$path" ] || fail "$path is still there after the purge"
done
! getent passwd sidecar >/dev/null || fail "the sidecar user is still there after the purge"
! getent group sidecar >/dev/null || fail "the sidecar group is still there after the purge"

echo "== $tarball"
unpacked="$(mktemp -d "${TMPDIR:-/tmp}/sidecar-tarball.XXXXXX")"
trap 'rm -rf "$unpacked"' EXIT
tar -xzf "$tarball" -C "$unpacked"
listing="$(cd "$unpacked" && find . -type f | sort | tr '\n' ' ')"
name="sidecar-${version}-linux-${arch}"
# The binary, its manual, unit and configuration, and the documents the README links to
# (Docs/, Examples/, CONTRIBUTING.md, Benchmarks/RESULTS.md), exactly as tracked in git.
docs="$(git ls-files Docs Examples CONTRIBUTING.md Benchmarks/RESULTS.md | sed "s|^|./$name/|")"
expected="$(printf '%s\n' "./$name/LICENSE" "./$name/README.md" "./$name/sidecar" "./$name/sidecar.1" \
  "./$name/sidecar.service" "./$name/sidecar.yaml" $docs | sort | tr '\n' ' ')"
[ "$listing" = "$expected" ] || fail "the tarball holds: $listing (expected: $expected)"
"$unpacked/$name/sidecar" --version | grep -qx "sidecar $version (swift .*)" || fail "the tarball's binary does not run"

echo "== package check passed ($((SECONDS - started)) s)"
