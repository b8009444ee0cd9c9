/*
 * gen_gpu.c - the GPU code generator, CUDA and OpenCL C (see gen_gpu.h).
 *
 * One entry point per skeleton class, all around the same pixel functions:
 *   P2P, reads at (0, 0) only   each thread loads 16 bytes of every image with one vector
 *                               load, runs the pixel function on the registers (the "pv"
 *                               variant) and stores 16 bytes: the copy's access pattern.
 *   u8 -> u8 of the pixel alone the block computes the function's 256 values into shared
 *   (CUDA: kernel_table)        memory first, then every pixel is a lookup.
 *   no image read               one pixel per thread (tables made from histograms).
 *   non-sequential P2P          a block stages its tile's footprint (affine reads: a
 *   (transpose, flips)          transposed or flipped tile) in shared memory with
 *                               coalesced loads, rows padded against bank conflicts, then
 *                               writes the tile coalesced from it.
 *   N2P and the rest            each thread computes px x py neighbouring pixels with the
 *                               branch-free interior function; loads shared by neighbours
 *                               are common subexpressions of the unrolled calls. Border
 *                               code runs only in threads that touch an edge. Windows
 *                               are staged in shared memory per block where they fit.
 *   sliding sums in strips      one channel, integer sums sliding both ways: a block walks
 *   (strip_plan)                down a strip of 256 columns, each input row loaded once,
 *                               the column sums kept in registers (kernel_strips).
 *   separable windows (D->sep)  over the staged tile: integer sums slide, O(1) reads per
 *                               pixel whatever the window's size - the threads together
 *                               compute the window's column sums for the tile's rows
 *                               (a thread per column, adding the row entering the window
 *                               and taking away the one leaving it) into shared memory,
 *                               then each thread slides a row sum along its pixels; no
 *                               loop over the window is unrolled, so a 31 x 31 box
 *                               compiles as fast as a 3 x 3 one. Blocks at least as
 *                               tall as the window (tile_shape). Min, max and float
 *                               windows: per output row, every column value from the
 *                               tile (unrolled), then the row pass.
 *   R2S (reductions)            one launch: row chunks, one block each (fixed per height:
 *                               results do not depend on timing); 16-byte loads where the
 *                               map reads (0, 0) only; warp shuffles, then the warps in
 *                               order; the last block to finish combines the chunks in
 *                               order and writes the value straight to pinned host memory.
 *   R2V (histograms)            counting: per-block bins in shared memory (32-bit, 32
 *                               copies of 256 bins: a warp's atomics in 32 banks), added
 *                               to the global bins once per block; the last block hands
 *                               them to pinned host memory and zeroes them; weighted integer bins
 *                               with global atomics; float-weighted bins on one thread in
 *                               row-major order (the interpreter's sums, exactly).
 *   scans                       integer sums, min and max (any grouping, the same bits)
 *                               are fused: the passes evaluate the map, in tiles of 32
 *                               rows by 32 vectors of columns - the tiles' totals, the
 *                               carries between them, then each tile's prefixes (the
 *                               image read twice, written once). 2-D float min/max: the
 *                               map (a kernel as above), rows by warps (a carry per row,
 *                               each band's column totals), the bands' carries, columns
 *                               in bands. Float sums keep the interpreter's order: a
 *                               thread per row (32 x 32 tiles in shared memory), then a
 *                               thread per column. Results are bit-identical either way.
 */
#include "codegen/gpu/gen_gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/c/emit.h"
#include "codegen/c/gen_c.h"
#include "codegen/gpu/packed.h"
#include "pxl/pxl.h"

#define PXL_STR_(x) #x
#define PXL_STR(x) PXL_STR_(x)
#define OUT(...) sb_printf(g->o, __VA_ARGS__)

/* Unsigned 16-bit halves of one word (packed.c's WIDE values, 0..65535 each), in both
 * dialects: the sum of two (no carry crosses from the low half: each half's sum is at
 * most 65535) and each divided by a literal with the analysis' multiplier m and shift s
 * ((v * m) >> s, exact for v up to 65535; the argument is pure, the compiler computes it
 * once). */
#define PXG_WIDE_WORDS                                                                                                \
  "#define PXG_ADDW(a, b) ((a) + (b))\n"                                                                            \
  "#define PXG_DIVC2(a, m, s) (((((a) & 0xffffu) * (m)) >> (s)) | (((((a) >> 16) * (m)) >> (s)) << 16))\n"          \
  PXG_MASK_WORDS

/* Masks of packed.c's comparisons (0 or 0xffff in each half), in both dialects: a or b
 * chosen half by half, a mask as 0 or 1. */
#define PXG_MASK_WORDS                                                                                                \
  "#define PXG_SEL2(m, a, b) (((m) & (a)) | (~(m) & (b)))\n"                                                      \
  "#define PXG_MASK1(m) ((m) & 0x00010001u)\n"

/* The dialect's words for what the skeletons below use, as macros: thread and block
 * indices, barriers, shared (local) memory, atomics, byte permutes, min/max of two 16-bit
 * halves at once, vector types. */
static const char cuda_words[] =
    "#define PXG_TX ((int)threadIdx.x)\n#define PXG_TY ((int)threadIdx.y)\n"
    "#define PXG_BX ((int)(a.flip ? gridDim.x - 1u - blockIdx.x : blockIdx.x))\n"
    "#define PXG_BY ((int)(a.flip ? gridDim.y - 1u - blockIdx.y : blockIdx.y))\n"
    "#define PXG_NTX ((int)blockDim.x)\n#define PXG_NTY ((int)blockDim.y)\n#define PXG_NBX ((int)gridDim.x)\n"
    "#define PXG_SYNC() __syncthreads()\n#define PXG_FENCE() __threadfence()\n"
    "#define PXG_SHARED __shared__\n#define PXG_ALIGN16 __align__(16)\n"
    "#define PXG_ATOMIC_INC(p) atomicAdd((unsigned *)(p), 1u)\n"
    "#define PXG_ATOMIC_ADD_U64(p, v) atomicAdd((unsigned long long *)(p), (unsigned long long)(v))\n"
    "#define PXG_BYTE_PERM __byte_perm\n"
    "#define PXG_BYTE(w, k) __byte_perm((w), 0u, 0x4440u + (k))\n"
    "#define PXG_HALF(w, k) __byte_perm((w), 0u, (k) ? 0x4432u : 0x4410u)\n"
    "#define PXG_SHALF(w, k) ((int32_t)(int16_t)((w) >> (16 * (k))))\n"
    "#define PXG_MIN2(a, b) __vminu2((a), (b))\n#define PXG_MAX2(a, b) __vmaxu2((a), (b))\n"
    "#define PXG_MAXS2(a, b) __vmaxs2((a), (b))\n#define PXG_ADD2(a, b) __vadd2((a), (b))\n"
    "#define PXG_SUB2(a, b) __vsub2((a), (b))\n#define PXG_PAIR(a, b) __byte_perm((a), (b), 0x5410u)\n"
    "#define PXG_EQ2(a, b) __vcmpeq2((a), (b))\n#define PXG_NE2(a, b) __vcmpne2((a), (b))\n"
    "#define PXG_LT2S(a, b) __vcmplts2((a), (b))\n#define PXG_LE2S(a, b) __vcmples2((a), (b))\n"
    "#define PXG_LT2U(a, b) __vcmpltu2((a), (b))\n#define PXG_LE2U(a, b) __vcmpleu2((a), (b))\n"
    PXG_WIDE_WORDS
    "#define PXG_ODD_BYTES(w) __byte_perm((w), 0u, 0x4341u)\n"
    "#define PXG_FUNNEL16(a, b) __byte_perm((a), (b), 0x5432u)\n#define PXG_ZIP_BYTES(a, b) __byte_perm((a), (b), 0x6240u)\n"
    "#define PXG_FN_CALLED static __device__ __noinline__\n"
    "#define PXG_AUX a.aux\n#define PXG_RES a.res\n#define PXG_OUT_DATA out->data\n"
    "typedef struct { void *data; int32_t width, height; int64_t pitch; } pxlc_image;\n";

static const char opencl_words[] =
    "#define PXG_TX ((int)get_local_id(0))\n#define PXG_TY ((int)get_local_id(1))\n"
    "#define PXG_BX ((int)(a.flip ? get_num_groups(0) - 1 - get_group_id(0) : get_group_id(0)))\n"
    "#define PXG_BY ((int)(a.flip ? get_num_groups(1) - 1 - get_group_id(1) : get_group_id(1)))\n"
    "#define PXG_NTX ((int)get_local_size(0))\n#define PXG_NTY ((int)get_local_size(1))\n"
    "#define PXG_NBX ((int)get_num_groups(0))\n"
    "#define PXG_SYNC() barrier(CLK_LOCAL_MEM_FENCE)\n"
    /* PXG_FENCE orders a thread's global writes before its later ones for every thread of
     * the device (the last-block hand-over depends on it). OpenCL 1.2's mem_fence only
     * orders them for the work-group: NVIDIA compiles it to membar.cta, and the last block
     * read bins whose adds from other blocks had not landed yet. On NVIDIA the PTX device
     * fence; elsewhere mem_fence, which CPU implementations (PoCL) make a full fence. */
    "#if defined(PXG_NV_PTX)\n#define PXG_FENCE() __asm__ volatile(\"membar.gl;\" ::: \"memory\")\n"
    "#else\n#define PXG_FENCE() mem_fence(CLK_GLOBAL_MEM_FENCE)\n#endif\n"
    "#define PXG_SHARED __local\n#define PXG_ALIGN16 __attribute__((aligned(16)))\n"
    "#define PXG_ATOMIC_INC(p) atomic_inc((volatile __global uint *)(p))\n"
    "#define PXG_ATOMIC_ADD_U64(p, v) atom_add((volatile __global ulong *)(p), (ulong)(v))\n"
    "#define PXG_BYTE_PERM pxg_byte_perm\n"
    "#define PXG_BYTE(w, k) (((w) >> (8 * (k))) & 255u)\n"
    "#define PXG_HALF(w, k) (((w) >> (16 * (k))) & 65535u)\n"
    "#define PXG_SHALF(w, k) ((int)as_short((ushort)((w) >> (16 * (k)))))\n"
    "#define PXG_MIN2(a, b) as_uint(min(as_ushort2((uint)(a)), as_ushort2((uint)(b))))\n"
    "#define PXG_MAX2(a, b) as_uint(max(as_ushort2((uint)(a)), as_ushort2((uint)(b))))\n"
    "#define PXG_ODD_BYTES(w) (((w) >> 8) & 0x00ff00ffu)\n"
    "#define PXG_FUNNEL16(a, b) (((uint)(a) >> 16) | ((uint)(b) << 16))\n"
    "#define PXG_ZIP_BYTES(a, b) (((uint)(a) & 0x00ff00ffu) | (((uint)(b) & 0x00ff00ffu) << 8))\n"
    "#define PXG_MAXS2(a, b) as_uint(max(as_short2((uint)(a)), as_short2((uint)(b))))\n"
    "#define PXG_ADD2(a, b) as_uint(as_short2((uint)(a)) + as_short2((uint)(b)))\n"
    "#define PXG_SUB2(a, b) as_uint(as_short2((uint)(a)) - as_short2((uint)(b)))\n"
    "#define PXG_PAIR(a, b) ((uint)(a) | ((uint)(b) << 16))\n"
    /* a vector comparison's true is -1 in each component */
    "#define PXG_EQ2(a, b) as_uint(as_ushort2((uint)(a)) == as_ushort2((uint)(b)))\n"
    "#define PXG_NE2(a, b) as_uint(as_ushort2((uint)(a)) != as_ushort2((uint)(b)))\n"
    "#define PXG_LT2S(a, b) as_uint(as_short2((uint)(a)) < as_short2((uint)(b)))\n"
    "#define PXG_LE2S(a, b) as_uint(as_short2((uint)(a)) <= as_short2((uint)(b)))\n"
    "#define PXG_LT2U(a, b) as_uint(as_ushort2((uint)(a)) < as_ushort2((uint)(b)))\n"
    "#define PXG_LE2U(a, b) as_uint(as_ushort2((uint)(a)) <= as_ushort2((uint)(b)))\n"
    PXG_WIDE_WORDS
    "#define PXG_FN_CALLED static\n"
    "#define PXG_AUX baux\n#define PXG_RES bres\n#define PXG_OUT_DATA (bo + out->data)\n"
    "/* CUDA's __byte_perm: byte i of the result is byte (s >> 4i) & 7 of y:x (NVIDIA:\n"
    " * the PTX instruction, -DPXG_NV_PTX from the runtime) */\n"
    "#if defined(PXG_NV_PTX)\n"
    "PXR_FN uint pxg_byte_perm(uint x, uint y, uint s) {\n"
    "  uint r;\n  __asm__(\"prmt.b32 %0, %1, %2, %3;\" : \"=r\"(r) : \"r\"(x), \"r\"(y), \"r\"(s));\n  return r;\n}\n"
    "#else\n"
    "PXR_FN uint pxg_byte_perm(uint x, uint y, uint s) {\n"
    "  const ulong v = ((ulong)y << 32) | x;\n  uint r = 0;\n"
    "  for (int i = 0; i < 4; i++) r |= (uint)((v >> (8 * ((s >> (4 * i)) & 7))) & 255) << (8 * i);\n"
    "  return r;\n}\n"
    "#endif\n"
    "typedef struct { ulong data; int32_t width, height; int64_t pitch; } pxlc_image;\n";

static void header(Gen *g) {
  OUT("%s", g->dialect == GPU_OPENCL ? opencl_words : cuda_words);
  OUT("#define PXG_VEC(n) PXG_VEC_##n\n#define PXG_VEC_1 uint8_t\n#define PXG_VEC_2 uint16_t\n");
  OUT("#define PXG_VEC_4 uint32_t\n#define PXG_VEC_8 uint2\n#define PXG_VEC_16 uint4\n");
  OUT("typedef union { int64_t i; PXR_SCALAR_FLOAT f; } pxlc_scalar;\n");
  OUT("typedef struct { pxlc_image in[%d]; pxlc_scalar sc[%d]; pxlc_image out; %s aux; %s res; int64_t n; int64_t flip; } pxl_kargs;\n",
      PXL_GPU_MAX_IMAGES, PXL_GPU_MAX_SCALARS, g->dialect == GPU_OPENCL ? "ulong" : "void *",
      g->dialect == GPU_OPENCL ? "ulong" : "void *");
  OUT("PXR_FN int pxlc_threads(int n) { (void)n; return 1; }\n");
  if (g->chg_img >= 0) /* CUDA: the thread's report runs on every return of the entry */
    OUT("struct pxg_changed {\n  uint32_t v; void *d, *h; unsigned long long e;\n"
        "  __device__ ~pxg_changed() {\n"
        "    unsigned long long *w = (unsigned long long *)d;\n"
        "    if (v && h && *(volatile unsigned long long *)w != e && atomicExch(w, e) != e) *(volatile uint32_t *)h = 1u;\n"
        "  }\n};\n");
}

static void entry_open(Gen *g, const char *name, bool has_out, unsigned threads) {
  if (g->dialect == GPU_OPENCL) {
    OUT("__kernel void %s(", name);
    for (int i = 0; i < PXL_GPU_MAX_IMAGES; i++) OUT("__global uchar *b%d, ", i);
    OUT("__global uchar *bo, __global uchar *baux, __global uchar *bres, __global uchar *bprm, pxl_kargs a) {\n");
  } else {
    OUT("extern \"C\" __global__ void __launch_bounds__(%u) %s(pxl_kargs a) {\n", threads, name);
    if (g->chg_img >= 0) /* gen_gpu_stage_test: the pixel functions set *chg_ */
      OUT("  pxg_changed chg_s_ = {0u, a.aux, a.res, (unsigned long long)a.n};\n  uint32_t *chg_ = &chg_s_.v;\n");
  }
  OUT("  const pxlc_image *in = a.in;\n  const pxlc_scalar *sc = a.sc;\n  pxlc_image *out = &a.out;\n");
  OUT("  const int nthreads = 0;\n  (void)in; (void)sc; (void)out;\n");
  cg_prologue(g, has_out);
}

static const Param *image_param(const Decl *D, int k) {
  for (int i = 0; i < D->nparams; i++)
    if (D->params[i]->is_image && D->params[i]->img_index == k) return D->params[i];
  return NULL;
}

static int bytes_of(Type t) { return scalar_size(t.s) * t.lanes; }
static bool pow2(int v) { return v > 0 && !(v & (v - 1)); }

/* Elements of `bytes` bytes that make one 4-byte word (1 where they do not divide it). */
static int per_word(int bytes) { return pow2(bytes) && bytes < 4 ? 4 / bytes : 1; }

/* The rows a thread takes in the tuned shape (1..8), or `dflt` untuned. */
static int tuned_rows(const GpuTile *tile, int dflt) {
  return tile && tile->rows >= 1 && tile->rows <= 8 ? tile->rows : dflt;
}

/* Whether kernel D reads no image: its pixels come from scalars and arrays alone (a
 * table made from a histogram, filter weights), usually few of them, each often a loop
 * over an array. It runs one pixel per thread: with 16 per thread, equalize's 256-entry
 * table ran on 16 threads, 4096 iterations each (96 us of ncu time on an H200). */
static bool no_images(const Decl *D) { return D->kind == D_KERNEL && D->nimages == 0; }

/* Pixels per thread of the register path: every image is read at (0, 0) only (or not at
 * all) and every pixel size is a power of two up to 16 bytes; then 16 bytes of the
 * widest image per thread. 0 when the path does not apply. */
static int reg_width(const Decl *D) {
  if (no_images(D) || D->tile[0]) return 0;
  int widest = D->kind == D_KERNEL ? bytes_of(D->type) : 1;
  if (!pow2(widest) || widest > 16) return 0;
  for (int i = 0; i < D->nimages; i++) {
    const Access *ac = &D->access[i];
    if (ac->read_abs || ac->gather) return 0;
    if (!ac->read_rel) continue;
    if (!ac->window_known || ac->x0 || ac->x1 || ac->y0 || ac->y1) return 0;
    int b = bytes_of(image_param(D, i)->type);
    if (!pow2(b) || b > 16) return 0;
    if (b > widest) widest = b;
  }
  return 16 / widest;
}

/* Whether image i's register elements are unpacked from the loaded words with shifts
 * (OpenCL, elements of at most 4 bytes) rather than read through a union: NVIDIA's
 * OpenCL compiler kept such unions in local memory, a load per byte (seen in the PTX of
 * hist256). */
static bool reg_unpacked(const Gen *g, int i) {
  return g->dialect == GPU_OPENCL && scalar_size(image_param(g->D, i)->type.s) <= 4;
}

/* Declares the VP pixels at (xs, y) of each directly read image, loaded with one vector
 * load: union r<k>_ (r<k>_.e the elements), or array r<k>_e filled from the words. */
static void reg_loads(Gen *g, int VP, const char *ind) {
  const Decl *D = g->D;
  for (int i = 0; i < D->nimages; i++) {
    if (!g->direct[i]) continue;
    const Param *p = image_param(D, i);
    int n = VP * bytes_of(p->type), ne = VP * p->type.lanes, es = scalar_size(p->type.s);
    const char *T = cg_ctype(p->type.s);
    char at[200];
    snprintf(at, sizeof at, "*(const PXR_GLOBAL PXG_VEC(%d) *)(i%d + (ptrdiff_t)y * p%d + (ptrdiff_t)xs * %d)", n, i, i,
             p->type.lanes);
    if (!reg_unpacked(g, i)) {
      OUT("%sunion { PXG_VEC(%d) v; %s e[%d]; } r%d_;\n%sr%d_.v = %s;\n", ind, n, T, ne, i, ind, i, at);
      continue;
    }
    OUT("%s%s r%d_e[%d];\n%s{\n%s  const PXG_VEC(%d) w_ = %s;\n", ind, T, i, ne, ind, ind, n, at);
    for (int k = 0; k < ne; k++) {
      int b = k * es;
      char word[16];
      if (n > 4) snprintf(word, sizeof word, "w_.s%d", b / 4);
      else snprintf(word, sizeof word, "(uint)w_");
      OUT("%s  r%d_e[%d] = ", ind, i, k);
      if (p->type.s == T_F32) OUT("as_float(%s);\n", word);
      else if (es == 4) OUT("(%s)%s;\n", T, word);
      else if (es == 2) OUT("as_%s((ushort)(%s >> %d));\n", p->type.s == T_I16 ? "short" : "ushort", word, 8 * (b % 4));
      else OUT("(uchar)(%s >> %d);\n", word, 8 * (b % 4));
    }
    OUT("%s}\n", ind);
  }
}

/* The arguments of a "pv" call after the image/scalar arguments: registers and j_. */
static void reg_args(Gen *g, StrBuf *b) {
  const Decl *D = g->D;
  for (int i = 0; i < D->nimages; i++)
    if (g->direct[i]) sb_printf(b, reg_unpacked(g, i) ? ", r%d_e" : ", r%d_.e", i);
  sb_printf(b, ", j_");
}

/* "all the registers' source rows are aligned at xs" as a condition. */
static void reg_aligned(Gen *g, int VP) {
  const Decl *D = g->D;
  OUT("1");
  for (int i = 0; i < D->nimages; i++) {
    if (!g->direct[i]) continue;
    const Param *p = image_param(D, i);
    OUT(" && !((uintptr_t)(i%d + (ptrdiff_t)y * p%d + (ptrdiff_t)xs * %d) & %d)", i, i, p->type.lanes,
        VP * bytes_of(p->type) - 1);
  }
}

/* t_[0..C) = pixel (x, y): 0 outside the output region, else the interior or the edge
 * function; `lead` begins the first line (its indentation, or "else "). */
static void pixel_value(Gen *g, const char *A, int C, const char *lead, const char *ind) {
  OUT("%sif (x < rx0 || x >= rx1 || y < ry0 || y >= ry1) { for (int c = 0; c < %d; c++) t_[c] = 0; }\n", lead, C);
  OUT("%s  else if (x >= ix0 && x < ix1 && y >= iy0 && y < iy1) %s_pi(%s, x, y, W, H, t_);\n", ind, g->pfx, A);
  OUT("%s  else %s_pe(%s, x, y, W, H, t_);\n", ind, g->pfx, A);
}

/* One pixel (x, y) of a kernel with every check, stored at x in orow. */
static void pixel_checked(Gen *g, const char *A, int C, const char *ind) {
  /* pixel functions write private memory (OpenCL has no generic pointers) */
  OUT("%s{\n%s  %s t_[%d];\n", ind, ind, cg_ctype(g->D->type.s), C);
  char lead[64];
  snprintf(lead, sizeof lead, "%s  ", ind);
  pixel_value(g, A, C, lead, ind);
  OUT("%s  for (int c = 0; c < %d; c++) orow[(ptrdiff_t)x * %d + c] = t_[c];\n%s}\n", ind, C, C, ind);
}

/* The thread's PX x PY pixels at (xs, ys) with every check, those inside W x H; ends the
 * entry. `rolled`: the row loop stays a loop (a tall walk would unroll into copies). */
static void block_checked(Gen *g, const char *A, int PX, int PY, int C, bool rolled) {
  OUT("%s  for (int y = ys; y < ys + %d && y < H; y++) {\n    PXR_GLOBAL %s *orow = o + (ptrdiff_t)y * op;\n",
      rolled ? "  #pragma unroll 1\n" : "", PY, cg_ctype(g->D->type.s));
  OUT("    for (int x = xs; x < xs + %d && x < W; x++) {\n", PX);
  pixel_checked(g, A, C, "      ");
  OUT("    }\n  }\n}\n");
}

/* A call of pixel function `fn` (with arguments `args` before x) for pixel (x, y) into
 * orow, through private memory. */
static void pixel_to_row(Gen *g, const char *fn, const char *args, int C, const char *ind) {
  OUT("%s{ %s t_[%d]; %s_%s(%s, x, y, W, H, t_); for (int c = 0; c < %d; c++) orow[(ptrdiff_t)x * %d + c] = t_[c]; }\n",
      ind, cg_ctype(g->D->type.s), C, g->pfx, fn, args, C, C);
}

static void kernel_open(Gen *g, const char *OT, unsigned threads) {
  entry_open(g, "pxl_stage", true, threads);
  OUT("  PXR_GLOBAL %s *o = (PXR_GLOBAL %s *)PXG_OUT_DATA;\n  const ptrdiff_t op = (ptrdiff_t)(out->pitch / (int64_t)sizeof(%s));\n", OT, OT, OT);
}

/* P2P at (0, 0): VP pixels of one row per thread, 16-byte loads and stores. */
static void kernel_reg(Gen *g, const char *A, int VP, GpuLaunch *L) {
  const Decl *D = g->D;
  int C = D->type.lanes, ob = VP * bytes_of(D->type);
  const char *OT = cg_ctype(D->type.s);
  *L = (GpuLaunch){.grid = GPU_GRID_TILES, .bx = 128, .by = 1, .px = VP, .py = 1};
  kernel_open(g, OT, 256);
  OUT("  const int y = PXG_BY, xs = (PXG_BX * PXG_NTX + PXG_TX) * %d;\n", VP);
  OUT("  if (y >= H || xs >= W) return;\n  PXR_GLOBAL %s *orow = o + (ptrdiff_t)y * op;\n", OT);
  OUT("  if (xs >= ix0 && xs + %d <= ix1 && y >= iy0 && y < iy1 && !((uintptr_t)(orow + (ptrdiff_t)xs * %d) & %d) && ", VP,
      C, ob - 1);
  reg_aligned(g, VP);
  OUT(") {\n");
  reg_loads(g, VP, "    ");
  OUT("    union { PXG_VEC(%d) v; %s e[%d]; } o_;\n", ob, OT, VP * C);
  StrBuf ra = {0};
  reg_args(g, &ra);
  OUT("    #pragma unroll\n    for (int j_ = 0; j_ < %d; j_++) %s_pv(%s%s, xs + j_, y, W, H, o_.e + j_ * %d);\n", VP,
      g->pfx, A, ra.s, C);
  sb_free(&ra);
  OUT("    *(PXR_GLOBAL PXG_VEC(%d) *)(orow + (ptrdiff_t)xs * %d) = o_.v;\n    return;\n  }\n", ob, C);
  OUT("  for (int x = xs; x < xs + %d && x < W; x++) {\n", VP);
  pixel_checked(g, A, C, "    ");
  OUT("  }\n}\n");
}

/* Output pixels per thread of the tile path: 4 bytes of output along x, 4 rows (or the
 * tile's). A separable window whose sums slide takes at least the rows that make the
 * block's 8 x py output rows as many as the window's (up to 8 per thread): the column
 * pass reads each column's window once per block, and the staged tile's halo is the
 * window's height, so on the 8 rows of a 1-row block a 31-row window would read the
 * image 4.75 times and its column sums 5.6 times per pixel. */
static void tile_shape(const Decl *D, const GpuTile *tile, int *px, int *py) {
  if (no_images(D)) {
    *px = *py = 1;
    return;
  }
  int ob = bytes_of(D->type), wb = tile && tile->bytes == 8 ? 8 : 4;
  *px = ob <= wb && wb % ob == 0 ? wb / ob : 1;
  *py = tuned_rows(tile, 4);
  const Separable *S = D->sep;
  if (S && cg_sliding_columns(S) && cg_sliding_rows(S))
    while (*py < 8 && 8 * *py < S->y1 - S->y0 + 1) *py *= 2;
}

/* Bytes per load when staging tiles (4 and 8 measured slower on an H200). */
static int stage_bytes(void) { return 16; }

/* The PX x PY output values of a thread of the tiled entry, v_[row].e (with .v, the
 * row as one vector, when the row is a vector's size). */
static void tile_values(Gen *g, int PX, int PY, bool vec, int rb) {
  int C = g->D->type.lanes;
  const char *OT = cg_ctype(g->D->type.s);
  if (vec) OUT("    union { PXG_VEC(%d) v; %s e[%d]; } v_[%d];\n", rb, OT, PX * C, PY);
  else OUT("    struct { %s e[%d]; } v_[%d];\n", OT, PX * C, PY);
}

