/*
 * gen_c.c - C code generator of the CPU backend (see gen_c.h).
 *
 * Each stage instance becomes:
 *   - one read function per image parameter with its border mode baked in (edge path);
 *   - pixel functions, one per variant: "pe" reads every pixel through the border
 *     functions, "pi" reads bounded relative windows directly (the interior, branch-free,
 *     vectorisable), "pt" also reads affine absolute reads directly (tiles of transposes,
 *     flips and affine windows such as pyr_down's whose corners' reads are inside);
 *   - the entry point: OpenMP over rows; per row only the edge strips call "pe".
 * The read and pixel functions come from the C-family emitter (emit.c), shared with the
 * GPU generator; this file writes the CPU entry points and, for `pxl compile`, the whole
 * program with its header.
 */
#include "codegen/c/gen_c.h"

#include <stdio.h>
#include <string.h>

#include "analysis/cost.h"
#include "codegen/c/emit.h"
#include "pxl/pxl.h"

#define OUT(...) sb_printf(g->o, __VA_ARGS__)

/* The CPU's names of the pixel-function variants. */
static const char *variant_name(int v) {
  return v == V_AXES ? "pa" : v == (V_AXES | V_WIDE) ? "pw" : v == V_EDGE ? "pe" : v == V_DIRECT_REL ? "pi" : (v & V_LANES) ? "pv" : (v & V_TILEBUF) ? "pb" : (v & V_ROWSUM) ? "pr"
         : (v & V_SEP) ? "ph" : "pt";
}

static void pixel_fn(Gen *g, int variant, bool counts32) { cg_pixel_fn(g, variant, variant_name(variant), counts32); }


/* Emits "for x in [a, b) CALL(variant)" where CALL is `call_fmt` with %s = function. */
static void xloop(Gen *g, const char *from, const char *to, int variant, const char *tail) {
  OUT("      for (int x = %s; x < %s; x++) ", from, to);
  sb_printf(g->o, tail, g->pfx, variant_name(variant));
  OUT("\n");
}

static const char *A_text(const StrBuf *b) { return b->s ? b->s : ""; }

/* The input row of output row y in a separable window's passes: y, or a tiler's origin
 * of row y of repetitions (OY + PY * y, C expression text). */
static const char *sep_row(const Decl *D, char *buf, size_t n) {
  if (!D->tile[0]) return "y";
  snprintf(buf, n, "(%d + %d * y)", D->origin[1], D->paving[1]);
  return buf;
}

/* One read of the column pass: image k at (xs, yb + dy), direct or through its border
 * function, converted to CT. */
static void column_read(Gen *g, bool direct, int k, const char *CT, int dy) {
  char b[64];
  const char *yb = sep_row(g->D, b, sizeof b);
  if (direct) OUT("(%s)i%d[(ptrdiff_t)(%s + %d) * p%d + xs]", CT, k, yb, dy, k);
  else OUT("(%s)%s_rd%d(i%d, p%d, w%d, h%d, xs, %s + %d, 0)", CT, g->pfx, k, k, k, k, k, yb, dy);
}

/* Column value of accumulator i at column xs (C expression text in `xs`), direct or
 * through the border function. */
static void column(Gen *g, int i, bool direct) {
  const Separable *S = g->D->sep;
  int k = S->img->img_index;
  const char *CT = cg_ctype(S->col[i].s);
  if (S->wy[i]) { /* weighted: sum of wy * pixel, wrapping in the column's (integer) type */
    const char *UT = cg_unsigned_ctype(S->col[i].s);
    OUT("          %s v = 0;\n", CT);
    for (int dy = S->y0; dy <= S->y1; dy++) {
      if (!S->wy[i][dy - S->y0]) continue;
      OUT("          v = (%s)((%s)v + (%s)%lld * (%s)", CT, UT, UT, (long long)S->wy[i][dy - S->y0], UT);
      column_read(g, direct, k, CT, dy);
      OUT(");\n");
    }
    OUT("          c%d[j] = v;\n", i);
    return;
  }
  OUT("          %s v = ", CT);
  column_read(g, direct, k, CT, S->y0);
  OUT(";\n");
  for (int dy = S->y0 + 1; dy <= S->y1; dy++) {
    OUT("          v = ");
    Scalar cs = S->col[i].s;
    if (S->op[i] >= 0) OUT("pxr_%s_%s(v, ", S->op[i] == BI_MIN ? "min" : "max", scalar_name(cs));
    else if (cs == T_I32 || cs == T_I64) OUT("pxr_add_%s(v, ", scalar_name(cs));
    else OUT("(%s)(v + ", CT);
    column_read(g, direct, k, CT, dy);
    OUT(");\n");
  }
  OUT("          c%d[j] = v;\n", i);
}

/* Whether every accumulator of S is a weighted sum: the row pass is then the row weights
 * times the column sums, given to the pixel function "pr" as the window's sums. */
static bool weighted_rows(const Separable *S) {
  for (int i = 0; i < S->nacc; i++)
    if (!S->wy[i]) return false;
  return S->nacc > 0;
}

/* Whether the row pass of S takes each window's sums as differences of the row's prefix
 * sums: sliding rows of 32-bit sums (wrap-around, so P[b] - P[a] has the window's bits). */
static bool prefix_rows(const Separable *S) {
  if (!cg_sliding_rows(S)) return false;
  for (int i = 0; i < S->nacc; i++)
    if (scalar_size(S->acc[i]->type.s) != 4 || scalar_size(S->col[i].s) > 4) return false;
  return true;
}

/* A separable window: per row, a column pass into per-thread buffers, then the row pass
 * (pixel function "ph") over the column values. When the column values are integer sums
 * and a thread goes on to the next row with the whole window inside the image, the column
 * pass slides: each column value gains the row entering the window and loses the one
 * leaving it (2 reads instead of the window's height). */
static void separable_loop(Gen *g, const char *A, int C, const char *OT) {
  const Decl *D = g->D;
  const Separable *S = D->sep;
  int k = S->img->img_index;
  /* a tiler of 1 x 1 tiles (weighted sums only: analysis): output x reads the column
   * values from PX * x on, row y the input rows from OY + PY * y */
  int PX = D->tile[0] ? D->paving[0] : 1, OX = D->tile[0] ? D->origin[0] : 0;
  char yb_buf[64];
  const char *yb = sep_row(D, yb_buf, sizeof yb_buf);
  OUT("  const int chunk_ = W >= 65536 ? 1 : 65536 / W;\n  (void)chunk_;\n");
  OUT("  #pragma omp parallel num_threads(nt_) if ((int64_t)W * H > 16384)\n  {\n");
  OUT("    const int cn = rx1 > rx0 ? %d * (rx1 - rx0 - 1) + %d : 0;\n", PX, S->x1 - S->x0 + 1);
  for (int i = 0; i < S->nacc; i++)
    OUT("    %s *c%d = (%s *)malloc(sizeof(%s) * (size_t)(cn > 0 ? cn : 1));\n", cg_ctype(S->col[i].s), i,
        cg_ctype(S->col[i].s), cg_ctype(S->col[i].s));
  bool prefix = prefix_rows(S);
  for (int i = 0; prefix && i < S->nacc; i++)
    OUT("    uint32_t *q%d = (uint32_t *)malloc(sizeof(uint32_t) * (size_t)(cn > 0 ? cn + 1 : 1));\n", i);
  OUT("    int okbuf = 1");
  for (int i = 0; i < S->nacc; i++) OUT(" && c%d", i);
  for (int i = 0; prefix && i < S->nacc; i++) OUT(" && q%d", i);
  OUT(";\n");
  bool slide = cg_sliding_columns(S) && !D->tile[0];
  if (slide) OUT("    int prev_y = -2; /* the last row whose column values are in c<i>, with its window inside */\n");
  OUT("    #pragma omp for schedule(dynamic, chunk_)\n");
  OUT("    for (int y = 0; y < H; y++) {\n");
  OUT("      %s *orow = o + (ptrdiff_t)y * op;\n", OT);
  OUT("      if (y < ry0 || y >= ry1) { for (ptrdiff_t i = 0; i < (ptrdiff_t)W * %d; i++) orow[i] = 0; continue; }\n", C);
  OUT("      for (ptrdiff_t i = 0; i < (ptrdiff_t)rx0 * %d; i++) orow[i] = 0;\n", C);
  OUT("      for (ptrdiff_t i = (ptrdiff_t)rx1 * %d; i < (ptrdiff_t)W * %d; i++) orow[i] = 0;\n", C, C);
  OUT("      if (!okbuf) {\n");
  OUT("        for (int x = rx0; x < rx1; x++) %s_pe(%s, x, y, W, H, orow + (ptrdiff_t)x * %d);\n", g->pfx, A, C);
  OUT("        continue;\n      }\n");
  OUT("      const int xa = %d + %d * rx0 + %d;\n", OX, PX, S->x0);
  OUT("      int jd0 = 0, jd1 = 0;\n");
  OUT("      if (%s + %d >= 0 && %s + %d < h%d) {\n", yb, S->y0, yb, S->y1, k);
  OUT("        jd0 = -xa < 0 ? 0 : -xa > cn ? cn : -xa;\n");
  OUT("        jd1 = w%d - xa < jd0 ? jd0 : w%d - xa > cn ? cn : w%d - xa;\n      }\n", k, k, k);
  const char *ranges[3][3] = {{"0", "jd0", "e"}, {"jd0", "jd1", "d"}, {"jd1", "cn", "e"}};
  if (slide) {
    OUT("      const int inside = y + %d >= 0 && y + %d < h%d;\n", S->y0, S->y1, k);
    OUT("      if (inside && prev_y == y - 1) {\n");
    for (int r = 0; r < 3; r++) {
      OUT("        for (int j = %s; j < %s; j++) {\n          const int xs = xa + j;\n", ranges[r][0], ranges[r][1]);
      for (int i = 0; i < S->nacc; i++) {
        const char *CT = cg_ctype(S->col[i].s), *UT = cg_unsigned_ctype(S->col[i].s);
        OUT("          c%d[j] = (%s)((%s)c%d[j] + (%s)", i, CT, UT, i, UT);
        column_read(g, ranges[r][2][0] == 'd', k, CT, S->y1);
        OUT(" - (%s)", UT);
        column_read(g, ranges[r][2][0] == 'd', k, CT, S->y0 - 1);
        OUT(");\n");
      }
      OUT("        }\n");
    }
    OUT("        prev_y = y;\n      } else {\n");
    OUT("      prev_y = inside ? y : -2;\n");
  }
  for (int r = 0; r < 3; r++) {
    OUT("      for (int j = %s; j < %s; j++) {\n        const int xs = xa + j;\n", ranges[r][0], ranges[r][1]);
    for (int i = 0; i < S->nacc; i++) {
      OUT("        {\n");
      column(g, i, ranges[r][2][0] == 'd');
      OUT("        }\n");
    }
    OUT("      }\n");
  }
  if (slide) OUT("      }\n");
  if (prefix) { /* the row's prefix sums of the column sums, then each window's sum as a
                 * difference of two: no chain from pixel to pixel, so the loop vectorises */
    int span = S->x1 - S->x0;
    OUT("      {\n");
    for (int i = 0; i < S->nacc; i++) {
      OUT("        q%d[0] = 0;\n        for (int j = 0; j < cn; j++) q%d[j + 1] = (uint32_t)c%d[j];\n", i, i, i);
      OUT("        pxr_scan_add_u32(q%d + 1, 0, cn);\n", i);
    }
    OUT("        for (int x = rx0; x < rx1; x++) {\n");
    for (int i = 0; i < S->nacc; i++)
      OUT("          const %s r%d = (%s)(q%d[x - rx0 + %d] - q%d[x - rx0]);\n", cg_ctype(S->acc[i]->type.s), i,
          cg_ctype(S->acc[i]->type.s), i, span + 1, i);
    OUT("          %s_pr(%s", g->pfx, A);
    for (int i = 0; i < S->nacc; i++) OUT(", r%d", i);
    OUT(", x, y, W, H, orow + (ptrdiff_t)x * %d);\n        }\n      }\n", C);
  } else if (cg_sliding_rows(S)) { /* the sums of the window's columns slide along the row too */
    int span = S->x1 - S->x0;
    OUT("      {\n");
    for (int i = 0; i < S->nacc; i++) {
      Scalar as = S->acc[i]->type.s;
      OUT("        %s r%d = 0;\n", cg_ctype(as), i);
      OUT("        for (int j = 0; j < %d && j < cn; j++) r%d = (%s)((%s)r%d + (%s)c%d[j]);\n", span, i, cg_ctype(as),
          cg_unsigned_ctype(as), i, cg_unsigned_ctype(as), i);
    }
    OUT("        for (int x = rx0; x < rx1; x++) {\n");
    for (int i = 0; i < S->nacc; i++) {
      const char *AT = cg_ctype(S->acc[i]->type.s), *UT = cg_unsigned_ctype(S->acc[i]->type.s);
      OUT("          r%d = (%s)((%s)r%d + (%s)c%d[x - rx0 + %d]);\n", i, AT, UT, i, UT, i, span);
    }
    OUT("          %s_pr(%s", g->pfx, A);
    for (int i = 0; i < S->nacc; i++) OUT(", r%d", i);
    OUT(", x, y, W, H, orow + (ptrdiff_t)x * %d);\n", C);
    for (int i = 0; i < S->nacc; i++) {
      const char *AT = cg_ctype(S->acc[i]->type.s), *UT = cg_unsigned_ctype(S->acc[i]->type.s);
      OUT("          r%d = (%s)((%s)r%d - (%s)c%d[x - rx0]);\n", i, AT, UT, i, UT, i);
    }
    OUT("        }\n      }\n");
  } else if (weighted_rows(S)) { /* each sum: its row weights times the column sums, unrolled */
    OUT("      for (int x = rx0; x < rx1; x++) {\n");
    for (int i = 0; i < S->nacc; i++) {
      const char *AT = cg_ctype(S->acc[i]->type.s), *UT = cg_unsigned_ctype(S->acc[i]->type.s);
      OUT("        const %s r%d = (%s)(0", AT, i, AT);
      for (int k = 0; k <= S->x1 - S->x0; k++) {
        int64_t w = S->wx[i] ? S->wx[i][k] : 1;
        if (w) OUT(" + (%s)%lld * (%s)c%d[%d * (x - rx0) + %d]", UT, (long long)w, UT, i, PX, k);
      }
      OUT(");\n");
    }
    OUT("        %s_pr(%s", g->pfx, A);
    for (int i = 0; i < S->nacc; i++) OUT(", r%d", i);
    OUT(", x, y, W, H, orow + (ptrdiff_t)x * %d);\n      }\n", C);
  } else {
    OUT("      for (int x = rx0; x < rx1; x++) %s_ph(%s", g->pfx, A);
    for (int i = 0; i < S->nacc; i++) OUT(", c%d", i);
    OUT(", xa, x, y, W, H, orow + (ptrdiff_t)x * %d);\n", C);
  }
  OUT("    }\n");
  for (int i = 0; i < S->nacc; i++) OUT("    free(c%d);\n", i);
  for (int i = 0; prefix && i < S->nacc; i++) OUT("    free(q%d);\n", i);
  OUT("  }\n}\n");
}

