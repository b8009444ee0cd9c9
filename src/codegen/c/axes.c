/*
 * axes.c - axis values of the C generator: what a kernel computes from x alone or from
 * y alone, computed once per column or once per row instead of once per pixel.
 *
 * A resize computes, for every output pixel, the source position of its column (a
 * multiply, a floor, a weight) and of its row, then reads four pixels through border
 * functions. Per pixel, only the reads and the blend depend on both coordinates. The
 * plan (cg_axes_plan) finds:
 *   - top-level declarations, before any statement that can return, of a variable
 *     assigned nowhere else, whose initialiser depends on x alone (a column value), on y
 *     alone (a row value) or on neither (a uniform value), through the coordinates, the
 *     scalar parameters, image sizes, constant tables and earlier such declarations;
 *   - absolute reads img.at(X, Y) whose X depends on x alone and Y on y alone (either may
 *     be uniform, not both), with no user function call in either index.
 * The entry (gen_c.c) computes the column values and each read's column index, already
 * mapped by the image's border mode and times its channels, into tables of the output's
 * width once per launch; each row computes its row values and each read's row offset
 * once; the pixel function (variant V_AXES) takes them as arguments and reads
 * i<k>[ar<j> + aq<q>[x] + lane]. Every pixel computed the same declarations before
 * (nothing before them returns) from the same x or y, and every index expression is
 * total (no calls; pxl's division defines a zero divisor), so computing them for every
 * column and every row is the same arithmetic, in other places. On GPUs (axes_regs) a
 * thread owns one column and several rows: its column values and indices are scalars
 * computed once (codegen/gpu/gen_gpu.c, kernel_axes).
 */
#include <stdio.h>
#include <string.h>

#include "codegen/c/emit.h"

#define OUT(...) sb_printf(g->o, __VA_ARGS__)

enum { AX_X = 1, AX_Y = 2, AX_NO = 4 };

/* The declaration number of local variable v among the planned ones, or -1. */
static int decl_of(const Axes *A, const Var *v) {
  for (int i = 0; i < A->ndecl; i++)
    if (A->decl[i]->var == v) return i;
  return -1;
}

/* What value n depends on: AX_X, AX_Y (either or both), or AX_NO for anything else
 * (pixels, other locals, vectors). 0: uniform. */
static int dep(const Axes *A, const Node *n) {
  if (!n) return 0;
  if (n->type.lanes != 1) return AX_NO;
  int d = 0;
  switch (n->kind) {
  case ND_NUM: case ND_IMGDIM:
    return 0;
  case ND_COORD:
    return n->ival == 0 ? AX_X : n->ival == 1 ? AX_Y : 0;
  case ND_VAR: {
    if (n->var->param) return n->var->len ? AX_NO : 0;
    int i = decl_of(A, n->var);
    return i < 0 ? AX_NO : A->dim[i];
  }
  case ND_INDEX: /* a constant table or an array parameter; local arrays change */
    if (!n->var->is_const && !n->var->param) return AX_NO;
    return dep(A, n->a);
  case ND_FCALL: /* functions see only their arguments (check.c) */
    if (!n->func || !n->func->body) return AX_NO;
    break;
  case ND_CALL: case ND_CAST: case ND_NEG: case ND_NOT: case ND_BITNOT: case ND_ADD: case ND_SUB: case ND_MUL:
  case ND_DIV: case ND_MOD: case ND_SHL: case ND_SHR: case ND_BITAND: case ND_BITOR: case ND_BITXOR: case ND_EQ:
  case ND_NE: case ND_LT: case ND_LE: case ND_GT: case ND_GE: case ND_LOGAND: case ND_LOGOR: case ND_COND:
    break;
  default:
    return AX_NO;
  }
  d |= dep(A, n->a) | dep(A, n->b) | dep(A, n->c);
  for (int i = 0; i < n->nargs; i++) d |= dep(A, n->args[i]);
  return d;
}

