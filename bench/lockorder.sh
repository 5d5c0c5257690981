#!/usr/bin/env bash
# lockorder.sh - the lock-order graph of a watch: how soon it reports a
# potential deadlock, and what it costs the target.
#
#   bench/lockorder.sh [-r RUNS] [-i INTERVAL] [-s SECONDS] [-R ROUNDS]
#                      [-p PARTS] [-b BASE_TINSPECT]
#
# Part 1: RUNS runs (default 10) per mode of `tinspect --watch INTERVAL
# (default 0.5) --json --summary [--nonblocking]` on a fresh
# `fx_lockorder abba`: the seconds from the watch's start to its
# lock_order_inversion line, and the updates that took; median and max.
# Part 2: the target's throughput (its own progress counter) with nobody
# watching and under --watch INTERVAL with the graph, with --no-lock-order,
# and both --nonblocking (and BASE_TINSPECT's watch, the build before the
# graph, with -b), on fx_lock_contend 16 (lock-heavy, busy), on
# fx_lockorder abba and on bench/manylocks.c (1000 mutexes the session
# comes to remember, in an array and one per page), ROUNDS (3) x SECONDS
# (10) each in rotation; the freeze per update and update duration from
# the summary lines.
# -p 1 or -p 2 runs one part.  The details are in bench/lockorder.py.
# Every process is started and killed by PID there.
set -u
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
args=()
while getopts "r:i:s:R:p:b:h" o; do
	case $o in
	r) args+=(--runs "$OPTARG") ;;
	i) args+=(--interval "$OPTARG") ;;
	s) args+=(--seconds "$OPTARG") ;;
	R) args+=(--rounds "$OPTARG") ;;
	p) args+=(--parts "$OPTARG") ;;
	b) args+=(--base "$OPTARG") ;;
	*) sed -n '2,20p' "$0"; exit 2 ;;
	esac
done
TINSPECT=${TINSPECT:-$top/build/agent/tinspect}
FIXTURES=${FIXTURES:-$top/build/tests}
[[ -x $TINSPECT && -x $FIXTURES/fx_lockorder && -x $FIXTURES/fx_lock_contend ]] ||
	{ echo "build tinspect and its fixtures first (ninja -C build)" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/tinspect-lockorder.XXXXXX")
trap 'rm -rf "$work"' EXIT
cc -O2 -Wall -pthread -o "$work/manylocks" "$top/bench/manylocks.c" || exit 1
/usr/bin/python3 "$top/bench/lockorder.py" --tinspect "$TINSPECT" \
	--fixtures "$FIXTURES" --manylocks "$work/manylocks" "${args[@]}"
