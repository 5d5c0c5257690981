#!/bin/sh
# mkstatic.sh LD OBJCOPY AR OUT WORKDIR ARCHIVE... - libtinspect.a for
# embedders: every object of the library linked into one relocatable
# object, whose hidden symbols (everything but tinspect_* and ps_*, see
# -fvisibility=hidden in the meson files) are then made local.  An
# embedder linking it statically cannot collide with psvc_*, dbs_*,
# arch_* or any other internal name, nor bind to them.
set -eu
ld=$1 objcopy=$2 ar=$3 out=$4 work=$5
shift 5
mkdir -p "$work"
obj=$work/libtinspect.o
rm -f "$obj" "$out"
"$ld" -r -o "$obj" --whole-archive "$@" --no-whole-archive
"$objcopy" --localize-hidden "$obj"
"$ar" rcsD "$out" "$obj"
