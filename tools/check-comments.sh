#!/usr/bin/env bash
# check-comments.sh [SRCDIR]: comments and docs say what they mean.
#
#   - no "issue N": a number in a tracker says nothing to the reader of
#     the code; the comment says what the problem was;
#   - no DESIGN.md, GLIBC-NOTES.md or other ../shared document: the code
#     and its docs cite the project's own docs/ only.
#
# Lists every line that breaks a rule and exits 1; prints one line of
# counts otherwise.  `meson test` runs it in the checks suite.
set -uo pipefail
top=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
cd "$top" || exit 2
files=$(find . \( -name .git -o -name 'build*' -o -name data -o -name corpus \) -prune -o \
	-type f \( -name '*.[ch]' -o -name '*.py' -o -name '*.sh' -o -name '*.md' \
	-o -name meson.build -o -name '*.[13]' -o -name '*.java' -o -name '*.map' \) -print |
	sort)
bad=$(grep -nE 'issue [0-9]|DESIGN\.md|GLIBC-NOTES\.md' $files |
	grep -v '^./tools/check-comments.sh:')
if [[ -n $bad ]]; then
	echo "check-comments: say what is meant, not a tracker's number nor a document of ../shared:"
	sed 's/^/  /' <<<"$bad"
	exit 1
fi
echo "check-comments: $(wc -l <<<"$files") files, no \"issue N\", no ../shared document"
