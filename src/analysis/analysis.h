/*
 * analysis.h - what the compiler learns about each declaration before choosing code.
 *
 * For every kernel, reduction and histogram: per image parameter the access pattern
 * (window of relative reads, affine absolute reads, data-dependent gathers), the
 * skeleton class (P2P, non-sequential P2P, N2P, gather, R2S, R2V) found from those
 * accesses - never declared by the user - and per-pixel metrics after Park et al.
 * (arithmetic and floating-point operations, memory reads, branches).
 */
#ifndef PXL_ANALYSIS_H
#define PXL_ANALYSIS_H

#include <stdbool.h>

#include "front/front.h"
#include "ir/ir.h"

/* Fills Decl.access, Decl.skel and Decl.metrics for every declaration. Never fails on a
 * checked program except for out-of-memory (false, arena flagged). */
bool analyze_program(Program *p, Diag *d);

/* Analyses one declaration again (a specialisation made at run time): its access,
 * class, metrics and separable passes. False when out of memory. */
bool analyze_decl_again(Decl *D, Arena *arena);

/* outputs.c: makes the projections of every kernel with several outputs (Decl.outs: a
 * single-output copy per output, analysed, indexed after the entries) and points the
 * pipelines' tuple values at them. Runs once the entries have their indices. False when
 * out of memory. */
bool outputs_lower(Program *p);
/* Makes D->outs for kernel D with several outputs (analysed already): one projection per
 * output, in p's arena. False when out of memory (D->outs unchanged). */
bool outputs_project(Program *p, Decl *D);

/* fuse.c: makes Decl.fused for every pipeline in which a stage can be computed inside
 * its one consumer (after outputs_lower: the fused kernels are indexed after the
 * entries). False when out of memory. */
bool fuse_program(Program *p);
/* A fused copy of pipeline P0 (NULL: nothing fuses, or out of memory, p's arena flagged):
 * values with keep[v] set stay as written (keep may be NULL); with `model` a device class
 * (cost.h: COST_CPU, COST_GPU) only the fusions the cost model predicts to pay there are
 * made, with -1 every exact one; `tiles`: rule C (a window stage into a window consumer
 * through tiles, GPU backends only) may be used. */
Decl *fuse_pipeline(Program *p, const Decl *P0, const bool *keep, int model, bool tiles);

/* The `pxl check --explain` report for the whole program, in the program's arena. */
const char *explain_program(Program *p);

#endif
