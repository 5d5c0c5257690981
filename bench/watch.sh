#!/usr/bin/env bash
# watch.sh - what `tinspect --watch` costs a busy process, all-stop against
# --nonblocking, side by side in one run.
#
#   bench/watch.sh [-n "1000 10000"] [-s SECONDS] [-r R] [-w WORKERS] [-i INTERVAL]
#                  [-m "stop nonblocking nb-normal"]
#
# For each N, one bench/worktarget with N idle threads and WORKERS threads
# doing counted units of CPU work (default: one per CPU but one, so that a
# CPU is left for the inspector, as on a service that is not saturated).
# Then R rounds, each running, in rotation and for SECONDS each:
#   none          nobody watching
#   stop          tinspect --watch INTERVAL --summary --json
#   nonblocking   tinspect --watch INTERVAL --summary --json --nonblocking
#                 (its updates at SCHED_IDLE, the default of a watch)
#   nb-normal     the same with --update-priority normal (only if -m asks)
# -m picks the modes besides "none", which always runs (the baseline).
# Per run: the updates made, the median and largest freeze per update and
# the duty cycle (frozen time / SECONDS) from tinspect's own summary lines,
# the target's throughput (units/s from its own counter) and its ratio to
# the median of "none", and tinspect's peak RSS (GNU time, %M).  Then, per
# N, the peak RSS of one-shot `tinspect --json PID >/dev/null` both ways.
# At the end: the medians per N and mode, and the goals of watching at the
# largest N (nonblocking costs under 1 % of throughput; peak RSS at most
# 64 MiB).  Every process is started and killed by PID here.
set -u
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
NS="1000 10000" SECS=10 R=3 INTERVAL=1 MODES="stop nonblocking"
WORKERS=$(( $(nproc) > 1 ? $(nproc) - 1 : 1 ))
while getopts "n:s:r:w:i:m:h" o; do
	case $o in
	n) NS=$OPTARG ;;
	s) SECS=$OPTARG ;;
	r) R=$OPTARG ;;
	w) WORKERS=$OPTARG ;;
	i) INTERVAL=$OPTARG ;;
	m) MODES=$OPTARG ;;
	*) sed -n '2,28p' "$0"; exit 2 ;;
	esac
done
for m in $MODES; do
	[[ $m == stop || $m == nonblocking || $m == nb-normal ]] ||
		{ echo "watch.sh: -m: unknown mode $m" >&2; exit 2; }
done
ALL="none $MODES"
TINSPECT=${TINSPECT:-$top/build/agent/tinspect}
[[ -x $TINSPECT ]] || { echo "build tinspect first (ninja -C build)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "needs GNU time (/usr/bin/time)" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/tinspect-watch.XXXXXX")
bin=$work/worktarget
cc -O2 -Wall -pthread -o "$bin" "$top/bench/worktarget.c" || exit 1
ulimit -u 30000 2>/dev/null

WPID="" TPID=""
cleanup() {
	[[ -n $TPID ]] && kill -TERM "$TPID" 2>/dev/null && wait "$TPID" 2>/dev/null
	[[ -n $WPID ]] && kill -KILL "$WPID" 2>/dev/null && wait "$WPID" 2>/dev/null
	TPID="" WPID=""
}
trap 'cleanup; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

# the target's counter: SIGUSR2 makes it print "units=.. window_ms=.. rate=.."
rate_now() {
	local n
	n=$(grep -c '^units=' "$work/w.out")
	kill -USR2 "$WPID"
	until (( $(grep -c '^units=' "$work/w.out") > n )); do sleep 0.01; done
	grep '^units=' "$work/w.out" | tail -1 | sed 's/.*rate=//'
}

