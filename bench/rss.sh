#!/usr/bin/env bash
# rss.sh - tinspect's peak memory (RSS) in every mode on one large process
# (the memory goal of a capture and of watching): at most 64 MiB each, and
# flat over a watch.
#
#   bench/rss.sh [-n N] [-r R] [-u UPDATES] [-i INTERVAL]
#
# One bench target (../shared/bench/target.c) with N idle threads (default
# 10000), then R rounds of, in turn (the peak RSS from GNU time, %M):
#   oneshot          tinspect PID
#   json             tinspect --json PID
#   keys-errno       tinspect --json --keys --errno PID
#   tls              tinspect --json --tls errno PID
#   nonblocking      tinspect --json --nonblocking PID
#   follow           tinspect --watch INTERVAL --follow-threads --summary
#                    --json --count 5 PID
#   watch            tinspect --watch INTERVAL --summary --json --count
#                    UPDATES PID (default 100 updates): its high-water mark
#                    (VmHWM) after update 10 and after the last, and the peak
# Prints every run, the medians, and the goals with PASS/FAIL: every peak
# <= 64 MiB (65536 KiB); the watch flat: its high-water mark grows by at
# most 1 MiB from update 10 to the last.  A benchmark, not a test.  Every
# process is started and killed by PID here.
set -u
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
N=10000 R=3 UPDATES=100 INTERVAL=0.2
while getopts "n:r:u:i:h" o; do
	case $o in
	n) N=$OPTARG ;;
	r) R=$OPTARG ;;
	u) UPDATES=$OPTARG ;;
	i) INTERVAL=$OPTARG ;;
	*) sed -n '2,23p' "$0"; exit 2 ;;
	esac