/* Whether scan D sums 32-bit integers (wrap-around: pxr_scan_add_u32 has the same bits). */
static bool add32_scan(const Decl *D) {
  return D->redop == R_SUM && (D->type.s == T_I32 || D->type.s == T_U32) && D->type.lanes == 1;
}

/* A scan's row prefix of the row just mapped (orow), while it is in cache: each row left
 * to right from the identity, acc OP v in the interpreter's operand order. (The rows
 * outside the region, all 0, `continue` before it: their prefix is 0 too.) */
static void scan_row(Gen *g, const char *T) {
  if (add32_scan(g->D)) {
    OUT("    pxr_scan_add_u32((uint32_t *)orow, 0, W);\n");
    return;
  }
  OUT("    {\n      %s acc = ", T);
  cg_identity(g);
  OUT(";\n      for (int x = 0; x < W; x++) {\n        const %s v = orow[x];\n        ", T);
  cg_combine(g, "acc", "v");
  OUT("\n        orow[x] = acc;\n      }\n    }\n");
}

/* The pixel's coordinates or the output's size (x, y, width, height). Functions cannot
 * read them (check.c: they see only their arguments). */
static bool is_coord(const Node *n, const void *ctx) {
  (void)ctx;
  return n->kind == ND_COORD;
}

bool cg_tabulated(const Decl *D) {
  if (D->kind != D_KERNEL || D->scan || D->sep || D->nouts || D->nimages < 1 || D->size_w) return false;
  if (D->skel != SK_P2P && D->skel != SK_GATHER) return false;
  if (D->type.s != T_U8 || D->type.lanes != 1) return false;
  const Param *p = cg_image_param(D, 0);
  const Access *ac = &D->access[0];
  if (p->type.s != T_U8 || p->type.lanes != 1 || ac->read_abs || ac->gather || !ac->read_rel || !ac->window_known)
    return false;
  if (ac->x0 || ac->x1 || ac->y0 || ac->y1) return false;
  for (int i = 1; i < D->nimages; i++)
    if (D->access[i].read_rel) return false;
  return !ir_any(D->body, is_coord, NULL);
}

/* Whether kernel D is a transpose of u8 pixels and nothing else: its body `return
 * img.at(y, x);` (casts to its own type at most) over the tile-buffered image (g->tb_t),
 * the affine map exactly (y, x). On images of more than TRANSPOSE_DIRECT_PIXELS its tiles
 * then go straight from the input into the output (pxr_transpose_u8), not through the
 * buffer and the pixel function: on the 2-core VM 22.4 -> 17.3 ms at 8192 x 8192, 5.0 ->
 * 4.3 ms at 4096 x 4096 (Halide 19.7 and 4.9), but 0.27 -> 0.40 ms at 2048 x 2048, where
 * both images stay in the caches and the buffer's whole rows are cheaper to store. */
#define TRANSPOSE_DIRECT_PIXELS (2048 * 2048)
static bool pure_transpose(const Gen *g) {
  const Decl *D = g->D;
  if (g->tb_img < 0 || !g->tb_t || D->type.s != T_U8 || D->type.lanes != 1 || !D->body) return false;
  const Node *s = D->body->body;
  if (!s || s->next || s->kind != ND_RETURN || s->nargs) return false;
  const Node *r = s->a;
  while (r && r->kind == ND_CAST && type_eq(r->type, D->type)) r = r->a;
  if (!r || r->kind != ND_AT || !type_eq(r->type, D->type) || r->param->img_index != g->tb_img) return false;
  const Access *ac = &D->access[g->tb_img];
  return ac->ax.c0 == 0 && ac->ax.c1 == 0 && ac->ax.cx == 0 && ac->ax.cy == 1 && ac->ax.cw == 0 && ac->ax.ch == 0 &&
         ac->ay.c0 == 0 && ac->ay.c1 == 0 && ac->ay.cx == 1 && ac->ay.cy == 0 && ac->ay.cw == 0 && ac->ay.ch == 0;
}

/* A table kernel's output of more than this many pixels is written with streaming stores
 * (pxr_lut_u8): it does not fit the caches, and a plain store reads each line first. */
#define LUT_STREAM_PIXELS (4096 * 4096)

/* Whether scan D's column prefixes are computed in bands of rows as the map makes them
 * (kernel_entry), then each band combined with the last row of the one above
 * (scan_entry): a pass over the image less than map, then columns. Integer types only
 * (sums wrap; min, max): a band's first row keeps its mapped values rather than folding
 * them into the identity, which for float min and max differs (a NaN, where the
 * interpreter's fold skips it) - the GPU passes fold every partial from the identity. */
static bool fused_scan(const Decl *D) {
  return (D->scan & SCAN_Y) && D->type.lanes == 1 && !scalar_is_float(D->type.s);
}

/* A tiler's check of the repetitions [x0, x1) x [ty, ye): sets `direct` when every read
 * of them lies inside its image (cg_tiler_fast at the block's corners). */
static void tiler_check(Gen *g, const char *x0, const char *x1) {
  OUT("      {\n        const int tx = %s, xe = %s;\n", x0, x1);
  cg_tiler_fast(g, "        ");
  OUT("        direct = fast;\n      }\n");
}

/* A tiler's repetitions [x0, x1) x [ty, ye) when x0 >= 0: with `run`, the run of direct
 * ones (x0 is `run`: the loop without a branch, vectorised across tiles; the run then
 * ends), else through the border functions. A repetition's TW x TH pixels are made in t_
 * and copied to its rows. */
static void tiler_rows(Gen *g, bool run, const char *x0, const char *x1, const char *args) {
  const Decl *D = g->D;
  int TW = D->tile[0], TH = D->tile[1], C = D->type.lanes;
  const char *OT = cg_ctype(D->type.s);
  OUT("      if (%s >= 0) {\n", x0);
  OUT("        for (int y = ty; y < ye; y++) {\n          %s *orow = o + (ptrdiff_t)y * %d * op;\n", OT, TH);
  OUT("          for (int x = %s; x < %s; x++) {\n            %s t_[%d];\n", x0, x1, OT, TW * TH * C);
  OUT("            %s_%s(%s, x, y, W, H, t_);\n", g->pfx, variant_name(run ? V_DIRECT_REL | V_DIRECT_AT : V_EDGE),
      args);
  OUT("            for (int j = 0; j < %d; j++)\n", TH);
  OUT("              for (int e = 0; e < %d; e++) orow[j * op + (ptrdiff_t)x * %d + e] = t_[j * %d + e];\n",
      TW * C, TW * C, TW * C);
  OUT("          }\n        }\n%s      }\n", run ? "        run = -1;\n" : "");
}

