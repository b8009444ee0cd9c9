/*
 * check.h - for test programs: CHECK(cond, printf-arguments) prints a failure with its
 * line and counts it in `failed` (the test goes on; main returns failed != 0), and a
 * fixed-seed xorshift generator for test data.
 */
#ifndef PXL_TESTS_CHECK_H
#define PXL_TESTS_CHECK_H

#include <stdint.h>
#include <stdio.h>

static int failed;

#define CHECK(cond, ...)                  \
  do {                                    \
    if (!(cond)) {                        \
      printf("FAIL line %d: ", __LINE__); \
      printf(__VA_ARGS__);                \
      printf("\n");                       \
      failed++;                           \
    }                                     \
  } while (0)

static uint64_t rng = 0x9e3779b97f4a7c15u;

/* The next 64 random bits (xorshift64). */
static inline uint64_t random_u64(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}

#endif
