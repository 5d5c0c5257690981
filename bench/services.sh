#!/usr/bin/env bash
# services.sh - tinspect on real Debian programs, the way a new user would
# try it, with a summary line of the counts:
#
#   mariadb  MariaDB in a temporary datadir under mysqlslap load (200
#            clients): 20 snapshots with no deadlock, no stall, no park,
#            no cond listed at its futex word, and every lock that lies in
#            a global of mariadbd named as `nm -D` names it;
#   jvm      a JVM with 500 threads (bench/services/Threads.java, compiled
#            here with javac): no stall, the runtime warning, every stack
#            reaching start_thread (compared with eu-stack); jcmd
#            Thread.print shows the Java-level deadlock tinspect points to;
#   cpython  /usr/bin/python3 with threading.Lock waiters and a pthread
#            mutex ABBA through ctypes (bench/services/pyservice.py): the
#            ABBA found, the Lock waits counted below the verdict as
#            semaphore waits, with CPython's note.
#
#
# and healthy services under load, SNAPSHOTS snapshots each (a
# JSON document and a text report): every one exits 0 and its verdict is
# "No deadlock found", the threads eu-stack lists are the ones tinspect
# lists; servers listen on 127.0.0.1 only:
#
#   memcached      memcached -t 8 under memaslap (memcaslap in Debian);
#   dbbench        rocksdb's db_bench, readwhilewriting with 32 threads;
#   redis          redis-server with 4 io-threads under redis-benchmark;
#   node-exporter  Debian's prometheus-node-exporter (a stripped Go binary)
#                  scraped in a loop: also Go recognised, with its version.
#
# Then, on MariaDB, memcached, db_bench and redis still under load, the
# lock-order graph: a watch of LOCKORDER_SECONDS (default 600;
# 0: none) per mode of LOCKORDER_MODES (default "stop"; "stop
# nonblocking" for both, nonblocking at --update-priority normal) at
# --watch LOCKORDER_INTERVAL (default 1) with --lock-order: at least 10
# updates, every line valid, no lock_order_inversion, the saved graph
# without inversion; what it learned and the waits that could not
# contribute are printed.  The loads run for up to an hour, killed by PID
# after the watches.
#
#   bench/services.sh [mariadb] [jvm] [cpython] [memcached] [dbbench]
#                     [redis] [node-exporter]        (default: all)
#
# Its packages (mariadb-server, mariadb-client, openjdk-17-jdk-headless,
# memcached, libmemcached-tools, rocksdb-tools, redis-server, redis-tools,
# prometheus-node-exporter, elfutils, python3-jsonschema) are installed by
# `tools/setup.sh services-deps`, which this script calls (not with
# SERVICES_INSTALL=0); a service whose programs are missing is skipped
# with the reason.  It takes a few minutes, so the
# default test run (tools/setup.sh test) does not run it.  Every process
# is started here and killed by its PID; the temporary datadir is removed.
# Exit status: 0 if every service that ran passed its checks.
set -u
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TINSPECT=${TINSPECT:-$top/build/agent/tinspect}
SCHEMA=${SCHEMA:-$top/schema/tinspect-snapshot.schema.json}
PY=/usr/bin/python3
CHECK=$top/bench/services/check.py
SNAPSHOTS=${SNAPSHOTS:-20}
LOCKORDER_SECONDS=${LOCKORDER_SECONDS:-600}
LOCKORDER_MODES=${LOCKORDER_MODES:-stop}
LOCKORDER_INTERVAL=${LOCKORDER_INTERVAL:-1}

