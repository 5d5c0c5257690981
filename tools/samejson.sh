#!/usr/bin/env bash
# samejson.sh OLD_TINSPECT NEW_TINSPECT: do two tinspect binaries report
# the same JSON about the same processes?
#
# A reshaping of the code must not change what tinspect says.  Captures
# carry timings, so the two binaries are run back to back on the SAME live
# fixture process, and only the fields that measure time are removed before
# the documents are compared byte for byte: captured_at, capture.freeze_us,
# capture.duration_us, capture.timings, every thread's cpu times, the
# CPU it last ran on (sched.processor: the scheduler moves it between two
# runs) and the clock time its wait was first seen (waiting_since: in a
# one-shot capture, the capture's own time).  A warm-up capture comes first: the first ptrace stop of a timed
# futex wait turns it into restart_syscall, and both binaries must see the
# same state.  Everything else - thread
# identities, registers, stacks, locks, deadlocks, TLS values, keys,
# errors and warnings - must be identical.
#
# The fixtures (each with the options that exercise it): fx_threads,
# fx_lock_abba, fx_lock_cond, fx_tls with --tls/--errno/--keys, fx_stack,
# and examples/deadlock.  They are taken from the build directory of
# NEW_TINSPECT (FIXTURES and EXAMPLES override), started with a pipe on
# stdin, used once they print "ready", and killed by PID.
#
# Prints one line per case ("same" or "DIFFERENT", with a diff), then
# "samejson: N same, N different"; exit status 1 if any differs or a
# fixture could not be run.
set -uo pipefail

usage() { echo "usage: $0 OLD_TINSPECT NEW_TINSPECT" >&2; exit 2; }
[[ $# -eq 2 ]] || usage
old=$1 new=$2
[[ -x $old && -x $new ]] || { echo "samejson: $old or $new is not executable" >&2; exit 2; }
builddir=$(cd "$(dirname "$new")/.." && pwd)
fixtures=${FIXTURES:-$builddir/tests}
examples=${EXAMPLES:-$builddir/examples}
py=/usr/bin/python3
work=$(mktemp -d "${TMPDIR:-/tmp}/samejson.XXXXXX")

fx_pid=
cleanup() {
	if [[ -n $fx_pid ]]; then
		kill -KILL "$fx_pid" 2>/dev/null
		wait "$fx_pid" 2>/dev/null
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The time-measuring fields out, keys sorted: what is left must match.
normalize() {
	"$py" - "$1" <<'EOF'
import json, sys
with open(sys.argv[1]) as f:
    doc = json.load(f)
doc.pop("captured_at", None)
cap = doc.get("capture") or {}
for k in ("freeze_us", "duration_us", "timings"):
    cap.pop(k, None)
for th in doc.get("threads") or []:
    th.pop("cpu", None)
    th.pop("waiting_since", None)
    (th.get("sched") or {}).pop("processor", None)
json.dump(doc, sys.stdout, indent=1, sort_keys=True)
print()
EOF
}

same=0 different=0 failed=0

# case NAME 'TINSPECT OPTIONS' FIXTURE [ARGS...]
case_() {
	local name=$1 opts=$2 prog=$3
	shift 3
	if [[ ! -x $prog ]]; then
		echo "$name: FAILED ($prog is not built)"
		failed=$((failed + 1))
		return
	fi
	mkfifo "$work/in.$name"
	"$prog" "$@" <"$work/in.$name" >"$work/out.$name" 2>/dev/null &
	fx_pid=$!
	exec 9>"$work/in.$name"	# the fixture runs until stdin reaches EOF
	local i
	for ((i = 0; i < 300; i++)); do
		grep -q '^ready' "$work/out.$name" 2>/dev/null && break
		sleep 0.05
	done
	if ! grep -q '^ready' "$work/out.$name"; then
		echo "$name: FAILED (the fixture did not get ready)"
		failed=$((failed + 1))
	else
		# shellcheck disable=SC2086
		"$old" --json $opts "$fx_pid" >/dev/null 2>&1	# warm-up
		# shellcheck disable=SC2086
		"$old" --json $opts "$fx_pid" >"$work/old.$name.json" 2>"$work/old.$name.err"
		local rc_old=$?
		# shellcheck disable=SC2086
		"$new" --json $opts "$fx_pid" >"$work/new.$name.json" 2>"$work/new.$name.err"
		local rc_new=$?
		normalize "$work/old.$name.json" >"$work/old.$name.norm"
		normalize "$work/new.$name.json" >"$work/new.$name.norm"
		if [[ $rc_old -eq $rc_new ]] &&
		   cmp -s "$work/old.$name.norm" "$work/new.$name.norm" &&
		   cmp -s "$work/old.$name.err" "$work/new.$name.err"; then
			echo "$name: same (exit $rc_new, $(wc -c <"$work/new.$name.json") bytes)"
			same=$((same + 1))
		else
			echo "$name: DIFFERENT (exit $rc_old -> $rc_new)"
			diff -u "$work/old.$name.norm" "$work/new.$name.norm" | head -40
			diff -u "$work/old.$name.err" "$work/new.$name.err" | head -10
			different=$((different + 1))
		fi
	fi
	exec 9>&-
	kill -KILL "$fx_pid" 2>/dev/null
	wait "$fx_pid" 2>/dev/null
	fx_pid=
}

case_ threads '' "$fixtures/fx_threads" --idle 3 alpha:616c706861 beta:6265 gamma:
case_ lock_abba '' "$fixtures/fx_lock_abba" --idle 2
case_ lock_abba_timed '' "$fixtures/fx_lock_abba" --timed
case_ lock_cond '' "$fixtures/fx_lock_cond"
case_ tls '--tls fx_tls_int --tls fx_tls_str:string --tls fx_tls_ratio --tls fxlib_tls --tls fxplug_tls --errno --keys' "$fixtures/fx_tls" 4
case_ stack '' "$fixtures/fx_stack"
case_ stack_o2 '' "$fixtures/fx_stack_o2"
case_ deadlock '' "$examples/deadlock"

echo "samejson: $same same, $((different + failed)) different"
[[ $different -eq 0 && $failed -eq 0 ]]
