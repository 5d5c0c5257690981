#!/usr/bin/env bash
# bench/core.sh - tinspect --core (and its core reader alone) against
# eu-stack and gdb on cores of the shared bench target
# (../shared/bench/target.c).
# Not a test: it prints medians and ratios, a slow run does not fail it.
#
# usage: bench/core.sh [options]
#   -n "N..."        worker threads of the target (default "1000 10000")
#   -r R             repetitions per core and tool (default 3)
#   --gdb-r R        repetitions of gdb (default: -r; gdb is the slow one)
#   --eu-r R         repetitions of eu-stack (default: -r)
#   --no-coreread    do not run the reader alone (tests/coreread)
#   --no-gdb         do not run gdb -batch -ex 'thread apply all bt' EXE CORE
#   --no-eu-stack    do not run eu-stack --core CORE
#   --no-kernel      no kernel core (they need root: core_pattern)
#   --no-gcore       no gcore core
#   --no-zstd        no zstd-compressed copy of the kernel core
#   -t SEC           timeout of one run (default 900)
#   -o DIR           where cores and raw data go (default a new
#                    ${TMPDIR:-/tmp}/tinspect-core-bench.XXXXXX, removed at the
#                    end unless -k)
#   -k               keep DIR
#   -h, --help       this text
# Environment:
#   TINSPECT=PATH      the tinspect to measure (default REPO/build/agent/tinspect)
#   COREREAD=PATH      the reader's driver (default REPO/build/tests/coreread)
#   SHARED_BENCH=DIR   the harness (default REPO/../shared/bench)
#
# For every N: start the target (idle threads, 64 KiB stacks), take a gcore
# of it, then kill it with SIGABRT for a kernel core (core_pattern pointed
# at DIR only for that dump, restored by a trap on any exit), and compress
# that one with `zstd -q` as systemd-coredump would.  Then each tool, R
# times per core, under /usr/bin/time -v:
#   tinspect --core CORE --json >/dev/null   the whole report: every
#                   thread's pthread identity, its stack unwound and
#                   symbolized, locks and deadlocks
#   coreread CORE   the reader alone: open it, read every thread's
#                   registers and its stack window [sp - 128, sp + 64 KiB)
#   eu-stack --core CORE
#   gdb -batch -ex 'thread apply all bt' EXE CORE
# and prints per core the median wall time and peak RSS of each, and the
# ratios tinspect / eu-stack and tinspect / gdb (the goal at 10000
# threads: at most 0.2 of eu-stack's wall time, peak RSS under 256 MiB).
set -u
set -o pipefail

PROG=${0##*/}
die() { echo "$PROG: $*" >&2; exit 1; }
usage() {
	sed -n '5,43p' "$0" | sed 's/^# \{0,1\}//'
	exit "${1:-2}"
}

NS="1000 10000"
R=3
GDB_R=""
EU_R=""
RUN_COREREAD=1 RUN_GDB=1 RUN_EU=1 RUN_KERNEL=1 RUN_GCORE=1 RUN_ZSTD=1
TMO=900
OUT=""
KEEP=0
while [[ $# -gt 0 ]]; do
	case $1 in
	-n) NS=$2; shift ;;
	-r) R=$2; shift ;;
	--gdb-r) GDB_R=$2; shift ;;
	--eu-r) EU_R=$2; shift ;;
	--no-coreread) RUN_COREREAD=0 ;;
	--no-gdb) RUN_GDB=0 ;;
	--no-eu-stack) RUN_EU=0 ;;
	--no-kernel) RUN_KERNEL=0 ;;
	--no-gcore) RUN_GCORE=0 ;;
	--no-zstd) RUN_ZSTD=0 ;;
	-t) TMO=$2; shift ;;
	-o) OUT=$2; shift ;;
	-k) KEEP=1 ;;
	-h | --help) usage 0 ;;
	*) echo "$PROG: unknown argument: $1" >&2; usage 2 ;;
	esac
	shift
done
GDB_R=${GDB_R:-$R}
EU_R=${EU_R:-$R}

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SHARED_BENCH=${SHARED_BENCH:-$REPO/../shared/bench}
[[ -r $SHARED_BENCH/target.c ]] || die "no $SHARED_BENCH/target.c (set SHARED_BENCH)"
COREREAD=${COREREAD:-$REPO/build/tests/coreread}
TINSPECT=${TINSPECT:-$REPO/build/agent/tinspect}
if [[ ! -x $COREREAD || ! -x $TINSPECT ]]; then
	[[ -f $REPO/build/build.ninja ]] || meson setup "$REPO/build" >/dev/null ||
		die "cannot configure $REPO/build"
	ninja -C "$REPO/build" tests/coreread agent/tinspect >/dev/null ||
		die "cannot build coreread and tinspect"