done
((UPDATES > 10)) || { echo "rss.sh: -u must be more than 10" >&2; exit 2; }
TINSPECT=${TINSPECT:-$top/build/agent/tinspect}
SHARED_BENCH=${SHARED_BENCH:-$top/../shared/bench}
[[ -x $TINSPECT ]] || { echo "build tinspect first (ninja -C build)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "needs GNU time (/usr/bin/time)" >&2; exit 2; }
[[ -r $SHARED_BENCH/target.c ]] || { echo "no $SHARED_BENCH/target.c (set SHARED_BENCH)" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/tinspect-rss.XXXXXX")
cc -O2 -Wall -pthread -o "$work/target" "$SHARED_BENCH/target.c" || exit 1
ulimit -S -u "$(ulimit -H -u)" 2>/dev/null
export LC_ALL=C

TPID="" IPID=""
cleanup() {
	[[ -n $IPID ]] && kill -INT "$IPID" 2>/dev/null && wait "$IPID" 2>/dev/null
	[[ -n $TPID ]] && kill -KILL "$TPID" 2>/dev/null && wait "$TPID" 2>/dev/null
	IPID="" TPID=""
}
trap 'cleanup; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

"$work/target" -n "$N" --hb-prio 0 >"$work/t.out" 2>&1 &
TPID=$!
for _ in $(seq 1800); do grep -q '^ready' "$work/t.out" && break; sleep 0.1; done
grep -q '^ready' "$work/t.out" || { echo "target -n $N did not come up" >&2; exit 1; }

peak() {	# args... -> peak RSS KiB of tinspect ARGS PID
	/usr/bin/time -f %M -o "$work/time" "$TINSPECT" "$@" "$TPID" >/dev/null 2>"$work/err"
	local rc=$?
	((rc <= 1)) || echo "# tinspect $*: exit $rc: $(head -c 200 "$work/err")" >&2
	tail -1 "$work/time"
}

hwm() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }

watch_run() {	# -> "hwm_at_10 hwm_at_last peak"
	local lines=$work/lines
	: >"$lines"
	/usr/bin/time -f %M -o "$work/time" "$TINSPECT" --watch "$INTERVAL" --summary --json \
		--count "$UPDATES" "$TPID" >"$lines" 2>"$work/err" &
	IPID=$!
	local at10="" atlast=""
	while kill -0 "$IPID" 2>/dev/null; do
		# GNU time's child: the tinspect process
		local ins
		ins=$(ps -o pid= --ppid "$IPID" | head -1 | tr -d ' ')
		local nl
		nl=$(grep -c '"kind":"summary"' "$lines")
		[[ -z $at10 && $nl -ge 10 && -n $ins ]] && at10=$(hwm "$ins")
		[[ $nl -ge $((UPDATES - 1)) && -n $ins ]] && atlast=$(hwm "$ins")
		sleep 0.05
	done
	wait "$IPID" 2>/dev/null
	IPID=""
	# the high-water mark at exit is the peak: it stands for the last
	# update's when the process ended between two looks
	local peak
	peak=$(tail -1 "$work/time")
	echo "${at10:-NA} ${atlast:-$peak} $peak"
}

median() { tr ' ' '\n' | grep -v '^$' | grep -v NA | sort -g | awk '{ v[NR] = $1 } END {
	if (!NR) { print "NA"; exit }
	if (NR % 2) print v[(NR + 1) / 2]; else printf "%.0f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "# tinspect $("$TINSPECT" --version 2>&1 | head -1); N=$N threads; $R rounds; watch of" \
     "$UPDATES updates every $INTERVAL s; $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg);" \
     "$(date -u +%FT%TZ)"
MODES="oneshot json keys-errno tls nonblocking follow watch"
declare -A v
for r in $(seq "$R"); do
	for m in $MODES; do
		case $m in
		oneshot) k=$(peak) ;;
		json) k=$(peak --json) ;;
		keys-errno) k=$(peak --json --keys --errno) ;;
		tls) k=$(peak --json --tls errno) ;;
		nonblocking) k=$(peak --json --nonblocking) ;;
		follow) k=$(peak --watch "$INTERVAL" --follow-threads --summary --json --count 5) ;;
		watch)
			read -r a b k < <(watch_run)
			v[watch10]+=" $a" v[watchlast]+=" $b"
			printf 'round %d %-12s hwm after update 10: %s KiB, after update %d: %s KiB\n' \
				"$r" watch "$a" "$UPDATES" "$b" ;;
		esac
		v[$m]+=" $k"
		printf 'round %d %-12s peak %8s KiB   load %s\n' "$r" "$m" "$k" "$(cut -d' ' -f1 /proc/loadavg)"
	done
done

echo
echo "medians over $R rounds (KiB), load at the end $(cut -d' ' -f1-3 /proc/loadavg):"
for m in $MODES; do printf '  %-12s %8s\n' "$m" "$(median <<<"${v[$m]}")"; done
w10=$(median <<<"${v[watch10]}") wl=$(median <<<"${v[watchlast]}")
printf '  %-12s %8s after update 10, %s after update %d\n' watch-hwm "$w10" "$wl" "$UPDATES"
echo
echo "goals (N=$N threads):"
for m in $MODES; do
	awk -v k="$(median <<<"${v[$m]}")" -v m="$m" 'BEGIN {
		if (k == "NA") { printf "  peak RSS %-12s n/a\n", m; exit }
		printf "  peak RSS %-12s %6.1f MiB <= 64 MiB : %s\n", m, k / 1024, k <= 65536 ? "PASS" : "FAIL" }'
done
awk -v a="$w10" -v b="$wl" -v u="$UPDATES" 'BEGIN {
	if (a == "NA" || b == "NA") { print "  watch flat: n/a"; exit }
	printf "  watch flat: high-water mark +%.1f MiB from update 10 to %d <= 1 MiB : %s\n",
		(b - a) / 1024, u, (b - a <= 1024) ? "PASS" : "FAIL" }'
stopped=$(ps -eo pid=,stat=,comm= | awk '$2 ~ /^[Tt]/')
[[ -z $stopped ]] || { echo "left stopped: $stopped" >&2; exit 3; }
