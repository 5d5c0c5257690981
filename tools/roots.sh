#!/usr/bin/env bash
# roots.sh - make (once) and cache minimal Debian roots with a compiler,
# for the tests of targets that run another glibc in a container (the
# containers suite) and for tools/chroot-test.sh.
#
#   tools/roots.sh SUITE...    e.g. bullseye bookworm trixie
#
# Each root is /var/cache/tinspect/roots/SUITE (TINSPECT_ROOTS overrides the
# directory): debootstrap --variant=minbase plus gcc, g++, libc6-dev,
# libc6-dbg (libc's symbol table: it names the frames of glibc's PI park,
# and the containers suite also runs without it) and musl-tools (the
# release's own musl, for the musl targets of the containers suite), from
# the Debian archive this machine's apt already uses (tools/setup.sh
# mirror: no host is named in the repository).  A root cached before
# libc6-dbg or musl-tools was asked for gets them with the root's own apt.
# A root is made in SUITE.new and renamed when complete, so an interrupted
# run leaves nothing half-made;
# debootstrap's log is SUITE.log beside it.  When a root cannot be made (no
# debootstrap, no network, not root) it says why and goes on: the tests
# that need it skip with that reason.  Exit status: 0 if every root exists.
set -uo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROOTS=${TINSPECT_ROOTS:-/var/cache/tinspect/roots}

# packages into a root made without them, by the root's own apt
add_pkgs() {	# suite marker packages...: unless ROOT/marker exists
	local suite=$1 dir=$ROOTS/$1 mark=$2
	shift 2
	[[ -e $dir/$mark ]] && return 0
	echo "roots: adding $* to $dir (once)" >&2
	cp /etc/resolv.conf "$dir/etc/resolv.conf" 2>/dev/null
	if ! chroot "$dir" sh -c "apt-get update && apt-get install -y $*" \
		</dev/null >>"$ROOTS/$suite.log" 2>&1; then
		echo "roots: cannot add $* to $suite (see $ROOTS/$suite.log)" >&2
		return 1
	fi
}
# what a root made before they were asked for lacks: libc's symbols, and
# musl (its own version in each release: 1.2.2, 1.2.3, 1.2.5)
add_missing() {	# suite
	add_pkgs "$1" usr/lib/debug/.build-id libc6-dbg &&
		add_pkgs "$1" usr/bin/musl-gcc musl-tools
}
make_root() {	# suite
	local suite=$1 dir=$ROOTS/$1 mirror
	if [[ -x $dir/usr/bin/gcc ]]; then
		add_missing "$suite"
		return
	fi
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
	if ! debootstrap --variant=minbase --include=gcc,g++,libc6-dev,libc6-dbg,musl-tools \
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
