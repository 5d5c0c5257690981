#!/usr/bin/env bash
# record-blobs.sh OUTDIR - record the blobs of tests/data on this machine,
# for its architecture (ARCH = uname -m), from the built tree (build/):
#
#   ARCH-*.words            the words of every planted lock kind
#                           (tests/record_blobs.py)
#   ARCH-futex-wait.gregs   NT_PRSTATUS of a thread stopped in a futex wait
#                           (the arch suite's syscall test writes it)
#   core-ARCH-fx_stack.zst  a kernel core of fx_stack (threads in futex
#                           waits, one in a signal handler), zstd
#
# tools/arm64-vm.sh --run 'bash tools/record-blobs.sh "$OUT/data"' --out DIR
# records the aarch64 ones on the emulated machine.  Needs root (the core
# pattern is set for the time and put back, also on failure).
set -euo pipefail
out=${1:?usage: record-blobs.sh OUTDIR}
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
arch=$(uname -m)
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$top"

python3 tests/record_blobs.py build "$out"
TINSPECT_RECORD_DIR=$out meson test -C build --no-rebuild arch \
	--test-args='--filter=arch/syscall_of_a_stopped_futex_wait' >/dev/null
[[ -f $out/$arch-futex-wait.gregs ]] && echo "recorded $arch-futex-wait.gregs"

# the core: the kernel writes it where core_pattern says, for a process
# with no core size limit; the old pattern comes back on any exit.  The
# suites that make cores take the same lock (tests/corepattern.c).
exec 9>/tmp/tinspect-core_pattern.lock
flock 9
old_pattern=$(cat /proc/sys/kernel/core_pattern)
fx_pid="" fifo=$(mktemp -u)
restore() {
	echo "$old_pattern" >/proc/sys/kernel/core_pattern
	if [[ -n $fx_pid ]]; then
		kill -KILL "$fx_pid" 2>/dev/null || true
		wait "$fx_pid" 2>/dev/null || true
	fi
	rm -f "$fifo" "$fifo.out"
}
trap restore EXIT
echo "$out/core.%p" >/proc/sys/kernel/core_pattern
mkfifo "$fifo"
(ulimit -c unlimited && exec build/tests/fx_stack <"$fifo" >"$fifo.out") &
fx_pid=$!
exec 3>"$fifo"
for _ in $(seq 600); do
	grep -q '^ready' "$fifo.out" 2>/dev/null && break
	sleep 0.1
done
grep -q '^ready' "$fifo.out" || { echo "fx_stack did not get ready" >&2; exit 1; }
kill -ABRT "$fx_pid"
wait "$fx_pid" 2>/dev/null || true
fx_pid=""
exec 3>&-
core=$out/core.$(ls "$out" | sed -n 's/^core\.\([0-9]*\)$/\1/p' | head -n1)
[[ -f $core ]] || { echo "no core was written" >&2; exit 1; }
{
	echo "# core-$arch-fx_stack.zst: what fx_stack reported before the dump"
	sed 's/^/# /' "$fifo.out"
} >"$out/core-$arch-fx_stack.txt"
zstd -q -19 --rm "$core" -o "$out/core-$arch-fx_stack.zst"
echo "recorded core-$arch-fx_stack.zst ($(stat -c %s "$out/core-$arch-fx_stack.zst") bytes)"
