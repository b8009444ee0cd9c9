#!/bin/sh
# warnings_test.sh - the pxl command prints the library's warnings (pxl_take_warnings)
# as "pxl: warning: LINE" on standard error, every line, after loading the program, after
# the run and after the save. Runs a copy of the command whose pxl_take_warnings is the
# stub of warn_stub.c (two numbered lines per call).
#
# Usage: sh warnings_test.sh PATH/TO/pxl_warn_stub

PXL=$1
case $PXL in /*) ;; *) PXL=$(pwd)/$PXL ;; esac
T=$(mktemp -d "${TMPDIR:-/tmp}/pxl-warn.XXXXXX") || exit 2
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 2
fail=0
check() {
  if eval "$2"; then echo "ok - $1"; else echo "not ok - $1"; sed 's/^/#   stderr: /' err.txt; fail=1; fi
}
echo 'kernel u8 inv(image u8 in) { return 255 - in(0, 0); }' >inv.pxl
printf 'P5\n2 1\n255\n\000\377' >img.pgm

"$PXL" check inv.pxl >out.txt 2>err.txt
rc=$?
printf 'pxl: warning: call 1: first\npxl: warning: call 1: second\n' >want.txt
check "pxl check prints both lines of the load's warnings and nothing else" '[ $rc -eq 0 ] && cmp -s err.txt want.txt'

PXL_CACHE_DIR=$T/cache "$PXL" run inv.pxl --in img.pgm --out o.pgm --device ref >out.txt 2>err.txt
rc=$?
printf 'pxl: warning: call %d: %s\n' 1 first 1 second 2 first 2 second 3 first 3 second >want.txt
check "pxl run prints the warnings after the load, the run and the save, in order" '[ $rc -eq 0 ] && cmp -s err.txt want.txt'
[ $fail -eq 0 ]
