#!/usr/bin/env bash
# follow.sh - what `tinspect --watch --follow-threads` costs a target that
# creates threads all the time, measured on one machine in one run.
#
#   bench/follow.sh [-r R] [-s SECONDS] [-c CREATORS] [-i INTERVAL]
#
# For each of R rounds, bench/clonerate (create+join loops in CREATORS
# threads for SECONDS) runs three ways, in rotation:
#   alone             nobody attached
#   watch             under tinspect --watch INTERVAL --summary --json
#                     (attached only during the updates)
#   follow            under tinspect --watch INTERVAL --summary --json
#                     --follow-threads (attached all the time: every clone
#                     stops the parent and the child once)
# and the threads created per second are printed per run, then the
# medians, the ratios to "alone" and the cost per thread creation.
# Every process is started and killed by PID here.
set -u
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
R=5 SECS=3 CREATORS=2 INTERVAL=1
while getopts "r:s:c:i:h" o; do
	case $o in
	r) R=$OPTARG ;;
	s) SECS=$OPTARG ;;
	c) CREATORS=$OPTARG ;;
	i) INTERVAL=$OPTARG ;;
	*) sed -n '2,19p' "$0"; exit 2 ;;
	esac
done
TINSPECT=${TINSPECT:-$top/build/agent/tinspect}
[[ -x $TINSPECT ]] || { echo "build tinspect first (ninja -C build)" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/tinspect-follow.XXXXXX")
bin=$work/clonerate
cc -O2 -Wall -pthread -o "$bin" "$top/bench/clonerate.c" || exit 1

CPID="" TPID=""
cleanup() {
	[[ -n $TPID ]] && kill -TERM "$TPID" 2>/dev/null && wait "$TPID" 2>/dev/null
	[[ -n $CPID ]] && kill -KILL "$CPID" 2>/dev/null && wait "$CPID" 2>/dev/null
	TPID="" CPID=""
}
trap 'cleanup; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

one() {	# mode -> prints the rate
	local mode=$1 out=$work/c.out tout=$work/t.out
	: >"$out"
	"$bin" -c "$CREATORS" -s "$SECS" >"$out" &
	CPID=$!
	until grep -q '^pid ' "$out"; do sleep 0.01; done
	if [[ $mode != alone ]]; then
		local extra=()
		[[ $mode == follow ]] && extra=(--follow-threads)
		: >"$tout"
		"$TINSPECT" --watch "$INTERVAL" --summary --json "${extra[@]}" "$CPID" >"$tout" &
		TPID=$!
		# attached (and following) once the first line is out
		until [[ -s $tout ]]; do
			kill -0 "$TPID" 2>/dev/null || { echo "tinspect died" >&2; break; }
			sleep 0.01
		done
	fi
	kill -USR1 "$CPID"
	wait "$CPID"
	CPID=""
	if [[ -n $TPID ]]; then
		wait "$TPID" 2>/dev/null	# it ends with the target
		TPID=""
		[[ $mode == follow ]] && echo "events $(grep -c '"event":"thread_' "$tout")" >&2
	fi
	sed -n 's/^rate \([0-9]*\).*/\1/p' "$out"
}

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {
	if (NR % 2) print v[(NR+1)/2]; else printf "%.0f\n", (v[NR/2]+v[NR/2+1])/2 }'; }

declare -A rates=([alone]="" [watch]="" [follow]="")
echo "# clonerate -c $CREATORS -s $SECS, tinspect --watch $INTERVAL, $R rounds, $(nproc) CPUs, $(date -u +%FT%TZ)"
for r in $(seq "$R"); do
	for mode in alone watch follow; do
		v=$(one "$mode" 2>"$work/err")
		printf 'run\t%s\t%d\t%s threads/s\t%s\n' "$mode" "$r" "$v" "$(tr '\n' ' ' <"$work/err")"
		rates[$mode]+=" $v"
	done
done
a=$(median <<<"${rates[alone]}")
w=$(median <<<"${rates[watch]}")
f=$(median <<<"${rates[follow]}")
echo
printf 'median threads created per second: alone %s, watch %s, follow %s\n' "$a" "$w" "$f"
awk -v a="$a" -v w="$w" -v f="$f" 'BEGIN {
	printf "ratio to alone: watch %.3f, follow %.3f\n", w / a, f / a
	printf "cost per thread creation (create+join) with --follow-threads: %.1f us (%.1f us -> %.1f us)\n",
		1e6 / f - 1e6 / a, 1e6 / a, 1e6 / f }'
stopped=$(ps -eo pid=,stat=,comm= | awk '$2 ~ /^[Tt]/')
[[ -z $stopped ]] || { echo "left stopped: $stopped" >&2; exit 3; }
