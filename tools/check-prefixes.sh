#!/usr/bin/env bash
# check-prefixes.sh [BUILDDIR]: every global symbol of the static
# libraries libtinspect is made of carries its module's prefix.
#
# libtinspect is also a static library: whatever global symbol its objects
# define lands in the embedder's namespace.  An unprefixed `symbolize` or
# `read_whole_file` would collide with the embedder's own, and a
# `dwarf_find_tls` sits in libdw's namespace.  So: psvc_ in proc_service
# (and libthread_db's own ps_* ABI, which proc_service must define),
# dbs_ in dbsession, arch_ in arch, and in libtinspect's own objects the
# public tinspect_ and the internal tin_.  (agent/ is a program: its
# symbols reach no embedder, and are not checked.)  `meson test` runs
# this in the checks suite.
#
# Lists every defined global symbol (nm: text, data, bss, read-only,
# common, weak) that breaks the rule, per library, and exits 1 if there is
# any; prints "no unprefixed global symbols" otherwise.  Run after a build.
set -euo pipefail
build=${1:-build}
bad=0
# what AddressSanitizer adds beside each global variable (its one
# definition rule indicator, __odr_asan.NAME): the compiler's, not ours
sanitizer='^__odr_asan[._]'
check() {	# library, allowed-prefix regex
	local lib=$build/$1 re=$2
	if [[ ! -f $lib ]]; then
		echo "check-prefixes: $lib is not built" >&2
		bad=1
		return
	fi
	local syms
	syms=$(nm -g --defined-only "$lib" |
	       awk 'NF == 3 && $2 ~ /^[TDBRCVWGSi]$/ { print $3 }' |
	       grep -Ev "$re" | grep -Ev "$sanitizer" | sort -u || true)
	if [[ -n $syms ]]; then
		echo "$1:"
		sed 's/^/  /' <<<"$syms"
		bad=1
	fi
}
check proc_service/libtinspect-psvc.a '^(psvc_|ps_)'
check dbsession/libtinspect-dbsession.a '^dbs_'
check arch/libtinspect-arch.a '^arch_'
check libtinspect/libtinspect-api.a '^(tinspect_|tin_)'
if [[ $bad -eq 0 ]]; then
	echo "check-prefixes: no unprefixed global symbols in" \
	     "proc_service (psvc_, ps_), dbsession (dbs_), arch (arch_)," \
	     "libtinspect (tinspect_, tin_)"
fi
exit $bad
