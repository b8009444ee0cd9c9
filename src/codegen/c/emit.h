/*
 * emit.h - the C-family emitter (emit.c), shared by the C generator (gen_c.c) and the
 * GPU generator (codegen/gpu/gen_gpu.c).
 *
 * Expressions, statements, border read functions and pixel functions are the same text
 * in C and CUDA: the prelude (src/ir/prelude.h) maps PXR_FN, PXR_RESTRICT and PXR_BIN_*
 * to each dialect. Only the entry points - how pixels are assigned to threads - differ.
 */
#ifndef PXL_EMIT_H
#define PXL_EMIT_H

#include <stdbool.h>

#include "analysis/analysis.h"
#include "ir/ir.h"
#include "util/strbuf.h"

/* Pixel-function variants: reads through border functions (edge), direct relative reads
 * (interior), direct absolute reads, absolute reads from a tile buffer, the row pass of a
 * separable window, and on GPUs: relative reads at (0, 0) from registers r<k>[j_], and
 * relative reads from a tile of image k staged in shared memory (t<k>, whose element
 * (0, 0) is pixel (ox<k>, oy<k>), rows tp<k> elements apart) or, with V_WIN, held in a
 * thread's private array. */
enum { V_EDGE = 0, V_DIRECT_REL = 1, V_DIRECT_AT = 2, V_TILEBUF = 4, V_SEP = 8, V_REG = 16, V_SMEM = 32,
       V_ROWSUM = 64 /* with V_SEP: the window's values given as r<i> (sums the caller slides; GPU packed min/max) */,
       V_WIN = 128 /* with V_SMEM or V_TILEBUF: the window or footprint is a private array of widened pixels (a GPU thread's registers), not shared memory */,
       V_AXES = 256 /* column values, row values and separable reads as arguments (axes.c) */,
       V_WIDE = 512 /* with V_AXES, C: separable reads of 1- and 2-byte pixels as 4-byte loads */,
       V_LANES = 1024 /* C: PXL_CG_LANES neighbouring pixels per call, each varying local an array (cg_lanes_plan) */,
       V_XREADS = 2048 /* with V_SEP | V_ROWSUM, GPU packed: the window of Decl.sep_x, its reads beside the loop given as q<j> */ };

/* Pixels per call of the C backend's lanes variant ("pv"). */
#define PXL_CG_LANES 8

/* The marker before the generated statements of each .pxl line: a comment
 * "/" "* .pxl line N *" "/". */
#define PXL_LINE_MARK ".pxl line "

#define PXL_CG_MAX_HOIST 16
#define PXL_CG_TYPED_ARRAY 4096
/* Elements of an array parameter a GPU block copies into shared memory (Gen.shared_arrays):
 * 8 KiB of int64 */
#define PXL_CG_SHARED_ARRAY 1024
#define PXL_CG_ROW_ARRAY_BYTES 4096

/* The axis values of a C kernel (axes.c): declarations computed once per column (dim
 * AX_X, 1: a table ac<i> over the output's columns), once per row (AX_Y, 2) or once per
 * launch (0), and absolute reads whose column index depends on x alone and row index on
 * y alone: read i reads image k at column table aq<rq[i]> (the mapped index times the
 * channels) plus row offset ar<rr[i]> (the mapped row times the pitch). */
#define PXL_CG_MAX_AXES 48
typedef struct {
  const Node *decl[PXL_CG_MAX_AXES];
  int dim[PXL_CG_MAX_AXES];
  int ndecl;
  const Node *read[PXL_CG_MAX_AXES];
  int rq[PXL_CG_MAX_AXES], rr[PXL_CG_MAX_AXES];
  int nread;
  const Node *qx[PXL_CG_MAX_AXES], *ry[PXL_CG_MAX_AXES]; /* index expressions */
  int qimg[PXL_CG_MAX_AXES], rimg[PXL_CG_MAX_AXES];     /* of image */
  int nq, nr;
} Axes;

