#!/usr/bin/env bash
# wall.sh - tinspect's wall time against eu-stack's, for the same report
# (source lines and inlined frames: eu-stack -s -i), interleaved on the
# same live target (the wall-time goal of a capture).
#
#   bench/wall.sh [-n "14 1000 10000"] [-r R] [-m]
#
# For each N, one bench target (../shared/bench/target.c: N-2 workers, a
# heartbeat and the main thread, so N threads in all); N <= 64 runs it as
# a service would be (-m mixed: threads in cond waits, on a mutex, in
# nanosleep, in read), larger N idle.  With -m, memcached -t 12 is
# measured too, if installed.  Then R
# rounds of, in turn: tinspect PID, tinspect --json PID, eu-stack -s -i -p
# PID, each timed (wall, from fork to exit) with stdout to /dev/null.  One
# run of each comes first and is not counted: tinspect keeps libc's debug
# file uncompressed between runs (dbsession/stacks/dbgcache.c), so the medians
# are of a warm cache, and the first run with an empty cache is printed
# apart (cold).  Prints every run, the medians, the ratios and the goals:
# wall / eu-stack <= 0.5 on the small process, <= 0.12 at 1000 threads,
# <= 0.05 at 10000, PASS or FAIL, with the load average.  A benchmark,
# not a test: a missed goal does not make it fail.  Every process is
# started and killed by PID here.
set -u
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
NS="14 1000 10000" R=5 SERVICES=0
while getopts "n:r:mh" o; do
	case $o in
	n) NS=$OPTARG ;;
	r) R=$OPTARG ;;
	m) SERVICES=1 ;;
	*) sed -n '2,24p' "$0"; exit 2 ;;
	esac
