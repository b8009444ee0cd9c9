/*
 * gen_cuda.c - the CUDA code generator (see gen_cuda.h).
 *
 * This is the first, straightforward version of every skeleton: one thread per output
 * pixel for kernels (the interior calls the branch-free "pi" pixel function, edge
 * pixels "pe"); reductions in PXL_CUDA_CHUNKS fixed row chunks, one block each, a
 * shared-memory tree in a fixed order and an ordered final combine (deterministic);
 * counting histograms with atomic adds (integer addition commutes, so the bins are exact);
 * float-weighted histograms on one thread in row-major order (exactly the interpreter's
 * sums). Shared-memory tiles, vectorised loads, privatised bins and warp shuffles are the
 * next step (see the CUDA issue); the interface to the runtime will not change.
 */
#include "codegen/cuda/gen_cuda.h"

#include <string.h>

#include "codegen/c/emit.h"
#include "codegen/c/gen_c.h"
#include "pxl/pxl.h"

#define OUT(...) sb_printf(g->o, __VA_ARGS__)

static void header(Gen *g) {
  OUT("typedef struct { void *data; int32_t width, height; int64_t pitch; } pxlc_image;\n");
  OUT("typedef union { int64_t i; double f; } pxlc_scalar;\n");
  OUT("typedef struct { pxlc_image in[%d]; pxlc_scalar sc[%d]; pxlc_image out; void *aux; int64_t n; } pxl_kargs;\n",
      PXL_CUDA_MAX_IMAGES, PXL_CUDA_MAX_SCALARS);
  OUT("static __device__ __forceinline__ int pxlc_threads(int n) { (void)n; return 1; }\n");
}

static void entry_open(Gen *g, const char *name, bool has_out) {
  OUT("extern \"C\" __global__ void %s(pxl_kargs a) {\n", name);
  OUT("  const pxlc_image *in = a.in;\n  const pxlc_scalar *sc = a.sc;\n  pxlc_image *out = &a.out;\n");
  OUT("  const int nthreads = 0;\n  (void)in; (void)sc; (void)out;\n");
  cg_prologue(g, has_out);
}

static void kernel_entry(Gen *g, const char *A) {
  const Decl *D = g->D;
  int C = D->type.lanes;
  const char *OT = cg_ctype(D->type.s);
  entry_open(g, "pxl_stage", true);
  OUT("  %s *o = (%s *)out->data;\n  const ptrdiff_t op = (ptrdiff_t)(out->pitch / (int64_t)sizeof(%s));\n", OT, OT, OT);
  OUT("  const int x = (int)(blockIdx.x * blockDim.x + threadIdx.x), y = (int)(blockIdx.y * blockDim.y + threadIdx.y);\n");
  OUT("  if (x >= W || y >= H) return;\n");
  OUT("  %s *orow = o + (ptrdiff_t)y * op;\n", OT);
  OUT("  if (x < rx0 || x >= rx1 || y < ry0 || y >= ry1) {\n");
  OUT("    for (int c = 0; c < %d; c++) orow[(ptrdiff_t)x * %d + c] = 0;\n    return;\n  }\n", C, C);
  OUT("  if (x >= ix0 && x < ix1 && y >= iy0 && y < iy1) %s_pi(%s, x, y, W, H, orow + (ptrdiff_t)x * %d);\n", g->pfx, A, C);
  OUT("  else %s_pe(%s, x, y, W, H, orow + (ptrdiff_t)x * %d);\n}\n", g->pfx, A, C);
}

/* Merges partial (bv, bx, by) into (av, ax, ay): in order, or for argmin/argmax by the
 * better value, ties going to the earlier position (row-major), as the interpreter does. */
static void merge(Gen *g, const char *av, const char *ax, const char *ay, const char *bv, const char *bx,
                  const char *by, bool arg) {
  if (!arg) {
    cg_combine(g, av, bv);
    OUT("\n");
    return;
  }
  OUT("if (%s >= 0 && (%s < 0 || ", bx, ax);
  cg_better(g, bv, av);
  OUT(" || (!");
  cg_better(g, av, bv);
  OUT(" && (%s < %s || (%s == %s && %s < %s))))) { %s = %s; %s = %s; %s = %s; }\n", by, ay, by, ay, bx, ax, av, bv,
      ax, bx, ay, by);
}

