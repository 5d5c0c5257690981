#!/usr/bin/env bash
# setup.sh - install what a fresh Debian 12 lacks, build, and either show
# tinspect on the bundled deadlocking example or run the whole test suite.
#
#   tools/setup.sh demo    install, build, run tinspect on examples/deadlock
#   tools/setup.sh test    install, build (warnings are errors), run the test
#                          suite, then again under ASan+UBSan, the snapshot,
#                          lock, inputs and watch suites with tinspect under
#                          valgrind, the fuzzers (tools/fuzz.sh) for a
#                          bounded time and the demo; prints "N skipped"
#                          (a skip is no pass), then "N passed, N failed"
#                          last, and exits non-zero on any failure
#   tools/setup.sh deps    only install the packages
#   tools/setup.sh build   install and build (build/)
#   tools/setup.sh services-deps
#                          install what bench/services.sh runs tinspect on
#                          (MariaDB, mysqlslap, OpenJDK, memcached and
#                          memaslap, db_bench, redis, node_exporter,
#                          eu-stack; their services not started): large,
#                          so not part of deps
#   tools/setup.sh services
#                          install all that, build, and run bench/services.sh
#   tools/setup.sh arm64-deps
#                          install what tools/arm64-vm.sh needs on this
#                          machine to make and boot the emulated arm64
#                          machine (qemu-system-aarch64, qemu-user for
#                          its second stage, debootstrap, e2fsprogs,
#                          cpio): not part of deps
#   tools/setup.sh mirror  print the Debian archive apt uses (see below)
#
# Run it as root (ptrace of other processes and apt-get need it), or as a
# user with sudo.  It never reads standard input.
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top"

# Everything the build, the tests and the demo use, by Debian package.
PACKAGES=(
	gcc g++ libc6-dev binutils pkg-config meson ninja-build
	libelf-dev libdw-dev libjansson-dev libcriterion-dev
	python3 python3-jsonschema util-linux procps
	# separate debug info of libc: source lines and internal symbols
	# (start_thread, clone3) in stacks
	libc6-dbg
	# --debuginfod (dlopen'ed; the hostile suite's signal test uses it)
	libdebuginfod1
	# the fuzzers (clang's libFuzzer runtime) and memcheck
	clang libclang-rt-14-dev valgrind
	# core files (tinspect --core): compressed cores as systemd-coredump writes
	# them; gcore, and the tools that compress the test cores
	libzstd-dev liblzma-dev liblz4-dev gdb zstd xz-utils lz4 time
	# the containers suite's Debian 11/12/13 roots (tools/roots.sh);
	# capsh tells the tests that need CAP_SYS_ADMIN whether they have it
	debootstrap libcap2-bin
	# the install suite (tests/test_install.sh): embedders built with
	# pkg-config, headers compiled as C++ (g++, above), man pages
	# rendered; libdw's pkg-config --static names -lbz2 (and -llzma,
	# -lz: above and below)
	groff-base libbz2-dev
	# --pprof: profile.proto compiled by protoc-c, packed by
	# libprotobuf-c, gzip'ed by zlib; and the consumers the formats suite
	# reads the files with: node_exporter's textfile collector, Python's
	# prometheus_client parser, go tool pprof; the go suite's Go fixtures
	# (go build) and the Go service it snapshots (node_exporter)
	protobuf-c-compiler libprotobuf-c-dev zlib1g-dev
	prometheus-node-exporter python3-prometheus-client golang-go
	# musl targets: the fixtures built with musl-gcc (docs/MUSL.md)
	musl-tools
)

# The real services bench/services.sh inspects.  MariaDB and a
# JDK are hundreds of megabytes: installed only when asked for.  And the
# healthy services under load: memcached under memaslap,
# rocksdb's db_bench, redis under redis-benchmark, node_exporter (ss, of
# iproute2, finds free ports).  Their packages' own services are not
# started on installation (services_install).
SERVICE_PACKAGES=(
	mariadb-server mariadb-client openjdk-17-jdk-headless
	elfutils python3 python3-jsonschema procps
	memcached libmemcached-tools rocksdb-tools redis-server redis-tools
	prometheus-node-exporter iproute2
)

