/*
 * compare.h - how the differential tests compare a backend's floating-point results with
 * the interpreter's (diff_test.c), kept apart so that compare_test.c can check the
 * comparison itself.
 *
 * Integer results, kernel outputs on the CPU backend and float-weighted histogram bins
 * are compared bit for bit elsewhere (same_value here for the bins). Two results are
 * allowed to differ in the last bits, each documented in docs/LANGUAGE.md (Arithmetic)
 * and docs/ARCHITECTURE.md (Tests):
 *   - float pixels on GPUs, whose sin/cos/exp/log/pow/atan2 are not glibc's
 *     (PIXEL_TOLERANCE);
 *   - float reductions (sum), whose partial sums every backend adds in its own order
 *     (REDUCTION_TOLERANCE).
 * In both, a NaN only equals a NaN and an infinity only the same infinity: no tolerance
 * turns inf into a number or NaN into anything.
 */
#ifndef PXL_TESTS_DIFF_COMPARE_H
#define PXL_TESTS_DIFF_COMPARE_H

#include <math.h>
#include <stdbool.h>

/* |ref - got| <= tolerance * max(1, |ref|, |got|): relative above 1, absolute below. */
#define PIXEL_TOLERANCE 1e-5
#define REDUCTION_TOLERANCE_F32 2e-3
#define REDUCTION_TOLERANCE_F64 1e-10

/* Whether got is within a relative tol of ref (absolute below magnitude 1); NaN matches
 * only NaN, an infinity only the same infinity. */
static inline bool close_enough(double ref, double got, double tol) {
  if (isnan(ref) || isnan(got)) return isnan(ref) && isnan(got);
  if (isinf(ref) || isinf(got)) return ref == got;
  return fabs(ref - got) <= tol * fmax(1.0, fmax(fabs(ref), fabs(got)));
}

/* How far got is from ref in close_enough's measure (0 when equal; INFINITY when
 * close_enough can accept no tolerance). For the summary of the largest deviations. */
static inline double deviation(double ref, double got) {
  if (isnan(ref) || isnan(got)) return isnan(ref) && isnan(got) ? 0 : INFINITY;
  if (isinf(ref) || isinf(got)) return ref == got ? 0 : INFINITY;
  return fabs(ref - got) / fmax(1.0, fmax(fabs(ref), fabs(got)));
}

/* The same value bit for bit, except that any NaN equals any NaN (payloads differ
 * between CPUs and GPUs); -0 and +0 differ. */
static inline bool same_value(double ref, double got) {
  if (isnan(ref) || isnan(got)) return isnan(ref) && isnan(got);
  return ref == got && signbit(ref) == signbit(got);
}

#endif
