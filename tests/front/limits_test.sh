#!/bin/sh
# limits_test.sh - the language's nesting limits (docs/LANGUAGE.md, Limits) are limits
# every backend accepts: a kernel at exactly the limits builds and runs on the CPU backend
# with gcc and with clang, on OpenCL (PoCL in CI) and through NVRTC, and gives the same
# image as the reference interpreter; one level more is refused by the front end.
#
# Usage: sh limits_test.sh PATH/TO/pxl [PATH/TO/nvrtc_test]
#
# The limits are found, not assumed: for each kind of expression (an operator chain, a
# right-nested sum, unary minus signs, nested ?:, nested calls) the deepest one that
# `pxl check` accepts is searched for, and the next one must be refused with "nested too
# deeply". The kernel at the limit nests 64 levels of statements (if, for, else if and
# { } in turn) and holds each of those expressions at its innermost level, where the
# generated code's brackets are deepest. A backend that is missing is skipped.

if [ $# -lt 1 ]; then
  echo "usage: sh limits_test.sh PATH/TO/pxl [PATH/TO/nvrtc_test]" >&2
  exit 2
fi
PXL=$1
NVRTC=${2:-}
case $PXL in /*) ;; *) PXL=$(pwd)/$PXL ;; esac
case $NVRTC in /* | '') ;; *) NVRTC=$(pwd)/$NVRTC ;; esac
T=$(mktemp -d "${TMPDIR:-/tmp}/pxl-limits.XXXXXX") || exit 2
trap '[ -n "$KEEP" ] || rm -rf "$T"' EXIT
cd "$T" || exit 2
PXL_CACHE_DIR=$T/cache
export PXL_CACHE_DIR

npass=0
nfail=0
nskip=0
ok() { npass=$((npass + 1)); echo "ok - $1"; }
notok() { nfail=$((nfail + 1)); echo "not ok - $1"; sed 's/^/#   /' err.txt 2>/dev/null | head -n 8; }
skip() { nskip=$((nskip + 1)); echo "ok - $1 # SKIP $2"; }

# expr KIND N: an expression of KIND whose nesting grows with N.
expr() {
  awk -v k="$1" -v n="$2" 'BEGIN {
    s = ""
    if (k == "chain") { s = "v"; for (i = 0; i < n; i++) s = s " + " (i % 5) }
    else if (k == "right") { for (i = 0; i < n; i++) s = s (i % 5) " + ("; s = s "v"; for (i = 0; i < n; i++) s = s ")" }
    else if (k == "neg") { for (i = 0; i < n; i++) s = s "- "; s = s "v" }
    else if (k == "cond") { for (i = 0; i < n; i++) s = s "v > " (i % 200) " ? ("; s = s "v"; for (i = 0; i < n; i++) s = s ") : " (i % 7) }
    else if (k == "call") { for (i = 0; i < n; i++) s = s "min(v + " (i % 5) ", "; s = s "v"; for (i = 0; i < n; i++) s = s ")" }
    print s
  }'
}

# simple KIND N: a kernel returning expr KIND N.
simple() {
  printf 'kernel u8 k(image u8 in) {\n  int v = in(0, 0);\n  v = %s;\n  return v & 255;\n}\n' "$(expr "$1" "$2")"
}

# deepest KIND: the largest N whose expression pxl check accepts (at most 1000).
deepest() {
  lo=0
  hi=1001
  while [ $((hi - lo)) -gt 1 ]; do
    mid=$(((lo + hi) / 2))
    simple "$1" $mid >probe.pxl
    if "$PXL" check probe.pxl >/dev/null 2>&1; then lo=$mid; else hi=$mid; fi
  done
  echo $lo
}

KINDS="chain right neg cond call"
for k in $KINDS; do
  n=$(deepest $k)
  eval "N_$k=$n"
  simple $k $((n + 1)) >over.pxl
  "$PXL" check over.pxl >out.txt 2>err.txt
  rc=$?
  if [ $n -ge 30 ] && [ $n -le 64 ] && [ $rc -eq 1 ] && grep -q "over.pxl:3:.*error: expression nested too deeply" err.txt; then
    ok "$k: depth $n is accepted, one level more refused with file:line:col"
  else
    notok "$k: depth $n is accepted, one level more refused (exit $rc)"
  fi
done

# The kernel at the limits: 64 statement levels around the deepest expressions. An
# else-if costs two levels (the if it follows opens one too), so the nest is built by
# counting levels.
{
  echo 'kernel u8 at_limit(image u8 in) {'
  echo '  int v = in(0, 0);'
  level=0
  closers=""
  i=0
  while [ $level -lt 64 ]; do
    case $((i % 4)) in
      0) echo "if (v > $((i % 50))) {"; level=$((level + 1)); closers="} $closers" ;;
      1) echo "for (int c$i = 0; c$i < 1; c$i++) {"; level=$((level + 1)); closers="} $closers" ;;
      2) if [ $level -le 62 ]; then
           echo "if (v < 0) { v = 0; } else if (v >= 0) {"; level=$((level + 2)); closers="} $closers"
         fi ;;
      3) echo "{"; level=$((level + 1)); closers="} $closers" ;;
    esac
    i=$((i + 1))
  done
  for k in $KINDS; do
    eval "n=\$N_$k"
    echo "v = $(expr $k "$n");"
    echo "v = v & 255;"
  done
  echo "$closers"
  echo '  return v;'
  echo '}'
} >at_limit.pxl

"$PXL" check at_limit.pxl >out.txt 2>err.txt && ok "the kernel at the limits passes pxl check" ||
  notok "the kernel at the limits passes pxl check"
# over_nest: the innermost statements (the lines "v = ...") wrapped in one more block
awk '{ lines[NR] = $0 } /^v = / { if (!first) first = NR; last = NR }
  END { for (i = 1; i <= NR; i++) { if (i == first) print "{"; print lines[i]; if (i == last) print "}" } }' \
  at_limit.pxl >over_nest.pxl
"$PXL" check over_nest.pxl >out.txt 2>err.txt
rc=$?
if [ $rc -eq 1 ] && grep -q "error: statements nested too deeply" err.txt; then
  ok "one more statement level is refused"
else
  notok "one more statement level is refused (exit $rc)"
fi

printf 'P5\n5 3\n255\n\000\001\002\003\004\012\024\036\050\062\144\310\376\377\200' >img.pgm
"$PXL" run at_limit.pxl --in img.pgm --out ref.pgm --device ref >out.txt 2>err.txt
if [ $? -eq 0 ] && [ -s ref.pgm ]; then ok "the kernel at the limits runs on ref"; else notok "the kernel at the limits runs on ref"; fi

# run_on NAME DEVICE [VAR=VALUE...]: runs the kernel at the limits on DEVICE with the
# environment VAR=VALUE... and compares the image with ref's.
run_on() {
  name=$1
  dev=$2
  shift 2
  env "$@" "$PXL" run at_limit.pxl --in img.pgm --out "$name.pgm" --device "$dev" >out.txt 2>err.txt
  rc=$?
  if [ $rc -eq 0 ] && cmp -s ref.pgm "$name.pgm"; then
    ok "the kernel at the limits builds on $name and equals ref"
  else
    notok "the kernel at the limits builds on $name and equals ref (exit $rc)"
  fi
}
run_on gcc cpu PXL_CC=gcc
if command -v clang >/dev/null 2>&1; then
  run_on clang cpu PXL_CC=clang
else
  skip "the kernel at the limits on clang" "no clang"
fi
# OpenCL: skipped when no device answers (exit 4 on a trivial kernel).
echo 'kernel u8 id(image u8 in) { return in(0, 0); }' >id.pxl
if "$PXL" run id.pxl --in img.pgm --out id.pgm --device opencl >/dev/null 2>&1; then
  run_on opencl opencl PXL_OPENCL_OPTIONS=-cl-opt-disable
else
  skip "the kernel at the limits on OpenCL" "no OpenCL device"
fi
if [ -n "$NVRTC" ]; then
  "$NVRTC" at_limit.pxl >err.txt 2>&1
  rc=$?
  if [ $rc -eq 77 ]; then
    skip "the kernel at the limits through NVRTC" "no NVRTC"
  elif [ $rc -eq 0 ]; then
    ok "the kernel at the limits compiles with NVRTC"
  else
    notok "the kernel at the limits compiles with NVRTC (exit $rc)"
  fi
fi

echo "$npass passed, $nfail failed, $nskip skipped"
[ $nfail -eq 0 ]