typedef struct {
  StrBuf *o;
  const Decl *D;
  const Border *borders;
  const char *pfx;   /* prefix of this instance's static functions */
  int variant;       /* V_* flags of the pixel function being emitted */
  bool *direct;      /* per image: relative reads may go direct in the interior */
  int tb_img;        /* image whose absolute reads come from a tile buffer (V_TILEBUF), or -1 */
  bool tb_t;         /* the buffer holds the footprint transposed: [ex][ey] */
  int depth;         /* indentation */
  bool counts32;     /* the pixel function being emitted counts into 32-bit bins */
  int bin_copies;    /* counts32: bin b of the caller's copy at bins[b * bin_copies] (0 or 1: one copy) */
  int dialect;       /* codegen/gpu: GpuDialect of the entry points */
  int line;          /* the .pxl line of the last line marker in this function, or 0 */
  bool in_func;      /* emitting a user function: return gives its value */
  /* Values a kernel computes from its scalar parameters alone (calls of user and math
   * functions on them): computed once per launch by the entry (cg_prologue) as u<k>
   * and passed to the pixel functions, which read u<k> in their place (cg_init). */
  const Node *hoist[PXL_CG_MAX_HOIST];
  int nhoist;
  bool no_hoist;     /* printing a hoisted expression itself */
  bool typed_arrays; /* C: array parameters of up to PXL_CG_TYPED_ARRAY elements are copied
                      * by the entry into arrays of their element type (cg_prologue) */
  bool shared_arrays; /* GPU: array parameters of up to PXL_CG_SHARED_ARRAY elements are copied
                       * by each block into shared memory in their element type (cg_prologue) */
  bool narrow_accs;  /* C: a separable sum marked narrow (Separable.narrow) is declared uint16_t */
  bool row_arrays;   /* cg_args_text passes those arrays' row copies s<k>_r (cg_row_arrays) */
  bool no_read0;     /* cg_read_fns leaves out image 0's (gen_c.c: a tabulated kernel reads it directly) */
  int chg_img;       /* an image whose pixel at (x, y) each kernel return compares with the value
                      * returned, setting *chg_ where they differ (a parameter of the pixel
                      * functions after the scalars), or -1 (codegen/gpu: a loop's until test
                      * computed by the loop's kernel, gen_gpu_stage_test) */
  bool signed_ops;   /* C: integer + - * marked NF_NO_WRAP written as C's signed operators
                      * (affine address arithmetic then vectorises); GPUs keep the wrapping
                      * forms: NVRTC made pyr_down 12-24% slower at 8192^2 on an H200 with
                      * the signed ones (40 registers for 32) */
  int virt;          /* a rule C kernel's tile image (Decl.stage), or -1: its reads outside a
                      * staged tile call <pfx>_vk, which computes the producer there (the
                      * GPU generator defines it); it has no read function */
  const Axes *axes;  /* the kernel's axis values (cg_axes_plan), or NULL */
  bool plain_ptrs;   /* C: the pixel function's pointer parameters without restrict (the
                      * axes' row functions hold them restrict: gcc then vectorises the
                      * row's gathers, which it does not through an inlined function's
                      * own restrict parameters) */
  bool *varying;     /* C, V_LANES (cg_lanes_plan): per Var slot, whether the local's value
                      * depends on x (an array of PXL_CG_LANES in "pv"), else NULL */
  bool in_lane;      /* emitting inside a loop over the lanes ln_: x is x + ln_, a varying
                      * local v<k>[ln_] */
  bool axes_regs;    /* GPU: a thread's column values and column indices are scalars ac<i>,
                      * aq<q> (it owns one column), not tables indexed by x */
} Gen;

/* C: whether kernel D can run PXL_CG_LANES neighbouring pixels per call ("pv"): one
 * scalar output, scalar images read only by absolute reads, scalar locals, every branch
 * and loop condition independent of x, one return at the end of a value that depends on
 * x, and a loop in the body (a body without one the C compiler vectorises across the row
 * by itself). Fills
 * g->varying (free it with cg_lanes_free). */