static void kernel_entry(Gen *g, const char *fname, bool exported) {
  const Decl *D = g->D;
  int C = D->type.lanes;
  const char *OT = cg_ctype(D->type.s);
  OUT("%svoid %s(const pxlc_image *in, const pxlc_scalar *sc, pxlc_image *out, int nthreads) {\n",
      exported ? "" : "static ", fname);
  OUT("  (void)in; (void)sc;\n");
  cg_prologue(g, true);
  OUT("  %s *o = (%s *)out->data;\n  const ptrdiff_t op = (ptrdiff_t)(out->pitch / (int64_t)sizeof(%s));\n", OT, OT, OT);
  /* the call of a pixel function, with %s_%s left for prefix and variant */
  StrBuf args = {0};
  cg_args_text(g, &args);
  char tail[4096];
  snprintf(tail, sizeof tail, "%%s_%%s(%s, x, y, W, H, orow + (ptrdiff_t)x * %d);", args.s ? args.s : "", C);
  if (D->sep) { /* a separable window; in a tiler of 1 x 1 tiles too */
    separable_loop(g, A_text(&args), C, OT);
    sb_free(&args);
    return;
  }
  if (D->tile[0]) {
    /* a tiler: bands of 8 rows of repetitions, blocks of 32 along them checked at their
     * corners, a block that is not all direct column by column; a run of neighbouring
     * repetitions that read directly is one loop (long rows vectorise: the pyramid's row
     * pass took 4.9 ms at 4096^2 in 32-wide blocks, 1.0 ms in runs) */
    OUT("  #pragma omp parallel for schedule(dynamic, 1) num_threads(nt_) if ((int64_t)W * H * %d > 16384)\n",
        D->tile[0] * D->tile[1]);
    OUT("  for (int ty = 0; ty < H; ty += 8) {\n");
    OUT("    const int ye = ty + 8 < H ? ty + 8 : H;\n    int run = -1, direct;\n");
    if (!cg_tiler_direct(D)) { /* data-dependent reads: every repetition through the border code */
      OUT("    (void)run; (void)direct;\n    const int cx = 0;\n");
      tiler_rows(g, false, "cx", "W", A_text(&args));
      OUT("  }\n}\n");
      sb_free(&args);
      return;
    }
    OUT("    for (int bx = 0; bx < W; bx += 32) {\n      const int be = bx + 32 < W ? bx + 32 : W;\n");
    tiler_check(g, "bx", "be");
    OUT("      if (direct) {\n        if (run < 0) run = bx;\n        continue;\n      }\n");
    OUT("      for (int cx = bx; cx < be; cx++) {\n");
    tiler_check(g, "cx", "cx + 1");
    OUT("        if (direct) {\n          if (run < 0) run = cx;\n          continue;\n        }\n");
    tiler_rows(g, true, "run", "cx", A_text(&args));
    tiler_rows(g, false, "cx", "cx + 1", A_text(&args));
    OUT("      }\n    }\n");
    tiler_rows(g, true, "run", "W", A_text(&args));
    OUT("  }\n}\n");
    sb_free(&args);
    return;
  }
  if (cg_corner_tiles(D)) {
    /* tiles, so that both the reads and the writes of a transpose stay in cache; a tile
     * whose corners' reads are inside reads directly */
    const int TS = scalar_size(D->type.s) * C >= 4 ? 32 : 64;
    OUT("  const int TS = %d;\n", TS);
    OUT("  #pragma omp parallel for schedule(dynamic, 1) num_threads(nt_) if ((int64_t)W * H > 16384)\n");
    OUT("  for (int ty = 0; ty < H; ty += TS) {\n");
    OUT("    for (int tx = 0; tx < W; tx += TS) {\n");
    OUT("      const int ye = ty + TS < H ? ty + TS : H, xe = tx + TS < W ? tx + TS : W;\n");
    OUT("      int fast = tx >= ix0 && xe <= ix1 && ty >= iy0 && ye <= iy1;\n");
    cg_corner_checks(g, "      ");
    if (g->tb_img >= 0) {
      /* stage the tile's footprint (a TS x TS block for a permutation) contiguously: the
       * column walk of a transpose then hits a small buffer, not rows a page apart that
       * all land in the same cache sets */
      const Access *ac = &D->access[g->tb_img];
      const Param *ip = cg_image_param(D, g->tb_img);
      int k = g->tb_img, IC = ip->type.lanes;
      OUT("      int fx0 = 0, fy0 = 0, fx1 = -1, fy1 = -1;\n");
      OUT("      for (int c = 0; fast && c < 4; c++) {\n");
      OUT("        const int cx = (c & 1) ? xe - 1 : tx, cy = (c & 2) ? ye - 1 : ty;\n");
      OUT("        const int ex = (int)(%lldLL + %lldLL * cx + %lldLL * cy + %lldLL * w%d + %lldLL * h%d);\n",
          (long long)ac->ax.c0, (long long)ac->ax.cx, (long long)ac->ax.cy, (long long)ac->ax.cw, k,
          (long long)ac->ax.ch, k);
      OUT("        const int ey = (int)(%lldLL + %lldLL * cx + %lldLL * cy + %lldLL * w%d + %lldLL * h%d);\n",
          (long long)ac->ay.c0, (long long)ac->ay.cx, (long long)ac->ay.cy, (long long)ac->ay.cw, k,
          (long long)ac->ay.ch, k);
      OUT("        if (c == 0 || ex < fx0) fx0 = ex;\n        if (c == 0 || ex > fx1) fx1 = ex;\n");
      OUT("        if (c == 0 || ey < fy0) fy0 = ey;\n        if (c == 0 || ey > fy1) fy1 = ey;\n      }\n");
      if (pure_transpose(g)) { /* large images: straight from the input's rows into the output's */
        OUT("      if (fast && (int64_t)W * H > %d && (fx1 - fx0 + 1) * (fy1 - fy0 + 1) <= %d * %d) {\n",
            TRANSPOSE_DIRECT_PIXELS, TS, TS);
        OUT("        pxr_transpose_u8(i%d + (ptrdiff_t)fy0 * p%d + fx0, p%d, o + (ptrdiff_t)ty * op + tx, op, "
            "fx1 - fx0 + 1, fy1 - fy0 + 1);\n        continue;\n      }\n", k, k, k);
      }
      const char *ET = cg_ctype(ip->type.s);
      if (g->tb_t)
        OUT("      const ptrdiff_t fs = (ptrdiff_t)(fy1 - fy0 + 1) * %d;\n", IC);
      else
        OUT("      const ptrdiff_t fs = (ptrdiff_t)(fx1 - fx0 + 1) * %d;\n", IC);
      OUT("      %s tb[%d * %d * %d];\n", ET, TS, TS, IC);
      OUT("      if (fast && (fx1 - fx0 + 1) * (fy1 - fy0 + 1) <= %d * %d) {\n", TS, TS);
      if (!g->tb_t) {
        OUT("        for (int r = fy0; r <= fy1; r++)\n");
        OUT("          memcpy(tb + (ptrdiff_t)(r - fy0) * fs, i%d + (ptrdiff_t)r * p%d + (ptrdiff_t)fx0 * %d,"
            " (size_t)fs * sizeof(%s));\n", k, k, IC, ET);
      } else if (ip->type.s == T_U8 && IC == 1) {
        OUT("        pxr_transpose_u8(i%d + (ptrdiff_t)fy0 * p%d + fx0, p%d, tb, fs, fx1 - fx0 + 1, fy1 - fy0 + 1);\n", k,
            k, k);
      } else {
        OUT("        for (int r = fy0; r <= fy1; r++)\n          for (int q = fx0; q <= fx1; q++)\n");
        OUT("            for (int c = 0; c < %d; c++) tb[(ptrdiff_t)(q - fx0) * fs + (ptrdiff_t)(r - fy0) * %d + c] ="
            " i%d[(ptrdiff_t)r * p%d + (ptrdiff_t)q * %d + c];\n", IC, IC, k, k, IC);
      }
      OUT("        for (int y = ty; y < ye; y++) {\n");
      OUT("          %s *orow = o + (ptrdiff_t)y * op;\n", OT);
      char tbtail[4200];
      snprintf(tbtail, sizeof tbtail, "%%s_%%s(%s, tb, fx0, fy0, fs, x, y, W, H, orow + (ptrdiff_t)x * %d);",
               args.s ? args.s : "", C);
      OUT("    ");
      xloop(g, "tx", "xe", V_DIRECT_REL | V_TILEBUF, tbtail);
      OUT("        }\n        continue;\n      }\n");
    }
    OUT("      for (int y = ty; y < ye; y++) {\n");
    OUT("        %s *orow = o + (ptrdiff_t)y * op;\n", OT);
    OUT("        if (fast) {\n  ");
    xloop(g, "tx", "xe", V_DIRECT_REL | V_DIRECT_AT, tail);
    OUT("        } else {\n");
    OUT("          for (int x = tx; x < xe; x++) {\n");
    OUT("            if (x < rx0 || x >= rx1 || y < ry0 || y >= ry1) { for (int c = 0; c < %d; c++) orow[(ptrdiff_t)x * %d + c] = 0; continue; }\n", C, C);
    OUT("            ");
    sb_printf(g->o, tail, g->pfx, variant_name(V_EDGE));
    OUT("\n          }\n        }\n      }\n    }\n  }\n}\n");
    sb_free(&args);
    return;
  }
  if (cg_tabulated(D)) {
    /* a u8 -> u8 function of the pixel alone: the kernel runs once per value (the pixel
     * function reading a row of the 256 values), then every row is table lookups */
    OUT("  uint8_t lut_[256], val_[256];\n  for (int v = 0; v < 256; v++) val_[v] = (uint8_t)v;\n");
    OUT("  {\n    const uint8_t *i0 = val_;\n    for (int x = 0; x < 256; x++) %s_%s(%s, x, 0, W, H, lut_ + x);\n  }\n",
        g->pfx, variant_name(V_DIRECT_REL), args.s ? args.s : "");
    OUT("  #pragma omp parallel for schedule(dynamic, 1 + 262144 / (W + 1)) num_threads(nt_) if ((int64_t)W * H > 65536)\n");
    OUT("  for (int y = 0; y < H; y++) pxr_lut_u8(i0 + (ptrdiff_t)y * p0, o + (ptrdiff_t)y * op, W, lut_, "
        "(int64_t)W * H > %d);\n}\n", LUT_STREAM_PIXELS);
    sb_free(&args);
    return;
  }
  /* dynamic chunks of about 64K pixels: a core shared with another process does not hold
   * the whole launch back, as it would with a static split */
  OUT("  const int chunk_ = W >= 65536 ? 1 : 65536 / W;\n  (void)chunk_;\n");
  if (g->axes) { /* column tables, row values: the loop below where they cannot be allocated */
    StrBuf aargs = {0};
    sb_printf(&aargs, "%s", A_text(&args));
    cg_axes_args(g, &aargs, "");
    cg_axes_tables(g);
    OUT("  if (axes_) {\n");
    OUT("    #pragma omp parallel for schedule(dynamic, chunk_) num_threads(nt_) if ((int64_t)W * H > 16384)\n");
    OUT("    for (int y = 0; y < H; y++) {\n");
    OUT("      %s *orow = o + (ptrdiff_t)y * op;\n", OT);
    cg_axes_row(g, "      ");
    if (cg_axes_wide(g)) { /* 4-byte loads where every one of the row stays inside its image */
      cg_axes_wide_test(g, "      ");
      OUT("      if (wide_) %s_rw(%s, y, W, H, orow);\n      else ", g->pfx, A_text(&aargs));
    } else {
      OUT("      ");
    }
    OUT("%s_ra(%s, y, W, H, orow);\n    }\n  }\n", g->pfx, A_text(&aargs));
    cg_axes_free(g);
    OUT("  if (axes_) return;\n");
    sb_free(&aargs);
  }
  bool fused = fused_scan(D);
  if (fused) { /* bands of rows, each scanned down as it is made (scan_entry adds the bands above) */
    OUT("  const int nb_ = nt_ < H ? nt_ : (H > 0 ? H : 1); /* bands: as in the map */\n");
    OUT("  #pragma omp parallel for schedule(static, 1) num_threads(nt_) if ((int64_t)W * H > 16384)\n");
    OUT("  for (int b_ = 0; b_ < nb_; b_++)\n");
    OUT("  for (int y = (int)((int64_t)H * b_ / nb_); y < (int)((int64_t)H * (b_ + 1) / nb_); y++) {\n");
    OUT("    %s *orow = o + (ptrdiff_t)y * op;\n", OT);
    OUT("    do { /* the row (its `continue`s leave this block) */\n");
  } else if (g->varying) {
    /* lanes (a loop per pixel: a pair-wise table, a row of labels n x 1): rows cut in
     * segments when there are few, so that every thread has work - up to 4 a thread, at
     * least 32 pixels each - and threads from 64 pixels where the loop's trip count is
     * known only when the kernel runs */
    OUT("  const int segs_ = H >= 4 * nt_ || W < 64 ? 1 : (4 * nt_ + H - 1) / H < W / 32 ? (4 * nt_ + H - 1) / H : W / 32;\n");
    /* tasks per chunk: about 64K pixels, or one where the pixels' loops run for as long
     * as their data says (a chunk of 64K pixels was the whole row of labels) */
    OUT("  const int tw_ = (W + segs_ - 1) / segs_, tchunk_ = %s;\n  (void)tchunk_;\n",
        D->metrics.exact ? "tw_ >= 65536 ? 1 : 65536 / tw_" : "1");
    OUT("  #pragma omp parallel for schedule(dynamic, tchunk_) num_threads(nt_) if ((int64_t)W * H > %d)\n",
        D->metrics.exact ? 16384 : 64);
    OUT("  for (int t_ = 0; t_ < H * segs_; t_++) {\n");
    OUT("    const int y = t_ / segs_, xs_ = (t_ %% segs_) * tw_, xe_ = xs_ + tw_ < W ? xs_ + tw_ : W;\n");
    OUT("    %s *orow = o + (ptrdiff_t)y * op;\n", OT);
  } else {
    OUT("  #pragma omp parallel for schedule(dynamic, chunk_) num_threads(nt_) if ((int64_t)W * H > 16384)\n");
    OUT("  for (int y = 0; y < H; y++) {\n");
    OUT("    %s *orow = o + (ptrdiff_t)y * op;\n", OT);
  }
  if (cg_row_arrays(g, "    ")) { /* the row's calls read the row copies */
    StrBuf rargs = {0};
    g->row_arrays = true;
    cg_args_text(g, &rargs);
    g->row_arrays = false;
    snprintf(tail, sizeof tail, "%%s_%%s(%s, x, y, W, H, orow + (ptrdiff_t)x * %d);", rargs.s ? rargs.s : "", C);
    sb_free(&rargs);
  }
  if (g->varying && !fused) { /* the segment [xs_, xe_) of the row (lanes, above) */
    OUT("    if (y < ry0 || y >= ry1) { for (ptrdiff_t i = (ptrdiff_t)xs_ * %d; i < (ptrdiff_t)xe_ * %d; i++) orow[i] = 0; continue; }\n", C, C);
    OUT("    for (ptrdiff_t i = (ptrdiff_t)xs_ * %d; i < (ptrdiff_t)(rx0 < xe_ ? rx0 : xe_) * %d; i++) orow[i] = 0;\n", C, C);
    OUT("    for (ptrdiff_t i = (ptrdiff_t)(rx1 > xs_ ? rx1 : xs_) * %d; i < (ptrdiff_t)xe_ * %d; i++) orow[i] = 0;\n", C, C);
    OUT("    const int a0_ = rx0 > xs_ ? rx0 : xs_, a1_ = rx1 < xe_ ? rx1 : xe_;\n");
    OUT("    const int b0_ = ix0 > xs_ ? ix0 : xs_, b1_ = ix1 < xe_ ? ix1 : xe_;\n");
    OUT("    if (y >= iy0 && y < iy1) {\n");
    xloop(g, "a0_", "(ix0 < xe_ ? ix0 : xe_)", V_EDGE, tail);
    /* PXL_CG_LANES pixels per call ("pv"), then one at a time */
    OUT("      int xl_ = b0_;\n      for (int x = b0_; x + %d <= b1_; x += %d, xl_ = x) ", PXL_CG_LANES, PXL_CG_LANES);
    sb_printf(g->o, tail, g->pfx, variant_name(V_DIRECT_REL | V_LANES));
    OUT("\n      for (int x = xl_; x < b1_; x++) ");
    sb_printf(g->o, tail, g->pfx, variant_name(V_DIRECT_REL));
    OUT("\n");
    xloop(g, "(ix1 > xs_ ? ix1 : xs_)", "a1_", V_EDGE, tail);
    OUT("    } else {\n");
    xloop(g, "a0_", "a1_", V_EDGE, tail);
    OUT("    }\n");
  } else {
    OUT("    if (y < ry0 || y >= ry1) { for (ptrdiff_t i = 0; i < (ptrdiff_t)W * %d; i++) orow[i] = 0; continue; }\n", C);
    OUT("    for (ptrdiff_t i = 0; i < (ptrdiff_t)rx0 * %d; i++) orow[i] = 0;\n", C);
    OUT("    for (ptrdiff_t i = (ptrdiff_t)rx1 * %d; i < (ptrdiff_t)W * %d; i++) orow[i] = 0;\n", C, C);
    OUT("    if (y >= iy0 && y < iy1) {\n");
    xloop(g, "rx0", "ix0", V_EDGE, tail);
    xloop(g, "ix0", "ix1", V_DIRECT_REL, tail);
    xloop(g, "ix1", "rx1", V_EDGE, tail);
    OUT("    } else {\n");
    xloop(g, "rx0", "rx1", V_EDGE, tail);
    OUT("    }\n");
  }
  if ((D->scan & SCAN_X) && !fused) scan_row(g, OT);
  if (fused) { /* down the band: the row (with its row prefix) combined with the one above it */
    OUT("    } while (0);\n");
    OUT("    const %s *p_ = y > (int)((int64_t)H * b_ / nb_) ? orow - op : 0;\n", OT);
    if ((D->scan & SCAN_X) && add32_scan(D)) {
      OUT("    pxr_scan_add_u32((uint32_t *)orow, (const uint32_t *)p_, W);\n");
    } else {
      if (D->scan & SCAN_X) scan_row(g, OT);
      OUT("    if (p_)\n      for (int x = 0; x < W; x++) {\n        %s acc = p_[x];\n        const %s v = orow[x];\n        ", OT, OT);
      cg_combine(g, "acc", "v");
      OUT("\n        orow[x] = acc;\n      }\n");
    }
  }
  OUT("  }\n}\n");
  sb_free(&args);
}


