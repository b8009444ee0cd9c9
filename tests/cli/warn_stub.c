/*
 * warn_stub.c - a stand-in for pxl_take_warnings, linked into a copy of the pxl command
 * with `-Wl,--wrap=pxl_take_warnings` (the ctest cli_warnings): each call returns two
 * numbered lines, so warnings_test.sh can see that the command prints every line of
 * every call as "pxl: warning: LINE" and calls it after each library call that may
 * record warnings. The library itself records few warnings, and none on demand.
 */
#include <stdio.h>

#include "pxl/pxl.h"

const char *__wrap_pxl_take_warnings(pxl_context *ctx);
const char *__real_pxl_take_warnings(pxl_context *ctx);

/* Two lines per call: "call N: first" and "call N: second" (the second without '\n'). */
const char *__wrap_pxl_take_warnings(pxl_context *ctx) {
  static char buf[96];
  static int calls;
  (void)__real_pxl_take_warnings(ctx); /* keep the library's own bookkeeping */
  calls++;
  snprintf(buf, sizeof buf, "call %d: first\ncall %d: second", calls, calls);
  return buf;
}
