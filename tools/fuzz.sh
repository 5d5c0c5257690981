#!/usr/bin/env bash
# fuzz.sh SECONDS - build the libFuzzer targets (tests/fuzz/fuzz_*.c, with
# clang, ASan and UBSan, in build-fuzz/) and, for each target:
#   1. run every input of its seed corpus (tests/fuzz/corpus/NAME/) once:
#      the regression check of earlier findings;
#   2. fuzz it for SECONDS seconds, starting from that corpus.
# New interesting inputs and findings go to a scratch directory (FUZZ_WORK,
# default a new /tmp/tinspect-fuzz.XXXXXX), never into the repository: a
# finding is turned into a corpus input by hand, with its fix.
#
# Prints one line per target and "fuzz: N passed, N failed" last; exits
# non-zero if any target failed, naming the crashing input and the command
# that reproduces it.
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
secs=${1:-}
if ! [[ $secs =~ ^[0-9]+$ ]] || ((secs < 1)); then
	sed -n '2,13p' "$0" >&2
	exit 2
fi
build=${FUZZ_BUILD:-$top/build-fuzz}
work=${FUZZ_WORK:-$(mktemp -d /tmp/tinspect-fuzz.XXXXXX)}
mkdir -p "$work"

if [[ ! -f $build/build.ninja ]]; then
	CC=clang meson setup "$build" -Dfuzz=true -Dwerror=true </dev/null \
		>"$work/setup.log" 2>&1 || {
		cat "$work/setup.log" >&2
		echo "fuzz: cannot configure $build" >&2
		exit 1
	}
fi
if ! ninja -C "$build" </dev/null >"$work/build.log" 2>&1; then
	cat "$work/build.log" >&2
	echo "fuzz: build failed" >&2
	exit 1
fi

# libFuzzer's own options, the same for every target:
#   -timeout: one input taking this long is a finding (a hang);
#   -rss_limit_mb: so is using this much memory (unbounded allocation).
opts=(-timeout=10 -rss_limit_mb=2048 -print_final_stats=1)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

passed=0 failed=0
for src in "$top"/tests/fuzz/fuzz_*.c; do
	name=$(basename "$src" .c)
	name=${name#fuzz_}
	exe=$build/tests/fuzz/fuzz_$name
	corpus=$top/tests/fuzz/corpus/$name
	dir=$work/$name
	mkdir -p "$dir/new"
	# a FUZZ_WORK used before may hold the findings of an earlier run
	rm -f "$dir"/crash-* "$dir"/leak-* "$dir"/timeout-* "$dir"/oom-*
	if [[ ! -x $exe || ! -d $corpus ]]; then
		echo "fuzz: $name: FAILED: no $exe or no corpus $corpus"
		failed=$((failed + 1))
		continue
	fi
	# 1. the corpus, once (artifacts land in the scratch directory)
	if ! (cd "$dir" && "$exe" "${opts[@]}" -artifact_prefix="$dir/regress-" \
		-runs=0 "$corpus" >"$dir/regress.log" 2>&1 </dev/null); then
		echo "fuzz: $name: FAILED: an input of $corpus fails again" \
			"(log: $dir/regress.log)"
		failed=$((failed + 1))
		continue
	fi
	# 2. fuzzing; new inputs go to the first directory, the scratch one
	rc=0
	(cd "$dir" && timeout -k 10 $((secs + 300)) "$exe" "${opts[@]}" \
		-max_total_time="$secs" -artifact_prefix="$dir/" \
		"$dir/new" "$corpus" >"$dir/fuzz.log" 2>&1 </dev/null) || rc=$?
	found=$(find "$dir" -maxdepth 1 -type f \
		\( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
		-o -name 'oom-*' \) | head -1)
	if ((rc != 0)) || [[ -n $found ]]; then
		echo "fuzz: $name: FINDING (exit $rc): input ${found:-(none written)}"
		grep -m3 -E 'ERROR|runtime error|SUMMARY' "$dir/fuzz.log" | sed 's/^/    /' || true
		echo "    log: $dir/fuzz.log"
		[[ -n $found ]] && echo "    reproduce: $exe $found"
		failed=$((failed + 1))
		continue
	fi
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/fuzz.log")
	new=$(find "$dir/new" -type f | wc -l)
	echo "fuzz: $name: ok, ${runs:-?} runs in ${secs}s, $new new inputs in $dir/new"
	passed=$((passed + 1))
done
echo "fuzz: $passed passed, $failed failed"
((failed == 0))