/* The entry of a scan with column prefixes: the map (kernel entry `map`, which also runs
 * the row prefixes, scan_row) into out, then the column prefixes in place, in the
 * interpreter's order: each column top to bottom from the identity (strips of columns
 * in parallel, the inner loop along the row: contiguous, vectorisable). acc OP v keeps
 * the interpreter's operand order, so even NaN payloads agree. (A scan along x only is
 * its map entry.) */
static void scan_entry(Gen *g, const char *map, const char *fname, bool exported) {
  const char *T = cg_ctype(g->D->type.s);
  OUT("%svoid %s(const pxlc_image *in, const pxlc_scalar *sc, pxlc_image *out, int nthreads) {\n",
      exported ? "" : "static ", fname);
  OUT("  %s(in, sc, out, nthreads);\n", map);
  OUT("  %s *o = (%s *)out->data;\n  const ptrdiff_t op = (ptrdiff_t)(out->pitch / (int64_t)sizeof(%s));\n", T, T, T);
  OUT("  const int W = out->width, H = out->height;\n  const int nt_ = pxlc_threads(nthreads);\n  (void)nt_;\n");
  OUT("  const %s id_ = ", T);
  cg_identity(g);
  OUT(";\n");
  if (fused_scan(g->D)) { /* each band after the first: combined with the last row of the one above */
    OUT("  const int nb_ = nt_ < H ? nt_ : (H > 0 ? H : 1); /* bands: as in the map */\n");
    OUT("  for (int b_ = 1; b_ < nb_; b_++) {\n");
    OUT("    const int ys = (int)((int64_t)H * b_ / nb_), ye = (int)((int64_t)H * (b_ + 1) / nb_);\n");
    OUT("    if (ys >= ye || ys < 1) continue;\n");
    OUT("    const %s *c_ = o + (ptrdiff_t)(ys - 1) * op;\n", T);
    OUT("    #pragma omp parallel for schedule(static) num_threads(nt_) if ((int64_t)W * (ye - ys) > 65536)\n");
    OUT("    for (int y = ys; y < ye; y++) {\n      %s *r = o + (ptrdiff_t)y * op;\n", T);
    OUT("      for (int x = 0; x < W; x++) {\n        %s acc = c_[x];\n        const %s v = r[x];\n        ", T, T);
    cg_combine(g, "acc", "v");
    OUT("\n        r[x] = acc;\n      }\n    }\n  }\n  (void)id_;\n}\n");
    return;
  }
  OUT("  const int CB = 512;\n");
  OUT("  #pragma omp parallel for schedule(static) num_threads(nt_) if ((int64_t)W * H > 65536)\n");
  OUT("  for (int x0 = 0; x0 < W; x0 += CB) {\n    const int x1 = x0 + CB < W ? x0 + CB : W;\n");
  OUT("    for (int y = 0; y < H; y++) {\n      %s *r = o + (ptrdiff_t)y * op;\n", T);
  OUT("      const %s *p = y ? r - op : 0;\n", T);
  OUT("      for (int x = x0; x < x1; x++) {\n        %s acc = y ? p[x] : id_;\n        const %s v = r[x];\n        ",
      T, T);
  cg_combine(g, "acc", "v");
  OUT("\n        r[x] = acc;\n      }\n    }\n  }\n}\n");
}

static bool row_accumulate(const Decl *D) {
  if (D->redop != R_SUM || D->body->kind != ND_CAST || D->body->type.lanes != 1) return false;
  Scalar in = D->body->a->type.s, out = D->type.s;
  return (in == T_U8 || in == T_U16 || in == T_I16) && !scalar_is_float(out) && scalar_size(out) >= 4;
}

static void reduce_entry(Gen *g, const char *fname, bool exported) {
  const Decl *D = g->D;
  const char *T = cg_ctype(D->type.s);
  bool arg = D->redop == R_ARGMIN || D->redop == R_ARGMAX;
  bool rowacc = row_accumulate(D);
  StrBuf args = {0};
  cg_args_text(g, &args);
  const char *A = args.s ? args.s : "";
  OUT("%svoid %s(const pxlc_image *in, const pxlc_scalar *sc, pxlc_scalar *res, int32_t *pos, int nthreads) {\n",
      exported ? "" : "static ", fname);
  OUT("  (void)in; (void)sc;\n");
  cg_prologue(g, false);
  OUT("  enum { MAXCH = 64 };\n  const int nch = H < MAXCH ? H : MAXCH;\n");
  OUT("  %s part[MAXCH]; int32_t px_[MAXCH], py_[MAXCH];\n  (void)px_; (void)py_;\n", T);
  OUT("  #pragma omp parallel for schedule(dynamic, 1) num_threads(nt_) if ((int64_t)W * H > 16384)\n");
  OUT("  for (int c = 0; c < nch; c++) {\n");
  OUT("    const int y0 = (int)((int64_t)H * c / nch), y1 = (int)((int64_t)H * (c + 1) / nch);\n");
  OUT("    %s acc = ", T);
  cg_identity(g);
  OUT(";\n    int32_t ax = -1, ay = -1;\n    (void)ax; (void)ay;\n");
  OUT("    for (int y = y0 > ry0 ? y0 : ry0; y < (y1 < ry1 ? y1 : ry1); y++) {\n");
  const char *ranges[2][3][3] = {{{"rx0", "ix0", "pe"}, {"ix0", "ix1", "pi"}, {"ix1", "rx1", "pe"}},
                                 {{"rx0", "rx1", "pe"}, {NULL, NULL, NULL}, {NULL, NULL, NULL}}};
  for (int r = 0; r < 2; r++) {
    OUT(r == 0 ? "      if (y >= iy0 && y < iy1) {\n" : "      } else {\n");
    for (int q = 0; q < 3 && ranges[r][q][0]; q++) {
      if (rowacc) {
        Scalar in = D->body->a->type.s;
        const char *RT = in == T_I16 ? "int32_t" : "uint32_t";
        OUT("        { %s racc = 0;\n", RT);
        if (in == T_U8) /* blocks of 256 sum exactly in 16 bits: narrower vector lanes */
          OUT("          for (int xb = %s; xb < %s; xb += 256) { const int xe = xb + 256 < %s ? xb + 256 : %s;"
              " uint16_t bacc = 0; for (int x = xb; x < xe; x++) bacc += (uint16_t)%s_%sr(%s, x, y, W, H);"
              " racc += bacc; }\n",
              ranges[r][q][0], ranges[r][q][1], ranges[r][q][1], ranges[r][q][1], g->pfx, ranges[r][q][2], A);
        else
          OUT("          for (int x = %s; x < %s; x++) racc += (%s)%s_%sr(%s, x, y, W, H);\n", ranges[r][q][0],
              ranges[r][q][1], RT, g->pfx, ranges[r][q][2], A);
        OUT("          ");
        char v[64];
        snprintf(v, sizeof v, "(%s)racc", T);
        cg_combine(g, "acc", v);
        OUT(" }\n");
        continue;
      }
      OUT("        for (int x = %s; x < %s; x++) {\n", ranges[r][q][0], ranges[r][q][1]);
      OUT("          const %s v = %s_%s(%s, x, y, W, H);\n          ", T, g->pfx, ranges[r][q][2], A);
      cg_fold_pixel(g, "v");
      OUT("\n        }\n");
    }
  }
  OUT("      }\n    }\n    part[c] = acc; px_[c] = ax; py_[c] = ay;\n  }\n");
  OUT("  %s acc = ", T);
  cg_identity(g);
  OUT(";\n  int32_t ax = -1, ay = -1;\n");
  OUT("  for (int c = 0; c < nch; c++) {\n    ");
  if (arg) {
    OUT("if (px_[c] >= 0 && (ax < 0 || ");
    cg_better(g, "part[c]", "acc");
    OUT(")) { acc = part[c]; ax = px_[c]; ay = py_[c]; }");
  } else {
    cg_combine(g, "acc", "part[c]");
  }
  OUT("\n  }\n");
  if (scalar_is_float(D->type.s)) OUT("  res->f = (double)acc;\n");
  else OUT("  res->i = (int64_t)acc;\n");
  OUT("  pos[0] = ax; pos[1] = ay;\n}\n");
  sb_free(&args);
}