static void reduce_entries(Gen *g, const char *A) {
  const Decl *D = g->D;
  const char *T = cg_ctype(D->type.s);
  bool arg = D->redop == R_ARGMIN || D->redop == R_ARGMAX;
  char f = scalar_is_float(D->type.s) ? 'f' : 'i';
  /* one block per chunk of rows; each thread strides over the chunk's pixels */
  entry_open(g, "pxl_stage", false);
  OUT("  const int nch = (int)a.n, c = (int)blockIdx.x, t = (int)threadIdx.x;\n");
  OUT("  const int y0 = (int)((int64_t)H * c / nch), y1 = (int)((int64_t)H * (c + 1) / nch);\n");
  OUT("  %s acc = ", T);
  cg_identity(g);
  OUT(";\n  int ax = -1, ay = -1;\n");
  OUT("  for (int y = y0 > ry0 ? y0 : ry0; y < (y1 < ry1 ? y1 : ry1); y++)\n");
  OUT("    for (int x = rx0 + t; x < rx1; x += (int)blockDim.x) {\n");
  OUT("      const %s v = (x >= ix0 && x < ix1 && y >= iy0 && y < iy1) ? %s_pi(%s, x, y, W, H) : %s_pe(%s, x, y, W, H);\n",
      T, g->pfx, A, g->pfx, A);
  if (arg) {
    OUT("      if (ax < 0 || ");
    cg_better(g, "v", "acc");
    OUT(") { acc = v; ax = x; ay = y; }\n");
  } else {
    OUT("      ");
    cg_combine(g, "acc", "v");
    OUT("\n");
  }
  OUT("    }\n");
  OUT("  __shared__ %s sv[%d];\n  __shared__ int sx[%d], sy[%d];\n", T, PXL_CUDA_BLOCK, PXL_CUDA_BLOCK, PXL_CUDA_BLOCK);
  OUT("  sv[t] = acc; sx[t] = ax; sy[t] = ay;\n  __syncthreads();\n");
  OUT("  for (int s = %d; s > 0; s >>= 1) {\n    if (t < s) {\n", PXL_CUDA_BLOCK / 2);
  OUT("      %s av = sv[t], bv = sv[t + s];\n      int ax2 = sx[t], ay2 = sy[t], bx = sx[t + s], by = sy[t + s];\n", T);
  OUT("      (void)bx; (void)by;\n      ");
  merge(g, "av", "ax2", "ay2", "bv", "bx", "by", arg);
  OUT("      sv[t] = av; sx[t] = ax2; sy[t] = ay2;\n    }\n    __syncthreads();\n  }\n");
  OUT("  if (t == 0) {\n    pxlc_scalar *part = (pxlc_scalar *)a.aux;\n");
  OUT("    int32_t *pos = (int32_t *)(part + %d + 1);\n", PXL_CUDA_CHUNKS);
  OUT("    part[c].%c = sv[0];\n    pos[2 * c] = sx[0];\n    pos[2 * c + 1] = sy[0];\n  }\n}\n", f);
  /* the ordered combine of the chunks, on one thread */
  entry_open(g, "pxl_final", false);
  OUT("  const int nch = (int)a.n;\n  pxlc_scalar *part = (pxlc_scalar *)a.aux;\n");
  OUT("  int32_t *pos = (int32_t *)(part + %d + 1);\n", PXL_CUDA_CHUNKS);
  OUT("  %s acc = ", T);
  cg_identity(g);
  OUT(";\n  int ax = -1, ay = -1;\n");
  OUT("  for (int c = 0; c < nch; c++) {\n    const %s v = (%s)part[c].%c;\n    const int vx = pos[2 * c], vy = pos[2 * c + 1];\n",
      T, T, f);
  OUT("    (void)vx; (void)vy;\n    ");
  merge(g, "acc", "ax", "ay", "v", "vx", "vy", arg);
  OUT("  }\n  part[%d].%c = acc;\n  pos[2 * %d] = ax;\n  pos[2 * %d + 1] = ay;\n}\n", PXL_CUDA_CHUNKS, f,
      PXL_CUDA_CHUNKS, PXL_CUDA_CHUNKS);
}

static void histogram_entry(Gen *g, const char *A) {
  const Decl *D = g->D;
  const char *BT = D->weighted_float ? "double" : "int64_t";
  entry_open(g, "pxl_stage", false);
  OUT("  %s *bins = (%s *)a.aux;\n", BT, BT);
  if (D->weighted_float) { /* one thread, row-major: the interpreter's order of float additions */
    OUT("  if (blockIdx.x || blockIdx.y || threadIdx.x || threadIdx.y) return;\n");
    OUT("  for (int y = ry0; y < ry1; y++) {\n    for (int x = rx0; x < rx1; x++) {\n");
  } else {
    OUT("  const int x = (int)(blockIdx.x * blockDim.x + threadIdx.x), y = (int)(blockIdx.y * blockDim.y + threadIdx.y);\n");
    OUT("  if (x < rx0 || x >= rx1 || y < ry0 || y >= ry1) return;\n  {\n    {\n");
  }
  OUT("      if (x >= ix0 && x < ix1 && y >= iy0 && y < iy1) %s_pi(%s, x, y, W, H, bins);\n", g->pfx, A);
  OUT("      else %s_pe(%s, x, y, W, H, bins);\n    }\n  }\n}\n", g->pfx, A);
}

int gen_cuda_stage(StrBuf *out, const Decl *D, const Border *borders, Err *err) {
  if (D->nimages > PXL_CUDA_MAX_IMAGES || D->nscalars > PXL_CUDA_MAX_SCALARS)
    return err_set(err, PXL_EARG, "%s: the CUDA backend takes at most %d images and %d scalars", D->name,
                   PXL_CUDA_MAX_IMAGES, PXL_CUDA_MAX_SCALARS);
  bool direct[PXL_CUDA_MAX_IMAGES];
  Gen gen, *g = &gen;
  cg_init(g, out, D, borders, "st", direct);
  OUT("/* generated by pxl %s: one stage instance, CUDA; do not edit */\n", PXL_VERSION_STRING);
  sb_append(out, pxl_prelude_text, strlen(pxl_prelude_text));
  header(g);
  cg_functions(g);
  StrBuf args = {0};
  cg_args_text(g, &args);
  const char *A = args.s ? args.s : "";
  switch (D->kind) {
  case D_KERNEL: kernel_entry(g, A); break;
  case D_REDUCE: reduce_entries(g, A); break;
  case D_HISTOGRAM: histogram_entry(g, A); break;
  default: break;
  }
  sb_free(&args);
  if (out->oom) return err_set(err, PXL_ENOMEM, "out of memory generating CUDA for %s", D->name);
  return PXL_OK;
}
