#!/bin/sh
# harness_test.sh - tests cli_test.sh's own bookkeeping: a skipped assertion is counted
# as skipped, not passed, the summary line reads "P passed, F failed, S skipped", and a
# failure makes the exit status 1.
#
# Usage: sh harness_test.sh SOURCE_DIR
#
# Runs cli_test.sh on a stand-in `pxl` that fails every command, with a PATH that has
# the tools the script uses but no C compiler (`cc`), so that its "generated C compiles"
# check is skipped and nearly every other check fails.

if [ $# -ne 1 ]; then
  echo "usage: sh harness_test.sh SOURCE_DIR" >&2
  exit 2
fi
SRC=$1
case $SRC in /*) ;; *) SRC=$(pwd)/$SRC ;; esac
T=$(mktemp -d "${TMPDIR:-/tmp}/pxl-harness.XXXXXX") || exit 2
trap 'rm -rf "$T"' EXIT
mkdir "$T/bin"
for tool in sh awk cat cmp cp date dd env grep head ln ls mkdir mktemp rm sed sleep tail tr wc; do
  p=$(command -v $tool) || { echo "harness_test.sh: no $tool" >&2; exit 2; }
  ln -s "$p" "$T/bin/$tool"
done
printf '#!/bin/sh\necho "stand-in pxl: failing" >&2\nexit 99\n' >"$T/fakepxl"
chmod +x "$T/fakepxl"

PATH=$T/bin sh "$SRC/tests/cli/cli_test.sh" "$T/fakepxl" "$SRC" >"$T/log" 2>&1
rc=$?
summary=$(tail -n 1 "$T/log")
nskip=$(grep -c '# SKIP' "$T/log")
nfail=$(grep -c '^not ok' "$T/log")
npass=$(grep '^ok' "$T/log" | grep -c -v '# SKIP')
fail=0
check() {
  if eval "$2"; then echo "ok - $1"; else echo "not ok - $1"; fail=1; fi
}
check "exit status 1 when checks fail (got $rc)" '[ $rc -eq 1 ]'
check "at least one check was skipped (no cc)" '[ "$nskip" -ge 1 ]'
check "summary is '$npass passed, $nfail failed, $nskip skipped' (got '$summary')" \
  '[ "$summary" = "$npass passed, $nfail failed, $nskip skipped" ]'
[ $fail -eq 0 ]
