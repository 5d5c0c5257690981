#!/usr/bin/env bash
# test_setup.sh: tools/setup.sh's own promises, as TAP.  The Debian mirror
# for bullseye's libc is taken from the machine's apt configuration (deb822
# and one-line sources, a local mirror too), and the script names no host
# of its own.  Runs without network: the configurations are made up here.
set -u
top=${1:?usage: test_setup.sh SOURCE_ROOT}
setup=$top/tools/setup.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0 bad=0

check() {	# description, then the command that must succeed
	local what=$1
	shift
	n=$((n + 1))
	if "$@"; then
		echo "ok $n - $what"
	else
		echo "not ok $n - $what"
		bad=$((bad + 1))
	fi
}

mirror() {	# etc dir: what setup.sh would use
	TINSPECT_APT_ETC=$1 TINSPECT_CODENAME=bookworm bash "$setup" mirror 2>/dev/null
}

is() {	# got, want
	[[ $1 == "$2" ]] || { echo "# got '$1', want '$2'"; return 1; }
}

# deb822: a security stanza first, a disabled one, then the archive of a
# local mirror with two suites; comments inside stanzas
mkdir -p "$tmp/a/sources.list.d"
cat >"$tmp/a/sources.list.d/debian.sources" <<'SRC'
Types: deb
URIs: http://mirror.example.internal:3142/debian-security
Suites: bookworm-security
Components: main

Types: deb
URIs: http://disabled.example.internal/debian
Suites: bookworm
Enabled: no

# the local mirror
Types: deb deb-src
# a comment inside the stanza
URIs: http://mirror.example.internal:3142/debian
Suites: bookworm bookworm-updates
Components: main
SRC
check "deb822: the enabled stanza of the release's codename" \
	is "$(mirror "$tmp/a")" "http://mirror.example.internal:3142/debian"

# one-line sources, with options, and a deb-src line before
mkdir -p "$tmp/b/sources.list.d"
cat >"$tmp/b/sources.list" <<'SRC'
# deb http://commented.example.internal/debian bookworm main
deb-src http://src.example.internal/debian bookworm main
deb http://mirror.example.internal/debian-security bookworm-security main
deb [arch=amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] file:/srv/mirror/debian bookworm main
SRC
check "sources.list: the deb line of the release's codename, options skipped" \
	is "$(mirror "$tmp/b")" "file:/srv/mirror/debian"

# both: deb822 wins
cp "$tmp/a/sources.list.d/debian.sources" "$tmp/b/sources.list.d/"
check "deb822 before sources.list" \
	is "$(mirror "$tmp/b")" "http://mirror.example.internal:3142/debian"

# no archive of the release: no mirror (the old-glibc test is skipped)
mkdir -p "$tmp/c/sources.list.d"
echo "deb http://other.example.internal/debian bullseye main" >"$tmp/c/sources.list"
check "no source of the release: no mirror, and a failure status" \
	bash -c '! out=$(TINSPECT_APT_ETC="$1" TINSPECT_CODENAME=bookworm bash "$2" mirror) && [[ -z $out ]]' \
	_ "$tmp/c" "$setup"

# the repository's scripts name no host: no URL, no domain name
hosts() {
	! grep -nEi 'https?://|ftp://|\b[a-z0-9-]+\.(debian|ubuntu)\.(org|com|net)\b|\bdeb\.[a-z]+\.[a-z]+' \
		"$setup" "$top/tools/fuzz.sh" "$top/.ci/run" "$top/tools/roots.sh" \
		"$top/tools/chroot-test.sh" "$top/tools/arm64-vm.sh"
}
check "tools/setup.sh, roots.sh, chroot-test.sh, arm64-vm.sh, fuzz.sh and .ci/run name no host" hosts

echo "1..$n"
((bad == 0))
