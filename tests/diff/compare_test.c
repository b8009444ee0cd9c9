/*
 * compare_test.c - the differential tests' float comparison (compare.h) on small cases,
 * each of which an earlier close_enough got wrong, and the documents that state its
 * tolerances.
 *
 *     compare_test DOCS_DIR
 *
 * Before: +inf matched every finite value and -inf (|inf - x| <= 1e-4 * inf), a NaN
 * pixel on a GPU matched any value (the comparison of the difference was false, so the
 * pixel was not rejected), GPU float pixels were accepted within 1e-4 while the
 * documents said 1e-5, and float-weighted histogram bins, documented bit for bit, were
 * compared within 1e-4. Then DOCS_DIR/LANGUAGE.md and ARCHITECTURE.md must state each
 * tolerance as it is in compare.h ("1e-5 (PIXEL_TOLERANCE)"), so that neither can change
 * alone.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/check.h"
#include "common/read_file.h"
#include "diff/compare.h"

#define TEXT(x) #x
#define VALUE_TEXT(x) TEXT(x)

/* path must contain "VALUE (NAME)" for the tolerance macro NAME. */
static void documented(const char *dir, const char *file, const char *value, const char *name) {
  char path[4096], want[128];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  snprintf(want, sizeof want, "%s (%s)", value, name);
  char *text = read_file(path);
  if (text) { /* lines are wrapped anywhere: every run of white space as one space */
    char *o = text;
    for (const char *p = text; *p; p++)
      if (!(*p == ' ' || *p == '\n' || *p == '\t') || (o > text && o[-1] != ' ')) *o++ = *p == '\n' || *p == '\t' ? ' ' : *p;
    *o = 0;
  }
  CHECK(text && strstr(text, want), "%s does not say \"%s\", the tolerance of tests/diff/compare.h", path, want);
  free(text);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: compare_test DOCS_DIR\n");
    return 2;
  }
  const double inf = INFINITY, nan = NAN, tol = PIXEL_TOLERANCE;

  /* infinities: only the same infinity */
  CHECK(!close_enough(inf, 1.0, tol), "+inf accepted against 1");
  CHECK(!close_enough(1.0, inf, tol), "1 accepted against +inf");
  CHECK(!close_enough(inf, DBL_MAX, tol), "+inf accepted against DBL_MAX");
  CHECK(!close_enough(inf, -inf, tol), "+inf accepted against -inf");
  CHECK(!close_enough(-inf, 0.0, tol), "-inf accepted against 0");
  CHECK(close_enough(inf, inf, tol) && close_enough(-inf, -inf, tol), "an infinity refused against itself");

  /* NaN: only NaN */
  CHECK(!close_enough(nan, 1.0, tol), "NaN accepted against 1");
  CHECK(!close_enough(1.0, nan, tol), "1 accepted against NaN");
  CHECK(!close_enough(nan, inf, tol), "NaN accepted against inf");
  CHECK(close_enough(nan, nan, tol) && close_enough(nan, -nan, tol), "NaN refused against NaN");

  /* the tolerance: relative above 1, absolute below, no looser than stated */
  CHECK(close_enough(1000.0, 1000.0 * (1 + 0.5 * tol), tol), "within half the tolerance refused");
  CHECK(!close_enough(1000.0, 1000.0 * (1 + 2 * tol), tol), "twice the tolerance accepted");
  CHECK(!close_enough(1.0, 1.0 + 5e-5, 1e-5), "1 + 5e-5 accepted against 1 within 1e-5 (the old 1e-4)");
  CHECK(close_enough(0.0, 0.5 * tol, tol), "absolute difference below the tolerance refused near 0");
  CHECK(!close_enough(0.0, 2 * tol, tol), "absolute difference of twice the tolerance accepted near 0");
  CHECK(!close_enough(-1e6, 1e6, tol), "opposite signs accepted");

  /* deviation: the measure close_enough applies */
  CHECK(deviation(2.0, 2.0) == 0 && deviation(nan, nan) == 0 && deviation(inf, inf) == 0, "deviation of equal values");
  CHECK(isinf(deviation(inf, 1.0)) && isinf(deviation(nan, 0.0)), "deviation of an infinity or NaN from a number");
  CHECK(fabs(deviation(100.0, 101.0) - 1.0 / 101.0) < 1e-15, "deviation(100, 101) = %g", deviation(100.0, 101.0));

  /* same_value (float-weighted histogram bins): bit for bit */
  CHECK(!same_value(1.0, nextafter(1.0, 2.0)), "one unit in the last place accepted");
  CHECK(!same_value(0.0, -0.0), "-0 accepted for +0");
  CHECK(!same_value(nan, 0.0) && !same_value(0.0, nan), "NaN accepted against 0");
  CHECK(!same_value(inf, -inf), "+inf accepted against -inf");
  CHECK(same_value(nan, nan) && same_value(3.25, 3.25) && same_value(inf, inf), "equal values refused");

  /* the documents say what the code does */
  documented(argv[1], "LANGUAGE.md", VALUE_TEXT(PIXEL_TOLERANCE), "PIXEL_TOLERANCE");
  documented(argv[1], "LANGUAGE.md", VALUE_TEXT(REDUCTION_TOLERANCE_F32), "REDUCTION_TOLERANCE_F32");
  documented(argv[1], "LANGUAGE.md", VALUE_TEXT(REDUCTION_TOLERANCE_F64), "REDUCTION_TOLERANCE_F64");
  documented(argv[1], "ARCHITECTURE.md", VALUE_TEXT(PIXEL_TOLERANCE), "PIXEL_TOLERANCE");
  documented(argv[1], "ARCHITECTURE.md", VALUE_TEXT(REDUCTION_TOLERANCE_F32), "REDUCTION_TOLERANCE_F32");
  documented(argv[1], "ARCHITECTURE.md", VALUE_TEXT(REDUCTION_TOLERANCE_F64), "REDUCTION_TOLERANCE_F64");

  printf("%s\n", failed ? "FAILED" : "ok");
  return failed != 0;
}
