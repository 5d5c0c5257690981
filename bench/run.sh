#!/usr/bin/env bash
# bench/run.sh - benchmark tinspect against the floor (`limit`, and its
# parallel twin bench/limit_par.c), gdb and eu-stack with the neutral
# freeze-time harness of ../shared/bench, the inspectors interleaved.
# Not a test: a missed goal does not make it fail.  See bench/README.md.
#
# usage: bench/run.sh [options]
#   -n "N..."          worker-thread counts of the target (default "100 1000 10000")
#   -r R               repetitions per N and inspector (default 3), interleaved:
#                      every inspector once, then again (a fresh target each run)
#   -v NAME:ARGS[:RE]  extra tinspect variant, label tinspect-NAME, run as
#                      'tinspect ARGS {pid}'; RE (optional) counts the output
#                      lines that stand for one thread ("seen" column; default
#                      the text format's '^Thread [0-9]+ ', none if ARGS has
#                      --json).  Repeatable: -v 'json:--json' -v 'ns:--no-stacks'
#   --no-json          do not add the variant json:--json (tinspect --json,
#                      label tinspect-json), which runs by default
#   --no-floor         do not run the floor probes `limit`, `limit-par` and
#                      `limit-par-S`
#   --no-gdb           do not run gdb -p PID -batch -ex 'thread apply all bt'
#   --no-eu-stack      do not run eu-stack -s -i -p PID (source lines and
#                      inlined frames: what tinspect prints)
#   --compare-ns "N.." run gdb and eu-stack only at these N (default: all of -n)
#   --compare-r R      repetitions for gdb and eu-stack (default: -r)
#   --goal-ns "N..."   N at which the goals are judged (default "1000 10000";
#                      the parallel-floor goal at the largest of them)
#   -a "ARGS"          extra target arguments (e.g. "--hb-last", "-m mixed")
#   -t SEC             inspector timeout passed to measure.sh (default 300)
#   --container ROOT   run the target inside the Debian root ROOT as a
#                      container would (own mount namespace, chrooted; see
#                      container-target.sh), built there with ROOT's compiler
#                      against ROOT's glibc; e.g. -v 'tdb:--target-thread-db'
#   -o DIR             parent of the raw data dir (default
#                      ${TMPDIR:-/tmp}/tinspect-bench/runs); every run gets a
#                      fresh DIR/YYYYmmdd-HHMMSS-PID with all.tsv, outputs, table.txt
#   -h, --help         this text
# Environment:
#   TINSPECT=PATH      tinspect binary (default REPO/build/agent/tinspect,
#                      built with meson if missing)
#   SHARED_BENCH=DIR   the harness (default REPO/../shared/bench)
#   QUIET_MAX, QUIET_PCT are passed on to measure.sh.
# Goals (what a capture may cost): freeze / floor <= 1.10 (1.20 with --container) for
# tinspect and every variant; at the largest goal N, tinspect's freeze <=
# 0.70 x the single-tracer floor; wall / eu-stack <= 0.12 at N >= 1000
# (<= 0.05 at N >= 10000); peak RSS <= 64 MiB.  Each is printed with
# PASS/FAIL; bench/wall.sh judges the small-process wall time.
# Exit status: 0 done (goals may still be missed); 1 a run failed to start
#   (target did not come up, inspector not executable) or setup failed;
#   2 usage; 3 an inspector or target was left stopped (state T/t).
set -u
set -o pipefail

PROG=${0##*/}
die() { echo "$PROG: $*" >&2; exit 1; }
warn() { echo "$PROG: warning: $*" >&2; }
usage() {
	if [[ ${1:-2} == 0 ]]; then
		sed -n '6,48p' "$0" | sed 's/^# \{0,1\}//'
	else
		sed -n '6,48p' "$0" | sed 's/^# \{0,1\}//' >&2
	fi
	exit "${1:-2}"
}
indent() { sed "s/^/$1/"; }

# ---------------------------------------------------------------- options
NS="100 1000 10000"
R=3
VARIANTS=()
RUN_FLOOR=1 RUN_GDB=1 RUN_EU=1 RUN_JSON=1
COMPARE_NS=""
COMPARE_R=""
GOAL_NS="1000 10000"
TARGS=""
TMO=300
OUTBASE=""
CONTAINER=""

need_arg() { [[ $# -ge 2 ]] || { echo "$PROG: $1 needs an argument" >&2; usage 2; }; }
while [[ $# -gt 0 ]]; do
	case $1 in
	-n) need_arg "$@"; NS=$2; shift ;;
	-r) need_arg "$@"; R=$2; shift ;;
	-v) need_arg "$@"; VARIANTS+=("$2"); shift ;;
	-a) need_arg "$@"; TARGS=$2; shift ;;
	-t) need_arg "$@"; TMO=$2; shift ;;
	-o) need_arg "$@"; OUTBASE=$2; shift ;;
	--no-floor) RUN_FLOOR=0 ;;
	--no-json) RUN_JSON=0 ;;
	--no-gdb) RUN_GDB=0 ;;
	--no-eu-stack) RUN_EU=0 ;;
	--compare-ns) need_arg "$@"; COMPARE_NS=$2; shift ;;
	--compare-r) need_arg "$@"; COMPARE_R=$2; shift ;;
	--goal-ns) need_arg "$@"; GOAL_NS=$2; shift ;;
	--container) need_arg "$@"; CONTAINER=$2; shift ;;
	-h | --help) usage 0 ;;
	*) echo "$PROG: unknown argument: $1" >&2; usage 2 ;;
	esac
	shift
