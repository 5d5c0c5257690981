#!/usr/bin/env bash
# container-target.sh - the shared harness's target, run inside a Debian
# root as a container would (its own mount namespace, chrooted), for
# measure.sh (TARGET=bench/container-target.sh): every step execs, so the
# PID measure.sh signals is the target's.  The harness's --gap-file lives
# on the host: its directory is bind-mounted at the same path inside the
# root, in the target's own mount namespace only, and so is a /proc (the
# target waits for its threads to sleep by reading /proc/self/task).  The
# target must have been built inside the root as ROOT/tmp/bench/target
# (bench/run.sh --container ROOT does).
#   CONTAINER_ROOT=/var/cache/tinspect/roots/trixie container-target.sh ARGS...
set -eu
root=${CONTAINER_ROOT:?}
gap=""
prev=""
for a in "$@"; do
	[[ $prev == --gap-file ]] && gap=$a
	prev=$a
done
dir=$(dirname "${gap:-/tmp/x}")
exec unshare --mount /bin/sh -c '
	mount --make-rprivate / 2>/dev/null
	mkdir -p "$1$2" && mount --bind "$2" "$1$2" || exit 1
	mount -t proc proc "$1/proc" || exit 1
	root=$1; shift 2
	exec chroot "$root" /tmp/bench/target "$@"' sh "$root" "$dir" "$@"
