#!/usr/bin/env bash
# arm64-vm.sh - build tinspect on an emulated arm64 machine and run its live
# suites there: ptrace of other processes needs a whole machine (qemu's user
# mode does not emulate it), and this one has no Arm CPU.
#
#   tools/arm64-vm.sh [options]
#     --suites "S..."  meson test suites to run (default "unit live")
#     --tests "T..."   instead: these tests (meson test T..., names as
#                      meson test --list shows them after the slash)
#     --bench ARGS     instead of the suites: bench/run.sh ARGS in the
#                      machine, with the harness of ../shared/bench
#                      (SHARED_BENCH overrides it) copied in
#     --run CMD        instead of the suites: CMD (bash) in the built tree;
#                      $OUT is the directory --out copies back
#     --timeout SEC    the whole run, boot to power-off (default 14400); at
#                      the deadline qemu is killed by its PID
#     --time-scale N   the tests' own time limits times N (meson's
#                      -Dtest_time_scale and meson test -t; default 20):
#                      emulation is slow
#     --out DIR        copy the machine's logs (meson-logs, the bench's
#                      runs) into DIR afterwards
#     --clean          start the build disk anew (see below)
#     --cache-only     only make the cached machine
#
# Once, cached in /var/cache/tinspect/arm64 (TINSPECT_ARM64_CACHE
# overrides it): an arm64 Debian 12 root with the build dependencies, made
# by debootstrap --foreign from the archive this machine's apt uses
# (tools/setup.sh mirror) and finished by its second stage in a chroot
# through qemu-user (binfmt_misc: an entry of its own is added for the
# time and removed; without binfmt_misc, inside the emulated machine);
# its kernel (linux-image-arm64's) and a small initramfs (busybox, the
# modules of the virtio disk and ext4).  No network is needed
# afterwards: the machine has none.  A package the list below gained after
# the root was made (the root's own dpkg status, read with debugfs, says
# which) is fetched with what it depends on that the root lacks, and
# installed by one boot of the machine on the cached root itself.
#
# Every run: the tree (the files git knows and the untracked ones it does
# not ignore) is copied onto a scratch ext4 image, the machine boots under
# qemu-system-aarch64 (-M virt -cpu max: pointer authentication on; 2
# CPUs, nice 10) with the root as a throw-away snapshot, builds tinspect
# with warnings as errors, runs the suites, and powers off.  The build
# is made on a build disk kept in the cache (build.img): each run brings
# its tree in line with this one's, so ninja rebuilds only what changed.  The last line
# is "N passed, N failed" (TAP results summed as tools/setup.sh does), or
# the job's output.  Nothing is mounted on the host (the images are made
# and read with mke2fs -d and debugfs); the scratch directory is removed
# and qemu killed by its PID on every exit (and by the kernel, through its
# parent-death signal, if this script is killed).  One run at a time
# (a lock in the cache).  Host packages:
# tools/setup.sh arm64-deps.  Exit status: 0 when nothing failed.
set -uo pipefail

PROG=arm64-vm
HELP_END=48	# the last line of the text above
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${TINSPECT_ARM64_CACHE:-/var/cache/tinspect/arm64}
SUITE=bookworm

# The arm64 root's packages: tools/setup.sh's PACKAGES that the build and
# the live suites use (not the fuzzers, valgrind, the format consumers or
# the container roots).  The kernel (linux-image-arm64's) and the
# initramfs's busybox are fetched apart: the root gets the modules only.
VM_PACKAGES=(
	gcc g++ libc6-dev binutils pkg-config meson ninja-build
	libelf-dev libdw-dev libjansson-dev libcriterion-dev
	python3 python3-jsonschema util-linux procps libc6-dbg libdebuginfod1
	libzstd-dev liblzma-dev liblz4-dev gdb zstd xz-utils lz4 time
	libcap2-bin groff-base libbz2-dev
	protobuf-c-compiler libprotobuf-c-dev zlib1g-dev
	elfutils kmod
	# the go suite's fixtures are built by the Go toolchain
	golang-go
	# gdb's libsource-highlight4v5 needs libboost-regex1.74.0-icu72, a
	# virtual package debootstrap's resolver does not follow: its provider
	libboost-regex1.74.0
)
# What the initramfs loads to mount the root (virtio over PCI, ext4), in
# an order that satisfies their dependencies.
INITRD_MODULES=(crc32c_generic crc16 mbcache jbd2 ext4
	virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci virtio_blk)

say() { echo "$PROG: $*" >&2; }
die() { say "$*"; exit 1; }

# ---------------------------------------------------------------- guest side
# Run as PID 1 of the emulated machine (the initramfs hands over to it).