static bool calls(const Node *n, const void *ctx) {
  (void)ctx;
  return n->kind == ND_FCALL;
}

static bool returns(const Node *n, const void *ctx) {
  (void)ctx;
  return n->kind == ND_RETURN;
}

static bool assigns(const Node *n, const void *ctx) {
  return (n->kind == ND_ASSIGN || n->kind == ND_LANESET || n->kind == ND_ISET) && n->var == ctx;
}

/* Structurally equal index expressions share one table. */
static bool same(const Node *a, const Node *b) {
  if (a == b) return true;
  if (!a || !b || a->kind != b->kind || !type_eq(a->type, b->type) || a->nargs != b->nargs || a->ival != b->ival ||
      a->var != b->var || a->param != b->param || a->func != b->func || a->builtin != b->builtin ||
      memcmp(&a->fval, &b->fval, sizeof a->fval) != 0)
    return false;
  if (!same(a->a, b->a) || !same(a->b, b->b) || !same(a->c, b->c)) return false;
  for (int i = 0; i < a->nargs; i++)
    if (!same(a->args[i], b->args[i])) return false;
  return true;
}

/* The index of (e, image k) in list/img (n entries), added if new; -1 when full. */
static int intern(const Node **list, int *img, int *n, const Node *e, int k) {
  for (int i = 0; i < *n; i++)
    if (img[i] == k && same(list[i], e)) return i;
  if (*n == PXL_CG_MAX_AXES) return -1;
  list[*n] = e;
  img[*n] = k;
  return (*n)++;
}

static void find_reads(Axes *A, const Node *n, bool list) {
  for (; n; n = list ? n->next : NULL) {
    if (n->kind == ND_AT && A->nread < PXL_CG_MAX_AXES && !ir_any(n->a, calls, NULL) && !ir_any(n->b, calls, NULL)) {
      int dx = dep(A, n->a), dy = dep(A, n->b);
      if (!(dx & ~AX_X) && !(dy & ~AX_Y) && (dx | dy)) {
        int k = n->param->img_index;
        int nq = A->nq, nr = A->nr;
        int q = intern(A->qx, A->qimg, &A->nq, n->a, k), r = intern(A->ry, A->rimg, &A->nr, n->b, k);
        if (q >= 0 && r >= 0) {
          A->read[A->nread] = n;
          A->rq[A->nread] = q;
          A->rr[A->nread++] = r;
        } else { /* a table list is full: forget what this read added */
          A->nq = nq;
          A->nr = nr;
        }
        continue;
      }
    }
    const Node *kids[5] = {n->a, n->b, n->c, n->init, n->step};
    for (int i = 0; i < 5; i++) find_reads(A, kids[i], false);
    find_reads(A, n->body, true);
    for (int i = 0; i < n->nargs; i++) find_reads(A, n->args[i], false);
  }
}

bool cg_axes_plan(Gen *g, Axes *A) {
  const Decl *D = g->D;
  memset(A, 0, sizeof *A);
  g->axes = NULL;
  if (D->kind != D_KERNEL || D->skel != SK_GATHER || D->scan || D->sep || D->nouts || D->tile[0] || !D->body)
    return false;
  for (const Node *s = D->body->body; s && A->ndecl < PXL_CG_MAX_AXES; s = s->next) {
    if (ir_any_in(s, returns, NULL)) break;
    if (s->kind != ND_DECL || !s->a || s->var->len || s->var->type.lanes != 1 || ir_any(D->body, assigns, s->var))
      continue;
    int d = dep(A, s->a);
    if (d == (AX_X | AX_Y) || (d & AX_NO)) continue;
    A->decl[A->ndecl] = s;
    A->dim[A->ndecl++] = d;
  }
  find_reads(A, D->body->body, true);
  bool columns = A->nread > 0;
  for (int i = 0; i < A->ndecl; i++)
    if (A->dim[i] == AX_X) columns = true;
  if (!columns) return false; /* rows alone: the C compiler hoists them itself */
  g->axes = A;
  return true;
}

