#!/usr/bin/env bash
# chroot-test.sh - the test suite run from inside a fresh Debian 12 root, as
# Debian's package builders and many CI systems run it.
#
#   tools/chroot-test.sh           tools/setup.sh test inside the chroot
#   tools/chroot-test.sh --quick   tools/setup.sh build, then meson test
#                                  (no ASan, valgrind, fuzzers: minutes,
#                                  not an hour)
#   tools/chroot-test.sh --no-sys-admin [--quick]
#                                  the same without CAP_SYS_ADMIN (dropped
#                                  from the bounding set by capsh), as in a
#                                  container that lacks it: what needs it
#                                  must skip with a reason, not fail
#
# A copy of the cached Debian 12 root (tools/roots.sh bookworm) is made under
# /var/tmp, this tree (its committed and uncommitted files, not build/) is
# copied into it, /proc, /dev and /sys are mounted, and the run happens
# there; the Debian 11/13 roots of the containers suite are lent to it
# read-only (TINSPECT_NO_ROOTS: it does not make its own).  Everything is
# unmounted and removed at the end, also on failure or interruption; the
# run's processes are ended by the PID of the chroot's process group.
# Prints the run's own last line ("N passed, N failed, N skipped") and
# exits with its status.  Needs root.
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROOTS=${TINSPECT_ROOTS:-/var/cache/tinspect/roots}
quick=0 nosysadmin=0
for a in "$@"; do
	case $a in
	--quick) quick=1 ;;
	--no-sys-admin) nosysadmin=1 ;;
	*) echo "usage: chroot-test.sh [--no-sys-admin] [--quick]" >&2; exit 2 ;;
	esac
done

bash "$top/tools/roots.sh" bookworm || {
	echo "chroot-test: no Debian 12 root; nothing run" >&2
	exit 77
}
work=$(mktemp -d /var/tmp/tinspect-chroot.XXXXXX)
root=$work/root
mounted=()
child=""
cleanup() {
	local i
	if [[ -n $child ]]; then
		kill -KILL -- "-$child" 2>/dev/null || true
		wait "$child" 2>/dev/null || true
	fi
	for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
		umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}" || true
	done
	rm -rf --one-file-system "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

cp -a "$ROOTS/bookworm" "$root"
# its root a mount point of its own, as schroot and sbuild make it: unshare
# --mount (the ns and containers suites) makes "/" private, which needs one
mount --bind "$root" "$root"
mounted+=("$root")
mkdir -p "$root/src"
# the tree as it is (tracked and untracked files, no build directories)
(cd "$top" && git ls-files -co --exclude-standard -z |
	grep -zv '^build' | xargs -0 cp --parents -t "$root/src")
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
for d in proc sys dev dev/pts; do
	mkdir -p "$root/$d"
	case $d in
	proc) mount -t proc proc "$root/proc" ;;
	sys) mount -t sysfs sys "$root/sys" ;;
	dev) mount --bind /dev "$root/dev" ;;
	dev/pts) mount --bind /dev/pts "$root/dev/pts" ;;
	esac
	mounted+=("$root/$d")
done
for s in bullseye trixie; do
	[[ -d $ROOTS/$s ]] || continue
	mkdir -p "$root/var/cache/tinspect/roots/$s"
	mount --bind -o ro "$ROOTS/$s" "$root/var/cache/tinspect/roots/$s"
	mounted+=("$root/var/cache/tinspect/roots/$s")
done
# the Debian 11 libc of the old-glibc test, if the host has it
if [[ -d /var/cache/tinspect/glibc-2.31 ]]; then
	mkdir -p "$root/var/cache/tinspect/glibc-2.31"
	mount --bind -o ro /var/cache/tinspect/glibc-2.31 "$root/var/cache/tinspect/glibc-2.31"
	mounted+=("$root/var/cache/tinspect/glibc-2.31")
fi
# the other Go toolchains of the go suite (tools/gotoolchains.sh), if any
if [[ -d /var/cache/tinspect/go ]]; then
	mkdir -p "$root/var/cache/tinspect/go"
	mount --bind -o ro /var/cache/tinspect/go "$root/var/cache/tinspect/go"
	mounted+=("$root/var/cache/tinspect/go")
fi

if ((quick)); then
	cmd='tools/setup.sh build && meson test -C build --print-errorlogs; rc=$?;
	     sed -n "s/^Ok: *\([0-9]*\).*/\1 passed/p;s/^Fail: *\([0-9]*\).*/\1 failed/p" build/meson-logs/testlog.txt | paste -sd, ; exit $rc'
else
	cmd='tools/setup.sh test'
fi
set +e
wrap=()
if ((nosysadmin)); then
	# bash -c 'exec "$0" "$@"': capsh runs bash with what follows "--"
	wrap=(capsh --drop=cap_sys_admin -- -c 'exec "$0" "$@"')
	# CAP_SYS_ADMIN is bit 21 of the bounding set
	cmd='b=$(awk "/^CapBnd:/ { print \$2 }" /proc/self/status);
	     if (( (0x$b >> 21) & 1 )); then echo "chroot-test: CAP_SYS_ADMIN was not dropped" >&2; exit 1; fi; '"$cmd"
fi
setsid "${wrap[@]}" chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
	TERM=dumb LANG=C.UTF-8 TINSPECT_NO_ROOTS=1 /bin/bash -c "cd /src && $cmd" </dev/null &
child=$!
wait "$child"
rc=$?
child=""
set -e
echo "chroot-test: exit status $rc"
exit $rc
