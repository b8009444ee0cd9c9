#!/bin/sh
# aot_safe.sh PXL SOURCE_DIR - `pxl compile` output is safe to build and clean.
#
# 1. Every example and tests/diff/semantics.pxl compiles with -std=c11 -Wall -Wextra
#    -Werror under gcc and clang, with and without -fopenmp.
# 2. A source file under hostile directory names (`*/` across a separator, newlines with
#    C code that would define a symbol and exit(99) from a constructor, `#include`,
#    backslash-newline, a trigraph, bytes that are not UTF-8), written to an output base
#    name with a quote, a backslash and spaces, and holding entry names that are C
#    keywords, C library names and macros, the generated code's and the prelude's own
#    symbols, k beside k_size and a 63-character name (the language's longest): the generated C compiles
#    warning-free under both compilers, the injected code is absent, and every entry
#    gives the interpreter's result (`pxl run --device ref`).
# 3. Two generated headers in one file and two generated .c files in one program: the
#    same edges.pxl written to two base names, plus blur3.pxl.
# Exits 0 when all pass, 77 (skipped) without gcc or clang.
set -u
PXL=$1
SRC=$2
for cc in gcc clang; do
  command -v $cc >/dev/null 2>&1 || { echo "skipped: no $cc"; exit 77; }
done
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
failed=0
passed=0
ok() { echo "ok $1"; passed=$((passed + 1)); }
bad() { echo "FAIL $1"; failed=$((failed + 1)); }
WARN="-std=c11 -O1 -Wall -Wextra -Werror"