void cg_axes_params(Gen *g) {
  const Axes *A = g->axes;
  for (int i = 0; i < A->ndecl; i++) {
    const char *T = cg_ctype(A->decl[i]->var->type.s);
    const char *rs = g->plain_ptrs ? "" : "PXR_RESTRICT ";
    if (A->dim[i] == AX_X && g->axes_regs) OUT(", %s ac%d", T, i);
    else if (A->dim[i] == AX_X) OUT(", const %s *%sac%d", T, rs, i);
    else OUT(", %s v%d", T, A->decl[i]->var->slot);
  }
  for (int i = 0; i < A->nq; i++)
    if (g->axes_regs) OUT(", int32_t aq%d", i);
    else OUT(", const int32_t *%saq%d", g->plain_ptrs ? "" : "PXR_RESTRICT ", i);
  for (int i = 0; i < A->nr; i++) OUT(", ptrdiff_t ar%d", i);
}

void cg_axes_voids(Gen *g) {
  const Axes *A = g->axes;
  for (int i = 0; i < A->ndecl; i++)
    if (A->dim[i] == AX_X) OUT(" (void)ac%d;", i);
    else OUT(" (void)v%d;", A->decl[i]->var->slot);
  for (int i = 0; i < A->nq; i++) OUT(" (void)aq%d;", i);
  for (int i = 0; i < A->nr; i++) OUT(" (void)ar%d;", i);
}

void cg_axes_args(Gen *g, StrBuf *buf, const char *sfx) {
  const Axes *A = g->axes;
  for (int i = 0; i < A->ndecl; i++)
    if (A->dim[i] == AX_X) sb_printf(buf, ", ac%d%s", i, sfx);
    else sb_printf(buf, ", v%d", A->decl[i]->var->slot);
  for (int i = 0; i < A->nq; i++) sb_printf(buf, ", aq%d%s", i, sfx);
  for (int i = 0; i < A->nr; i++) sb_printf(buf, ", ar%d", i);
}

bool cg_axes_decl(Gen *g, const Node *s) {
  const Axes *A = g->axes;
  if (!(g->variant & V_AXES)) return false;
  for (int i = 0; i < A->ndecl; i++) {
    if (A->decl[i] != s) continue;
    if (A->dim[i] == AX_X) {
      for (int d = 0; d < g->depth; d++) OUT("  ");
      OUT("%s v%d = ac%d%s; (void)v%d;\n", cg_ctype(s->var->type.s), s->var->slot, i, g->axes_regs ? "" : "[x]",
          s->var->slot);
    }
    return true; /* a row or uniform value: an argument */
  }
  return false;
}

/* Whether image k's separable reads may load 4 bytes (V_WIDE): pixels of 1 or 2 bytes
 * whose indices the border mode maps inside (not constant). The 3 (1) bytes past a pixel
 * of any row but the last lie in the next row; the row test keeps the last row out. */
static bool wide_image(const Gen *g, int k) {
  Scalar t = cg_image_param(g->D, k)->type.s;
  return (t == T_U8 || t == T_U16 || t == T_I16) && g->borders[k].kind != B_CONSTANT;
}

bool cg_axes_wide(const Gen *g) {
  const Axes *A = g->axes;
  for (int i = 0; A && i < A->nread; i++)
    if (wide_image(g, A->read[i]->param->img_index)) return true;
  return false;
}

void cg_axes_wide_helpers(Gen *g) {
  /* A 4-byte load at any address (aligned(1)) whose low bytes are the pixel: on a
   * little-endian target only (<pfx>_WIDE). Not memcpy: gcc treats its load as aliasing
   * every store and then vectorises no gather; the output is a restrict parameter of the
   * row function and the images are only read. */
  OUT("#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__\n#define %s_WIDE 1\n#else\n#define %s_WIDE 0\n#endif\n",
      g->pfx, g->pfx);
  OUT("typedef uint32_t %s_u32u __attribute__((aligned(1)));\n", g->pfx);
  OUT("PXR_FN uint32_t %s_ld4(const uint8_t *p) { return *(const %s_u32u *)p; }\n", g->pfx, g->pfx);
}