guest_mounts() {
	export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
	mount -t proc proc /proc
	mount -t sysfs sys /sys
	mount -t devtmpfs dev /dev 2>/dev/null
	mkdir -p /dev/pts /dev/shm
	mount -t devpts -o gid=5,mode=620 devpts /dev/pts
	mount -t tmpfs tmpfs /dev/shm
	mount -t tmpfs tmpfs /run
	mount -t tmpfs tmpfs /tmp
	ln -sf /proc/self/fd /dev/fd
	ln -sf /proc/self/fd/0 /dev/stdin
	ln -sf /proc/self/fd/1 /dev/stdout
	ln -sf /proc/self/fd/2 /dev/stderr
	hostname tinspect-arm64
	export HOME=/root LANG=C.UTF-8 TERM=dumb
	guest_loopback
	# /dev/fuse for the stall suite's FUSE servers (devtmpfs makes the
	# node when the module loads)
	modprobe fuse 2>/dev/null ||
		echo "$PROG-guest: no fuse module: the stall suite will skip"
}

# The loopback interface up: nothing else brings it up here (no init
# system, no iproute2), and tests talk to servers of their own on
# 127.0.0.1 (the debuginfod one of test_hostile).  SIOCGIFFLAGS and
# SIOCSIFFLAGS through python3, which the root has.
guest_loopback() {
	python3 -c '
import fcntl, socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
name, flags = struct.unpack("16sh", fcntl.ioctl(s, 0x8913, struct.pack("16sh", b"lo", 0))[:18])
fcntl.ioctl(s, 0x8914, struct.pack("16sh", b"lo", flags | 1))
' || echo "$PROG-guest: the loopback interface could not be brought up"
}

guest_poweroff() {
	# the kernel's log (a fault, the OOM killer) explains what a test
	# log only sees end; the console is quiet
	[[ -d /work/out ]] && dmesg >/work/out/dmesg.txt 2>&1
	sync
	cd /
	umount /build 2>/dev/null
	umount /work 2>/dev/null
	echo o >/proc/sysrq-trigger
	sleep 60
}

# The root's second stage, once: the packages debootstrap unpacked on the
# host are configured here, by the machine's own CPU.
guest_stage2() {
	export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
	mount -t proc proc /proc
	mount -t sysfs sys /sys
	mount -t devtmpfs dev /dev 2>/dev/null
	export HOME=/root LANG=C
	echo "$PROG-guest: debootstrap --second-stage"
	if /debootstrap/debootstrap --second-stage; then
		guest_stage2_finish
		echo "$PROG-guest: stage 2 done"
	else
		echo "$PROG-guest: stage 2 failed"
		tail -n 30 /debootstrap/debootstrap.log 2>/dev/null
	fi
	umount /sys /proc 2>/dev/null
	sync
	echo o >/proc/sysrq-trigger
	sleep 60
}

# What the root gets once its packages are in (in the machine, or in the
# chroot through qemu-user).
guest_stage2_finish() {
	echo tinspect-arm64 >/etc/hostname
	printf '127.0.0.1\tlocalhost tinspect-arm64\n' >/etc/hosts
	depmod -a "$(ls /lib/modules | head -n1)"
	apt-get clean
	rm -f /root/arm64-vm.sh
	touch /var/lib/tinspect-arm64-ready
}

