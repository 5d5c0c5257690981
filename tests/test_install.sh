#!/usr/bin/env bash
# test_install.sh BUILDDIR - what `meson install` gives a user, checked from
# outside the source tree (TAP):
#   - the files: the program, libtinspect.so.0 and .a, the headers, the
#     pkg-config file, the man pages, the schema;
#   - the installed tinspect runs without ldconfig or LD_LIBRARY_PATH;
#   - the shared library exports only tinspect_* and libthread_db's ps_*
#     callbacks, the static archive defines no other global symbol, and
#     every exported function has its man page;
#   - the headers compile on their own as C99 (-pedantic) and as C++11;
#   - the installed examples/embed.c, built in a temporary directory with
#     `pkg-config --cflags --libs tinspect` (and --static), names the
#     deadlock of fx_lock_abba and of fx_lock_heap3 with their TIDs in
#     order, and says "no deadlock" of fx_lock_cond;
#   - tests/embed_dlopen.c, which dlopen()s libtinspect.so.0: with
#     RTLD_GLOBAL libthread_db works and the deadlock is found, with
#     RTLD_LOCAL libthread_db is reported unavailable (tinspect.h).
# Exit status 0 if every check passed.  The fixtures are started here and
# killed by PID whatever happens.
#
# In a sanitizer build (TINSPECT_SANITIZE, set by tests/meson.build to
# b_sanitize) the installed library is instrumented: the programs built
# against it here are built with the same -fsanitize, as an embedder of
# such a library must be.
set -uo pipefail

build=$(cd "${1:?usage: test_install.sh BUILDDIR}" && pwd)
src=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
fixtures=${FIXTURES:-$build/tests}
san=()
[[ ${TINSPECT_SANITIZE:-none} == none ]] || san=(-fsanitize="$TINSPECT_SANITIZE")
work=$(mktemp -d)
dest=$work/dest
fx_pids=()

cleanup() {
	local p
	for p in "${fx_pids[@]}"; do
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	rm -rf "$work"
}
trap cleanup EXIT

n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() {
	n=$((n + 1)) failed=$((failed + 1))
	echo "not ok $n - $1"
	[[ -z ${2:-} ]] || sed 's/^/# /' <<<"$2"
}
check() {	# description command...
	local d=$1 out
	shift
	if out=$("$@" 2>&1); then ok "$d"; else not_ok "$d" "$out"; fi
}

if ! out=$(meson install -C "$build" --destdir "$dest" --no-rebuild 2>&1 </dev/null); then
	echo "1..1"
	not_ok "meson install" "$out"
	exit 1
fi

# where the prefix and libdir went (/usr/local, lib/x86_64-linux-gnu on
# Debian), found from the pkg-config file
pc=$(find "$dest" -name tinspect.pc -path '*/pkgconfig/*' | head -1)
libdir=${pc%/pkgconfig/tinspect.pc}
prefix=$(sed -n 's/^prefix=//p' "$pc")
root=$dest$prefix
so=$libdir/libtinspect.so.0
ps_callbacks="ps_get_thread_area ps_getpid ps_lcontinue ps_lgetfpregs ps_lgetregs
ps_lsetfpregs ps_lsetregs ps_lstop ps_pcontinue ps_pdread ps_pdwrite
ps_pglobal_lookup ps_pstop ps_ptread ps_ptwrite"

