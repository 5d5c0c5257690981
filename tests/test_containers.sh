#!/usr/bin/env bash
# test_containers.sh: targets in Debian 11 (glibc 2.31) and 13 (glibc 2.41)
# roots, run as a container runs them (own mount and PID namespaces,
# chroot: `unshare --mount --pid --fork chroot ROOT PROG`), inspected from
# the host with and without --target-thread-db; a target chrooted in our
# own mount namespace (its root reachable from ours); and tinspect run
# from inside a chroot.  The fixtures are built inside each root with its
# own compiler and glibc, and with its own musl (1.2.2, 1.2.5).  TAP; a
# root that tools/roots.sh could not make skips its tests with the reason.
# Every process is ended by PID, every mount undone, also on failure.
#
#   test_containers.sh SOURCE_ROOT   (env: TINSPECT, VALIDATE, SCHEMA)
set -u
top=${1:?usage: test_containers.sh SOURCE_ROOT}
ROOTS=${TINSPECT_ROOTS:-/var/cache/tinspect/roots}
# The whole script in a mount namespace of its own: what it mounts (each
# root's scratch /tmp, a /proc) goes away with it, even if it is killed,
# and the cached roots are never written (tools/chroot-test.sh lends them
# read-only).  Without the right to, the check below skips.
if [[ -z ${TINSPECT_CONTAINERS_NS:-} ]] && [[ $(id -u) -eq 0 ]] &&
	unshare --mount --propagation private true 2>/dev/null; then
	TINSPECT_CONTAINERS_NS=1 exec unshare --mount --propagation private \
		bash "${BASH_SOURCE[0]}" "$@"
fi
tmp=$(mktemp -d)
n=0 bad=0 pids=() mounts=()