static void histogram_entry(Gen *g, const char *fname, bool exported) {
  const Decl *D = g->D;
  const char *BT = hist_double_sums(D) ? "double" : "int64_t";
  bool counts = cg_counts_only(g), keys = D->binop != BIN_SUM;
  /* integer sums: four 64-bit copies per thread, pixel x into copy x % 4, so that runs of
   * pixels adding to the same bin (the background of a label image) do not serialise on
   * one memory location; merged as the threads' copies are. Not for float sums (one pass
   * in order), nor past 65536 bins (2 MiB a thread), nor for minima and maxima, whose
   * conditional stores ran 2x slower so (components.pxl's bounds at 4096^2, 2-core VM:
   * 24.8 ms against 11.9; its sums 12.7 against 16.8). */
  bool copies4 = !counts && !keys && !hist_double_sums(D) && D->nbins <= 65536;
  StrBuf args = {0};
  cg_args_text(g, &args);
  const char *A = args.s ? args.s : "";
  OUT("%svoid %s(const pxlc_image *in, const pxlc_scalar *sc, void *bins_out, int nthreads) {\n",
      exported ? "" : "static ", fname);
  OUT("  (void)in; (void)sc;\n");
  cg_prologue(g, false);
  OUT("  %s *bins = (%s *)bins_out;\n  const int NB = %d;\n", BT, BT, D->nbins);
  OUT("  for (int b = 0; b < NB; b++) bins[b] = 0;\n");
  /* integer bins and keys of minima or maxima: private copies per thread, merged (addition
   * and the larger key are exact and commutative); float sums: one pass in row-major order,
   * the interpreter's order. */
  OUT("  int nt = %s;\n", hist_double_sums(D) ? "1" : "((int64_t)W * H > 65536 ? nt_ : 1)");
  OUT("  %s *priv = nt > 1 ? (%s *)calloc((size_t)nt * NB, sizeof(%s)) : NULL;\n", BT, BT, BT);
  OUT("  if (!priv) nt = 1;\n");
  OUT("  #pragma omp parallel num_threads(nt) if (nt > 1)\n  {\n");
  OUT("    %s *mine = priv ? priv + (size_t)pxlc_thread_id() * NB : bins;\n", BT);
  if (counts) {
    /* four 32-bit sub-histograms, so that runs of equal pixels do not serialise on one
     * counter; flushed into the 64-bit bins every 256 rows, before any can overflow */
    OUT("    uint32_t *sub = (uint32_t *)calloc((size_t)4 * NB, sizeof(uint32_t));\n");
    OUT("    int rows = 0;\n");
  }
  if (copies4) OUT("    int64_t *sub = (int64_t *)calloc((size_t)4 * NB, sizeof(int64_t));\n");
  OUT("    #pragma omp for schedule(dynamic, 16)\n");
  OUT("    for (int y = ry0; y < ry1; y++) {\n");
  const char *segs[4][3] = {{"rx0", "ix0", "pe"}, {"ix0", "ix1", "pi"}, {"ix1", "rx1", "pe"}, {"rx0", "rx1", "pe"}};
  for (int k = 0; k < 4; k++) {
    if (k == 0) OUT("      if (y >= iy0 && y < iy1) {\n");
    if (k == 3) OUT("      } else {\n");
    if (counts || copies4) { /* four copies, pixel x into copy x % 4 ("c": the 32-bit counting function) */
      const char *fn = counts ? "c" : "";
      OUT("        if (sub) {\n");
      OUT("          int x = %s;\n", segs[k][0]);
      OUT("          for (; x + 3 < %s; x += 4) {\n", segs[k][1]);
      for (int j = 0; j < 4; j++)
        OUT("            %s_%s%s(%s, x + %d, y, W, H, sub + (size_t)%d * NB);\n", g->pfx, segs[k][2], fn, A, j, j);
      OUT("          }\n          for (; x < %s; x++) %s_%s%s(%s, x, y, W, H, sub);\n", segs[k][1], g->pfx, segs[k][2],
          fn, A);
      OUT("        } else\n  ");
    }
    OUT("        for (int x = %s; x < %s; x++) %s_%s(%s, x, y, W, H, mine);\n", segs[k][0], segs[k][1], g->pfx,
        segs[k][2], A);
  }
  OUT("      }\n");
  if (counts) {
    OUT("      if (sub && ++rows == 256) {\n");
    OUT("        for (int b = 0; b < 4 * NB; b++) { mine[b %% NB] += sub[b]; sub[b] = 0; }\n");
    OUT("        rows = 0;\n      }\n");
  }
  OUT("    }\n");
  if (counts) {
    OUT("    if (sub) {\n      for (int b = 0; b < 4 * NB; b++) mine[b %% NB] += sub[b];\n      free(sub);\n    }\n");
  }
  if (copies4) {
    OUT("    if (sub) {\n      for (int b = 0; b < 4 * NB; b++)\n");
    OUT("        mine[b %% NB] = (int64_t)((uint64_t)mine[b %% NB] + (uint64_t)sub[b]);\n");
    OUT("      free(sub);\n    }\n");
  }
  OUT("  }\n");
  OUT("  if (priv) {\n    for (int t = 0; t < nt; t++)\n      for (int b = 0; b < NB; b++)\n");
  if (keys)
    OUT("        if ((uint64_t)priv[(size_t)t * NB + b] > (uint64_t)bins[b]) bins[b] = priv[(size_t)t * NB + b];\n");
  else
    OUT("        bins[b] = (int64_t)((uint64_t)bins[b] + (uint64_t)priv[(size_t)t * NB + b]);\n");
  OUT("    free(priv);\n  }\n");
  if (keys) {
    /* the keys back into values (ir.c: hist_keys_to_values does the same for GPUs) */
    OUT("  for (int b = 0; b < NB; b++) {\n    uint64_t k = (uint64_t)bins[b]%s;\n", D->binop == BIN_MIN ? " ^ ~0ull" : "");
    if (!D->weighted_float) {
      OUT("    bins[b] = (int64_t)(k ^ 0x8000000000000000ull);\n");
    } else {
      OUT("    double v = %sINFINITY;\n", D->binop == BIN_MIN ? "" : "-");
      OUT("    if (bins[b]) {\n      uint64_t u = (k >> 63) ? k & ~0x8000000000000000ull : ~k;\n");
      OUT("      memcpy(&v, &u, sizeof v);\n    }\n    memcpy(&bins[b], &v, sizeof v);\n");
    }
    OUT("  }\n");
  }
  OUT("}\n");
  sb_free(&args);
}

static const char abi_text[] =
    "#include <stddef.h>\n#include <stdint.h>\n#include <stdlib.h>\n#include <string.h>\n"
    "#ifdef _OPENMP\n#include <omp.h>\n#endif\n"
    "#ifndef PXLC_ABI_DEFINED\n#define PXLC_ABI_DEFINED 1\n"
    "/* An image: rows of width pixels, pitch bytes apart; channels interleaved. */\n"
    "typedef struct { void *data; int32_t width, height; int64_t pitch; } pxlc_image;\n"
    "/* A scalar argument or result: integers in i, floating point in f. */\n"
    "typedef union { int64_t i; double f; } pxlc_scalar;\n"
    "#endif\n";

static const char threads_text[] =
    "static inline void pxlc_rows_copy(pxlc_image *d, const pxlc_image *s, int es) {\n"
    "  for (int32_t y = 0; y < s->height; y++)\n"
    "    memcpy((char *)d->data + y * d->pitch, (const char *)s->data + y * s->pitch, (size_t)s->width * es);\n}\n"
    "static inline int pxlc_rows_same(const pxlc_image *a, const pxlc_image *b, int es) {\n"
    "  for (int32_t y = 0; y < a->height; y++)\n"
    "    if (memcmp((const char *)a->data + y * a->pitch, (const char *)b->data + y * b->pitch, (size_t)a->width * es))\n"
    "      return 0;\n  return 1;\n}\n"
    "static inline int pxlc_threads(int n) {\n"
    "#ifdef _OPENMP\n  return n > 0 ? n : omp_get_max_threads();\n#else\n  (void)n;\n  return 1;\n#endif\n}\n"
    "static inline int pxlc_thread_id(void) {\n"
    "#ifdef _OPENMP\n  return omp_get_thread_num();\n#else\n  return 0;\n#endif\n}\n";

/* A row of a kernel with axis values: row function <pfx>_<name> calls pixel function
 * `variant` for x in [0, W). Its pointer parameters are restrict, the pixel function's
 * are not: so gcc vectorises the row's gathers (4-byte loads, V_WIDE). */
static void axes_row_fn(Gen *g, int variant, const char *name) {
  StrBuf params = {0}, args = {0};
  cg_params_text(g, &params);
  cg_args_text(g, &args);
  cg_axes_args(g, &args, "");
  OUT("static void %s_%s(%s", g->pfx, name, A_text(&params));
  cg_axes_params(g);
  OUT(", int y, int W, int H, %s *PXR_RESTRICT orow) {\n", cg_ctype(g->D->type.s));
  OUT("  for (int x = 0; x < W; x++) %s_%s(%s, x, y, W, H, orow + (ptrdiff_t)x * %d);\n}\n", g->pfx,
      variant_name(variant), A_text(&args), g->D->type.lanes);
  sb_free(&params);
  sb_free(&args);
}

/* The pixel and row functions of a kernel with axis values (g->axes): "pa" / "ra", and
 * where some read can load 4 bytes (cg_axes_wide), "pw" / "rw". */
static void axes_fns(Gen *g) {
  bool wide = cg_axes_wide(g);
  if (wide) cg_axes_wide_helpers(g);
  g->plain_ptrs = true;
  pixel_fn(g, V_AXES, false);
  if (wide) pixel_fn(g, V_AXES | V_WIDE, false);
  g->plain_ptrs = false;
  axes_row_fn(g, V_AXES, "ra");
  if (wide) axes_row_fn(g, V_AXES | V_WIDE, "rw");
}