# Packages the cached root lacks, from the work disk's debs/, installed on
# the root itself (this boot's root is not a snapshot).
guest_add_packages() {
	export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
	mount -t proc proc /proc
	mount -t sysfs sys /sys
	mount -t devtmpfs dev /dev 2>/dev/null
	export HOME=/root LANG=C DEBIAN_FRONTEND=noninteractive
	echo "$PROG-guest: dpkg -i $(ls /work/debs | wc -l) packages"
	if dpkg -i /work/debs/*.deb </dev/null; then
		echo "$PROG-guest: packages added"
	else
		echo "$PROG-guest: dpkg failed"
	fi
	apt-get clean
	guest_poweroff
}

# Sum the TAP results of a meson test run: "passed failed" (as
# tools/setup.sh's tap_counts: a TODO is neither; a crash after the last
# TAP line fails).
guest_tap_counts() {	# testlog.json
	python3 - "$1" <<'EOF'
import json, re, sys
ok = bad = 0
with open(sys.argv[1]) as f:
    for line in f:
        t = json.loads(line)
        tap = [l for l in (t.get("stdout") or "").splitlines()
               if re.match(r"(not )?ok\b", l)]
        if not tap:
            if t.get("result") == "OK":
                ok += 1
            else:
                bad += 1
                print("FAILED %s (%s)" % (t.get("name"), t.get("result")),
                      file=sys.stderr)
            continue
        failed = [l for l in tap if l.startswith("not ok") and
                  not re.search(r"#\s*TODO\b", l, re.I)]
        for l in failed:
            print("%s: %s" % (t.get("name"), l), file=sys.stderr)
        bad += len(failed)
        ok += sum(1 for l in tap if l.startswith("ok"))
        if t.get("result") not in ("OK", "EXPECTEDFAIL") and not failed:
            bad += 1
            print("FAILED %s (%s after its last TAP line)" %
                  (t.get("name"), t.get("result")), file=sys.stderr)
print(ok, bad)
EOF
}

# Bring the build disk's tree (to) in line with this run's (from): files
# that differ are copied (their time is now, so ninja rebuilds what uses
# them), files gone from the tree are removed; build/ is left to ninja.
guest_sync() {	# from to
	python3 - "$1" "$2" <<'EOF'
import filecmp, os, shutil, sys
src, dst = sys.argv[1], sys.argv[2]
def files(top, skip=None):
    out = set()
    for d, dirs, names in os.walk(top):
        rel = os.path.relpath(d, top)
        if rel == "." and skip in dirs:
            dirs.remove(skip)
        for n in names + [x for x in dirs if os.path.islink(os.path.join(d, x))]:
            out.add(os.path.normpath(os.path.join(rel, n)))
    return out
new, old = files(src), files(dst, "build")
for f in old - new:
    os.remove(os.path.join(dst, f))
changed = 0
for f in sorted(new):
    a, b = os.path.join(src, f), os.path.join(dst, f)
    if os.path.islink(a) or os.path.islink(b):
        if (os.path.islink(a) and os.path.islink(b)
                and os.readlink(a) == os.readlink(b)):
            continue
    elif os.path.isfile(b) and filecmp.cmp(a, b, shallow=False):
        continue
    os.makedirs(os.path.dirname(b), exist_ok=True)
    if os.path.lexists(b):
        os.remove(b)
    if os.path.islink(a):
        os.symlink(os.readlink(a), b)
    else:
        shutil.copy(a, b)	# the mode, and the time of now
    changed += 1
print(changed)
EOF
}

# Configure (or reconfigure: the time scale may have changed) and build.
guest_build() {	# scale
	if [[ -f build/build.ninja ]]; then
		meson configure build -Dwerror=true -Dtest_time_scale="$1" ||
			meson setup --wipe build -Dwerror=true -Dtest_time_scale="$1"
	else
		rm -rf build
		meson setup build -Dwerror=true -Dtest_time_scale="$1"
	fi && ninja -C build
}

# Seconds left before the machine must power off: /work/budget is the
# host's deadline in seconds of the machine's uptime.
guest_left() {
	local up
	up=$(cut -d. -f1 /proc/uptime)
	echo $(($(cat /work/budget) - up > 1 ? $(cat /work/budget) - up : 1))
}

# The job the host left on the work disk: /work/job.sh, run with bash in
# the tree after the build when it exists, else the suites of /work/suites.
# The tree is built on the build disk (/dev/vdc, kept in the cache between
# runs) when there is one, else on the work disk.  The build, the job and
# the tests end (SIGTERM) at the deadline, so that the machine still
# powers off cleanly (the build disk written out) and says what it did.
guest_run() {
	local src=/work/tinspect out=/work/out rc
	guest_mounts
	mkdir -p "$out"
	echo "$PROG-guest: $(uname -srm), $(nproc) CPUs," \
		"$(awk '/MemTotal/ {print int($2 / 1024) " MiB"}' /proc/meminfo)," \
		"$(grep -m1 -o 'paca\|pacg' /proc/cpuinfo | head -n1 | sed 's/pac./pointer authentication/')"
	echo "$PROG-guest: $(ldd --version | head -n1), $(gcc --version | head -n1)"
	if [[ -b /dev/vdc ]] && mkdir -p /build && mount -t ext4 /dev/vdc /build; then
		echo "$PROG-guest: $(guest_sync /work/tinspect /build/tinspect) files" \
			"changed since the build disk's last run"
		src=/build/tinspect
	fi
	cd "$src" || { echo "$PROG-guest: no $src"; guest_poweroff; }
	local scale
	scale=$(cat /work/time_scale)
	echo "$PROG-guest: building (meson setup build -Dwerror=true" \
		"-Dtest_time_scale=$scale; ninja -C build)"
	local t0=$SECONDS
	timeout -k 60 "$(guest_left)" bash -c "$(declare -f guest_build); guest_build $scale" \
		>"$out/build.log" 2>&1 </dev/null
	rc=$?
	if ((rc != 0)); then
		tail -n 40 "$out/build.log"
		if ((rc == 124)); then
			echo "$PROG-guest: the build ran out of time"
			echo "0 passed, 1 failed (timeout)"
		else
			echo "$PROG-guest: the build failed"
			echo "0 passed, 1 failed"
		fi
		guest_poweroff
	fi
	echo "$PROG-guest: built in $((SECONDS - t0)) s"
	if [[ -f /work/job.sh ]]; then
		echo "$PROG-guest: job: $(tr '\n' ' ' </work/job.sh)"
		OUT=$out TMPDIR=/work timeout -k 60 "$(guest_left)" bash /work/job.sh </dev/null 2>&1
		echo "$PROG-guest: job exit status $?"
		guest_poweroff
	fi
	t0=$SECONDS
	local which=()
	read -r -a which </work/suites
	[[ -f /work/tests ]] || which=("${which[@]/#/--suite=}")
	echo "$PROG-guest: meson test ${which[*]}"
	# the build disk keeps the last run's log: a run that matches no
	# test must not count it again
	rm -f build/meson-logs/testlog.json
	timeout -k 60 "$(guest_left)" meson test -C build --print-errorlogs --no-rebuild \
		-t "$scale" "${which[@]}" </dev/null 2>&1 |
		tee "$out/test.log" | grep --line-buffered -E '^ *[0-9]+/[0-9]+ '
	rc=${PIPESTATUS[0]}
	cp -r build/meson-logs "$out/" 2>/dev/null
	local p f
	read -r p f < <(guest_tap_counts build/meson-logs/testlog.json 2>"$out/failed.txt")
	cat "$out/failed.txt"
	# a stopped process of ours left behind is a failure
	local stopped
	stopped=$(ps -eo pid=,stat=,args= | awk '$2 ~ /^[Tt]/')
	if [[ -n $stopped ]]; then
		echo "$PROG-guest: processes left stopped:"
		echo "$stopped"
		f=$((${f:-0} + 1))
	fi
	echo "$PROG-guest: tests took $((SECONDS - t0)) s"
	if ((rc == 124 || rc == 137)); then
		echo "$PROG-guest: the tests ran out of time; the suites not listed above did not run"
		echo "${p:-0} passed, $((${f:-0} + 1)) failed (timeout)"
	elif ((${p:-0} + ${f:-0} == 0)); then
		echo "$PROG-guest: no test ran"
		echo "0 passed, 1 failed"
	else
		echo "${p:-0} passed, ${f:-1} failed"
	fi
	guest_poweroff
}

if [[ ${1:-} == --guest ]]; then
	shift
	case ${1:-} in
	stage2) guest_stage2 ;;
	stage2-finish) guest_stage2_finish; exit $? ;;
	add-packages) guest_add_packages ;;
	run) guest_run ;;
	esac
	echo "$PROG-guest: unknown mode ${1:-}"
	echo o >/proc/sysrq-trigger
	sleep 60
fi

# ---------------------------------------------------------------- host side

SUITES="unit live"
TESTS=0
SCALE=20
JOB=""
BENCH=0
TIMEOUT=14400
OUT=""
CACHE_ONLY=0
CLEAN=0
while [[ $# -gt 0 ]]; do
	case $1 in
	--suites) SUITES=${2:?}; TESTS=0; shift ;;
	--tests) SUITES=${2:?}; TESTS=1; shift ;;
	--bench) BENCH=1; JOB="bench/run.sh -o \"\$OUT/bench\" ${2?}"; shift ;;
	--run) JOB=${2:?}; shift ;;
	--timeout) TIMEOUT=${2:?}; shift ;;
	--time-scale) SCALE=${2:?}; shift ;;
	--out) OUT=${2:?}; shift ;;
	--cache-only) CACHE_ONLY=1 ;;
	--clean) CLEAN=1 ;;
	-h | --help) sed -n "2,${HELP_END}p" "$0"; exit 0 ;;
	*) sed -n "2,${HELP_END}p" "$0" >&2; exit 2 ;;
	esac
	shift
done
[[ $TIMEOUT =~ ^[0-9]+$ ]] || die "--timeout wants seconds"
[[ $SCALE =~ ^[1-9][0-9]*$ ]] || die "--time-scale wants a whole number from 1"
[[ $(id -u) -eq 0 ]] || die "run it as root (debootstrap, and the root's files keep their owners)"
for t in qemu-system-aarch64 debootstrap mke2fs debugfs cpio gzip dpkg-deb setpriv flock; do
	command -v "$t" >/dev/null || die "$t is missing: tools/setup.sh arm64-deps"
done

SCRATCH=""
QEMU_PID=""
cleanup() {
	if [[ -n $QEMU_PID ]]; then
		kill -KILL "$QEMU_PID" 2>/dev/null
		wait "$QEMU_PID" 2>/dev/null
		QEMU_PID=""
	fi
	[[ -z $SCRATCH ]] || rm -rf "$SCRATCH"
}
trap 'cleanup; binfmt_restore' EXIT
trap 'say "interrupted"; exit 130' INT TERM HUP

# Boot the machine; its serial console goes to LOG and is followed on
# standard output through FILTER (a sed -n script: the kernel's own lines
# are left out); the run ends when it powers
# off or at the deadline (qemu killed by its PID).  Returns 124 on timeout.
boot() {	# deadline log filter kernel-args drive...
	local deadline=$1 log=$2 filter=$3 append=$4
	shift 4
	local drives=() d
	for d in "$@"; do
		drives+=(-drive "$d")
	done
	: >"$log"
	# TMPDIR: where qemu keeps the snapshot's writes (removed with SCRATCH)
	TMPDIR=$SCRATCH setpriv --pdeathsig KILL nice -n 10 qemu-system-aarch64 \
		-M virt -cpu max,pauth-impdef=on -smp 2 -m 4096 \
		-kernel "$CACHE/vmlinuz" -initrd "$CACHE/initrd.img" \
		-append "console=ttyAMA0 panic=-1 quiet $append" \
		"${drives[@]}" -nic none -no-reboot -display none \
		-monitor none -serial "file:$log" </dev/null &
	QEMU_PID=$!
	tail -n +1 -f --pid="$QEMU_PID" "$log" 2>/dev/null | sed -u -n "$filter" &
	local tail_pid=$! rc=0
	while kill -0 "$QEMU_PID" 2>/dev/null; do
		if ((SECONDS >= deadline)); then
			say "timeout: killing qemu (PID $QEMU_PID)"
			kill -KILL "$QEMU_PID" 2>/dev/null
			rc=124
			break
		fi
		sleep 2
	done
	wait "$QEMU_PID" 2>/dev/null
	QEMU_PID=""
	wait "$tail_pid" 2>/dev/null
	return $rc
}

# An ext4 image of size SIZE holding DIR, made without mounting anything.
mkimage() {	# image size dir
	rm -f "$1"
	mke2fs -q -t ext4 -d "$3" -L tinspect "$1" "$2" >/dev/null 2>&1 </dev/null
}

# The initramfs: busybox, the modules that reach the root, and an /init
# that mounts the root (and the work disk, if any) and hands over to the
# program named by tinspect.run= on the kernel command line.
make_initrd() {	# kernel-tree busybox-tree release out
	local kt=$1 bb=$2 rel=$3 out=$4 dir m f
	dir=$(mktemp -d -p "$SCRATCH")
	mkdir -p "$dir/bin" "$dir/mods" "$dir/proc" "$dir/dev" "$dir/sys" "$dir/newroot"
	cp "$bb/bin/busybox" "$dir/bin/busybox" || return 1
	for m in "${INITRD_MODULES[@]}"; do
		f=$(find "$kt/lib/modules/$rel" -name "$m.ko" -o -name "$m.ko.xz" | head -n1)
		[[ -n $f ]] || { say "no module $m in the kernel package"; return 1; }
		cp "$f" "$dir/mods/"
		echo "${f##*/}" >>"$dir/mods/order"
	done
	cat >"$dir/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t devtmpfs dev /dev