cleanup() {
	local p i
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount "${mounts[i]}" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT

ok() { n=$((n + 1)); echo "ok $n - $1"; }
# a "# TODO" test is a known gap (TAP): shown, not counted as a failure
notok() {
	n=$((n + 1))
	[[ $1 == *"# TODO"* ]] || bad=$((bad + 1))
	echo "not ok $n - $1"
	shift
	for l in "$@"; do sed 's/^/# /' <<<"$l"; done
}
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
check() {	# description, python expression over d (the document), json file [sys.argv[2]]
	local what=$1 expr=$2 f=$3 msg
	if ! msg=$(/usr/bin/python3 "$VALIDATE" "$SCHEMA" "$f" 2>&1); then
		notok "$what: schema" "$msg"
		return
	fi
	if msg=$(/usr/bin/python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
p = d['process']; tdb = p['thread_db']; w = ' '.join(d['capture']['warnings'])
ok = $expr
if not ok:
    print('exe', p['exe'], 'glibc', p['glibc_version'], 'tdb', tdb)
    print('warnings', w[:400])
    print('deadlocks', json.dumps(d.get('deadlocks'))[:300])
sys.exit(0 if ok else 1)" "$f" "${4:-}" 2>&1); then
		ok "$what"
	else
		notok "$what" "$msg"
	fi
}

if [[ $(id -u) -ne 0 ]] || ! unshare --mount --pid --fork true 2>/dev/null; then
	skip "containers" "needs root and CAP_SYS_ADMIN (unshare --mount --pid)"
	echo "1..$n"
	exit 0
fi
# scratch() ROOT: a fresh tmpfs over ROOT/tmp, for what the tests put there
scratch() {
	mount -t tmpfs tinspect-scratch "$1/tmp" && mounts+=("$1/tmp")
}

# start ROOT PROG...: the program in its own mount+PID namespace chrooted
# at ROOT; its host PID in $target, ready when it printed "ready"
target=""
start() {	# how (container|chroot) root prog...
	local how=$1 root=$2
	shift 2
	local out=$tmp/out.$n fifo=$tmp/in.$n
	mkfifo "$fifo"
	if [[ $how == container ]]; then
		# its own /proc (the fixtures poll their tasks there), mounted
		# in its namespace only
		unshare --mount --pid --fork --kill-child --mount-proc="${root%/}/proc" \
			chroot "$root" "$@" <"$fifo" >"$out" 2>&1 &
	elif [[ $how == container-nodbg ]]; then
		# the same, as an image without libc6-dbg: an empty tmpfs over
		# its /usr/lib/debug, in its mount namespace only
		unshare --mount --pid --fork --kill-child --mount-proc="${root%/}/proc" \
			sh -c 'mount -t tmpfs nodbg "$0/usr/lib/debug" && exec chroot "$0" "$@"' \
			"$root" "$@" <"$fifo" >"$out" 2>&1 &
	else
		if ! mountpoint -q "$root/proc"; then
			mount -t proc proc "$root/proc" && mounts+=("$root/proc")
		fi
		chroot "$root" "$@" <"$fifo" >"$out" 2>&1 &
	fi
	local outer=$!
	pids+=("$outer")
	exec {holdfd}>"$fifo"	# the fixture runs until stdin closes
	local i
	for ((i = 0; i < 600; i++)); do
		grep -q '^ready' "$out" 2>/dev/null && break
		sleep 0.05
	done
	if [[ $how != chroot ]]; then
		target=$(cat "/proc/$outer/task/$outer/children" 2>/dev/null)
		target=${target%% *}
	else
		target=$outer
	fi
	[[ -n $target ]] && pids+=("$target")
	grep -q '^ready' "$out" 2>/dev/null
}
stop() {
	local p
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	pids=()
	exec {holdfd}>&- 2>/dev/null
}
inspect() {	# out.json args...: tinspect --json args... $target; its status in $st
	local f=$1
	shift
	"$TINSPECT" --json "$@" "$target" >"$f" 2>"$f.err"
	st=$?
	# the target must not be left stopped
	local t s
	for t in /proc/"$target"/task/*; do
		s=$(awk '{print $3}' "$t/stat" 2>/dev/null)
		[[ $s == [Tt] ]] && notok "target left stopped after tinspect $*"
	done
}

fixtures="fx_lock_abba fx_lock_rwcycle fx_lock_pi fx_lock_orphan fx_lock_cond fx_lock_cxx"
for suite in bullseye trixie; do
	root=$ROOTS/$suite
	case $suite in bullseye) want=2.31 ;; trixie) want=2.41 ;; esac
	if [[ ! -x $root/usr/bin/gcc ]]; then
		skip "$suite: fixtures" "no $root (tools/roots.sh $suite could not make it: no network or debootstrap)"
		continue
	fi
	# built inside the root, against its glibc
	scratch "$root" || { notok "$suite: a scratch /tmp in the root"; continue; }
	mkdir -p "$root/tmp/tinspect-fx"
	cp "$top"/tests/fixtures/fx_lock*.c "$top"/tests/fixtures/fx_lock*.cc \
		"$top"/tests/fixtures/fx_lock.h "$root/tmp/tinspect-fx/"
	built=1
	for fx in $fixtures; do
		if [[ $fx == *cxx ]]; then
			cc="g++ -O1 -g -pthread -o /tmp/tinspect-fx/$fx /tmp/tinspect-fx/$fx.cc"
		else
			cc="gcc -O1 -g -pthread -o /tmp/tinspect-fx/$fx /tmp/tinspect-fx/$fx.c"
		fi
		chroot "$root" $cc 2>"$tmp/cc.err" || { built=0; notok "$suite: build $fx" "$(cat "$tmp/cc.err")"; }
	done
	((built)) && ok "$suite: lock fixtures built with its own compiler"
	for fx in $fixtures; do
		for opt in "" --target-thread-db; do
			what="$suite $fx ${opt:-(default)}"
			if ! start container "$root" "/tmp/tinspect-fx/$fx"; then
				notok "$what: fixture not ready"
				stop
				continue
			fi
			inspect "$tmp/d.json" $opt
			exe="p['exe'] == '/tmp/tinspect-fx/$fx'"
			ver="p['glibc_version'] == '$want'"
			if [[ -n $opt ]]; then
				tdbok="tdb['status'] == 'ok' and tdb['library_origin'] == 'target' and tdb['library'].endswith('/libthread_db.so.1') and not tdb['library'].startswith('$root') and all(t['pthread'] for t in d['threads'])"
			else
				tdbok="tdb['status'] == 'version_mismatch' and tdb['library_origin'] is None and '--target-thread-db' in w and all(t['pthread'] is None for t in d['threads'])"
			fi
			case $fx in
			fx_lock_orphan) lock="len(d['orphaned_locks']) == 1" ;;
			fx_lock_cond) lock="any((t['blocked_on'] or {}).get('kind') == 'cond' for t in d['threads'])" ;;
			*) lock="len(d['deadlocks']) == 1" ;;
			esac
			check "$what" "$exe and $ver and $tdbok and $lock" "$tmp/d.json"
			# with or without libthread_db, a thread's stack copy ends
			# below its struct pthread (over 1 KiB at the top of its
			# stack), as the layout check places it
			check "$what: the stack copies leave the descriptors out" \
				"all(t['stack']['copied_bytes'] + 1024 <= t['stack_bounds']['used_bytes'] + 128 for t in d['threads'] if t['stack_bounds']['status'] == 'ok' and not t['stack_bounds']['main'])" "$tmp/d.json"
			stop
		done
	done
	# an image without libc's symbols (2.41's libc.so.6 has no symbol
	# table; 2.31's unstripped libpthread names the frames itself): the
	# PI park is said as possible, with the remedy, and not claimed
	if [[ $suite == trixie ]]; then
		if start container-nodbg "$root" /tmp/tinspect-fx/fx_lock_pi; then
			inspect "$tmp/d.json" --target-thread-db
			check "$suite fx_lock_pi without libc6-dbg: the park said, not claimed" \
				"len(d['deadlocks']) == 0 and any((t['blocked_on'] or {}).get('kind') == 'futex' and not t['blocked_on']['parked'] and 'libc6-dbg' in (t['blocked_on']['note'] or '') for t in d['threads'])" "$tmp/d.json"
		else
			notok "$suite: fx_lock_pi without libc6-dbg: fixture not ready"
		fi
		stop
	fi
	# safe path: the root's library directory trusted, as the host reaches it
	if start container "$root" /tmp/tinspect-fx/fx_lock_abba; then
		TINSPECT_THREAD_DB_SAFE_PATH=/nonexistent:$root/usr/lib inspect "$tmp/d.json"
		check "$suite: TINSPECT_THREAD_DB_SAFE_PATH admits the root's libthread_db" \
			"tdb['status'] == 'ok' and tdb['library_origin'] == 'target'" "$tmp/d.json"
		# the same path inside the container is not ours: our /usr/lib
		# trusted says nothing of the container's (the directories are
		# compared by inode, not by the path the kernel gives)
		TINSPECT_THREAD_DB_SAFE_PATH=/usr/lib:/usr/lib/x86_64-linux-gnu inspect "$tmp/d.json"
		check "$suite: TINSPECT_THREAD_DB_SAFE_PATH=/usr/lib (ours) does not admit the container's" \
			"tdb['status'] == 'version_mismatch' and tdb['library_origin'] is None" "$tmp/d.json"
	else
		notok "$suite: safe path: fixture not ready"
	fi
	stop
	# chrooted in our own mount namespace: its root is reachable from ours
	if start chroot "$root" /tmp/tinspect-fx/fx_lock_abba; then
		inspect "$tmp/d.json" --target-thread-db
		check "$suite: chroot without namespaces: paths as the target sees them" \
			"p['exe'] == '/tmp/tinspect-fx/fx_lock_abba' and tdb['status'] == 'ok' and len(d['deadlocks']) == 1" "$tmp/d.json"
	else
		notok "$suite: chroot: fixture not ready"
	fi
	stop
done

# musl in a root: the release's own (1.2.2 in Debian 11, 1.2.5 in 13; the
# host's 1.2.3 is the musl suite's), the lock fixtures built inside with its
# musl-gcc, run as a container and inspected from here
musl_fixtures="fx_musl_abba fx_musl_abba_static fx_musl_rwlock fx_musl_sem fx_musl_cond fx_musl_orphan fx_musl_join fx_musl_barrier fx_musl_stdio"
# what a fixture planted (its "tid", "pthread", "lock" and "waiter" lines,
# TIDs of its PID namespace) against the document: every thread's
# pthread_t, every waiter's kind and object (a private cond's waiters
# sleep on their own stacks: the kind only)
planted_check='
lines = open(sys.argv[2]).read().split("\n")
byns = {t["ns_tid"]: t for t in d["threads"]}
tids = {}; locks = {}; bad = []
for l in lines:
    w = l.split()
    if len(w) >= 3 and w[0] == "tid": tids[w[1]] = int(w[2])
    if len(w) >= 4 and w[0] == "lock": locks[w[1]] = (int(w[2], 16), w[3])
for l in lines:
    w = l.split()
    if len(w) >= 3 and w[0] == "pthread" and w[1] in tids:
        t = byns.get(tids[w[1]])
        if not t or not t["pthread"] or int(t["pthread"]["id"], 16) != int(w[2], 16):
            bad.append("pthread of " + w[1])
    if len(w) >= 3 and w[0] == "waiter" and w[1] in locks:
        addr, kind = locks[w[1]]
        b = (byns.get(tids.get(w[2], -1)) or {}).get("blocked_on") or {}
        known = any(int(x["addr"], 16) == addr for x in d["locks"])
        if b.get("kind") != kind or (known and int(b.get("object") or "0", 16) != addr):
            bad.append(w[2] + " waits on " + w[1] + ": " + str(b.get("kind")) + " " + str(b.get("object")))
if bad: print("planted:", bad)
ok = ok and not bad and len(tids) > 0'
for suite in bullseye trixie; do
	root=$ROOTS/$suite
	case $suite in bullseye) want=1.2.2 ;; trixie) want=1.2.5 ;; esac
	if [[ ! -x $root/usr/bin/musl-gcc ]]; then
		skip "$suite: musl $want" "no musl-gcc in $root (tools/roots.sh $suite could not add musl-tools)"
		continue
	fi
	scratch "$root" || { notok "$suite: musl: a scratch /tmp in the root"; continue; }
	mkdir -p "$root/tmp/tinspect-musl"
	cp "$top"/tests/fixtures/musl/fx_musl*.[ch] "$root/tmp/tinspect-musl/"
	cp "$top"/tests/fixtures/fx_lock.h "$root/tmp/"	# fx_musl.h: "../fx_lock.h"
	for fx in $musl_fixtures; do
		prog=/tmp/tinspect-musl/$fx
		what="$suite musl $want $fx"
		flags="-std=gnu11 -D_GNU_SOURCE -O1 -g -fno-omit-frame-pointer"
		[[ $fx == *_static ]] && flags+=" -static"
		# shellcheck disable=SC2086
		if ! chroot "$root" musl-gcc $flags -o "$prog" "/tmp/tinspect-musl/${fx%_static}.c" \
			2>"$tmp/cc.err"; then
			notok "$what: build" "$(cat "$tmp/cc.err")"
			continue
		fi
		out=$tmp/out.$n	# what start() will have it print
		if ! start container "$root" "$prog"; then
			notok "$what: fixture not ready"
			stop
			continue
		fi
		inspect "$tmp/d.json" --check
		# the version read from its libc (a static program records
		# none: the layout common to 1.2.2-1.2.5 is used, said so)
		if [[ $fx == *_static ]]; then
			ver="tdb['libc_version'] is None and 'records no musl version' in tdb['detail']"
		else
			ver="tdb['libc_version'] == '$want'"
		fi
		check "$what: musl, every pthread_t, every planted wait" \
			"tdb['libc'] == 'musl' and $ver and p['exe'] == '$prog'$planted_check" \
			"$tmp/d.json" "$out"
		if [[ $fx == fx_musl_abba* ]]; then
			# the cycle, and stacks that reach both start routines
			check "$what: the cycle, and the start routines in the stacks" \
				"len(d['deadlocks']) == 1 and all(any(f.get('symbol') == s for t in d['threads'] for f in t['stack']['frames']) for s in ('teller', 'auditor'))" \
				"$tmp/d.json"
			[[ $st == 10 ]] && ok "$what: --check exits 10" ||
				notok "$what: --check exits 10" "exit $st: $(head -c 300 "$tmp/d.json.err")"
		fi
		stop
	done
done

# tinspect inside a chroot (Debian 12's, like the host's glibc) inspecting a
# process of the host's root in its own mount namespace
root=$ROOTS/bookworm
if [[ ! -x $root/usr/bin/gcc ]]; then
	skip "tinspect in a chroot" "no $root (tools/roots.sh bookworm could not make it)"
else
	# tinspect and its libraries as built here, in the chroot
	inside=$root/tmp/tinspect-self
	scratch "$root" || notok "tinspect in a chroot: a scratch /tmp in the root"
	mkdir -p "$inside"
	mkdir -p "$inside/lib"
	cp "$TINSPECT" "$inside/tinspect"
	# its libraries but the C library (the root's is the same 2.36)
	ldd "$TINSPECT" | awk '$3 ~ /^\// { print $3 }' | grep -v '/libc\.so\|/ld-linux' |
		xargs -r cp -L -t "$inside/lib"
	mountpoint -q "$root/proc" || { mount -t proc proc "$root/proc" && mounts+=("$root/proc"); }
	if start container / "$FIXTURES/fx_lock_abba"; then
		LD_LIBRARY_PATH=/tmp/tinspect-self/lib chroot "$root" \
			/tmp/tinspect-self/tinspect --json "$target" \
			>"$tmp/d.json" 2>"$tmp/d.err"
		check "tinspect in a chroot: target in its own mount namespace" \
			"p['exe'] == '$FIXTURES/fx_lock_abba' and tdb['status'] == 'ok' and len(d['deadlocks']) == 1" "$tmp/d.json"
	else
		notok "tinspect in a chroot: fixture not ready"
	fi
	stop
fi
echo "1..$n"
((bad == 0))