done

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }
is_uint_list() { [[ $1 =~ ^[[:space:]]*[0-9]+([[:space:]]+[0-9]+)*[[:space:]]*$ ]]; }
is_uint_list "$NS" || { echo "$PROG: -n wants numbers: $NS" >&2; usage 2; }
if ! is_uint "$R" || ((R < 1)); then
	echo "$PROG: -r wants a positive number" >&2; usage 2
fi
if ! is_uint "$TMO" || ((TMO < 1)); then
	echo "$PROG: -t wants a positive number" >&2; usage 2
fi
[[ -z $COMPARE_NS ]] || is_uint_list "$COMPARE_NS" ||
	{ echo "$PROG: --compare-ns wants numbers" >&2; usage 2; }
if [[ -n $COMPARE_R ]] && { ! is_uint "$COMPARE_R" || ((COMPARE_R < 1)); }; then
	echo "$PROG: --compare-r wants a positive number" >&2; usage 2
fi
[[ -z $GOAL_NS ]] || is_uint_list "$GOAL_NS" ||
	{ echo "$PROG: --goal-ns wants numbers" >&2; usage 2; }
COMPARE_NS=${COMPARE_NS:-$NS}
COMPARE_R=${COMPARE_R:-$R}
# normalise the lists to single spaces
read -r -a _a <<<"$NS"; NS="${_a[*]}"
read -r -a _a <<<"$COMPARE_NS"; COMPARE_NS="${_a[*]}"
read -r -a _a <<<"$GOAL_NS"; GOAL_NS="${_a[*]}"

# variants: NAME:ARGS[:REGEX] -> parallel arrays; the JSON output has
# goals of its own (a freeze and a wall time like the text's), so it runs
# unless asked not to
if ((RUN_JSON)); then
	have_json=0
	for v in "${VARIANTS[@]}"; do [[ ${v%%:*} == json ]] && have_json=1; done
	((have_json)) || VARIANTS=("json:--json" "${VARIANTS[@]}")