void cg_axes_wide_test(Gen *g, const char *ind) {
  const Axes *A = g->axes;
  OUT("%sconst int wide_ = %s_WIDE", ind, g->pfx);
  for (int r = 0; r < A->nr; r++) {
    int k = A->rimg[r];
    bool used = false;
    for (int i = 0; i < A->nread; i++)
      if (A->rr[i] == r && wide_image(g, k)) used = true;
    if (used) /* the last element a 4-byte load can touch, elements 3 (1) past the row's */
      OUT(" && ar%d + %d <= (ptrdiff_t)(h%d - 1) * p%d", r, scalar_size(cg_image_param(g->D, k)->type.s) == 1 ? 3 : 1, k, k);
  }
  OUT(";\n");
}

bool cg_axes_read(Gen *g, const Node *n, int lane) {
  const Axes *A = g->axes;
  if (!(g->variant & V_AXES)) return false;
  for (int i = 0; i < A->nread; i++) {
    if (A->read[i] != n) continue;
    int k = n->param->img_index, q = A->rq[i], r = A->rr[i];
    const char *at = g->axes_regs ? "" : "[x]";
    if ((g->variant & V_WIDE) && wide_image(g, k)) { /* the low bytes of a 4-byte load */
      Scalar t = n->param->type.s;
      OUT("((%s)(%s)%s_ld4((const uint8_t *)(i%d + ar%d + aq%d%s + %d)))", cg_ctype(t), t == T_U8 ? "uint8_t" : "uint16_t",
          g->pfx, k, r, q, at, lane);
      return true;
    }
    if (g->borders[k].kind == B_CONSTANT) {
      OUT("(((ptrdiff_t)aq%d%s | ar%d) < 0 ? ", q, at, r);
      cg_border_value(g, k);
      OUT(" : i%d[ar%d + aq%d%s + %d])", k, r, q, at, lane);
    } else {
      OUT("i%d[ar%d + aq%d%s + %d]", k, r, q, at, lane);
    }
    return true;
  }
  return false;
}

/* `ind`{ const int i_ = e; name = i_ mapped by image k's border mode onto a column
 * (times the channels) or a row (times the pitch), -1 outside for a constant border; } */
static void mapped(Gen *g, const char *ind, const char *name, const Node *e, int k, bool row) {
  const char *T = row ? "ptrdiff_t" : "int32_t";
  char n[16], scale[16];
  snprintf(n, sizeof n, "%c%d", row ? 'h' : 'w', k);
  if (row) snprintf(scale, sizeof scale, "p%d", k);
  else snprintf(scale, sizeof scale, "%d", cg_image_param(g->D, k)->type.lanes);
  OUT("%s{ const int i_ = ", ind);
  cg_expr(g, e, 0);
  if (g->borders[k].kind == B_CONSTANT)
    OUT("; %s = pxr_inside(i_, %s) ? (%s)i_ * %s : -1; }\n", name, n, T, scale);
  else
    OUT("; %s = (%s)(pxr_inside(i_, %s) ? i_ : %s(i_, %s)) * %s; }\n", name, T, n, cg_border_index_fn(g->borders[k].kind),
        n, scale);
}

static void decl_value(Gen *g, int i, const char *ind) {
  const Node *s = g->axes->decl[i];
  OUT("%sconst %s v%d = ", ind, cg_ctype(s->var->type.s), s->var->slot);
  cg_expr(g, s->a, 0);
  OUT(";\n");
}

static void uniform_values(Gen *g, const char *ind) {
  for (int i = 0; i < g->axes->ndecl; i++)
    if (!g->axes->dim[i]) decl_value(g, i, ind);
}