# ---- the files -----------------------------------------------------------------
files_present() {
	local f missing=0
	for f in "$root/bin/tinspect" "$so" "$libdir/libtinspect.so" \
		"$libdir/libtinspect.a" "$root/include/tinspect/tinspect.h" \
		"$root/include/tinspect/version.h" "$root/include/tinspect/types.h" "$root/include/tinspect/session.h" \
		"$root/include/tinspect/snapshot.h" "$root/include/tinspect/thread.h" \
		"$root/include/tinspect/locks.h" "$root/share/man/man1/tinspect.1" \
		"$root/share/man/man3/tinspect.3" "$root/share/man/man3/tinspect_session.3" \
		"$root/share/man/man3/tinspect_snapshot.3" "$root/share/man/man3/tinspect_thread.3" \
		"$root/share/man/man3/tinspect_locks.3" \
		"$root/share/tinspect/schema/tinspect-snapshot.schema.json" \
		"$root/share/doc/tinspect/examples/embed.c"; do
		[[ -e $f ]] || { echo "missing ${f#"$dest"}"; missing=1; }
	done
	[[ $(readelf -d "$so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p') == libtinspect.so.0 ]] ||
		{ echo "soname is not libtinspect.so.0"; missing=1; }
	((!missing))
}
check "installed: program, libraries (soname libtinspect.so.0), headers, pkg-config, man pages, schema, example" files_present

# the program finds its library through its RUNPATH ($ORIGIN), no ldconfig
check "the installed tinspect runs without LD_LIBRARY_PATH" \
	env -u LD_LIBRARY_PATH "$root/bin/tinspect" --version

# ---- exported symbols -------------------------------------------------------------
# nm -D of the library without the symbol versions (name@@TINSPECT_0.1)
# and without the version nodes themselves (absolute symbols, "A")
so_exports() {
	nm -D --defined-only "$so" | awk '$(NF - 1) != "A" { sub(/@.*/, "", $NF); print }'
}
exports_public_only() {
	local bad
	bad=$(so_exports | awk '{print $NF}' |
		grep -v '^tinspect_' | grep -vxF -f <(tr -s ' \n' '\n' <<<"$ps_callbacks"))
	[[ -z $bad ]] || { echo "exported beyond the public API: $bad"; return 1; }
	# nm's output in a variable, not piped into grep -q: under pipefail
	# grep -q's early exit gives nm SIGPIPE and the pipeline fails
	local s dyn
	dyn=$(so_exports)
	for s in $ps_callbacks; do
		grep -q " T $s\$" <<<"$dyn" || { echo "$s not exported"; return 1; }
	done
	[[ $(grep -c ' T tinspect_' <<<"$dyn") -gt 100 ]] ||
		{ echo "too few tinspect_ functions"; return 1; }
}
check "nm -D of libtinspect.so: only tinspect_* and the ps_* callbacks" exports_public_only

# Every exported function has the symbol version of a named release node
# (libtinspect.map), none is unversioned.
exports_versioned() {
	local bad
	bad=$(objdump -T "$so" | awk '$2 == "g" && $4 != "*UND*" && $NF ~ /^(tinspect_|ps_)/ &&
		$(NF - 1) !~ /^TINSPECT_[0-9]+\.[0-9]+$/ { print $(NF - 1), $NF }')
	[[ -z $bad ]] || { echo "not in a TINSPECT_x.y node: $bad"; return 1; }
	[[ $(objdump -T "$so" | grep -c ' TINSPECT_0\.1 *tinspect_') -gt 100 ]] ||
		{ echo "too few tinspect_ functions in TINSPECT_0.1"; return 1; }
}
check "objdump -T of libtinspect.so: every export has a TINSPECT_x.y symbol version" exports_versioned

archive_public_only() {
	local bad
	bad=$(nm "$libdir/libtinspect.a" | awk 'NF == 3 && $2 ~ /^[A-TV-Z]$/ {print $3}' |
		grep -v '^tinspect_' | grep -vxF -f <(tr -s ' \n' '\n' <<<"$ps_callbacks"))
	[[ -z $bad ]] || { echo "global in the archive: $bad"; return 1; }
}
check "libtinspect.a defines no global symbol but tinspect_* and ps_*" archive_public_only

# The NAME sections of the installed section 3 pages: what man(1) and
# apropos find a function by.
man3_names() {
	local p
	for p in "$root"/share/man/man3/*.3; do
		[[ -L $p ]] || awk '/^\.SH/ { name = ($2 == "NAME"); next } name' "$p"
	done
}
every_function_documented() {
	local f missing="" names headers
	names=$(man3_names) || return 1
	headers=$(cat "$root"/include/tinspect/*.h) || return 1
	for f in $(so_exports | awk '$NF ~ /^tinspect_/ {print $NF}'); do
		grep -qw -- "$f" <<<"$names" || missing+=" $f"
		grep -qw -- "$f" <<<"$headers" || missing+=" $f(header)"
	done
	[[ -z $missing ]] || { echo "undocumented:$missing"; return 1; }
}
check "every exported function is declared in a header and named in a section 3 page's NAME" \
	every_function_documented

# Each page renders without a groff warning, and names no page of section
# 3 that is not installed.
man_pages_render() {
	local p out bad=0 ref
	for p in "$root"/share/man/man1/tinspect.1 "$root"/share/man/man3/*.3; do
		if [[ -L $p ]]; then	# a function's link to its page
			[[ -f $p ]] || { echo "${p##*/}: a dangling link"; bad=1; }
			continue
		fi
		out=$(groff -man -Tutf8 -ww -z "$p" 2>&1)
		[[ -z $out ]] || { echo "${p##*/}: $out"; bad=1; }
		for ref in $(grep -o 'tinspect[a-z_]* (3)' "$p" | sed 's/ (3)//' | sort -u); do
			[[ -e $root/share/man/man3/$ref.3 ]] ||
				{ echo "${p##*/}: no page $ref(3) is installed"; bad=1; }
		done
	done
	((!bad))
}
check "the man pages render without groff warnings; every tinspect*(3) they refer to is installed (a page, or a function's link to its page)" \
	man_pages_render

# ---- the headers, outside the tree ----------------------------------------------------
mkdir -p "$work/app"
cd "$work/app" || exit 1
export PKG_CONFIG_PATH=$libdir/pkgconfig PKG_CONFIG_SYSROOT_DIR=$dest
cflags=$(pkg-config --cflags tinspect) || not_ok "pkg-config --cflags tinspect"
for h in tinspect version types session snapshot thread locks; do
	echo "#include <tinspect/$h.h>" >"h_$h.c"
	cp "h_$h.c" "h_$h.cc"
	check "<tinspect/$h.h> alone: cc -std=c99 -Wall -Wextra -pedantic -Werror" \
		cc -std=c99 -Wall -Wextra -pedantic -Werror $cflags -c "h_$h.c" -o /dev/null
	check "<tinspect/$h.h> alone: c++ -std=c++11 -Wall -Wextra -pedantic -Werror" \
		c++ -std=c++11 -Wall -Wextra -pedantic -Werror $cflags -c "h_$h.cc" -o /dev/null
done

# ---- the example, built with pkg-config ---------------------------------------------------
cp "$root/share/doc/tinspect/examples/embed.c" .
check "embed.c builds: cc embed.c \$(pkg-config --cflags --libs tinspect)" \
	cc -std=gnu11 -Wall -Wextra -Werror "${san[@]}" embed.c \
	$(pkg-config --cflags --libs tinspect) -o embed
static_libs=$(pkg-config --static --libs tinspect | sed 's/-ltinspect\b/-l:libtinspect.a/')
check "embed.c builds against libtinspect.a: pkg-config --static" \
	cc -std=gnu11 -Wall -Wextra -Werror "${san[@]}" embed.c $cflags $static_libs \
	-o embed-static
cp "$src/embed_dlopen.c" .
check "embed_dlopen.c builds with pkg-config --cflags only (it links nothing of libtinspect)" \
	cc -std=gnu11 -Wall -Wextra -Werror "${san[@]}" embed_dlopen.c $cflags -ldl \
	-o embed_dlopen
static_exports_ps() {
	local s dyn
	dyn=$(nm -D embed-static) || return 1
	for s in $ps_callbacks; do
		grep -q " T $s\$" <<<"$dyn" || { echo "$s not in .dynsym"; return 1; }
	done
	[[ $(ldd embed-static) != *libtinspect* ]] || { echo "linked the .so"; return 1; }
}
check "the static embedder exports the ps_* callbacks (libthread_db finds them)" \
	static_exports_ps

# Start a fixture; sets fx_out (its stdout, complete after "ready").
fx_start() {	# name args...
	local name=$1
	shift
	fx_out=$work/$name.out
	mkfifo "$work/$name.in"
	"$fixtures/$name" "$@" <"$work/$name.in" >"$fx_out" 2>&1 &
	fx_pids+=($!)
	fx_pid=$!
	exec {fx_keep}>"$work/$name.in"	# stdin open: the fixture lives
	local i
	for ((i = 0; i < 1000; i++)); do
		grep -q '^ready' "$fx_out" && return 0
		grep -q '^error' "$fx_out" && break
		sleep 0.01
	done
	return 1
}

# "deadlock: a -> b -> ... -> a" for TIDs in cycle order, rotated to start
# at the smallest (the library lists each cycle from its smallest tid)
expect_cycle() {	# tid...
	local t=("$@") min=0 i line="deadlock:"
	for ((i = 1; i < ${#t[@]}; i++)); do
		((t[i] < t[min])) && min=$i
	done
	for ((i = 0; i <= ${#t[@]}; i++)); do
		((i)) && line+=" ->"
		line+=" ${t[(min + i) % ${#t[@]}]}"
	done
	echo "$line"
}

run_embed() {	# binary expected-line expected-status
	local out rc
	out=$(LD_LIBRARY_PATH=$libdir "./$1" "$fx_pid" 2>&1)
	rc=$?
	if [[ $out == "$2" && $rc == "$3" ]]; then
		return 0
	fi
	echo "expected \"$2\" (status $3), got \"$out\" (status $rc)"
	return 1
}

tid_of() { sed -n "s/^tid $1 //p" "$fx_out"; }

want=""
if fx_start fx_lock_abba; then
	want=$(expect_cycle "$(tid_of post-transfer)" "$(tid_of audit-ledger)")
	check "embed on fx_lock_abba: $want, status 1" run_embed embed "$want" 1
	check "embed (static) on fx_lock_abba: the same" run_embed embed-static "$want" 1
else
	not_ok "fx_lock_abba did not start" "$(cat "$fx_out")"
fi
# The dlopen()ing embedder: exit status 0, and output that matches the
# pattern.
run_dlopen() {	# global|local pattern
	local out rc
	out=$(./embed_dlopen "$1" "$so" "$fx_pid" 2>&1)
	rc=$?
	# shellcheck disable=SC2053  # $2 is a pattern
	[[ $out == $2 && $rc == 0 ]] && return 0
	echo "expected \"$2\" (status 0), got \"$out\" (status $rc)"
	return 1
}
if [[ -n ${want:-} ]]; then
	check "dlopen(libtinspect.so.0, RTLD_GLOBAL): libthread_db ok, $want" \
		run_dlopen global "tdb: ok"$'\n'"$want"
	# without libthread_db the wait-for graph may still be whole: only
	# the status is the point here
	check "dlopen(libtinspect.so.0, RTLD_LOCAL): libthread_db unavailable (no ps_* in the global scope), as tinspect.h says" \
		run_dlopen local "tdb: unavailable"$'\n''*'
fi
if fx_start fx_lock_heap3; then
	want=$(expect_cycle "$(tid_of stage-0)" "$(tid_of stage-1)" "$(tid_of stage-2)")
	check "embed on fx_lock_heap3 (a 3-cycle, in wait order): $want" \
		run_embed embed "$want" 1
else
	not_ok "fx_lock_heap3 did not start" "$(cat "$fx_out")"
fi
if fx_start fx_lock_cond; then
	check "embed on fx_lock_cond: no deadlock, status 0" run_embed embed "no deadlock" 0
else
	not_ok "fx_lock_cond did not start" "$(cat "$fx_out")"
fi
embed_no_process() {
	local p out rc
	sh -c 'exit 0' &
	p=$!
	wait "$p"
	out=$(LD_LIBRARY_PATH=$libdir ./embed "$p" 2>&1)
	rc=$?
	[[ $rc == 2 && $out == *"no such process"* ]] ||
		{ echo "got \"$out\" (status $rc)"; return 1; }
}
check "embed on a process that is gone: status 2, the library's message" \
	embed_no_process

echo "1..$n"
((failed == 0))
