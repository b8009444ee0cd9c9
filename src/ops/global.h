/*
 * global.h - the operator library's entry for the global operators of the language
 * (`global T name(params) = OP(value);`, ir.h PXL_GLOBALS): one call that runs operator
 * OP's pass over a map the backend computed. The runtime (exec.c: exec_kernel) is its
 * only caller; the operators themselves are in ops.h.
 */
#ifndef PXL_OPS_GLOBAL_H
#define PXL_OPS_GLOBAL_H

#include "ir/ir.h"
#include "ops/morph.h"
#include "ops/ops.h"

/* Runs global operator g over host images maps[0 .. global_arity(g)) (its maps, one
 * channel: u8 0/1 for GM_FEATURE operators, the values' types otherwise) into host image
 * out (their size, one channel of a type check.c allowed for g). */
int ops_global(GlobalOp g, const struct pxl_image *const *maps, const OpsRun *run, struct pxl_image *out, Err *err);

#endif