done
TINSPECT=${TINSPECT:-$top/build/agent/tinspect}
SHARED_BENCH=${SHARED_BENCH:-$top/../shared/bench}
[[ -x $TINSPECT ]] || { echo "build tinspect first (ninja -C build)" >&2; exit 2; }
[[ -r $SHARED_BENCH/target.c ]] || { echo "no $SHARED_BENCH/target.c (set SHARED_BENCH)" >&2; exit 2; }
command -v eu-stack >/dev/null || { echo "needs eu-stack (apt-get install elfutils)" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/tinspect-wall.XXXXXX")
cc -O2 -Wall -pthread -o "$work/target" "$SHARED_BENCH/target.c" || exit 1
ulimit -S -u "$(ulimit -H -u)" 2>/dev/null
unset DEBUGINFOD_URLS
export LC_ALL=C

TPID=""
cleanup() {
	[[ -n $TPID ]] && kill -KILL "$TPID" 2>/dev/null && wait "$TPID" 2>/dev/null
	TPID=""
}
trap 'cleanup; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

now_us() { local t=$EPOCHREALTIME; echo $((10#${t/./})); }
wall_ms() {	# command... -> wall ms (stdout discarded); its status in $work/rc
	local t0 t1
	t0=$(now_us)
	"$@" >/dev/null 2>"$work/err"
	echo $? >"$work/rc"
	t1=$(now_us)
	awk -v d=$((t1 - t0)) 'BEGIN { printf "%.1f", d / 1000 }'
}
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END {
	if (!NR) { print "NA"; exit }
	if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
goal_of() { (($1 >= 10000)) && echo 0.05 && return; (($1 >= 1000)) && echo 0.12 && return; echo 0.5; }

start_target() {	# N -> TPID, the target's threads
	local n=$1 args=(-n $(($1 > 2 ? $1 - 2 : 1)) --hb-prio 0)
	((n <= 64)) && args+=(-m mixed)
	"$work/target" "${args[@]}" >"$work/t.out" 2>&1 &
	TPID=$!
	for _ in $(seq 1800); do grep -q '^ready' "$work/t.out" && return 0; sleep 0.1; done
	echo "target -n $n did not come up: $(cat "$work/t.out")" >&2
	return 1
}

start_memcached() {
	memcached -u nobody -t 12 -p 0 -U 0 -l 127.0.0.1 >"$work/t.out" 2>&1 &
	TPID=$!
	for _ in $(seq 100); do
		[[ $(ls "/proc/$TPID/task" 2>/dev/null | wc -l) -gt 12 ]] && return 0
		sleep 0.05
	done
	echo "memcached did not come up" >&2
	return 1
}

echo "# tinspect $("$TINSPECT" --version 2>&1 | head -1); $(eu-stack --version 2>&1 | head -1);" \
     "$R rounds; $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%FT%TZ)"
declare -A res
cases=() labels=()
for n in $NS; do cases+=("target:$n"); done
((SERVICES)) && command -v memcached >/dev/null && cases+=("memcached:14")
((SERVICES)) && ! command -v memcached >/dev/null && echo "# memcached not installed: left out"
for c in "${cases[@]}"; do
	kind=${c%%:*} n=${c#*:}
	if [[ $kind == target ]]; then start_target "$n" || exit 1
	else start_memcached || exit 1; fi
	threads=$(ls "/proc/$TPID/task" | wc -l)
	label="$kind-$threads"
	# the cold run: an empty cache directory
	cold=$(TINSPECT_DEBUG_CACHE=$work/cold wall_ms "$TINSPECT" "$TPID")
	rm -rf "$work/cold"
	# warm-up, not counted
	wall_ms "$TINSPECT" "$TPID" >/dev/null
	wall_ms eu-stack -s -i -p "$TPID" >/dev/null
	declare -A w=()
	for r in $(seq "$R"); do
		for m in tinspect tinspect-json eu-stack; do
			case $m in
			tinspect) t=$(wall_ms "$TINSPECT" "$TPID") ;;
			tinspect-json) t=$(wall_ms "$TINSPECT" --json "$TPID") ;;
			eu-stack) t=$(wall_ms eu-stack -s -i -p "$TPID") ;;
			esac
			rc=$(cat "$work/rc")
			[[ $rc == 0 || $rc == 1 ]] || echo "# $label $m round $r: exit $rc: $(head -c 200 "$work/err")"
			printf '%-16s round %d %-14s %10s ms   load %s\n' "$label" "$r" "$m" "$t" \
				"$(cut -d' ' -f1 /proc/loadavg)"
			w[$m]+=" $t"
		done
	done
	for m in tinspect tinspect-json eu-stack; do res[$label,$m]=$(median <<<"${w[$m]}"); done
	res[$label,cold]=$cold
	res[$label,n]=$threads
	labels+=("$label")
	cleanup
done

echo
echo "medians (ms) over $R rounds, load at the end $(cut -d' ' -f1-3 /proc/loadavg):"
printf '%-16s %12s %14s %12s %16s\n' case tinspect tinspect-json eu-stack "tinspect cold"
for l in "${labels[@]}"; do
	printf '%-16s %12s %14s %12s %16s\n' "$l" "${res[$l,tinspect]}" "${res[$l,tinspect-json]}" \
		"${res[$l,eu-stack]}" "${res[$l,cold]}"
done
echo
echo "goals (wall / eu-stack -s -i, medians):"
for l in "${labels[@]}"; do
	g=$(goal_of "${res[$l,n]}")
	for m in tinspect tinspect-json; do
		awk -v a="${res[$l,$m]}" -v b="${res[$l,eu-stack]}" -v g="$g" -v l="$l" -v m="$m" 'BEGIN {
			if (a == "NA" || b == "NA" || b == 0) { printf "  %-16s %-14s n/a\n", l, m; exit }
			r = a / b
			printf "  %-16s %-14s %8.1f / %8.1f ms = %.3f <= %.2f : %s\n", l, m, a, b, r, g,
				r <= g ? "PASS" : "FAIL" }'
	done
done
stopped=$(ps -eo pid=,stat=,comm= | awk '$2 ~ /^[Tt]/')
[[ -z $stopped ]] || { echo "left stopped: $stopped" >&2; exit 3; }