fi
[[ -x /usr/bin/time ]] || die "GNU time (/usr/bin/time) is needed"
if ((RUN_EU)) && ! command -v eu-stack >/dev/null; then
	echo "$PROG: no eu-stack (elfutils): skipped"; RUN_EU=0
fi
if ((RUN_GDB)) && ! command -v gdb >/dev/null; then
	echo "$PROG: no gdb: skipped"; RUN_GDB=0
fi
if ((RUN_GCORE)) && ! command -v gcore >/dev/null; then
	echo "$PROG: no gcore (gdb): skipped"; RUN_GCORE=0
fi
if ((RUN_KERNEL)) && [[ $(id -u) -ne 0 ]]; then
	echo "$PROG: kernel cores need root (core_pattern): skipped"; RUN_KERNEL=0
fi
if ((RUN_ZSTD)) && ! command -v zstd >/dev/null; then
	echo "$PROG: no zstd: skipped"; RUN_ZSTD=0
fi

if [[ -z $OUT ]]; then
	OUT=$(mktemp -d "${TMPDIR:-/tmp}/tinspect-core-bench.XXXXXX")
else
	mkdir -p "$OUT"
fi
OUT=$(cd "$OUT" && pwd)
TARGET=$OUT/target
cc -O2 -Wall -pthread -o "$TARGET" "$SHARED_BENCH/target.c" ||
	die "cannot build the target"
ulimit -u unlimited 2>/dev/null || ulimit -u 20000 2>/dev/null

# ---- the core_pattern, only for the dump, restored on any exit -----------
PATTERN_FILE=/proc/sys/kernel/core_pattern
SAVED_PATTERN=""
TPID=""
cleanup() {
	if [[ -n $SAVED_PATTERN ]]; then
		printf '%s\n' "$SAVED_PATTERN" >"$PATTERN_FILE"
		SAVED_PATTERN=""
	fi
	if [[ -n $TPID ]]; then
		# the braces keep bash's "Killed" notice of the job quiet too
		kill -KILL "$TPID" 2>/dev/null && { wait "$TPID"; } 2>/dev/null
		TPID=""
	fi
	if ((!KEEP)); then
		rm -rf "$OUT"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# Start the target with RLIMIT_CORE raised; TPID, then "ready".
start_target() {	# N
	local fifo=$OUT/target.out
	rm -f "$fifo"
	mkfifo "$fifo"
	(ulimit -c unlimited; exec "$TARGET" -n "$1" --hb-prio 0 >"$fifo" 2>/dev/null) &
	TPID=$!
	exec 9<"$fifo"
	local line
	while IFS= read -r -t 300 line <&9; do
		[[ $line == ready* ]] && return 0
	done
	die "the target did not get ready"
}

stop_target() {
	exec 9<&-
	kill -KILL "$TPID" 2>/dev/null && { wait "$TPID"; } 2>/dev/null
	TPID=""
}

kernel_core() {	# N -> KCORE, the path (not in a subshell: it waits for
		# the target and owns the saved pattern)
	local n=$1 st
	SAVED_PATTERN=$(<"$PATTERN_FILE")
	printf '%s\n' "$OUT/kernel-$n.%p" >"$PATTERN_FILE"
	kill -ABRT "$TPID"
	{ wait "$TPID"; } 2>/dev/null	# no "Aborted (core dumped)" notice
	st=$?
	printf '%s\n' "$SAVED_PATTERN" >"$PATTERN_FILE"
	SAVED_PATTERN=""
	exec 9<&-
	local core=$OUT/kernel-$n.$TPID
	TPID=""
	[[ -f $core ]] || die "no kernel core (status $st)"
	KCORE=$core
}

# One measured run: label core command... -> "wall_s rss_kib rc" in DATA
measure() {	# label core cmd...
	local label=$1 core=$2
	shift 2
	local tf=$OUT/time.txt rc t0 t1
	# wall time from the shell's clock (time -v rounds to 10 ms), the
	# peak RSS from time -v
	t0=$EPOCHREALTIME
	timeout -k 10 "$TMO" /usr/bin/time -v -o "$tf" "$@" >"$OUT/out.txt" 2>&1
	rc=$?
	t1=$EPOCHREALTIME
	local wall rss
	wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }')
	rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$tf")
	printf '%s\t%s\t%s\t%s\t%s\n' "$(basename "$core")" "$label" \
		"${wall:-nan}" "${rss:-nan}" "$rc" >>"$OUT/runs.tsv"
	printf '  %-22s %-9s %8.3f s %9s KiB rc %s\n' "$(basename "$core")" \
		"$label" "${wall:-nan}" "${rss:-?}" "$rc"
	if [[ $label == coreread && $rc -eq 0 ]]; then
		sed 's/^/    /' "$OUT/out.txt"
	fi
	if [[ $label == tinspect && $rc -ne 0 && $rc -ne 1 && $rc -ne 10 ]]; then
		head -c 2000 "$OUT/out.txt" | sed 's/^/    /'
	fi
}