bool cg_lanes_plan(Gen *g);
void cg_lanes_free(Gen *g);
/* Prepares g for instance (D, borders); direct must hold D->nimages flags. */
void cg_init(Gen *g, StrBuf *out, const Decl *D, const Border *borders, const char *pfx, bool *direct);
/* Read functions, the combine of a reduction, and the "pe" / "pi" pixel functions. */
void cg_functions(Gen *g);
/* The tables <pfx>_t<id> and user functions <pfx>_f<index> that D uses, callees first. */
void cg_user_defs(Gen *g);
/* The prelude's function mapping a coordinate outside 0..n-1 into it under border mode b
 * (clamp, mirror, mirror101, wrap; clamp's for the others). */
const char *cg_border_index_fn(BorderKind b);
/* One border read function <pfx>_rd<k> per image parameter. */
void cg_read_fns(Gen *g);
/* A reduction's user-defined combine <pfx>_comb (nothing for the built-in ones). */
void cg_combine_fn(Gen *g);
/* A reduction's mapped-value function <pfx>_<name>, or with `inner` <pfx>_<name>r: the
 * value before its final widening conversion, for row-wise accumulation. */
void cg_reduce_fn(Gen *g, int variant, bool inner, const char *name);
/* One more pixel function (kernels, histograms) or mapped-value function (reductions) of
 * the given variant, named <pfx>_<name> (histograms with counts32: counting into 32-bit
 * bins, named <pfx>_<name>c). */
void cg_pixel_fn(Gen *g, int variant, const char *name, bool counts32);
/* True for a histogram whose bin() calls have no weights (it only counts). */
bool cg_counts_only(const Gen *g);
/* A tiler's check of a block of repetitions [tx, xe) x [ty, ye): declares `int fast`,
 * true where every read of every repetition of the block is inside its image (affine
 * reads, checked at the block's corners; a data-dependent read makes it false), so that
 * the block calls "pt", which reads directly, and otherwise "pe". */
void cg_tiler_fast(Gen *g, const char *ind);
/* Whether a tiler's reads can be direct at all (none data-dependent). */
bool cg_tiler_direct(const Decl *D);
/* The image a non-sequential P2P kernel can stage through a tile buffer (one image read
 * by affine absolute reads only), or -1; sets g->tb_img and g->tb_t. */
int cg_use_tile_buffer(Gen *g);
/* Whether kernel D runs in tiles that check their absolute reads at the corners (a
 * non-sequential P2P kernel or an affine window): the CPU's and GPUs' tiled entries. */
bool cg_corner_tiles(const Decl *D);
/* Affine index (c + cx*X + cy*Y + cw*w + ch*h) of image k as C text, c the constant
 * part's lower end c0 or (hi) its upper end c1. */
void cg_affine(Gen *g, const Affine *f, const char *X, const char *Y, int k, bool hi);
/* `ind` fast = fast && ...; for each corner (tx or xe - 1, ty or ye - 1) of the tile and
 * both ends of the constant parts: every image's absolute reads inside it, so that every
 * read of the tile is (an affine map takes its extremes at the corners). */
void cg_corner_checks(Gen *g, const char *ind);
/* Unpacks in[] / sc[] (and out, when has_out) and computes the region and interior
 * bounds rx0 rx1 ry0 ry1 ix0 ix1 iy0 iy1 (uses `nthreads`). */
void cg_prologue(Gen *g, bool has_out);
/* The pixel functions' argument list as text. */
void cg_args_text(Gen *g, StrBuf *buf);
/* The pixel functions' parameter list (images then scalars, as declarations) as text. */
void cg_params_text(Gen *g, StrBuf *buf);
/* C: declares, at the start of a loop body, copies s<k>_r of the typed array parameters
 * (up to PXL_CG_ROW_ARRAY_BYTES in all; returns false, declaring nothing, beyond that or
 * when there are none). A local array the row loop reads through tells the C compiler
 * that the stores to the output do not change it: the loop can then be vectorised (with
 * gathers), which it cannot be while the table is reached through a pointer. */