/* The column values and mapped column indices of column x (in scope), stored into
 * ac<i><sfx> and aq<q><sfx>. */
static void column_values(Gen *g, const char *ind, const char *sfx) {
  const Axes *A = g->axes;
  for (int i = 0; i < A->ndecl; i++)
    if (A->dim[i] == AX_X) {
      decl_value(g, i, ind);
      OUT("%sac%d%s = v%d;\n", ind, i, sfx, A->decl[i]->var->slot);
    }
  for (int i = 0; i < A->nq; i++) {
    char name[32];
    snprintf(name, sizeof name, "aq%d%s", i, sfx);
    mapped(g, ind, name, A->qx[i], A->qimg[i], false);
  }
}

void cg_axes_tables(Gen *g) {
  const Axes *A = g->axes;
  int variant = g->variant;
  g->variant = V_EDGE;
  OUT("  /* axis values (codegen/c/axes.c): uniform ones, then tables over the columns */\n");
  uniform_values(g, "  ");
  for (int i = 0; i < A->ndecl; i++)
    if (A->dim[i] == AX_X) {
      const char *T = cg_ctype(A->decl[i]->var->type.s);
      OUT("  %s *ac%d = (%s *)malloc(sizeof(%s) * (size_t)(W > 0 ? W : 1));\n", T, i, T, T);
    }
  for (int i = 0; i < A->nq; i++) OUT("  int32_t *aq%d = (int32_t *)malloc(sizeof(int32_t) * (size_t)(W > 0 ? W : 1));\n", i);
  OUT("  const int axes_ = rx0 == 0 && rx1 == W && ry0 == 0 && ry1 == H");
  for (int i = 0; i < A->ndecl; i++)
    if (A->dim[i] == AX_X) OUT(" && ac%d", i);
  for (int i = 0; i < A->nq; i++) OUT(" && aq%d", i);
  OUT(";\n  if (axes_)\n    for (int x = 0; x < W; x++) {\n");
  column_values(g, "      ", "[x]");
  OUT("    }\n");
  g->variant = variant;
}

void cg_axes_columns(Gen *g, const char *ind, int PX) {
  const Axes *A = g->axes;
  int variant = g->variant;
  g->variant = V_EDGE;
  uniform_values(g, ind);
  char in2[64], sfx[16];
  snprintf(in2, sizeof in2, "%s  ", ind);
  for (int c = 0; c < PX; c++) {
    for (int i = 0; i < A->ndecl; i++)
      if (A->dim[i] == AX_X) OUT("%s%s ac%d_%d;\n", ind, cg_ctype(A->decl[i]->var->type.s), i, c);
    for (int i = 0; i < A->nq; i++) OUT("%sint32_t aq%d_%d;\n", ind, i, c);
    OUT("%s{\n%sconst int x = xs + %d;\n", ind, in2, c);
    snprintf(sfx, sizeof sfx, "_%d", c);
    column_values(g, in2, sfx);
    OUT("%s}\n", ind);
  }
  g->variant = variant;
}

void cg_axes_row(Gen *g, const char *ind) {
  const Axes *A = g->axes;
  int variant = g->variant;
  g->variant = V_EDGE;
  for (int i = 0; i < A->ndecl; i++)
    if (A->dim[i] == AX_Y) decl_value(g, i, ind);
  for (int i = 0; i < A->nr; i++) {
    char name[16];
    snprintf(name, sizeof name, "ar%d", i);
    OUT("%sptrdiff_t ar%d;\n", ind, i);
    mapped(g, ind, name, A->ry[i], A->rimg[i], true);
  }
  g->variant = variant;
}

void cg_axes_free(Gen *g) {
  const Axes *A = g->axes;
  for (int i = 0; i < A->ndecl; i++)
    if (A->dim[i] == AX_X) OUT("  free(ac%d);\n", i);
  for (int i = 0; i < A->nq; i++) OUT("  free(aq%d);\n", i);
}
