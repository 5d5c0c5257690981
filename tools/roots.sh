#!/usr/bin/env bash
# roots.sh - make (once) and cache minimal Debian roots with a compiler,
# for the tests of targets that run another glibc in a container (the
# containers suite) and for tools/chroot-test.sh.
#
#   tools/roots.sh SUITE...    e.g. bullseye bookworm trixie
#
# Each root is /var/cache/tinspect/roots/SUITE (TINSPECT_ROOTS overrides the
# directory): debootstrap --variant=minbase plus gcc, g++ and libc6-dev, from
# the Debian archive this machine's apt already uses (tools/setup.sh mirror:
# no host is named in the repository).  A root is made in SUITE.new and
# renamed when complete, so an interrupted run leaves nothing half-made;
# debootstrap's log is SUITE.log beside it.  When a root cannot be made (no
# debootstrap, no network, not root) it says why and goes on: the tests
# that need it skip with that reason.  Exit status: 0 if every root exists.
set -uo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROOTS=${TINSPECT_ROOTS:-/var/cache/tinspect/roots}

make_root() {	# suite
	local suite=$1 dir=$ROOTS/$1 mirror
	[[ -x $dir/usr/bin/gcc ]] && return 0
	if [[ $(id -u) -ne 0 ]]; then
		echo "roots: not root, cannot debootstrap $suite" >&2
		return 1
	fi
	command -v debootstrap >/dev/null || {
		echo "roots: debootstrap is not installed" >&2
		return 1
	}
	mirror=$(bash "$top/tools/setup.sh" mirror) || {
		echo "roots: no Debian archive in this machine's apt configuration" >&2
		return 1
	}
	mkdir -p "$ROOTS"
	rm -rf "$dir.new"
	echo "roots: debootstrap $suite from $mirror into $dir (once)" >&2
	if ! debootstrap --variant=minbase --include=gcc,g++,libc6-dev \
		"$suite" "$dir.new" "$mirror" </dev/null >"$ROOTS/$suite.log" 2>&1; then
		echo "roots: debootstrap $suite failed (see $ROOTS/$suite.log)" >&2
		rm -rf "$dir.new"
		return 1
	fi
	mv -T "$dir.new" "$dir"
}

rc=0
for s in "$@"; do
	make_root "$s" || rc=1
done
exit $rc