/* Emits the static functions and the entry point of one instance. */
static int emit_instance(StrBuf *out, const Decl *D, const Border *borders, const char *pfx, const char *fname,
                         bool exported, Err *err) {
  bool direct[64] = {0};
  if (D->nimages > 64) return err_set(err, PXL_EARG, "%s: too many image parameters", D->name);
  Gen gen, *g = &gen;
  cg_init(g, out, D, borders, pfx, direct);
  g->typed_arrays = true;
  g->narrow_accs = true;
  g->signed_ops = true;
  if (D->kind == D_KERNEL && D->skel == SK_P2P_NONSEQ) cg_use_tile_buffer(g);
  OUT("\n/* ---- %s %s: %s", D->scan ? "scan" : D->kind == D_KERNEL ? "kernel" : D->kind == D_REDUCE ? "reduce" : "histogram", D->name,
      skeleton_name(D->skel));
  for (int i = 0; i < D->nparams; i++)
    if (D->params[i]->is_image)
      OUT(", %s: %s", D->params[i]->name, border_name(borders[D->params[i]->img_index].kind));
  OUT(" ---- */\n");
  cg_user_defs(g);
  g->no_read0 = cg_tabulated(D); /* a table reads its values directly */
  /* PXL_CG_LANES pixels per call ("pv") where the body's loops run alike for all (pair-wise
   * tables: the loop over the vectors' elements): the C compiler vectorises across the
   * lanes, where it does not vectorise a row loop with a loop inside. Planned before the
   * read functions, which then include the lanes' branch-free ones */
  if (D->kind == D_KERNEL && !cg_tabulated(D) && !cg_corner_tiles(D)) cg_lanes_plan(g);
  cg_read_fns(g);
  if (D->kind == D_REDUCE) {
    cg_combine_fn(g);
    bool inner = row_accumulate(D);
    cg_reduce_fn(g, V_EDGE, inner, variant_name(V_EDGE));
    cg_reduce_fn(g, V_DIRECT_REL, inner, variant_name(V_DIRECT_REL));
    reduce_entry(g, fname, exported);
  } else if (D->kind == D_HISTOGRAM) {
    pixel_fn(g, V_EDGE, false);
    pixel_fn(g, V_DIRECT_REL, false);
    if (cg_counts_only(g)) {
      pixel_fn(g, V_EDGE, true);
      pixel_fn(g, V_DIRECT_REL, true);
    }
    histogram_entry(g, fname, exported);
  } else {
    Axes axes;
    if (!cg_tabulated(D) && !cg_corner_tiles(D) && cg_axes_plan(g, &axes)) axes_fns(g);
    if (!cg_tabulated(D)) pixel_fn(g, V_EDGE, false); /* a table reads through pi only */
    if (!cg_corner_tiles(D) && !D->sep && !D->tile[0]) pixel_fn(g, V_DIRECT_REL, false); /* the others' interiors use pt, ph */
    if (g->axes) cg_lanes_free(g); /* the axis values' row functions instead */
    if (g->varying) pixel_fn(g, V_DIRECT_REL | V_LANES, false);
    /* (a tiler whose reads depend on data runs every repetition through the border code) */
    if (cg_corner_tiles(D) || (D->tile[0] && cg_tiler_direct(D))) pixel_fn(g, V_DIRECT_REL | V_DIRECT_AT, false);
    if (D->skel == SK_P2P_NONSEQ && g->tb_img >= 0) pixel_fn(g, V_DIRECT_REL | V_TILEBUF, false);
    /* the row pass: over column values ("ph"), or given the window's sums ("pr") */
    bool sums = D->sep && (cg_sliding_rows(D->sep) || weighted_rows(D->sep));
    if (D->sep && !sums) pixel_fn(g, V_SEP, false);
    if (sums) pixel_fn(g, V_SEP | V_ROWSUM, false);
    if (D->scan & SCAN_Y) {
      char map[96];
      snprintf(map, sizeof map, "%s_map", pfx);
      kernel_entry(g, map, false);
      scan_entry(g, map, fname, exported);
    } else {
      kernel_entry(g, fname, exported);
    }
  }
  cg_lanes_free(g);
  if (out->oom) return err_set(err, PXL_ENOMEM, "out of memory generating C for %s", D->name);
  return PXL_OK;
}

int gen_c_stage(StrBuf *out, const Decl *D, const Border *borders, const char *fname, Err *err) {
  if (D->nouts) /* exec.c runs its projections, D->outs */
    return err_set(err, PXL_ERROR, "internal: %s has %d outputs; generate its projections", D->name, D->nouts);
  if (D->global) /* exec.c runs its maps, D->gmap, then the operator library's pass */
    return err_set(err, PXL_ERROR, "internal: %s is a global operator; generate its maps", D->name);
  sb_printf(out, "/* generated by pxl %s: one stage instance; do not edit */\n", PXL_VERSION_STRING);
  /* Windows do more arithmetic per byte than a pass over memory: they gain from 512-bit
   * vectors where the chip has them (blur3 28 -> 18 ms at 8192^2 on an AVX-512 Xeon),
   * while P2P passes and reductions lose (binarize 6.8 -> 7.8 ms), so only N2P asks. It
   * must precede everything: functions of different targets would not inline. */
  if (D->skel == SK_N2P)
    sb_printf(out, "#if defined(__AVX512BW__) && defined(__GNUC__) && !defined(__clang__)\n"
                   "#pragma GCC target(\"prefer-vector-width=512\")\n#endif\n");
  StrBuf body = {0}; /* the instance, first: whether it calls the prelude's AVX-512 helpers */
  int rc = emit_instance(&body, D, borders, "st", fname, true, err);
  if (!rc && (strstr(body.s ? body.s : "", "pxr_scan_add_u32(") || strstr(body.s ? body.s : "", "pxr_lut_u8(")))
    sb_printf(out, "#define PXR_AVX512_HELPERS 1\n");
  sb_append(out, pxl_prelude_text, strlen(pxl_prelude_text));
  sb_append(out, abi_text, sizeof abi_text - 1);
  sb_append(out, threads_text, sizeof threads_text - 1);
  sb_printf(out, "const int pxl_stage_abi = %d;\n", PXLC_ABI_VERSION);
  if (body.s) sb_append(out, body.s, body.len);
  if (!rc && (body.oom || out->oom)) rc = err_set(err, PXL_ENOMEM, "out of memory generating C for %s", D->name);
  sb_free(&body);
  return rc;
}

/* ---- ahead-of-time: a whole program ----
 *
 * Nothing from outside reaches the generated text unescaped. The source path appears
 * only in comments, every byte outside printable ASCII and each of * \ ? % written as
 * %XX (so no comment can close, splice or form a trigraph). Exported names are
 * <B>_<entry>, B the base name as an identifier (aot_prefix); the static functions of
 * the .c are <B>_<digit>..., which no entry name can produce (an identifier never starts
 * with a digit); the include guard is PXLC_<B>_H. The .c repeats the header's
 * declarations instead of including it by name, so it compiles whatever BASE holds. */

/* Appends text as a comment-safe string: %XX for bytes that could end or splice a
 * comment, form a trigraph, or are not printable ASCII. */
static void comment_text(StrBuf *o, const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p < 0x20 || *p > 0x7e || *p == '*' || *p == '\\' || *p == '?' || *p == '%')
      sb_printf(o, "%%%02X", *p);
    else
      sb_append(o, (const char *)p, 1);
  }
}

/* The identifier prefix B of base name `base`: letters, digits and _ kept, other bytes
 * as _; "pxl_" in front when it would start with a digit or _, or with pxl, pxr, pxg or
 * omp in any case (the generated code's, the prelude's and OpenMP's names). */
static void aot_prefix(StrBuf *o, const char *base) {
  char low[4] = {0};
  for (int i = 0; i < 3 && base[i]; i++) low[i] = (char)(base[i] | 0x20);
  unsigned char c0 = (unsigned char)base[0];
  bool alpha = (c0 >= 'a' && c0 <= 'z') || (c0 >= 'A' && c0 <= 'Z');
  if (!alpha || !strcmp(low, "pxl") || !strcmp(low, "pxr") || !strcmp(low, "pxg") || !strcmp(low, "omp"))
    sb_printf(o, "pxl_");
  for (const unsigned char *p = (const unsigned char *)base; *p; p++) {
    bool id = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_';
    sb_append(o, id ? (const char *)p : "_", 1);
  }
}

static void sb_clear(StrBuf *b) {
  b->len = 0;
  if (b->s) b->s[0] = '\0';
}

/* Emits a host expression (size(), scalar arguments) of declaration D. */
static void host_expr(StrBuf *o, const Decl *D, const Node *n) {
  bool direct[1] = {false};
  Gen g = {.o = o, .D = D, .pfx = "?", .direct = direct};
  cg_expr(&g, n, 0);
}

/* `const T sN = sc[N]` for the scalar parameters of D. */
static void unpack_scalars(StrBuf *o, const Decl *D) {
  sb_printf(o, "  (void)sc;\n"); /* a pipeline without scalars does not read it */
  for (int i = 0; i < D->nparams; i++) {
    const Param *p = D->params[i];
    if (p->is_image && D->kind == D_PIPELINE) /* sizes, for arguments such as in.width / 2 */
      sb_printf(o, "  const int32_t w%d = in[%d].width, h%d = in[%d].height; (void)w%d; (void)h%d;\n", p->img_index,
                p->img_index, p->img_index, p->img_index, p->img_index, p->img_index);
    if (!p->is_image)
      sb_printf(o, "  const %s s%d = (%s)sc[%d].%c; (void)s%d;\n", cg_ctype(p->type.s), p->scalar_index,
                cg_ctype(p->type.s), p->scalar_index, scalar_is_float(p->type.s) ? 'f' : 'i', p->scalar_index);
  }
}

/* The static size function `name`: the output size of kernel D for inputs in, sc. */
static void emit_size_fn(StrBuf *o, const Decl *D, const char *name) {
  sb_printf(o, "static void %s(const pxlc_image *in, const pxlc_scalar *sc, int32_t *width, int32_t *height) {\n"
               "  (void)in; (void)sc;\n", name);
  for (int i = 0; i < D->nparams; i++) {
    const Param *p = D->params[i];
    if (p->is_image)
      sb_printf(o, "  const int w%d = in[%d].width, h%d = in[%d].height; (void)w%d; (void)h%d;\n", p->img_index,
                p->img_index, p->img_index, p->img_index, p->img_index, p->img_index);
  }
  unpack_scalars(o, D);
  if (D->size_w && D->tile[0]) { /* a tiler: its repetitions times its tile (too large: -1, refused) */
    for (int k = 0; k < 2; k++) {
      sb_printf(o, "  { const int64_t n_ = (int64_t)(");
      host_expr(o, D, k ? D->size_h : D->size_w);
      sb_printf(o, ") * %d; *%s = n_ > 2147483647 ? -1 : (int32_t)n_; }\n", D->tile[k], k ? "height" : "width");
    }
  } else if (D->size_w) {
    sb_printf(o, "  *width = ");
    host_expr(o, D, D->size_w);
    sb_printf(o, ";\n  *height = ");
    host_expr(o, D, D->size_h);
    sb_printf(o, ";\n");
  } else {
    sb_printf(o, "  *width = in[0].width;\n  *height = in[0].height;\n");
  }
  sb_printf(o, "}\n");
}

/* The exported function `name` of a kernel or pipeline: a size query when out->data is
 * NULL, else a check of out's size and the call of the static `run`. */
