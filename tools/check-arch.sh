#!/usr/bin/env bash
# check-arch.sh [SRCDIR]: no architecture decision outside arch/.
#
# What differs between architectures is in the descriptors of arch/
# (struct arch_desc, one file per architecture); code elsewhere reads
# their fields or calls arch_*() and never asks which architecture it
# has, so that a new one is a new file in arch/ and not a hunt for
# `arch->id == ARCH_X86_64 ? 7 : 31`, which would silently give any other
# architecture aarch64's answer.  A decision is, in a C file outside
# arch/ (comments left out):
#   - a predefined host macro: __x86_64__, __aarch64__, __i386__, ...;
#   - an ELF machine: EM_X86_64, EM_AARCH64, EM_386, EM_ARM, ...;
#   - an architecture's enum arch_id (ARCH_X86_64, ARCH_AARCH64), except
#     as the argument of arch_by_id(), which only picks a descriptor;
#   - a comparison of an id (->id == / ->id !=).
# The places where one is right (what the host itself is, for the tests
# and fixtures that check host facts; tables of a C library's layouts
# keyed by architecture) are listed in tools/check-arch.allow, one file
# and token a line, each with its reason.  A listed place that no longer
# holds its token is an error too: the list only says what is true.
#
# Lists every offending line and exits 1; prints one line of counts
# otherwise.  `meson test` runs it in the checks suite.
set -uo pipefail
top=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
cd "$top" || exit 2
allow=tools/check-arch.allow
[[ -r $allow ]] || { echo "check-arch: $allow is missing" >&2; exit 2; }

pattern='\b__(x86_64|amd64|aarch64|i386|arm|riscv|powerpc64|s390x|mips)__\b|\bEM_(X86_64|AARCH64|386|ARM|RISCV|PPC|PPC64|S390|MIPS|SPARCV9|IA_64)\b|\bARCH_(X86_64|AARCH64)\b|->id *[!=]='

files=$(find . \( -name .git -o -name 'build*' -o -path ./arch \) -prune -o \
	-type f \( -name '*.c' -o -name '*.h' \) -print | sed 's|^\./||' | sort)

# file<TAB>line<TAB>token, one per decision found
hits=$(for f in $files; do
	# comments out (whole-line ones and /* */ or // at a line's end),
	# and arch_by_id(ARCH_*): choosing a descriptor decides nothing
	sed -E 's@/\*.*\*/@@g; s@^\s*(/\*|\*|//).*@@; s@//.*@@;
		s@arch_by_id\(ARCH_[A-Z0-9_]+\)@@g' "$f" |
	grep -noE "$pattern" | sed -E "s@ @@g; s@^([0-9]+):@$f\t\1\t@"
done)

bad=$(awk -F'\t' '
	FNR == NR {
		if ($0 ~ /^[[:space:]]*(#|$)/) next
		split($0, w, /[[:space:]]+/)
		if (w[3] == "") { printf "%s:%d: no reason given\n", FILENAME, FNR; next }
		ok[w[1] "\t" w[2]] = 1
		next
	}
	{
		if (($1 "\t" $3) in ok) { used[$1 "\t" $3] = 1; next }
		printf "%s:%s: %s\n", $1, $2, $3
	}
	END {
		for (k in ok) if (!(k in used)) {
			split(k, w, "\t")
			printf "%s: listed for %s, which it no longer has\n", w[1], w[2]
		}
	}' "$allow" <(printf '%s\n' "$hits" | sed '/^$/d'))
if [[ -n $bad ]]; then
	echo "check-arch: an architecture decided outside arch/ (read a field of struct arch_desc instead, or list the place in $allow with why):"
	sort <<<"$bad" | sed 's/^/  /'
	exit 1
fi
echo "check-arch: $(wc -l <<<"$files") files, $(printf '%s\n' "$hits" | sed '/^$/d' | wc -l) allowed places, no other architecture decision outside arch/"