bench_core() {	# core
	local core=$1 i
	for ((i = 0; i < R; i++)); do
		# the JSON report to /dev/null: what is timed is making it
		measure tinspect "$core" sh -c '"$0" --core "$1" --json >/dev/null' \
			"$TINSPECT" "$core"
	done
	if ((RUN_COREREAD)); then
		for ((i = 0; i < R; i++)); do
			measure coreread "$core" "$COREREAD" "$core"
		done
	fi
	# eu-stack and gdb read no compressed core
	if ((RUN_EU)) && [[ $core != *.zst ]]; then
		for ((i = 0; i < EU_R; i++)); do
			measure eu-stack "$core" eu-stack --core "$core"
		done
	fi
	if ((RUN_GDB)) && [[ $core != *.zst ]]; then
		for ((i = 0; i < GDB_R; i++)); do
			measure gdb "$core" gdb -nx -batch -ex 'thread apply all bt' \
				"$TARGET" "$core"
		done
	fi
}

: >"$OUT/runs.tsv"
echo "cores and raw data: $OUT (runs.tsv)"
for n in $NS; do
	echo "== N=$n worker threads"
	cores=()
	start_target "$n"
	if ((RUN_GCORE)); then
		gcore -o "$OUT/gcore-$n" "$TPID" >/dev/null 2>&1 ||
			die "gcore failed"
		cores+=("$OUT/gcore-$n.$TPID")
	fi
	if ((RUN_KERNEL)); then
		kernel_core "$n"
		k=$KCORE
		cores+=("$k")
		if ((RUN_ZSTD)); then
			zstd -q -f "$k" -o "$k.zst" || die "zstd failed"
			cores+=("$k.zst")
		fi
	else
		stop_target
	fi
	for c in "${cores[@]}"; do
		printf '  %s: %s bytes (%s on disk)\n' "$(basename "$c")" \
			"$(stat -c %s "$c")" "$(du -h "$c" | cut -f1)"
	done
	for c in "${cores[@]}"; do
		bench_core "$c"
	done
	# cores of this N are big: gone before the next one
	((KEEP)) || rm -f "${cores[@]}"
done

echo
echo "== medians (wall s, peak RSS KiB)"
awk -F'\t' '
function median(a, n,   i, j, t) {
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
			t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
# tinspect exits 1 (some thread partly read) or 10 (never here: no
# --check) with a full report: those runs count
($5 == 0 || ($2 == "tinspect" && $5 == 1)) { k = $1 SUBSEP $2; n[k]++; w[k, n[k]] = $3; r[k, n[k]] = $4
	  if (!($1 in seen)) { seen[$1] = 1; order[++nc] = $1 } }
!($5 == 0 || ($2 == "tinspect" && $5 == 1)) { bad[$1 SUBSEP $2]++ }
END {
	split("tinspect coreread eu-stack gdb", tools, " ")
	printf "%-24s %-9s %10s %12s %6s\n", "core", "tool", "wall_s", "rss_kib", "runs"
	for (c = 1; c <= nc; c++) {
		core = order[c]
		for (t = 1; t <= 4; t++) {
			k = core SUBSEP tools[t]
			if (!n[k] && !bad[k]) continue
			delete ww; delete rr
			for (i = 1; i <= n[k]; i++) { ww[i] = w[k, i]; rr[i] = r[k, i] }
			mw[k] = n[k] ? median(ww, n[k]) : -1
			mr[k] = n[k] ? median(rr, n[k]) : -1
			printf "%-24s %-9s %10.3f %12d %6d%s\n", core, tools[t], mw[k],
				mr[k], n[k], bad[k] ? "  (" bad[k] " failed)" : ""
		}
		kt = core SUBSEP "tinspect"; ke = core SUBSEP "eu-stack"
		kg = core SUBSEP "gdb"
		if (n[kt] && n[ke] && mw[ke] > 0)
			printf "%-24s tinspect/eu-stack wall %.3f, rss %.3f\n", core,
				mw[kt] / mw[ke], mr[kt] / mr[ke]
		if (n[kt] && n[kg] && mw[kg] > 0)
			printf "%-24s tinspect/gdb      wall %.3f, rss %.3f\n", core,
				mw[kt] / mw[kg], mr[kt] / mr[kg]
		if (n[kt])
			printf "%-24s tinspect peak RSS %.1f MiB\n", core, mr[kt] / 1024
	}
}' "$OUT/runs.tsv"