# tools/arm64-vm.sh: the emulated arm64 machine the suites run
# on; its own packages are debootstrap'ed into its root, not installed here.
ARM64_HOST_PACKAGES=(
	qemu-system-arm qemu-user-static debootstrap debian-archive-keyring e2fsprogs cpio
	gzip git python3
)

as_root() {
	if [[ $(id -u) -eq 0 ]]; then
		"$@"
	else
		sudo -n "$@"
	fi
}

# Install the packages given that are missing.
install_missing() {	# package...
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
			missing+=("$p")
	done
	if ((${#missing[@]})); then
		echo "setup: installing ${missing[*]}"
		as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q </dev/null
		as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
			--no-install-recommends "${missing[@]}" </dev/null
	fi
}

# The service packages without starting their services (memcached,
# redis-server and mariadb-server start one on installation, which would
# outlive the benchmark and listen where nobody asked): invoke-rc.d asks
# /usr/sbin/policy-rc.d, which says no (101) while they install.  One that
# was already there is left as it was.
services_install() {
	local policy=/usr/sbin/policy-rc.d made=0
	if [[ ! -e $policy ]]; then
		as_root sh -c "printf '#!/bin/sh\nexit 101\n' >$policy && chmod 755 $policy" &&
			made=1
	fi
	local rc=0
	install_missing "${SERVICE_PACKAGES[@]}" || rc=$?
	((made == 0)) || as_root rm -f "$policy"
	return $rc
}

deps() {
	install_missing "${PACKAGES[@]}"
	old_glibc
	roots
	go_toolchains
}

# The Go toolchains Debian ships besides the system's (bookworm-backports',
# trixie's and its backports', unstable's golang-1.NN), unpacked once under
# /var/cache/tinspect/go by tools/gotoolchains.sh: the go suite builds a
# fixture with each and checks tinspect's Go frames against its go tool
# addr2line.  TINSPECT_NO_ROOTS=1 (tools/chroot-test.sh lends the host's)
# or a failure (no network) leaves them out: the suite then reads the
# system's Go only.
go_toolchains() {
	[[ ${TINSPECT_NO_ROOTS:-0} == 1 ]] && return 0
	as_root bash "$top/tools/gotoolchains.sh" ||
		echo "setup: some Go toolchains could not be fetched; the go" \
			"suite reads the binaries of the others" >&2
}

# Debian 11, 12 and 13 roots with a compiler (tools/roots.sh), made once and
# cached under /var/cache/tinspect/roots: the containers suite runs its
# fixtures in them, built with their own glibc.  TINSPECT_NO_ROOTS=1 (set by
# tools/chroot-test.sh, which lends the host's roots to its chroot) or a
# failure (no network) leaves them out: those tests then skip with a reason.
roots() {
	[[ ${TINSPECT_NO_ROOTS:-0} == 1 ]] && return 0
	[[ $(dpkg --print-architecture) == amd64 ]] || return 0
	as_root bash "$top/tools/roots.sh" bullseye bookworm trixie ||
		echo "setup: some Debian roots could not be made; the containers" \
			"tests that need them will be skipped" >&2
}

# Debian 11's glibc (2.31), unpacked (not installed) for the test of a
# target whose glibc is not the system's: a fixture is linked against it
# and run with its ld.so, and tinspect must load that glibc's own
# libthread_db.  apt-get fetches bullseye's libc6 through a private
# configuration: the system's sources, lists and state are left alone.
# Without it (no network, another architecture) that test is skipped.
OLD_GLIBC_DIR=${TINSPECT_OLD_GLIBC:-/var/cache/tinspect/glibc-2.31}
old_glibc() {
	[[ -f $OLD_GLIBC_DIR/lib/x86_64-linux-gnu/libc.so.6 ]] && return 0
	[[ $(dpkg --print-architecture) == amd64 ]] || return 0
	local tmp mirror
	if ! mirror=$(debian_mirror); then
		echo "setup: no Debian archive in the apt configuration; the" \
			"old-glibc test will be skipped" >&2
		return 0
	fi
	tmp=$(mktemp -d)
	mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial" "$tmp/dl"
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]" \
		"$mirror bullseye main" >"$tmp/sources.list"
	local apt=(-q -o "Dir::Etc::SourceList=$tmp/sources.list"
		-o Dir::Etc::SourceParts=/dev/null -o "Dir::State::Lists=$tmp/lists"
		-o "Dir::Cache=$tmp/cache" -o Dir::State::status=/dev/null
		-o APT::Sandbox::User=root)
	if as_root apt-get "${apt[@]}" update </dev/null >/dev/null &&
		(cd "$tmp/dl" && as_root apt-get "${apt[@]}" download libc6 </dev/null >/dev/null) &&
		as_root mkdir -p "$OLD_GLIBC_DIR.new" &&
		as_root dpkg-deb -x "$tmp"/dl/libc6_*.deb "$OLD_GLIBC_DIR.new" &&
		as_root mv -T "$OLD_GLIBC_DIR.new" "$OLD_GLIBC_DIR"; then
		echo "setup: Debian 11 glibc unpacked in $OLD_GLIBC_DIR"
	else
		echo "setup: could not fetch Debian 11's libc6; the old-glibc test" \
			"will be skipped" >&2
		as_root rm -rf "$OLD_GLIBC_DIR.new"
	fi
	as_root rm -rf "$tmp"
}

# The Debian archive this machine's apt uses (its URI, e.g. a local
# mirror's): the repository names no host.  From the deb822 sources
# (/etc/apt/sources.list.d/*.sources: "URIs:" of an enabled stanza of type
# deb whose "Suites:" holds the release's codename), else the one-line ones
# (sources.list, sources.list.d/*.list: "deb [options] URI SUITE ...").
# TINSPECT_APT_ETC and TINSPECT_CODENAME are for tests/test_setup.sh.
debian_mirror() {
	local etc=${TINSPECT_APT_ETC:-/etc/apt} codename=${TINSPECT_CODENAME:-}
	if [[ -z $codename ]]; then
		codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
	fi
	[[ -n $codename ]] || return 1
	local deb822=() oneline=() f
	for f in "$etc"/sources.list.d/*.sources; do
		[[ -f $f ]] && deb822+=("$f")
	done
	for f in "$etc"/sources.list "$etc"/sources.list.d/*.list; do
		[[ -f $f ]] && oneline+=("$f")
	done
	local uri=""
	if ((${#deb822[@]})); then
		uri=$(awk -v want="$codename" '
			function flush(   n, i, s, u) {
				if (!done && types ~ /(^|[ \t])deb([ \t]|$)/ &&
				    tolower(enabled) != "no") {
					n = split(suites, s, /[ \t]+/)
					for (i = 1; i <= n; i++)
						if (s[i] == want) {
							split(uris, u, /[ \t]+/)
							print u[1]
							done = 1
							break
						}
				}
				types = uris = suites = enabled = ""
			}
			FNR == 1 { flush() }
			/^[ \t]*#/ { next }
			/^[ \t]*$/ { flush(); next }
			{
				key = tolower($1)
				val = $0
				sub(/^[^:]*:[ \t]*/, "", val)
				sub(/[ \t]+$/, "", val)
				if (key == "types:") types = val
				else if (key == "uris:") uris = val
				else if (key == "suites:") suites = val
				else if (key == "enabled:") enabled = val
			}
			END { flush() }' "${deb822[@]}")
	fi
	if [[ -z $uri ]] && ((${#oneline[@]})); then
		uri=$(awk -v want="$codename" '
			$1 == "deb" {
				i = 2
				if (substr($i, 1, 1) == "[") {
					while (i <= NF && $i !~ /\]$/)
						i++
					i++
				}
				if ($(i + 1) == want) { print $i; exit }
			}' "${oneline[@]}")
	fi
	[[ -n $uri ]] || return 1
	echo "$uri"
}

build() {	# dir [meson options...]
	local dir=$1
	shift
	if [[ ! -f $dir/build.ninja ]]; then
		meson setup "$dir" -Dwerror=true "$@" </dev/null
	fi
	ninja -C "$dir" </dev/null
}

demo_pid="" demo_out=""
demo_end() {
	# under set -e: the example's wait status (137, it was killed) must
	# not become the demo's
	if [[ -n $demo_pid ]]; then
		kill -KILL "$demo_pid" 2>/dev/null || true
		wait "$demo_pid" 2>/dev/null || true
	fi
	[[ -z $demo_out ]] || rm -f "$demo_out"
}

# Exit status 0 when tinspect showed the example's report (complete or
# partial), non-zero otherwise.
demo() {
	deps
	build build
	demo_out=$(mktemp)
	trap demo_end EXIT
	build/examples/deadlock >"$demo_out" &
	demo_pid=$!
	local ready=0
	for _ in $(seq 500); do
		grep -q '^ready' "$demo_out" && ready=1 && break
		sleep 0.01
	done
	if ((!ready)); then
		echo "setup: examples/deadlock did not start" >&2
		return 1
	fi
	echo "setup: examples/deadlock runs as PID $demo_pid; tinspect $demo_pid says:"
	echo
	local rc=0
	as_root build/agent/tinspect "$demo_pid" || rc=$?
	if ((rc > 1)); then
		echo "setup: tinspect exited with status $rc" >&2
		return 1
	fi
}

# Sum the TAP results of a meson test run: prints "passed failed skipped";
# each skipped test, with the reason it gave, on stderr.
tap_counts() {	# builddir [log name]
	/usr/bin/python3 - "$1/meson-logs/${2:-testlog}.json" <<'EOF'
import json, re, sys
ok = bad = skipped = 0
with open(sys.argv[1]) as f:
    for line in f:
        t = json.loads(line)
        tap = [l for l in (t.get("stdout") or "").splitlines()
               if re.match(r"(not )?ok\b", l)]
        if not tap:                       # a test without TAP output
            if t.get("result") == "OK":
                ok += 1
            elif t.get("result") == "SKIP":
                skipped += 1
                print(f"setup: skipped: {t.get('name')}", file=sys.stderr)
            else:
                bad += 1
            continue
        # TAP: "not ok ... # TODO" is a known gap the test shows, neither
        # a pass nor a failure; "ok ... # SKIP reason" did not run: no pass
        failed = [l for l in tap if l.startswith("not ok") and
                  not re.search(r"#\s*TODO\b", l, re.I)]
        skips = [l for l in tap if l.startswith("ok") and
                 re.search(r"#\s*SKIP\b", l, re.I)]
        for l in skips:
            print(f"setup: skipped: {l[2:].strip(' -')}", file=sys.stderr)
        # what each failure said (criterion's YAML block under it), so
        # that a CI log tells why without the build's testlog
        lines = (t.get("stdout") or "").splitlines()
        for i, l in enumerate(lines):
            if l in failed:
                print(f"setup: FAILED: {t.get('name')}: {l}", file=sys.stderr)
                for d in lines[i + 1:i + 40]:
                    if re.match(r"(not )?ok\b", d):
                        break
                    print(f"setup:   {d}", file=sys.stderr)
        bad += len(failed)
        skipped += len(skips)
        ok += sum(1 for l in tap if l.startswith("ok")) - len(skips)
        # a crash after the last TAP line still fails the run
        if t.get("result") not in ("OK", "EXPECTEDFAIL", "SKIP") and not failed:
            bad += 1
print(ok, bad, skipped)
EOF
}

# What run_tests runs under valgrind, and the tests it leaves out there
# (criterion extglob: repeated captures, churn, signal storms); seconds of
# fuzzing per target.
VALGRIND_SUITES="snapshot locks inputs watch"
VALGRIND_SKIP="churning_threads|*mid_capture*|running_target_keeps_running"
VALGRIND_SKIP+="|heavy_contention_is_never_a_deadlock|one_cycle_among_3000_idle_threads"
VALGRIND_SKIP+="|sigterm_during_an_update*|exec_into_a_program_that_exits|exec_starts_a_new_session"
FUZZ_SECONDS=${TINSPECT_FUZZ_SECONDS:-30}

run_tests() {
	deps
	local passed=0 failed=0 skipped=0 rc=0 p f k dir
	for dir in build build-asan; do
		if [[ $dir == build-asan ]]; then
			build "$dir" -Db_sanitize=address,undefined -Db_lundef=false
		else
			build "$dir"
		fi
		echo "setup: meson test -C $dir"
		meson test -C "$dir" --print-errorlogs </dev/null || rc=1
		read -r p f k < <(tap_counts "$dir")
		passed=$((passed + p))
		failed=$((failed + f))
		skipped=$((skipped + k))
	done
	# (what `meson install` gives a user is the install suite, run above
	# in both builds: tests/test_install.sh)
	# tinspect under memcheck, in one-shot and watch mode; the tests
	# that repeat a capture tens of times, or wait out long sequences,
	# are left to the other runs: under valgrind each takes minutes
	echo "setup: meson test -C build --setup valgrind $VALGRIND_SUITES"
	# shellcheck disable=SC2086
	# one test at a time (-j1): the follow tests assume tinspect keeps up
	# with the target, which two valgrinds side by side on 2 cores do not
	meson test -C build --setup valgrind $VALGRIND_SUITES --print-errorlogs \
		--test-args="-j1 --filter=*/!($VALGRIND_SKIP)" </dev/null || rc=1
	read -r p f k < <(tap_counts build testlog-valgrind)
	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + k))
	# the fuzzers: each corpus once, then each target for a while
	local out
	echo "setup: tools/fuzz.sh $FUZZ_SECONDS"
	out=$(tools/fuzz.sh "$FUZZ_SECONDS" 2>&1 </dev/null) || rc=1
	echo "$out"
	if read -r p f < <(sed -n 's/^fuzz: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' <<<"$out") &&
		[[ -n $p ]]; then
		passed=$((passed + p))
		failed=$((failed + f))
	else
		failed=$((failed + 1))
		rc=1
	fi
	# a newcomer's first command: the demo exits 0 and shows the cycle
	echo "setup: tools/setup.sh demo"
	if out=$(bash tools/setup.sh demo 2>&1 </dev/null) &&
		grep -q "^Found one deadlock:" <<<"$out"; then
		passed=$((passed + 1))
	else
		echo "$out" | tail -20
		echo "setup: the demo failed" >&2
		failed=$((failed + 1))
		rc=1
	fi
	# A stopped process of ours left behind is a bug to report.
	local stopped="" pid stat exe
	while read -r pid stat; do
		[[ $stat == [Tt]* ]] || continue
		exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || continue
		[[ $exe == "$top"/* ]] && stopped+=" $pid($exe)"
	done < <(ps -eo pid=,stat=)
	if [[ -n $stopped ]]; then
		echo "setup: processes left stopped: $stopped" >&2
		failed=$((failed + 1))
		rc=1
	fi
	((failed == 0)) || rc=1
	# MariaDB under load, a 500-thread JVM and CPython take minutes and
	# hundreds of megabytes of packages: run by hand
	echo "setup: bench/services.sh (real services) is not part of this run;" \
		"run tools/setup.sh services"
	# skips are no passes: counted apart, on the line before the summary
	echo "setup: $skipped skipped"
	echo "$passed passed, $failed failed"
	return $rc
}

case ${1:-} in
demo) demo ;;
mirror) debian_mirror ;;
test) run_tests ;;
deps) deps ;;
build) deps; build build ;;
services-deps) services_install ;;
arm64-deps) install_missing "${ARM64_HOST_PACKAGES[@]}" ;;
services)
	deps
	build build
	services_install
	exec bash "$top/bench/services.sh"
	;;
*)
	sed -n '2,28p' "$0"
	exit 2
	;;
esac