# one run -> "updates freeze_med_us freeze_max_us duty_pct rate rss_kib"
one() {
	local mode=$1 lines=$work/lines rss=$work/rss
	: >"$lines"
	echo 0 >"$rss"
	if [[ $mode != none ]]; then
		local extra=()
		[[ $mode == nonblocking ]] && extra=(--nonblocking)
		[[ $mode == nb-normal ]] && extra=(--nonblocking --update-priority normal)
		"$TINSPECT" --watch "$INTERVAL" --summary --json "${extra[@]}" \
			"$WPID" >"$lines" 2>"$work/t.err" &
		TPID=$!
		# counted from the first update on: the session is set up
		until [[ -s $lines ]]; do
			kill -0 "$TPID" 2>/dev/null || { echo "tinspect died: $(cat "$work/t.err")" >&2; return 1; }
			sleep 0.01
		done
	fi
	local first
	first=$(wc -l <"$lines")
	kill -USR1 "$WPID"
	sleep "$SECS"
	local rate
	rate=$(rate_now)
	if [[ -n $TPID ]]; then
		# its peak RSS so far (the kernel's high-water mark)
		awk '/^VmHWM:/ { print $2 }' "/proc/$TPID/status" >"$rss"
		kill -INT "$TPID"	# resumes, detaches, dies of the signal
		wait "$TPID" 2>/dev/null
		TPID=""
	fi
	# the updates made during the window (the first line excluded)
	tail -n +"$((first + 1))" "$lines" | grep '"kind":"summary"' |
		sed 's/.*"freeze_us":\([0-9]*\).*/\1/' | sort -n |
		awk -v secs="$SECS" -v rate="$rate" -v rss="$(tail -1 "$rss")" '
			{ v[NR] = $1; sum += $1 }
			END {
				med = NR ? (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) : 0
				printf "%d %.0f %.0f %.3f %.1f %s\n", NR, med, NR ? v[NR] : 0,
					100 * sum / (secs * 1e6), rate, rss }'
}

oneshot_rss() {	# extra args -> peak RSS KiB of one-shot --json
	/usr/bin/time -f %M -o "$work/rss1" "$TINSPECT" --json "$@" "$WPID" >/dev/null 2>"$work/t.err"
	tail -1 "$work/rss1"
}

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {
	if (!NR) { print 0; exit }
	if (NR % 2) print v[(NR+1)/2]; else printf "%.1f\n", (v[NR/2]+v[NR/2+1])/2 }'; }

echo "# tinspect $("$TINSPECT" --version 2>&1 | head -1); worktarget -w $WORKERS; --watch $INTERVAL;" \
     "$SECS s per run, $R rounds; $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%FT%TZ)"
printf '%-6s %-12s %5s %7s %12s %12s %9s %12s %8s %8s\n' \
	N mode round updates freeze_med_ms freeze_max_ms duty_% rate_units/s vs_none rss_MiB
declare -A med_fr med_duty med_rate med_rss med_none_min med_none_max
for n in $NS; do
	: >"$work/w.out"
	"$bin" -n "$n" -w "$WORKERS" >"$work/w.out" &
	WPID=$!
	for _ in $(seq 600); do grep -q '^ready' "$work/w.out" && break; sleep 0.1; done
	grep -q '^ready' "$work/w.out" || { echo "worktarget -n $n did not come up" >&2; exit 1; }
	declare -A fr=() duty=() rate=() rss=()
	for r in $(seq "$R"); do
		for mode in $ALL; do
			read -r upd fmed fmax dpct rt rk < <(one "$mode") || exit 1
			base=$(median <<<"${rate[none]:-$rt}")
			printf '%-6s %-12s %5d %7d %12.3f %12.3f %9.3f %12.1f %8.4f %8.1f\n' \
				"$n" "$mode" "$r" "$upd" "$(echo "$fmed / 1000" | bc -l)" \
				"$(echo "$fmax / 1000" | bc -l)" "$dpct" "$rt" \
				"$(echo "$rt / $base" | bc -l)" "$(echo "$rk / 1024" | bc -l)"
			fr[$mode]+=" $fmed" duty[$mode]+=" $dpct" rate[$mode]+=" $rt" rss[$mode]+=" $rk"
		done
	done
	for mode in $ALL; do
		med_fr[$n,$mode]=$(median <<<"${fr[$mode]}")
		med_duty[$n,$mode]=$(median <<<"${duty[$mode]}")
		med_rate[$n,$mode]=$(median <<<"${rate[$mode]}")
		med_rss[$n,$mode]=$(median <<<"${rss[$mode]}")
	done
	# the spread of the baseline: a cost below it is not measured
	med_none_min[$n]=$(tr ' ' '\n' <<<"${rate[none]}" | grep -v '^$' | sort -g | head -1)
	med_none_max[$n]=$(tr ' ' '\n' <<<"${rate[none]}" | grep -v '^$' | sort -g | tail -1)
	med_rss[$n,oneshot-stop]=$(oneshot_rss)
	med_rss[$n,oneshot-nonblocking]=$(oneshot_rss --nonblocking)
	kill -KILL "$WPID"; wait "$WPID" 2>/dev/null; WPID=""