static void emit_sized_entry(StrBuf *o, const char *name, const char *size_fn, const char *run, bool returns) {
  sb_printf(o, "int %s(const pxlc_image *in, const pxlc_scalar *sc, pxlc_image *out, int nthreads) {\n", name);
  sb_printf(o, "  int32_t W, H;\n  %s(in, sc, &W, &H);\n", size_fn);
  sb_printf(o, "  if (!out->data) {\n    out->width = W;\n    out->height = H;\n    return 0;\n  }\n");
  sb_printf(o, "  if (out->width != W || out->height != H) return -1;\n");
  if (returns) sb_printf(o, "  return %s(in, sc, out, nthreads);\n}\n", run);
  else sb_printf(o, "  %s(in, sc, out, nthreads);\n  return 0;\n}\n", run);
}

/* The exported function `name` of kernel D with several outputs: out[0 .. D->nouts), a
 * size query when out[0].data is NULL, else each output's instance `run`<k> in turn. */
static void emit_outputs_entry(StrBuf *o, const Decl *D, const char *name, const char *size_fn, const char *run) {
  sb_printf(o, "int %s(const pxlc_image *in, const pxlc_scalar *sc, pxlc_image *out, int nthreads) {\n", name);
  sb_printf(o, "  int32_t W, H;\n  %s(in, sc, &W, &H);\n", size_fn);
  sb_printf(o, "  if (!out[0].data) {\n    for (int k = 0; k < %d; k++) {\n      out[k].width = W;\n"
               "      out[k].height = H;\n    }\n    return 0;\n  }\n", D->nouts);
  sb_printf(o, "  for (int k = 0; k < %d; k++)\n    if (!out[k].data || out[k].width != W || out[k].height != H) "
               "return -1;\n", D->nouts);
  for (int k = 0; k < D->nouts; k++) sb_printf(o, "  %s%d(in, sc, &out[%d], nthreads);\n", run, k, k);
  sb_printf(o, "  return 0;\n}\n");
}

/* Opens a block binding the arguments of pipeline call pv: images a[], scalars s[]. */
static void stage_args(StrBuf *o, const Decl *P, const PipeValue *pv) {
  const Decl *K = pv->callee;
  sb_printf(o, "  {\n    pxlc_image a[%d]; pxlc_scalar s[%d] = {{0}};\n", K->nimages ? K->nimages : 1,
            K->nscalars ? K->nscalars : 1);
  for (int j = 0; j < pv->nargs; j++) {
    const Param *kp = K->params[j];
    if (kp->is_image) {
      sb_printf(o, "    a[%d] = v[%d];\n", kp->img_index, pv->args[j].source);
    } else {
      sb_printf(o, "    s[%d].%c = ", kp->scalar_index, scalar_is_float(kp->type.s) ? 'f' : 'i');
      host_expr(o, P, pv->args[j].expr);
      sb_printf(o, ";\n");
    }
  }
}

/* Bytes of one pixel of value v. */
static int value_bytes(const PipeValue *pv) { return scalar_size(pv->type.s) * pv->type.lanes; }

static void pipe_values(StrBuf *o, const Decl *P, const char *pfx, int from, int to);

/* A loop of pipeline_fn: each carried image gets a buffer of its own (allocated at the
 * first run of the loop, its first value copied in); after each iteration it swaps
 * buffers with the body's new value (double buffering). */
static void pipe_loop(StrBuf *o, const Decl *P, const char *pfx, int li) {
  const PipeLoop *L = &P->loops[li];
  sb_printf(o, "  { /* loop of line %d */\n    const int64_t n%d = ", L->loc.line, li);
  host_expr(o, P, L->count);
  sb_printf(o, ";\n");
  for (int k = 0; k < L->ncarry; k++) {
    int p = L->phi + k, i = L->init[k];
    sb_printf(o, "    if (!v[%d].data) {\n      v[%d] = v[%d];\n      v[%d].pitch = ((int64_t)v[%d].width * %d + 63) / 64 * 64;\n"
                 "      v[%d].data = malloc((size_t)(v[%d].pitch * v[%d].height));\n"
                 "      if (!v[%d].data) { rc = -1; goto done; }\n    }\n",
              p, p, i, p, p, value_bytes(&P->values[p]), p, p, p, p);
    sb_printf(o, "    pxlc_rows_copy(&v[%d], &v[%d], %d);\n", p, i, value_bytes(&P->values[p]));
  }
  sb_printf(o, "    for (int64_t it%d = 1; it%d <= n%d; it%d++) {\n", li, li, li, li);
  pipe_values(o, P, pfx, L->first, L->end);
  if (L->has_until) sb_printf(o, "    int same = it%d < n%d; /* no test at the cap */\n", li, li);
  for (int k = 0; k < L->ncarry; k++) {
    int p = L->phi + k, q = L->next[k];
    sb_printf(o, "    if (v[%d].width != v[%d].width || v[%d].height != v[%d].height) { rc = -1; goto done; }\n", q, p,
              q, p);
    if (L->has_until && L->until[k])
      sb_printf(o, "    same = same && pxlc_rows_same(&v[%d], &v[%d], %d);\n", p, q, value_bytes(&P->values[p]));
  }
  for (int k = 0; k < L->ncarry; k++)
    sb_printf(o, "    { pxlc_image t = v[%d]; v[%d] = v[%d]; v[%d] = t; }\n", L->phi + k, L->phi + k, L->next[k],
              L->next[k]);
  sb_printf(o, "%s    }\n  }\n", L->has_until ? "    if (same) break;\n" : "");
}

/* The stages values[from .. to) of pipeline_fn, and the loops among them. A stage's
 * buffer is allocated once and kept (a loop's body runs again into the same buffers). */
static void pipe_values(StrBuf *o, const Decl *P, const char *pfx, int from, int to) {
  for (int i = from; i < to; i++) {
    const PipeValue *pv = &P->values[i];
    if (pv->fused) continue; /* computed inside its consumer's kernel */
    if (pv->carried >= 0) {
      pipe_loop(o, P, pfx, pv->carried);
      i = P->loops[pv->carried].end - 1;
      continue;
    }
    if (!pv->callee) {
      sb_printf(o, "  v[%d] = in[%d];\n", i, pv->param->img_index);
      continue;
    }
    stage_args(o, P, pv);
    sb_printf(o, "    int32_t W, H;\n    %sz%d(a, s, &W, &H);\n", pfx, i);
    if (i == P->result) {
      sb_printf(o, "    if (out->width != W || out->height != H) { rc = -1; goto done; }\n    v[%d] = *out;\n", i);
    } else {
      sb_printf(o, "    if (!v[%d].data) {\n", i);
      sb_printf(o, "      int64_t pitch = ((int64_t)W * %d + 63) / 64 * 64;\n", value_bytes(pv));
      sb_printf(o, "      v[%d].data = malloc((size_t)(pitch * H));\n      if (!v[%d].data) { rc = -1; goto done; }\n",
                i, i);
      sb_printf(o, "      v[%d].width = W; v[%d].height = H; v[%d].pitch = pitch;\n    }\n", i, i, i);
    }
    sb_printf(o, "    %ss%d(a, s, &v[%d], nthreads);\n  }\n", pfx, i, i);
  }
}

/* The static pipeline function `fn` of pipeline P (stages in order, intermediates
 * malloc'd and freed; out already of the right size) and its static size function
 * `fn_size`; `pfx` + s<v> / z<v> name the stage instances and their size functions. P is
 * the CPU's fused form where there is one (Decl.fused[COST_CPU]): its fused-away values
 * are skipped. In a loop the sizes do not change, so the size function runs each body
 * once (and takes the carried images' sizes from their first values). */
static void pipeline_fn(StrBuf *o, const Decl *P, const char *pfx) {
  sb_printf(o, "\nstatic int %ss(const pxlc_image *in, const pxlc_scalar *sc, pxlc_image *out, int nthreads) {\n", pfx);
  unpack_scalars(o, P);
  sb_printf(o, "  pxlc_image v[%d];\n  memset(v, 0, sizeof v);\n  int rc = 0;\n", P->nvalues);
  pipe_values(o, P, pfx, 0, P->nvalues);
  if (!P->values[P->result].callee) /* a carried image */
    sb_printf(o, "  pxlc_rows_copy(out, &v[%d], %d);\n", P->result, value_bytes(&P->values[P->result]));
  sb_printf(o, "done:\n");
  for (int i = 0; i < P->nvalues; i++)
    if ((P->values[i].callee || P->values[i].carried >= 0) && !(i == P->result && P->values[i].callee) &&
        !P->values[i].fused)
      sb_printf(o, "  free(v[%d].data);\n", i);
  sb_printf(o, "  return rc;\n}\n");
  sb_printf(o, "static void %sz(const pxlc_image *in, const pxlc_scalar *sc, int32_t *width, int32_t *height) {\n",
            pfx);
  unpack_scalars(o, P);
  sb_printf(o, "  pxlc_image v[%d];\n  memset(v, 0, sizeof v);\n", P->nvalues);
  for (int i = 0; i < P->nvalues; i++) {
    const PipeValue *pv = &P->values[i];
    if (pv->fused) continue;
    if (pv->carried >= 0) {
      sb_printf(o, "  v[%d] = v[%d];\n", i, P->loops[pv->carried].init[i - P->loops[pv->carried].phi]);
      continue;
    }
    if (!pv->callee) {
      sb_printf(o, "  v[%d] = in[%d];\n", i, pv->param->img_index);
      continue;
    }
    stage_args(o, P, pv);
    sb_printf(o, "    %sz%d(a, s, &v[%d].width, &v[%d].height);\n  }\n", pfx, i, i, i);
  }
  sb_printf(o, "  *width = v[%d].width;\n  *height = v[%d].height;\n}\n", P->result, P->result);
}

/* The declaration of entry D, exported as `name`, with its comment. */
static void header_entry(StrBuf *h, const Decl *D, const char *name) {
  char t[16];
  bool has_array = false;
  sb_printf(h, "\n/* %s %s(", D->scan ? "scan" : D->kind == D_KERNEL ? "kernel" : D->kind == D_REDUCE ? "reduce"
                                 : D->kind == D_HISTOGRAM ? "histogram" : "pipeline", D->name);
  for (int i = 0; i < D->nparams; i++) {
    const Param *p = D->params[i];
    sb_printf(h, "%s%s%s %s", i ? ", " : "", p->is_image ? "image " : "", type_str(p->type, t), p->name);
    if (p->len) sb_printf(h, "[%d]", p->len);
    has_array |= p->len > 0;
  }
  sb_printf(h, ")\n * in[]: the image parameters in order; sc[]: the scalar parameters in order\n");
  if (has_array)
    sb_printf(h, " * (an array parameter T a[N]: sc[k].i = (intptr_t)e, e a pxlc_scalar[N + 1] of the elements,\n"
                 " * integers in i, floats in f, and e[N] zero; read only, borrowed for the call)\n");
  switch (D->kind) {
  case D_KERNEL:
    if (D->nouts) { /* several outputs: out[0 .. nouts) */
      sb_printf(h, " * out: %d images of the same size, out[k] output k:", D->nouts);
      for (int k = 0; k < D->nouts; k++)
        sb_printf(h, "%s image %s %s", k ? "," : "", type_str(D->out_types[k], t), D->out_names[k]);
      sb_printf(h, ".\n * With out[0].data NULL, sets every out[k].width and .height to the outputs' size and\n"
                   " * returns 0; else each out[k] must have that size (-1 if not). */\n");
      sb_printf(h, "int %s(const pxlc_image *in, const pxlc_scalar *sc, pxlc_image *out, int nthreads);\n", name);
      break;
    }
    /* fall through */
  case D_PIPELINE:
    sb_printf(h, " * out: image %s. With out->data NULL, sets out->width and out->height to the output's\n"
                 " * size and returns 0; else out must have that size (-1 if not)%s. */\n",
              type_str(D->type, t), D->kind == D_PIPELINE ? "; -1 also when out of memory" : "");
    sb_printf(h, "int %s(const pxlc_image *in, const pxlc_scalar *sc, pxlc_image *out, int nthreads);\n", name);
    break;
  case D_REDUCE:
    sb_printf(h, " * res: the %s %s (res->%c); pos: its position (x, y) for argmin/argmax, else -1. */\n",
              redop_name(D->redop), type_str(D->type, t), scalar_is_float(D->type.s) ? 'f' : 'i');
    sb_printf(h, "void %s(const pxlc_image *in, const pxlc_scalar *sc, pxlc_scalar *res, int32_t *pos, int nthreads);\n",
              name);
    break;
  case D_HISTOGRAM:
    sb_printf(h, " * bins: %d %s. */\n", D->nbins,
              D->binop != BIN_SUM ? (D->weighted_float ? "doubles, minima or maxima" : "int64_t minima or maxima")
              : D->weighted_float ? "doubles"
                                  : "int64_t counts");
    sb_printf(h, "void %s(const pxlc_image *in, const pxlc_scalar *sc, void *bins, int nthreads);\n", name);
    break;
  case D_FUNC: /* not an entry point */
    break;
  }
}