# ---- 1. warning-free ----
# (PXL_TEST_QUICK=1, the sanitizer build, where only `pxl compile` runs instrumented: gcc
# without OpenMP; the release suite ran the four)
CCS="gcc clang" OMPS="_ -fopenmp"
case "${PXL_TEST_QUICK:-0}" in 0 | "") ;; *) CCS=gcc OMPS=_ ;; esac
mkdir "$T/w"
for f in "$SRC"/examples/*.pxl "$SRC/tests/diff/semantics.pxl" "$SRC/tests/diff/tables.pxl" "$SRC/tests/diff/params.pxl"; do
  b=$(basename "$f" .pxl)
  sed 's/BORDER/clamp /g' "$f" >"$T/w/$b.pxl"
  if ! "$PXL" compile "$T/w/$b.pxl" -o "$T/w/$b" >/dev/null 2>"$T/w/err"; then
    # pipelines that pass reductions or histograms as values, pipelines returning several
    # images (resample.pxl's gauss_pyramid) and global operators (graph.pxl) are refused
    # by design
    if grep -q "pxl compile writes pipelines of kernels only\|pxl compile writes pipelines that return one\|not in the C that pxl compile writes" "$T/w/err" &&
      [ ! -e "$T/w/$b.c" ]; then
      ok "$b: refused (a pipeline with values or several images, a global operator), nothing written"
    else
      bad "compile $b"
      cat "$T/w/err"
    fi
    continue
  fi
  for cc in $CCS; do
    for omp in $OMPS; do
      [ "$omp" = _ ] && omp=
      if $cc $WARN $omp -c "$T/w/$b.c" -o "$T/w/$b.o" 2>"$T/w/log" &&
        $cc $WARN $omp -fsyntax-only -x c "$T/w/$b.h" 2>>"$T/w/log"; then
        ok "$b: $cc $omp -Wall -Wextra -Werror"
      else
        bad "$b: $cc $omp -Wall -Wextra -Werror"
        head -5 "$T/w/log"
      fi
    done
  done
done

# ---- 2. hostile paths and names ----
NL='
'
LONG=$(printf 'a%.0s' $(seq 63))
D1="$T/a*"
D2="$D1/${NL}#ifndef PXL_INJ${NL}#define PXL_INJ${NL}#include <stdlib.h>${NL}int pxl_injected_symbol = 1;${NL}__attribute__((constructor)) static void pxl_injected(void) { exit(99); }${NL}#endif${NL}"
D3="$D2/*c??\\${NL}int pxl_injected_splice = 1; $(printf '\377\376') \\${NL}#include \"x\""
mkdir -p "$D3" || { bad "mkdir hostile directories"; exit 1; }
sed "s/LONGNAME/$LONG/" "$SRC/tests/aot/hostile.pxl" >"$D3/hostile.pxl"
echo "kernel u8 $LONG(image u8 in) { return in(2, 0); }" >>"$D3/hostile.pxl"
OB="$D3/we\"ird name-1\\"
if "$PXL" compile "$D3/hostile.pxl" -o "$OB" >/dev/null; then ok "pxl compile hostile"; else bad "pxl compile hostile"; fi
H="$T/h"
mkdir "$H"
cp "$OB.c" "$H/gen.c" && cp "$OB.h" "$H/hb.h" || bad "generated files present"
# the path may appear in a comment, escaped, but none of its lines may become code
if grep -q '^#ifndef PXL_INJ\|^int pxl_injected\|^__attribute__' "$H/gen.c" "$H/hb.h"; then
  bad "no line of the path in the output"
else
  ok "no line of the path in the output"
fi
python3 -c "
import random; random.seed(7); w, h = 37, 23
open('$H/in.pgm', 'wb').write(b'P5\n%d %d\n255\n' % (w, h) + bytes(random.randrange(256) for _ in range(w * h)))"
# the exported names: the base name as an identifier (each other byte as _), an underscore,
# the entry name
P=we_ird_name_1__
KERNELS="int free NAN pxlc_image main k k_size pxr_add_i32 PXR_FN pxlc_threads INFINITY _Bool __x stdin $LONG"
{
  cat <<EOF
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include "hb.h"
static unsigned char *pix;
static int W, H;
static int load(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f || fscanf(f, "P5 %d %d 255", &W, &H) != 2 || fgetc(f) != '\n') return -1;
  pix = malloc((size_t)W * H);
  int rc = fread(pix, 1, (size_t)W * H, f) == (size_t)W * H ? 0 : -1;
  fclose(f);
  return rc;
}
typedef int (*kernel_fn)(const pxlc_image *, const pxlc_scalar *, pxlc_image *, int);
static int run(kernel_fn f, const char *name, const char *dir) {
  pxlc_image in = {pix, W, H, W}, out = {NULL, 0, 0, 0};
  pxlc_scalar sc[1];
  sc[0].i = 100;
  if (f(&in, sc, &out, 0) != 0 || out.data) return 1; /* size query */
  out.pitch = out.width + 5;
  out.data = calloc((size_t)out.pitch, (size_t)out.height);
  if (!out.data || f(&in, sc, &out, 0) != 0) return 1;
  char path[512];
  snprintf(path, sizeof path, "%s/%s.pgm", dir, name);
  FILE *o = fopen(path, "wb");
  if (!o) return 1;
  fprintf(o, "P5\n%d %d\n255\n", (int)out.width, (int)out.height);
  for (int y = 0; y < out.height; y++) fwrite((char *)out.data + (size_t)y * (size_t)out.pitch, 1, (size_t)out.width, o);
  fclose(o);
  free(out.data);
  return 0;
}
int main(int argc, char **argv) {
  if (argc < 3 || load(argv[1])) return 2;
  int rc = 0;
EOF
  for k in $KERNELS; do echo "  rc |= run($P$k, \"$k\", argv[2]);"; done
  cat <<EOF
  pxlc_image in = {pix, W, H, W};
  pxlc_scalar res;
  int32_t pos[2];
  ${P}memset(&in, NULL, &res, pos, 0);
  printf("memset = %lld\n", (long long)res.i);
  int64_t bins[16];
  ${P}omp_get_thread_num(&in, NULL, bins, 0);
  printf("bin,count\n");
  for (int b = 0; b < 16; b++) printf("%d,%lld\n", b, (long long)bins[b]);
  return rc;
}
EOF
} >"$H/drv.c"
for k in $KERNELS; do
  case $k in int | stdin) t="--param t=100" ;; *) t= ;; esac
  "$PXL" run "$D3/hostile.pxl" "$k" --in "$H/in.pgm" --out "$H/ref_$k.pgm" $t --device ref >/dev/null ||
    bad "pxl run --device ref $k"