for m in $(cat /mods/order); do insmod /mods/$m; done
run=/sbin/init
for a in $(cat /proc/cmdline); do
	case $a in tinspect.run=*) run=${a#tinspect.run=} ;; esac
done
i=0
while [ ! -b /dev/vda ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
mount -t ext4 /dev/vda /newroot || { echo "initramfs: cannot mount the root"; poweroff -f; }
if [ -b /dev/vdb ]; then
	mkdir -p /newroot/work
	mount -t ext4 /dev/vdb /newroot/work || echo "initramfs: cannot mount the work disk"
fi
umount /proc
umount /dev
exec switch_root /newroot /bin/bash $(echo "$run" | tr , ' ')
EOF
	chmod 755 "$dir/init"
	(cd "$dir" && find . | cpio -o -H newc --quiet | gzip -1) >"$out"
}

# binfmt_misc state this script changed, to put back (trap)
BINFMT_MOUNTED=0 BINFMT_ENTRY=""
binfmt_restore() {
	if [[ -n $BINFMT_ENTRY && -e /proc/sys/fs/binfmt_misc/$BINFMT_ENTRY ]]; then
		echo -1 >"/proc/sys/fs/binfmt_misc/$BINFMT_ENTRY" 2>/dev/null
	fi
	BINFMT_ENTRY=""
	if ((BINFMT_MOUNTED)); then
		umount /proc/sys/fs/binfmt_misc 2>/dev/null
		BINFMT_MOUNTED=0
	fi
}

# Make arm64 programs run here through qemu-user (binfmt_misc), for the
# second stage in a chroot: far cheaper than the same work in the whole
# emulated machine.  An aarch64 entry already there is used as it is;
# otherwise one of ours is added (and removed by binfmt_restore).  Fails
# when there is no qemu-aarch64-static or binfmt_misc cannot be used.
binfmt_setup() {
	local qemu=/usr/bin/qemu-aarch64-static d=/proc/sys/fs/binfmt_misc e
	[[ -x $qemu ]] || return 1
	if [[ ! -e $d/register ]]; then
		mount -t binfmt_misc binfmt_misc "$d" 2>/dev/null || return 1
		BINFMT_MOUNTED=1
	fi
	for e in "$d"/*; do
		[[ -f $e && $e != "$d/register" && $e != "$d/status" ]] || continue
		grep -q '^enabled' "$e" &&
			grep -q '^magic 7f454c460201010000000000000000000200b700' "$e" &&
			return 0
	done
	# ELF64, little-endian, ET_EXEC or ET_DYN, EM_AARCH64; F: qemu is
	# opened now, so the chroot needs no copy of it
	BINFMT_ENTRY=tinspect-arm64
	printf '%s' ":$BINFMT_ENTRY:M::"'\x7f\x45\x4c\x46\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00'":"'\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff'":$qemu:F" \
		>"$d/register" 2>/dev/null || { BINFMT_ENTRY=""; binfmt_restore; return 1; }
}

# The second stage in a chroot through qemu-user, in a mount namespace of
# its own: the /proc and /sys debootstrap mounts there go with it.
stage2_chroot() {	# root log
	binfmt_setup || return 2
	say "second stage in a chroot through qemu-user (once; log $2)"
	nice -n 10 unshare -m --propagation private \
		chroot "$1" /debootstrap/debootstrap --second-stage </dev/null >"$2" 2>&1
	local rc=$?
	binfmt_restore
	((rc == 0)) || { tail -n 20 "$2" >&2; return 1; }
	cp "$0" "$1/root/arm64-vm.sh"
	nice -n 10 unshare -m --propagation private chroot "$1" \
		bash /root/arm64-vm.sh --guest stage2-finish </dev/null >>"$2" 2>&1
}

# A private apt configuration for the release's arm64 packages, in a new
# directory below SCRATCH; APT gets its options.  The system's sources,
# lists and state are left alone.
arm64_apt() {	# mirror
	local tmp
	tmp=$(mktemp -d -p "$SCRATCH") || return 1
	mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial"
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]" \
		"$1 $SUITE main" >"$tmp/sources.list"
	APT=(-q -o "Dir::Etc::SourceList=$tmp/sources.list"
		-o Dir::Etc::SourceParts=/dev/null -o "Dir::State::Lists=$tmp/lists"
		-o "Dir::Cache=$tmp/cache" -o Dir::State::status=/dev/null
		-o APT::Architecture=arm64 -o APT::Architectures::=arm64
		-o APT::Sandbox::User=root)
	apt-get "${APT[@]}" update </dev/null >/dev/null 2>&1
}

# The kernel package of the release (linux-image-arm64 names it), fetched
# into dir.
fetch_kernel() {	# mirror dir
	local rc=1 pkg
	arm64_apt "$1" || return 1
	if pkg=$(apt-cache "${APT[@]}" depends linux-image-arm64 2>/dev/null |
			awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }') &&
		[[ -n $pkg ]] &&
		(cd "$2" && apt-get "${APT[@]}" download "$pkg" busybox-static \
			</dev/null >/dev/null 2>&1); then
		rc=0
	fi
	return $rc
}

# The packages installed on the cached root, one name a line (its dpkg
# status, read without mounting it).
root_installed() {
	debugfs -R "cat /var/lib/dpkg/status" "${CACHE_ROOT:-$CACHE/root.img}" 2>/dev/null |
		awk '/^Package: / { p = $2 } /^Status: .* installed$/ { print p }'
}

# Packages of VM_PACKAGES the cached root was made without (the list grew
# since): they and what they depend on that the root lacks are fetched and
# installed by one boot on the root itself, which is then checked.
top_up_root() {
	local have want=() p mirror dir deps
	have=$(root_installed)
	[[ -n $have ]] || die "cannot read the cached root's dpkg status"
	for p in "${VM_PACKAGES[@]}"; do
		grep -qx -- "$p" <<<"$have" || want+=("$p")
	done
	((${#want[@]})) || return 0
	mirror=$(bash "$top/tools/setup.sh" mirror) ||
		die "no Debian archive in this machine's apt configuration"
	say "adding ${want[*]} to the cached root (once)"
	arm64_apt "$mirror" || die "apt-get update for arm64 failed"
	deps=$(apt-cache "${APT[@]}" depends --recurse --no-recommends \
		--no-suggests --no-conflicts --no-breaks --no-replaces \
		--no-enhances "${want[@]}" 2>/dev/null | grep -E '^[a-z0-9]' | sort -u |
		grep -vxF -f <(echo "$have")) || die "cannot resolve ${want[*]}"
	dir=$SCRATCH/add
	mkdir -p "$dir/debs"
	(cd "$dir/debs" && apt-get "${APT[@]}" download $deps </dev/null >/dev/null 2>&1) ||
		die "cannot fetch $(echo $deps)"
	cp "$0" "$dir/arm64-vm.sh"
	mkimage "$SCRATCH/add.img" 4G "$dir" || die "cannot make the packages' image"
	# on a copy, which replaces the root only once it has them all
	cp --sparse=always "$CACHE/root.img" "$CACHE/root.new" ||
		die "cannot copy the root"
	boot $((SECONDS + 3600)) "$CACHE/add-packages.log" "/^$PROG-guest:/p" \
		"tinspect.run=/work/arm64-vm.sh,--guest,add-packages" \
		"file=$CACHE/root.new,if=virtio,format=raw" \
		"file=$SCRATCH/add.img,if=virtio,format=raw"
	rm -rf "$dir" "$SCRATCH/add.img"
	have=$(CACHE_ROOT=$CACHE/root.new root_installed)
	for p in "${want[@]}"; do
		grep -qx -- "$p" <<<"$have" && continue
		rm -f "$CACHE/root.new"
		die "$p could not be added to the root (see $CACHE/add-packages.log)"
	done
	mv "$CACHE/root.new" "$CACHE/root.img"
}

# The cached machine, once.
make_cache() {
	[[ -f $CACHE/root.img && -f $CACHE/vmlinuz && -f $CACHE/initrd.img ]] && return 0
	local mirror new=$CACHE/new log=$CACHE/debootstrap.log kdeb bdeb rel
	mirror=$(bash "$top/tools/setup.sh" mirror) ||
		die "no Debian archive in this machine's apt configuration"
	mkdir -p "$CACHE"
	rm -rf "$new"
	mkdir -p "$new/debs"
	say "fetching the arm64 kernel and busybox from $mirror"
	fetch_kernel "$mirror" "$new/debs" || die "cannot fetch linux-image-arm64's kernel"
	say "debootstrap --arch arm64 --foreign $SUITE from $mirror (once; log $log)"
	local inc
	inc=$(IFS=,; echo "${VM_PACKAGES[*]}")
	if ! nice -n 10 debootstrap --arch=arm64 --foreign --variant=minbase \
		--include="$inc" "$SUITE" "$new/root" "$mirror" </dev/null >"$log" 2>&1; then
		tail -n 20 "$log" >&2
		die "debootstrap failed (see $log)"
	fi
	kdeb=$(ls "$new"/debs/linux-image-[0-9]*-arm64_*.deb 2>/dev/null | head -n1)
	bdeb=$(ls "$new"/debs/busybox-static_*.deb 2>/dev/null | head -n1)
	[[ -n $kdeb && -n $bdeb ]] || die "no kernel or busybox package fetched"
	mkdir -p "$new/kernel" "$new/busybox"
	dpkg-deb -x "$kdeb" "$new/kernel" && dpkg-deb -x "$bdeb" "$new/busybox" ||
		die "cannot unpack $kdeb or $bdeb"
	rel=$(ls "$new/kernel/lib/modules" | head -n1)
	cp "$new/kernel/boot/vmlinuz-$rel" "$new/vmlinuz" || die "no vmlinuz-$rel"
	make_initrd "$new/kernel" "$new/busybox" "$rel" "$new/initrd.img" ||
		die "cannot make the initramfs"
	# the kernel's modules in the root too, for what the machine loads
	# itself (depmod runs there at boot)
	mkdir -p "$new/root/lib/modules"
	cp -a "$new/kernel/lib/modules/$rel" "$new/root/lib/modules/"
	local in_vm=0
	stage2_chroot "$new/root" "$CACHE/stage2.log"
	case $? in
	0) ;;
	2) in_vm=1 ;;
	*) die "the second stage failed (see $CACHE/stage2.log)" ;;
	esac
	if ((in_vm)); then
		cp "$0" "$new/root/root/arm64-vm.sh"
	fi
	say "making the root image"
	mkimage "$new/root.img" 12G "$new/root" || die "mke2fs -d failed"
	rm -rf "$new/root" "$new/kernel" "$new/busybox" "$new/debs"
	if ((in_vm)); then
		say "no binfmt_misc here: second stage inside the machine (once;" \
			"log $CACHE/stage2.log)"
		local save=$CACHE
		CACHE=$new
		boot $((SECONDS + 4 * 3600)) "$save/stage2.log" "/^$PROG-guest:/p" \
			"tinspect.run=/root/arm64-vm.sh,--guest,stage2" \
			"file=$new/root.img,if=virtio,format=raw"
		CACHE=$save
	fi
	if ! debugfs -R "stat /var/lib/tinspect-arm64-ready" "$new/root.img" 2>/dev/null |
		grep -q '^Inode:'; then
		die "the second stage did not finish (see $CACHE/stage2.log)"
	fi
	mv "$new/vmlinuz" "$new/initrd.img" "$new/root.img" "$CACHE/"
	rmdir "$new"
	say "cached in $CACHE"
}

SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/tinspect-arm64.XXXXXX") || die "mktemp failed"
start=$SECONDS
mkdir -p "$CACHE"
exec 8>"$CACHE/lock"
flock -n 8 || die "another run uses $CACHE"
make_cache
top_up_root
((CACHE_ONLY)) && exit 0

# The build disk: the last run's tree and build/, or an empty one.
BUILD_IMG=$CACHE/build.img
((CLEAN)) && rm -f "$BUILD_IMG"
if [[ ! -f $BUILD_IMG ]]; then
	mke2fs -q -t ext4 -L build "$BUILD_IMG" 8G </dev/null >/dev/null 2>&1 ||
		{ rm -f "$BUILD_IMG"; die "cannot make the build disk"; }
fi

# The tree as it is now: tracked files and untracked ones not ignored.
mkdir -p "$SCRATCH/work/tinspect"
(cd "$top" && git ls-files -z --cached --others --exclude-standard |
	xargs -0 cp --parents -t "$SCRATCH/work/tinspect" 2>/dev/null) ||
	die "cannot copy the tree"
echo "$SCALE" >"$SCRATCH/work/time_scale"
if [[ -n $JOB ]]; then
	echo "$JOB" >"$SCRATCH/work/job.sh"
else
	echo "$SUITES" >"$SCRATCH/work/suites"
	((TESTS)) && : >"$SCRATCH/work/tests"
fi
if ((BENCH)); then
	echo "export SHARED_BENCH=/work/shared/bench" | cat - "$SCRATCH/work/job.sh" \
		>"$SCRATCH/work/job.new" && mv "$SCRATCH/work/job.new" "$SCRATCH/work/job.sh"
	sb=${SHARED_BENCH:-$top/../shared/bench}
	[[ -d $sb ]] || sb=/work/shared/bench
	[[ -r $sb/measure.sh ]] || die "no bench harness in $sb (set SHARED_BENCH)"
	mkdir -p "$SCRATCH/work/shared"
	cp -r "$sb" "$SCRATCH/work/shared/bench"
fi
# the guest's deadline, in seconds of its uptime: the host's, less a
# margin for the sync and power-off
echo $((start + TIMEOUT - SECONDS - 120)) >"$SCRATCH/work/budget"
mkimage "$SCRATCH/work.img" 6G "$SCRATCH/work" || die "cannot make the work image"
rm -rf "$SCRATCH/work"

if [[ -n $JOB ]]; then
	say "booting (job: $JOB; timeout ${TIMEOUT} s)"
else
	say "booting ($( ((TESTS)) && echo tests || echo suites): $SUITES; timeout ${TIMEOUT} s)"
fi
rc=0
boot $((start + TIMEOUT)) "$SCRATCH/console.log" \
	's/\r$//; /^\[ *[0-9]*\.[0-9]*\] /d; /^ *$/d; p' \
	"tinspect.run=/work/tinspect/tools/arm64-vm.sh,--guest,run" \
	"file=$CACHE/root.img,if=virtio,format=raw,snapshot=on" \
	"file=$SCRATCH/work.img,if=virtio,format=raw" \
	"file=$BUILD_IMG,if=virtio,format=raw" || rc=$?
if [[ -n $OUT ]]; then
	mkdir -p "$OUT"
	debugfs -R "rdump /out $OUT" "$SCRATCH/work.img" >/dev/null 2>&1 ||
		say "could not copy the logs out"
	cp "$SCRATCH/console.log" "$OUT/console.log"
fi
say "$((SECONDS - start)) s"
if ((rc == 124)); then
	echo "0 passed, 1 failed (timeout)"
	exit 1
fi
last=$(grep -a '^[0-9]* passed, [0-9]* failed' "$SCRATCH/console.log" | tail -n1)
if [[ -n $JOB ]]; then
	grep -aq "^$PROG-guest: job exit status 0" "$SCRATCH/console.log"
	exit $?
fi
[[ -n $last ]] || { echo "0 passed, 1 failed (no result from the machine)"; exit 1; }
[[ $last == *" 0 failed"* ]]