/* Stores v_ at (xs, ys): a row per vector store where aligned; `unroll` is the pragma's
 * argument (" 1" keeps the loop). With `masked`, only what lies inside W x H (a tile at
 * the image's right or bottom edge). Ends the thread. */
static void tile_store(Gen *g, int PX, int PY, bool vec, int rb, const char *unroll, bool masked) {
  int C = g->D->type.lanes;
  const char *OT = cg_ctype(g->D->type.s);
  OUT("    #pragma unroll%s\n    for (int j = 0; j < %d; j++) {\n", unroll, PY);
  /* a guarded block, not `break`: after the sliding passes PoCL 3.1's optimised build
   * stored rows past H with the `break` (valgrind: writes past the output buffer) */
  if (masked) OUT("      if (ys + j < H) {\n");
  OUT("      PXR_GLOBAL %s *orow = o + (ptrdiff_t)(ys + j) * op + (ptrdiff_t)xs * %d;\n", OT, C);
  if (vec) {
    if (masked) OUT("      if (xs + %d <= W && !((uintptr_t)orow & %d)) *(PXR_GLOBAL PXG_VEC(%d) *)orow = v_[j].v;\n", PX, rb - 1, rb);
    else OUT("      if (!((uintptr_t)orow & %d)) *(PXR_GLOBAL PXG_VEC(%d) *)orow = v_[j].v;\n", rb - 1, rb);
    OUT("      else ");
  } else {
    OUT("      ");
  }
  if (masked) OUT("for (int e = 0; e < %d && xs + e / %d < W; e++) orow[e] = v_[j].e[e];\n", PX * C, C);
  else OUT("for (int e = 0; e < %d; e++) orow[e] = v_[j].e[e];\n", PX * C);
  if (masked) OUT("      }\n");
  OUT("    }\n    return;\n  }\n");
}

/* Shared-memory staging of the windows of a block (N2P): per directly read image, the
 * rows and columns its reads need around the block's TWO x THO output tile, widened to
 * 16-byte boundaries so that it loads with 16-byte vectors. */
typedef struct {
  int L, R;    /* pixels left of / right of the output tile */
  int TWP, TH; /* tile size in pixels */
  int y0;      /* first row, relative to the output tile's */
} Stage;

#define STAGE_SMEM (40 * 1024)

/* Fills st[] for an output tile TWO x THO; false when staging does not apply: some read
 * is absolute or a gather, no image is read relatively, a pixel size is not a power of
 * two, or the tiles do not fit in shared memory. */
static bool plan_stage(const Gen *g, int TWO, int THO, Stage *st) {
  const Decl *D = g->D;
  int bytes = 0, any = 0, pad = 0;
  bool of_stage[PXL_GPU_MAX_IMAGES] = {false};
  if (g->virt >= 0) { /* the computed tile's rows a multiple of 4 wide (stage_compute's groups):
                       * its producer's images staged that much further right */
    const Access *v = &D->access[g->virt];
    pad = (4 - (v->x1 - v->x0) % 4) % 4;
    for (int i = 0; i < D->stage->nparams; i++)
      if (D->stage->params[i]->is_image) of_stage[D->params[D->stage_map[i]]->img_index] = true;
  }
  for (int i = 0; i < D->nimages; i++) {
    const Access *ac = &D->access[i];
    if (ac->read_abs || ac->gather) return false;
    if (!g->direct[i]) continue;
    int b = bytes_of(image_param(D, i)->type);
    if (i == g->virt) { /* computed, not loaded: no vectors, the window's own margins */
      st[i] = (Stage){.L = -ac->x0, .R = ac->x1 + pad, .TWP = TWO - ac->x0 + ac->x1 + pad, .TH = THO + ac->y1 - ac->y0,
                      .y0 = ac->y0};
      bytes += st[i].TWP * st[i].TH * b;
      continue;
    }
    if (!pow2(b) || b > 16) return false;
    if (b > stage_bytes()) return false;
    int A = stage_bytes() / b; /* pixels per load */
    if (TWO % A) return false;
    st[i].L = (-ac->x0 + A - 1) / A * A;
    st[i].R = (ac->x1 + (of_stage[i] ? pad : 0) + A - 1) / A * A;
    st[i].TWP = TWO + st[i].L + st[i].R;
    st[i].TH = THO + ac->y1 - ac->y0;
    st[i].y0 = ac->y0;
    bytes += st[i].TWP * st[i].TH * b;
    any = 1;
  }
  return any && bytes <= STAGE_SMEM;
}

/* A separable window (analysis: D->sep) over a staged one-channel image: the staged path
 * computes column values once per column and output row, then the row pass ("ph"). */
static bool use_sep(const Gen *g) {
  const Separable *S = g->D->sep;
  for (int i = 0; S && i < S->nacc; i++)
    if (S->wy[i]) return false; /* weighted sums: the window code as written (the CPU splits them) */
  return S && g->direct[S->img->img_index] && S->img->type.lanes == 1;
}

/* The column values c<i>[q] of columns x + x0 + q of one output row (y), read by `rd`
 * (a format with %d for the row offset dy; the column is xc, `xc0` + q), then the row
 * pass ("ph") for the thread's PX pixels into dst[i * C]. */
static void sep_row(Gen *g, const char *A, const char *rd, const char *xc0, int PX, int C, const char *dst,
                    const char *ind) {
  const Separable *S = g->D->sep;
  int NC = PX + S->x1 - S->x0;
  for (int i = 0; i < S->nacc; i++) OUT("%s%s c%d[%d];\n", ind, cg_ctype(S->col[i].s), i, NC);
  OUT("%s#pragma unroll\n%sfor (int q = 0; q < %d; q++) {\n", ind, ind, NC);
  OUT("%s  const int xc = %s + q; /* column q (rd adds any margin) */\n", ind, xc0);
  for (int i = 0; i < S->nacc; i++) {
    Scalar cs = S->col[i].s;
    const char *CT = cg_ctype(cs);
    /* 8- and 16-bit column types are computed in 32 bits (GPUs have no narrower adds):
     * the same values, since analysis chose a type the column cannot overflow */
    bool narrow = cs == T_U8 || cs == T_U16 || cs == T_I16;
    const char *AT = !narrow ? CT : (cs == T_U8 || cs == T_U16) ? "uint32_t" : "int32_t";
    OUT("%s  {\n%s    %s v = (%s)", ind, ind, AT, AT);
    sb_printf(g->o, rd, S->y0);
    OUT(";\n");
    for (int dy = S->y0 + 1; dy <= S->y1; dy++) {
      OUT("%s    {\n%s      const %s r = (%s)", ind, ind, AT, AT);
      sb_printf(g->o, rd, dy);
      OUT(";\n%s      ", ind);
      if (S->op[i] >= 0 && narrow) OUT("v = r %s v ? r : v;\n", S->op[i] == BI_MIN ? "<" : ">");
      else if (S->op[i] >= 0) OUT("v = pxr_%s_%s(v, r);\n", S->op[i] == BI_MIN ? "min" : "max", scalar_name(cs));
      else if (narrow) OUT("v += r;\n");
      else if (cs == T_I32 || cs == T_I64) OUT("v = pxr_add_%s(v, r);\n", scalar_name(cs));
      else OUT("v = (%s)(v + r);\n", CT);
      OUT("%s    }\n", ind);
    }
    OUT("%s    c%d[q] = (%s)v;\n%s  }\n", ind, i, CT, ind);
  }
  OUT("%s}\n%s#pragma unroll\n%sfor (int i = 0; i < %d; i++) %s_ph(%s", ind, ind, ind, PX, g->pfx, A);
  for (int i = 0; i < S->nacc; i++) OUT(", c%d", i);
  OUT(", xs + %d, xs + i, y, W, H, %s + i * %d);\n", S->x0, dst, C);
}

/* Per output row j of the thread: the column values from the staged tile, then the row
 * pass (sep_row). */
static void sep_tiles(Gen *g, const char *A, const Stage *st, int PX, int PY, int C) {
  const Separable *S = g->D->sep;
  int k = S->img->img_index;
  char rd[160], xc0[64];
  snprintf(rd, sizeof rd, "t%d[(ptrdiff_t)(y + %%d - ty0 - %d) * %d + (xc + %d)]", k, st[k].y0, st[k].TWP, st[k].L);
  snprintf(xc0, sizeof xc0, "xs - tx0 + %d", S->x0);
  OUT("    #pragma unroll\n    for (int j = 0; j < %d; j++) {\n      const int y = ys + j;\n", PY);
  sep_row(g, A, rd, xc0, PX, C, "v_[j].e", "      ");
  OUT("    }\n");
}

/* Whether the staged path slides a separable window (integer sums, as the CPU does), and
 * in how many bands of the block's rows: the column sums of a band's rows are kept in
 * shared memory beside the staged tiles, within STAGE_SMEM; more bands, less memory.
 * 0: no sliding (not such a window, or even a band of one thread row does not fit). */
static int slide_bands(const Gen *g, const Stage *st, int TWO, int THO) {
  const Separable *S = g->D->sep;
  if (!use_sep(g) || !cg_sliding_columns(S) || !cg_sliding_rows(S)) return 0;
  int tiles = 0, row = 0;
  for (int i = 0; i < g->D->nimages; i++)
    if (g->direct[i]) tiles += st[i].TWP * st[i].TH * bytes_of(image_param(g->D, i)->type);
  for (int i = 0; i < S->nacc; i++) row += (TWO + S->x1 - S->x0) * scalar_size(S->col[i].s);
  for (int nb = 1; nb <= 8; nb *= 2)
    if (tiles + row * (THO / nb) <= STAGE_SMEM) return nb;
  return 0;
}

/* The shared arrays of slide_tiles' column sums (at the kernel's outermost scope, where
 * OpenCL wants local memory declared). */
static void slide_arrays(Gen *g, int TWO, int THO, int NB) {
  const Separable *S = g->D->sep;
  for (int i = 0; i < S->nacc; i++)
    OUT("  PXG_SHARED %s cs%d_[%d];\n", cg_ctype(S->col[i].s), i, (TWO + S->x1 - S->x0) * (THO / NB));
}

/* The column pass of slide_tiles for band b_: a thread per column of the band (columns
 * xs + x0 .. of the tile's pixels), summing the window's first rows, then sliding down:
 * the row entering the window added, the one leaving it taken away, in unsigned
 * arithmetic of the column type's width, whose wrap-around leaves the full sum's bits. */
static void slide_columns(Gen *g, const Stage *st, int CW, int BR) {
  const Separable *S = g->D->sep;
  int k = S->img->img_index, hy = S->y1 - S->y0, P = st[k].TWP;
  const char *TT = cg_ctype(S->img->type.s);
  OUT("      for (int c = t; c < %d; c += 256) {\n", CW);
  OUT("        const PXR_LOCAL %s *tc = t%d + (ptrdiff_t)(b_ * %d + %d) * %d + c + %d;\n", TT, k, BR, S->y0 - st[k].y0, P,
      S->x0 + st[k].L);
  for (int i = 0; i < S->nacc; i++) OUT("        %s cv%d = 0;\n", cg_unsigned_ctype(S->col[i].s), i);
  OUT("        #pragma unroll 4\n        for (int r = 0; r <= %d; r++) {\n          const %s e = tc[r * %d];\n", hy, TT, P);
  for (int i = 0; i < S->nacc; i++)
    OUT("          cv%d += (%s)(%s)e;\n", i, cg_unsigned_ctype(S->col[i].s), cg_ctype(S->col[i].s));
  OUT("        }\n");
  for (int i = 0; i < S->nacc; i++) OUT("        cs%d_[c] = (%s)cv%d;\n", i, cg_ctype(S->col[i].s), i);
  OUT("        #pragma unroll 1\n        for (int r = 1; r < %d; r++) {\n", BR);
  OUT("          const %s a = tc[(r + %d) * %d], d = tc[(r - 1) * %d];\n", TT, hy, P, P);
  for (int i = 0; i < S->nacc; i++) {
    const char *CT = cg_ctype(S->col[i].s), *UT = cg_unsigned_ctype(S->col[i].s);
    OUT("          cv%d += (%s)(%s)a - (%s)(%s)d;\n", i, UT, CT, UT, CT);
    OUT("          cs%d_[r * %d + c] = (%s)cv%d;\n", i, CW, CT, i);
  }
  OUT("        }\n      }\n");
}

/* The row pass of slide_tiles: for each of the thread's rows, the sum of the first
 * window's column sums, then along its PX pixels the column entering the window added
 * and the one leaving it taken away; the window sums go to the pixel function "pr". */
static void slide_rows(Gen *g, const char *A, int CW, int PX, int PY, int TB, int C) {
  const Separable *S = g->D->sep;
  int hx = S->x1 - S->x0;
  OUT("      #pragma unroll\n      for (int j = 0; j < %d; j++) {\n", PY);
  for (int i = 0; i < S->nacc; i++) {
    const char *AT = cg_ctype(S->acc[i]->type.s), *UT = cg_unsigned_ctype(S->acc[i]->type.s);
    OUT("        const PXR_LOCAL %s *cr%d = cs%d_ + (ptrdiff_t)((PXG_TY - b_ * %d) * %d + j) * %d + (xs - tx0);\n",
        cg_ctype(S->col[i].s), i, i, TB, PY, CW);
    OUT("        %s rs%d = 0;\n", AT, i);
    OUT("        #pragma unroll 4\n        for (int q = 0; q < %d; q++) rs%d = (%s)((%s)rs%d + (%s)cr%d[q]);\n", hx, i, AT,
        UT, i, UT, i);
  }
  OUT("        #pragma unroll\n        for (int i = 0; i < %d; i++) {\n", PX);
  for (int i = 0; i < S->nacc; i++) {
    const char *AT = cg_ctype(S->acc[i]->type.s), *UT = cg_unsigned_ctype(S->acc[i]->type.s);
    OUT("          rs%d = (%s)((%s)rs%d + (%s)cr%d[i + %d]);\n", i, AT, UT, i, UT, i, hx);
  }
  OUT("          %s_pr(%s", g->pfx, A);
  for (int i = 0; i < S->nacc; i++) OUT(", rs%d", i);
  OUT(", xs + i, ys + j, W, H, v_[j].e + i * %d);\n", C);
  for (int i = 0; i < S->nacc; i++) {
    const char *AT = cg_ctype(S->acc[i]->type.s), *UT = cg_unsigned_ctype(S->acc[i]->type.s);
    OUT("          rs%d = (%s)((%s)rs%d - (%s)cr%d[i]);\n", i, AT, UT, i, UT, i);
  }
  OUT("        }\n      }\n");
}

/* A separable window of integer sums over the staged tile, O(1) reads per pixel whatever
 * its size, in NB bands of the block's thread rows (slide_bands): per band, the threads
 * together compute the column sums of the band's output rows into shared memory, then
 * the band's threads their pixels from them. Loops whose trip count grows with the
 * window stay loops (unrolled 4 at most): the unit compiles as fast for 31 x 31 as for
 * 3 x 3. */
static void slide_tiles(Gen *g, const char *A, const Stage *st, int TWO, int THO, int PX, int PY, int C, int NB) {
  const Separable *S = g->D->sep;
  int CW = TWO + S->x1 - S->x0, BR = THO / NB, TB = 8 / NB;
  OUT("    #pragma unroll 1\n    for (int b_ = 0; b_ < %d; b_++) {\n", NB);
  OUT("      if (b_) PXG_SYNC(); /* the last band's row pass is done with the column sums */\n");
  slide_columns(g, st, CW, BR);
  OUT("      PXG_SYNC();\n");
  if (NB > 1) OUT("      if (PXG_TY / %d == b_) {\n", TB);
  slide_rows(g, A, CW, PX, PY, TB, C);
  if (NB > 1) OUT("      }\n");
  OUT("    }\n");
}

/* ---- sliding windows in strips ----
 *
 * A separable window of integer sums whose column and row passes slide (boxr at any r):
 * a block of 256 threads covers 256 output columns and a strip of SH output rows, which
 * it walks down in chunks of R rows. The input rows go once each, with 16-byte loads
 * issued before the previous chunk's row pass (so that they arrive during it), into a
 * ring of m blocks of R rows in shared memory; each thread keeps the running sums of its
 * columns in registers from chunk to chunk (adding the row that enters the window,
 * taking away the one that leaves it), so that a pixel is read about once however tall
 * the window is (the window's height once more per strip). With the ring in blocks of
 * the chunk's height, the rows leaving the window in a chunk are one block and the rows
 * entering it two runs at offsets known when generating: no index wraps in the loop. The
 * chunk's column sums go to shared memory, and a thread slides the row sum along R
 * output pixels of one row, storing 16 bytes at a time. */
#define STRIP_W 256 /* output columns per block, and threads per block */

typedef struct {
  int R;         /* output rows per chunk, and output pixels per thread of the row pass */
  int SH;        /* output rows per block: a multiple of R */
  int A;         /* pixels per 16-byte load */
  int sL, RWP;   /* the ring's first column, relative to the block's first output column; its row */
  int q, rem, m; /* window height = q * R + rem; ring blocks of R rows */
  int CW;        /* column sums per row: the block's columns and the window's width - 1 */
  int CWP[PXL_MAX_SEP_ACC]; /* their rows' pitch, so that R rows fall in different banks */
  int NCOL;      /* columns per thread in the column pass */
} Strip;