done

echo
echo "medians:"
printf '%-6s %-12s %12s %9s %12s %10s %8s\n' N mode freeze_ms duty_% rate_units/s cost_% rss_MiB
for n in $NS; do
	for mode in $ALL; do
		printf '%-6s %-12s %12.3f %9.3f %12.1f %10.2f %8.1f\n' "$n" "$mode" \
			"$(echo "${med_fr[$n,$mode]} / 1000" | bc -l)" "${med_duty[$n,$mode]}" \
			"${med_rate[$n,$mode]}" \
			"$(echo "100 * (1 - ${med_rate[$n,$mode]} / ${med_rate[$n,none]})" | bc -l)" \
			"$(echo "${med_rss[$n,$mode]} / 1024" | bc -l)"
	done
	printf '%-6s baseline spread (none, min-max): %.2f%% of its median\n' "$n" \
		"$(echo "100 * (${med_none_max[$n]} - ${med_none_min[$n]}) / ${med_rate[$n,none]}" | bc -l)"
	printf '%-6s %-12s %12s %9s %12s %10s %8.1f\n' "$n" oneshot-stop - - - - \
		"$(echo "${med_rss[$n,oneshot-stop]} / 1024" | bc -l)"
	printf '%-6s %-12s %12s %9s %12s %10s %8.1f\n' "$n" oneshot-nonbl - - - - \
		"$(echo "${med_rss[$n,oneshot-nonblocking]} / 1024" | bc -l)"
done
last=${NS##* }
echo
if [[ " $MODES " == *" nonblocking "* ]]; then
	awk -v c="$(echo "100 * (1 - ${med_rate[$last,nonblocking]} / ${med_rate[$last,none]})" | bc -l)" \
	    -v sp="$(echo "100 * (${med_none_max[$last]} - ${med_none_min[$last]}) / ${med_rate[$last,none]}" | bc -l)" \
	    -v n="$last" 'BEGIN { printf "goal: nonblocking costs < 1%% of throughput at %s threads: %.2f%% %s (baseline spread %.2f%%)\n",
		n, c, c < 1 ? "PASS" : "FAIL", sp }'
fi
for k in $MODES oneshot-stop oneshot-nonblocking; do
	[[ $k == nb-normal ]] && continue
	awk -v v="${med_rss[$last,$k]}" -v k="$k" -v n="$last" 'BEGIN {
		printf "goal: peak RSS <= 64 MiB at %s threads (%s): %.1f MiB %s\n", n, k, v / 1024,
			v <= 65536 ? "PASS" : "FAIL" }'
done
stopped=$(ps -eo pid=,stat=,comm= | awk '$2 ~ /^[Tt]/')
[[ -z $stopped ]] || { echo "left stopped: $stopped" >&2; exit 3; }
