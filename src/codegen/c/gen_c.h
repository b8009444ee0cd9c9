/*
 * gen_c.h - the C code generator (CPU backend): checked, analysed IR -> C11 + OpenMP.
 *
 * The unit of generation is a stage instance: one kernel, reduction or histogram with a
 * border mode fixed for each of its image parameters (borders are compile-time, so the
 * interior path has no border code at all). The JIT (src/runtime/host/cpu.c) compiles one
 * instance per module; `pxl compile` (gen_c_program) writes every entry point, pipelines
 * included, into one standalone .c/.h pair.
 *
 * Generated entry points (the ABI, also written into each file). A JIT stage:
 *   kernel:    void f(const pxlc_image *in, const pxlc_scalar *sc, pxlc_image *out, int nthreads)
 *   reduction: void f(const pxlc_image *in, const pxlc_scalar *sc, pxlc_scalar *res, int32_t *pos, int nthreads)
 *   histogram: void f(const pxlc_image *in, const pxlc_scalar *sc, void *bins, int nthreads)
 * `pxl compile` exports reductions and histograms so, and kernels and pipelines as
 *   int f(const pxlc_image *in, const pxlc_scalar *sc, pxlc_image *out, int nthreads)
 * which with out->data NULL only sets out's size (and returns 0), else returns -1 when
 * out has the wrong size (or, pipelines, memory runs out).
 */
#ifndef PXL_GEN_C_H
#define PXL_GEN_C_H

#include "ir/ir.h"
#include "util/err.h"
#include "util/strbuf.h"

#define PXLC_ABI_VERSION 1

/* Text of src/ir/prelude.h (generated at build time). */
extern const char pxl_prelude_text[];

/* Appends a complete translation unit for instance (D, borders) whose entry point is
 * named `fname` and exported. borders[i] is the border of image parameter i. */
int gen_c_stage(StrBuf *out, const Decl *D, const Border *borders, const char *fname, Err *err);

/* Whether kernel D is a function of one u8 pixel to a u8 pixel: P2P over a one-channel
 * u8 first image read at (0, 0) only, without the coordinates, its other images read at
 * absolute positions only (a table image: `lut.at(in(0, 0), 0)`); scalars and arrays are
 * fixed for a run; the output has the first image's size (no size()). Its 256 values can
 * then be computed once per launch (or per GPU block) and every pixel looked up: the
 * pixel function "pi" called at (v, 0) with image 0 read from an array of the values
 * 0..255 gives the value for v. */
bool cg_tabulated(const Decl *D);

/* Ahead-of-time output for a whole program: C source and header (heap strings owned by
 * the caller, freed with sb_free). `base` is the file name of both without extension
 * (any bytes): entry E is exported as <B>_E, B being base as an identifier. */
int gen_c_program(const Program *p, const char *base, StrBuf *c_out, StrBuf *h_out, Err *err);

#endif