bool cg_row_arrays(Gen *g, const char *indent);
/* The declaration of scalar parameter p in a parameter list: "T sK", or for an array
 * parameter the pointer to its pxlc_scalar elements. */
void cg_scalar_param(Gen *g, const Param *p);
/* `acc = acc OP v;` of a reduction; the better-than test of argmin/argmax; its identity. */
void cg_combine(Gen *g, const char *acc, const char *v);
void cg_better(Gen *g, const char *v, const char *acc);
/* Folds value v of pixel (x, y) into acc (argmin/argmax: and ax, ay), no newline. */
void cg_fold_pixel(Gen *g, const char *v);
void cg_identity(Gen *g);
/* Expression n (lane `lane` of a vector) in the current variant. */
void cg_expr(Gen *g, const Node *n, int lane);
/* The C type of a scalar type. */
const char *cg_ctype(Scalar s);
/* The C type of an element of a GPU thread's window of pixels of type s (V_WIN). */
const char *cg_window_ctype(Scalar s);
/* Whether the column sums of S can slide down a row: every accumulator an integer sum
 * (wrap-around arithmetic, so adding the new row and taking away the old one gives the
 * bits of the full sum) over a window tall enough for it to pay. The CPU and GPU
 * generators both slide under this condition. */
bool cg_sliding_columns(const Separable *S);
/* Whether the row pass of S can slide along the row: every accumulator an integer sum in
 * a 32- or 64-bit type (wrap-around), over a window wide enough for it to pay. */
bool cg_sliding_rows(const Separable *S);
/* The unsigned C type of the same width as integer type s (32 bits for narrower ones):
 * where sliding sums wrap. */
const char *cg_unsigned_ctype(Scalar s);
/* The constant of B_CONSTANT image k in its pixel type, as C text. */
void cg_border_value(Gen *g, int k);

/* axes.c. Plans the axis values of kernel g->D into A and points g->axes at it; false
 * (g->axes NULL) for kernels with none worth tables (no column value, no separable read)
 * and for every kernel but a plain gather. */
bool cg_axes_plan(Gen *g, Axes *A);
/* The V_AXES pixel function's extra parameters, their (void) casts, and the call's
 * arguments (appended to buf; the column values' and indices' names end in sfx). */
void cg_axes_params(Gen *g);
void cg_axes_voids(Gen *g);
void cg_axes_args(Gen *g, StrBuf *buf, const char *sfx);
/* In a V_AXES pixel function: statement s if it is a planned declaration (a column value
 * read from its table; row and uniform values are arguments); read n at lane `lane` if
 * it is a separable one. False: not planned, emit as usual. */
bool cg_axes_decl(Gen *g, const Node *s);
bool cg_axes_read(Gen *g, const Node *n, int lane);
/* C: whether some separable read can load 4 bytes for a 1- or 2-byte pixel (V_WIDE); the
 * unit's helpers for it (<pfx>_ld4, <pfx>_WIDE); the row's test that its wide loads stay
 * inside every image (`ind`int wide_ = ...;). */
bool cg_axes_wide(const Gen *g);
void cg_axes_wide_helpers(Gen *g);
void cg_axes_wide_test(Gen *g, const char *ind);
/* The entry's part: the uniform values, the column tables and `axes_` (they were
 * allocated and the region is the whole output); each row's values and row offsets
 * (at indentation ind); freeing the tables. */
void cg_axes_tables(Gen *g);
void cg_axes_row(Gen *g, const char *ind);
/* GPU (axes_regs): the uniform values, then the column values and mapped column indices
 * of the thread's PX columns xs + c, as scalars ac<i>_<c>, aq<q>_<c>. */
void cg_axes_columns(Gen *g, const char *ind, int PX);
void cg_axes_free(Gen *g);

/* The parameter of image number k of D. */
const Param *cg_image_param(const Decl *D, int k);

#endif