services=("$@")
((${#services[@]})) || services=(mariadb jvm cpython memcached dbbench redis node-exporter)

if [[ ${SERVICES_INSTALL:-1} == 0 ]]; then
	:	# asked not to install: what is missing is skipped
elif ! "$top/tools/setup.sh" services-deps; then
	echo "services: could not install the service packages; what is missing is skipped"
fi
if [[ ! -x $TINSPECT ]]; then
	(cd "$top" && { [[ -f build/build.ninja ]] || meson setup build >/dev/null; } &&
		ninja -C build >/dev/null) || { echo "services: cannot build tinspect" >&2; exit 2; }
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/tinspect-services.XXXXXX")
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	PIDS=()
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

declare -A RESULT
failed=0

# Wait for a line matching a regex in a file; fails after $3 seconds.
wait_for() {	# file regex seconds
	local end=$((SECONDS + $3))
	until grep -qE "$2" "$1" 2>/dev/null; do
		((SECONDS < end)) || return 1
		sleep 0.2
	done
}

# Where the text report puts things: "verdict at line V, details at line D
# of N lines; --brief: B lines".
text_shape() {	# text brief
	local v d n b
	v=$(grep -n -m1 '^Verdict:' "$1" | cut -d: -f1)
	d=$(grep -n -m1 '^Threads in detail:' "$1" | cut -d: -f1)
	n=$(wc -l <"$1")
	b=$(wc -l <"$2")
	echo "text: verdict at line ${v:-?}, per-thread details from line ${d:-?} of $n; --brief: $b lines"
}

stop_pid() {	# pid: TERM, then KILL after 20 s
	local p=$1 i
	kill -TERM "$p" 2>/dev/null
	for i in $(seq 100); do
		kill -0 "$p" 2>/dev/null || break
		sleep 0.2
	done
	kill -KILL "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	local k=() q
	for q in "${PIDS[@]}"; do [[ $q == "$p" ]] || k+=("$q"); done
	PIDS=("${k[@]}")
}

# The lock-order graph of a service under load: a watch per mode of
# LOCKORDER_MODES for LOCKORDER_SECONDS, ended by SIGTERM (the graph is
# saved, then tinspect dies of it), then check.py lockorder.  Its lines
# go to stdout, its results to RESULT_LO; 1 if a check failed.
RESULT_LO=""
lockorder_run() {	# name pid dir
	local name=$1 pid=$2 d=$3 mode rc=0 out
	RESULT_LO=""
	((LOCKORDER_SECONDS > 0)) || return 0
	for mode in $LOCKORDER_MODES; do
		local extra=() f=$d/lockorder-$mode.json s=$d/lockorder-$mode.ndjson
		# nonblocking at normal priority: at SCHED_IDLE (a watch's default)
		# a service that keeps the CPUs busy leaves it few updates, and the
		# check is about what the updates say
		[[ $mode == nonblocking ]] && extra=(--nonblocking --update-priority normal)
		"$TINSPECT" --watch "$LOCKORDER_INTERVAL" --json --summary --lock-order "$f" \
			"${extra[@]}" "$pid" >"$s" 2>"$d/lockorder-$mode.err" &
		local tpid=$!
		PIDS+=("$tpid")
		local end=$((SECONDS + LOCKORDER_SECONDS))
		while ((SECONDS < end)) && kill -0 "$tpid" 2>/dev/null &&
			kill -0 "$pid" 2>/dev/null; do
			sleep 1
		done
		kill -0 "$pid" 2>/dev/null || echo "services: note: $name ended during the lock-order watch"
		stop_pid "$tpid"
		out=$("$PY" "$CHECK" lockorder "$name" "$mode" "$SCHEMA" "$s" "$f" \
			"$LOCKORDER_SECONDS") || rc=1
		echo "$out"
		RESULT_LO+="; lock order ($mode): $(echo "$out" | sed -n "s/^RESULT-lockorder $name $mode: //p" | head -1)"
	done
	return $rc
}

run_mariadb() {
	local need
	for need in mariadb-install-db mariadbd mysqlslap; do
		if ! command -v "$need" >/dev/null; then
			RESULT[mariadb]="skipped: $need not installed"
			return
		fi
	done
	local d=$work/mariadb
	mkdir -p "$d"
	if ! mariadb-install-db --no-defaults --datadir="$d/data" --user=root \
		--auth-root-authentication-method=normal >"$d/install.log" 2>&1; then
		RESULT[mariadb]="FAIL: mariadb-install-db (see $d/install.log)"
		failed=$((failed + 1))
		return
	fi
	mariadbd --no-defaults --datadir="$d/data" --socket="$d/sock" --skip-networking \
		--user=root --pid-file="$d/pid" --log-error="$d/error.log" \
		--max-connections=500 --thread-cache-size=300 --innodb-buffer-pool-size=256M \
		</dev/null >/dev/null 2>&1 &
	local mpid=$!
	PIDS+=("$mpid")
	local i
	for i in $(seq 150); do
		[[ -S $d/sock ]] && break
		sleep 0.2
	done
	if [[ ! -S $d/sock ]]; then
		RESULT[mariadb]="FAIL: mariadbd did not start (see $d/error.log)"
		failed=$((failed + 1))
		stop_pid "$mpid"
		return
	fi
	# iterations enough for the snapshots and the lock-order watch; killed
	# by its PID after them, bounded in time anyway
	timeout 3600 mysqlslap --socket="$d/sock" -uroot --concurrency=200 \
		--iterations=100000 --number-of-queries=20000 --auto-generate-sql \
		--auto-generate-sql-load-type=mixed --auto-generate-sql-add-autoincrement \
		</dev/null >"$d/slap.log" 2>&1 &
	local spid=$!
	PIDS+=("$spid")
	sleep 5
	local rc codes=()
	for i in $(seq "$SNAPSHOTS"); do
		timeout 120 "$TINSPECT" --json --check "$mpid" >"$d/snap-$i.json" 2>"$d/snap-$i.err"
		rc=$?
		codes+=("$rc")
		sleep 0.3
	done
	timeout 120 "$TINSPECT" "$mpid" >"$d/text.txt" 2>/dev/null
	timeout 120 "$TINSPECT" --brief "$mpid" >"$d/brief.txt" 2>/dev/null
	local nthreads
	nthreads=$(grep -m1 '^threads: ' "$d/text.txt" | cut -d' ' -f2)
	local bias exe
	exe=$(readlink "/proc/$mpid/exe")
	bias=0x$(awk -v e="$exe" '$6 == e && $3 == "00000000" { split($1, a, "-"); print a[1]; exit }' \
		"/proc/$mpid/maps")
	kill -0 "$spid" 2>/dev/null || echo "services: note: mysqlslap ended before the last snapshot"
	local lorc=0
	lockorder_run mariadb "$mpid" "$d" || lorc=1
	kill -0 "$spid" 2>/dev/null || echo "services: note: mysqlslap ended before the lock-order watch did"
	stop_pid "$spid"
	stop_pid "$mpid"
	local out
	out=$("$PY" "$CHECK" mariadb "$SCHEMA" "$exe" "$bias" "$d"/snap-*.json)
	rc=$?
	echo "$out"
	echo "  exit statuses of tinspect --check: $(printf '%s\n' "${codes[@]}" | sort | uniq -c | tr -s ' ' | tr '\n' ',')"
	echo "  $nthreads threads in the last snapshot; $(text_shape "$d/text.txt" "$d/brief.txt")"
	RESULT[mariadb]=$(echo "$out" | sed -n 's/^RESULT mariadb: //p' | head -1)$RESULT_LO
	local c
	for c in "${codes[@]}"; do [[ $c == 0 ]] || rc=1; done
	((lorc == 0)) || rc=1
	((rc == 0)) || failed=$((failed + 1))
}

run_jvm() {
	if ! command -v javac >/dev/null || ! command -v java >/dev/null; then
		RESULT[jvm]="skipped: javac/java not installed (openjdk-17-jdk-headless)"
		return
	fi
	local d=$work/jvm
	mkdir -p "$d"
	if ! javac -d "$d" "$top/bench/services/Threads.java" 2>"$d/javac.log"; then
		RESULT[jvm]="FAIL: javac (see $d/javac.log)"
		failed=$((failed + 1))
		return
	fi
	java -cp "$d" Threads 500 </dev/null >"$d/out" 2>&1 &
	local jpid=$!
	PIDS+=("$jpid")
	if ! wait_for "$d/out" '^ready' 120; then
		RESULT[jvm]="FAIL: the JVM never got ready"
		failed=$((failed + 1))
		stop_pid "$jpid"
		return
	fi
	local rc
	timeout 120 "$TINSPECT" --json "$jpid" >"$d/doc.json" 2>"$d/err"
	rc=$?
	timeout 120 "$TINSPECT" "$jpid" >"$d/text.txt" 2>/dev/null
	timeout 120 "$TINSPECT" --brief "$jpid" >"$d/brief.txt" 2>/dev/null
	if command -v eu-stack >/dev/null; then
		timeout 300 eu-stack -p "$jpid" >"$d/eu.txt" 2>/dev/null
	else
		: >"$d/eu.txt"
	fi
	timeout 120 jcmd "$jpid" Thread.print >"$d/jcmd.txt" 2>&1
	stop_pid "$jpid"
	local out
	out=$("$PY" "$CHECK" jvm "$SCHEMA" "$d/doc.json" "$d/eu.txt" "$d/jcmd.txt")
	local crc=$?
	echo "$out"
	echo "  tinspect exit status $rc; $(text_shape "$d/text.txt" "$d/brief.txt")"
	RESULT[jvm]=$(echo "$out" | sed -n 's/^RESULT jvm: //p' | head -1)
	((crc == 0 && rc == 0)) || failed=$((failed + 1))
}

run_cpython() {
	if [[ ! -x $PY ]]; then
		RESULT[cpython]="skipped: $PY not installed"
		return
	fi
	local d=$work/cpython
	mkdir -p "$d"
	"$PY" "$top/bench/services/pyservice.py" </dev/null >"$d/out" 2>&1 &
	local ppid=$!
	PIDS+=("$ppid")
	if ! wait_for "$d/out" '^ready' 60; then
		RESULT[cpython]="FAIL: the Python program never got ready"
		failed=$((failed + 1))
		stop_pid "$ppid"
		return
	fi
	local ma mb nw rc
	read -r _ _ _ ma mb _ nw <"$d/out"
	timeout 120 "$TINSPECT" --json --check "$ppid" >"$d/doc.json" 2>"$d/err"
	rc=$?
	timeout 120 "$TINSPECT" "$ppid" >"$d/text.txt" 2>/dev/null
	timeout 120 "$TINSPECT" --brief "$ppid" >"$d/brief.txt" 2>/dev/null
	stop_pid "$ppid"
	local out
	out=$("$PY" "$CHECK" cpython "$SCHEMA" "$d/doc.json" "$d/text.txt" "$ma" "$mb" "$nw")
	local crc=$?
	echo "$out"
	echo "  tinspect --check exit status $rc (10: deadlock); $(text_shape "$d/text.txt" "$d/brief.txt")"
	RESULT[cpython]=$(echo "$out" | sed -n 's/^RESULT cpython: //p' | head -1)
	((crc == 0 && rc == 10)) || failed=$((failed + 1))
}

# ---- healthy services under load ------------------------------------------------

# A TCP port on 127.0.0.1 nothing listens on.
free_port() {
	local p
	for _ in $(seq 50); do
		p=$((20000 + RANDOM % 20000))
		ss -Hltn "sport = :$p" 2>/dev/null | grep -q . || { echo "$p"; return; }
	done
	echo 0
}

# Wait until something listens on 127.0.0.1:$1, at most $2 seconds.
wait_port() {	# port seconds
	local end=$((SECONDS + $2))
	until ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; do
		((SECONDS < end)) || return 1
		sleep 0.2
	done
}

# SNAPSHOTS snapshots of a healthy service (JSON and text, with tinspect's
# exit status), and eu-stack between two more JSON snapshots; then the
# check's RESULT line.  1 if a check failed.
healthy_run() {	# name pid dir [go|lockorder]
	local name=$1 pid=$2 d=$3 go=${4:-} i rc lorc=0
	: >"$d/codes"
	for i in $(seq "$SNAPSHOTS"); do
		timeout 120 "$TINSPECT" --json "$pid" >"$d/snap-$i.json" 2>"$d/snap-$i.err"
		rc=$?
		echo "$rc" >>"$d/codes"
		timeout 120 "$TINSPECT" "$pid" >"$d/text-$i.txt" 2>/dev/null
		sleep 0.2
	done
	timeout 120 "$TINSPECT" --json "$pid" >"$d/around-1.json" 2>/dev/null
	if command -v eu-stack >/dev/null; then
		timeout 300 eu-stack -p "$pid" >"$d/eu.txt" 2>/dev/null
	else
		: >"$d/eu.txt"
	fi
	timeout 120 "$TINSPECT" --json "$pid" >"$d/around-2.json" 2>/dev/null
	timeout 120 "$TINSPECT" --brief "$pid" >"$d/brief.txt" 2>/dev/null
	RESULT_LO=""
	if [[ $go == lockorder ]]; then
		go=""
		lockorder_run "$name" "$pid" "$d" || lorc=1
	fi
	local out
	out=$("$PY" "$CHECK" healthy "$name" "$SCHEMA" "$d" $go)
	rc=$?
	echo "$out"
	echo "  exit statuses: $(sort "$d/codes" | uniq -c | tr -s ' ' | tr '\n' ',');" \
		"$(text_shape "$d/text-1.txt" "$d/brief.txt")"
	RESULT[$name]=$(echo "$out" | sed -n "s/^RESULT $name: //p" | head -1)$RESULT_LO
	((rc == 0 && lorc == 0)) || failed=$((failed + 1))
}

run_memcached() {
	local need
	for need in memcached memcaslap; do
		if ! command -v "$need" >/dev/null; then
			RESULT[memcached]="skipped: $need not installed (memcached, libmemcached-tools)"
			return
		fi
	done
	local d=$work/memcached port
	mkdir -p "$d"
	port=$(free_port)
	local as=()
	[[ $(id -u) -ne 0 ]] || as=(-u root)	# it refuses root without -u
	memcached -t 8 -l 127.0.0.1 -p "$port" -U 0 "${as[@]}" -m 64 \
		</dev/null >"$d/server.log" 2>&1 &
	local mpid=$!
	PIDS+=("$mpid")
	if ! wait_port "$port" 30; then
		RESULT[memcached]="FAIL: memcached did not listen (see $d/server.log)"
		failed=$((failed + 1))
		stop_pid "$mpid"
		return
	fi
	# bounded in time; killed by its PID after the snapshots anyway
	memcaslap -s "127.0.0.1:$port" -T 2 -c 32 -t 3600s </dev/null >"$d/load.log" 2>&1 &
	local lpid=$!
	PIDS+=("$lpid")
	sleep 3
	healthy_run memcached "$mpid" "$d" lockorder
	kill -0 "$lpid" 2>/dev/null || echo "services: note: memaslap ended before the last snapshot"
	stop_pid "$lpid"
	stop_pid "$mpid"
}

run_dbbench() {
	if ! command -v db_bench >/dev/null; then
		RESULT[dbbench]="skipped: db_bench not installed (rocksdb-tools)"
		return
	fi
	local d=$work/dbbench
	mkdir -p "$d"
	# --num large: the readers end after num reads; --duration first
	db_bench --benchmarks=readwhilewriting --threads=32 --num=1000000000 \
		--duration=3600 --db="$d/db" --disable_wal=1 --progress_reports=false \
		</dev/null >"$d/bench.log" 2>&1 &
	local bpid=$!
	PIDS+=("$bpid")
	# its 32 readers and the writer are started once the DB is open
	local i n=0
	for i in $(seq 150); do
		n=$(ls "/proc/$bpid/task" 2>/dev/null | wc -l)
		((n >= 33)) && break
		sleep 0.2
	done
	if ((n < 33)); then
		RESULT[dbbench]="FAIL: db_bench did not start its threads (see $d/bench.log)"
		failed=$((failed + 1))
		stop_pid "$bpid"
		return
	fi
	sleep 2
	healthy_run dbbench "$bpid" "$d" lockorder
	kill -0 "$bpid" 2>/dev/null || echo "services: note: db_bench ended before the last snapshot"
	stop_pid "$bpid"
}

run_redis() {
	local need
	for need in redis-server redis-benchmark; do
		if ! command -v "$need" >/dev/null; then
			RESULT[redis]="skipped: $need not installed (redis-server, redis-tools)"
			return
		fi
	done
	local d=$work/redis port
	mkdir -p "$d"
	port=$(free_port)
	redis-server --bind 127.0.0.1 --port "$port" --io-threads 4 \
		--io-threads-do-reads yes --save '' --appendonly no --daemonize no \
		--dir "$d" </dev/null >"$d/server.log" 2>&1 &
	local rpid=$!
	PIDS+=("$rpid")
	if ! wait_port "$port" 30; then
		RESULT[redis]="FAIL: redis-server did not listen (see $d/server.log)"
		failed=$((failed + 1))
		stop_pid "$rpid"
		return
	fi
	timeout 3600 redis-benchmark -h 127.0.0.1 -p "$port" -c 50 -n 2000000000 \
		-t set,get -P 4 -q </dev/null >"$d/load.log" 2>&1 &
	local lpid=$!
	PIDS+=("$lpid")
	sleep 3
	healthy_run redis "$rpid" "$d" lockorder
	kill -0 "$lpid" 2>/dev/null || echo "services: note: redis-benchmark ended before the last snapshot"
	stop_pid "$lpid"
	stop_pid "$rpid"
}

run_node_exporter() {
	if ! command -v prometheus-node-exporter >/dev/null; then
		RESULT[node-exporter]="skipped: prometheus-node-exporter not installed"
		return
	fi
	local d=$work/node-exporter port
	mkdir -p "$d"
	port=$(free_port)
	prometheus-node-exporter --web.listen-address="127.0.0.1:$port" \
		--collector.textfile.directory="$d" </dev/null >"$d/server.log" 2>&1 &
	local npid=$!
	PIDS+=("$npid")
	if ! wait_port "$port" 30; then
		RESULT[node-exporter]="FAIL: node-exporter did not listen (see $d/server.log)"
		failed=$((failed + 1))
		stop_pid "$npid"
		return
	fi
	# scrapes, bounded in count and time, until the snapshots are done
	"$PY" -c '
import sys, time, urllib.request
end = time.time() + 1800
for _ in range(100000):
    if time.time() > end:
        break
    try:
        urllib.request.urlopen(sys.argv[1], timeout=10).read()
    except OSError:
        time.sleep(0.2)
' "http://127.0.0.1:$port/metrics" </dev/null >"$d/load.log" 2>&1 &
	local lpid=$!
	PIDS+=("$lpid")
	sleep 2
	healthy_run node-exporter "$npid" "$d" go
	stop_pid "$lpid"
	stop_pid "$npid"
}

for s in "${services[@]}"; do
	case $s in
	mariadb) run_mariadb ;;
	jvm) run_jvm ;;
	cpython) run_cpython ;;
	memcached) run_memcached ;;
	dbbench) run_dbbench ;;
	redis) run_redis ;;
	node-exporter) run_node_exporter ;;
	*) echo "services: unknown service $s (mariadb jvm cpython memcached dbbench" \
		"redis node-exporter)" >&2; exit 2 ;;
	esac
done

echo
ran=0
for s in "${services[@]}"; do
	echo "services: $s: ${RESULT[$s]:-no result}"
	[[ ${RESULT[$s]:-} == skipped* ]] || ran=$((ran + 1))
done
echo "services: $ran run, $((${#services[@]} - ran)) skipped, $failed failed"
((failed == 0))
