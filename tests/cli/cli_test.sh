#!/bin/sh
# cli_test.sh - end-to-end tests of the `pxl` command (cli/pxl.c, docs/CLI.md).
#
# Usage: sh cli_test.sh PATH/TO/pxl SOURCE_DIR
#
# Works in a fresh temporary directory: writes small .pxl programs and 4x3 binary PGM
# images with printf (no PNG needed), runs pxl on them and checks exit codes, messages
# and the exact bytes of the outputs against values worked out by hand below. Prints
# "ok N - ..." / "not ok N - ..." / "ok N - ... # SKIP REASON" per assertion (with the
# command's stderr as "#" lines on failure), then "P passed, F failed, S skipped"; exits
# 1 if any failed, 77 (ctest's "skipped") if every assertion was skipped, else 0.

# Conditions are single-quoted on purpose: assert evaluates them after each command.
# shellcheck disable=SC2016,SC2034

if [ $# -ne 2 ]; then
  echo "usage: sh cli_test.sh PATH/TO/pxl SOURCE_DIR" >&2
  exit 2
fi
PXL=$1
SRC=$2
case $PXL in /*) ;; *) PXL=$(pwd)/$PXL ;; esac
case $SRC in /*) ;; *) SRC=$(pwd)/$SRC ;; esac
if [ ! -x "$PXL" ]; then
  echo "cli_test.sh: $PXL is not an executable" >&2
  exit 2
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/pxl-cli.XXXXXX") || exit 2
trap 'rm -rf "$T"' EXIT
trap 'exit 130' INT TERM
cd "$T" || exit 2
PXL_CACHE_DIR=$T/cache
export PXL_CACHE_DIR
mkdir -p "$PXL_CACHE_DIR"

# ---- harness ----

n=0
npass=0
nfail=0
nskip=0
rc=0

# px ARGS...: runs pxl; stdout in out.txt, stderr in err.txt, exit status in $rc.
px() {
  "$PXL" "$@" >out.txt 2>err.txt
  rc=$?
  last="pxl $*"
}

# assert DESCRIPTION CONDITION: evaluates the shell CONDITION and reports it.
assert() {
  n=$((n + 1))
  if eval "$2"; then
    npass=$((npass + 1))
    echo "ok $n - $1"
  else
    nfail=$((nfail + 1))
    echo "not ok $n - $1"
    echo "#   condition: $2"
    echo "#   last command: $last (exit $rc)"
    sed -n '1,15s/^/#   stdout: /p' out.txt 2>/dev/null
    sed -n '1,15s/^/#   stderr: /p' err.txt 2>/dev/null
  fi
}

# skip DESCRIPTION REASON
skip() {
  n=$((n + 1))
  nskip=$((nskip + 1))
  echo "ok $n - $1 # SKIP $2"
}

# has FILE TEXT: FILE contains the fixed string TEXT.
has() { grep -F -q -e "$2" "$1"; }

# nbytes FILE: the size of FILE in bytes.
nbytes() { wc -c <"$1" | tr -d ' '; }

# pgm_is FILE W H RAW: FILE is a binary PGM (P5) of W x H with maxval 255 whose pixels
# are the bytes of RAW. The header is compared token by token, so any whitespace works.
pgm_is() {
  [ -f "$1" ] || return 1
  np=$(($2 * $3))
  size=$(nbytes "$1")
  [ "$size" -gt "$np" ] || return 1
  hdr=$(dd if="$1" bs=1 count=$((size - np)) 2>/dev/null | tr -s ' \t\r\n' '    ')
  [ "$hdr" = "P5 $2 $3 255 " ] || return 1
  tail -c "$np" "$1" | cmp -s - "$4"
}

# ---- fixtures ----

# The 4x3 test image, rows:   0   1   2   3
#                            10  20  30  40
#                           100 200 254 255
printf 'P5\n4 3\n255\n\000\001\002\003\012\024\036\050\144\310\376\377' >img.pgm
cp img.pgm img.orig
# 255 - each pixel.
printf '\377\376\375\374\365\353\341\327\233\067\001\000' >inv.raw
# 255 - the 2x2 rectangle at (1, 1): 20 30 / 200 254.
printf '\353\341\067\001' >inv_roi.raw
# pixel > 100 ? 255 : 0.
printf '\000\000\000\000\000\000\000\000\000\377\377\377' >thr100.raw
# Sum of all pixels: 6 + 100 + 809; of the 2x2 rectangle at (1, 1): 20+30+200+254.
SUM=915
SUM_ROI=504
# Histogram of img.pgm: one count for each of its 12 distinct values.
awk 'BEGIN {
  split("0 1 2 3 10 20 30 40 100 200 254 255", v, " ")
  for (k in v) c[v[k]] = 1
  print "bin,count"
  for (i = 0; i < 256; i++) print i "," ((i in c) ? 1 : 0)
}' >hist.expected

cat >inv.pxl <<'EOF'
kernel u8 inv(image u8 in) { return 255 - in(0, 0); }
EOF
cat >thr.pxl <<'EOF'
kernel u8 thr(image u8 in, u8 t) { return in(0, 0) > t ? 255 : 0; }
EOF
cat >total.pxl <<'EOF'
reduce u64 total(image u8 in) = sum(in(0, 0));
EOF
cat >hist.pxl <<'EOF'
histogram[256] h(image u8 in) { bin(in(0, 0)); }
EOF
# A lexical error at line 2, column 16 (the '$').
cat >bad.pxl <<'EOF'
kernel u8 inv(image u8 in) {
  return 255 - $;
}
EOF
cat >prog.pxl <<'EOF'
kernel u8 box3(image u8 in) {
  int s = in(-1, -1) + in(0, -1) + in(1, -1)
        + in(-1, 0) + in(0, 0) + in(1, 0)
        + in(-1, 1) + in(0, 1) + in(1, 1);
  return (s + 4) / 9;
}
kernel u8 inv(image u8 in) { return 255 - in(0, 0); }
pipeline p(image u8 in) -> image u8 {
  image u8 b = box3(in : mirror);
  return inv(b);
}
EOF
printf '\211PNG\r\n\032\nthis is not a png at all \001\002\003' >garbage.png

# ---- help and version ----

px --help
assert "--help exits 0" '[ $rc -eq 0 ]'
assert "--help names every command" 'has out.txt "run" && has out.txt "check" && has out.txt "compile" && has out.txt "help"'
assert "--help documents exit codes 0-4" 'has out.txt "Exit status" && grep -q "^  0  success" out.txt && grep -q "^  1  " out.txt && grep -q "^  2  " out.txt && grep -q "^  3  " out.txt && grep -q "^  4  " out.txt'

px help
assert "pxl help shows the overview" '[ $rc -eq 0 ] && has out.txt "Exit status"'

px run --help
assert "pxl run --help documents every option" '[ $rc -eq 0 ] && has out.txt "--in" && has out.txt "--out" && has out.txt "--param" && has out.txt "--border" && has out.txt "--device" && has out.txt "--threads" && has out.txt "--fuse" && has out.txt "--no-fuse" && has out.txt "--unfused" && has out.txt "--roi" && has out.txt "--time" && has out.txt "--repeat"'

px help check
assert "pxl help check documents --explain" '[ $rc -eq 0 ] && has out.txt "--explain"'

px compile --help
assert "pxl compile --help documents -o" '[ $rc -eq 0 ] && has out.txt "-o"'

VERSION=$(sed -n 's/^#define PXL_VERSION_STRING "\(.*\)"$/\1/p' "$SRC/include/pxl/pxl.h")
px --version
assert "--version prints pxl $VERSION" '[ $rc -eq 0 ] && [ "$(cat out.txt)" = "pxl $VERSION" ] && [ -n "$VERSION" ]'

# ---- usage errors ----

px run inv.pxl --in img.pgm --out o1.pgm --bogus
assert "unknown option exits 2, names it and points to pxl run --help" '[ $rc -eq 2 ] && has err.txt "--bogus" && has err.txt "pxl run --help" && [ ! -e o1.pgm ]'

px frobnicate
assert "unknown command exits 2" '[ $rc -eq 2 ] && has err.txt "frobnicate"'

px
assert "no command exits 2" '[ $rc -eq 2 ]'

px run inv.pxl --in img.pgm --out
assert "option without its value exits 2" '[ $rc -eq 2 ] && has err.txt "--out"'

px run inv.pxl --in img.pgm --out o1.txt
assert "--out of an unknown file type exits 2 and writes nothing" '[ $rc -eq 2 ] && [ ! -e o1.txt ]'

px run inv.pxl --in img.pgm
assert "an image result without --out exits 2" '[ $rc -eq 2 ] && has err.txt "--out"'

px run inv.pxl --in img.pgm --in img.pgm --out o1.pgm
assert "two --in without NAME= exit 2" '[ $rc -eq 2 ] && [ ! -e o1.pgm ]'

px run inv.pxl --in img.pgm --out o1.pgm --roi 1,1,0
assert "malformed --roi exits 2" '[ $rc -eq 2 ] && has err.txt "--roi"'

px run inv.pxl --in img.pgm --out o1.pgm --device gpu9
assert "unknown --device exits 2" '[ $rc -eq 2 ] && has err.txt "gpu9"'

px run prog.pxl box3 --in img.pgm --border in=bogus --out o1.pgm
assert "an unknown --border mode is a usage error (exit 2) naming it" '[ $rc -eq 2 ] && has err.txt "--border in=bogus" && has err.txt "unknown border mode" && has err.txt "pxl run --help" && [ ! -e o1.pgm ]'

px run prog.pxl box3 --in nosuch.pgm --border 'in=constant(x)' --out o1.pgm
assert "a malformed constant(V) border is refused before any file is read (exit 2, not 3)" '[ $rc -eq 2 ] && has err.txt "constant(x)" && ! has err.txt "nosuch.pgm"'

px run prog.pxl box3 --in img.pgm --border 'in=constant(7)' --border in2=mirror101 --out o1.pgm --device ref
assert "well-formed --border modes pass the check (the unknown NAME in2 is a run-time error, exit 4)" '[ $rc -eq 4 ] && has err.txt "in2" && [ ! -e o1.pgm ]'

# One rule for options: a single-valued option given twice is a usage error naming it.
for dup in "--roi 0,0,1,1 --roi 0,0,2,2" "--threads 1 --threads 2" "--device cpu --device ref" "--fuse off --fuse all" \
  "--time --time" "--time-limit 5 --time-limit 6" "--repeat 2 --repeat 3"; do
  opt=$(echo "$dup" | sed 's/^-*\([a-z-]*\).*/\1/; s/^o$/out/')
  # shellcheck disable=SC2086
  px run inv.pxl --in img.pgm --out o1.pgm $dup
  assert "repeated option ($dup) exits 2 naming --$opt, runs nothing" '[ $rc -eq 2 ] && has err.txt "option '"'"'--$opt'"'"' is given twice" && [ ! -e o1.pgm ] && [ ! -e o2.pgm ]'
  rm -f o1.pgm o2.pgm
done
px check prog.pxl --explain --explain
assert "pxl check --explain twice exits 2" '[ $rc -eq 2 ] && has err.txt "option '"'"'--explain'"'"' is given twice"'
px compile prog.pxl -o gen_a --output gen_b
assert "pxl compile -o twice exits 2 and writes nothing" '[ $rc -eq 2 ] && has err.txt "option '"'"'--output'"'"' is given twice" && [ ! -e gen_a.c ] && [ ! -e gen_b.c ]'
px run prog.pxl box3 --in img.pgm --border in=clamp --border in=wrap --out o1.pgm
assert "--border NAME twice exits 2" '[ $rc -eq 2 ] && has err.txt "--border in is given twice" && [ ! -e o1.pgm ]'

for bad in 0 -1 abc 1e9 nan; do
  px run inv.pxl --in img.pgm --out o1.pgm --time-limit "$bad"
  assert "--time-limit $bad is a usage error (exit 2)" '[ $rc -eq 2 ] && has err.txt "--time-limit" && [ ! -e o1.pgm ]'
done

# ---- errors in files ----

px run nosuch.pxl --in img.pgm --out o1.pgm
assert "missing .pxl file exits 3 and names it" '[ $rc -eq 3 ] && has err.txt "nosuch.pxl" && [ ! -e o1.pgm ]'

px check nosuch.pxl
assert "pxl check of a missing file exits 3" '[ $rc -eq 3 ] && has err.txt "nosuch.pxl"'

px check bad.pxl
assert "syntax error exits 1 with bad.pxl:2:16: error:" '[ $rc -eq 1 ] && has err.txt "bad.pxl:2:16: error:"'

px run bad.pxl --in img.pgm --out o1.pgm
assert "pxl run of a bad kernel exits 1 and writes nothing" '[ $rc -eq 1 ] && has err.txt "bad.pxl:2:16: error:" && [ ! -e o1.pgm ]'

px run inv.pxl --in nosuch.pgm --out o1.pgm
assert "missing input image exits 3 and names it" '[ $rc -eq 3 ] && has err.txt "nosuch.pgm" && [ ! -e o1.pgm ]'

px run inv.pxl --in garbage.png --out o1.pgm
assert "corrupt image exits 3 and names it" '[ $rc -eq 3 ] && has err.txt "garbage.png" && [ ! -e o1.pgm ]'

px run inv.pxl nosuch_entry --in img.pgm --out o1.pgm
assert "unknown entry point exits 4" '[ $rc -eq 4 ] && has err.txt "nosuch_entry" && [ ! -e o1.pgm ]'

# ---- refusing to overwrite inputs ----

cp img.pgm in2.pgm
px run inv.pxl --in in2.pgm --out in2.pgm
assert "--out equal to --in exits 2 and leaves the input unchanged" '[ $rc -eq 2 ] && cmp -s in2.pgm img.orig'

px run inv.pxl --in in=in2.pgm --out ./in2.pgm
assert "--out naming the input by another path exits 2" '[ $rc -eq 2 ] && cmp -s in2.pgm img.orig'

ln -s in2.pgm link.pgm
px run inv.pxl --in in2.pgm --out link.pgm
assert "--out through a symbolic link to the input exits 2" '[ $rc -eq 2 ] && cmp -s in2.pgm img.orig && [ -L link.pgm ]'

mkdir -p sub
px run inv.pxl --in sub/none.pgm --out sub/../sub/none.pgm
assert "--out equal to a not-yet-existing --in exits 2" '[ $rc -eq 2 ] && [ ! -e sub/none.pgm ]'

cp inv.pxl kern.pgm
px run kern.pgm --in img.pgm --out kern.pgm
assert "--out equal to the kernel source exits 2 and leaves it unchanged" '[ $rc -eq 2 ] && cmp -s kern.pgm inv.pxl'

# ---- image results ----

px run inv.pxl --in img.pgm --out inv.pgm
assert "inverting kernel exits 0" '[ $rc -eq 0 ]'
assert "inverted image has the exact expected bytes" 'pgm_is inv.pgm 4 3 inv.raw'
assert "the input is unchanged by a run" 'cmp -s img.pgm img.orig'

px run inv.pxl inv --in in=img.pgm -o inv_named.pgm
assert "named --in and explicit ENTRY give the same image" '[ $rc -eq 0 ] && cmp -s inv.pgm inv_named.pgm'

px run inv.pxl --in img.pgm --out=inv_eq.pgm
assert "--out=PATH works like --out PATH" '[ $rc -eq 0 ] && cmp -s inv.pgm inv_eq.pgm'

px run inv.pxl --in img.pgm --out inv_roi.pgm --roi 1,1,2,2
assert "--roi runs on the rectangle only" '[ $rc -eq 0 ] && pgm_is inv_roi.pgm 2 2 inv_roi.raw'

px run inv.pxl --in img.pgm --out o1.pgm --roi 3,2,2,2
assert "--roi outside the image exits 4 and writes nothing" '[ $rc -eq 4 ] && has err.txt "--roi" && [ ! -e o1.pgm ]'

px run thr.pxl --in img.pgm --param t=100 --out thr.pgm
assert "--param binds a scalar" '[ $rc -eq 0 ] && pgm_is thr.pgm 4 3 thr100.raw'

# A pre-existing output (a 1x1 image) that failing runs must leave alone.
printf 'P5\n1 1\n255\n\007' >keep.pgm
cp keep.pgm keep.orig
px run thr.pxl --in img.pgm --param t=abc --out keep.pgm
assert "a --param value that is not a number is a usage error (exit 2) and leaves --out unchanged" '[ $rc -eq 2 ] && has err.txt "--param t=abc" && has err.txt "not a number" && cmp -s keep.pgm keep.orig'

px run thr.pxl --in nosuch.pgm --param t=abc --out keep.pgm
assert "a malformed --param is refused before any file is read (exit 2, not 3)" '[ $rc -eq 2 ] && ! has err.txt "nosuch.pgm"'

px run inv.pxl --in img.pgm
assert "an image result without --out is refused before running (exit 2)" '[ $rc -eq 2 ] && has err.txt "produces an image: give --out"'

px run thr.pxl --in img.pgm --param t=300 --out keep.pgm
assert "an out-of-range --param for a u8 exits 4, naming the parameter and type" '[ $rc -eq 4 ] && has err.txt "out of range for u8 parameter" && cmp -s keep.pgm keep.orig'

px run thr.pxl --in img.pgm --param t=2.5 --out keep.pgm
assert "a non-integer --param for an integer parameter exits 4" '[ $rc -eq 4 ] && has err.txt "not an integer" && cmp -s keep.pgm keep.orig'

px run thr.pxl --in img.pgm --param t=100 --param t=5 --out keep.pgm
assert "a repeated --param exits 2" '[ $rc -eq 2 ] && cmp -s keep.pgm keep.orig'

px run thr.pxl --in img.pgm --param q=100 --out keep.pgm
assert "an unknown parameter exits 4 and leaves --out unchanged" '[ $rc -eq 4 ] && cmp -s keep.pgm keep.orig'

px run inv.pxl --in img.pgm --out inv_t.pgm --time
assert "--time prints the run time in ms to stderr" '[ $rc -eq 0 ] && grep -q "^pxl: time: [0-9][0-9.]* ms$" err.txt && grep -q "^pxl: device: " err.txt && cmp -s inv.pgm inv_t.pgm'
px run inv.pxl --in img.pgm --out inv_r.pgm --time --repeat 4
assert "--repeat 4 runs four times: the best after the first, then the spread of the three; the result saved" '[ $rc -eq 0 ] && grep -q "^pxl: time: [0-9][0-9.]* ms$" err.txt && grep -q "^pxl: times: first [0-9.]* ms; of the 3 after it: best [0-9.]* ms, median [0-9.]* ms, worst [0-9.]* ms$" err.txt && cmp -s inv.pgm inv_r.pgm'
for bad in 0 -2 x 100001; do
  px run inv.pxl --in img.pgm --out o1.pgm --time --repeat "$bad"
  assert "--repeat $bad is a usage error (exit 2)" '[ $rc -eq 2 ] && has err.txt "--repeat needs a number of runs" && [ ! -e o1.pgm ]'
done
px run inv.pxl --in img.pgm --out o1.pgm --repeat 3
assert "--repeat without --time is a usage error (exit 2): it only times" '[ $rc -eq 2 ] && has err.txt "give --time too" && [ ! -e o1.pgm ]'

px run inv.pxl --in img.pgm --out inv_th.pgm --threads 2
assert "--threads 2 gives the same image" '[ $rc -eq 0 ] && cmp -s inv.pgm inv_th.pgm'

# fusion: examples/edges.pxl runs as 2 kernels instead of 5 (check --explain says so); the
# same bytes as written, fused on the CPU, and fused in the interpreter
px check "$SRC/examples/edges.pxl" --explain
assert "--explain prints edges.pxl's fusion plan" '[ $rc -eq 0 ] && has out.txt "2 kernels instead of 5" && has out.txt "threshold computes mag, gy, gx in its kernel"'
px run "$SRC/examples/edges.pxl" --in "$SRC/samples/shapes.png" --param t=40 --out e_ref.png --device ref
px run "$SRC/examples/edges.pxl" --in "$SRC/samples/shapes.png" --param t=40 --out e_all.png --device ref --fuse all
assert "--fuse all: the interpreter's fused kernels give the stages' bytes" '[ $rc -eq 0 ] && cmp -s e_ref.png e_all.png'
px run "$SRC/examples/edges.pxl" --in "$SRC/samples/shapes.png" --param t=40 --out e_cpu.png --device cpu
px run "$SRC/examples/edges.pxl" --in "$SRC/samples/shapes.png" --param t=40 --out e_off.png --device cpu --no-fuse
assert "fused and --no-fuse on the CPU give the interpreter's bytes" '[ $rc -eq 0 ] && cmp -s e_ref.png e_cpu.png && cmp -s e_ref.png e_off.png'
px run "$SRC/examples/edges.pxl" --in "$SRC/samples/shapes.png" --param t=40 --out e_keep.png --device cpu --unfused gx,magnitude
assert "--unfused gx,magnitude (a stage and a kernel's name) on the CPU gives the interpreter's bytes" '[ $rc -eq 0 ] && cmp -s e_ref.png e_keep.png'
px run "$SRC/examples/edges.pxl" --in "$SRC/samples/shapes.png" --param t=40 --out e_keep2.png --device cpu --unfused gz
assert "--unfused of a stage the pipeline lacks exits 4, names it and lists the stages, writes nothing" '[ $rc -eq 4 ] && has err.txt "no stage '"'"'gz'"'"'" && has err.txt "smooth, gx, gy, mag, threshold" && [ ! -e e_keep2.png ]'
px run "$SRC/examples/edges.pxl" --in "$SRC/samples/shapes.png" --param t=40 --out e_keep3.png --unfused "gx;rm"
assert "--unfused with a byte that is not part of a name is a usage error (exit 2)" '[ $rc -eq 2 ] && has err.txt "--unfused" && [ ! -e e_keep3.png ]'
px run "$SRC/examples/edges.pxl" --in "$SRC/samples/shapes.png" --param t=40 --out e_keep4.png --unfused "gx,,gy"
assert "--unfused with an empty name is a usage error (exit 2)" '[ $rc -eq 2 ] && [ ! -e e_keep4.png ]'
px run inv.pxl --in img.pgm --out o1.pgm --fuse sometimes
assert "--fuse with another mode exits 2 naming the modes, runs nothing" '[ $rc -eq 2 ] && has err.txt "auto, off or all" && [ ! -e o1.pgm ]'

# ---- devices ----

px run prog.pxl --in img.pgm --out p_cpu.pgm --device cpu
rc_cpu=$rc
px run prog.pxl --in img.pgm --out p_ref.pgm --device ref
assert "--device ref and --device cpu give byte-identical output" '[ $rc_cpu -eq 0 ] && [ $rc -eq 0 ] && [ -s p_cpu.pgm ] && cmp -s p_cpu.pgm p_ref.pgm'

px run prog.pxl p --in img.pgm --out p_named.pgm --device cpu
assert "the default entry is the last pipeline" '[ $rc -eq 0 ] && cmp -s p_cpu.pgm p_named.pgm'

px run inv.pxl --in img.pgm --out inv_ref.pgm --device ref
assert "--device ref inverts exactly" '[ $rc -eq 0 ] && pgm_is inv_ref.pgm 4 3 inv.raw'

# Fault injection: no C compiler, a compiler that fails. A fresh cache directory, so the
# kernel is not found already compiled.
mkdir -p nocc_cache
PXL_CACHE_DIR=$T/nocc_cache PXL_CC=/nonexistent/cc px run inv.pxl --in img.pgm --out inv_nocc.pgm --device cpu
assert "--device cpu without a C compiler exits 4 and says how to recover" '[ $rc -eq 4 ] && has err.txt "cannot run the C compiler" && has err.txt "--device ref" && [ ! -e inv_nocc.pgm ]'
# (CUDA_VISIBLE_DEVICES empty: on a GPU machine "auto" would pick the GPU, not the CPU)
CUDA_VISIBLE_DEVICES= PXL_CACHE_DIR=$T/nocc_cache PXL_CC=/nonexistent/cc px run inv.pxl --in img.pgm --out inv_auto.pgm
assert "--device auto without a C compiler falls back to the interpreter" '[ $rc -eq 0 ] && cmp -s inv.pgm inv_auto.pgm'
CUDA_VISIBLE_DEVICES= PXL_CACHE_DIR=$T/nocc_cache PXL_CC=/nonexistent/cc px run inv.pxl --in img.pgm --out inv_auto2.pgm --time
assert "--time names the device that ran after the fallback (ref), not the one picked (cpu)" '[ $rc -eq 0 ] && grep -q "^pxl: device: ref$" err.txt && cmp -s inv.pgm inv_auto2.pgm'
PXL_CACHE_DIR=$T/nocc_cache PXL_CC=false px run inv.pxl --in img.pgm --out inv_false.pgm --device cpu
assert "a failing C compiler exits 4 and names the generated file and its log" '[ $rc -eq 4 ] && has err.txt "the C compiler failed on generated code" && has err.txt ".log" && [ ! -e inv_false.pgm ]'


px run prog.pxl box3 --in img.pgm --border in=clamp --out b_cpu.pgm --device cpu
rc_cpu=$rc
px run prog.pxl box3 --in img.pgm --border in=clamp --out b_ref.pgm --device ref
assert "--border on a kernel run directly; cpu and ref agree" '[ $rc_cpu -eq 0 ] && [ $rc -eq 0 ] && [ -s b_cpu.pgm ] && cmp -s b_cpu.pgm b_ref.pgm'

# ---- time limit and signals ----

# A kernel that runs for ever in practice: n * n iterations per pixel (n = 2e9 gives
# 4e18), with a result that depends on each one. n = 1 first, so that the CPU backend
# compiles it (cached) outside the timed run.
cat >spin.pxl <<'EOF'
kernel u8 spin(image u8 in, i32 n) {
  int s = 0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      s = s ^ (i + j * in(0, 0));
  return s & 255;
}
EOF
px run spin.pxl --in img.pgm --param n=1 --out spin1.pgm --device cpu
assert "the endless kernel runs with n = 1" '[ $rc -eq 0 ] && [ -s spin1.pgm ]'
for dev in ref cpu; do
  t0=$(date +%s)
  px run spin.pxl --in img.pgm --param n=2000000000 --out spin.pgm --device $dev --time-limit 1.5
  t1=$(date +%s)
  assert "--time-limit 1.5 stops an endless kernel on $dev: exit 124 and the message" '[ $rc -eq 124 ] && [ "$(cat err.txt)" = "pxl: error: time limit of 1.5 s exceeded" ] && [ ! -e spin.pgm ] && [ $((t1 - t0)) -le 10 ]'
done
px run inv.pxl --in img.pgm --out inv_tl.pgm --time-limit 60
assert "a run within --time-limit succeeds" '[ $rc -eq 0 ] && cmp -s inv.pgm inv_tl.pgm'

# An incompressible 8000 x 8000 PNG: a save of about 64 MB that takes a second or more.
cat >noise.pxl <<'EOF'
kernel u8 noise(i32 n) size(n, n) {
  int v = x * 73856093 ^ y * 19349663;
  v = v ^ (v >> 13);
  v = v * 1274126177;
  return (v >> 16) & 255;
}
EOF
px run noise.pxl --param n=8 --out warm.png --device cpu
assert "the noise kernel runs (and is compiled before the timed runs)" '[ $rc -eq 0 ] && [ -s warm.png ]'

# tmp_files: the temporary files pxl left in the current directory.
tmp_files() { ls -a | grep '\.tmp'; }

# interrupt SIGNAL STATUS: starts a large save, sends SIGNAL once its temporary file
# exists, and checks that pxl died of SIGNAL and left neither the temporary file nor
# big.png. The signal's default action is restored first: a background job of a
# non-interactive shell starts with SIGINT ignored, which pxl rightly keeps.
interrupt() {
  want=$2
  rm -f big.png big.png.tmp*
  env --default-signal="$1" "$PXL" run noise.pxl --param n=8000 --out big.png --device cpu >out.txt 2>err.txt &
  pid=$!
  k=0
  while [ $k -lt 400 ] && kill -0 $pid 2>/dev/null && ! ls big.png.tmp* >/dev/null 2>&1; do
    sleep 0.05
    k=$((k + 1))
  done
  seen=0
  ls big.png.tmp* >/dev/null 2>&1 && seen=1
  kill -s "$1" $pid
  wait $pid
  rc=$?
  last="pxl run noise.pxl --param n=8000 --out big.png (SIG$1 during the save)"
  assert "SIG$1 during a save: pxl dies of the signal (status $2) and leaves no partial file" '[ $seen -eq 1 ] && [ $rc -eq $want ] && [ -z "$(tmp_files)" ] && [ ! -e big.png ]'
}
if env --default-signal=INT true 2>/dev/null; then
  interrupt TERM 143
  interrupt INT 130
  interrupt HUP 129
  # two images (saved all or none): SIGINT once the first is written under its temporary
  # name, while the second is being written
  cat >noise2.pxl <<'EOF'
kernel (u8 a, u8 b) noise2(i32 n) size(n, n) {
  int v = x * 73856093 ^ y * 19349663;
  v = v ^ (v >> 13);
  v = v * 1274126177;
  return ((v >> 16) & 255, (v >> 8) & 255);
}
EOF
  rm -f big1.png big2.png
  env --default-signal=INT "$PXL" run noise2.pxl --param n=6000 --out big1.png --out big2.png --device cpu >out.txt 2>err.txt &
  pid=$!
  k=0
  while [ $k -lt 600 ] && kill -0 $pid 2>/dev/null && ! ls big1.png.pxl-*.png >/dev/null 2>&1; do
    sleep 0.05
    k=$((k + 1))
  done
  seen=0
  ls big1.png.pxl-*.png >/dev/null 2>&1 && seen=1
  kill -s INT $pid
  wait $pid
  rc=$?
  last="pxl run noise2.pxl --out big1.png --out big2.png (SIGINT after the first image)"
  assert "SIGINT between two saved images: neither output written, no temporary file left" '[ $seen -eq 1 ] && [ $rc -eq 130 ] && [ -z "$(ls -a | grep "\.pxl-")" ] && [ -z "$(tmp_files)" ] && [ ! -e big1.png ] && [ ! -e big2.png ]'
else
  skip "signals during a save" "env has no --default-signal"
fi

rm -f big.png
px run noise.pxl --param n=8000 --out big.png --device cpu --time-limit 1
assert "--time-limit expiring during a save exits 124 and leaves no partial file" '[ $rc -eq 124 ] && has err.txt "time limit of 1 s exceeded" && [ -z "$(tmp_files)" ] && [ ! -e big.png ]'

# SIGTERM while the CPU backend's C compiler runs: the compiler (in a process group of its
# own, which a terminal's signal would not reach) and its partial output go with pxl
mkdir -p slowcc.cache
cat >slowcc.sh <<'EOS'
#!/bin/sh
# a C compiler that writes part of its output, records its pid and then takes a minute
out=""
while [ $# -gt 0 ]; do [ "$1" = -o ] && out=$2; shift; done
[ -n "$out" ] || { echo "slowcc 1.0"; exit 0; }
echo partial >"$out"
echo $$ >"$SLOWCC_PID"
exec sleep 60
EOS
chmod +x slowcc.sh
rm -f slowcc.pid
SLOWCC_PID=$PWD/slowcc.pid PXL_CC=$PWD/slowcc.sh PXL_CACHE_DIR=$PWD/slowcc.cache \
  "$PXL" run prog.pxl box3 --in img.pgm --out slow.pgm --device cpu >out.txt 2>err.txt &
pid=$!
k=0
while [ $k -lt 200 ] && [ ! -s slowcc.pid ]; do sleep 0.05; k=$((k + 1)); done
kill -s TERM $pid
wait $pid
rc=$?
sleep 0.2
cc_pid=$(cat slowcc.pid 2>/dev/null)
# running: listed and not a zombie (a killed child of the dead pxl waits for its reaper)
running() { st=$(ps -o stat= -p "$1" 2>/dev/null); [ -n "$st" ] && [ "${st#Z}" = "$st" ]; }
last="pxl run prog.pxl box3 with PXL_CC=slowcc.sh (SIGTERM while it compiles)"
assert "SIGTERM while the C compiler runs: pxl dies of it, the compiler is killed, its partial output removed" '[ -n "$cc_pid" ] && [ $rc -eq 143 ] && ! running "$cc_pid" && [ -z "$(ls slowcc.cache | grep -v "\.c$\|\.log$")" ] && [ ! -e slow.pgm ]'
[ -n "$cc_pid" ] && kill "$cc_pid" 2>/dev/null

# ---- reductions and histograms ----

px run total.pxl --in img.pgm
assert "reduction prints total = $SUM" '[ $rc -eq 0 ] && [ "$(cat out.txt)" = "total = $SUM" ]'

px run total.pxl total --in img.pgm --roi 1,1,2,2 --device ref
assert "reduction over --roi prints total = $SUM_ROI" '[ $rc -eq 0 ] && [ "$(cat out.txt)" = "total = $SUM_ROI" ]'

px run total.pxl --in img.pgm --out o2.pgm
assert "--out is ignored with a note for a reduction" '[ $rc -eq 0 ] && [ "$(cat out.txt)" = "total = $SUM" ] && has err.txt "note" && [ ! -e o2.pgm ]'

px run hist.pxl --in img.pgm
assert "histogram CSV has 257 lines" '[ $rc -eq 0 ] && [ "$(wc -l <out.txt | tr -d " ")" -eq 257 ]'
assert "histogram CSV starts with bin,count" '[ "$(sed -n 1p out.txt)" = "bin,count" ]'
assert "histogram CSV has the right counts" 'cmp -s out.txt hist.expected'

echo stale >h.csv
px run hist.pxl h --in img.pgm --out h.csv --device ref
assert "histogram --out FILE.csv writes the CSV there, not to stdout" '[ $rc -eq 0 ] && cmp -s h.csv hist.expected && [ ! -s out.txt ]'

# ---- check and compile ----

px check prog.pxl
assert "pxl check prints FILE: ok (3 entry points) and each entry's declaration" '[ $rc -eq 0 ] && [ "$(head -n 1 out.txt)" = "prog.pxl: ok (3 entry points)" ] && [ "$(sed -n 4p out.txt)" = "  pipeline p(image u8 in) -> image u8" ] && [ "$(wc -l < out.txt)" -eq 4 ]'

px check prog.pxl --explain
assert "pxl check --explain names P2P and N2P" '[ $rc -eq 0 ] && has out.txt "prog.pxl: ok" && has out.txt "P2P" && has out.txt "N2P"'

mkdir -p gen
px compile prog.pxl -o gen/prog
assert "pxl compile writes BASE.c and BASE.h and names them" '[ $rc -eq 0 ] && [ -s gen/prog.c ] && [ -s gen/prog.h ] && has out.txt "gen/prog.c" && has out.txt "gen/prog.h"'

# outputs honour the umask as any new file does (main made compiled C 0600, images 0644)
(umask 027 && "$PXL" compile prog.pxl -o gen/um027 >out.txt 2>err.txt && \
  "$PXL" run prog.pxl --in img.pgm --out gen/um027.pgm --device ref >>out.txt 2>>err.txt)
rc=$?
last="umask 027; pxl compile prog.pxl -o gen/um027; pxl run ... --out gen/um027.pgm"
assert "with umask 027, pxl compile writes 0640 files and pxl run a 0640 image" '[ $rc -eq 0 ] && [ "$(stat -c %a gen/um027.c)" = 640 ] && [ "$(stat -c %a gen/um027.h)" = 640 ] && [ "$(stat -c %a gen/um027.pgm)" = 640 ]'
(umask 077 && "$PXL" compile prog.pxl -o gen/um077 >out.txt 2>err.txt)
rc=$?
assert "with umask 077, pxl compile writes 0600 files" '[ $rc -eq 0 ] && [ "$(stat -c %a gen/um077.c)" = 600 ] && [ "$(stat -c %a gen/um077.h)" = 600 ]'

if command -v cc >/dev/null 2>&1; then
  cc -std=c11 -c -Igen gen/prog.c -o gen/prog.o >out.txt 2>err.txt
  rc=$?
  last="cc -std=c11 -c gen/prog.c"
  assert "the generated C compiles with cc -std=c11" '[ $rc -eq 0 ]'
else
  skip "the generated C compiles with cc -std=c11" "no cc"
fi

cp inv.pxl kern.c
cp inv.pxl kern.orig
px compile kern.c -o kern
assert "pxl compile refuses to overwrite its source" '[ $rc -eq 2 ] && cmp -s kern.c kern.orig'

px compile bad.pxl -o gen/bad
assert "pxl compile of a bad kernel exits 1 and writes nothing" '[ $rc -eq 1 ] && [ ! -e gen/bad.c ] && [ ! -e gen/bad.h ]'

# ---- typed image files (TIFF, .npy) ----

cat >neg.pxl <<'EOF'
kernel i16 neg(image u8 in) { return -in(0, 0); }
EOF
cat >negi.pxl <<'EOF'
kernel i16 negi(image i16 in) { return -in(0, 0); }
EOF
cat >half.pxl <<'EOF'
kernel f32 half(image u8 in) { return in(0, 0) * 0.5; }
EOF
# img.pgm as little-endian i16, and negated.
printf '\000\000\001\000\002\000\003\000\012\000\024\000\036\000\050\000\144\000\310\000\376\000\377\000' >img_i16.raw
printf '\000\000\377\377\376\377\375\377\366\377\354\377\342\377\330\377\234\377\070\377\002\377\001\377' >neg_i16.raw
# numpy.save's header dict for shape (3, 4) '<i2' (the header is 128 bytes in all)
NPY_DICT="{'descr': '<i2', 'fortran_order': False, 'shape': (3, 4), }"

px run --help
assert "pxl run --help lists .tif .tiff .npy for every type" 'has out.txt ".tif .tiff .npy (every type)"'

px run neg.pxl --in img.pgm --out neg.npy
assert "an i16 result saves as .npy with numpy's header and the exact pixels" '[ $rc -eq 0 ] && [ "$(nbytes neg.npy)" -eq 152 ] && [ "$(head -c 69 neg.npy | tail -c 59)" = "$NPY_DICT" ] && tail -c 24 neg.npy | cmp -s - neg_i16.raw'

px run neg.pxl --in img.pgm --out neg.TIF
assert "an i16 result saves as TIFF (extension in any case)" '[ $rc -eq 0 ] && [ "$(head -c 3 neg.TIF)" = "II*" ]'

px run negi.pxl --in neg.TIF --out back.npy
assert "an i16 TIFF loads as i16 and the result saves exactly" '[ $rc -eq 0 ] && tail -c 24 back.npy | cmp -s - img_i16.raw'

px run negi.pxl --in neg.npy --out back.tiff
assert "an i16 .npy loads as i16" '[ $rc -eq 0 ] && [ -s back.tiff ]'

px run "$SRC/examples/sobel3.pxl" --in "$SRC/samples/shapes.png" --out gx.tiff
assert "examples/sobel3.pxl (i16) saves to .tiff" '[ $rc -eq 0 ] && [ -s gx.tiff ]'

px run half.pxl --in does-not-exist.pgm --out half.png
assert "an f32 result to .png exits 2 before loading inputs or running, naming the reason" '[ $rc -eq 2 ] && has err.txt "half.png: PNG stores u8 or u16 images, not f32" && has err.txt "produces f32" && ! has err.txt "does-not-exist" && [ ! -e half.png ]'

px run neg.pxl --in img.pgm --out neg.jpg
assert "an i16 result to .jpg exits 2" '[ $rc -eq 2 ] && has err.txt "JPEG stores u8" && [ ! -e neg.jpg ]'

px run half.pxl --in img.pgm --out half.npy
assert "an f32 result saves as .npy" '[ $rc -eq 0 ] && [ "$(nbytes half.npy)" -eq 176 ]'

head -c 100 gx.tiff >cut.tif
px run negi.pxl --in cut.tif --out cut.npy
assert "a truncated TIFF input exits 3 with one message naming it (libtiff prints nothing)" '[ $rc -eq 3 ] && has err.txt "cut.tif: " && [ "$(wc -l <err.txt)" -eq 1 ] && [ ! -e cut.npy ]'

printf '\223NUMPY\001\000\020\000{"descr": 1}   \n' >bad.npy
px run negi.pxl --in bad.npy --out bad2.npy
assert "a malformed .npy header exits 3 naming the file" '[ $rc -eq 3 ] && has err.txt "bad.npy: invalid .npy header"'

# ---- array parameters (--param NAME=V,V,... and NAME=@FILE) ----

# lut4 maps each pixel by its low two bits: img.pgm & 3 is 0 1 2 3 / 2 0 2 0 / 0 0 2 3.
printf 'kernel u8 lut4(image u8 in, u8 m[4]) { return m[in(0, 0) & 3]; }\n' >arr.pxl
printf '\011\010\007\006\007\011\007\011\011\011\007\006' >lut9876.raw
printf '\011\010\000\000\000\011\000\011\011\011\000\000' >lut98.raw
printf '\377\000\002\004\002\377\002\377\377\377\002\004' >lutsat.raw
px run arr.pxl --in img.pgm --param m=9,8,7,6 --out lut.pgm
assert "--param m=9,8,7,6 binds an array parameter" '[ $rc -eq 0 ] && pgm_is lut.pgm 4 3 lut9876.raw'
printf ' 9 8\n7,\t6,\n' >vals.txt
px run arr.pxl --in img.pgm --param m=@vals.txt --out lutf.pgm
assert "--param m=@FILE reads numbers separated by commas and white space" '[ $rc -eq 0 ] && pgm_is lutf.pgm 4 3 lut9876.raw'
px run arr.pxl --in img.pgm --param m=9,8 --out lut2.pgm
assert "fewer values than elements leave the rest 0" '[ $rc -eq 0 ] && pgm_is lut2.pgm 4 3 lut98.raw'
px run arr.pxl --in img.pgm --param m=300,-5,2.5,3.5 --out lut3.pgm
assert "array values are converted as the language converts (saturated, ties to even)" '[ $rc -eq 0 ] && pgm_is lut3.pgm 4 3 lutsat.raw'
px run arr.pxl --in nosuch.pgm --param m=1,x --out keep.pgm
assert "a list with a value that is not a number exits 2 before any file is read" '[ $rc -eq 2 ] && has err.txt "value 2 of '"'"'m'"'"' is not a number" && ! has err.txt "nosuch.pgm" && cmp -s keep.pgm keep.orig'
px run arr.pxl --in img.pgm --param m=1,,2 --out keep.pgm
assert "an empty value in a list exits 2" '[ $rc -eq 2 ] && has err.txt "(empty)"'
px run arr.pxl --in img.pgm --param m=@nosuch.txt --out keep.pgm
assert "a missing @FILE exits 2 naming it" '[ $rc -eq 2 ] && has err.txt "m=@nosuch.txt"'
head -c 1048577 /dev/zero | tr '\000' ' ' >big.txt
px run arr.pxl --in img.pgm --param m=@big.txt --out keep.pgm
assert "an @FILE over 1 MiB exits 2" '[ $rc -eq 2 ] && has err.txt "larger than 1 MiB"'
printf '1 2\0003' >nul.txt
px run arr.pxl --in img.pgm --param m=@nul.txt --out keep.pgm
assert "an @FILE with a NUL byte exits 2" '[ $rc -eq 2 ] && has err.txt "not a text file"'
px run arr.pxl --in img.pgm --param m=1,2,3,4,5 --out keep.pgm
assert "more values than elements exit 4 naming the length" '[ $rc -eq 4 ] && has err.txt "has 4 elements" && cmp -s keep.pgm keep.orig'
px run arr.pxl --in img.pgm --out keep.pgm
assert "a missing array argument exits 4 and says how to give it" '[ $rc -eq 4 ] && has err.txt "--param m=V,V,..."'
px compile "$SRC/examples/equalize.pxl" -o eq_aot
assert "pxl compile refuses a pipeline with a histogram's bins as a value, naming it" '[ $rc -ne 0 ] && has err.txt "pxl compile writes pipelines of kernels only" && [ ! -e eq_aot.c ]'

# ---- kernels with several outputs: one --out per output, in order ----

cat >two.pxl <<'EOF'
kernel (u8 a, u8 b) split(image u8 in) { return (255 - in(0, 0), in(0, 0) > 100 ? 255 : 0); }
kernel (u8 a, i16 b) wide(image u8 in) { return (in(0, 0), -in(0, 0)); }
kernel u8 mx(image u8 a, image u8 b) { return max(a(0, 0), b(0, 0)); }
pipeline both(image u8 in) -> image u8 {
    (image u8 a, image u8 b) = split(in);
    return mx(a, b);
}
EOF
# max(255 - p, p > 100 ? 255 : 0) for the pixels of img.pgm.
printf '\377\376\375\374\365\353\341\327\233\377\377\377' >both.raw
for dev in ref cpu; do
  rm -f s1.pgm s2.pgm
  px run two.pxl split --in img.pgm --out s1.pgm --out s2.pgm --device $dev
  assert "two outputs saved to two --out files in order ($dev)" '[ $rc -eq 0 ] && pgm_is s1.pgm 4 3 inv.raw && pgm_is s2.pgm 4 3 thr100.raw'
done
px run two.pxl both --in img.pgm --out both.pgm --device cpu
assert "a pipeline reads both images of a tuple statement" '[ $rc -eq 0 ] && pgm_is both.pgm 4 3 both.raw'
rm -f s1.pgm s2.pgm s3.pgm
px run two.pxl split --in nosuch.pgm --out s1.pgm
assert "too few --out for a kernel with two outputs exits 2 before any file is read" '[ $rc -eq 2 ] && has err.txt "produces 2 images; give --out once for each" && ! has err.txt "nosuch.pgm" && [ ! -e s1.pgm ]'
px run two.pxl split --in img.pgm --out s1.pgm --out s2.pgm --out s3.pgm
assert "too many --out exits 2, writes nothing" '[ $rc -eq 2 ] && has err.txt "(--out is given 3 times)" && [ ! -e s1.pgm ] && [ ! -e s2.pgm ] && [ ! -e s3.pgm ]'
px run two.pxl wide --in nosuch.pgm --out s1.pgm --out s2.pgm
assert "an output type the file cannot store is refused before the run, naming the output" '[ $rc -eq 2 ] && has err.txt "as output '"'"'b'"'"' i16" && ! has err.txt "nosuch.pgm" && [ ! -e s1.pgm ]'
px run two.pxl split --in img.pgm --out s1.pgm --out ./s1.pgm
assert "the same file for two outputs exits 2" '[ $rc -eq 2 ] && has err.txt "is given twice (outputs 1 and 2)" && [ ! -e s1.pgm ]'
px run two.pxl split --in img.pgm --out s1.pgm --out img.pgm
assert "an --out that is an input is refused for every output" '[ $rc -eq 2 ] && has err.txt "same file as input" && cmp -s img.pgm img.orig'
for dup in "--out o2.pgm" "-o o2.pgm" "--out=o2.pgm"; do
  # shellcheck disable=SC2086
  px run inv.pxl --in img.pgm --out o1.pgm $dup
  assert "two --out for one output ($dup) exit 2, run nothing" '[ $rc -eq 2 ] && has err.txt "--out is given 2 times, but '"'"'inv'"'"' produces one image" && [ ! -e o1.pgm ] && [ ! -e o2.pgm ]'
  rm -f o1.pgm o2.pgm
done
printf 'old s1\n' >s1.pgm
px run two.pxl split --in img.pgm --out s1.pgm --out nosuchdir/s2.pgm --device cpu
assert "several outputs are saved all or none: a failed second leaves the first file as it was, no temporary file" '[ $rc -eq 3 ] && has err.txt "(no image saved)" && [ "$(cat s1.pgm)" = "old s1" ] && [ -z "$(ls -a | grep "\.pxl-")" ]'
rm -f s1.pgm
px compile two.pxl -o two_aot
assert "pxl compile writes a kernel with several outputs" '[ $rc -eq 0 ] && has two_aot.h "out: 2 images of the same size"'

cat >tworet.pxl <<'EOF'
kernel (u8 a, u8 b) split(image u8 in) { return (255 - in(0, 0), in(0, 0) > 100 ? 255 : 0); }
pipeline swap(image u8 in) -> (image u8, image u8) {
    (image u8 a, image u8 b) = split(in);
    return (b, a);
}
EOF
px run tworet.pxl swap --in img.pgm --out r1.pgm --out r2.pgm --device cpu
assert "a pipeline returning two images saves each to its --out, in order" '[ $rc -eq 0 ] && pgm_is r1.pgm 4 3 thr100.raw && pgm_is r2.pgm 4 3 inv.raw'
px compile tworet.pxl -o tworet_aot
assert "pxl compile refuses a pipeline returning several images, naming it" '[ $rc -ne 0 ] && has err.txt "pipeline '"'"'swap'"'"' returns 2 images" && [ ! -e tworet_aot.c ]'

# ---- summary ----

echo "$npass passed, $nfail failed, $nskip skipped"
if [ "$nfail" -ne 0 ]; then
  exit 1
elif [ "$npass" -eq 0 ] && [ "$nskip" -gt 0 ]; then
  exit 77
fi
exit 0