static int floor_div(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/* Whether kernel D runs as strips (a sliding window of sums on one-channel pixels, one
 * output channel, within shared memory) and how; tile's rows and bytes choose the strip's
 * height (tunable). */
static bool strip_plan(const Gen *g, const GpuTile *tile, Strip *sp) {
  const Decl *D = g->D;
  const Separable *S = D->sep;
  if (D->kind != D_KERNEL || reg_width(D) || cg_corner_tiles(D) || D->type.lanes != 1) return false;
  if (!S || !use_sep(g) || !cg_sliding_columns(S) || !cg_sliding_rows(S)) return false;
  int b = bytes_of(S->img->type), hx = S->x1 - S->x0, hy = S->y1 - S->y0;
  if (!pow2(b) || b > 16 || !pow2(bytes_of(D->type)) || bytes_of(D->type) > 16) return false;
  if (STRIP_W + S->x1 <= 0 || hx >= 3 * STRIP_W) return false;
  sp->A = 16 / b;
  sp->sL = floor_div(S->x0, sp->A) * sp->A;
  sp->RWP = (STRIP_W + S->x1 + sp->A - 1) / sp->A * sp->A - sp->sL;
  sp->CW = STRIP_W + hx;
  sp->NCOL = (sp->CW + STRIP_W - 1) / STRIP_W;
  for (int i = 0; i < S->nacc; i++) {
    int es = scalar_size(S->col[i].s), p = sp->CW;
    if (es == 2) while (p % 4 != 2) p++;
    else if (!(p & 1)) p++;
    sp->CWP[i] = p;
  }
  for (sp->R = 32; sp->R >= 8; sp->R /= 2) {
    sp->q = (hy + 1) / sp->R;
    sp->rem = (hy + 1) % sp->R;
    sp->m = sp->q + (sp->rem ? 2 : 1);
    int smem = sp->m * sp->R * sp->RWP * b;
    for (int i = 0; i < S->nacc; i++) smem += sp->R * sp->CWP[i] * scalar_size(S->col[i].s);
    if (smem <= STAGE_SMEM) break;
  }
  if (sp->R < 8) return false;
  int rows = tuned_rows(tile, 4);
  sp->SH = 32 * rows * (tile && tile->bytes == 8 ? 4 : 1);
  return true;
}

/* The 16-byte vectors per thread of loading n rows. */
static int strip_per(const Strip *sp, int n) { return (n * sp->RWP / sp->A + STRIP_W - 1) / STRIP_W; }

/* Starts loading n input rows, rel0 .. rel0 + n - 1 counted from the strip's first (row
 * ys0 + y0 - 1): into registers v_ when they lie inside the image and are aligned (fast_). */
static void strip_fetch(Gen *g, const Strip *sp, const char *rel0, int n, const char *ind) {
  const Separable *S = g->D->sep;
  int k = S->img->img_index, NV = sp->RWP / sp->A;
  OUT("%sl0 = %s;\n%s{\n%s  const int r0 = ys0 + %d + l0;\n", ind, rel0, ind, ind, S->y0 - 1);
  OUT("%s  fast_ = cols_in && r0 >= 0 && r0 + %d <= h%d;\n", ind, n, k);
  OUT("%s  if (fast_) {\n%s    #pragma unroll\n%s    for (int kk = 0; kk < %d; kk++) {\n", ind, ind, ind, strip_per(sp, n));
  OUT("%s      const int q = t + kk * %d, r = q / %d, c = q - r * %d;\n", ind, STRIP_W, NV, NV);
  OUT("%s      if (q < %d) v_[kk] = *(const PXR_GLOBAL uint4 *)(i%d + (ptrdiff_t)(r0 + r) * p%d + c0 + c * %d);\n", ind,
      n * NV, k, k, sp->A);
  OUT("%s    }\n%s  }\n%s}\n", ind, ind, ind);
}

/* Puts the n rows of the last strip_fetch into ring slots (rel % (m R)): from v_, or
 * pixel by pixel through the border-reading function. */
static void strip_put(Gen *g, const Strip *sp, int n, const char *ind) {
  const Separable *S = g->D->sep;
  int k = S->img->img_index, NV = sp->RWP / sp->A, RB = sp->m * sp->R;
  OUT("%sif (fast_) {\n%s  #pragma unroll\n%s  for (int kk = 0; kk < %d; kk++) {\n", ind, ind, ind, strip_per(sp, n));
  OUT("%s    const int q = t + kk * %d, r = q / %d, c = q - r * %d;\n", ind, STRIP_W, NV, NV);
  OUT("%s    if (q < %d) *(PXR_LOCAL uint4 *)(rg_ + ((l0 + r) %% %d) * %d + c * %d) = v_[kk];\n", ind, n * NV, RB, sp->RWP,
      sp->A);
  OUT("%s  }\n%s} else {\n", ind, ind);
  OUT("%s  for (int q = t; q < %d; q += %d) {\n%s    const int r = q / %d, c = q - r * %d;\n", ind, n * sp->RWP, STRIP_W,
      ind, sp->RWP, sp->RWP);
  OUT("%s    rg_[((l0 + r) %% %d) * %d + c] = %s_rd%d(i%d, p%d, w%d, h%d, c0 + c, ys0 + %d + l0 + r, 0);\n%s  }\n%s}\n", ind,
      RB, sp->RWP, g->pfx, k, k, k, k, k, S->y0 - 1, ind, ind);
}

/* Rows j0 <= j < j1 of the column pass: the running sums (cv) of column c, with the
 * entering row at ring index ea + j * RWP and the leaving one at ld + j * RWP. Unsigned
 * arithmetic of the column type's width (wrap-around leaves the full sum's bits). */
static void strip_slide(Gen *g, const Strip *sp, int n, const char *ea, int j0, int j1) {
  const Separable *S = g->D->sep;
  const char *TT = cg_ctype(S->img->type.s);
  if (j0 >= j1) return;
  OUT("      #pragma unroll\n      for (int j = %d; j < %d; j++) {\n", j0, j1);
  OUT("        const %s a = tc[%s + j * %d], d = tc[ld + j * %d];\n", TT, ea, sp->RWP, sp->RWP);
  for (int i = 0; i < S->nacc; i++) {
    const char *CT = cg_ctype(S->col[i].s), *UT = cg_unsigned_ctype(S->col[i].s);
    OUT("        cv%d_%d += (%s)(%s)a - (%s)(%s)d;\n", i, n, UT, CT, UT, CT);
    OUT("        cs%d_[j * %d + c] = (%s)cv%d_%d;\n", i, sp->CWP[i], CT, i, n);
  }
  OUT("      }\n");
}

/* The column pass of a chunk (ring block kb_ leaving): per column of the thread, its
 * running sums into the chunk's rows of the column sums; on the strip's first chunk they
 * start as the sums of the window's first rows (ring rows 0 .. window height - 1). */
static void strip_columns(Gen *g, const Strip *sp) {
  const Separable *S = g->D->sep;
  int hy = S->y1 - S->y0, off = S->x0 - sp->sL, R = sp->R, W = R * sp->RWP;
  const char *TT = cg_ctype(S->img->type.s);
  OUT("    {\n      const int ld = kb_ * %d, e1 = kb_ + %d < %d ? kb_ + %d : kb_ + %d;\n", W, sp->q, sp->m, sp->q,
      sp->q - sp->m);
  OUT("      const int ea1 = e1 * %d + %d, ea2 = (e1 + 1 == %d ? 0 : e1 + 1) * %d - %d;\n", W, sp->rem * sp->RWP, sp->m, W,
      (R - sp->rem) * sp->RWP);
  OUT("      (void)ea2;\n");
  for (int n = 0; n < sp->NCOL; n++) {
    OUT("    if (t + %d < %d) {\n      const int c = t + %d;\n", n * STRIP_W, sp->CW, n * STRIP_W);
    OUT("      const PXR_LOCAL %s *tc = rg_ + c + %d;\n", TT, off);
    OUT("      if (yc == ys0) {\n");
    for (int i = 0; i < S->nacc; i++) OUT("        cv%d_%d = 0;\n", i, n);
    OUT("        #pragma unroll 4\n        for (int r = 0; r <= %d; r++) {\n          const %s e = tc[r * %d];\n", hy, TT,
        sp->RWP);
    for (int i = 0; i < S->nacc; i++)
      OUT("          cv%d_%d += (%s)(%s)e;\n", i, n, cg_unsigned_ctype(S->col[i].s), cg_ctype(S->col[i].s));
    OUT("        }\n      }\n");
    strip_slide(g, sp, n, "ea1", 0, R - sp->rem);
    strip_slide(g, sp, n, "ea2", R - sp->rem, R);
    OUT("    }\n");
  }
  OUT("    }\n");
}

/* One run of VP pixels of the row pass into u_, `checked`: those outside the output
 * region are 0. */
static void strip_pixels(Gen *g, const char *A, const Strip *sp, int VP, bool checked) {
  const Separable *S = g->D->sep;
  int hx = S->x1 - S->x0;
  OUT("            #pragma unroll\n            for (int m_ = 0; m_ < %d; m_++) {\n", VP);
  OUT("              const int x = xb + xo_ + m_;\n");
  for (int i = 0; i < S->nacc; i++) {
    const char *AT = cg_ctype(S->acc[i]->type.s), *UT = cg_unsigned_ctype(S->acc[i]->type.s);
    OUT("              rs%d = (%s)((%s)rs%d + (%s)cr%d[xo_ + m_ + %d]);\n", i, AT, UT, i, UT, i, hx);
  }
  OUT("              ");
  if (checked) OUT("if (x >= rx0 && x < rx1 && y >= ry0 && y < ry1) ");
  OUT("%s_pr(%s", g->pfx, A);
  for (int i = 0; i < S->nacc; i++) OUT(", rs%d", i);
  OUT(", x, y, W, H, u_.e + m_);\n");
  if (checked) OUT("              else u_.e[m_] = 0;\n");
  for (int i = 0; i < S->nacc; i++) {
    const char *AT = cg_ctype(S->acc[i]->type.s), *UT = cg_unsigned_ctype(S->acc[i]->type.s);
    OUT("              rs%d = (%s)((%s)rs%d - (%s)cr%d[xo_ + m_]);\n", i, AT, UT, i, UT, i);
  }
  OUT("            }\n");
}

/* The row pass of a chunk: thread t takes row t % R of the chunk and the R output
 * pixels from column (t / R) * R; the sum of the window's first column sums, then along
 * the pixels the entering column added and the leaving one taken away ("pr" gets the
 * window sums); 16 bytes per store. */
static void strip_rows(Gen *g, const char *A, const Strip *sp) {
  const Decl *D = g->D;
  const Separable *S = D->sep;
  int hx = S->x1 - S->x0, ob = bytes_of(D->type), VP = 16 / ob < sp->R ? 16 / ob : sp->R;
  const char *OT = cg_ctype(D->type.s);
  OUT("    {\n      const int j = t %% %d, xb = cx0 + (t / %d) * %d, y = yc + j;\n", sp->R, sp->R, sp->R);
  OUT("      if (y < ye0) {\n");
  OUT("        const bool full = y >= ry0 && y < ry1 && xb >= rx0 && xb + %d <= rx1;\n", sp->R);
  for (int i = 0; i < S->nacc; i++) {
    const char *AT = cg_ctype(S->acc[i]->type.s), *UT = cg_unsigned_ctype(S->acc[i]->type.s);
    OUT("        const PXR_LOCAL %s *cr%d = cs%d_ + j * %d + (t / %d) * %d;\n", cg_ctype(S->col[i].s), i, i, sp->CWP[i],
        sp->R, sp->R);
    OUT("        %s rs%d = 0;\n", AT, i);
    OUT("        #pragma unroll 4\n        for (int q = 0; q < %d; q++) rs%d = (%s)((%s)rs%d + (%s)cr%d[q]);\n", hx, i, AT,
        UT, i, UT, i);
  }
  OUT("        #pragma unroll 1\n        for (int xo_ = 0; xo_ < %d; xo_ += %d) {\n", sp->R, VP);
  OUT("          union { PXG_VEC(%d) v; %s e[%d]; } u_;\n", VP * ob, OT, VP);
  OUT("          if (full) {\n");
  strip_pixels(g, A, sp, VP, false);
  OUT("          } else {\n");
  strip_pixels(g, A, sp, VP, true);
  OUT("          }\n");
  OUT("          PXR_GLOBAL %s *orow = o + (ptrdiff_t)y * op + (xb + xo_);\n", OT);
  OUT("          if (xb + xo_ + %d <= W && !((uintptr_t)orow & %d)) *(PXR_GLOBAL PXG_VEC(%d) *)orow = u_.v;\n", VP,
      VP * ob - 1, VP * ob);
  /* unrolled, so that u_ stays in registers (an index known only at run time puts it in
   * local memory) */
  OUT("          else {\n            #pragma unroll\n            for (int e = 0; e < %d; e++)\n", VP);
  OUT("              if (xb + xo_ + e < W) orow[e] = u_.e[e];\n          }\n");
  OUT("        }\n      }\n    }\n");
}

/* The strip entry (strip_plan): grid W / 256 x H / SH blocks of 256 threads. */
static void kernel_strips(Gen *g, const char *A, const Strip *sp, GpuLaunch *L) {
  const Decl *D = g->D;
  const Separable *S = D->sep;
  int k = S->img->img_index, hy = S->y1 - S->y0, R = sp->R;
  const char *TT = cg_ctype(S->img->type.s);
  *L = (GpuLaunch){.grid = GPU_GRID_TILES, .bx = STRIP_W, .by = 1, .px = 1, .py = sp->SH, .tiled = true};
  kernel_open(g, cg_ctype(D->type.s), 256);
  OUT("  PXG_SHARED PXG_ALIGN16 %s rg_[%d];\n", TT, sp->m * R * sp->RWP);
  for (int i = 0; i < S->nacc; i++) OUT("  PXG_SHARED %s cs%d_[%d];\n", cg_ctype(S->col[i].s), i, R * sp->CWP[i]);
  OUT("  const int t = PXG_TX, cx0 = PXG_BX * %d, ys0 = PXG_BY * %d;\n", STRIP_W, sp->SH);
  OUT("  if (cx0 >= W || ys0 >= H) return;\n");
  OUT("  const int ye0 = ys0 + %d < H ? ys0 + %d : H, c0 = cx0 + %d;\n", sp->SH, sp->SH, sp->sL);
  OUT("  const bool cols_in = c0 >= 0 && c0 + %d <= w%d && !((uintptr_t)(i%d + c0) & 15) && !((p%d * (ptrdiff_t)sizeof(%s)) & 15);\n",
      sp->RWP, k, k, k, TT);
  for (int i = 0; i < S->nacc; i++)
    for (int n = 0; n < sp->NCOL; n++) OUT("  %s cv%d_%d = 0;\n", cg_unsigned_ctype(S->col[i].s), i, n);
  int per = strip_per(sp, hy + 1 > R ? hy + 1 : R);
  OUT("  uint4 v_[%d];\n  int l0;\n  bool fast_;\n", per);
  strip_fetch(g, sp, "0", hy + 1, "  ");
  strip_put(g, sp, hy + 1, "  ");
  char rel[48];
  snprintf(rel, sizeof rel, "%d", hy + 1);
  strip_fetch(g, sp, rel, R, "  ");
  OUT("  int kb_ = 0; /* the ring block of the chunk's rows leaving the window */\n");
  OUT("  #pragma unroll 1\n  for (int yc = ys0; yc < ye0; yc += %d) {\n", R);
  strip_put(g, sp, R, "    ");
  OUT("    PXG_SYNC();\n");
  strip_columns(g, sp);
  OUT("    kb_ = kb_ + 1 == %d ? 0 : kb_ + 1;\n    PXG_SYNC();\n", sp->m);
  snprintf(rel, sizeof rel, "yc + %d - ys0", R + hy + 1);
  OUT("    if (yc + %d < ye0) {\n", R);
  strip_fetch(g, sp, rel, R, "      ");
  OUT("    }\n");
  strip_rows(g, A, sp);
  OUT("  }\n}\n");
}

/* Fills the tw x th tile of image i whose first pixel is (x0, y0) (C expressions) pixel
 * by pixel through its border-reading function: into array dst, and dst2 too unless
 * NULL; a block of 256 threads `t`, each pixel's lanes together. */
static void tile_read(Gen *g, int i, int tw, int th, const char *x0, const char *y0, const char *dst, const char *dst2,
                      const char *ind) {
  const Param *p = image_param(g->D, i);
  int lanes = p->type.lanes;
  OUT("%sfor (int q = t; q < %d; q += 256) {\n%s  const int r = q / %d, c = q - r * %d;\n", ind, tw * th, ind, tw, tw);
  OUT("%s  for (int l = 0; l < %d; l++) {\n", ind, lanes);
  OUT("%s    const %s v = %s_rd%d(i%d, p%d, w%d, h%d, %s + c, %s + r, l);\n", ind, cg_ctype(p->type.s), g->pfx, i, i,
      i, i, i, x0, y0);
  OUT("%s    %s[q * %d + l] = v;\n", ind, dst, lanes);
  if (dst2) OUT("%s    %s[q * %d + l] = v;\n", ind, dst2, lanes);
  OUT("%s  }\n%s}\n", ind, ind);
}

/* The image number in D of parameter i of D->stage (a rule C kernel's producer). */
static int stage_image(const Decl *D, int i) { return D->params[D->stage_map[i]]->img_index; }

/* The arguments of D->stage's pixel functions, from D's entry: its images' and scalars'
 * variables, then with `tiles` its staged tiles t<k> (D's numbering, as stage_tiles
 * declares them) with their origins and pitches. */
static void stage_args(Gen *g, const Stage *st, bool tiles) {
  const Decl *D = g->D, *K = D->stage;
  for (int i = 0; i < K->nparams; i++) {
    const Param *p = K->params[i], *q = D->params[D->stage_map[i]];
    if (i) OUT(", ");
    if (p->is_image) OUT("i%d, p%d, w%d, h%d", q->img_index, q->img_index, q->img_index, q->img_index);
    else OUT("s%d", q->scalar_index);
  }
  for (int i = 0; tiles && i < K->nparams; i++) {
    if (!K->params[i]->is_image) continue;
    int k = stage_image(D, i);
    OUT(", t%d, tx0 - %d, ty0 + %d, %d", k, st[k].L, st[k].y0, st[k].TWP * image_param(D, k)->type.lanes);
  }
}

/* Fills the tile of a rule C kernel's computed image (g->virt) with its producer's values
 * at the tile's positions: `staged` (an interior tile, its producer's images staged
 * already) from those tiles after a barrier, through the producer's "ps"; else (a tile at
 * the edges) through <pfx>_vk, which maps each position by the tile's border mode and
 * computes the producer there through its border-reading functions. */
static void stage_compute(Gen *g, const char *A, const Stage *st, bool staged) {
  const Decl *D = g->D;
  int v = g->virt, C = image_param(D, v)->type.lanes;
  if (staged) {
    /* a thread computes 4 neighbouring positions of a row (plan_stage makes the rows a
     * multiple of 4 wide), so that their window's loads are shared (common subexpressions
     * of the unrolled calls, as in the tile path); into registers first: OpenCL's pixel
     * functions write private memory */
    int NS = st[v].TWP / 4;
    OUT("    PXG_SYNC();\n");
    OUT("    for (int q = t; q < %d; q += 256) {\n      const int r = q / %d, c0 = (q - r * %d) * 4;\n", NS * st[v].TH, NS,
        NS);
    OUT("      const int y = ty0 + %d + r;\n      %s o_[4][%d];\n", st[v].y0, cg_ctype(image_param(D, v)->type.s), C);
    OUT("      #pragma unroll\n      for (int i = 0; i < 4; i++) {\n        sk_ps(");
    stage_args(g, st, true);
    OUT(", tx0 - %d + c0 + i, y, w%d, h%d, o_[i]);\n      }\n", st[v].L, v, v);
    OUT("      #pragma unroll\n      for (int i = 0; i < 4; i++)\n");
    OUT("        for (int l = 0; l < %d; l++) t%d[(r * %d + c0 + i) * %d + l] = o_[i][l];\n    }\n", C, v, st[v].TWP, C);
    return;
  }
  OUT("    for (int q = t; q < %d; q += 256) {\n      const int r = q / %d, c = q - r * %d;\n", st[v].TWP * st[v].TH,
      st[v].TWP, st[v].TWP);
  OUT("      const int x = tx0 - %d + c, y = ty0 + %d + r;\n", st[v].L, st[v].y0);
  OUT("      for (int l = 0; l < %d; l++) t%d[q * %d + l] = %s_vk(%s, x, y, l);\n    }\n", C, v, C, g->pfx, A);
}

/* The functions a rule C kernel (D->stage) needs before its own: the producer's, prefix
 * "sk" (read functions with its borders, taken from D's for its images; "pe" and "pi";
 * "ps" over tiles), and <pfx>_vk(D's parameters, x, y, c), channel c of the producer's
 * value at (x, y) mapped into the image by the tile's border mode. */
static void stage_fns(Gen *g, const Border *borders) {
  const Decl *D = g->D, *K = D->stage;
  Border kb[PXL_GPU_MAX_IMAGES];
  bool kdirect[PXL_GPU_MAX_IMAGES];
  for (int i = 0; i < K->nparams; i++)
    if (K->params[i]->is_image) kb[K->params[i]->img_index] = borders[stage_image(D, i)];
  Gen kg;
  cg_init(&kg, g->o, K, kb, "sk", kdirect);
  kg.dialect = g->dialect;
  kg.nhoist = 0; /* its scalar-only values computed where used: D's entry computes D's */
  cg_functions(&kg);
  cg_pixel_fn(&kg, V_SMEM | V_DIRECT_REL, "ps", false);
  int v = g->virt;
  const Param *tp = image_param(D, v);
  const char *map = cg_border_index_fn(borders[v].kind);
  StrBuf params = {0};
  cg_params_text(g, &params);
  /* called, not inlined (CUDA): the edge path calls it at every tap of the consumer's
   * window, and each inlined copy held the producer's whole window of border reads (an
   * edges.pxl unit of 27,000 PTX lines, seconds of JIT per tile shape tried) */
  OUT("PXG_FN_CALLED %s %s_vk(%s, int x, int y, int c) {\n", cg_ctype(tp->type.s), g->pfx, params.s ? params.s : "");
  sb_free(&params);
  OUT("  if (!pxr_inside(x, w%d)) x = %s(x, w%d);\n  if (!pxr_inside(y, h%d)) y = %s(y, h%d);\n", v, map, v, v, map, v);
  OUT("  %s o[%d];\n  sk_pe(", cg_ctype(tp->type.s), tp->type.lanes);
  stage_args(g, NULL, false);
  OUT(", x, y, w%d, h%d, o);\n  return o[c];\n}\n", v, v);
}

/* Whether a staged tile's pixels are computed in pairs (packed.h: "pk", reads from the
 * tile), PX a multiple of 4 one-channel pixels: median5 on an H200 at 8192^2 0.865 ->
 * 0.449 ms. CUDA only: built by PoCL 3.1 with its optimiser on, these kernels returned
 * zeros (median5; tests/diff/packed.pxl's pk_wide; diff_opencl_optimised), the same
 * source unoptimised and on NVIDIA's OpenCL gave the interpreter's results; not
 * root-caused (the packed walking kernels, without a barrier, are right there). */
static bool tiles_pk(const Gen *g, int PX) {
  return g->dialect == GPU_CUDA && !(PX % 4) && PX <= 16 && g->D->type.lanes == 1 && !use_sep(g) &&
         gp_packable(g, V_SMEM | V_DIRECT_REL);
}

/* The staged path of kernel_tiles. An interior tile whose windows lie inside the images
 * loads them with 16-byte vectors; a tile at the image's edges (when the output region is
 * the whole image, i.e. no border mode shrinks it) loads them pixel by pixel through the
 * border-reading functions, so the shared tile holds what the border mode reads and the
 * same pixel code serves both. Then the pixels from the tiles ("ps", or the separable
 * column and row passes). */
static void stage_tiles(Gen *g, const char *A, const Stage *st, int TWO, int THO, int PX, int PY, bool vec, int rb) {
  const Decl *D = g->D;
  int C = D->type.lanes;
  OUT("  const int t = (PXG_TY * PXG_NTX + PXG_TX);\n");
  OUT("  bool staged = tx0 >= ix0 && tx0 + %d <= ix1 && ty0 >= iy0 && ty0 + %d <= iy1;\n", TWO, THO);
  for (int i = 0; i < D->nimages; i++) {
    if (!g->direct[i]) continue;
    const Param *p = image_param(D, i);
    const char *T = cg_ctype(p->type.s);
    OUT("  PXG_SHARED PXG_ALIGN16 %s t%d[%d];\n", T, i, st[i].TWP * st[i].TH * p->type.lanes);
    if (i == g->virt) { /* computed in the tile: its positions inside the image */
      OUT("  staged = staged && tx0 >= %d && tx0 + %d <= w%d && ty0 + %d >= 0 && ty0 + %d <= h%d;\n", st[i].L,
          TWO + st[i].R, i, st[i].y0, st[i].TH + st[i].y0, i);
      continue;
    }
    OUT("  const PXR_GLOBAL %s *g%d = i%d + (ptrdiff_t)(ty0 + %d) * p%d + (ptrdiff_t)(tx0 - %d) * %d;\n", T, i, i, st[i].y0, i,
        st[i].L, p->type.lanes);
    OUT("  staged = staged && tx0 >= %d && tx0 + %d <= w%d && ty0 + %d >= 0 && ty0 + %d <= h%d", st[i].L, TWO + st[i].R, i,
        st[i].y0, st[i].TH + st[i].y0, i);
    OUT(" && !((uintptr_t)g%d & %d) && !((p%d * (ptrdiff_t)sizeof(%s)) & %d);\n", i, stage_bytes() - 1, i, T,
        stage_bytes() - 1);
  }
  int NB = slide_bands(g, st, TWO, THO);
  if (NB) slide_arrays(g, TWO, THO, NB);
  OUT("  const bool edge = !staged && rx0 == 0 && ry0 == 0 && rx1 == W && ry1 == H;\n");
  OUT("  if (staged) {\n");
  for (int i = 0; i < D->nimages; i++) {
    if (!g->direct[i] || i == g->virt) continue;
    const Param *p = image_param(D, i);
    int SB = stage_bytes();
    const char *VT = SB == 16 ? "uint4" : SB == 8 ? "uint2" : "uint32_t";
    int NV = st[i].TWP * bytes_of(p->type) / SB, total = NV * st[i].TH, per = (total + 255) / 256;
    int epv = SB / scalar_size(p->type.s); /* elements per vector */
    OUT("    {\n      %s v[%d];\n", VT, per);
    OUT("      #pragma unroll\n      for (int k = 0; k < %d; k++) {\n", per);
    OUT("        const int q = t + k * 256, r = q / %d, c = q - r * %d;\n", NV, NV);
    OUT("        if (q < %d) v[k] = *(const PXR_GLOBAL %s *)(g%d + (ptrdiff_t)r * p%d + c * %d);\n      }\n", total, VT, i, i, epv);
    OUT("      #pragma unroll\n      for (int k = 0; k < %d; k++)\n", per);
    OUT("        if (t + k * 256 < %d) ((PXR_LOCAL %s *)t%d)[t + k * 256] = v[k];\n    }\n", total, VT, i);
  }
  if (g->virt >= 0) stage_compute(g, A, st, true);
  OUT("  } else if (edge) {\n");
  if (g->virt >= 0) stage_compute(g, A, st, false);
  for (int i = 0; i < D->nimages; i++) {
    if (!g->direct[i] || i == g->virt) continue;
    char x0[40], y0[40], dst[16];
    snprintf(x0, sizeof x0, "tx0 - %d", st[i].L);
    snprintf(y0, sizeof y0, "ty0 + %d", st[i].y0);
    snprintf(dst, sizeof dst, "t%d", i);
    tile_read(g, i, st[i].TWP, st[i].TH, x0, y0, dst, NULL, "    ");
  }
  OUT("  }\n  if (staged || edge) {\n    PXG_SYNC();\n");
  tile_values(g, PX, PY, vec, rb);
  if (NB) {
    slide_tiles(g, A, st, TWO, THO, PX, PY, C, NB);
  } else if (use_sep(g)) {
    sep_tiles(g, A, st, PX, PY, C);
  } else {
    StrBuf sa = {0};
    for (int i = 0; i < D->nimages; i++)
      if (g->direct[i])
        sb_printf(&sa, ", t%d, tx0 - %d, ty0 + %d, %d", i, st[i].L, st[i].y0, st[i].TWP * image_param(D, i)->type.lanes);
    OUT("    #pragma unroll\n    for (int j = 0; j < %d; j++)\n", PY);
    if (tiles_pk(g, PX)) { /* pairs of pixels p, p + 2 (packed.h), into the row's vector a word at a
                            * time (PoCL 3.1's optimiser got the row wrong from byte stores into it) */
      static const char *lane[] = {".x", ".y", ".z", ".w"};
      OUT("    {\n");
      for (int q = 0; q < PX / 4; q++) {
        OUT("      const uint32_t k%d_ = %s_pk(%s%s, xs + %d, ys + j), k%d_ = %s_pk(%s%s, xs + %d, ys + j);\n", 2 * q,
            g->pfx, A, sa.s, 4 * q, 2 * q + 1, g->pfx, A, sa.s, 4 * q + 1);
        OUT("      v_[j].v%s = PXG_ZIP_BYTES(k%d_, k%d_);\n", PX == 4 ? "" : lane[q], 2 * q, 2 * q + 1);
      }
      OUT("    }\n");
    } else {
      OUT("      #pragma unroll\n      for (int i = 0; i < %d; i++) %s_ps(%s%s, xs + i, ys + j, W, H, v_[j].e + i * %d);\n",
          PX, g->pfx, A, sa.s, C);
    }
    sb_free(&sa);
  }
  OUT("    if (staged) {\n");
  tile_store(g, PX, PY, vec, rb, "", false);
  tile_store(g, PX, PY, vec, rb, "", true);
}

/* The rest (N2P, P2P with other reads, gathers): px x py pixels per thread; windows
 * staged in shared memory where plan_stage allows. */
static void kernel_tiles(Gen *g, const char *A, const GpuTile *tile, GpuLaunch *L) {
  const Decl *D = g->D;
  int C = D->type.lanes, PX, PY;
  tile_shape(D, tile, &PX, &PY);
  int rb = PX * bytes_of(D->type);
  /* a row of one element needs no vector view: its store is the same 4-byte store, and PoCL 3.1
   * (LLVM 15) with its optimiser on miscompiled the one-element union, storing rows past H
   * (seen as heap corruption with i32 and f32 windows, caught by diff_opencl_optimised) */
  bool vec = pow2(rb) && rb <= 16 && rb > 1 && PX * C > 1;
  const char *OT = cg_ctype(D->type.s);
  *L = (GpuLaunch){.grid = GPU_GRID_TILES, .bx = 32, .by = 8, .px = PX, .py = PY, .tiled = !no_images(D)};
  kernel_open(g, OT, 256);
  OUT("  const int tx0 = PXG_BX * %d, ty0 = PXG_BY * %d;\n", 32 * PX, 8 * PY);
  OUT("  const int xs = tx0 + PXG_TX * %d, ys = ty0 + PXG_TY * %d;\n", PX, PY);
  Stage st[PXL_GPU_MAX_IMAGES];
  bool staged = plan_stage(g, 32 * PX, 8 * PY, st);
  if (staged) stage_tiles(g, A, st, 32 * PX, 8 * PY, PX, PY, vec, rb);
  OUT("  if (xs >= W || ys >= H) return;\n");
  OUT("  if (xs >= ix0 && xs + %d <= ix1 && ys >= iy0 && ys + %d <= iy1) {\n", PX, PY);
  /* all pixels first, then all stores: the loads of neighbours are shared (where the
   * staged path exists this is its rare fallback: row by row, fewer registers) */
  tile_values(g, PX, PY, vec, rb);
  OUT("    #pragma unroll%s\n    for (int j = 0; j < %d; j++)\n", staged ? " 1" : "", PY);
  OUT("      #pragma unroll\n      for (int i = 0; i < %d; i++) %s_pi(%s, xs + i, ys + j, W, H, v_[j].e + i * %d);\n", PX,
      g->pfx, A, C);
  tile_store(g, PX, PY, vec, rb, staged ? " 1" : "", false);
  block_checked(g, A, PX, PY, C, false);
}

/* ---- register windows ----
 *
 * A thread owns PX output pixels of a column strip SH rows tall and walks down it. Per
 * directly read image, the rows of its window around the thread's pixels are a private
 * array wn<k> (registers, once the loops are unrolled): each image row is loaded once per
 * thread, as one vector of the thread's own pixels and 4-byte words of halo on either
 * side (the neighbours' pixels, which they load too: L1 serves the second read), and
 * the rows move up one as the thread moves down one. No shared memory and no barrier:
 * the loads of many rows are in flight at once. A thread whose halo crosses the image's
 * left or right edge reads those few pixels through the border functions; a thread
 * whose rows cross the top or bottom, or whose rows are not aligned for the vectors,
 * computes pixel by pixel with every check. Measured on an H200 at 8192^2 against the
 * shared-memory tiles (docs/PERFORMANCE.md). */
#define WALK_BY 4        /* thread rows per block: 128 threads */
#define WALK_MAX_ROWS 8  /* window rows */
#define WALK_MAX_HALO 16 /* halo bytes on either side */
#define WALK_MAX_READS 9 /* pixels of a window computed as written (not separable) */

typedef struct {
  int PX, SH; /* output pixels per thread along x, rows it walks */
  bool on[PXL_GPU_MAX_IMAGES];
  int VB[PXL_GPU_MAX_IMAGES];        /* bytes of an image's vector of PX pixels */
  int LE[PXL_GPU_MAX_IMAGES], RE[PXL_GPU_MAX_IMAGES]; /* halo pixels (whole words) left, right */
  int NR[PXL_GPU_MAX_IMAGES], Y0[PXL_GPU_MAX_IMAGES]; /* window rows, the first relative to the pixel's */
  bool packed; /* a min/max window of bytes computed on packed halves (walk_packed) */
  bool pk;     /* the pixel's own computation on pairs of pixels too (packed.h: "pk") */
} Walk;

/* Whether the separable min/max window of a walking kernel is computed on packed 16-bit
 * halves: bytes of the image and of every column value, PX a multiple of 4. The bytes of
 * a 4-byte word go into two words of two 16-bit halves each (its bytes 0 and 2, 1 and 3),
 * and one __vminu2 / __vmaxu2 (one instruction on Hopper) takes the minimum or maximum of
 * two pixels. Walking a byte window pixel by pixel spent as many instructions unpacking
 * bytes as computing (dilate5: 80 byte extractions and 80 maxima per 8 pixels). */
static bool walk_packed(const Gen *g, const Walk *w) {
  const Separable *S = g->D->sep;
  if (!use_sep(g) || S->img->type.s != T_U8 || w->PX % 4) return false;
  for (int i = 0; i < g->D->nimages; i++)
    if (w->on[i] != (i == S->img->img_index)) return false; /* the window's image alone */
  for (int i = 0; i < S->nacc; i++) /* min/max of bytes; sums only as packed.c's WIDE values (walk_plan) */
    if (S->op[i] >= 0 && S->col[i].s != T_U8) return false;
  return true;
}

/* Whether a separable window has a sum among its accumulators. */
static bool sep_sums(const Separable *S) {
  for (int i = 0; S && i < S->nacc; i++)
    if (S->op[i] < 0) return true;
  return false;
}

/* The variant of a walking kernel's pixel function: the window's values given (packed
 * separable windows) or its reads from the thread's registers. */
static int walk_pk_variant(const Walk *w) { return w->packed ? V_SEP | V_ROWSUM : V_SMEM | V_WIN | V_DIRECT_REL; }

/* Whether kernel D runs as register windows: a one-channel kernel whose images are read
 * only at known relative windows (at most WALK_MAX_ROWS rows, WALK_MAX_HALO bytes beside
 * the pixel) of one-channel pixels of 1 or 2 bytes, computed separably (min or max) or
 * as written on at most WALK_MAX_READS pixels, with no floating-point arithmetic (edges'
 * fused kernel ran slower walking, at 2048^2). Separable sums stay in shared-memory tiles
 * or strips, larger windows as written in tiles: measured faster on an H100 (a thread's
 * window and its pixels' values in registers at once cost occupancy: gauss5 took 154
 * registers, median5 spilled). tile->bytes 4 / 8: vectors of 8 / 16 bytes of the widest
 * image (at most 16 bytes of output); tile->rows: the rows a thread walks. */
static bool walk_pk_test(const Gen *g, const Walk *w);

static bool walk_plan(const Gen *g, const GpuTile *tile, Walk *w) {
  const Decl *D = g->D;
  if (D->kind != D_KERNEL || no_images(D) || g->virt >= 0 || cg_corner_tiles(D) || D->type.lanes != 1) return false;
  if (D->metrics.flops > 0) return false; /* edges' fused kernel (5 float ops): 0.0251 ms in tiles, 0.0381 walking */
  bool sep = use_sep(g);
  /* sums: only on pairs of pixels (walk_packed with "pk": blur3 at 8192^2 on an H200
   * 0.0662 ms in tiles, 0.0445 walking); else tiles or strips (unpacked, blur3 walked
   * slower than in tiles on an H100: 0.0683 against 0.0628 ms) */
  bool sums = sep && sep_sums(D->sep);
  *w = (Walk){0};
  int ib = 0, ob = scalar_size(D->type.s), reads = 0;
  for (int i = 0; i < D->nimages; i++) {
    const Access *ac = &D->access[i];
    if (ac->read_abs || ac->gather) return false;
    if (!g->direct[i] || !ac->read_rel) continue;
    const Param *p = image_param(D, i);
    int b = scalar_size(p->type.s);
    if (!ac->window_known || p->type.lanes != 1 || b > 2 || ac->y1 - ac->y0 + 1 > WALK_MAX_ROWS ||
        -ac->x0 * b > WALK_MAX_HALO || ac->x1 * b > WALK_MAX_HALO)
      return false;
    w->on[i] = true;
    if (b > ib) ib = b;
    reads += (ac->x1 - ac->x0 + 1) * (ac->y1 - ac->y0 + 1);
  }
  if (!ib || (!sep && reads > WALK_MAX_READS)) return false;
  int vb = tile && tile->bytes == 8 ? 16 : 8;
  w->PX = vb / ib;
  if (w->PX * ob > 16) w->PX = 16 / ob;
  w->SH = tuned_rows(tile, 1);
  for (int i = 0; i < D->nimages; i++) {
    if (!w->on[i]) continue;
    const Access *ac = &D->access[i];
    int b = scalar_size(image_param(D, i)->type.s), per = 4 / b; /* pixels per halo word */
    w->VB[i] = w->PX * b;
    if (w->VB[i] < 4 || !pow2(w->VB[i])) return false;
    w->LE[i] = ac->x0 < 0 ? (-ac->x0 + per - 1) / per * per : 0;
    w->RE[i] = ac->x1 > 0 ? (ac->x1 + per - 1) / per * per : 0;
    w->NR[i] = ac->y1 - ac->y0 + 1;
    w->Y0[i] = ac->y0;
  }
  w->packed = walk_packed(g, w);
  w->pk = !(w->PX % 4) && (w->packed || !use_sep(g)) && gp_packable(g, walk_pk_variant(w)) && walk_pk_test(g, w);
  return !sums || (w->packed && w->pk);
}

/* Element e of the row in wn<k>[row] from `word` (4 bytes): its byte or half `part`,
 * zero- or sign-extended to 32 bits (cg_window_ctype). */
static void walk_elem(Gen *g, int k, const char *row, int e, const char *word, int part, Scalar s) {
  OUT("wn%d[%s][%d] = PXG_%s(%s, %d);\n", k, row, e, s == T_U8 ? "BYTE" : s == T_U16 ? "HALF" : "SHALF", word, part);
}

/* Loads, for every row the thread's walk reads of image k (its first window and the rows
 * entering it), the thread's vector m<k>_[r] and each side's halo words h<k>l_[r][q],
 * h<k>r_[r][q] (those of a side crossing the image's edge are left unloaded): all of
 * them before any is used, so that they are in flight together. */
static void walk_fetch(Gen *g, const Walk *w, int k) {
  int NROW = w->SH + w->NR[k] - 1, LW = w->LE[k] * scalar_size(image_param(g->D, k)->type.s) / 4,
      RW = w->RE[k] * scalar_size(image_param(g->D, k)->type.s) / 4;
  OUT("    PXG_VEC(%d) m%d_[%d];\n", w->VB[k], k, NROW);
  if (LW) OUT("    uint32_t h%dl_[%d][%d];\n", k, NROW, LW);
  if (RW) OUT("    uint32_t h%dr_[%d][%d];\n", k, NROW, RW);
  OUT("    #pragma unroll\n    for (int r_ = 0; r_ < %d; r_++) {\n", NROW);
  OUT("      const PXR_GLOBAL uint8_t *q_ = (const PXR_GLOBAL uint8_t *)(i%d + (ptrdiff_t)(ys + %d + r_) * p%d + xs);\n",
      k, w->Y0[k], k);
  OUT("      m%d_[r_] = *(const PXR_GLOBAL PXG_VEC(%d) *)q_;\n", k, w->VB[k]);
  if (LW)
    OUT("      if (l%d_)\n        #pragma unroll\n        for (int q = 0; q < %d; q++) h%dl_[r_][q] = "
        "*(const PXR_GLOBAL uint32_t *)(q_ - %d + 4 * q);\n",
        k, LW, k, 4 * LW);
  if (RW)
    OUT("      if (r%d_)\n        #pragma unroll\n        for (int q = 0; q < %d; q++) h%dr_[r_][q] = "
        "*(const PXR_GLOBAL uint32_t *)(q_ + %d + 4 * q);\n",
        k, RW, k, w->VB[k]);
  OUT("    }\n");
}

/* Unpacks fetched row `r` (walk_fetch's index, a C expression), image row `yy`, of image
 * k into the window's row `row`: the vector's pixels, then each side's halo, from its
 * words or, where the halo crosses the image's edge, through the border function. */
static void walk_row(Gen *g, const Walk *w, int k, const char *row, const char *r, const char *yy, const char *ind) {
  Scalar s = image_param(g->D, k)->type.s;
  int b = scalar_size(s), per = 4 / b, VB = w->VB[k], LE = w->LE[k], RE = w->RE[k];
  static const char *lane[] = {"x", "y", "z", "w"};
  for (int e = 0; e < w->PX; e++) {
    char word[32];
    if (VB == 4) snprintf(word, sizeof word, "m%d_[%s]", k, r);
    else snprintf(word, sizeof word, "m%d_[%s].%s", k, r, lane[e * b / 4]);
    OUT("%s", ind);
    walk_elem(g, k, row, LE + e, word, e % per, s);
  }
  for (int side = 0; side < 2; side++) {
    int n = side ? RE : LE;
    if (!n) continue;
    int first = side ? LE + w->PX : 0; /* the side's first element in the row */
    OUT("%sif (%c%d_) {\n", ind, side ? 'r' : 'l', k);
    for (int e = 0; e < n; e++) {
      char word[32];
      snprintf(word, sizeof word, "h%d%c_[%s][%d]", k, side ? 'r' : 'l', r, e / per);
      OUT("%s  ", ind);
      walk_elem(g, k, row, first + e, word, e % per, s);
    }
    OUT("%s} else {\n", ind);
    for (int e = 0; e < n; e++)
      OUT("%s  wn%d[%s][%d] = %s_rd%d(i%d, p%d, w%d, h%d, xs + %d, %s, 0);\n", ind, k, row, first + e, g->pfx, k, k, k,
          k, k, first + e - LE, yy);
    OUT("%s}\n", ind);
  }
}

/* Row y's PX bytes from the packed pixel function (packed.h): one call per pair of pixels
 * p, p + 2 (p % 4 < 2), whose further arguments are `args` (a format taking p, up to 4
 * times), then the words of the row's vector, pixels p .. p + 3 from the pairs of p and
 * p + 1 (byte permutes). With a change test, the words compared with the carried image's
 * fetched ones (walk_pk_test): row y is fetched row j - Y0, j a C expression. */
static void pk_store(Gen *g, const Walk *w, const char *A, const char *args, const char *j) {
  int PX = w->PX;
  for (int p = 0; p < PX; p++) {
    if (p % 4 >= 2) continue;
    OUT("      const uint32_t k_%d = %s_pk(%s", p, g->pfx, A);
    sb_printf(g->o, args, p, p, p, p);
    OUT(", xs + %d, y);\n", p);
  }
  OUT("      union { PXG_VEC(%d) v; uint32_t w[%d]; } v_;\n", PX, PX / 4);
  for (int q = 0; q < PX / 4; q++) OUT("      v_.w[%d] = PXG_ZIP_BYTES(k_%d, k_%d);\n", q, 4 * q, 4 * q + 1);
  OUT("      *(PXR_GLOBAL PXG_VEC(%d) *)(o + (ptrdiff_t)y * op + xs) = v_.v;\n", PX);
  if (g->chg_img >= 0) { /* the change test: the carried image's words at (xs, y), fetched (walk_pk_test) */
    static const char *lane[] = {"x", "y", "z", "w"};
    int k = g->chg_img;
    OUT("      *chg_ |= (uint32_t)(");
    for (int q = 0; q < PX / 4; q++)
      OUT("%s(v_.w[%d] != m%d_[(%s) - (%d)]%s%s)", q ? " | " : "", q, k, j, w->Y0[k], PX > 4 ? "." : "",
          PX > 4 ? lane[q] : "");
    OUT(");\n");
  }
}

/* Whether a walking kernel's packed stores can make its change test (Gen.chg_img): the
 * carried image is one of the thread's fetched u8 images, as many bytes a vector as the
 * output, so its words at the pixels' row and columns are in its fetched rows. */
static bool walk_pk_test(const Gen *g, const Walk *w) {
  int k = g->chg_img;
  return k < 0 || (w->on[k] && w->VB[k] == w->PX && image_param(g->D, k)->type.s == T_U8 && w->Y0[k] <= 0 &&
                   w->Y0[k] + w->NR[k] > 0);
}

/* The half-word of packed column values (walk_pack) of row set `r` whose halves are the
 * columns c and c + 2 of the thread's pixels (u = c + the left halo; accumulator i): word
 * u / 4's even or odd bytes, or the upper half of one and the lower of the next. */
static void pack_half(Gen *g, int i, char r, int u) {
  int q = u / 4;
  switch (u % 4) {
  case 0: OUT("ce%d%c[%d]", i, r, q); break;
  case 1: OUT("co%d%c[%d]", i, r, q); break;
  case 2: OUT("PXG_FUNNEL16(ce%d%c[%d], ce%d%c[%d])", i, r, q, i, r, q + 1); break;
  default: OUT("PXG_FUNNEL16(co%d%c[%d], co%d%c[%d])", i, r, q, i, r, q + 1); break;
  }
}

/* walk_pack's column pass for output row j (and j + 1 when `two`): per word q of the
 * rows, the accumulators over the window's rows of its even and odd bytes (the odd ones
 * a byte permute, the even ones the word less 256 times those: a multiply-add, which
 * runs beside the minima and maxima rather than with them), into
 * ce<i>a / co<i>a (row j) and ce<i>b / co<i>b (row j + 1). Two rows share the window's
 * rows but their first and last: those are computed once (c<i>), then each row's own. */
static void pack_cols(Gen *g, const Walk *w, int j, bool two, int NW) {
  const Separable *S = g->D->sep;
  int k = S->img->img_index;
  for (int i = 0; i < S->nacc; i++) {
    OUT("      uint32_t ce%da[%d], co%da[%d];\n", i, NW, i, NW);
    if (two) OUT("      uint32_t ce%db[%d], co%db[%d];\n", i, NW, i, NW);
  }
  OUT("      #pragma unroll\n      for (int q = 0; q < %d; q++) {\n", NW);
  for (int i = 0; i < S->nacc; i++) OUT("        uint32_t ce%d = 0, co%d = 0;\n", i, i);
  /* rows: the shared ones (all for one output row), then the first row's and the second's */
  int first = two ? S->y0 + 1 : S->y0;
  for (int dy = first; dy <= S->y1 + (two ? 2 : 0); dy++) {
    int row = dy <= S->y1 ? j + dy : dy == S->y1 + 1 ? j + S->y0 : j + 1 + S->y1; /* image row - ys */
    char set = dy <= S->y1 ? 0 : dy == S->y1 + 1 ? 'a' : 'b';
    OUT("        {\n          const uint32_t w_ = wd_[%d][q], o_ = PXG_ODD_BYTES(w_), e_ = w_ - o_ * 256u;\n",
        row - w->Y0[k]);
    for (int i = 0; i < S->nacc; i++) {
      const char *op = gp_op2(S->op[i]);
      bool core_empty = first > S->y1;
      if (!set && dy == first) OUT("          ce%d = e_; co%d = o_;\n", i, i);
      else if (!set) OUT("          ce%d = %s(ce%d, e_); co%d = %s(co%d, o_);\n", i, op, i, i, op, i);
      else if (core_empty) OUT("          ce%d%c[q] = e_; co%d%c[q] = o_;\n", i, set, i, set);
      else OUT("          ce%d%c[q] = %s(ce%d, e_); co%d%c[q] = %s(co%d, o_);\n", i, set, op, i, i, set, op, i);
    }
    OUT("        }\n");
  }
  if (!two)
    for (int i = 0; i < S->nacc; i++) OUT("        ce%da[q] = ce%d; co%da[q] = co%d;\n", i, i, i, i);
  for (int i = 0; i < S->nacc; i++) OUT("        (void)ce%d; (void)co%d;\n", i, i);
  OUT("      }\n");
}

/* walk_pack's row pass and stores for output row j from row set r ('a' or 'b'): the
 * window's accumulators on pairs of pixels p and p + 2 (p % 4 < 2) in 16-bit halves;
 * pixels p and p + 1 share their windows but the first column of p's and the last of
 * p + 1's (computed once: s<i>_p). Each pixel's values go through "pr". */
static void pack_rows(Gen *g, const char *A, const Walk *w, int j, char r) {
  const Decl *D = g->D;
  const Separable *S = D->sep;
  int k = S->img->img_index, PX = w->PX, LE = w->LE[k], rb = PX * scalar_size(D->type.s);
  OUT("      {\n      const int y = ys + %d;\n", j);
  for (int p = 0; p < PX; p += 4)
    for (int i = 0; i < S->nacc; i++) {
      const char *op = gp_op2(S->op[i]);
      bool core = S->x1 > S->x0;
      if (core) {
        OUT("      uint32_t s%d_%d = ", i, p);
        pack_half(g, i, r, p + S->x0 + 1 + LE);
        OUT(";\n");
        for (int dx = S->x0 + 2; dx <= S->x1; dx++) {
          OUT("      s%d_%d = %s(s%d_%d, ", i, p, op, i, p);
          pack_half(g, i, r, p + dx + LE);
          OUT(");\n");
        }
      }
      for (int e = 0; e < 2; e++) { /* pixel p: the window's first column; p + 1: the last */
        int u = e ? p + S->x1 + 1 + LE : p + S->x0 + LE;
        OUT("      const uint32_t p%d_%d = ", i, p + e);
        if (core) OUT("%s(s%d_%d, ", op, i, p);
        pack_half(g, i, r, u);
        OUT("%s;\n", core ? ")" : "");
      }
    }
  if (w->pk) {
    char args[64] = "";
    for (int i = 0; i < S->nacc; i++) snprintf(args + strlen(args), sizeof args - strlen(args), ", p%d_%%d", i);
    char row[16];
    snprintf(row, sizeof row, "%d", j);
    pk_store(g, w, A, args, row);
    OUT("      }\n");
    return;
  }
  OUT("      union { PXG_VEC(%d) v; %s e[%d]; } v_;\n", rb, cg_ctype(D->type.s), PX);
  for (int p = 0; p < PX; p++) {
    OUT("      %s_pr(%s", g->pfx, A);
    for (int i = 0; i < S->nacc; i++) OUT(", (uint8_t)(p%d_%d >> %d)", i, p % 4 < 2 ? p : p - 2, p % 4 < 2 ? 0 : 16);
    OUT(", xs + %d, y, W, H, v_.e + %d);\n", p, p);
  }
  OUT("      *(PXR_GLOBAL PXG_VEC(%d) *)(o + (ptrdiff_t)y * op + xs) = v_.v;\n      }\n", rb);
}

/* walk_packed's interior: the fetched rows as words wd_ (a side crossing the image's edge
 * built from the border function's bytes); per pair of output rows the column pass on the
 * words' even and odd bytes (16-bit halves: pack_cols), then each row's row pass
 * (pack_rows). */
static void walk_pack(Gen *g, const char *A, const Walk *w) {
  const Decl *D = g->D;
  const Separable *S = D->sep;
  int k = S->img->img_index, SH = w->SH;
  int NROW = SH + w->NR[k] - 1, LW = w->LE[k] / 4, VW = w->VB[k] / 4, RW = w->RE[k] / 4, NW = LW + VW + RW;
  static const char *lane[] = {"x", "y", "z", "w"};
  OUT("    uint32_t wd_[%d][%d];\n    #pragma unroll\n    for (int r_ = 0; r_ < %d; r_++) {\n", NROW, NW, NROW);
  OUT("      const int yr_ = ys + %d + r_;\n      (void)yr_;\n", w->Y0[k]);
  for (int side = 0; side < 2; side++) {
    int n = side ? RW : LW, first = side ? LW + VW : 0;
    if (!n) continue;
    OUT("      if (%c%d_) {\n", side ? 'r' : 'l', k);
    for (int q = 0; q < n; q++) OUT("        wd_[r_][%d] = h%d%c_[r_][%d];\n", first + q, k, side ? 'r' : 'l', q);
    OUT("      } else {\n");
    for (int q = 0; q < n; q++) {
      int c = 4 * (first + q) - w->LE[k]; /* the word's first column, relative to xs */
      OUT("        wd_[r_][%d] = ", first + q);
      for (int b = 0; b < 4; b++)
        OUT("%s((uint32_t)%s_rd%d(i%d, p%d, w%d, h%d, xs + %d, yr_, 0) << %d)", b ? " | " : "", g->pfx, k, k, k, k, k,
            c + b, 8 * b);
      OUT(";\n");
    }
    OUT("      }\n");
  }
  for (int q = 0; q < VW; q++)
    OUT("      wd_[r_][%d] = m%d_[r_]%s%s;\n", LW + q, k, VW > 1 ? "." : "", VW > 1 ? lane[q] : "");
  OUT("    }\n");
  for (int j = 0; j < SH; j += 2) {
    bool two = j + 1 < SH;
    OUT("    {\n");
    pack_cols(g, w, j, two, NW);
    pack_rows(g, A, w, j, 'a');
    if (two) pack_rows(g, A, w, j + 1, 'b');
    OUT("    }\n");
  }
}

/* The register-window entry (walk_plan): grid W / (32 PX) x H / (WALK_BY SH) blocks of
 * 32 x WALK_BY threads. */
static void kernel_walk(Gen *g, const char *A, const Walk *w, GpuLaunch *L) {
  const Decl *D = g->D;
  int PX = w->PX, SH = w->SH, rb = PX * scalar_size(D->type.s);
  const char *OT = cg_ctype(D->type.s);
  *L = (GpuLaunch){.grid = GPU_GRID_TILES, .bx = 32, .by = WALK_BY, .px = PX, .py = SH, .tiled = true};
  kernel_open(g, OT, 32 * WALK_BY);
  OUT("  const int xs = (PXG_BX * 32 + PXG_TX) * %d, ys = (PXG_BY * %d + PXG_TY) * %d;\n", PX, WALK_BY, SH);
  OUT("  if (xs >= W || ys >= H) return;\n");
  OUT("  if (xs >= rx0 && xs + %d <= rx1 && ys >= ry0 && ys + %d <= ry1 && !((uintptr_t)(o + xs) & %d) && "
      "!((op * (ptrdiff_t)sizeof(%s)) & %d)", PX, SH, rb - 1, OT, rb - 1);
  for (int k = 0; k < D->nimages; k++)
    if (w->on[k])
      OUT("\n      && xs + %d <= w%d && ys + %d >= 0 && ys + %d <= h%d && !((uintptr_t)(i%d + xs) & %d) && "
          "!((p%d * (ptrdiff_t)sizeof(%s)) & %d)",
          PX, k, w->Y0[k], SH + w->Y0[k] + w->NR[k] - 1, k, k, w->VB[k] - 1, k, cg_ctype(image_param(D, k)->type.s),
          w->VB[k] - 1);
  OUT(") {\n");
  StrBuf wa = {0}; /* the windows' arguments of "pw" */
  for (int k = 0; k < D->nimages; k++) {
    if (!w->on[k]) continue;
    OUT("    const bool l%d_ = xs >= %d, r%d_ = xs + %d <= w%d;\n    (void)l%d_; (void)r%d_;\n", k, w->LE[k], k,
        PX + w->RE[k], k, k, k);
    walk_fetch(g, w, k);
    if (w->packed) { /* the window's image is the only one (walk_packed) */
      walk_pack(g, A, w);
      OUT("    return;\n  }\n");
      block_checked(g, A, PX, SH, 1, true);
      return;
    }
    OUT("    %s wn%d[%d][%d];\n", cg_window_ctype(image_param(D, k)->type.s), k, w->NR[k], w->LE[k] + PX + w->RE[k]);
    if (w->NR[k] > 1) {
      char yy[48];
      snprintf(yy, sizeof yy, "ys + %d + r_", w->Y0[k]);
      OUT("    #pragma unroll\n    for (int r_ = 0; r_ < %d; r_++) {\n", w->NR[k] - 1);
      walk_row(g, w, k, "r_", "r_", yy, "      ");
      OUT("    }\n");
    }
    sb_printf(&wa, ", wn%d[0], xs - %d, y + %d, %d", k, w->LE[k], w->Y0[k], w->LE[k] + PX + w->RE[k]);
  }
  OUT("    #pragma unroll\n    for (int j = 0; j < %d; j++) {\n      const int y = ys + j;\n", SH);
  for (int k = 0; k < D->nimages; k++) {
    if (!w->on[k]) continue;
    int NR = w->NR[k], NC = w->LE[k] + PX + w->RE[k];
    char yy[48], last[16], r[24];
    if (NR > 1)
      OUT("      if (j)\n        #pragma unroll\n        for (int r_ = 0; r_ < %d; r_++)\n          #pragma unroll\n"
          "          for (int c_ = 0; c_ < %d; c_++) wn%d[r_][c_] = wn%d[r_ + 1][c_];\n",
          NR - 1, NC, k, k);
    snprintf(yy, sizeof yy, "y + %d", w->Y0[k] + NR - 1);
    snprintf(last, sizeof last, "%d", NR - 1);
    snprintf(r, sizeof r, "j + %d", NR - 1);
    walk_row(g, w, k, last, r, yy, "      ");
  }
  if (w->pk) {
    pk_store(g, w, A, wa.s, "j");
    sb_free(&wa);
    OUT("    }\n    return;\n  }\n");
    block_checked(g, A, PX, SH, 1, true);
    return;
  }
  OUT("      union { PXG_VEC(%d) v; %s e[%d]; } v_;\n", rb, OT, PX);
  if (use_sep(g)) {
    const Separable *S = D->sep;
    int k = S->img->img_index;
    char rd[64], xc0[16];
    snprintf(rd, sizeof rd, "wn%d[%%d - (%d)][xc]", k, w->Y0[k]);
    snprintf(xc0, sizeof xc0, "%d", w->LE[k] + S->x0);
    sep_row(g, A, rd, xc0, PX, 1, "v_.e", "      ");
  } else {
    OUT("      #pragma unroll\n      for (int i = 0; i < %d; i++) %s_pw(%s%s, xs + i, y, W, H, v_.e + i);\n", PX, g->pfx,
        A, wa.s);
  }
  sb_free(&wa);
  OUT("      *(PXR_GLOBAL PXG_VEC(%d) *)(o + (ptrdiff_t)y * op + xs) = v_.v;\n    }\n    return;\n  }\n", rb);
  block_checked(g, A, PX, SH, 1, true);
}

/* Non-sequential P2P and affine windows: TS x TS output tiles per block of 32 x 8
 * threads, reading directly where the tile's corners' reads are inside; for a
 * permutation the footprint of the tile image staged in shared memory when it fits. */
static void kernel_nonseq(Gen *g, const char *A, GpuLaunch *L) {
  const Decl *D = g->D;
  int C = D->type.lanes, k = g->tb_img;
  const char *OT = cg_ctype(D->type.s);
  bool small = bytes_of(D->type) == 1 && (k < 0 || bytes_of(image_param(D, k)->type) == 1);
  /* one-byte pixels in and out through a tile buffer: 128 x 128 tiles, so that every
   * row segment read or written is 128 bytes */
  bool bytes = small && k >= 0 && C == 1;
  /* an affine window of many reads a pixel: 32 x 32 tiles, 4 pixels a thread (its reads
   * go to global memory one by one: many small blocks hide their latency). Measured on
   * the H200 at 2048^2 / 8192^2: pyr_down (25 reads) 0.060 / 0.156 ms in 64 x 64 tiles,
   * 0.025 / 0.118 in 32 x 32; resize_area k = 2 (4 reads) 0.0065 / 0.044 in 64 x 64,
   * 0.0056 / 0.054 in 32 x 32 */
  bool many = D->skel == SK_AFFINE && D->metrics.reads > 8;
  int TS = bytes ? 128 : small && !many ? 64 : 32;
  *L = (GpuLaunch){.grid = GPU_GRID_TILES, .bx = 32, .by = 8, .px = TS / 32, .py = TS / 8};
  kernel_open(g, OT, 256);
  OUT("  const int TS = %d, tx = PXG_BX * TS, ty = PXG_BY * TS;\n", TS);
  OUT("  if (tx >= W || ty >= H) return;\n");
  OUT("  const int xe = tx + TS < W ? tx + TS : W, ye = ty + TS < H ? ty + TS : H;\n");
  OUT("  bool fast = tx >= ix0 && xe <= ix1 && ty >= iy0 && ye <= iy1;\n");
  cg_corner_checks(g, "  ");
  if (k >= 0) {
    const Access *ac = &D->access[k];
    const Param *ip = image_param(D, k);
    int IC = ip->type.lanes, es = scalar_size(ip->type.s);
    int FS = TS * IC + (es < 4 ? 4 / es : 1); /* padded row: consecutive rows in different banks */
    const char *ET = cg_ctype(ip->type.s);
    OUT("  int fx0 = 0, fy0 = 0, fx1 = -1, fy1 = -1;\n");
    OUT("  for (int c = 0; c < 4; c++) {\n");
    OUT("    const int cx = (c & 1) ? xe - 1 : tx, cy = (c & 2) ? ye - 1 : ty;\n    const int ex = ");
    cg_affine(g, &ac->ax, "cx", "cy", k, false);
    OUT(", ey = ");
    cg_affine(g, &ac->ay, "cx", "cy", k, false);
    OUT(";\n");
    OUT("    if (c == 0 || ex < fx0) fx0 = ex;\n    if (c == 0 || ex > fx1) fx1 = ex;\n");
    OUT("    if (c == 0 || ey < fy0) fy0 = ey;\n    if (c == 0 || ey > fy1) fy1 = ey;\n  }\n");
    OUT("  fast = fast && fx1 - fx0 < TS && fy1 - fy0 < TS;\n");
    OUT("  PXG_SHARED PXG_ALIGN16 %s tb[%d];\n", ET, TS * FS);
    OUT("  if (fast) {\n");
    if (bytes) { /* whole footprints on 4-byte boundaries: 4-byte loads and stores */
      int NW = TS / 4, NB = NW * NW / 256; /* words per row; 4 x 4 blocks (or words) per thread */
      OUT("    const int t = (PXG_TY * 32 + PXG_TX);\n");
      OUT("    const PXR_GLOBAL uint8_t *src0 = i%d + (ptrdiff_t)fy0 * p%d + fx0;\n", k, k);
      OUT("    if (fx1 - fx0 == %d && fy1 - fy0 == %d && !((uintptr_t)src0 & 3) && !(p%d & 3)) {\n", TS - 1, TS - 1, k);
      if (g->tb_t) {
        /* 4 x 4 blocks, transposed in registers (byte permutes) and stored as one word per
         * column; a warp takes 8 blocks of a row band (32-byte segments) x 4 bands, which
         * puts its 32 stores in 32 different banks */
        OUT("      #pragma unroll\n      for (int kk = 0; kk < %d; kk++) {\n", NB);
        OUT("        const int b = t + 256 * kk, l = b & 31, wv = b >> 5;\n");
        OUT("        const int cq = ((l & 7) + 8 * (wv & %d)) * 4, rg = ((l >> 3) + 4 * (wv >> %d)) * 4;\n", NW / 8 - 1,
            NW == 32 ? 2 : 1);
        OUT("        uint32_t a_[4];\n");
        OUT("        #pragma unroll\n        for (int j = 0; j < 4; j++) a_[j] = *(const PXR_GLOBAL uint32_t *)(src0 + (ptrdiff_t)(rg + j) * p%d + cq);\n", k);
        OUT("        const uint32_t m0 = PXG_BYTE_PERM(a_[0], a_[1], 0x5140), m1 = PXG_BYTE_PERM(a_[0], a_[1], 0x7362);\n");
        OUT("        const uint32_t m2 = PXG_BYTE_PERM(a_[2], a_[3], 0x5140), m3 = PXG_BYTE_PERM(a_[2], a_[3], 0x7362);\n");
        OUT("        *(PXR_LOCAL uint32_t *)(tb + (cq + 0) * %d + rg) = PXG_BYTE_PERM(m0, m2, 0x5410);\n", FS);
        OUT("        *(PXR_LOCAL uint32_t *)(tb + (cq + 1) * %d + rg) = PXG_BYTE_PERM(m0, m2, 0x7632);\n", FS);
        OUT("        *(PXR_LOCAL uint32_t *)(tb + (cq + 2) * %d + rg) = PXG_BYTE_PERM(m1, m3, 0x5410);\n", FS);
        OUT("        *(PXR_LOCAL uint32_t *)(tb + (cq + 3) * %d + rg) = PXG_BYTE_PERM(m1, m3, 0x7632);\n      }\n", FS);
      } else { /* rows stay rows: one word per load and per store */
        OUT("      uint32_t w_[%d];\n", NB * 4);
        OUT("      #pragma unroll\n      for (int kk = 0; kk < %d; kk++) {\n        const int q = t + 256 * kk;\n", NB * 4);
        OUT("        w_[kk] = *(const PXR_GLOBAL uint32_t *)(src0 + (ptrdiff_t)(q / %d) * p%d + (q %% %d) * 4);\n      }\n", NW, k, NW);
        OUT("      #pragma unroll\n      for (int kk = 0; kk < %d; kk++) {\n        const int q = t + 256 * kk;\n", NB * 4);
        OUT("        *(PXR_LOCAL uint32_t *)(tb + (q / %d) * %d + (q %% %d) * 4) = w_[kk];\n      }\n", NW, FS, NW);
      }
      OUT("    } else {\n");
    }
    /* coalesced loads along the image's rows, stored transposed when ex follows y; the
     * loads of up to 8 rows x TS/32 columns in flight before the first store */
    int KR = TS / 8 < 8 ? TS / 8 : 8;
    OUT("    #pragma unroll 1\n    for (int kc = 0; kc < %d; kc += %d) {\n", TS / 8, KR);
    OUT("    %s v_[%d][%d];\n", ET, KR, TS / 32 * IC);
    for (int pass = 0; pass < 2; pass++) {
      OUT("    #pragma unroll\n    for (int kr = 0; kr < %d; kr++)\n", KR);
      OUT("      #pragma unroll\n      for (int kq = 0; kq < %d; kq++) {\n", TS / 32);
      OUT("        const int r = PXG_TY + 8 * (kc + kr), q = PXG_TX + 32 * kq;\n");
      OUT("        if (r <= fy1 - fy0 && q <= fx1 - fx0)\n          for (int c = 0; c < %d; c++) ", IC);
      if (!pass)
        OUT("v_[kr][kq * %d + c] = i%d[(ptrdiff_t)(fy0 + r) * p%d + (ptrdiff_t)(fx0 + q) * %d + c];\n      }\n", IC, k, k,
            IC);
      else if (g->tb_t)
        OUT("tb[q * %d + r * %d + c] = v_[kr][kq * %d + c];\n      }\n", FS, IC, IC);
      else
        OUT("tb[r * %d + q * %d + c] = v_[kr][kq * %d + c];\n      }\n", FS, IC, IC);
    }
    OUT("    }\n");
    if (bytes) OUT("    }\n");
    OUT("    PXG_SYNC();\n");
    if (bytes) { /* 4 neighbouring output pixels per thread, one 4-byte store */
      OUT("    const int xq = tx + PXG_TX * 4;\n");
      OUT("    #pragma unroll 4\n    for (int kk = 0; kk < %d; kk++) {\n", TS / 8);
      OUT("      const int y = ty + PXG_TY + 8 * kk;\n");
      OUT("      if (y >= ye) continue;\n      PXR_GLOBAL uint8_t *orow = o + (ptrdiff_t)y * op;\n");
      OUT("      if (xq + 4 <= xe && !((uintptr_t)(orow + xq) & 3)) {\n");
      OUT("        union { uint32_t v; uint8_t e[4]; } u_;\n");
      OUT("        #pragma unroll\n        for (int e = 0; e < 4; e++) %s_pb(%s, tb, fx0, fy0, %d, xq + e, y, W, H, u_.e + e);\n",
          g->pfx, A, FS);
      OUT("        *(PXR_GLOBAL uint32_t *)(orow + xq) = u_.v;\n      } else {\n");
      OUT("        for (int e = 0; e < 4 && xq + e < xe; e++) {\n          uint8_t t_[1];\n");
      OUT("          %s_pb(%s, tb, fx0, fy0, %d, xq + e, y, W, H, t_);\n          orow[xq + e] = t_[0];\n        }\n", g->pfx,
          A, FS);
      OUT("      }\n    }\n    return;\n  }\n");
    } else {
    OUT("    for (int y = ty + PXG_TY; y < ye; y += 8) {\n      PXR_GLOBAL %s *orow = o + (ptrdiff_t)y * op;\n", OT);
    OUT("      for (int x = tx + PXG_TX; x < xe; x += 32)\n");
    char args[4200];
    snprintf(args, sizeof args, "%s, tb, fx0, fy0, %d", A, FS);
    pixel_to_row(g, "pb", args, C, "        ");
    OUT("    }\n    return;\n  }\n");
    }
  } else {
    OUT("  if (fast) {\n");
    OUT("    for (int y = ty + PXG_TY; y < ye; y += 8) {\n      PXR_GLOBAL %s *orow = o + (ptrdiff_t)y * op;\n", OT);
    OUT("      for (int x = tx + PXG_TX; x < xe; x += 32)\n");
    pixel_to_row(g, "pt", A, C, "        ");
    OUT("    }\n    return;\n  }\n");
  }
  OUT("  for (int y = ty + PXG_TY; y < ye; y += 8) {\n    PXR_GLOBAL %s *orow = o + (ptrdiff_t)y * op;\n", OT);
  OUT("    for (int x = tx + PXG_TX; x < xe; x += 32) {\n");
  pixel_checked(g, A, C, "      ");
  OUT("    }\n  }\n}\n");
}

/* ---- tilers walking down their image ----
 *
 * A tiler that reads one one-channel image of 1- or 2-byte pixels at affine positions on
 * a diagonal paving, whose rows of PX repetitions start on 4-byte boundaries (the paving
 * times PX a multiple of 4 bytes): a thread makes PX neighbouring repetitions in each of
 * the tuned number of rows of repetitions (GpuTile.rows; with 8 bytes, twice PX), one
 * below the other. Its window - the rows and columns its repetitions read, widened to
 * 32 bits - is a private array (registers, once unrolled) loaded with 4-byte words;
 * from one row of repetitions to the next the rows they share move up and only the
 * paving's new rows are loaded. The repetitions read it ("pw": the footprint reads of
 * V_TILEBUF on a private array, V_WIN). A thread whose window crosses an edge of the
 * image, or whose image is not aligned, makes its repetitions one by one as
 * kernel_tiler does (which read pyr_down's 25 bytes a pixel from L1 one by one). */
#define TWALK_BY 4    /* thread rows per block: 128 threads */
#define TWALK_REGS 96 /* window elements per thread at most */

static int tiler_px(const Decl *D);

typedef struct {
  int PX, SH; /* repetitions per thread along x; rows of them (the tuned shape's rows) */
  int E;      /* pixels per 4-byte word */
  int NW, NR; /* words per window row; window rows */
  int off;    /* pixels of the first word left of the first column read */
} TilerWalk;

static bool tiler_walk_plan(const Decl *D, const GpuTile *tile, TilerWalk *t) {
  if (D->kind != D_KERNEL || !D->tile[0] || D->nimages != 1) return false;
  const Access *ac = &D->access[0];
  const Param *ip = image_param(D, 0);
  Scalar s = ip->type.s;
  if (!ac->read_abs || !ac->abs_affine || ac->read_rel || ac->gather || ip->type.lanes != 1) return false;
  if (s != T_U8 && s != T_U16 && s != T_I16) return false;
  const Affine *ax = &ac->ax, *ay = &ac->ay;
  if (ax->cy || ay->cx || ax->cw || ax->ch || ay->cw || ay->ch || ax->cx < 1 || ay->cy < 1 || ax->cx > 64 ||
      ay->cy > 64 || ax->c1 - ax->c0 > 64 || ay->c1 - ay->c0 > 64)
    return false;
  int es = scalar_size(s);
  t->E = 4 / es, t->PX = tiler_px(D) * (tile && tile->bytes == 8 ? 2 : 1);
  t->SH = tuned_rows(tile, 4);
  /* rows of repetitions on 4-byte boundaries: pyr_up's 2 x 2 tiles every pixel, 4 of them
   * a thread (its 2 a tile row would start every 2 bytes) */
  while ((ax->cx * t->PX * es) % 4 && t->PX < 8) t->PX *= 2;
  if ((ax->cx * t->PX * es) % 4) return false;
  t->off = (int)(((ax->c0 % t->E) + t->E) % t->E);
  int span = (int)(ax->cx * (t->PX - 1) + ax->c1 - ax->c0 + 1);
  t->NW = (t->off + span + t->E - 1) / t->E;
  t->NR = (int)(ay->c1 - ay->c0 + 1);
  return t->NR * t->NW * t->E <= TWALK_REGS;
}

/* Loads image row `yy` (a C expression) into window row `r`: its words, unpacked. */
static void twalk_row(Gen *g, const TilerWalk *t, const char *r, const char *yy, const char *ind) {
  Scalar s = image_param(g->D, 0)->type.s;
  OUT("%s{\n%s  const PXR_GLOBAL uint32_t *q_ = (const PXR_GLOBAL uint32_t *)(i0 + (ptrdiff_t)(%s) * p0 + wx0);\n", ind,
      ind, yy);
  OUT("%s  #pragma unroll\n%s  for (int q = 0; q < %d; q++) {\n%s    const uint32_t w_ = q_[q];\n", ind, ind, t->NW, ind);
  /* shifts and masks, not byte permutes: the compiler then knows the values' high bits
   * are zero, and a read's conversion to the pixel type costs nothing */
  for (int e = 0; e < t->E; e++) {
    OUT("%s    wn[%s][q * %d + %d] = ", ind, r, t->E, e);
    if (s == T_I16) OUT("PXG_SHALF(w_, %d);\n", e);
    else if ((e + 1) * (32 / t->E) == 32) OUT("w_ >> %d;\n", e * (32 / t->E));
    else OUT("(w_ >> %d) & %uu;\n", e * (32 / t->E), s == T_U8 ? 255u : 65535u);
  }
  OUT("%s  }\n%s}\n", ind, ind);
}

/* The stores of one row of repetitions (y) of a tiler thread: PX tiles t_[k] side by
 * side, each tile row one vector store where aligned (xs + PX <= W is `full`). */
static void tiler_store(Gen *g, int PX, const char *ind) {
  const Decl *D = g->D;
  int C = D->type.lanes, TW = D->tile[0], TH = D->tile[1], rb = TW * bytes_of(D->type), N = PX * TW * C;
  bool vec = pow2(PX * rb) && PX * rb <= 16 && N > 1;
  const char *OT = cg_ctype(D->type.s);
  OUT("%s#pragma unroll\n%sfor (int j = 0; j < %d; j++) {\n", ind, ind, TH);
  OUT("%s  PXR_GLOBAL %s *orow = o + (ptrdiff_t)(%d * y + j) * op + (ptrdiff_t)xs * %d;\n", ind, OT, TH, TW * C);
  if (vec) OUT("%s  union { PXG_VEC(%d) v; %s e[%d]; } v_;\n", ind, PX * rb, OT, N);
  else OUT("%s  struct { %s e[%d]; } v_;\n", ind, OT, N);
  OUT("%s  #pragma unroll\n%s  for (int e = 0; e < %d; e++) v_.e[e] = t_[e / %d][j * %d + e %% %d];\n", ind, ind, N,
      TW * C, TW * C, TW * C);
  if (vec)
    OUT("%s  if (xs + %d <= W && !((uintptr_t)orow & %d)) *(PXR_GLOBAL PXG_VEC(%d) *)orow = v_.v;\n%s  else ", ind, PX,
        PX * rb - 1, PX * rb, ind);
  else OUT("%s  ", ind);
  OUT("for (int e = 0; e < %d && xs + e / %d < W; e++) orow[e] = v_.e[e];\n%s}\n", N, TW * C, ind);
}

/* The PX repetitions xs.. of row y, one by one ("pt" where `fast`, else "pe"), and their
 * stores. */
static void tiler_reps(Gen *g, const char *A, int PX) {
  const Decl *D = g->D;
  OUT("    %s t_[%d][%d];\n", cg_ctype(D->type.s), PX, D->tile[0] * D->tile[1] * D->type.lanes);
  OUT("    #pragma unroll\n    for (int k = 0; k < %d; k++)\n", PX);
  OUT("      if (xs + k < W) {\n        if (fast) %s_pt(%s, xs + k, y, W, H, t_[k]);\n", g->pfx, A);
  OUT("        else %s_pe(%s, xs + k, y, W, H, t_[k]);\n      }\n", g->pfx, A);
  tiler_store(g, PX, "    ");
}

static void kernel_tiler_walk(Gen *g, const char *A, const TilerWalk *t, GpuLaunch *L) {
  const Decl *D = g->D;
  const Access *ac = &D->access[0];
  int C = D->type.lanes, TW = D->tile[0], TH = D->tile[1], PX = t->PX, NWE = t->NW * t->E, es = 4 / t->E;
  long long cx = ac->ax.cx, cy = ac->ay.cy;
  const char *OT = cg_ctype(D->type.s);
  *L = (GpuLaunch){.grid = GPU_GRID_TILES, .bx = 32, .by = TWALK_BY, .px = PX * TW, .py = t->SH * TH, .tiled = true};
  kernel_open(g, OT, 32 * TWALK_BY);
  OUT("  const int xs = (PXG_BX * 32 + PXG_TX) * %d, ys = (PXG_BY * %d + PXG_TY) * %d;\n", PX, TWALK_BY, t->SH);
  OUT("  if (xs >= W || ys >= H) return;\n");
  OUT("  const int tx = xs, ty = ys, xe = xs + %d < W ? xs + %d : W, ye = ys + %d < H ? ys + %d : H;\n", PX, PX,
      t->SH, t->SH);
  /* the window's first column (on a word boundary) and first row */
  OUT("  const int wx0 = %lld * xs + %lld, wy0 = %lld * ys + %lld;\n", cx, (long long)ac->ax.c0 - t->off, cy,
      (long long)ac->ay.c0);
  OUT("  if (xs + %d <= W && wx0 >= 0 && wx0 + %d <= w0 && wy0 >= 0 && %lldLL * (ye - 1) + %lld < h0 && "
      "!((uintptr_t)i0 & 3) && !((p0 * %d) & 3)) {\n",
      PX, NWE, cy, (long long)ac->ay.c1, es);
  OUT("    %s wn[%d][%d];\n", cg_window_ctype(image_param(D, 0)->type.s), t->NR, NWE);
  OUT("    #pragma unroll\n    for (int r_ = 0; r_ < %d; r_++)\n", t->NR);
  twalk_row(g, t, "r_", "wy0 + r_", "      ");
  OUT("    #pragma unroll\n    for (int jr = 0; jr < %d; jr++) {\n      const int y = ys + jr;\n      if (y < H) {\n",
      t->SH);
  char yy[64];
  if (cy < t->NR) { /* the rows shared with the previous row of repetitions move up */
    OUT("        if (jr) {\n          #pragma unroll\n          for (int r_ = 0; r_ < %lld; r_++)\n", t->NR - cy);
    OUT("            #pragma unroll\n            for (int c_ = 0; c_ < %d; c_++) wn[r_][c_] = wn[r_ + %lld][c_];\n",
        NWE, cy);
    OUT("          #pragma unroll\n          for (int r_ = %lld; r_ < %d; r_++)\n", t->NR - cy, t->NR);
  } else {
    OUT("        if (jr) {\n          #pragma unroll\n          for (int r_ = 0; r_ < %d; r_++)\n", t->NR);
  }
  snprintf(yy, sizeof yy, "wy0 + %lld * jr + r_", cy);
  twalk_row(g, t, "r_", yy, "            ");
  OUT("        }\n");
  OUT("        %s t_[%d][%d];\n", OT, PX, TW * TH * C);
  OUT("        #pragma unroll\n        for (int k = 0; k < %d; k++)\n", PX);
  /* the window's origin relative to the repetition's (emit.c, V_WIN): constants */
  OUT("          %s_pw(%s, &wn[0][0], %lld - %lld * k, %lld, %d, xs + k, y, W, H, t_[k]);\n", g->pfx, A,
      (long long)ac->ax.c0 - t->off, cx, (long long)ac->ay.c0, NWE);
  tiler_store(g, PX, "        ");
  OUT("      }\n    }\n    return;\n  }\n");
  /* the thread's repetitions one by one */
  cg_tiler_fast(g, "  ");
  OUT("  for (int y = ys; y < ye; y++) {\n");
  tiler_reps(g, A, PX);
  OUT("  }\n}\n");
}

static int tiler_px(const Decl *D) { return per_word(D->tile[0] * bytes_of(D->type)); }

/* A tiler that does not walk: a thread makes PX neighbouring repetitions (PX tiles whose
 * rows together make 4 bytes, where a tile's row is 1 or 2 bytes) of one row, so that a
 * block of 32 x 8 threads covers 32 PX x 8 repetitions, checked at its corners
 * (cg_tiler_fast: "pt" reads directly, "pe" through the border functions); tiler_reps
 * stores each tile row of the PX tiles with one vector store where aligned. Measured on
 * an H200 (2048^2 / 8192^2 ms): a thread per repetition, pyr_down_sep 0.0151 / 0.1925;
 * PX repetitions of one row 0.0139 / 0.1226; of 4 rows 8 apart 0.0213 / 0.1628 (and the
 * HD downscaler, 28800 repetitions a plane, then had too few threads); 4 rows with the
 * block's footprint staged in shared memory and read from there, pyr_down 0.0444 /
 * 0.2205 against 0.0228 / 0.1309 without (byte loads from shared memory, bank conflicts
 * at the stride of 2). */
static void kernel_tiler(Gen *g, const char *A, const GpuTile *tile, GpuLaunch *L) {
  const Decl *D = g->D;
  TilerWalk tw;
  if (tiler_walk_plan(D, tile, &tw)) {
    kernel_tiler_walk(g, A, &tw, L);
    return;
  }
  int TW = D->tile[0], TH = D->tile[1], PX = tiler_px(D);
  *L = (GpuLaunch){.grid = GPU_GRID_TILES, .bx = 32, .by = 8, .px = PX * TW, .py = TH};
  kernel_open(g, cg_ctype(D->type.s), 256);
  OUT("  const int tx = PXG_BX * %d, ty = PXG_BY * 8;\n  if (tx >= W || ty >= H) return;\n", 32 * PX);
  OUT("  const int xe = tx + %d < W ? tx + %d : W, ye = ty + 8 < H ? ty + 8 : H;\n", 32 * PX, 32 * PX);
  cg_tiler_fast(g, "  ");
  OUT("  const int xs = tx + PXG_TX * %d, y = ty + PXG_TY;\n  if (xs >= W || y >= ye) return;\n", PX);
  tiler_reps(g, A, PX);
  OUT("}\n");
}

/* A u8 -> u8 function of the pixel alone (cg_tabulated), CUDA: each block first computes
 * the 256 values into shared memory, a thread per value calling "pi" at (v, 0) with image
 * 0 read from an array of 0..255 (in shared memory: CUDA's pointers are generic; OpenCL's
 * are not, so OpenCL keeps the general entry), then looks its pixels up: TABLE_ROWS rows
 * of 16 pixels per thread, 16-byte loads and stores, 256 threads over 4096 columns. Where
 * the function reads a table image (`lut.at(v, 0)`) the per-pixel read, its border code
 * and its address are gone (equalize's LUT pass: 70 us of ncu time on an H200). Kernels
 * that read no table image take the register path instead: they are memory-bound there
 * already, and a lookup per pixel cost copy.pxl 2.5% on an H200. */
#define TABLE_ROWS 4
static void kernel_table(Gen *g, const char *A, GpuLaunch *L) {
  *L = (GpuLaunch){.grid = GPU_GRID_TILES, .bx = 256, .by = 1, .px = 16, .py = TABLE_ROWS};
  kernel_open(g, "uint8_t", 256);
  OUT("  PXG_SHARED uint8_t lut_[256], val_[256];\n  const int t = PXG_TX;\n");
  OUT("  val_[t] = (uint8_t)t;\n  PXG_SYNC();\n");
  OUT("  {\n    const uint8_t *i0 = val_;\n    %s_pi(%s, t, 0, W, H, lut_ + t);\n  }\n  PXG_SYNC();\n", g->pfx, A);
  OUT("  const int xs = (PXG_BX * 256 + t) * 16;\n  if (xs >= W) return;\n");
  OUT("  for (int y = PXG_BY * %d; y < PXG_BY * %d + %d && y < H; y++) {\n", TABLE_ROWS, TABLE_ROWS, TABLE_ROWS);
  OUT("    const PXR_GLOBAL uint8_t *irow = i0 + (ptrdiff_t)y * p0 + xs;\n");
  OUT("    PXR_GLOBAL uint8_t *orow = o + (ptrdiff_t)y * op + xs;\n");
  OUT("    if (xs + 16 <= W && !((uintptr_t)irow & 15) && !((uintptr_t)orow & 15)) {\n");
  OUT("      union { uint4 v; uint8_t e[16]; } u_;\n      u_.v = *(const PXR_GLOBAL uint4 *)irow;\n");
  OUT("      #pragma unroll\n      for (int e = 0; e < 16; e++) u_.e[e] = lut_[u_.e[e]];\n");
  OUT("      *(PXR_GLOBAL uint4 *)orow = u_.v;\n");
  OUT("    } else {\n      for (int e = 0; e < 16 && xs + e < W; e++) orow[e] = lut_[irow[e]];\n    }\n  }\n}\n");
}

/* ---- gathers with axis values ----
 *
 * A gather whose values of x alone and y alone the plan found (codegen/c/axes.c): a
 * thread owns PX neighbouring columns (4 bytes of output pixels, or one pixel) and R
 * rows, y0 + 8 j of its block's 8 R, so that the block's 8 warps work on neighbouring
 * rows at once; R is the tuned shape's rows (GpuTile.rows, AXES_ROWS untuned: small
 * images want fewer rows a thread, more blocks, large ones more - docs/PERFORMANCE.md). The columns' values and mapped indices are computed
 * once, in registers; each row computes its row values and row offsets once, then the
 * PX pixels ("pa", whose reads need no border test), stored with one vector store where
 * aligned. A region smaller than the output (border none) runs every pixel with every
 * check. */
#define AXES_ROWS 8

static void kernel_axes(Gen *g, const char *A, const GpuTile *tile, GpuLaunch *L) {
  const Decl *D = g->D;
  int R = tuned_rows(tile, AXES_ROWS);
  int C = D->type.lanes, ob = bytes_of(D->type);
  int PX = per_word(ob), N = PX * C;
  bool vec = pow2(PX * ob) && N > 1; /* one element needs no vector view (kernel_tiles) */
  const char *OT = cg_ctype(D->type.s);
  *L = (GpuLaunch){.grid = GPU_GRID_TILES, .bx = 32, .by = 8, .px = PX, .py = R, .tiled = true};
  kernel_open(g, OT, 256);
  OUT("  const int xs = (PXG_BX * 32 + PXG_TX) * %d, y0 = PXG_BY * %d + PXG_TY;\n", PX, 8 * R);
  OUT("  if (xs >= W || y0 >= H) return;\n");
  OUT("  if (rx0 != 0 || rx1 != W || ry0 != 0 || ry1 != H) {\n");
  OUT("    for (int y = y0; y < y0 + %d && y < H; y += 8) {\n      PXR_GLOBAL %s *orow = o + (ptrdiff_t)y * op;\n",
      8 * R, OT);
  OUT("      for (int x = xs; x < xs + %d && x < W; x++)\n", PX);
  pixel_checked(g, A, C, "      ");
  OUT("    }\n    return;\n  }\n");
  cg_axes_columns(g, "  ", PX);
  /* the rows one after another: unrolled (their loads in flight together), resize_linear
   * went 0.0487 -> 0.0511 ms at 8192^2 on the H200, resize_nearest 0.0231 -> 0.0236. A
   * guarded block, not `break` (tile_store: PoCL 3.1's optimiser stored rows past H with
   * the break) */
  OUT("  #pragma unroll 1\n  for (int j = 0; j < %d; j++) {\n    const int y = y0 + 8 * j;\n    if (y < H) {\n", R);
  OUT("    PXR_GLOBAL %s *orow = o + (ptrdiff_t)y * op + (ptrdiff_t)xs * %d;\n", OT, C);
  cg_axes_row(g, "    ");
  if (vec) OUT("    union { PXG_VEC(%d) v; %s e[%d]; } v_;\n", PX * ob, OT, N);
  else OUT("    struct { %s e[%d]; } v_;\n", OT, N);
  for (int c = 0; c < PX; c++) {
    StrBuf aargs = {0};
    char sfx[16];
    snprintf(sfx, sizeof sfx, "_%d", c);
    sb_printf(&aargs, "%s", A);
    cg_axes_args(g, &aargs, sfx);
    OUT("    %s_pa(%s, xs + %d, y, W, H, v_.e + %d);\n", g->pfx, aargs.s, c, c * C);
    sb_free(&aargs);
  }
  if (vec) OUT("    if (xs + %d <= W && !((uintptr_t)orow & %d)) *(PXR_GLOBAL PXG_VEC(%d) *)orow = v_.v;\n    else ", PX,
               PX * ob - 1, PX * ob);
  else OUT("    ");
  OUT("for (int e = 0; e < %d && xs + e / %d < W; e++) orow[e] = v_.e[e];\n", N, C);
  OUT("    }\n  }\n}\n");
}

/* The entry point of a kernel, the first that applies; gen_gpu_stage emits the pixel
 * functions it calls. */
typedef enum { ENTRY_REG, ENTRY_TABLE, ENTRY_WALK, ENTRY_STRIPS, ENTRY_NONSEQ, ENTRY_TILES, ENTRY_TILER, ENTRY_AXES } EntryForm;

/* Kernel D's entry form; fills *wk for the walk and *sp for strips. */
static EntryForm entry_form(const Gen *g, const GpuTile *tile, Walk *wk, Strip *sp) {
  if (g->D->tile[0]) return ENTRY_TILER;
  if (g->axes) return ENTRY_AXES;
  if (reg_width(g->D)) return ENTRY_REG;
  if (g->dialect == GPU_CUDA && cg_tabulated(g->D)) return ENTRY_TABLE;
  if (walk_plan(g, tile, wk)) return ENTRY_WALK;
  if (strip_plan(g, tile, sp)) return ENTRY_STRIPS;
  if (cg_corner_tiles(g->D)) return ENTRY_NONSEQ;
  return ENTRY_TILES;
}

static void kernel_entry(Gen *g, const char *A, const GpuTile *tile, EntryForm form, const Walk *wk, const Strip *sp,
                         GpuLaunch *L) {
  switch (form) {
  case ENTRY_REG: kernel_reg(g, A, reg_width(g->D), L); break;
  case ENTRY_TABLE: kernel_table(g, A, L); break;
  case ENTRY_WALK: kernel_walk(g, A, wk, L); break;
  case ENTRY_STRIPS: kernel_strips(g, A, sp, L); break;
  case ENTRY_NONSEQ: kernel_nonseq(g, A, L); break;
  case ENTRY_TILES: kernel_tiles(g, A, tile, L); break;
  case ENTRY_TILER: kernel_tiler(g, A, tile, L); break;
  case ENTRY_AXES: kernel_axes(g, A, tile, L); break;
  }
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

/* acc of lane 0 = the combine of the warp's accs, in a fixed order. */
static void shfl_tree(Gen *g, const char *T, const char *ind) {
  OUT("%s#pragma unroll\n%sfor (int o_ = 16; o_ > 0; o_ >>= 1) {\n", ind, ind);
  OUT("%s  const %s b_ = (%s)__shfl_down_sync(0xffffffffu, acc, o_);\n%s  ", ind, T, T, ind);
  cg_combine(g, "acc", "b_");
  OUT("\n%s}\n", ind);
}

/* The shared memory of block_combine, declared once at the top of the kernel (OpenCL
 * wants local memory at kernel scope). */
static void block_locals(Gen *g, const char *T, bool arg) {
  if (!arg && g->dialect == GPU_CUDA) {
    OUT("  PXG_SHARED %s sw_[%d];\n", T, PXL_GPU_BLOCK / 32);
    return;
  }
  OUT("  PXG_SHARED %s sv[%d];\n", T, PXL_GPU_BLOCK);
  if (arg) OUT("  PXG_SHARED int sx[%d], sy[%d];\n", PXL_GPU_BLOCK, PXL_GPU_BLOCK);
}

/* Combines the block's per-thread (acc, ax, ay) into thread 0's, in a fixed order: in
 * CUDA warp shuffles then the warps in order; else (and for argmin/argmax) a tree in
 * shared memory. */
static void block_combine(Gen *g, const char *T, bool arg) {
  if (!arg && g->dialect == GPU_CUDA) {
    OUT("  const int lane_ = t & 31, wid_ = t >> 5;\n");
    shfl_tree(g, T, "  ");
    OUT("  if (lane_ == 0) sw_[wid_] = acc;\n  PXG_SYNC();\n  if (wid_ == 0) {\n");
    OUT("    if (lane_ < %d) acc = sw_[lane_];\n    else acc = ", PXL_GPU_BLOCK / 32);
    cg_identity(g);
    OUT(";\n");
    shfl_tree(g, T, "    ");
    OUT("  }\n  PXG_SYNC();\n");
    return;
  }
  OUT("  sv[t] = acc;\n");
  if (arg) OUT("  sx[t] = ax; sy[t] = ay;\n");
  OUT("  PXG_SYNC();\n  for (int s = %d; s > 0; s >>= 1) {\n    if (t < s) {\n", PXL_GPU_BLOCK / 2);
  OUT("      %s av = sv[t], bv = sv[t + s];\n", T);
  if (arg) OUT("      int ax2 = sx[t], ay2 = sy[t], bx = sx[t + s], by = sy[t + s];\n");
  OUT("      ");
  if (arg) merge(g, "av", "ax2", "ay2", "bv", "bx", "by", true);
  else merge(g, "av", "", "", "bv", "", "", false);
  OUT("      sv[t] = av;\n");
  if (arg) OUT("      sx[t] = ax2; sy[t] = ay2;\n");
  OUT("    }\n    PXG_SYNC();\n  }\n  acc = sv[0];\n");
  if (arg) OUT("  ax = sx[0]; ay = sy[0];\n");
  OUT("  PXG_SYNC();\n");
}

/* The loop over the pixels of row y owned by thread t of the block: 16-byte register
 * loads where possible (VP > 0), then the rest one pixel at a time. BODY(vfn, x) is
 * written by `visit` for the value or call of pixel function `vfn` at x. */
typedef void (*Visit)(Gen *g, const char *A, const char *fn, const char *extra, const char *ind);

static void row_loop(Gen *g, const char *A, int VP, Visit visit) {
  OUT("    int xv = rx0;\n");
  if (VP) {
    OUT("    const int xs0 = rx0;\n    {\n      const int xs = xs0;\n");
    OUT("      if (rx1 - rx0 >= %d && y >= iy0 && y < iy1 && rx0 >= ix0 && rx1 <= ix1 && ", VP);
    reg_aligned(g, VP);
    OUT(") {\n");
    OUT("        const int nv = (rx1 - rx0) / %d;\n", VP);
    OUT("        for (int v_ = t; v_ < nv; v_ += PXG_NTX) {\n          const int xs = xs0 + v_ * %d;\n", VP);
    reg_loads(g, VP, "          ");
    StrBuf ra = {0};
    reg_args(g, &ra);
    OUT("          #pragma unroll\n          for (int j_ = 0; j_ < %d; j_++) {\n            const int x = xs + j_;\n", VP);
    visit(g, A, "pv", ra.s, "            ");
    sb_free(&ra);
    OUT("          }\n        }\n        xv = rx0 + nv * %d;\n      }\n    }\n", VP);
  }
  OUT("    for (int x = xv + t; x < rx1; x += PXG_NTX) {\n");
  OUT("      if (x >= ix0 && x < ix1 && y >= iy0 && y < iy1) {\n");
  visit(g, A, "pi", "", "        ");
  OUT("      } else {\n");
  visit(g, A, "pe", "", "        ");
  OUT("      }\n    }\n");
}

static void visit_reduce(Gen *g, const char *A, const char *fn, const char *extra, const char *ind) {
  OUT("%sconst %s v = %s_%s(%s%s, x, y, W, H);\n%s", ind, cg_ctype(g->D->type.s), g->pfx, fn, A, extra, ind);
  cg_fold_pixel(g, "v");
  OUT("\n");
}

/* "this block is the last of the grid to finish" in last_ (shared), after each block
 * has published its part: a counter at `cnt`, reset by the last block. All threads of
 * the block call it. */
static void last_block(Gen *g, const char *cnt) {
  /* every thread's global writes (a histogram's flush is spread over the block) are made
   * visible and finished before the block counts itself done: without the barrier, thread
   * 0 could count while other threads still add, and the last block would read and zero
   * bins that then receive the late adds (seen on PoCL under load: bins off by 4) */
  OUT("  PXG_SHARED int last_;\n  PXG_FENCE();\n  PXG_SYNC();\n");
  OUT("  if (t == 0) last_ = PXG_ATOMIC_INC(%s) == (unsigned)PXG_NBX - 1u;\n  PXG_SYNC();\n", cnt);
  OUT("  if (!last_) return;\n  PXG_FENCE();\n");
}

/* One launch: each block reduces a chunk of rows (chunk c: rows H*c/n .. H*(c+1)/n) and
 * publishes it; the last block to finish combines the chunks in order (thread t takes
 * chunks 4t..4t+3, then the block combine) and writes the value to a.res (pinned host
 * memory): the order never depends on timing, so float results are reproducible. */
static void reduce_entries(Gen *g, const char *A, int VP, GpuLaunch *L) {
  const Decl *D = g->D;
  const char *T = cg_ctype(D->type.s);
  bool arg = D->redop == R_ARGMIN || D->redop == R_ARGMAX;
  char f = scalar_is_float(D->type.s) ? 'f' : 'i';
  *L = (GpuLaunch){.grid = GPU_GRID_ROWS, .bx = PXL_GPU_BLOCK, .by = 1, .chunks = PXL_GPU_CHUNKS};
  entry_open(g, "pxl_stage", false, PXL_GPU_BLOCK);
  OUT("  const int nch = PXG_NBX, c = PXG_BX, t = PXG_TX;\n");
  block_locals(g, T, arg);
  OUT("  PXR_GLOBAL pxlc_scalar *part = (PXR_GLOBAL pxlc_scalar *)PXG_AUX;\n  PXR_GLOBAL int32_t *pos = (PXR_GLOBAL int32_t *)(part + %d);\n", PXL_GPU_CHUNKS);
  OUT("  const int y0 = (int)((int64_t)H * c / nch), y1 = (int)((int64_t)H * (c + 1) / nch);\n");
  OUT("  %s acc = ", T);
  cg_identity(g);
  OUT(";\n  int ax = -1, ay = -1;\n  (void)ax; (void)ay;\n");
  OUT("  for (int y = y0 > ry0 ? y0 : ry0; y < (y1 < ry1 ? y1 : ry1); y++) {\n");
  row_loop(g, A, VP, visit_reduce);
  OUT("  }\n  {\n");
  block_combine(g, T, arg);
  OUT("  }\n  if (t == 0) {\n    part[c].%c = acc;\n    pos[2 * c] = ax;\n    pos[2 * c + 1] = ay;\n  }\n", f);
  last_block(g, "part + " PXL_STR(PXL_GPU_CHUNKS) " * 2");
  OUT("  acc = ");
  cg_identity(g);
  OUT(";\n  ax = -1;\n  ay = -1;\n");
  OUT("  const volatile PXR_GLOBAL pxlc_scalar *vpart = part;\n  const volatile PXR_GLOBAL int32_t *vpos = pos;\n");
  int per = (PXL_GPU_CHUNKS + PXL_GPU_BLOCK - 1) / PXL_GPU_BLOCK;
  OUT("  for (int k = t * %d; k < t * %d + %d && k < nch; k++) {\n", per, per, per);
  OUT("    const %s v = (%s)vpart[k].%c;\n    const int vx = vpos[2 * k], vy = vpos[2 * k + 1];\n", T, T, f);
  OUT("    (void)vx; (void)vy;\n    ");
  merge(g, "acc", "ax", "ay", "v", "vx", "vy", arg);
  OUT("  }\n  {\n");
  block_combine(g, T, arg);
  OUT("  }\n  if (t == 0) {\n    PXR_GLOBAL pxlc_scalar *res = (PXR_GLOBAL pxlc_scalar *)PXG_RES;\n    PXR_GLOBAL int32_t *rpos = (PXR_GLOBAL int32_t *)(res + 1);\n");
  OUT("    res[0].%c = acc;\n    rpos[0] = ax;\n    rpos[1] = ay;\n", f);
  OUT("    *(PXR_GLOBAL uint32_t *)(part + %d * 2) = 0;\n  }\n}\n", PXL_GPU_CHUNKS);
}

/* Bins a block can count in shared memory (32-bit): 48 KiB. */
#define SMEM_BINS (48 * 1024 / 4)

/* Copies of a counting histogram's bins in a block's shared memory: thread t counts into
 * copy t % copies at word bin * copies + copy, so with 32 copies (up to 256 bins, 32 KiB)
 * a warp's atomic adds never share a bank, whatever the pixels; fewer copies for more
 * bins, within 32 KiB. Shared atomics are what a counting histogram waits on: a kernel
 * alone counting 8192^2 random bytes on an H100, 256 bins in one copy: 0.0385 ms, in 32
 * copies 0.0332 ms (the image read alone would take 0.024). */
static int hist_copies(const Decl *D) {
  int r = 32;
  while (r > 1 && D->nbins * r > 8192) r /= 2;
  return r;
}

static void visit_count(Gen *g, const char *A, const char *fn, const char *extra, const char *ind) {
  OUT("%s%s_%sc(%s%s, x, y, W, H, sc_);\n", ind, g->pfx, fn, A, extra);
}

static void histogram_entry(Gen *g, const char *A, int VP, GpuLaunch *L) {
  const Decl *D = g->D;
  if (cg_counts_only(g) && D->nbins <= SMEM_BINS) {
    /* a block counts at most ceil(65535 / PXL_GPU_HIST_BLOCKS) rows of at most 65535
     * pixels: 32-bit bins hold that unless a pixel adds more than 512 counts, and
     * cg_counts_only admits at most 256; the copies of a bin hold their sum between them */
    int R = hist_copies(D), n = D->nbins * R;
    *L = (GpuLaunch){.grid = GPU_GRID_ROWS, .bx = PXL_GPU_HIST_THREADS, .by = 1, .chunks = PXL_GPU_HIST_BLOCKS,
                     .to_host = true};
    entry_open(g, "pxl_stage", false, PXL_GPU_HIST_THREADS);
    OUT("  PXG_SHARED uint32_t sb_[%d];\n  const int t = PXG_TX;\n", n);
    OUT("  for (int b = t; b < %d; b += PXG_NTX) sb_[b] = 0;\n  PXG_SYNC();\n", n);
    OUT("  PXR_LOCAL uint32_t *const sc_ = sb_ + (t & %d);\n", R - 1);
    OUT("  for (int y = ry0 + PXG_BX; y < ry1; y += PXG_NBX) {\n");
    row_loop(g, A, VP, visit_count);
    OUT("  }\n  PXG_SYNC();\n  PXR_GLOBAL int64_t *bins = (PXR_GLOBAL int64_t *)PXG_AUX;\n");
    /* neighbouring threads' bins start in neighbouring banks: reading the copies in turn
     * from there, a warp's reads never share a bank either */
    OUT("  for (int b = t; b < %d; b += PXG_NTX) {\n    uint32_t s = 0;\n", D->nbins);
    OUT("    for (int k = 0; k < %d; k++) s += sb_[b * %d + ((b + k) & %d)];\n", R, R, R - 1);
    OUT("    if (s) PXG_ATOMIC_ADD_U64(&bins[b], s);\n  }\n");
    /* the last block hands the bins to the host and leaves them zero for the next run */
    char cnt[64];
    snprintf(cnt, sizeof cnt, "bins + %d", D->nbins);
    last_block(g, cnt);
    OUT("  volatile PXR_GLOBAL int64_t *vb = bins;\n  PXR_GLOBAL int64_t *res = (PXR_GLOBAL int64_t *)PXG_RES;\n");
    OUT("  for (int b = t; b < %d; b += PXG_NTX) {\n    res[b] = vb[b];\n    vb[b] = 0;\n  }\n", D->nbins);
    OUT("  if (t == 0) *(PXR_GLOBAL uint32_t *)(bins + %d) = 0;\n}\n", D->nbins);
    return;
  }
  const char *BT = hist_double_sums(D) ? "double" : "int64_t";
  entry_open(g, "pxl_stage", false, 256);
  OUT("  PXR_GLOBAL %s *bins = (PXR_GLOBAL %s *)PXG_AUX;\n", BT, BT);
  if (hist_double_sums(D)) { /* one thread, row-major: the interpreter's order of float additions */
    *L = (GpuLaunch){.grid = GPU_GRID_ONE, .bx = 1, .by = 1};
    OUT("  if (PXG_BX || PXG_BY || PXG_TX || PXG_TY) return;\n");
    OUT("  for (int y = ry0; y < ry1; y++) {\n    for (int x = rx0; x < rx1; x++) {\n");
  } else { /* weighted integer bins, keys of minima or maxima: global atomics (integer
            * addition and the larger key commute) */
    *L = (GpuLaunch){.grid = GPU_GRID_TILES, .bx = 32, .by = 8, .px = 1, .py = 1};
    OUT("  const int x = (PXG_BX * PXG_NTX + PXG_TX), y = (PXG_BY * PXG_NTY + PXG_TY);\n");
    OUT("  if (x < rx0 || x >= rx1 || y < ry0 || y >= ry1) return;\n  {\n    {\n");
  }
  OUT("      if (x >= ix0 && x < ix1 && y >= iy0 && y < iy1) %s_pi(%s, x, y, W, H, bins);\n", g->pfx, A);
  OUT("      else %s_pe(%s, x, y, W, H, bins);\n    }\n  }\n}\n", g->pfx, A);
}

/* ---- scans ---- */

/* Whether the scan's combine may be regrouped: integer sums wrap and min/max keep the
 * first of equal values (NaN skipped), so any grouping of the same sequence gives the
 * interpreter's bits; float sums round differently when regrouped. */
static bool scan_parallel(const Decl *D) { return !(D->redop == R_SUM && scalar_is_float(D->type.s)); }

static bool scan_2d(const Decl *D) { return (D->scan & SCAN_X) && (D->scan & SCAN_Y); }

/* Elements of the scan's type in a 16-byte vector: a lane's columns in the parallel passes. */
static int scan_elems(const Decl *D) { return 16 / scalar_size(D->type.s); }

bool gen_gpu_scan_fused(const Decl *D) {
  return scan_parallel(D) && !(scan_2d(D) && scalar_is_float(D->type.s));
}

/* The passes that exist only in fused scans. */
static bool fused_only(GpuScanPass pass) { return pass == GSP_TOTALS || pass == GSP_RCARRY || pass == GSP_TILES; }

bool gen_gpu_scan_pass_exists(const Decl *D, GpuScanPass pass) { return gen_gpu_scan_fused(D) || !fused_only(pass); }

int gen_gpu_scan_passes(const Decl *D, GpuScanPass *passes) {
  int n = 0;
  if (!scan_parallel(D)) {
    if (D->scan & SCAN_X) passes[n++] = GSP_ROWS_SEQ;
    if (D->scan & SCAN_Y) passes[n++] = GSP_COLS_SEQ;
    return n;
  }
  if (!gen_gpu_scan_fused(D)) { /* 2-D float min/max: after the map */
    passes[n++] = GSP_ROWS;
    passes[n++] = GSP_CARRIES;
    passes[n++] = GSP_COLS;
    return n;
  }
  passes[n++] = GSP_TOTALS;
  if (D->scan & SCAN_Y) passes[n++] = GSP_CARRIES;
  if (D->scan & SCAN_X) {
    passes[n++] = GSP_RCARRY;
    passes[n++] = GSP_TILES;
  } else {
    passes[n++] = GSP_COLS;
  }
  return n;
}

size_t gen_gpu_scan_aux(const Decl *D, int w, int h) {
  if (!scan_parallel(D)) return 0;
  size_t bands = (size_t)(h + PXL_GPU_SCAN_BAND - 1) / PXL_GPU_SCAN_BAND, n = 0;
  if (D->scan & SCAN_Y) n += bands * (size_t)w;
  if ((D->scan & SCAN_X) && gen_gpu_scan_fused(D)) {
    size_t cw = 32 * (size_t)scan_elems(D);
    n += (size_t)h * (((size_t)w + cw - 1) / cw);
  }
  return n * (size_t)scalar_size(D->type.s);
}

/* dst = left OP right, in that order (min/max keep the left of equal values). */
static void scan_comb(Gen *g, const char *T, const char *dst, const char *left, const char *right) {
  OUT("{ %s l_ = %s; ", T, left);
  cg_combine(g, "l_", right);
  OUT(" %s = l_; }", dst);
}

/* The text of `v` passed through a warp shuffle: 8- and 16-bit values travel as int. */
static void shfl_arg(Gen *g, const char *v) {
  if (scalar_size(g->D->type.s) < 4) OUT("(int)%s", v);
  else OUT("%s", v);
}

/* The warp scan of the rows pass (CUDA): lane `lane` of the warp holds s, the combine of
 * its elements; ex_ becomes the combine of the lanes before it (identity for lane 0),
 * tot_ that of the whole warp, each in lane order. */
static void warp_scan_cuda(Gen *g, const char *T, const char *ind) {
  OUT("%sfor (int d_ = 1; d_ < 32; d_ <<= 1) {\n%s  %s t_ = (%s)__shfl_up_sync(0xffffffffu, ", ind, ind, T, T);
  shfl_arg(g, "s_");
  OUT(", d_);\n%s  if (lane >= d_) ", ind);
  scan_comb(g, T, "s_", "t_", "s_");
  OUT("\n%s}\n%s%s ex_ = (%s)__shfl_up_sync(0xffffffffu, ", ind, ind, T, T);
  shfl_arg(g, "s_");
  OUT(", 1);\n%sif (lane == 0) ex_ = id_;\n%sconst %s tot_ = (%s)__shfl_sync(0xffffffffu, ", ind, ind, T, T);
  shfl_arg(g, "s_");
  OUT(", 31);\n");
}

/* dst = the mapped value of a fused scan at (x, y) (variables in scope): the identity
 * outside the output, 0 outside its region (border none: the margins take part as 0), as
 * the kernel entry's pixel_checked writes it. */
static void map_value(Gen *g, const char *A, const char *dst, const char *ind) {
  const char *T = cg_ctype(g->D->type.s);
  OUT("%s{\n%s  %s t_[1];\n%s  if (x >= W || y >= H) t_[0] = id_;\n", ind, ind, T, ind);
  char lead[64];
  snprintf(lead, sizeof lead, "%s  else ", ind);
  pixel_value(g, A, 1, lead, ind);
  OUT("%s  %s = t_[0];\n%s}\n", ind, dst, ind);
}

/* The entry of a scan pass: W, H, the output o (pitch op, in elements), aux as ct (the
 * band totals), id_ the identity; with `fused`, the images, scalars and regions of the
 * scan's map (the kernel entry's prologue). */
static void scan_open(Gen *g, const char *T, unsigned threads, bool fused) {
  if (fused) {
    entry_open(g, "pxl_stage", true, threads);
  } else {
    if (g->dialect == GPU_OPENCL) {
      OUT("__kernel void pxl_stage("); /* the arguments of every entry (entry_open): the core sets them all */
      for (int i = 0; i < PXL_GPU_MAX_IMAGES; i++) OUT("__global uchar *b%d, ", i);
      OUT("__global uchar *bo, __global uchar *baux, __global uchar *bres, __global uchar *bprm, pxl_kargs a) {\n");
    } else {
      OUT("extern \"C\" __global__ void __launch_bounds__(%u) pxl_stage(pxl_kargs a) {\n", threads);
    }
    OUT("  pxlc_image *out = &a.out;\n  const int W = out->width, H = out->height;\n");
  }
  OUT("  PXR_GLOBAL %s *o = (PXR_GLOBAL %s *)PXG_OUT_DATA;\n", T, T);
  OUT("  const ptrdiff_t op = (ptrdiff_t)(out->pitch / (int64_t)sizeof(%s));\n", T);
  OUT("  PXR_GLOBAL %s *ct = (PXR_GLOBAL %s *)PXG_AUX;\n  (void)ct;\n", T, T);
  OUT("  const %s id_ = ", T);
  cg_identity(g);
  OUT(";\n");
}

/* Float sums, rows: 32 rows per block of 32 x 8 threads; 32 x 32 tiles staged through
 * shared memory with coalesced loads and stores (rows padded against bank conflicts),
 * each row scanned by one thread of the first warp, left to right, its accumulator
 * carried along the row. */
static void scan_rows_seq(Gen *g, const char *T, GpuLaunch *L) {
  *L = (GpuLaunch){.grid = GPU_GRID_BANDS, .bx = 32, .by = 8, .px = 1, .py = 4};
  OUT("  %s acc = id_;\n  PXG_SHARED %s s_[32][33];\n", T, T);
  OUT("  const int tx = PXG_TX, ty = PXG_TY, y0 = PXG_BY * 32;\n");
  OUT("  for (int x0 = 0; x0 < W; x0 += 32) {\n");
  OUT("    for (int r = ty; r < 32; r += 8)\n");
  OUT("      if (y0 + r < H && x0 + tx < W) s_[r][tx] = o[(ptrdiff_t)(y0 + r) * op + x0 + tx];\n");
  OUT("    PXG_SYNC();\n    if (ty == 0 && y0 + tx < H) {\n");
  OUT("      const int n = W - x0 < 32 ? W - x0 : 32;\n");
  OUT("      for (int k = 0; k < n; k++) {\n        const %s v = s_[tx][k];\n        ", T);
  cg_combine(g, "acc", "v");
  OUT("\n        s_[tx][k] = acc;\n      }\n    }\n    PXG_SYNC();\n");
  OUT("    for (int r = ty; r < 32; r += 8)\n");
  OUT("      if (y0 + r < H && x0 + tx < W) o[(ptrdiff_t)(y0 + r) * op + x0 + tx] = s_[r][tx];\n");
  OUT("    PXG_SYNC();\n  }\n}\n");
}

/* Float sums, columns: a column per thread, top to bottom (neighbouring threads,
 * neighbouring pixels); 8 rows loaded before they are combined, so that a thread waits
 * for memory once per 8 rows. */
static void scan_cols_seq(Gen *g, const char *T, GpuLaunch *L) {
  *L = (GpuLaunch){.grid = GPU_GRID_COLUMNS, .bx = 256, .by = 1, .px = 1, .py = 1};
  OUT("  %s acc = id_;\n", T);
  OUT("  const int t = PXG_BX * PXG_NTX + PXG_TX;\n  if (t >= W) return;\n");
  OUT("  PXR_GLOBAL %s *p = o + t;\n  int y = 0;\n", T);
  OUT("  for (; y + 8 <= H; y += 8, p += 8 * op) {\n    %s v[8];\n", T);
  OUT("    for (int k = 0; k < 8; k++) v[k] = p[k * op];\n");
  OUT("    for (int k = 0; k < 8; k++) {\n      ");
  cg_combine(g, "acc", "v[k]");
  OUT("\n      p[k * op] = acc;\n    }\n  }\n");
  OUT("  for (; y < H; y++, p += op) {\n    const %s v = *p;\n    ", T);
  cg_combine(g, "acc", "v");
  OUT("\n    *p = acc;\n  }\n}\n");
}

/* Stores v[r][k], R rows from y0 of E elements from column xs, into the output: a
 * 16-byte vector per row where aligned and inside. */
static void scan_store(Gen *g, const char *T, int R, int E, const char *ind) {
  OUT("%s#pragma unroll\n%sfor (int r = 0; r < %d; r++) {\n", ind, ind, R);
  OUT("%s  PXR_GLOBAL %s *p = o + (ptrdiff_t)(y0 + r) * op + xs;\n%s  if (y0 + r >= H) continue;\n", ind, T, ind);
  OUT("%s  if (xs + %d <= W && !((uintptr_t)p & 15)) {\n", ind, E);
  OUT("%s    union { PXG_VEC(16) v; %s e[%d]; } u_;\n", ind, T, E);
  OUT("%s    #pragma unroll\n%s    for (int k = 0; k < %d; k++) u_.e[k] = v[r][k];\n", ind, ind, E);
  OUT("%s    *(PXR_GLOBAL PXG_VEC(16) *)p = u_.v;\n%s  } else {\n", ind, ind);
  OUT("%s    for (int k = 0; k < %d && xs + k < W; k++) p[k] = v[r][k];\n%s  }\n%s}\n", ind, E, ind, ind);
}

/* Rows, in parallel: a block of 8 warps takes a band of PXL_GPU_SCAN_BAND rows, each warp
 * R consecutive rows (R independent scans in flight), and crosses them in chunks of 32
 * lanes x E elements (one 16-byte vector per lane where aligned): each lane scans its
 * elements, the warp scans the lanes' totals (shuffles in CUDA; OpenCL 1.2 has none, so
 * local memory there), and a carry per row takes the chunk's total to the next chunk.
 * With SCAN_Y the block also leaves its band's column totals in ct (row b of W values):
 * each lane combines its R rows, then a thread per column the 8 warps, in row order. */
static void scan_rows(Gen *g, const char *T, GpuLaunch *L) {
  const Decl *D = g->D;
  int E = scan_elems(D), R = PXL_GPU_SCAN_BAND / 8, CW = 32 * E;
  bool totals = D->scan & SCAN_Y, cuda = g->dialect == GPU_CUDA;
  *L = (GpuLaunch){.grid = GPU_GRID_BANDS, .bx = 256, .by = 1, .px = 1, .py = PXL_GPU_SCAN_BAND};
  if (totals) OUT("  PXG_SHARED %s cs_[8][%d];\n", T, CW);
  if (!cuda) OUT("  PXG_SHARED %s sl_[8][%d][32];\n", T, R);
  OUT("  const int lane = PXG_TX & 31, wp = PXG_TX >> 5, y0 = PXG_BY * %d + wp * %d;\n", PXL_GPU_SCAN_BAND, R);
  OUT("  %s carry[%d];\n  for (int r = 0; r < %d; r++) carry[r] = id_;\n", T, R, R);
  OUT("  for (int x0 = 0; x0 < W; x0 += %d) {\n    const int xs = x0 + lane * %d;\n    %s v[%d][%d];\n", CW, E, T, R, E);
  OUT("    #pragma unroll\n    for (int r = 0; r < %d; r++) {\n", R);
  OUT("      const PXR_GLOBAL %s *p = o + (ptrdiff_t)(y0 + r) * op + xs;\n", T);
  OUT("      if (y0 + r < H && xs + %d <= W && !((uintptr_t)p & 15)) {\n", E);
  OUT("        union { PXG_VEC(16) v; %s e[%d]; } u_;\n", T, E);
  OUT("        u_.v = *(const PXR_GLOBAL PXG_VEC(16) *)p;\n");
  OUT("        #pragma unroll\n        for (int k = 0; k < %d; k++) v[r][k] = u_.e[k];\n      } else {\n", E);
  OUT("        #pragma unroll\n        for (int k = 0; k < %d; k++) v[r][k] = y0 + r < H && xs + k < W ? p[k] : id_;\n",
      E);
  OUT("      }\n    }\n");
  /* each lane's elements from the identity: every partial is a fold of the interpreter's
   * kind, never NaN, whatever the grouping */
  OUT("    #pragma unroll\n    for (int r = 0; r < %d; r++) {\n      ", R);
  scan_comb(g, T, "v[r][0]", "id_", "v[r][0]");
  OUT("\n      #pragma unroll\n      for (int k = 1; k < %d; k++) ", E);
  scan_comb(g, T, "v[r][k]", "v[r][k - 1]", "v[r][k]");
  OUT("\n    }\n");
  if (!cuda) {
    OUT("    for (int r = 0; r < %d; r++) sl_[wp][r][lane] = v[r][%d];\n    PXG_SYNC();\n", R, E - 1);
  }
  OUT("    #pragma unroll\n    for (int r = 0; r < %d; r++) {\n", R);
  if (cuda) {
    OUT("      %s s_ = v[r][%d];\n", T, E - 1);
    warp_scan_cuda(g, T, "      ");
  } else {
    OUT("      %s ex_ = id_;\n      for (int j = 0; j < lane; j++) ", T);
    cg_combine(g, "ex_", "sl_[wp][r][j]");
    OUT("\n      %s tot_ = ex_;\n      for (int j = lane; j < 32; j++) ", T);
    cg_combine(g, "tot_", "sl_[wp][r][j]");
    OUT("\n");
  }
  OUT("      %s pre_ = carry[r];\n      ", T);
  cg_combine(g, "pre_", "ex_");
  OUT("\n      ");
  cg_combine(g, "carry[r]", "tot_");
  OUT("\n      #pragma unroll\n      for (int k = 0; k < %d; k++) ", E);
  scan_comb(g, T, "v[r][k]", "pre_", "v[r][k]");
  OUT("\n    }\n");
  scan_store(g, T, R, E, "    ");
  if (totals) {
    OUT("    #pragma unroll\n    for (int k = 0; k < %d; k++) {\n      %s c_ = id_;\n", E, T);
    OUT("      #pragma unroll\n      for (int r = 0; r < %d; r++) ", R);
    cg_combine(g, "c_", "v[r][k]");
    OUT("\n      cs_[wp][lane * %d + k] = c_;\n    }\n    PXG_SYNC();\n", E);
    OUT("    for (int c = PXG_TX; c < %d; c += 256) {\n      if (x0 + c >= W) break;\n      %s c_ = id_;\n", CW, T);
    OUT("      #pragma unroll\n      for (int w = 0; w < 8; w++) ");
    cg_combine(g, "c_", "cs_[w][c]");
    OUT("\n      ct[(ptrdiff_t)PXG_BY * W + x0 + c] = c_;\n    }\n");
  }
  if (totals || !cuda) OUT("    PXG_SYNC();\n");
  OUT("  }\n}\n");
}

/* Columns in bands of PXL_GPU_SCAN_BAND rows, a thread per column and band (enough
 * threads to keep memory busy), 8 rows loaded before they are combined, from the band's
 * carry in ct: the mapped values in o (a 2-D scan after its rows pass), or computed here
 * (a fused scan along y). */
static void scan_band_cols(Gen *g, const char *A, const char *T, GpuLaunch *L) {
  *L = (GpuLaunch){.grid = GPU_GRID_TILES, .bx = 128, .by = 1, .px = 1, .py = PXL_GPU_SCAN_BAND};
  OUT("  const int x = PXG_BX * 128 + PXG_TX, b = PXG_BY, y0 = b * %d;\n  if (x >= W) return;\n", PXL_GPU_SCAN_BAND);
  OUT("  const int n = H - y0 < %d ? H - y0 : %d;\n", PXL_GPU_SCAN_BAND, PXL_GPU_SCAN_BAND);
  OUT("  %s c_ = ct[(ptrdiff_t)b * W + x];\n  PXR_GLOBAL %s *p = o + (ptrdiff_t)y0 * op + x;\n", T, T);
  OUT("  for (int y = 0; y < n; y += 8) {\n    %s v[8];\n", T);
  if (gen_gpu_scan_fused(g->D)) {
    OUT("    #pragma unroll\n    for (int k = 0; k < 8; k++)\n      if (y + k < n) {\n        const int ym_ = y0 + y + k;\n");
    OUT("        {\n          const int y = ym_;\n");
    map_value(g, A, "v[k]", "          ");
    OUT("        }\n      }\n");
  } else {
    OUT("    #pragma unroll\n    for (int k = 0; k < 8; k++)\n      if (y + k < n) v[k] = p[(ptrdiff_t)(y + k) * op];\n");
  }
  OUT("    #pragma unroll\n    for (int k = 0; k < 8; k++)\n      if (y + k < n) {\n        ");
  cg_combine(g, "c_", "v[k]");
  OUT("\n        p[(ptrdiff_t)(y + k) * op] = c_;\n      }\n  }\n}\n");
}

/* ---- fused scans in tiles (gen_gpu_scan_fused) ----
 *
 * A tile is a band of PXL_GPU_SCAN_BAND rows by a segment of 32 x E columns (E: the
 * elements of a 16-byte vector of the scan's type), a block of 8 warps x 4 rows, each
 * lane E consecutive columns. With nb bands and ns segments, aux holds ct (nb x W: each
 * band's column totals, then the combine of the bands above; along y) and after it rt
 * (H x ns: each row's segment totals, then the row carries; along x). The passes:
 *   TOTALS   each tile's mapped values combined down its columns (ct) and along its rows
 *            (rt);
 *   CARRIES  ct[b] -> the combine of ct[0..b-1] (scan_carries);
 *   RCARRY   per band: (along y) ct[b] combined along the row - the 2-D result at the
 *            row above the band; (along x) each row's rt combined over the segments to
 *            its left, then (2-D) down the band's rows: the combine of every mapped value
 *            of the band left of the segment, at or above the row;
 *   TILES    each tile's mapped values combined down the band (across its warps) and along
 *            its segment's rows, then with the row carry and the row above the band.
 * Every value is then the combine of the rectangle's mapped values, in another grouping
 * than the interpreter's: exact for integer sums (they wrap), integer min and max. */
static const int TILE_R = PXL_GPU_SCAN_BAND / 8; /* rows per warp */

/* rt: after ct (nb x W) in aux when the scan goes along y. */
static void rt_decl(Gen *g, const char *T) {
  OUT("  PXR_GLOBAL %s *rt = ct", T);
  if (g->D->scan & SCAN_Y) OUT(" + (ptrdiff_t)((H + %d) / %d) * W", PXL_GPU_SCAN_BAND - 1, PXL_GPU_SCAN_BAND);
  OUT(";\n  (void)rt;\n");
}

/* The tile's launch and its coordinates: lane, wp, the segment sg_ (not s_: the warp
 * scan's text uses that) and band b_, the lane's first column xs and the warp's first
 * row y0; rt after ct in aux. */
static void tile_open(Gen *g, const char *T, GpuLaunch *L) {
  int E = scan_elems(g->D);
  *L = (GpuLaunch){.grid = GPU_GRID_TILES, .bx = 32, .by = 8, .px = E, .py = TILE_R};
  OUT("  const int lane = PXG_TX, wp = PXG_TY, sg_ = PXG_BX, b_ = PXG_BY, ns_ = (W + %d) / %d;\n", 32 * E - 1, 32 * E);
  OUT("  const int xs = sg_ * %d + lane * %d, y0 = b_ * %d + wp * %d;\n", 32 * E, E, PXL_GPU_SCAN_BAND, TILE_R);
  rt_decl(g, T);
  OUT("  (void)ns_;\n");
}

/* v[r][k]: the mapped values of the lane's TILE_R x E pixels (the identity outside the
 * image): on a run inside the interior, the register path's vector loads and "pv" where
 * every image is read at (0, 0) only (scan_reg), else the interior function. */
static bool scan_reg(const Decl *D) { return reg_width(D) == scan_elems(D); }

static void tile_map(Gen *g, const char *A, const char *T) {
  int E = scan_elems(g->D);
  OUT("  %s v[%d][%d];\n  #pragma unroll\n  for (int r = 0; r < %d; r++) {\n    const int y = y0 + r;\n", T, TILE_R, E, TILE_R);
  OUT("    if (y < H && xs + %d <= W && xs >= ix0 && xs + %d <= ix1 && y >= iy0 && y < iy1", E, E);
  if (scan_reg(g->D)) {
    OUT(" && ");
    reg_aligned(g, E);
    OUT(") {\n");
    reg_loads(g, E, "      ");
    StrBuf ra = {0};
    reg_args(g, &ra);
    OUT("      #pragma unroll\n      for (int j_ = 0; j_ < %d; j_++) { %s t_[1]; %s_pv(%s%s, xs + j_, y, W, H, t_); v[r][j_] = t_[0]; }\n",
        E, T, g->pfx, A, ra.s ? ra.s : "");
    sb_free(&ra);
  } else {
    OUT(") {\n      #pragma unroll\n      for (int k = 0; k < %d; k++) { %s t_[1]; %s_pi(%s, xs + k, y, W, H, t_); v[r][k] = t_[0]; }\n",
        E, T, g->pfx, A);
  }
  OUT("    } else {\n      #pragma unroll\n      for (int k = 0; k < %d; k++) {\n        const int x = xs + k;\n", E);
  map_value(g, A, "v[r][k]", "        ");
  OUT("      }\n    }\n  }\n");
}

/* rs_ (every lane's, in lane `lane` of warp wp, row r) -> its combine over the warp's
 * lanes, in every lane (CUDA: shuffles) or in lane 0 (OpenCL: local memory sl_). */
static void warp_total(Gen *g, const char *T) {
  if (g->dialect == GPU_CUDA) {
    OUT("      for (int d_ = 16; d_ > 0; d_ >>= 1) {\n        const %s t_ = (%s)__shfl_xor_sync(0xffffffffu, ", T, T);
    shfl_arg(g, "rs_");
    OUT(", d_);\n        ");
    cg_combine(g, "rs_", "t_");
    OUT("\n      }\n");
  } else {
    OUT("      sl_[wp][r][lane] = rs_;\n      PXG_SYNC();\n");
    OUT("      if (lane == 0) for (int j = 1; j < 32; j++) ");
    cg_combine(g, "rs_", "sl_[wp][r][j]");
    OUT("\n");
  }
}

/* TOTALS: each tile's column totals into ct[b_] (along y) and each row's total over the
 * segment into rt (along x). */
static void scan_tile_totals(Gen *g, const char *A, const char *T, GpuLaunch *L) {
  const Decl *D = g->D;
  int E = scan_elems(D), CW = 32 * E;
  tile_open(g, T, L);
  if (D->scan & SCAN_Y) OUT("  PXG_SHARED %s cs_[8][%d];\n", T, CW);
  if ((D->scan & SCAN_X) && g->dialect != GPU_CUDA) OUT("  PXG_SHARED %s sl_[8][%d][32];\n", T, TILE_R);
  tile_map(g, A, T);
  if (D->scan & SCAN_X) {
    OUT("  #pragma unroll\n  for (int r = 0; r < %d; r++) {\n      %s rs_ = v[r][0];\n", TILE_R, T);
    OUT("      #pragma unroll\n      for (int k = 1; k < %d; k++) ", E);
    cg_combine(g, "rs_", "v[r][k]");
    OUT("\n");
    warp_total(g, T);
    OUT("      if (lane == 0 && y0 + r < H) rt[(ptrdiff_t)(y0 + r) * ns_ + sg_] = rs_;\n  }\n");
  }
  if (D->scan & SCAN_Y) {
    OUT("  #pragma unroll\n  for (int k = 0; k < %d; k++) {\n    %s c_ = v[0][k];\n", E, T);
    OUT("    #pragma unroll\n    for (int r = 1; r < %d; r++) ", TILE_R);
    cg_combine(g, "c_", "v[r][k]");
    OUT("\n    cs_[wp][lane * %d + k] = c_;\n  }\n  PXG_SYNC();\n", E);
    OUT("  for (int c = wp * 32 + lane; c < %d; c += 256) {\n    if (sg_ * %d + c >= W) break;\n    %s c_ = cs_[0][c];\n", CW,
        CW, T);
    OUT("    for (int w = 1; w < 8; w++) ");
    cg_combine(g, "c_", "cs_[w][c]");
    OUT("\n    ct[(ptrdiff_t)b_ * W + sg_ * %d + c] = c_;\n  }\n", CW);
  }
  OUT("}\n");
}

/* The exclusive combine ex_ of run_[0..t) and the total tot_ of run_[0..256) for the
 * block's 256 threads (run_[t] set by thread t): Hillis and Steele in local memory, the
 * same text in both dialects. */
static void block_scan(Gen *g, const char *T) {
  OUT("    for (int d_ = 1; d_ < 256; d_ <<= 1) {\n      const %s a_ = t >= d_ ? run_[t - d_] : id_;\n      PXG_SYNC();\n", T);
  OUT("      if (t >= d_) ");
  scan_comb(g, T, "run_[t]", "a_", "run_[t]");
  OUT("\n      PXG_SYNC();\n    }\n");
  OUT("    const %s ex_ = t ? run_[t - 1] : id_, tot_ = run_[255];\n    PXG_SYNC();\n", T);
}

/* RCARRY, a block of 256 threads per band (see above). Along y: ct's row in chunks of
 * 256 x 8 columns (each thread 8 consecutive ones, the threads' combines by block_scan).
 * Along x: rt's rows in chunks of 256 segments, a thread per segment loading the band's
 * rows (and along y combining them down the band), then a thread per row combining the
 * chunk's segments in local memory (rows padded against bank conflicts), from its carry. */
static void scan_rcarry(Gen *g, const char *T, GpuLaunch *L) {
  const Decl *D = g->D;
  int CW = 32 * scan_elems(D), B = PXL_GPU_SCAN_BAND;
  *L = (GpuLaunch){.grid = GPU_GRID_BANDS, .bx = 256, .by = 1, .px = 1, .py = B};
  OUT("  const int t = PXG_TX, b_ = PXG_BY, y0 = b_ * %d, nr_ = H - y0 < %d ? H - y0 : %d, ns_ = (W + %d) / %d;\n", B, B, B,
      CW - 1, CW);
  rt_decl(g, T);
  OUT("  PXG_SHARED %s run_[256];\n", T);
  if (D->scan & SCAN_Y) {
    OUT("  {\n    PXR_GLOBAL %s *p = ct + (ptrdiff_t)b_ * W;\n    %s carry_ = id_;\n", T, T);
    OUT("    for (int c0 = 0; c0 < W; c0 += 2048) {\n      %s v[8];\n", T);
    OUT("      #pragma unroll\n      for (int k = 0; k < 8; k++) v[k] = c0 + t * 8 + k < W ? p[c0 + t * 8 + k] : id_;\n");
    OUT("      #pragma unroll\n      for (int k = 1; k < 8; k++) ");
    scan_comb(g, T, "v[k]", "v[k - 1]", "v[k]");
    OUT("\n      run_[t] = v[7];\n      PXG_SYNC();\n");
    block_scan(g, T);
    OUT("      %s pre_ = carry_;\n      ", T);
    cg_combine(g, "pre_", "ex_");
    OUT("\n      ");
    cg_combine(g, "carry_", "tot_");
    OUT("\n      #pragma unroll\n      for (int k = 0; k < 8; k++)\n        if (c0 + t * 8 + k < W) ");
    scan_comb(g, T, "p[c0 + t * 8 + k]", "pre_", "v[k]");
    OUT("\n    }\n  }\n");
  }
  if (D->scan & SCAN_X) {
    OUT("  PXG_SHARED %s rs_[%d][257];\n  %s cr_ = id_; /* thread t < %d: row t's carry */\n", T, B, T, B);
    OUT("  for (int c0 = 0; c0 < ns_; c0 += 256) {\n    const int s = c0 + t;\n    %s v[%d];\n", T, B);
    OUT("    #pragma unroll\n    for (int r = 0; r < %d; r++) v[r] = s < ns_ && r < nr_ ? rt[(ptrdiff_t)(y0 + r) * ns_ + s] : id_;\n",
        B);
    if (D->scan & SCAN_Y) {
      OUT("    #pragma unroll\n    for (int r = 1; r < %d; r++) ", B);
      scan_comb(g, T, "v[r]", "v[r - 1]", "v[r]");
      OUT("\n");
    }
    OUT("    #pragma unroll\n    for (int r = 0; r < %d; r++) rs_[r][t] = v[r];\n    PXG_SYNC();\n", B);
    OUT("    if (t < %d) {\n      const int n_ = ns_ - c0 < 256 ? ns_ - c0 : 256;\n", B);
    OUT("      for (int j = 0; j < n_; j++) {\n        const %s a_ = rs_[t][j];\n        rs_[t][j] = cr_;\n        ", T);
    cg_combine(g, "cr_", "a_");
    OUT("\n      }\n    }\n    PXG_SYNC();\n");
    OUT("    if (s < ns_)\n      for (int r = 0; r < nr_; r++) rt[(ptrdiff_t)(y0 + r) * ns_ + s] = rs_[r][t];\n    PXG_SYNC();\n  }\n");
  }
  OUT("}\n");
}

/* TILES: the tile's values down the band (each warp's rows, then from the totals of the
 * warps above it), along the segment (each lane's elements, then the lanes before it,
 * then the row carry in rt: the band's part left of the segment), then with the row
 * above the band (ct: the rectangle above it); stored. */
static void scan_tiles(Gen *g, const char *A, const char *T, GpuLaunch *L) {
  const Decl *D = g->D;
  int E = scan_elems(D), CW = 32 * E;
  bool cuda = g->dialect == GPU_CUDA, ys = D->scan & SCAN_Y, xsn = D->scan & SCAN_X;
  tile_open(g, T, L);
  if (ys) OUT("  PXG_SHARED %s cs_[8][%d];\n", T, CW);
  if (xsn && !cuda) OUT("  PXG_SHARED %s sl_[8][%d][32];\n", T, TILE_R);
  tile_map(g, A, T);
  if (ys) {
    OUT("  #pragma unroll\n  for (int r = 1; r < %d; r++)\n    #pragma unroll\n    for (int k = 0; k < %d; k++) ", TILE_R, E);
    scan_comb(g, T, "v[r][k]", "v[r - 1][k]", "v[r][k]");
    OUT("\n  #pragma unroll\n  for (int k = 0; k < %d; k++) cs_[wp][lane * %d + k] = v[%d][k];\n  PXG_SYNC();\n", E, E,
        TILE_R - 1);
    OUT("  #pragma unroll\n  for (int k = 0; k < %d; k++) {\n    %s c_ = id_;\n", E, T);
    char cw[64];
    snprintf(cw, sizeof cw, "cs_[w][lane * %d + k]", E);
    OUT("    for (int w = 0; w < wp; w++) ");
    cg_combine(g, "c_", cw);
    OUT("\n    #pragma unroll\n    for (int r = 0; r < %d; r++) ", TILE_R);
    scan_comb(g, T, "v[r][k]", "c_", "v[r][k]");
    OUT("\n  }\n");
  }
  if (xsn) {
    if (!cuda) {
      OUT("  #pragma unroll\n  for (int r = 0; r < %d; r++) {\n    %s s_l = v[r][0];\n", TILE_R, T);
      OUT("    for (int k = 1; k < %d; k++) ", E);
      cg_combine(g, "s_l", "v[r][k]");
      OUT("\n    sl_[wp][r][lane] = s_l;\n  }\n  PXG_SYNC();\n");
    }
    OUT("  #pragma unroll\n  for (int r = 0; r < %d; r++) {\n", TILE_R);
    OUT("    #pragma unroll\n    for (int k = 1; k < %d; k++) ", E);
    scan_comb(g, T, "v[r][k]", "v[r][k - 1]", "v[r][k]");
    OUT("\n");
    if (cuda) {
      OUT("    %s s_ = v[r][%d];\n", T, E - 1);
      warp_scan_cuda(g, T, "    ");
      OUT("    (void)tot_;\n");
    } else {
      OUT("    %s ex_ = id_;\n    for (int j = 0; j < lane; j++) ", T);
      cg_combine(g, "ex_", "sl_[wp][r][j]");
      OUT("\n");
    }
    OUT("    %s pre_ = y0 + r < H ? rt[(ptrdiff_t)(y0 + r) * ns_ + sg_] : id_;\n    ", T);
    cg_combine(g, "pre_", "ex_");
    OUT("\n    #pragma unroll\n    for (int k = 0; k < %d; k++) ", E);
    scan_comb(g, T, "v[r][k]", "pre_", "v[r][k]");
    OUT("\n  }\n");
  }
  if (ys) { /* the row above the band: the whole rectangle above it */
    OUT("  #pragma unroll\n  for (int k = 0; k < %d; k++) {\n", E);
    OUT("    const %s a_ = xs + k < W ? ct[(ptrdiff_t)b_ * W + xs + k] : id_;\n", T);
    OUT("    #pragma unroll\n    for (int r = 0; r < %d; r++) ", TILE_R);
    scan_comb(g, T, "v[r][k]", "a_", "v[r][k]");
    OUT("\n  }\n");
  }
  scan_store(g, T, TILE_R, E, "  ");
  OUT("}\n");
}

/* The carries, in place in ct: band b's totals become the combine of bands 0..b-1 (in
 * order; band 0's the identity). Blocks of 32 columns x 8 groups of consecutive bands:
 * each group's total, then each group walks its bands from the combine of the groups
 * above it: two short walks instead of one over all the bands. */
static void scan_carries(Gen *g, const char *T, GpuLaunch *L) {
  *L = (GpuLaunch){.grid = GPU_GRID_COLUMNS, .bx = 32, .by = 8, .px = 1, .py = 1};
  OUT("  PXG_SHARED %s gs_[8][32];\n", T);
  OUT("  const int x = PXG_BX * 32 + PXG_TX, ty = PXG_TY, nb = (H + %d) / %d;\n", PXL_GPU_SCAN_BAND - 1,
      PXL_GPU_SCAN_BAND);
  OUT("  const int g0_ = (int)((int64_t)nb * ty / 8), g1_ = (int)((int64_t)nb * (ty + 1) / 8);\n");
  OUT("  PXR_GLOBAL %s *p = ct + x;\n  %s s_ = id_;\n", T, T);
  OUT("  for (int b = g0_; b < g1_ && x < W; b += 8) {\n    %s v[8];\n", T);
  OUT("    #pragma unroll\n    for (int k = 0; k < 8; k++)\n      if (b + k < g1_) v[k] = p[(ptrdiff_t)(b + k) * W];\n");
  OUT("    #pragma unroll\n    for (int k = 0; k < 8; k++)\n      if (b + k < g1_) ");
  cg_combine(g, "s_", "v[k]");
  OUT("\n  }\n  gs_[ty][PXG_TX] = s_;\n  PXG_SYNC();\n  if (x >= W) return;\n  %s c_ = id_;\n", T);
  OUT("  for (int j = 0; j < ty; j++) ");
  cg_combine(g, "c_", "gs_[j][PXG_TX]");
  OUT("\n  for (int b = g0_; b < g1_; b += 8) {\n    %s v[8];\n", T);
  OUT("    #pragma unroll\n    for (int k = 0; k < 8; k++)\n      if (b + k < g1_) v[k] = p[(ptrdiff_t)(b + k) * W];\n");
  OUT("    #pragma unroll\n    for (int k = 0; k < 8; k++)\n      if (b + k < g1_) {\n");
  OUT("        p[(ptrdiff_t)(b + k) * W] = c_;\n        ");
  cg_combine(g, "c_", "v[k]");
  OUT("\n      }\n  }\n}\n");
}

static const char *const scan_pass_names[] = {"row (sequential)", "column (sequential)", "row", "totals",
                                              "band carries", "column", "row carries", "tiles"};

int gen_gpu_limits(const Decl *D, GpuDialect dialect, Err *err) {
  if (D->nimages > PXL_GPU_MAX_IMAGES || D->nscalars > PXL_GPU_MAX_SCALARS)
    return err_set(err, PXL_EARG, "%s: the %s backend takes at most %d images and %d scalars", D->name,
                   dialect == GPU_OPENCL ? "OpenCL" : "CUDA", PXL_GPU_MAX_IMAGES, PXL_GPU_MAX_SCALARS);
  return PXL_OK;
}

int gen_gpu_scan(StrBuf *out, const Decl *D, const Border *borders, GpuDialect dialect, GpuScanPass pass,
                 GpuLaunch *launch, Err *err) {
  int rc = gen_gpu_limits(D, dialect, err);
  if (rc) return rc;
  if (!gen_gpu_scan_pass_exists(D, pass))
    return err_set(err, PXL_ERROR, "internal: the %s pass is for fused scans; %s is not", scan_pass_names[pass],
                   D->name);
  bool direct[PXL_GPU_MAX_IMAGES];
  Gen gen, *g = &gen;
  cg_init(g, out, D, borders, "sc", direct);
  g->dialect = dialect;
  const char *T = cg_ctype(D->type.s);
  OUT("/* generated by pxl %s: the %s pass of scan %s, %s; do not edit */\n", PXL_VERSION_STRING,
      scan_pass_names[pass], D->name, dialect == GPU_OPENCL ? "OpenCL C 1.2" : "CUDA");
  sb_append(out, pxl_prelude_text, strlen(pxl_prelude_text));
  header(g);
  bool fused = gen_gpu_scan_fused(D) && pass != GSP_CARRIES && pass != GSP_RCARRY;
  StrBuf args = {0};
  if (fused) {
    cg_functions(g);
    if ((pass == GSP_TOTALS || pass == GSP_TILES) && scan_reg(D)) cg_pixel_fn(g, V_REG | V_DIRECT_REL, "pv", false);
    cg_args_text(g, &args);
  }
  const char *A = args.s ? args.s : "";
  scan_open(g, T, 256, fused);
  switch (pass) {
  case GSP_ROWS_SEQ: scan_rows_seq(g, T, launch); break;
  case GSP_COLS_SEQ: scan_cols_seq(g, T, launch); break;
  case GSP_ROWS: scan_rows(g, T, launch); break;
  case GSP_TOTALS: scan_tile_totals(g, A, T, launch); break;
  case GSP_CARRIES: scan_carries(g, T, launch); break;
  case GSP_COLS: scan_band_cols(g, A, T, launch); break;
  case GSP_RCARRY: scan_rcarry(g, T, launch); break;
  case GSP_TILES: scan_tiles(g, A, T, launch); break;
  }
  sb_free(&args);
  if (out->oom) return err_set(err, PXL_ENOMEM, "out of memory generating the scan pass of %s", D->name);
  return PXL_OK;
}

/* The unit of gen_gpu_stage, or with chg >= 0 of gen_gpu_stage_test. */
static int stage_unit(StrBuf *out, const Decl *D, const Border *borders, GpuDialect dialect, const GpuTile *tile,
                      int chg, GpuLaunch *launch, Err *err) {
  if (D->nouts) /* exec.c runs its projections, D->outs */
    return err_set(err, PXL_ERROR, "internal: %s has %d outputs; generate its projections", D->name, D->nouts);
  if (D->global) /* exec.c runs its maps, D->gmap, then the operator library's pass */
    return err_set(err, PXL_ERROR, "internal: %s is a global operator; generate its maps", D->name);
  int rc = gen_gpu_limits(D, dialect, err);
  if (rc) return rc;
  bool direct[PXL_GPU_MAX_IMAGES];
  Gen gen, *g = &gen;
  cg_init(g, out, D, borders, "st", direct);
  g->dialect = dialect;
  g->chg_img = chg;
  /* CUDA only: PoCL 3.1's optimiser got otsu's level wrong (0 for 140) from a shared copy,
   * an f64 loop with min and max of its values after the barrier */
  g->shared_arrays = no_images(D) && dialect == GPU_CUDA;
  if (D->stage) g->virt = D->params[D->stage_param]->img_index;
  OUT("/* generated by pxl %s: one stage instance%s, %s; do not edit */\n", PXL_VERSION_STRING,
      chg >= 0 ? " reporting a change of its image" : "", dialect == GPU_OPENCL ? "OpenCL C 1.2" : "CUDA");
  sb_append(out, pxl_prelude_text, strlen(pxl_prelude_text));
  header(g);
  bool nonseq = D->kind == D_KERNEL && D->skel == SK_P2P_NONSEQ;
  if (nonseq) cg_use_tile_buffer(g);
  TilerWalk twk;
  bool twalk = tiler_walk_plan(D, tile, &twk);
  if (twalk) g->tb_img = 0, g->tb_t = false; /* the thread's window: kernel_tiler_walk */
  if (D->stage) stage_fns(g, borders); /* the producer's functions and <pfx>_vk, before D's */
  cg_functions(g);
  Axes axes;
  g->axes_regs = true;
  if (D->kind == D_KERNEL && !D->stage && chg < 0 && cg_axes_plan(g, &axes)) cg_pixel_fn(g, V_AXES, "pa", false);
  int VP = D->kind == D_HISTOGRAM && !cg_counts_only(g) ? 0 : reg_width(D);
  if (D->kind == D_HISTOGRAM && cg_counts_only(g)) g->bin_copies = hist_copies(D);
  if (VP) cg_pixel_fn(g, V_REG | V_DIRECT_REL, "pv", D->kind == D_HISTOGRAM);
  if (D->kind == D_HISTOGRAM && cg_counts_only(g)) {
    cg_pixel_fn(g, V_EDGE, "pe", true);
    cg_pixel_fn(g, V_DIRECT_REL, "pi", true);
  }
  g->bin_copies = 0;
  Stage st[PXL_GPU_MAX_IMAGES];
  int PX, PY;
  tile_shape(D, tile, &PX, &PY);
  Strip sp;
  Walk wk;
  EntryForm form = D->kind == D_KERNEL ? entry_form(g, tile, &wk, &sp) : ENTRY_REG; /* others: none of these */
  if (form == ENTRY_WALK && wk.pk) {
    gp_pixel_fn(g, walk_pk_variant(&wk), "pk");
  } else if (form == ENTRY_WALK) {
    if (wk.packed) cg_pixel_fn(g, V_SEP | V_ROWSUM, "pr", false);
    else if (use_sep(g)) cg_pixel_fn(g, V_SEP, "ph", false);
    else cg_pixel_fn(g, V_SMEM | V_WIN | V_DIRECT_REL, "pw", false);
  } else if (form == ENTRY_STRIPS) {
    cg_pixel_fn(g, V_SEP | V_ROWSUM, "pr", false);
  } else if ((form == ENTRY_TILES || form == ENTRY_TABLE) && plan_stage(g, 32 * PX, 8 * PY, st)) {
    /* (a CUDA table kernel calls none of these: emitted unused, as before) */
    if (slide_bands(g, st, 32 * PX, 8 * PY)) cg_pixel_fn(g, V_SEP | V_ROWSUM, "pr", false);
    else if (use_sep(g)) cg_pixel_fn(g, V_SEP, "ph", false);
    else if (tiles_pk(g, PX)) gp_pixel_fn(g, V_SMEM | V_DIRECT_REL, "pk");
    else cg_pixel_fn(g, V_SMEM | V_DIRECT_REL, "ps", false);
  }
  if (form == ENTRY_NONSEQ || form == ENTRY_TILER) {
    cg_pixel_fn(g, V_DIRECT_REL | V_DIRECT_AT, "pt", false);
    if (twalk) cg_pixel_fn(g, V_DIRECT_REL | V_DIRECT_AT | V_TILEBUF | V_WIN, "pw", false);
    else if (g->tb_img >= 0) cg_pixel_fn(g, V_DIRECT_REL | V_TILEBUF, "pb", false);
  }
  StrBuf args = {0};
  cg_args_text(g, &args);
  const char *A = args.s ? args.s : "";
  switch (D->kind) {
  case D_KERNEL: kernel_entry(g, A, tile, form, &wk, &sp, launch); break;
  case D_REDUCE: reduce_entries(g, A, VP, launch); break;
  case D_HISTOGRAM: histogram_entry(g, A, VP, launch); break;
  default: break;
  }
  sb_free(&args);
  if (out->oom) return err_set(err, PXL_ENOMEM, "out of memory generating CUDA for %s", D->name);
  return PXL_OK;
}

int gen_gpu_stage(StrBuf *out, const Decl *D, const Border *borders, GpuDialect dialect, const GpuTile *tile,
                  GpuLaunch *launch, Err *err) {
  return stage_unit(out, D, borders, dialect, tile, -1, launch, err);
}

/* What both loop forms below ask of a loop's body D and its carried image parameter:
 * a plain kernel (no scan, outputs or fused producer) within the GPU's limits, whose
 * integer result has the carried image's type. */
static bool carries(const Decl *D, int carried) {
  if (D->kind != D_KERNEL || D->scan || D->nouts || D->tile[0] || D->stage || D->nimages > PXL_GPU_MAX_IMAGES ||
      D->nscalars > PXL_GPU_MAX_SCALARS || carried < 0 || carried >= D->nimages)
    return false;
  const Param *cp = image_param(D, carried);
  return cp && type_eq(cp->type, D->type) && !scalar_is_float(D->type.s);
}

bool gen_gpu_test_ok(const Decl *D, const Border *borders, int carried) {
  if (!carries(D, carried) || cg_corner_tiles(D)) return false;
  const Access *ac = &D->access[carried];
  for (int i = 0; i < D->nimages; i++)
    if (borders[i].kind == B_NONE) return false; /* the output smaller than the image */
  /* the image is read relatively over a known window that holds (0, 0): every variant of
   * the pixel functions reads that pixel as the kernel's own reads do */
  return ac->read_rel && ac->window_known && !ac->gather && ac->x0 <= 0 && ac->x1 >= 0 && ac->y0 <= 0 && ac->y1 >= 0;
}

int gen_gpu_stage_test(StrBuf *out, const Decl *D, const Border *borders, GpuDialect dialect, const GpuTile *tile,
                       int carried, GpuLaunch *launch, Err *err) {
  if (dialect != GPU_CUDA || !gen_gpu_test_ok(D, borders, carried))
    return err_set(err, PXL_ERROR, "internal: %s cannot report a change of its image %d", D->name, carried);
  return stage_unit(out, D, borders, dialect, tile, carried, launch, err);
}

/* ---- iterated stencils: several steps of a loop in one launch ---- */

/* The output tiles tried, largest first, with the most steps per launch. */
static const int steps_shapes[][3] = {{8, 64, 64}, {8, 64, 32}, {8, 32, 32}, {4, 32, 32}, {2, 32, 32}};

/* Shared memory of plan p: the carried image's tile twice (this step's and the next),
 * each other image's once, over the carried tile widened by its window. */
static int steps_smem(const Decl *D, const GpuSteps *p, int *ew, int *eh) {
  const Access *ac = &D->access[p->carried];
  *ew = p->tx + p->k * (ac->x1 - ac->x0);
  *eh = p->ty + p->k * (ac->y1 - ac->y0);
  int bytes = 0;
  for (int i = 0; i < D->nimages; i++) {
    const Access *a = &D->access[i];
    int b = bytes_of(image_param(D, i)->type);
    if (i == p->carried) bytes += 2 * *ew * *eh * b;
    else if (a->read_rel) bytes += (*ew + a->x1 - a->x0) * (*eh + a->y1 - a->y0) * b;
  }
  return bytes;
}

/* ---- iterated stencils on words (steps_words) ----
 *
 * A u8 kernel whose one image is the carried one, read through a separable min, max or
 * sum window (Decl.sep, or Decl.sep_x with reads beside the window such as grow's
 * `c = e(0, 0)`) and computed on pairs of pixels (packed.h, V_SEP | V_ROWSUM): the
 * carried tile is SW_ROW bytes wide, a 4-byte word per lane of a warp, and a warp
 * computes a row of it at each step. A lane loads its word of each window row, takes
 * the column values of its even and odd bytes (two pairs), gets its neighbours' from
 * the lanes beside it (shuffles) and forms the row pass's pairs with byte permutes, as
 * the walking kernels do from registers (pack_half). The words at the tile's sides are
 * computed too, from what lies beside them: those pixels are outside the region a step
 * needs (it shrinks by the window each step), and no pixel that is inside reads them. */
#define SW_ROW 128 /* bytes of a row of the carried tile: 32 lanes of 4 bytes */
#define SW_K 8     /* steps per launch */
#define SW_TY 64   /* output rows per block */

static const Separable *sw_sep(const Decl *D) { return D->sep ? D->sep : D->sep_x; }
static int sw_variant(const Decl *D) { return V_SEP | V_ROWSUM | (D->sep ? 0 : V_XREADS); }

/* Whether D's steps run on words: u8 in and out, one image (the carried one), a
 * separable window holding (0, 0) within 4 pixels left, 3 right and 9 rows, the pixel
 * computed on pairs. */
static bool steps_words_ok(const Decl *D, const Border *borders, int carried) {
  const Separable *S = sw_sep(D);
  if (!S || D->nimages != 1 || carried != 0 || D->type.s != T_U8 || D->type.lanes != 1 || D->nouts) return false;
  const Param *p = image_param(D, 0);
  if (S->img != p || p->type.s != T_U8 || p->type.lanes != 1) return false;
  if (S->x0 < -4 || S->x0 > 0 || S->x1 < 0 || S->x1 > 3 || S->y0 > 0 || S->y1 < 0 || S->y1 - S->y0 > 8) return false;
  bool direct[PXL_GPU_MAX_IMAGES];
  StrBuf none = {0};
  Gen g;
  cg_init(&g, &none, D, borders, "it", direct);
  g.dialect = GPU_CUDA;
  bool ok = direct[0] && gp_packable(&g, sw_variant(D));
  sb_free(&none);
  return ok;
}

/* The pair (x + d, x + d + 2) of a lane's word at x from the words m = -1, 0, 1 of
 * values `e` (even bytes) and `o` (odd bytes), named <e|o> then m, c or p. */
static void sw_pair(Gen *g, const char *e, const char *o, int d) {
  static const char mname[] = {'m', 'c', 'p'};
  int m = floor_div(d, 4), j = d - 4 * m;
  char a = mname[m + 1], b = m + 2 < 3 ? mname[m + 2] : '?';
  switch (j) {
  case 0: OUT("%s%c", e, a); break;
  case 1: OUT("%s%c", o, a); break;
  case 2: OUT("PXG_FUNNEL16(%s%c, %s%c)", e, a, e, b); break;
  default: OUT("PXG_FUNNEL16(%s%c, %s%c)", o, a, o, b); break;
  }
}

/* The neighbours' words that the pairs d0..d1 need (sw_pair): nm / np, of the lanes left
 * and right, for the even (index 0) and odd (1) bytes. */
static void sw_needs(int d0, int d1, bool nm[2], bool np[2]) {
  for (int d = d0; d <= d1; d++) {
    int m = floor_div(d, 4), j = d - 4 * m;
    if (m < 0) nm[j & 1] = true;             /* word -1 */
    if (m > 0 || (m == 0 && j >= 2)) np[j & 1] = true; /* word 1: as m, or as m + 1 */
  }
}

/* Declares the neighbours' words of value v (v<e|o>c the lane's own) that sw_needs asked. */
static void sw_shuffles(Gen *g, const char *v, const bool nm[2], const bool np[2], const char *ind) {
  for (int k = 0; k < 2; k++) {
    char c = k ? 'o' : 'e';
    if (nm[k]) OUT("%sconst uint32_t %s%cm = __shfl_up_sync(0xffffffffu, %s%cc, 1);\n", ind, v, c, v, c);
    if (np[k]) OUT("%sconst uint32_t %s%cp = __shfl_down_sync(0xffffffffu, %s%cc, 1);\n", ind, v, c, v, c);
  }
}

/* Rows of the carried tile of K steps. */
static int sw_rows(const Separable *S, int k) { return SW_TY + k * (S->y1 - S->y0); }

/* The unit's entry (gen_gpu_steps with plan p->words). */
static void steps_words(Gen *g, const char *A, const GpuSteps *p, GpuLaunch *launch) {
  const Decl *D = g->D;
  const Separable *S = sw_sep(D);
  int K = p->k, TX = p->tx, EH = sw_rows(S, K), NR = S->y1 - S->y0 + 1, NWO = TX / 4;
  int LX = K * -S->x0, LY = K * -S->y0; /* the output tile's first pixel in the carried tile */
  bool clamp = g->borders[0].kind == B_CLAMP;
  *launch = (GpuLaunch){.grid = GPU_GRID_TILES, .bx = 8, .by = 32, .px = TX / 8, .py = SW_TY / 32};
  kernel_open(g, "uint8_t", 256);
  OUT("  const int t = PXG_TY * PXG_NTX + PXG_TX, lane = t & 31, wp = t >> 5, steps = (int)a.n;\n");
  OUT("  const int ox = PXG_BX * %d - %d, oy = PXG_BY * %d - %d;\n", TX, LX, SW_TY, LY);
  OUT("  PXG_SHARED PXG_ALIGN16 uint32_t sa_[%d], sb_[%d];\n", EH * 32, EH * 32);
  OUT("  PXR_LOCAL uint32_t *cur = sa_, *nxt = sb_;\n");
  OUT("  const bool edge = ox < 0 || oy < 0 || ox + %d > W || oy + %d > H;\n", SW_ROW, EH);
  OUT("  if (!edge && !((uintptr_t)i0 & 3u) && !(p0 & 3)) {\n");
  OUT("    for (int q = t; q < %d; q += 256) {\n", EH * 32);
  OUT("      const uint32_t v = *(const PXR_GLOBAL uint32_t *)(i0 + (ptrdiff_t)(oy + (q >> 5)) * p0 + ox + 4 * (q & 31));\n");
  OUT("      cur[q] = v;\n      nxt[q] = v;\n    }\n  } else {\n");
  OUT("    PXR_LOCAL uint8_t *ta_ = (PXR_LOCAL uint8_t *)cur, *tb_ = (PXR_LOCAL uint8_t *)nxt;\n");
  tile_read(g, 0, SW_ROW, EH, "ox", "oy", "ta_", "tb_", "    ");
  OUT("  }\n  PXG_SYNC();\n");
  OUT("  for (int s = %d - steps + 1; s <= %d; s++) {\n", K, K);
  OUT("    for (int ey = s * %d + wp; ey < %d - s * %d; ey += 8) {\n", -S->y0, EH, S->y1);
  /* the window's rows: words, their even and odd bytes */
  for (int r = 0; r < NR; r++) {
    OUT("      const uint32_t w%d_ = cur[(ey + %d) * 32 + lane];\n", r, S->y0 + r);
    OUT("      const uint32_t r%dec = w%d_ & 0x00ff00ffu, r%doc = PXG_ODD_BYTES(w%d_);\n", r, r, r, r);
  }
  /* per accumulator the column values, then the row pass for the pairs of x (a) and x + 1 (b) */
  for (int i = 0; i < S->nacc; i++) {
    const char *op = gp_op2(S->op[i]);
    for (int k = 0; k < 2; k++) {
      char c = k ? 'o' : 'e';
      OUT("      uint32_t c%d%cc = r0%cc;\n", i, c, c);
      for (int r = 1; r < NR; r++) OUT("      c%d%cc = %s(c%d%cc, r%d%cc);\n", i, c, op, i, c, r, c);
    }
    bool nm[2] = {false, false}, np[2] = {false, false};
    sw_needs(S->x0, S->x1 + 1, nm, np);
    char v[16], e[16], o[16];
    snprintf(v, sizeof v, "c%d", i);
    snprintf(e, sizeof e, "c%de", i);
    snprintf(o, sizeof o, "c%do", i);
    sw_shuffles(g, v, nm, np, "      ");
    for (int h = 0; h < 2; h++) { /* h 0: pixel x's pair, 1: x + 1's */
      OUT("      uint32_t %c%d = ", h ? 'b' : 'a', i);
      sw_pair(g, e, o, S->x0 + h);
      OUT(";\n");
      for (int d = S->x0 + h + 1; d <= S->x1 + h; d++) {
        OUT("      %c%d = %s(%c%d, ", h ? 'b' : 'a', i, op, h ? 'b' : 'a', i);
        sw_pair(g, e, o, d);
        OUT(");\n");
      }
    }
  }
  /* the reads beside the window: pairs of their rows as they are */
  for (int j = 0; j < S->nxr; j++) {
    int r = S->xr_dy[j] - S->y0;
    bool nm[2] = {false, false}, np[2] = {false, false};
    sw_needs(S->xr_dx[j], S->xr_dx[j] + 1, nm, np);
    char v[16], e[16], o[16];
    snprintf(v, sizeof v, "x%d", j);
    snprintf(e, sizeof e, "x%de", j);
    snprintf(o, sizeof o, "x%do", j);
    OUT("      const uint32_t x%dec = r%dec, x%doc = r%doc;\n", j, r, j, r);
    sw_shuffles(g, v, nm, np, "      ");
    for (int h = 0; h < 2; h++) {
      OUT("      const uint32_t q%c%d = ", h ? 'b' : 'a', j);
      sw_pair(g, e, o, S->xr_dx[j] + h);
      OUT(";\n");
    }
  }
  for (int h = 0; h < 2; h++) {
    OUT("      const uint32_t v%c_ = %s_pk(%s", h ? 'b' : 'a', g->pfx, A);
    for (int i = 0; i < S->nacc; i++) OUT(", %c%d", h ? 'b' : 'a', i);
    for (int j = 0; j < S->nxr; j++) OUT(", q%c%d", h ? 'b' : 'a', j);
    OUT(", ox + 4 * lane + %d, oy + ey);\n", h);
  }
  OUT("      uint32_t v_ = PXG_ZIP_BYTES(va_, vb_);\n");
  if (!clamp) { /* outside the image the constant stays, as loaded */
    OUT("      if (edge) {\n        const int x = ox + 4 * lane, y = oy + ey;\n        uint32_t m = 0u;\n");
    OUT("        for (int b = 0; b < 4; b++)\n");
    OUT("          if (x + b >= 0 && x + b < W && y >= 0 && y < H) m |= 0xffu << (8 * b);\n");
    OUT("        v_ = (v_ & m) | (nxt[ey * 32 + lane] & ~m);\n      }\n");
  }
  OUT("      nxt[ey * 32 + lane] = v_;\n    }\n    PXG_SYNC();\n");
  if (clamp) { /* outside the image: the pixel it repeats, as this step computed it */
    OUT("    if (edge) {\n      PXR_LOCAL uint8_t *nb = (PXR_LOCAL uint8_t *)nxt;\n");
    OUT("      for (int q = t; q < %d; q += 256) {\n", EH * SW_ROW);
    OUT("        const int x = ox + (q & %d), y = oy + q / %d;\n", SW_ROW - 1, SW_ROW);
    OUT("        if (x >= 0 && x < W && y >= 0 && y < H) continue;\n");
    OUT("        const int sx = x < 0 ? 0 : x >= W ? W - 1 : x, sy = y < 0 ? 0 : y >= H ? H - 1 : y;\n");
    OUT("        nb[q] = nb[(sy - oy) * %d + (sx - ox)];\n      }\n      PXG_SYNC();\n    }\n", SW_ROW);
  }
  OUT("    PXR_LOCAL uint32_t *sw = cur;\n    cur = nxt;\n    nxt = sw;\n  }\n");
  /* the output tile (the last step's), compared with the step before it (the test) */
  OUT("  const PXR_LOCAL uint8_t *cb = (const PXR_LOCAL uint8_t *)cur, *nb = (const PXR_LOCAL uint8_t *)nxt;\n");
  OUT("  const bool words = !((uintptr_t)o & 3u) && !(op & 3);\n  int changed = 0;\n");
  OUT("  for (int q = t; q < %d; q += 256) {\n", NWO * SW_TY);
  OUT("    const int r = q / %d, c = q - r * %d, x = PXG_BX * %d + 4 * c, y = PXG_BY * %d + r;\n", NWO, NWO, TX, SW_TY);
  OUT("    if (x >= W || y >= H) continue;\n    const int bi = (r + %d) * %d + %d + 4 * c;\n", LY, SW_ROW, LX);
  OUT("    if (words && x + 4 <= W) {\n");
  OUT("      const uint32_t v = *(const PXR_LOCAL uint32_t *)(cb + bi);\n");
  OUT("      if (v != *(const PXR_LOCAL uint32_t *)(nb + bi)) changed = 1;\n");
  OUT("      *(PXR_GLOBAL uint32_t *)(o + (ptrdiff_t)y * op + x) = v;\n    } else {\n");
  OUT("      for (int b = 0; b < 4 && x + b < W; b++) {\n");
  OUT("        if (cb[bi + b] != nb[bi + b]) changed = 1;\n        o[(ptrdiff_t)y * op + x + b] = cb[bi + b];\n");
  OUT("      }\n    }\n  }\n");
  OUT("  if (changed && a.res) *(PXR_GLOBAL volatile uint32_t *)a.res = 1u;\n}\n");
}

bool gen_gpu_steps_plan(const Decl *D, const Border *borders, int carried, GpuSteps *plan) {
  if (!carries(D, carried)) return false;
  if (borders[carried].kind != B_CLAMP && borders[carried].kind != B_CONSTANT) return false;
  if (steps_words_ok(D, borders, carried)) {
    const Separable *S = sw_sep(D);
    *plan = (GpuSteps){carried, SW_K, SW_ROW - SW_K * (S->x1 - S->x0), SW_TY, true};
    return true;
  }
  for (int i = 0; i < D->nimages; i++) {
    const Access *a = &D->access[i];
    if (a->read_abs || a->gather || (a->read_rel && !a->window_known) || borders[i].kind == B_NONE) return false;
    if (a->read_rel && !pow2(bytes_of(image_param(D, i)->type))) return false;
  }
  /* the tiles' extents (steps_smem, gen_gpu_steps) take the window around the pixel: a
   * window beside it (`in(0, 1)` alone) would need the tile shifted, not widened */
  const Access *ac = &D->access[carried];
  if (!ac->read_rel || ac->x0 > 0 || ac->x1 < 0 || ac->y0 > 0 || ac->y1 < 0) return false;
  for (size_t s = 0; s < sizeof steps_shapes / sizeof *steps_shapes; s++) {
    GpuSteps p = {carried, steps_shapes[s][0], steps_shapes[s][1], steps_shapes[s][2], false};
    int ew, eh;
    if (steps_smem(D, &p, &ew, &eh) <= STAGE_SMEM) {
      *plan = p;
      return true;
    }
  }
  return false;
}

/* The tile of image i: its first pixel (ox<i>, oy<i>) and its size, from the carried
 * tile's (ox, oy, EW x EH) widened by image i's window. */
static void steps_tile(Gen *g, int i, int carried, int ew, int eh, int *tw, int *th) {
  const Access *a = &g->D->access[i];
  if (i == carried) {
    *tw = ew, *th = eh;
    OUT("  const int ox%d = ox, oy%d = oy;\n", i, i);
  } else {
    *tw = ew + a->x1 - a->x0, *th = eh + a->y1 - a->y0;
    OUT("  const int ox%d = ox + %d, oy%d = oy + %d;\n", i, a->x0, i, a->y0);
  }
}

/* A loop of a pipeline whose body is kernel D with its image `carried` replaced by D's
 * result each iteration (loops.c), a.n steps (1..K) per launch, on a tile of TX x TY
 * output pixels per block of 32 x 8 threads: the tiles of the carried image (its window
 * times K around the output tile) and of the other images are loaded through the border
 * functions; step s computes the carried tile shrunk by s windows (the last step: the
 * output tile) into the other buffer. Pixels outside the image hold what the border
 * mode reads: the constant, loaded once; or for clamp the pixel it repeats, computed
 * again at each step (the same pixel function at the clamped position, whose window
 * lies in what the step before computed). With a.res set, a last step that changed an
 * output pixel writes 1 there (the until test; the host zeroed it). */
int gen_gpu_steps(StrBuf *out, const Decl *D, const Border *borders, GpuDialect dialect, const GpuSteps *p,
                  GpuLaunch *launch, Err *err) {
  if (dialect != GPU_CUDA) /* the test writes a.res, an address */
    return err_set(err, PXL_ERROR, "internal: steps of a loop are generated for CUDA only");
  bool direct[PXL_GPU_MAX_IMAGES];
  Gen gen, *g = &gen;
  cg_init(g, out, D, borders, "it", direct);
  g->dialect = dialect;
  OUT("/* generated by pxl %s: up to %d steps of a loop over %s, %s; do not edit */\n", PXL_VERSION_STRING, p->k,
      D->name, dialect == GPU_OPENCL ? "OpenCL C 1.2" : "CUDA");
  sb_append(out, pxl_prelude_text, strlen(pxl_prelude_text));
  header(g);
  cg_functions(g);
  StrBuf args = {0};
  cg_args_text(g, &args);
  const char *A = args.s ? args.s : "";
  if (p->words) {
    gp_pixel_fn(g, sw_variant(D), "pk");
    steps_words(g, A, p, launch);
    sb_free(&args);
    if (out->oom) return err_set(err, PXL_ENOMEM, "out of memory generating the steps of %s", D->name);
    return PXL_OK;
  }
  cg_pixel_fn(g, V_SMEM | V_DIRECT_REL, "ps", false);
  const Access *ac = &D->access[p->carried];
  int C = D->type.lanes, k = p->carried, ew, eh;
  steps_smem(D, p, &ew, &eh);
  const char *T = cg_ctype(D->type.s);
  bool clamp = borders[k].kind == B_CLAMP;
  *launch = (GpuLaunch){.grid = GPU_GRID_TILES, .bx = 32, .by = 8, .px = p->tx / 32, .py = p->ty / 8};
  kernel_open(g, T, 256);
  OUT("  const int t = PXG_TY * PXG_NTX + PXG_TX, steps = (int)a.n;\n");
  OUT("  const int ox = PXG_BX * %d - %d, oy = PXG_BY * %d - %d;\n", p->tx, -p->k * ac->x0, p->ty, -p->k * ac->y0);
  StrBuf sa = {0}; /* the tiles' arguments of "ps" */
  for (int i = 0; i < D->nimages; i++) {
    if (!direct[i]) continue;
    const char *IT = cg_ctype(image_param(D, i)->type.s);
    int lanes = image_param(D, i)->type.lanes, tw, th;
    steps_tile(g, i, k, ew, eh, &tw, &th);
    if (i == k) {
      OUT("  PXG_SHARED PXG_ALIGN16 %s ta_[%d], tb_[%d];\n", IT, tw * th * lanes, tw * th * lanes);
      sb_printf(&sa, ", cur, ox%d, oy%d, %d", i, i, tw * lanes);
    } else {
      OUT("  PXG_SHARED PXG_ALIGN16 %s t%d[%d];\n", IT, i, tw * th * lanes);
      sb_printf(&sa, ", t%d, ox%d, oy%d, %d", i, i, i, tw * lanes);
    }
    char x0[16], y0[16], dst[16];
    snprintf(x0, sizeof x0, "ox%d", i);
    snprintf(y0, sizeof y0, "oy%d", i);
    snprintf(dst, sizeof dst, "t%d", i);
    tile_read(g, i, tw, th, x0, y0, i == k ? "ta_" : dst, i == k ? "tb_" : NULL, "  ");
  }
  OUT("  PXR_LOCAL %s *cur = ta_, *nxt = tb_;\n  int changed = 0;\n  PXG_SYNC();\n", T);
  /* step s (the last K): the carried tile less s windows on each side */
  OUT("  for (int s = %d - steps + 1; s <= %d; s++) {\n", p->k, p->k);
  OUT("    const int ex0 = s * %d, ex1 = %d - s * %d, ey0 = s * %d, ey1 = %d - s * %d;\n", -ac->x0, ew, ac->x1, -ac->y0,
      eh, ac->y1);
  OUT("    for (int ey = ey0 + PXG_TY; ey < ey1; ey += 8)\n      for (int ex = ex0 + PXG_TX; ex < ex1; ex += 32) {\n");
  OUT("        const int x = ox + ex, y = oy + ey;\n");
  OUT("        const bool inside = x >= 0 && x < W && y >= 0 && y < H;\n");
  if (clamp) OUT("        const int sx = x < 0 ? 0 : x >= W ? W - 1 : x, sy = y < 0 ? 0 : y >= H ? H - 1 : y;\n");
  else OUT("        if (!inside) continue; /* the constant, loaded */\n        const int sx = x, sy = y;\n");
  OUT("        %s v[%d];\n        %s_ps(%s%s, sx, sy, W, H, v);\n", T, C, g->pfx, A, sa.s);
  OUT("        PXR_LOCAL %s *d = nxt + (ey * %d + ex) * %d;\n", T, ew, C);
  OUT("        for (int l = 0; l < %d; l++) {\n", C);
  OUT("          if (s == %d && inside && cur[(ey * %d + ex) * %d + l] != v[l]) changed = 1;\n", p->k, ew, C);
  OUT("          d[l] = v[l];\n        }\n      }\n");
  OUT("    PXG_SYNC();\n    PXR_LOCAL %s *sw = cur;\n    cur = nxt;\n    nxt = sw;\n  }\n", T);
  OUT("  if (changed && a.res) *(PXR_GLOBAL volatile uint32_t *)a.res = 1u;\n");
  OUT("  for (int ey = %d + PXG_TY; ey < %d; ey += 8)\n    for (int ex = %d + PXG_TX; ex < %d; ex += 32) {\n",
      -p->k * ac->y0, -p->k * ac->y0 + p->ty, -p->k * ac->x0, -p->k * ac->x0 + p->tx);
  OUT("      const int x = ox + ex, y = oy + ey;\n      if (x >= W || y >= H) continue;\n");
  OUT("      for (int l = 0; l < %d; l++) o[(ptrdiff_t)y * op + (ptrdiff_t)x * %d + l] = cur[(ey * %d + ex) * %d + l];\n",
      C, C, ew, C);
  OUT("    }\n}\n");
  sb_free(&sa);
  sb_free(&args);
  if (out->oom) return err_set(err, PXL_ENOMEM, "out of memory generating the steps of %s", D->name);
  return PXL_OK;
}
