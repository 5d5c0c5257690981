#!/usr/bin/env bash
# abuse.sh - tinspect under abuse: signals at random moments, and a target
# that never holds still.  A benchmark-style script that prints counts, not
# a timed test (not part of meson test).
#
#   bench/abuse.sh [-n SIGNALS] [-s SNAPSHOTS] [-t THREADS] [-r SEED]
#                  [-u RUNS] [-p PARTS]
#
# Part 1: SIGNALS (100) runs of tinspect on a THREADS-thread (3000) target
#   (../shared/bench/target.c, mixed mode: cond waits, a held mutex, sleeps,
#   reads), the modes in turn
#     oneshot   tinspect PID
#     json      tinspect --json --keys --errno PID
#     watch     tinspect --json --watch 0.2 --follow-threads PID
#   each sent one of SIGKILL SIGTERM SIGINT SIGHUP SIGPIPE (in turn, so each
#   meets each mode) after a random delay: within 1.5 times the mode's
#   measured run time for the one-shot modes, 0 to 3 s in watch mode.
# Part 2: SNAPSHOTS (1000) runs of tinspect --json (every other one with
#   --keys --errno) on tests/fixtures/fx_dlchurn, which creates and joins
#   threads and dlopen()s and dlclose()s two plugins all the time.
#
# Part 3: hostile targets that make a read wait (-u RUNS, 4, per target and
#   mode): tests/fixtures/fx_uffd (a stack, a struct pthread and a mutex's
#   neighbour in userfaultfd memory served by a stopped thread, "inside",
#   or by nobody, "outside"; "late": the range registered once the target
#   is held, so a read does wait, a fresh target each run), and any target
#   hook_targets adds (a FUSE mount nobody serves).  Modes: oneshot,
#   json (--keys --errno --tls fx_uffd_tls), nonblocking, watch (--watch
#   0.2 --follow-threads), nbwatch (--watch 0.2 --nonblocking).  SIGTERM or
#   SIGINT after 0 to 1.5 s; counted: runs that took more than a second
#   to end after the signal (killed after 10 s), and targets left stopped or
#   traced, crashes, undocumented statuses.  -p PARTS: the parts to run
#   (default 123).
#
# After every run the target's tasks are checked: none may be left stopped
# (T/t) or traced (TracerPid).  Counted as crashes: tinspect died of a
# signal it was not sent, or wrote a sanitizer report (run it with an
# ASan+UBSan tinspect: TINSPECT=build-asan/agent/tinspect).  Invalid
# documents: a --json run that ended with status 0 or 1 without a valid
# snapshot, or any complete line of a watch stream that does not validate
# (tests/validate.py, the schemas).  Non-documented statuses: any exit
# status that is not in the README's table (128+N only for the signal N
# it was sent).  It prints every count; all must be 0 (exit 1 otherwise).
# Every process is started, and killed, by PID here.
set -u
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
NSIG=100 NSNAP=1000 NTHREADS=3000 SEED=$$ NHOSTILE=4 PARTS=123
while getopts "n:s:t:r:u:p:h" o; do
	case $o in
	n) NSIG=$OPTARG ;;
	s) NSNAP=$OPTARG ;;
	t) NTHREADS=$OPTARG ;;
	r) SEED=$OPTARG ;;
	u) NHOSTILE=$OPTARG ;;
	p) PARTS=$OPTARG ;;
	*) sed -n '2,45p' "$0"; exit 2 ;;
	esac
done
RANDOM=$SEED
TINSPECT=${TINSPECT:-$top/build/agent/tinspect}
FIXTURES=${FIXTURES:-$top/build/tests}
# the shared harness beside the repository (or beside the main checkout
# of a git worktree)
if [[ -z ${SHARED_BENCH:-} ]]; then
	SHARED_BENCH=$top/../shared/bench
	common=$(git -C "$top" rev-parse --path-format=absolute --git-common-dir 2>/dev/null)
	[[ ! -d $SHARED_BENCH && -n $common ]] &&
		SHARED_BENCH=$(dirname "$common")/../shared/bench