/* Around the prelude and the thread helpers in the .c: not every helper is used. */
static const char quiet_on[] =
    "#if defined(__GNUC__)\n#pragma GCC diagnostic push\n#pragma GCC diagnostic ignored \"-Wunused-function\"\n"
    "#pragma GCC diagnostic ignored \"-Wunused-parameter\"\n#endif\n";
static const char quiet_off[] = "#if defined(__GNUC__)\n#pragma GCC diagnostic pop\n#endif\n";

/* The C name of entry D: BASE_NAME, and for an instance of a generic declaration
 * BASE_NAME_TYPE (blur3 for u16: base_blur3_u16). */
static void entry_cname(StrBuf *name, const char *base, const Decl *D) {
  sb_clear(name);
  sb_printf(name, "%s_%s", base, D->name);
  if (D->tparam) sb_printf(name, "_%s", scalar_name(D->targ.s));
}

/* PXL_EARG when two entries would get the same C name (a kernel blur3_u16 beside the u16
 * instance of a generic blur3). */
static int unique_cnames(const Program *p, const char *base, Err *err) {
  StrBuf a = {0}, o = {0};
  int rc = PXL_OK;
  for (int i = 0; i < p->ndecls && !rc; i++) {
    entry_cname(&a, base, p->decls[i]);
    for (int j = 0; j < i && !rc; j++) {
      entry_cname(&o, base, p->decls[j]);
      if (a.s && o.s && !strcmp(a.s, o.s))
        rc = err_set(err, PXL_EARG, "two entries would both be the C function %s ('%s' and an instance of generic "
                     "'%s'); rename one", a.s, p->decls[i]->name, p->decls[j]->name);
    }
  }
  sb_free(&a);
  sb_free(&o);
  return rc;
}

int gen_c_program(const Program *p, const char *base, StrBuf *c, StrBuf *h, Err *err) {
  StrBuf B = {0}, decls = {0}, name = {0};
  aot_prefix(&B, base);
  const char *b = B.s ? B.s : "";
  if (unique_cnames(p, b, err)) {
    sb_free(&B);
    return err->code;
  }
  sb_printf(h, "/* generated by pxl %s from ", PXL_VERSION_STRING);
  comment_text(h, p->filename);
  sb_printf(h, "; do not edit.\n *\n"
               " * Entry ENTRY of the source is the function %s_ENTRY (the base name of the output as\n"
               " * an identifier, an underscore, the entry's name; a generic entry's instance for type T\n"
               " * is ENTRY_T); all functions are documented below.\n"
               " *\n"
               " * Compile the .c as pxl's CPU backend does, for its speed:\n"
               " *   cc -std=c11 -O3 -march=native -fopenmp -ffp-contract=off -fno-math-errno -c FILE.c\n"
               " * and link with -fopenmp -lm. -march=native uses every instruction of the machine that\n"
               " * compiles (AVX2, AVX-512: edges.pxl's pipeline ran 2.7 times faster): the object may fail with\n"
               " * an illegal instruction on an older processor. To ship it, name the oldest target\n"
               " * instead (-march=x86-64-v3, ...) or leave the flag out. -ffp-contract=off is needed for\n"
               " * floating-point results equal to pxl's reference interpreter (no fused multiply-add).\n"
               " * Without -fopenmp the code runs on one thread.\n"
               " * nthreads: 0 = all cores (OpenMP), else that many threads.\n */\n", b);
  sb_printf(h, "#ifndef PXLC_%s_H\n#define PXLC_%s_H\n", b, b);
  sb_append(&decls, abi_text, sizeof abi_text - 1);
  sb_printf(&decls, "#ifdef __cplusplus\nextern \"C\" {\n#endif\n");
  for (int i = 0; i < p->ndecls; i++) {
    entry_cname(&name, b, p->decls[i]);
    header_entry(&decls, p->decls[i], name.s);
  }
  sb_printf(&decls, "\n#ifdef __cplusplus\n}\n#endif\n");
  sb_append(h, decls.s, decls.len);
  sb_printf(h, "#endif\n");

  sb_printf(c, "/* generated by pxl %s from ", PXL_VERSION_STRING);
  comment_text(c, p->filename);
  sb_printf(c, "; do not edit; see the header for how to compile it */\n");
  sb_printf(c, "#if !defined(_OPENMP) && defined(__GNUC__)\n#pragma GCC diagnostic ignored \"-Wunknown-pragmas\"\n#endif\n");
  sb_append(c, quiet_on, sizeof quiet_on - 1);
  sb_printf(c, "#define PXR_AVX512_HELPERS 1\n");
  sb_append(c, pxl_prelude_text, strlen(pxl_prelude_text));
  sb_append(c, decls.s, decls.len);
  sb_append(c, threads_text, sizeof threads_text - 1);
  sb_append(c, quiet_off, sizeof quiet_off - 1);
  Border borders[64];
  int rc = PXL_OK;
  StrBuf P = {0}; /* "<B>_<i>": the statics of declaration i */
  for (int i = 0; i < p->ndecls && !rc; i++) {
    const Decl *D = p->decls[i];
    entry_cname(&name, b, D);
    sb_clear(&P);
    sb_printf(&P, "%s_%d", b, i);
    if (name.oom || P.oom) {
      rc = err_set(err, PXL_ENOMEM, "out of memory generating C");
      break;
    }
    const Decl *G = D->global ? D : NULL;
    for (int v = 0; D->kind == D_PIPELINE && v < D->nvalues && !G; v++)
      if (D->values[v].callee && D->values[v].callee->global) G = D->values[v].callee;
    if (G) {
      if (G == D)
        rc = err_set(err, PXL_EARG, "'%s' is a global operator (%s), whose pass is in pxl's operator library, not in "
                     "the C that pxl compile writes (run it with pxl run or the C API)", D->name,
                     global_name((GlobalOp)(D->global - 1)));
      else
        rc = err_set(err, PXL_EARG, "'%s' calls global operator '%s' (%s), whose pass is in pxl's operator library, "
                     "not in the C that pxl compile writes (run it with pxl run or the C API)", D->name, G->name,
                     global_name((GlobalOp)(G->global - 1)));
      break;
    }
    if (D->kind == D_PIPELINE && D->nouts) {
      rc = err_set(err, PXL_EARG, "pipeline '%s' returns %d images; pxl compile writes pipelines that return one "
                   "(run this one with pxl run or the C API)", D->name, D->nouts);
      break;
    }
    if (D->kind == D_PIPELINE) {
      const Decl *FD = D->fused[COST_CPU] ? D->fused[COST_CPU] : D; /* what the CPU backend runs */
      for (int v = 0; v < D->nvalues && !rc; v++)
        if (D->values[v].kind != PV_IMAGE)
          rc = err_set(err, PXL_EARG, "pipeline '%s' computes %s '%s' with %s '%s'; pxl compile writes pipelines of "
                       "kernels only (run this one with pxl run or the C API)", D->name,
                       D->values[v].kind == PV_SCALAR ? "the value" : "the bins", D->values[v].name,
                       D->values[v].kind == PV_SCALAR ? "reduction" : "histogram", D->values[v].callee->name);
      for (int v = 0; v < FD->nvalues && !rc; v++) {
        const PipeValue *pv = &FD->values[v];
        if (!pv->callee || pv->fused) continue;
        for (int j = 0; j < pv->nargs; j++)
          if (pv->callee->params[j]->is_image) borders[pv->callee->params[j]->img_index] = pv->args[j].border;
        StrBuf a = {0}, f = {0}, z = {0};
        sb_printf(&a, "%sp%d", P.s, v);
        sb_printf(&f, "%ss%d", P.s, v);
        sb_printf(&z, "%sz%d", P.s, v);
        if (a.oom || f.oom || z.oom) rc = err_set(err, PXL_ENOMEM, "out of memory generating C");
        if (!rc) rc = emit_instance(c, pv->callee, borders, a.s, f.s, false, err);
        if (!rc) emit_size_fn(c, pv->callee, z.s);
        sb_free(&a);
        sb_free(&f);
        sb_free(&z);
      }
      if (rc) break;
      pipeline_fn(c, FD, P.s);
      StrBuf f = {0}, z = {0};
      sb_printf(&f, "%ss", P.s);
      sb_printf(&z, "%sz", P.s);
      emit_sized_entry(c, name.s, z.s ? z.s : "", f.s ? f.s : "", true);
      sb_free(&f);
      sb_free(&z);
      continue;
    }
    for (int j = 0; j < D->nparams; j++)
      if (D->params[j]->is_image) borders[D->params[j]->img_index] = D->params[j]->border;
    StrBuf a = {0}, f = {0}, z = {0};
    sb_printf(&a, "%sp", P.s);
    sb_printf(&f, "%ss", P.s);
    sb_printf(&z, "%sz", P.s);
    if (a.oom || f.oom || z.oom) {
      rc = err_set(err, PXL_ENOMEM, "out of memory generating C");
    } else if (D->kind == D_KERNEL && D->nouts) { /* one instance per output, one exported entry */
      for (int k = 0; k < D->nouts && !rc; k++) {
        StrBuf ak = {0}, fk = {0};
        sb_printf(&ak, "%s%d", a.s, k);
        sb_printf(&fk, "%s%d", f.s, k);
        rc = ak.oom || fk.oom ? err_set(err, PXL_ENOMEM, "out of memory generating C")
                              : emit_instance(c, D->outs[k], borders, ak.s, fk.s, false, err);
        sb_free(&ak);
        sb_free(&fk);
      }
      if (!rc) {
        emit_size_fn(c, D, z.s);
        emit_outputs_entry(c, D, name.s, z.s, f.s);
      }
    } else if (D->kind == D_KERNEL) {
      rc = emit_instance(c, D, borders, a.s, f.s, false, err);
      if (!rc) {
        emit_size_fn(c, D, z.s);
        emit_sized_entry(c, name.s, z.s, f.s, false);
      }
    } else {
      rc = emit_instance(c, D, borders, a.s, name.s, true, err);
    }
    sb_free(&a);
    sb_free(&f);
    sb_free(&z);
  }
  bool oom = B.oom || decls.oom || name.oom || P.oom || c->oom || h->oom;
  sb_free(&B);
  sb_free(&decls);
  sb_free(&name);
  sb_free(&P);
  if (rc) return rc;
  if (oom) return err_set(err, PXL_ENOMEM, "out of memory generating C");
  return PXL_OK;
}
