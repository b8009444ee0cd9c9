#!/bin/sh
# expect_fail.sh - for ctest: a test that passes only when the command it wraps FAILS,
# as a test must when a fault is injected into the device (PXL_FAULT_INJECT): the
# inverted test proves that the wrapped one can fail, instead of skipping or passing.
#
#   expect_fail.sh [--want TEXT]... [--no-skip-if PATH]... -- COMMAND [ARG]...
#
# Exit status:
#   0   COMMAND failed with a status of its own (not 0, not 77 "skipped", not killed by a
#       signal or a sanitizer's crash) and its output holds every TEXT;
#   77  COMMAND skipped (exit 77): the device is absent, a legitimate skip - unless a
#       --no-skip-if PATH exists (e.g. /dev/nvidia0: the device is there, so a skip
#       would hide a broken driver), which fails;
#   1   otherwise: the fault went unnoticed (exit 0), crashed, skipped where it must not,
#       or failed without saying what was wanted.
# COMMAND's output is printed first, then one line saying which case this was.
set -u
wants=
noskip=
while [ $# -gt 0 ]; do
  case $1 in
  --want) wants="$wants
$2"; shift 2 ;;
  --no-skip-if) noskip="$noskip $2"; shift 2 ;;
  --) shift; break ;;
  *) echo "expect_fail.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "usage: expect_fail.sh [--want TEXT]... [--no-skip-if PATH]... -- COMMAND..." >&2; exit 2; }

out=$(mktemp "${TMPDIR:-/tmp}/expect_fail.XXXXXX") || exit 1
trap 'rm -f "$out"' EXIT
"$@" >"$out" 2>&1
rc=$?
cat "$out"
if [ $rc -eq 77 ]; then
  for p in $noskip; do
    if [ -e "$p" ]; then
      echo "expect_fail: FAIL: '$*' skipped (exit 77) although $p exists: a present device must fail, not skip"
      exit 1
    fi
  done
  echo "expect_fail: skipped: the device is absent"
  exit 77
fi
if [ $rc -eq 0 ]; then
  echo "expect_fail: FAIL: '$*' passed (exit 0): the injected fault went unnoticed"
  exit 1
fi
if [ $rc -ge 126 ]; then
  echo "expect_fail: FAIL: '$*' crashed or could not run (exit $rc) instead of failing cleanly"
  exit 1
fi
if grep -E -q "ERROR: (Address|Leak|Thread|Memory)Sanitizer|runtime error: " "$out"; then
  echo "expect_fail: FAIL: '$*' failed with a sanitizer report, not a clean failure"
  exit 1
fi
missing=0
old_ifs=$IFS
IFS='
'
for w in $wants; do
  if ! grep -F -q -e "$w" "$out"; then
    echo "expect_fail: FAIL: '$*' failed (exit $rc) without saying '$w'"
    missing=1
  fi
done
IFS=$old_ifs
[ $missing -eq 0 ] || exit 1
echo "expect_fail: ok: '$*' failed as it must (exit $rc)"
exit 0