fi
SCHEMA=$top/schema/tinspect-snapshot.schema.json
VALIDATE=$top/tests/validate.py
for f in "$TINSPECT" "$FIXTURES/fx_dlchurn" "$FIXTURES/libfx_plugin.so" \
	"$FIXTURES/libfx_tlsplugin.so" "$FIXTURES/fx_uffd" "$SHARED_BENCH/target.c"; do
	[[ -e $f ]] || { echo "abuse: missing $f (ninja -C build first)" >&2; exit 2; }
done
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
work=$(mktemp -d "${TMPDIR:-/tmp}/tinspect-abuse.XXXXXX")
cc -O2 -pthread -o "$work/target" "$SHARED_BENCH/target.c" || exit 1

TARGET="" TIN="" FEED=""
cleanup() {
	# the braces keep bash's "Killed" notice of the job quiet too
	[[ -n $TIN ]] && kill -KILL "$TIN" 2>/dev/null && { wait "$TIN"; } 2>/dev/null
	[[ -n $TARGET ]] && kill -KILL "$TARGET" 2>/dev/null && { wait "$TARGET"; } 2>/dev/null
	[[ -n $FEED ]] && kill -KILL "$FEED" 2>/dev/null && { wait "$FEED"; } 2>/dev/null
	TIN="" TARGET="" FEED=""
}
trap cleanup EXIT

stopped=0 traced=0 crashes=0 invalid=0 undocumented=0 slow=0
to_validate=()		# "file kind": kind doc (must hold a snapshot) or lines

now_ms() { date +%s%3N; }

# Start a target with its stdout in $work/target.out; wait for "ready".
start_target() {	# program args...
	: >"$work/target.out"
	# stdin: a pipe from a sleeper of ours, so that fx_dlchurn runs until
	# it is killed (EOF would end it)
	exec {feedfd}< <(exec sleep 100000)
	FEED=$!
	"$@" >"$work/target.out" 2>&1 <&"$feedfd" &
	TARGET=$!
	exec {feedfd}>&-
	for _ in $(seq 6000); do
		grep -q '^ready' "$work/target.out" && return 0
		kill -0 "$TARGET" 2>/dev/null || break
		sleep 0.01
	done
	echo "abuse: $1 did not get ready:" >&2
	cat "$work/target.out" >&2
	exit 1
}