fi
V_LABEL=() V_ARGS=() V_RE=()
TEXT_RE='^Thread [0-9]+ '
for v in "${VARIANTS[@]}"; do
	[[ $v == *:* ]] || { echo "$PROG: -v wants NAME:ARGS, got '$v'" >&2; usage 2; }
	name=${v%%:*} rest=${v#*:}
	[[ $name =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] ||
		{ echo "$PROG: -v: bad name '$name' (letters, digits, . _ -)" >&2; usage 2; }
	if [[ $rest == *:* ]]; then
		args=${rest%%:*} re=${rest#*:}
	else
		args=$rest re=$TEXT_RE
		[[ " $args " == *" --json "* ]] && re=""
	fi
	for l in "${V_LABEL[@]}"; do
		[[ $l != "tinspect-$name" ]] || { echo "$PROG: -v: '$name' given twice" >&2; usage 2; }
	done
	V_LABEL+=("tinspect-$name") V_ARGS+=("$args") V_RE+=("$re")
done

# ---------------------------------------------------------------- locations
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(git -C "$HERE" rev-parse --show-toplevel 2>/dev/null) || REPO=$(cd "$HERE/.." && pwd)
SHARED_BENCH=${SHARED_BENCH:-$REPO/../shared/bench}
[[ -d $SHARED_BENCH ]] || die "harness not found: $SHARED_BENCH (clone the repository next to 'shared', or set SHARED_BENCH)"
SHARED_BENCH=$(cd "$SHARED_BENCH" && pwd)
for f in measure.sh target.c limit.c; do
	[[ -r $SHARED_BENCH/$f ]] || die "$SHARED_BENCH/$f missing"
done
MEASURE=$SHARED_BENCH/measure.sh

SCRATCH=${TMPDIR:-/tmp}/tinspect-bench
BIN=$SCRATCH/bin
OUTBASE=${OUTBASE:-$SCRATCH/runs}
RUNDIR=$OUTBASE/$(date +%Y%m%d-%H%M%S)-$$
mkdir -p "$BIN" "$RUNDIR" || die "cannot create $BIN / $RUNDIR"

# Never let gdb / libdw download debug info during a measurement.
unset DEBUGINFOD_URLS DEBUGINFOD_CACHE_PATH
export LC_ALL=C

# ---------------------------------------------------------------- processes
# The only long-lived child is the current measure.sh (or build); it runs in
# the background so that a signal reaches our trap at once.  On INT/TERM it
# and all its descendants (timeout, the inspector, the target) are signalled
# by PID -- never by name.
CHILD=""

# (these functions run from the traps: shellcheck cannot see it)
# shellcheck disable=SC2317
starttime() {		# pid -> start time in clock ticks (field 22), "" if gone
	local s
	s=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	s=${s##*) }
	# shellcheck disable=SC2086  # split the fields on purpose
	set -- $s
	echo "${20}"
}

# shellcheck disable=SC2317
descendants() {		# pid -> "pid:starttime:leaf" of every descendant
	ps -e -o pid= -o ppid= | awk -v root="$1" '
		{ kids[$2] = kids[$2] " " $1 }
		END { n = split(kids[root], q, " ")
		      for (i = 1; i <= n; i++) {
			m = split(kids[q[i]], k, " ")
			print q[i], (m == 0)
			for (j = 1; j <= m; j++) q[++n] = k[j]
		      } }' | while read -r p leaf; do
		echo "$p:$(starttime "$p"):$leaf"
	done
}

# Stop the running measure.sh and everything under it: first the leaves (the
# inspector, the target), so that timeout, time and measure.sh finish
# normally and measure.sh's own trap runs; then, after a grace period,
# SIGKILL whatever is left, checking start times against PID reuse.
# shellcheck disable=SC2317
stop_child() {
	[[ -n $CHILD ]] || return 0
	local c=$CHILD d p st rest desc
	CHILD=""
	desc=$(descendants "$c")
	kill -TERM "$c" 2>/dev/null
	for d in $desc; do
		[[ ${d##*:} == 1 ]] && kill -TERM "${d%%:*}" 2>/dev/null
	done
	for _ in $(seq 100); do		# 10 s grace
		kill -0 "$c" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$c" 2>/dev/null
	wait "$c" 2>/dev/null
	for d in $desc; do
		p=${d%%:*} rest=${d#*:}
		st=${rest%%:*}
		[[ -n $st && $(starttime "$p") == "$st" ]] || continue
		kill -CONT "$p" 2>/dev/null	# never leave anything stopped
		kill -KILL "$p" 2>/dev/null
	done
}

# shellcheck disable=SC2317
on_signal() {
	trap '' INT TERM HUP
	echo "$PROG: interrupted, stopping the benchmark (raw data: $RUNDIR)" >&2
	stop_child
	exit 130
}
trap on_signal INT TERM HUP
trap 'stop_child' EXIT

run_bg() {		# run a command in the background and wait for it
	"$@" &
	CHILD=$!
	wait "$CHILD"
	local rc=$?
	CHILD=""
	return $rc
}

stopped_procs() { ps -e -o pid=,stat=,comm= | awk '$2 ~ /^[Tt]/'; }
STOPPED_BEFORE=$(stopped_procs)

# ---------------------------------------------------------------- prerequisites
echo "== prerequisites"
if [[ $(id -u) -ne 0 ]]; then
	capeff=$(awk '/^CapEff:/{print $2}' /proc/self/status)
	# CAP_SYS_PTRACE = bit 19
	if ((((16#${capeff:-0}) >> 19) & 1)); then
		echo "not root, but CAP_SYS_PTRACE is effective"
	else
		die "needs root or CAP_SYS_PTRACE to ptrace the target"
	fi
fi
if [[ -r /proc/sys/kernel/yama/ptrace_scope ]]; then
	scope=$(cat /proc/sys/kernel/yama/ptrace_scope)
	((scope < 3)) || die "kernel.yama.ptrace_scope = 3: ptrace is disabled"
	((scope == 0 || $(id -u) == 0)) ||
		warn "kernel.yama.ptrace_scope = $scope; CAP_SYS_PTRACE is needed"
fi
[[ -x /usr/bin/time ]] || die "GNU time (/usr/bin/time) is needed: apt-get install time"
command -v timeout >/dev/null || die "timeout (coreutils) is needed"
command -v cc >/dev/null || die "a C compiler (cc) is needed"
if ((RUN_GDB)) && ! command -v gdb >/dev/null; then
	echo "gdb not found: skipping the gdb comparison (apt-get install gdb libc6-dbg)"
	RUN_GDB=0
fi
if ((RUN_EU)) && ! command -v eu-stack >/dev/null; then
	echo "eu-stack not found: skipping the eu-stack comparison (apt-get install elfutils)"
	RUN_EU=0
fi

maxn=0
for n in $NS; do ((n > maxn)) && maxn=$n; done
need=$((maxn + 100))
hard=$(ulimit -H -u)
if [[ $hard == unlimited ]] || ((hard >= need)); then
	soft=$(ulimit -S -u)
	if [[ $soft != unlimited ]] && ((soft < need)); then
		ulimit -S -u "$hard" || warn "could not raise ulimit -u"
	fi
else
	ulimit -S -u "$hard" 2>/dev/null
	warn "ulimit -u hard limit $hard < $need: the target may fail at N=$maxn"
fi
echo "ulimit -u: $(ulimit -S -u) (need >= $need)"
sysctl_check() {	# path minimum what
	local v
	v=$(cat "$1" 2>/dev/null) || { warn "cannot read $1"; return; }
	if ((v < $2)); then
		warn "$1 = $v < $2 ($3); raise it with: sysctl -w $(echo "${1#/proc/sys/}" | tr / .)=$2"
	else
		echo "${1#/proc/sys/} = $v (need >= $2)"
	fi
}
sysctl_check /proc/sys/vm/max_map_count $((2 * maxn + 1000)) "two mappings per thread"
sysctl_check /proc/sys/kernel/threads-max $((maxn + 1000)) "threads on the machine"
sysctl_check /proc/sys/kernel/pid_max $((maxn + 2000)) "one PID per thread"
# pids cgroup limit (v2, then v1), best effort
cg=$(awk -F: '$1 == 0 {print $3}' /proc/self/cgroup 2>/dev/null)
cg1=$(awk -F: '$2 == "pids" {print $3}' /proc/self/cgroup 2>/dev/null)
for f in "/sys/fs/cgroup${cg}/pids.max" "/sys/fs/cgroup/pids${cg1}/pids.max"; do
	[[ -r $f ]] || continue
	v=$(cat "$f")
	[[ $v == max ]] || ((v >= need)) || warn "$f = $v < $need: the target may fail at N=$maxn"
done

# ---------------------------------------------------------------- builds
echo "== build"
# limit.c names x86_64's registers; aarch64's struct user_regs_struct has
# the two it reads as sp and pc
ARCH_CFLAGS=()
[[ $(uname -m) == aarch64 ]] && ARCH_CFLAGS=(-Drsp=sp -Drip=pc)
for p in target limit "$HERE/limit_par"; do
	src=$SHARED_BENCH/$p.c
	[[ $p == /* ]] && src=$p.c p=${p##*/}
	cc -O2 -Wall -pthread "${ARCH_CFLAGS[@]}" -o "$BIN/$p.new" "$src" ||
		die "cannot build $p from $src"
	mv -f "$BIN/$p.new" "$BIN/$p"
done
echo "built $BIN/target, $BIN/limit and $BIN/limit_par"
if [[ -n $CONTAINER ]]; then
	# the target as a container runs it: its root's glibc, its own compiler
	[[ -x $CONTAINER/usr/bin/gcc ]] || die "$CONTAINER has no gcc (make it with tools/roots.sh)"
	mkdir -p "$CONTAINER/tmp/bench" || die "cannot write $CONTAINER/tmp/bench"
	cp "$SHARED_BENCH/target.c" "$CONTAINER/tmp/bench/target.c" &&
		chroot "$CONTAINER" gcc -O2 -Wall -pthread -o /tmp/bench/target /tmp/bench/target.c ||
		die "cannot build the target inside $CONTAINER"
	echo "built $CONTAINER/tmp/bench/target with $CONTAINER's compiler" \
		"($(chroot "$CONTAINER" ldd --version 2>&1 | head -n 1))"
fi

if [[ -n ${TINSPECT:-} ]]; then
	[[ -x $TINSPECT ]] || die "TINSPECT=$TINSPECT is not executable"
else
	TINSPECT=$REPO/build/agent/tinspect
	if [[ ! -x $TINSPECT ]]; then
		command -v meson >/dev/null || die "$TINSPECT missing and meson not installed"
		echo "building tinspect with meson in $REPO/build"
		if [[ ! -f $REPO/build/build.ninja ]]; then
			run_bg meson setup "$REPO/build" "$REPO" || die "meson setup failed"
		fi
		run_bg meson compile -C "$REPO/build" || die "meson compile failed"
		[[ -x $TINSPECT ]] || die "the build produced no $TINSPECT"
	fi
fi
TINSPECT=$(cd "$(dirname "$TINSPECT")" && pwd)/$(basename "$TINSPECT")
"$TINSPECT" --version >/dev/null 2>&1 || die "$TINSPECT --version fails"
echo "tinspect: $TINSPECT ($("$TINSPECT" --version 2>&1 | head -n 1))"
# The binary is measured as it is: say so if sources changed since it was built.
stale=$(find "$REPO" \( -path "$REPO/build*" -o -path "$REPO/.git" \) -prune -o \
	-type f \( -name '*.[ch]' -o -name meson.build \) -newer "$TINSPECT" -print 2>/dev/null | head -n 3)
[[ -z $stale ]] || warn "sources newer than $TINSPECT (rebuild with ninja -C $REPO/build?): $(echo "$stale" | tr '\n' ' ')"

{
	echo "date: $(date -u +%FT%TZ)"
	echo "host: $(hostname) nproc=$(nproc) kernel=$(uname -r)"
	echo "loadavg: $(cat /proc/loadavg)"
	echo "repo: $REPO $(git -C "$REPO" describe --always --dirty 2>/dev/null)"
	echo "tinspect: $TINSPECT $("$TINSPECT" --version 2>&1 | head -n 1)" \
		"built $(date -u -r "$TINSPECT" +%FT%TZ) sha256 $(sha256sum "$TINSPECT" | cut -c1-16)"
	[[ -z $stale ]] || echo "warning: sources newer than the binary: $(echo "$stale" | tr '\n' ' ')"
	echo "harness: $SHARED_BENCH"
	[[ -z $CONTAINER ]] || echo "container: target inside $CONTAINER (container-target.sh)"
	((RUN_GDB)) && echo "gdb: $(gdb --version | head -n 1)"
	((RUN_EU)) && echo "eu-stack: $(eu-stack --version 2>&1 | head -n 1)"
	echo "args: -n '$NS' -r $R --compare-ns '$COMPARE_NS' --compare-r $COMPARE_R -a '$TARGS' -t $TMO"
	for i in "${!V_LABEL[@]}"; do echo "variant: ${V_LABEL[$i]} = tinspect ${V_ARGS[$i]}"; done
} >"$RUNDIR/meta.txt"

# ---------------------------------------------------------------- runs
# Per N, the inspectors in turn, once each, R times over (every run on a
# fresh target): they see the same machine as closely as a shared machine
# allows, and a slow spell hits all of them, not one.  measure.sh writes
# each round into DIR/repK; the medians are taken here over the rounds.
Q_TINSPECT=$(printf '%q' "$TINSPECT")
Q_LIMIT=$(printf '%q' "$BIN/limit")
Q_LIMIT_PAR=$(printf '%q' "$BIN/limit_par")
export TARGET=$BIN/target
if [[ -n $CONTAINER ]]; then
	export TARGET=$HERE/container-target.sh CONTAINER_ROOT=$CONTAINER
fi

START=$EPOCHSECONDS
START_FAIL=0
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
in_list() { [[ " $2 " == *" $1 "* ]]; }

measure() {		# N REP LABEL REGEX TEMPLATE
	local n=$1 rep=$2 label=$3 re=$4 tpl=$5
	local args=(-l "$label" -n "$n" -r 1 -t "$TMO" -o "$RUNDIR/rep$rep")
	[[ -n $TARGS ]] && args+=(-a "$TARGS")
	[[ -n $re ]] && args+=(-c "$re")
	echo
	echo "== N=$n round $rep $label ($((EPOCHSECONDS - START)) s elapsed," \
		"load $(cut -d' ' -f1-3 /proc/loadavg))"
	run_bg "$MEASURE" "${args[@]}" -- "$tpl" || {
		warn "measure.sh failed for $label N=$n"
		START_FAIL=1
	}
}

for n in $NS; do
	rounds=$R
	cmp=0
	if in_list "$n" "$COMPARE_NS"; then
		cmp=1
		((COMPARE_R > rounds)) && rounds=$COMPARE_R
	fi
	for ((rep = 1; rep <= rounds; rep++)); do
		if ((rep <= R)); then
			if ((RUN_FLOOR)); then
				measure "$n" "$rep" limit "" "$Q_LIMIT {pid}"
				measure "$n" "$rep" limit-par "" "$Q_LIMIT_PAR {pid}"
				measure "$n" "$rep" limit-par-S "" "$Q_LIMIT_PAR -S {pid}"
			fi
			measure "$n" "$rep" tinspect "$TEXT_RE" "$Q_TINSPECT {pid}"
			for i in "${!V_LABEL[@]}"; do
				measure "$n" "$rep" "${V_LABEL[$i]}" "${V_RE[$i]}" \
					"$Q_TINSPECT ${V_ARGS[$i]} {pid}"
			done
		fi
		if ((cmp && rep <= COMPARE_R)); then
			((RUN_EU)) && measure "$n" "$rep" eu-stack '^TID ' 'eu-stack -s -i -p {pid}'
			((RUN_GDB)) && measure "$n" "$rep" gdb '^Thread .*\(Thread 0x' \
				"gdb -p {pid} -batch -ex 'thread apply all bt'"
		fi
	done
done
ELAPSED=$((EPOCHSECONDS - START))
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

# Every round's RUN lines in DIR/all.tsv, and a MEDIAN line per inspector
# and N over the rounds (the columns of measure.sh's).
cat "$RUNDIR"/rep*/all.tsv 2>/dev/null | grep '^RUN' >"$RUNDIR/all.tsv"
awk -F'\t' '
function med(s,    v, n, i, j, x) {
	n = split(s, v, " ")
	for (i = 2; i <= n; i++) {
		x = v[i]
		for (j = i - 1; j >= 1 && v[j] + 0 > x + 0; j--) v[j + 1] = v[j]
		v[j + 1] = x
	}
	if (n == 0) return "NA"
	return (n % 2) ? v[(n + 1) / 2] : sprintf("%.3f", (v[n / 2] + v[n / 2 + 1]) / 2)
}
function lo(s,    v, n, i, m) { n = split(s, v, " "); m = ""; for (i = 1; i <= n; i++) if (m == "" || v[i] + 0 < m + 0) m = v[i]; return m == "" ? "NA" : m }
function hi(s,    v, n, i, m) { n = split(s, v, " "); m = ""; for (i = 1; i <= n; i++) if (m == "" || v[i] + 0 > m + 0) m = v[i]; return m == "" ? "NA" : m }
function num(x) { return (x == "NA" || x == "") ? "" : " " x }
$1 == "RUN" {
	k = $2 SUBSEP $3
	if (!(k in cnt)) { order[++nk] = k; targ[k] = $16 }
	cnt[k]++
	fr[k] = fr[k] num($5); mg[k] = mg[k] num($6); wa[k] = wa[k] num($7)
	rs[k] = rs[k] num($8); nz[k] = nz[k] num($10); se[k] = se[k] num($14)
	rc[k] = rc[k] (rc[k] == "" ? "" : ",") $9
}
END {
	for (i = 1; i <= nk; i++) {
		k = order[i]
		split(k, part, SUBSEP)
		printf "MEDIAN\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			part[1], part[2], cnt[k], med(fr[k]), lo(fr[k]), hi(fr[k]), med(mg[k]),
			med(wa[k]), med(rs[k]), rc[k], med(nz[k]), hi(nz[k]), med(se[k]), targ[k]
	}
}' "$RUNDIR/all.tsv" >>"$RUNDIR/all.tsv"

# ---------------------------------------------------------------- self-reports
# tinspect prints its own freeze ("target frozen X ms (capture Y ms)", or
# "freeze_us"/"duration_us" in JSON), limit its all_stopped_ms / total_ms.
# measure.sh keeps rep 1's output (and every small one) as LABEL_N*_rK.out.gz.
TAG=${TARGS// /_}
TAG=${TAG:--}
SELF=$RUNDIR/self.tsv
: >"$SELF"
median_of() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 }
	END { if (NR == 0) print "NA"; else if (NR % 2) print v[(NR + 1) / 2];
	      else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
labels=()
((RUN_FLOOR)) && labels+=(limit limit-par limit-par-S)
labels+=(tinspect "${V_LABEL[@]}")
for label in "${labels[@]}"; do
	for n in $NS; do
		fr="" ca="" k=0
		for f in "$RUNDIR"/rep*/"${label}_N${n}_${TAG}"_r*.out.gz; do
			[[ -e $f ]] || continue
			line=$(gzip -dc "$f" 2>/dev/null | awk '
				/^limit(_par)? pid=/ { a = t = ""
					for (i = 1; i <= NF; i++) {
						if ($i ~ /^all_stopped_ms=/) a = substr($i, 16)
						if ($i ~ /^total_ms=/) t = substr($i, 10) }
					print a, t; exit }
				match($0, /target frozen [0-9.]+ ms \(capture [0-9.]+ ms\)/) {
					split(substr($0, RSTART, RLENGTH), w, " ")
					print w[3], substr(w[6], 1); exit }
				/"freeze_us"/ && /"duration_us"/ {
					s = $0; sub(/.*"freeze_us": */, "", s); sub(/[^0-9].*/, "", s)
					d = $0; sub(/.*"duration_us": */, "", d); sub(/[^0-9].*/, "", d)
					printf "%.3f %.3f\n", s / 1000, d / 1000; exit }')
			[[ -n $line ]] || continue
			read -r a b <<<"$line"
			fr+=" $a" ca+=" $b" k=$((k + 1))
		done
		((k > 0)) || continue
		printf 'SELF\t%s\t%s\t%d\t%s\t%s\n' "$label" "$n" "$k" \
			"$(median_of <<<"$fr")" "$(median_of <<<"$ca")" >>"$SELF"
	done
done

# ---------------------------------------------------------------- table
TABLE=$RUNDIR/table.txt
FREEZE_GOAL=1.10
[[ -n $CONTAINER ]] && FREEZE_GOAL=1.20
awk -F'\t' -v ns="$NS" -v goal_ns="$GOAL_NS" -v labels="${labels[*]} eu-stack gdb" \
	-v elapsed="$ELAPSED" -v rundir="$RUNDIR" -v fgoal="$FREEZE_GOAL" \
	-v load0="$LOAD_START" -v load1="$LOAD_END" -v ncpu="$(nproc)" \
	-v rounds="$R" -v container="$CONTAINER" '
function ratio(a, b) { return (a == "" || b == "" || a == "NA" || b == "NA" || b + 0 == 0) ? "" : a / b }
function fmt(x, f) { return (x == "") ? "-" : sprintf(f, x) }
function verdict(r, goal) { return (r == "") ? "n/a (no data)" : sprintf("%.3f  %s", r, (r <= goal) ? "PASS" : "FAIL") }
function wall_goal(n) { return n >= 10000 ? 0.05 : n >= 1000 ? 0.12 : 0.5 }
FILENAME ~ /self\.tsv$/ { SK[$2, $3] = $4; SF[$2, $3] = $5; SC[$2, $3] = $6; next }
$1 == "MEDIAN" {
	k = $2 SUBSEP $3
	M[k] = 1; RR[k] = $4; FR[k] = $5; FMIN[k] = $6; FMAX[k] = $7; MG[k] = $8
	WA[k] = $9; RSS[k] = $10; RC[k] = $11; NO[k] = $12; NOMAX[k] = $13; SEEN[k] = $14
}
END {
	nn = split(ns, N, " "); nl = split(labels, L, " "); ng = split(goal_ns, G, " ")
	printf "tinspect benchmark  (raw data: %s; %d s of measurements, %d interleaved rounds)\n", rundir, elapsed, rounds
	printf "load average at the start: %s, at the end: %s (%d CPUs)%s\n", load0, load1, ncpu,
		(load0 + 0 > ncpu / 2 || load1 + 0 > ncpu / 2) ? "  -- A BUSY MACHINE: the figures are not the quiet-machine ones" : ""
	if (container != "") printf "target inside the root %s (container-target.sh)\n", container
	print "freeze = longest heartbeat stop of the target (harness); wall = inspector wall time;"
	print "eu-stack stops one thread at a time, so its freeze is a per-thread stop."
	print "limit = the floor (one tracer thread, ../shared/bench/limit.c); limit-par = the same with a"
	print "tracer thread per CPU, each over a share of the threads (bench/limit_par.c); limit-par-S"
	print "seizes every thread before it interrupts the first (limit_par -S: the method tinspect uses)."
	print "self = what the tool reports itself (tinspect: frozen/capture ms; limit: all_stopped/total ms),"
	print "median over the saved outputs (k of them)."
	for (i = 1; i <= nn; i++) {
		n = N[i]
		printf "\nN = %d workers (%d threads in the target)\n", n, n + 2
		printf "  %-16s %4s %28s %9s %10s %9s %-12s %6s %15s  %s\n", "inspector", "runs",
			"freeze ms med [min-max]", "maxgap ms", "wall ms", "RSS KiB",
			"exit codes", "seen", "noise ms (max)", "self (k)"
		for (j = 1; j <= nl; j++) {
			l = L[j]; k = l SUBSEP n
			if (!(k in M)) continue
			self = "-"
			if ((l, n) in SK) {
				if (l ~ /^limit/) self = sprintf("all_stopped %s / total %s (%d)", SF[l, n], SC[l, n], SK[l, n])
				else self = sprintf("frozen %s / capture %s (%d)", SF[l, n], SC[l, n], SK[l, n])
			}
			printf "  %-16s %4s %28s %9s %10s %9s %-12s %6s %15s  %s\n",
				(l == "limit") ? "limit (floor)" : l, RR[k],
				sprintf("%s [%s-%s]", FR[k], FMIN[k], FMAX[k]), MG[k], WA[k], RSS[k],
				RC[k], SEEN[k], sprintf("%s (%s)", NO[k], NOMAX[k]), self
		}
		if (("limit-par", n) in M)
			printf "  ratios limit-par        freeze/floor %s\n",
				fmt(ratio(FR["limit-par", n], FR["limit", n]), "%.2fx")
		if (("limit-par-S", n) in M)
			printf "  ratios limit-par-S      freeze/floor %s\n",
				fmt(ratio(FR["limit-par-S", n], FR["limit", n]), "%.2fx")
		for (j = 1; j <= nl; j++) {
			l = L[j]; k = l SUBSEP n
			if (l !~ /^tinspect/ || !(k in M)) continue
			printf "  ratios %-16s freeze/floor %s   freeze/limit-par %s   wall/eu-stack %s   wall/gdb %s   gdb freeze/%s freeze %s\n", l,
				fmt(ratio(FR[k], FR["limit", n]), "%.2fx"),
				fmt(ratio(FR[k], FR["limit-par", n]), "%.2fx"),
				fmt(ratio(WA[k], WA["eu-stack", n]), "%.3f"),
				fmt(ratio(WA[k], WA["gdb", n]), "%.3f"), l,
				fmt(ratio(FR["gdb", n], FR[k]), "%.1fx")
		}
	}
	printf "\nGoals (judged at N = %s on the medians; a benchmark, not a test):\n", goal_ns
	judged = 0
	top = 0
	for (i = 1; i <= ng; i++) if (G[i] + 0 > top + 0) top = G[i]
	for (i = 1; i <= ng; i++) {
		n = G[i]
		for (j = 1; j <= nl; j++) {
			l = L[j]; k = l SUBSEP n
			if (l !~ /^tinspect/ || !(k in M)) continue
			judged++
			printf "  N=%-6d %-16s freeze %s ms / floor %s ms <= %.2f       : %s\n", n, l, FR[k],
				(("limit", n) in M) ? FR["limit", n] : "-", fgoal,
				verdict(ratio(FR[k], FR["limit", n]), fgoal)
			if (n == top)
				printf "  N=%-6d %-16s freeze %s ms / floor %s ms <= 0.70 (below the floor): %s\n",
					n, l, FR[k], (("limit", n) in M) ? FR["limit", n] : "-",
					verdict(ratio(FR[k], FR["limit", n]), 0.70)
			printf "  N=%-6d %-16s wall %s ms / eu-stack -s -i %s ms <= %.2f : %s\n", n, l, WA[k],
				(("eu-stack", n) in M) ? WA["eu-stack", n] : "-", wall_goal(n),
				verdict(ratio(WA[k], WA["eu-stack", n]), wall_goal(n))
			v = (RSS[k] + 0 <= 65536) ? "PASS" : "FAIL"
			if (RSS[k] == "" || RSS[k] == "NA") v = "n/a (no data)"
			printf "  N=%-6d %-16s peak RSS %s KiB <= 65536 KiB (64 MiB)  : %s\n", n, l, RSS[k], v
		}
	}
	if (!judged) print "  none: tinspect was not measured at any of these N"
}' "$SELF" "$RUNDIR/all.tsv" >"$TABLE"

{
	echo
	echo "Raw MEDIAN lines (label N R freeze_ms freeze_min freeze_max maxgap_ms wall_ms rss_kib rcs noise_ms noise_max seen target_args):"
	grep '^MEDIAN' "$RUNDIR/all.tsv"
} >>"$TABLE"

# ---------------------------------------------------------------- checks
# RUN columns: 9 rc, 13 left_stopped (see measure.sh)
problems=$(awk -F'\t' '$1 == "RUN" {
	w = $2 " N=" $3 " rep " $4
	if ($9 == "target_fail") print "START " w ": target failed to start"
	else if ($9 == 126 || $9 == 127) print "START " w ": inspector could not be executed (rc " $9 ")"
	else if ($9 == 124 || $9 == 137) print "WARN  " w ": timed out (rc " $9 ")"
	else if ($9 != 0) print "NOTE  " w ": exit code " $9
	if ($5 == "NA" && $9 != "target_fail") print "WARN  " w ": no heartbeat reading"
	if ($13 == 1) print "WARN  " w ": the inspector left the target stopped"
}' "$RUNDIR/all.tsv")
grep -q '^START' <<<"$problems" && START_FAIL=1
grep -q '^RUN' "$RUNDIR/all.tsv" 2>/dev/null || START_FAIL=1

status=0
((START_FAIL)) && status=1
STOPPED_AFTER=$(stopped_procs)
new_stopped=$(awk 'NR == FNR { old[$1] = 1; next } !($1 in old)' \
	<(printf '%s\n' "$STOPPED_BEFORE") <(printf '%s\n' "$STOPPED_AFTER") | grep -v '^$')
{
	echo
	if [[ -n $problems ]]; then
		echo "Run problems:"
		indent '  ' <<<"$problems"
	else
		echo "Run problems: none (every run started, exit code 0)"
	fi
	if [[ -z $STOPPED_AFTER ]]; then
		echo "Stopped processes (state T/t) left on the machine: none"
	else
		echo "Stopped processes (state T/t) on the machine now:"
		indent '  ' <<<"$STOPPED_AFTER"
		if [[ -n $new_stopped ]]; then
			echo "  ... of which new since the start of the benchmark:"
			indent '    ' <<<"$new_stopped"
		fi
	fi
} >>"$TABLE"
if awk '$3 ~ /^(target|control|heartbeat|limit|tinspect|gdb|eu-stack|timeout|time|measure\.sh)$/' \
	<<<"$new_stopped" | grep -q .; then
	status=3
fi

echo
echo "==================================================================="
cat "$TABLE"
echo
echo "raw data kept in $RUNDIR (all.tsv, *.out.gz, table.txt, meta.txt)"
exit "$status"
