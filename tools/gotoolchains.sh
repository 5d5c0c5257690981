#!/usr/bin/env bash
# gotoolchains.sh - fetch (once) and cache the Go toolchains Debian ships
# besides the system's, for the tests that read Go binaries of every
# pclntab format: bookworm-backports' golang-1.NN, trixie's and
# trixie-backports', and the newest in unstable (Go 1.18 is in no suite the
# archive still has; its table format is 1.19's, the system's).  They are
# unpacked, never installed: the system's packages, apt sources, lists and
# state are left alone (apt-get runs with a private configuration, as
# tools/setup.sh does for Debian 11's libc6).
#
#   tools/gotoolchains.sh [DIR]    default /var/cache/tinspect/go
#
# Each toolchain is DIR/1.NN (GOROOT DIR/1.NN/usr/lib/go-1.NN), made in
# 1.NN.new and renamed when complete.  The archive is the one this machine's
# apt uses (tools/setup.sh mirror: no host is named in the repository).
# Without network it says why and exits 0: the go suite then reads the
# binaries of the toolchains it has (at least the system's golang-go).
# The Go toolchain is statically linked: a trixie or unstable go command
# runs on Debian 12.  Every tools/setup.sh run calls this: the archive is
# asked at most once a day (DIR/.checked; TINSPECT_GO_RECHECK=1 asks now).
set -uo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=${1:-${TINSPECT_GO_DIR:-/var/cache/tinspect/go}}

say() { echo "gotoolchains: $*" >&2; }

stamp=$DIR/.checked
if [[ -z ${TINSPECT_GO_RECHECK:-} && -n $(find "$stamp" -mmin -1440 2>/dev/null) ]]; then
	exit 0
fi

[[ $(dpkg --print-architecture 2>/dev/null) == amd64 ]] || {
	say "not amd64: no toolchains fetched"
	exit 0
}
mirror=$(bash "$top/tools/setup.sh" mirror 2>/dev/null) || {
	say "no Debian archive in the apt configuration"
	exit 0
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial"
for suite in bookworm-backports trixie trixie-backports sid; do
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]" \
		"$mirror $suite main"
done >"$tmp/sources.list"
apt=(-q -o "Dir::Etc::SourceList=$tmp/sources.list"
	-o Dir::Etc::SourceParts=/dev/null -o "Dir::State::Lists=$tmp/lists"
	-o "Dir::Cache=$tmp/cache" -o Dir::State::status=/dev/null
	-o APT::Sandbox::User=root)
if ! apt-get "${apt[@]}" update </dev/null >"$tmp/update.log" 2>&1; then
	say "apt-get update failed (no network?): $(tail -1 "$tmp/update.log")"
	exit 0
fi

# every golang-1.NN-go the three suites have, newest version of each
mapfile -t versions < <(apt-cache "${apt[@]}" search --names-only \
	'^golang-1\.[0-9]+-go$' </dev/null | sed -n 's/^golang-\(1\.[0-9]*\)-go .*/\1/p' |
	sort -t. -k2,2n -u)
# Fetch golang-V-go and its sources and unpack them into DIR/V.
fetch() {	# version
	local v=$1 dl=$tmp/dl-$1 deb
	mkdir -p "$dl" || return 1
	(cd "$dl" && apt-get "${apt[@]}" download "golang-$v-go" "golang-$v-src" \
		</dev/null >/dev/null 2>&1) || return 1
	rm -rf "$DIR/$v.new" && mkdir -p "$DIR/$v.new" || return 1
	for deb in "$dl"/*.deb; do
		dpkg-deb -x "$deb" "$DIR/$v.new" || return 1
	done
	[[ -x $DIR/$v.new/usr/lib/go-$v/bin/go ]] && mv -T "$DIR/$v.new" "$DIR/$v"
}

rc=0
for v in "${versions[@]}"; do
	[[ -x $DIR/$v/usr/lib/go-$v/bin/go ]] && continue
	# the system's own (bookworm's 1.19) needs no copy
	[[ -x /usr/lib/go-$v/bin/go ]] && continue
	if fetch "$v"; then
		say "Go $v unpacked in $DIR/$v"
	else
		say "could not fetch golang-$v-go; the go suite reads no Go $v binary"
		rm -rf "$DIR/$v.new"
		rc=1
	fi
	rm -rf "$tmp/dl-$v"
done
((rc == 0)) && mkdir -p "$DIR" && touch "$stamp"
exit $rc