done
{
  "$PXL" run "$D3/hostile.pxl" memset --in "$H/in.pgm" --device ref
  "$PXL" run "$D3/hostile.pxl" omp_get_thread_num --in "$H/in.pgm" --device ref
} >"$H/ref.txt"
for cc in gcc clang; do
  for omp in "" -fopenmp; do
    what="hostile: $cc $omp"
    rm -rf "$H/out" && mkdir "$H/out"
    if ! $cc $WARN $omp -ffp-contract=off -c "$H/gen.c" -o "$H/gen.o" 2>"$H/log" ||
      ! $cc $WARN $omp -c "$H/drv.c" -o "$H/drv.o" 2>>"$H/log" ||
      ! $cc $omp "$H/drv.o" "$H/gen.o" -o "$H/drv" -lm 2>>"$H/log"; then
      bad "$what: builds with -Wall -Wextra -Werror"
      head -5 "$H/log"
      continue
    fi
    ok "$what: builds with -Wall -Wextra -Werror"
    if nm "$H/gen.o" | grep -q pxl_injected; then bad "$what: no injected symbol"; else ok "$what: no injected symbol"; fi
    "$H/drv" "$H/in.pgm" "$H/out" >"$H/got.txt"
    rc=$?
    if [ $rc -ne 0 ]; then
      [ $rc -eq 99 ] && echo "  exit 99: the injected code ran"
      bad "$what: runs (exit $rc)"
      continue
    fi
    same=1
    for k in $KERNELS; do
      cmp -s "$H/out/$k.pgm" "$H/ref_$k.pgm" || { same=0; echo "  differs: $(printf %.20s "$k")"; }
    done
    cmp -s "$H/got.txt" "$H/ref.txt" || { same=0; echo "  differs: reduction or histogram"; }
    if [ $same = 1 ]; then ok "$what: every entry == interpreter"; else bad "$what: every entry == interpreter"; fi
  done
done

# the path alone, with a plain source and base name: the injected constructor must not run
cp "$SRC/examples/binarize.pxl" "$D3/b.pxl"
if "$PXL" compile "$D3/b.pxl" -o "$H/plain" >/dev/null && echo 'int main(void) { return 0; }' >"$H/m.c" &&
  gcc -std=c11 "$H/m.c" "$H/plain.c" -o "$H/m" -lm 2>"$H/log"; then
  "$H/m"
  rc=$?
  if [ $rc = 0 ]; then ok "hostile path: injected code did not run"; else bad "hostile path: injected code did not run (exit $rc)"; fi
else
  bad "hostile path: plain output builds"
  head -5 "$H/log"
fi

# ---- 3. two outputs in one program ----
Q="$T/two"
mkdir "$Q"
"$PXL" compile "$SRC/examples/edges.pxl" -o "$Q/e1" >/dev/null &&
  "$PXL" compile "$SRC/examples/edges.pxl" -o "$Q/e2" >/dev/null &&
  "$PXL" compile "$SRC/examples/blur3.pxl" -o "$Q/blur" >/dev/null || bad "pxl compile twice"
cat >"$Q/two.c" <<'EOF'
#include <stdlib.h>
#include <string.h>
#include "e1.h"
#include "e2.h"
#include "blur.h"
int main(void) {
  enum { W = 64, H = 40 };
  static unsigned char a[W * H], o1[W * H], o2[W * H], o3[W * H];
  for (int i = 0; i < W * H; i++) a[i] = (unsigned char)(i * 7 + i / W * 13);
  pxlc_image in = {a, W, H, W}, x = {o1, W, H, W}, y = {o2, W, H, W}, z = {o3, W, H, W};
  pxlc_scalar t[1];
  t[0].i = 30;
  if (e1_edges(&in, t, &x, 0) || e2_edges(&in, t, &y, 0) || blur_blur3_u8(&in, NULL, &z, 0)) return 1;
  if (memcmp(o1, o2, sizeof o1)) return 2;
  return memcmp(o1, o3, sizeof o1) ? 0 : 3;
}
EOF
for cc in gcc clang; do
  if $cc $WARN -fopenmp -I"$Q" "$Q/two.c" "$Q/e1.c" "$Q/e2.c" "$Q/blur.c" -o "$Q/two" -lm 2>"$Q/log" && "$Q/two"; then
    ok "two headers in one file, three .c files in one program ($cc)"
  else
    bad "two headers in one file, three .c files in one program ($cc)"
    head -5 "$Q/log"
  fi
done

echo "$passed passed, $failed failed"
[ $failed = 0 ]