# How many tasks of the target are stopped (T/t) and traced, once the
# kernel has had up to two seconds to finish detaching.
check_target() {
	local s t
	for _ in $(seq 200); do
		read -r s t < <(cat /proc/"$TARGET"/task/*/status 2>/dev/null |
			awk '/^State:/ && ($2 == "T" || $2 == "t") { s++ }
			     /^TracerPid:/ && $2 != 0 { t++ }
			     END { print s + 0, t + 0 }')
		((s == 0 && t == 0)) && return 0
		sleep 0.01
	done
	((s > 0)) && stopped=$((stopped + 1))
	((t > 0)) && traced=$((traced + 1))
	echo "abuse: run $1 left $s tasks stopped, $t traced" >&2
	return 1
}

# Judge one ended run.  st: bash's wait status (128+N: died of signal N);
# sent: the signal number sent, 0 if none.
judge() {	# run st sent out err json(0/1) watch(0/1)
	local run=$1 st=$2 sent=$3 out=$4 err=$5 json=$6 watch=$7 bad=0
	if ((st > 128)); then
		if ((st - 128 != sent)); then
			crashes=$((crashes + 1))
			echo "abuse: run $run died of signal $((st - 128)) (sent: $sent)" >&2
			bad=1
		fi
	elif ! [[ $st =~ ^([0-8]|10)$ ]]; then
		undocumented=$((undocumented + 1))
		echo "abuse: run $run exited with status $st" >&2
		bad=1
	fi
	if grep -qE 'Sanitizer|runtime error:' "$err"; then
		crashes=$((crashes + 1))
		echo "abuse: run $run: sanitizer report" >&2
		bad=1
	fi
	if ((watch)); then
		# complete lines only: a signal may cut the last one
		local lines=$work/lines-$run
		if [[ -s $out && $(tail -c1 "$out" | od -An -tx1 | tr -d ' \n') != 0a ]]; then
			sed '$d' "$out" >"$lines"
		else
			cp "$out" "$lines"
		fi
		[[ -s $lines ]] && to_validate+=("$lines")
	elif ((json)) && ((st == 0 || st == 1)); then
		if [[ -s $out ]]; then
			to_validate+=("$out")
		else
			invalid=$((invalid + 1))
			echo "abuse: run $run: status $st and no document" >&2
			bad=1
		fi
	fi
	check_target "$run" || bad=1
	if ((bad)); then
		mkdir -p "$work/failed-$run"
		cp "$out" "$err" "$work/failed-$run/" 2>/dev/null
	fi
	# keep what is still to be validated, drop the rest
	[[ $json == 1 || $watch == 1 ]] || rm -f "$out"
	rm -f "$err"
}

validate_all() {
	local i batch
	for ((i = 0; i < ${#to_validate[@]}; i += 200)); do
		batch=("${to_validate[@]:i:200}")
		local n
		n=$(/usr/bin/python3 "$VALIDATE" "$SCHEMA" "${batch[@]}" 2>>"$work/validate.err" |
			grep -c ': invalid$')
		invalid=$((invalid + n))
		rm -f "${batch[@]}"
	done
	to_validate=()
}

# ---- part 1: signals -----------------------------------------------------------

modes=(oneshot json watch)
declare -A margs=([oneshot]="" [json]="--json --keys --errno"
	[watch]="--json --watch 0.2 --follow-threads")
sigs=(KILL TERM INT HUP PIPE)
declare -A signum=([KILL]=9 [TERM]=15 [INT]=2 [HUP]=1 [PIPE]=13)

part1() {

start_target "$work/target" -n "$NTHREADS" -m mixed --hb-prio 0
echo "abuse: target $TARGET with $NTHREADS threads; seed $SEED; work $work"
declare -A base_ms
for m in oneshot json; do
	t0=$(now_ms)
	# shellcheck disable=SC2086
	"$TINSPECT" ${margs[$m]} "$TARGET" >"$work/base.out" 2>"$work/base.err"
	st=$?
	base_ms[$m]=$(($(now_ms) - t0))
	judge "base-$m" "$st" 0 "$work/base.out" "$work/base.err" \
		"$([[ $m == json ]] && echo 1 || echo 0)" 0
	echo "abuse: $m takes ${base_ms[$m]} ms without a signal (status $st)"
done
base_ms[watch]=2000	# 3 s with the factor below

declare -A outcome
for ((i = 0; i < NSIG; i++)); do
	m=${modes[i % 3]}
	sig=${sigs[(i / 3 + i) % 5]}
	delay=$((RANDOM % (base_ms[$m] * 3 / 2 + 1)))
	out=$work/run-$i.out err=$work/run-$i.err
	# shellcheck disable=SC2086
	"$TINSPECT" ${margs[$m]} "$TARGET" >"$out" 2>"$err" &
	TIN=$!
	sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
	kill -s "$sig" "$TIN" 2>/dev/null
	{ wait "$TIN"; } 2>/dev/null
	st=$?
	TIN=""
	if ((st == 128 + signum[$sig])); then
		outcome[$m/$sig/died]=$((${outcome[$m/$sig/died]:-0} + 1))
	else
		outcome[$m/$sig/exit$st]=$((${outcome[$m/$sig/exit$st]:-0} + 1))
	fi
	judge "$i" "$st" "${signum[$sig]}" "$out" "$err" \
		"$([[ $m != oneshot ]] && echo 1 || echo 0)" \
		"$([[ $m == watch ]] && echo 1 || echo 0)"
	((${#to_validate[@]} >= 200)) && validate_all
done
validate_all
echo "abuse: part 1, $NSIG signals; outcomes (mode/signal/what: runs):"
for k in $(printf '%s\n' "${!outcome[@]}" | sort); do
	printf '  %-28s %d\n' "$k" "${outcome[$k]}"
done
cleanup
}

# ---- part 2: snapshots of a moving target -----------------------------------------

part2() {

start_target "$FIXTURES/fx_dlchurn" "$FIXTURES/libfx_plugin.so" \
	"$FIXTURES/libfx_tlsplugin.so"
declare -A statuses
t0=$(now_ms)
for ((i = 0; i < NSNAP; i++)); do
	out=$work/snap-$i.out err=$work/snap-$i.err
	extra=()
	((i % 2)) && extra=(--keys --errno)
	"$TINSPECT" --json "${extra[@]}" "$TARGET" >"$out" 2>"$err"
	st=$?
	statuses[$st]=$((${statuses[$st]:-0} + 1))
	judge "snap-$i" "$st" 0 "$out" "$err" 1 0
	((${#to_validate[@]} >= 200)) && validate_all
	if ! kill -0 "$TARGET" 2>/dev/null; then
		echo "abuse: fx_dlchurn died at snapshot $i" >&2
		crashes=$((crashes + 1))
		break
	fi
done
validate_all
echo "abuse: part 2, $NSNAP snapshots of fx_dlchurn in $((($(now_ms) - t0) / 1000)) s;" \
	"exit statuses: $(for k in $(printf '%s\n' "${!statuses[@]}" | sort -n); do
		printf '%s x%d  ' "$k" "${statuses[$k]}"; done)"
cleanup
}

# ---- part 3: targets a read would wait on --------------------------------------------

# The hostile targets: "name|command and arguments|fresh", fresh 1 when
# each run needs a target of its own.  A target prints "ready PID" (the
# process to inspect; it may be a child of the one started, which is
# killed by PID at the end and must take its children with it) and runs
# until its stdin ends.
HOSTILE=("uffd-inside|$FIXTURES/fx_uffd inside|0"
	"uffd-outside|$FIXTURES/fx_uffd outside|0"
	"uffd-late|$FIXTURES/fx_uffd late|1")
# The hook for targets made elsewhere: a FUSE mount that nobody serves over
# the target's debug directory (its fixture belongs to another change).
# ABUSE_HOSTILE, if set, adds entries in the same form, one per line, e.g.
#   ABUSE_HOSTILE="fuse|$FIXTURES/fx_fuse|1" bench/abuse.sh -p 3
hook_targets() {
	local line
	while IFS= read -r line; do
		[[ -n $line ]] && HOSTILE+=("$line")
	done <<<"${ABUSE_HOSTILE:-}"
}

# Start a hostile target; sets TARGET (the process started) and HPID (the
# one to inspect, from its "ready PID").
start_hostile() {	# command and arguments
	# shellcheck disable=SC2086
	start_target $1
	HPID=$(awk '/^ready/ { print $2; exit }' "$work/target.out")
	[[ -n $HPID ]] || { echo "abuse: no PID from $1" >&2; exit 1; }
}

# One run: tinspect in mode m on HPID, a signal after 0 to 1.5 s; how long
# it took to end after the signal (ms) is in $ended_ms.
hostile_run() {	# name mode signal run
	local name=$1 m=$2 sig=$3 run=$4
	local out=$work/h-$run.out err=$work/h-$run.err delay
	delay=$((RANDOM % 1501))
	local -a args
	read -r -a args <<<"${hmargs[$m]}"
	[[ $name == uffd-late ]] && args+=(--stop-timeout 200)
	"$TINSPECT" "${args[@]}" "$HPID" >"$out" 2>"$err" &
	TIN=$!
	sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
	local t0
	t0=$(now_ms)
	kill -s "$sig" "$TIN" 2>/dev/null
	# 10 s at most: then it did not end (SIGKILL, which the kernel's
	# detach survives, lets the target go)
	local sent=${signum[$sig]}
	while kill -0 "$TIN" 2>/dev/null && (($(now_ms) - t0 < 10000)); do
		sleep 0.01
	done
	if kill -0 "$TIN" 2>/dev/null; then
		kill -KILL "$TIN" 2>/dev/null
		sent=9
	fi
	{ wait "$TIN"; } 2>/dev/null
	local st=$?
	ended_ms=$(($(now_ms) - t0))
	TIN=""
	local key="$name/$m"
	hruns[$key]=$((${hruns[$key]:-0} + 1))
	((ended_ms > ${hmax[$key]:-0})) && hmax[$key]=$ended_ms
	if ((ended_ms > 1000)); then
		slow=$((slow + 1))
		hslow[$key]=$((${hslow[$key]:-0} + 1))
		echo "abuse: run $run ($key, SIG$sig) ended $ended_ms ms after the signal" \
			"$( ((sent == 9)) && echo "(killed: it did not end)")" >&2
	fi
	local saved=$TARGET
	TARGET=$HPID
	judge "$run" "$st" "$sent" "$out" "$err" \
		"$([[ $m == json || $m == nonblocking ]] && echo 1 || echo 0)" \
		"$([[ $m == *watch ]] && echo 1 || echo 0)"
	TARGET=$saved
}

part3() {
	hook_targets
	declare -gA hmargs=([oneshot]="" [json]="--json --keys --errno --tls fx_uffd_tls"
		[nonblocking]="--json --nonblocking"
		[watch]="--json --watch 0.2 --follow-threads"
		[nbwatch]="--json --watch 0.2 --nonblocking")
	declare -gA hruns=() hmax=() hslow=()
	local hmodes=(oneshot json nonblocking watch nbwatch) hsigs=(TERM INT)
	local entry name cmd fresh m i run=0
	for entry in "${HOSTILE[@]}"; do
		IFS='|' read -r name cmd fresh <<<"$entry"
		((fresh)) || start_hostile "$cmd"
		for m in "${hmodes[@]}"; do
			for ((i = 0; i < NHOSTILE; i++)); do
				((fresh)) && start_hostile "$cmd"
				hostile_run "$name" "$m" "${hsigs[i % 2]}" "hostile-$((run++))"
				((fresh)) && cleanup
			done
		done
		cleanup
		((${#to_validate[@]} >= 200)) && validate_all
	done
	validate_all
	echo "abuse: part 3, targets a read would wait on, SIGTERM/SIGINT after 0-1.5 s"
	printf '  %-26s %5s %10s %9s\n' "target/mode" "runs" "max end ms" "over 1 s"
	local k
	for k in $(printf '%s\n' "${!hruns[@]}" | sort); do
		printf '  %-26s %5d %10d %9d\n' "$k" "${hruns[$k]}" "${hmax[$k]:-0}" \
			"${hslow[$k]:-0}"
	done
}

[[ $PARTS == *1* ]] && part1
[[ $PARTS == *2* ]] && part2
[[ $PARTS == *3* ]] && part3

printf '%-30s %d\n' "left stopped:" "$stopped" "left traced:" "$traced" \
	"crashes:" "$crashes" "invalid documents:" "$invalid" \
	"non-documented exit statuses:" "$undocumented" \
	"ended over 1 s after SIGTERM:" "$slow"
if ((stopped + traced + crashes + invalid + undocumented + slow)); then
	echo "abuse: FAILED; the runs that failed are in $work" >&2
	exit 1
fi
rm -rf "$work"
