/*
 * packed.h - pixel functions on pairs of pixels in the 16-bit halves of a word (GPU).
 *
 * gp_pixel_fn emits uint32_t <pfx>_<name>(images and scalars..., [windows], [r<i>], x, y):
 * pixels x and x + 2 of row y at once, their u8 values in the low and high halves of
 * the word it returns.
 * Variants: V_SMEM | V_DIRECT_REL and V_SMEM | V_WIN | V_DIRECT_REL (relative reads
 * from the block's staged tile or the thread's window t<k>, as the "ps" and "pw"
 * functions) and V_SEP | V_ROWSUM (a separable min/max or sum window's values
 * for both pixels given as words r<i>, as "pr"). The dialect defines PXG_PAIR, PXG_MIN2,
 * PXG_MAX2, PXG_MAXS2, PXG_ADD2, PXG_SUB2, PXG_ADDW and PXG_DIVC2 (gen_gpu.c). packed.c
 * says which kernels qualify and why the halves stay exact.
 */
#ifndef PXL_CODEGEN_GPU_PACKED_H
#define PXL_CODEGEN_GPU_PACKED_H

#include <stdbool.h>

#include "codegen/c/emit.h"

/* Whether kernel g->D's pixel computes in pairs in the given variant. */
bool gp_packable(const Gen *g, int variant);
/* The dialect's word for a separable window's operator on two pairs of halves: BI_MIN
 * PXG_MIN2, BI_MAX PXG_MAX2, a sum (-1: packed.c's WIDE halves) PXG_ADDW. */
const char *gp_op2(int op);
/* Emits the packed pixel function <pfx>_<name> (gp_packable must hold). */
void gp_pixel_fn(Gen *g, int variant, const char *name);

#endif
