/*
 * packed.c - pixel functions that compute two pixels at once, in the 16-bit halves of a
 * 32-bit word (the GPU generators' "pk" functions).
 *
 * A byte kernel whose pixel is computed from bytes by minima, maxima and sums or
 * differences of two bytes (a median network, a dilation's start value, a morphological
 * gradient's max - min) runs on pairs of pixels x and x + 2 of a thread's row: each value
 * is a word whose low half is pixel x's and whose high half pixel x + 2's, and one
 * PXG_MIN2 / PXG_MAX2 / PXG_SUB2 (on Hopper one instruction: VIMNMX on 16-bit halves,
 * the same rate as a 32-bit minimum) does the work of two. Pairs x, x + 2 rather than
 * x, x + 1: the even and odd bytes of a 4-byte word are two such pairs, one byte
 * permute or mask each.
 *
 * Every value is in one of three classes, each half of a word holding the value of one
 * pixel exactly:
 *   BYTE   0..255: reads of u8 pixels, u8 variables, literals 0..255, the minimum or
 *          maximum of two BYTEs, a BYTE converted to any integer type that holds 0..255;
 *   SHORT  -255..510 as a signed 16-bit half: the sum or difference of two BYTEs in a
 *          signed type (what the checker makes of `u8 - u8`: i32), kept by conversions
 *          to signed types of 16 bits or more, made BYTE again by a conversion to u8
 *          (saturation: a signed maximum with 0, then an unsigned minimum with 255);
 *   WIDE   0..65535 as an unsigned 16-bit half: the sum of a separable window of u8
 *          pixels (blur3's s, given as the row pass's value), that plus a BYTE, a WIDE or
 *          a literal, that or a BYTE divided by a literal (the analysis' 16-bit multiplier: two
 *          multiplies and shifts a pair), converted to an integer type that holds it,
 *          made BYTE by a conversion to u8 (an unsigned minimum with 255 where it can
 *          pass 255) - wherever value_range bounds it within 0..65535.
 *   MASK   0 or 0xffff in each half (false, true): a comparison of two values of the
 *          classes above (BYTEs and SHORTs as signed halves, BYTEs and WIDEs as unsigned
 *          ones; a literal counts as the class its value fits), &&, || and ! of masks or
 *          of values (a value is true where its half is not 0); it selects between two
 *          values (`c ? a : b`: the arms' class, a BYTE or a SHORT or a WIDE) and
 *          becomes a BYTE 0 or 1 where it is converted to an integer type.
 * Loops the analysis unrolls (NF_UNROLL: a counter from one literal to another) are
 * unrolled here too, their counters standing for their values in the reads' offsets
 * (canny's grow: a 3 x 3 maximum, then a comparison and a choice, on pairs).
 * Anything else (coordinates, scalar parameters, other operators, control flow) is not
 * packed: the generator then calls the one-pixel functions as before. The halves never
 * carry into each other: BYTE operations stay within 0..255 and SHORT within
 * -255..510, so every operation is exact lane by lane.
 */
#include "codegen/gpu/packed.h"

#include <stdint.h>

#include "codegen/c/emit.h"

#define OUT(...) sb_printf(g->o, __VA_ARGS__)

typedef enum { PK_NO, PK_BYTE, PK_SHORT, PK_WIDE, PK_MASK } PkClass;

/* The counters of the unrolled loops around the statement being classed or emitted,
 * innermost last, and while emitting each one's value in the copy of the loop's body
 * being emitted (classing: the first value). Per thread: programs may be compiled on
 * several at once. */
#define PK_COUNTERS 8
static _Thread_local struct {
  const Var *var[PK_COUNTERS];
  int64_t val[PK_COUNTERS];
  int n;
} ctrs;

/* Whether integer type s holds v (a conversion keeps it; one that would saturate is
 * not followed by const_int). */
static bool fits(Scalar s, int64_t v) {
  int bits = 8 * scalar_size(s);
  if (bits >= 64) return scalar_is_signed(s) || v >= 0;
  return scalar_is_signed(s) ? v >= -(INT64_C(1) << (bits - 1)) && v < (INT64_C(1) << (bits - 1))
                             : v >= 0 && v < (INT64_C(1) << bits);
}

/* The value of an integer constant expression (a literal, negated or converted). */
static bool const_int(const Node *n, int64_t *v) {
  if (!n) return false;
  if (n->kind == ND_NUM && !scalar_is_float(n->type.s)) return *v = n->ival, true;
  if (n->kind == ND_CAST && !scalar_is_float(n->type.s)) return const_int(n->a, v) && fits(n->type.s, *v);
  if (n->kind == ND_NEG && const_int(n->a, v)) return *v = -*v, true;
  return false;
}

/* The value of a read's offset: an integer constant expression in which the counters of
 * the unrolled loops around the read stand for their values (ctrs). */
static bool offset_value(const Node *n, int64_t *v) {
  int64_t a, b;
  if (!n || n->type.lanes != 1 || scalar_is_float(n->type.s)) return false;
  switch (n->kind) {
  case ND_VAR:
    for (int i = ctrs.n - 1; i >= 0; i--)
      if (ctrs.var[i] == n->var) return *v = ctrs.val[i], true;
    return false;
  case ND_CAST: return offset_value(n->a, v) && fits(n->type.s, *v);
  case ND_NEG: return offset_value(n->a, v) && (*v = -*v, true);
  case ND_ADD:
  case ND_SUB:
    if (!offset_value(n->a, &a) || !offset_value(n->b, &b)) return false;
    *v = n->kind == ND_ADD ? a + b : a - b;
    return fits(n->type.s, *v);
  default: return const_int(n, v);
  }
}

/* A loop the analysis unrolls (NF_UNROLL: its counter, assigned nowhere else, from one
 * literal to another by 1): the counter and its first and last values. */
static bool unrolled(const Node *f, const Var **v, int64_t *lo, int64_t *hi) {
  const Node *init = f->init, *cond = f->a;
  int64_t a, b;
  if (!(f->flags & NF_UNROLL) || !init || init->next || init->kind != ND_DECL || !init->var || !cond ||
      (cond->kind != ND_LT && cond->kind != ND_LE) || !const_int(init->a, &a) || !const_int(ir_strip_casts(cond->b), &b))
    return false;
  *v = init->var, *lo = a, *hi = b - (cond->kind == ND_LT);
  return *hi >= *lo;
}

/* A local u8 scalar variable (not a parameter, not an array). */
static bool byte_var(const Var *v) { return v && !v->param && !v->len && !v->is_const && v->type.s == T_U8 && v->type.lanes == 1; }

/* Integer type s holds every value of lo..hi: of a BYTE (0..255), a SHORT (-255..510). */
static bool holds(Scalar s, int64_t lo, int64_t hi) { return !scalar_is_float(s) && fits(s, lo) && fits(s, hi); }
static bool holds_byte(Scalar s) { return holds(s, 0, 255); }
static bool holds_short(Scalar s) { return holds(s, -255, 510); }

/* The separable window of a variant: Decl.sep_x with V_XREADS (reads beside the window
 * loop given as q<j>), else Decl.sep. */
static const Separable *psep(const Decl *D, int variant) { return (variant & V_XREADS) ? D->sep_x : D->sep; }

/* Which of sep_x's reads beside the window read n is (V_XREADS): its index j, or -1. */
static int xread(const Decl *D, int variant, const Node *n) {
  const Separable *S = psep(D, variant);
  int64_t dx, dy;
  if (!(variant & V_XREADS) || !S || n->kind != ND_READ || n->param != S->img || !offset_value(n->a, &dx) ||
      !offset_value(n->b, &dy))
    return -1;
  for (int j = 0; j < S->nxr; j++)
    if (S->xr_dx[j] == dx && S->xr_dy[j] == dy) return j;
  return -1;
}

/* The separable window's accumulator that v is, when it is a sum whose values are given
 * to the pixel function (V_ROWSUM): an unweighted sum of the u8 image's pixels, held in
 * an integer scalar. -1 otherwise. */
static int sum_acc(const Decl *D, int variant, const Var *v) {
  const Separable *S = psep(D, variant);
  if (!(variant & V_ROWSUM) || !S || !v || S->img->type.s != T_U8) return -1;
  for (int i = 0; i < S->nacc; i++)
    if (S->acc[i] == v && S->op[i] < 0 && !S->wy[i] && !S->wx[i] && !S->wy_node[i] && v->type.lanes == 1 &&
        !v->len && !v->param && !scalar_is_float(v->type.s))
      return i;
  return -1;
}

/* The constant start value of sum accumulator v: its declaration's literal (0 when it
 * has no initialiser), found among the body's statements; false without a declaration
 * there or with another initialiser (stmt_ok refuses any other assignment to it). */
static bool sum_start(const Node *s, const Var *v, int64_t *c) {
  for (; s; s = s->next) {
    if (s->kind == ND_BLOCK && sum_start(s->body, v, c)) return true;
    if (s->kind == ND_DECL && s->var == v) {
      *c = 0;
      return !s->a || const_int(s->a, c);
    }
  }
  return false;
}

/* The values of sum accumulator v (sum_acc) after the window: from its start to its
 * start plus 255 times the window's pixels. */
static bool sum_range(const Decl *D, int variant, const Var *v, int64_t *lo, int64_t *hi) {
  const Separable *S = psep(D, variant);
  int64_t start;
  if (!sum_start(D->body, v, &start) || start < 0) return false;
  *lo = start;
  *hi = start + INT64_C(255) * (S->x1 - S->x0 + 1) * (S->y1 - S->y0 + 1);
  return true;
}

/* Values lo..hi are WIDE in integer type s: within 0..65535 and held by s. */
static bool wide(Scalar s, int64_t lo, int64_t hi) { return lo >= 0 && hi <= 65535 && holds(s, lo, hi); }

static bool value_range(const Decl *D, int variant, const Node *n, int64_t *lo, int64_t *hi);

/* WIDE when every value of n lies in 0..65535 and its type holds them */
static PkClass wide_if_bounded(const Decl *D, int variant, const Node *n) {
  int64_t lo, hi;
  return value_range(D, variant, n, &lo, &hi) && wide(n->type.s, lo, hi) ? PK_WIDE : PK_NO;
}

static PkClass expr_class(const Decl *D, int variant, const Node *n);

/* How comparison n compares its operands' halves: 's' as signed 16-bit values (BYTEs and
 * SHORTs), 'u' as unsigned ones (BYTEs and WIDEs, a WIDE among them), 0: not in pairs. A
 * literal operand takes the other's way where its value fits the half (the comparison in
 * the operands' common type then gives the same answer). */
static char cmp_sign(const Decl *D, int variant, const Node *n) {
  int64_t c;
  bool la = const_int(n->a, &c), lb = !la && const_int(n->b, &c);
  if (la || lb) {
    PkClass o = expr_class(D, variant, la ? n->b : n->a);
    if ((o == PK_BYTE || o == PK_SHORT) && c >= -32768 && c <= 32767) return 's';
    if (o == PK_WIDE && c >= 0 && c <= 65535) return 'u';
    return 0;
  }
  PkClass a = expr_class(D, variant, n->a), b = expr_class(D, variant, n->b);
  if ((a == PK_BYTE || a == PK_SHORT) && (b == PK_BYTE || b == PK_SHORT)) return 's';
  if ((a == PK_BYTE || a == PK_WIDE) && (b == PK_BYTE || b == PK_WIDE)) return 'u';
  return 0;
}

/* Whether n is a condition on pairs: a mask, or a value (true where not 0). */
static bool is_cond(const Decl *D, int variant, const Node *n) { return expr_class(D, variant, n) != PK_NO; }

static PkClass expr_class(const Decl *D, int variant, const Node *n) {
  if (!n || n->type.lanes != 1) return PK_NO;
  int64_t c = 0;
  switch (n->kind) {
  case ND_NUM: return const_int(n, &c) && c >= 0 && c <= 255 ? PK_BYTE : PK_NO;
  case ND_VAR:
    if (byte_var(n->var)) return PK_BYTE;
    return sum_acc(D, variant, n->var) >= 0 ? wide_if_bounded(D, variant, n) : PK_NO;
  case ND_READ: {
    int64_t dx, dy;
    const Param *p = n->param;
    if (xread(D, variant, n) >= 0) return PK_BYTE; /* a read beside the window: q<j> */
    return (variant & V_SMEM) && p->type.s == T_U8 && p->type.lanes == 1 && offset_value(n->a, &dx) &&
                   offset_value(n->b, &dy)
               ? PK_BYTE
               : PK_NO;
  }
  case ND_CALL:
    if ((n->builtin != BI_MIN && n->builtin != BI_MAX) || n->nargs != 2 || !holds_byte(n->type.s)) return PK_NO;
    return expr_class(D, variant, n->args[0]) == PK_BYTE && expr_class(D, variant, n->args[1]) == PK_BYTE ? PK_BYTE
                                                                                                        : PK_NO;
  case ND_CAST: {
    PkClass a = expr_class(D, variant, n->a);
    if (a == PK_BYTE || a == PK_MASK) return holds_byte(n->type.s) ? PK_BYTE : PK_NO; /* a mask: 0 or 1 */
    if (a == PK_SHORT) return n->type.s == T_U8 ? PK_BYTE : holds_short(n->type.s) ? PK_SHORT : PK_NO;
    if (a == PK_WIDE) return n->type.s == T_U8 ? PK_BYTE : wide_if_bounded(D, variant, n);
    return PK_NO;
  }
  case ND_ADD:
  case ND_SUB: { /* (each operand classed once: a chain of sums stays linear) */
    PkClass a = expr_class(D, variant, n->a), b = expr_class(D, variant, n->b);
    if (n->kind == ND_ADD && ((a == PK_WIDE && (b == PK_WIDE || b == PK_BYTE || const_int(n->b, &c))) ||
                              (b == PK_WIDE && (a == PK_BYTE || const_int(n->a, &c)))))
      return wide_if_bounded(D, variant, n);
    return holds_short(n->type.s) && a == PK_BYTE && b == PK_BYTE ? PK_SHORT : PK_NO;
  }
  case ND_DIV: { /* a WIDE or BYTE by a literal: the analysis' 16-bit multiplier */
    if (!(n->flags & NF_DIV16) || !const_int(n->b, &c) || c <= 1) return PK_NO;
    PkClass a = expr_class(D, variant, n->a);
    return a == PK_WIDE || a == PK_BYTE ? wide_if_bounded(D, variant, n) : PK_NO;
  }
  case ND_EQ: case ND_NE: case ND_LT: case ND_LE: case ND_GT: case ND_GE:
    return cmp_sign(D, variant, n) ? PK_MASK : PK_NO;
  case ND_LOGAND: case ND_LOGOR:
    return is_cond(D, variant, n->a) && is_cond(D, variant, n->b) ? PK_MASK : PK_NO;
  case ND_NOT: return is_cond(D, variant, n->a) ? PK_MASK : PK_NO;
  case ND_COND: { /* each arm a value of one class (a BYTE is a SHORT and a WIDE too) */
    if (!is_cond(D, variant, n->a)) return PK_NO;
    PkClass b = expr_class(D, variant, n->b), e = expr_class(D, variant, n->c);
    if (b == PK_BYTE && e == PK_BYTE) return holds_byte(n->type.s) ? PK_BYTE : PK_NO;
    if ((b == PK_BYTE || b == PK_SHORT) && (e == PK_BYTE || e == PK_SHORT)) return holds_short(n->type.s) ? PK_SHORT : PK_NO;
    if ((b == PK_BYTE || b == PK_WIDE) && (e == PK_BYTE || e == PK_WIDE)) return wide_if_bounded(D, variant, n);
    return PK_NO;
  }
  default: return PK_NO;
  }
}

/* The values expression n takes, from its operands' (a literal's own, a BYTE's 0..255, a
 * window sum's from its start to its start plus 255 times the window's pixels): where
 * they stay within 0..255 a conversion to u8 needs no clamp on that side (max - min of
 * bytes is never above 255, 255 - a byte never below 0, blur3's (s + 4) / 9 never above
 * 255). False where it cannot bound them (an operator of no class). */
static bool value_range(const Decl *D, int variant, const Node *n, int64_t *lo, int64_t *hi) {
  int64_t c, alo, ahi, blo, bhi;
  switch (n->kind) {
  case ND_ADD:
  case ND_SUB:
    if (!value_range(D, variant, n->a, &alo, &ahi) || !value_range(D, variant, n->b, &blo, &bhi)) return false;
    *lo = n->kind == ND_ADD ? alo + blo : alo - bhi;
    *hi = n->kind == ND_ADD ? ahi + bhi : ahi - blo;
    return true;
  case ND_DIV: /* by a literal above 1: C's division of values >= 0 rounds down */
    if (!const_int(n->b, &c) || c <= 1 || !value_range(D, variant, n->a, &alo, &ahi) || alo < 0) return false;
    *lo = alo / c, *hi = ahi / c;
    return true;
  case ND_CAST:
    if (!value_range(D, variant, n->a, lo, hi)) return false;
    if (n->type.s == T_U8) { /* saturates */
      if (*lo < 0) *lo = 0;
      if (*hi > 255) *hi = 255;
      if (*lo > 255) *lo = 255;
      if (*hi < 0) *hi = 0;
    }
    return true;
  case ND_COND: /* either arm's */
    if (!value_range(D, variant, n->b, &alo, &ahi) || !value_range(D, variant, n->c, &blo, &bhi)) return false;
    *lo = alo < blo ? alo : blo;
    *hi = ahi > bhi ? ahi : bhi;
    return true;
  case ND_VAR: {
    if (sum_acc(D, variant, n->var) >= 0) return sum_range(D, variant, n->var, lo, hi);
    if (!byte_var(n->var)) return false;
    *lo = 0, *hi = 255;
    return true;
  }
  default:
    if (const_int(n, &c)) *lo = *hi = c;
    else *lo = 0, *hi = 255; /* a BYTE: a read, a minimum or maximum (expr_class) */
    return true;
  }
}

static bool stmt_ok(const Decl *D, int variant, const Node *s) {
  for (; s; s = s->next) {
    switch (s->kind) {
    case ND_BLOCK:
      if (!stmt_ok(D, variant, s->body)) return false;
      break;
    case ND_DECL: {
      int64_t c = 0;
      if (sum_acc(D, variant, s->var) >= 0) { /* a window sum's start: a literal (its range: value_range) */
        if (s->a && !const_int(s->a, &c)) return false;
        break;
      }
      if (!byte_var(s->var) || (s->a && expr_class(D, variant, s->a) != PK_BYTE)) return false;
      break;
    }
    case ND_ASSIGN:
      if (!byte_var(s->var) || expr_class(D, variant, s->a) != PK_BYTE) return false;
      break;
    case ND_FOR: { /* the window loop of a separable kernel, whose values are given, or an unrolled loop */
      const Separable *S = psep(D, variant);
      if (!(variant & V_ROWSUM) || s != S->loop) {
        const Var *cv;
        int64_t lo, hi;
        if (!(variant & V_SMEM) || ctrs.n == PK_COUNTERS || !unrolled(s, &cv, &lo, &hi)) return false;
        ctrs.var[ctrs.n] = cv, ctrs.val[ctrs.n++] = lo;
        bool ok = stmt_ok(D, variant, s->b);
        ctrs.n--;
        if (!ok) return false;
        break;
      }
      for (int i = 0; i < S->nacc; i++) {
        int64_t lo, hi;
        if (S->op[i] < 0 ? sum_acc(D, variant, S->acc[i]) < 0 || !sum_range(D, variant, S->acc[i], &lo, &hi) ||
                               !wide(S->acc[i]->type.s, lo, hi)
                         : !byte_var(S->acc[i]))
          return false;
      }
      break;
    }
    case ND_RETURN:
      if (s->args || expr_class(D, variant, s->a) != PK_BYTE) return false;
      break;
    default: return false;
    }
  }
  return true;
}

bool gp_packable(const Gen *g, int variant) {
  const Decl *D = g->D;
  /* a change test (Gen.chg_img) only in the walking kernels' variants, whose stores make it
   * (gen_gpu.c, pk_store) */
  if (D->kind != D_KERNEL || D->nouts || D->type.s != T_U8 || D->type.lanes != 1 ||
      (g->chg_img >= 0 && !(variant & (V_WIN | V_ROWSUM))) || g->virt >= 0 || g->nhoist)
    return false;
  if ((variant & V_ROWSUM) && !psep(D, variant)) return false;
  for (int i = 0; i < D->nimages; i++) /* reads from the staged tile or the thread's window only */
    if ((variant & V_SMEM) && D->access[i].read_rel && !g->direct[i]) return false;
  ctrs.n = 0;
  return stmt_ok(D, variant, D->body);
}

static void half_operand(Gen *g, const Node *n);
static void cond(Gen *g, const Node *n);

static void expr(Gen *g, const Node *n) {
  int64_t c = 0;
  switch (n->kind) {
  case ND_NUM:
    const_int(n, &c);
    OUT("0x%08xu", (unsigned)(c * 0x10001));
    return;
  case ND_VAR: OUT("v%d", n->var->slot); return;
  case ND_READ: { /* pixels x + dx and x + 2 + dx of the staged tile or the thread's window */
    int j = xread(g->D, g->variant, n);
    if (j >= 0) { /* ... or given (V_XREADS) */
      OUT("q%d", j);
      return;
    }
    int64_t dx = 0, dy = 0;
    offset_value(n->a, &dx);
    offset_value(n->b, &dy);
    int k = n->param->img_index;
    OUT("PXG_PAIR(t%d[(ptrdiff_t)(y + %lld - oy%d) * tp%d + (x + %lld - ox%d)], t%d[(ptrdiff_t)(y + %lld - oy%d) * "
        "tp%d + (x + %lld - ox%d)])",
        k, (long long)dy, k, k, (long long)dx, k, k, (long long)dy, k, k, (long long)dx + 2, k);
    return;
  }
  case ND_CALL:
    OUT("%s(", gp_op2(n->builtin));
    expr(g, n->args[0]);
    OUT(", ");
    expr(g, n->args[1]);
    OUT(")");
    return;
  case ND_CAST: {
    PkClass a = expr_class(g->D, g->variant, n->a);
    if (a == PK_MASK) { /* 0 or 1 */
      OUT("PXG_MASK1(");
      expr(g, n->a);
      OUT(")");
      return;
    }
    if ((a == PK_SHORT || a == PK_WIDE) && n->type.s == T_U8) { /* saturate to 0..255 */
      int64_t lo = 0, hi = 0;
      value_range(g->D, g->variant, n->a, &lo, &hi);
      if (hi > 255) OUT("PXG_MIN2(");
      if (lo < 0) OUT("PXG_MAXS2(");
      expr(g, n->a);
      if (lo < 0) OUT(", 0u)");
      if (hi > 255) OUT(", 0x00ff00ffu)");
    } else {
      expr(g, n->a);
    }
    return;
  }
  case ND_DIV: /* WIDE halves by a literal: (v * m) >> (16 + s) on each half (NF_DIV16) */
    OUT("PXG_DIVC2(");
    expr(g, n->a);
    OUT(", %du, %d)", (int)n->div_m, 16 + (int)n->div_s);
    return;
  case ND_ADD:
  case ND_SUB:
    /* WIDE: a word's add (the halves are 0..65535 and so is their sum: no carry) */
    OUT("%s(", n->kind == ND_SUB ? "PXG_SUB2" : expr_class(g->D, g->variant, n) == PK_WIDE ? "PXG_ADDW" : "PXG_ADD2");
    expr(g, n->a); /* a BYTE word is a SHORT one: halves 0..255 */
    OUT(", ");
    expr(g, n->b);
    OUT(")");
    return;
  case ND_EQ: case ND_NE: case ND_LT: case ND_LE: case ND_GT: case ND_GE: {
    /* a > b is b < a; EQ and NE compare bits, whatever the halves' sign */
    bool swap = n->kind == ND_GT || n->kind == ND_GE;
    char sign = cmp_sign(g->D, g->variant, n);
    const char *op = n->kind == ND_EQ ? "EQ" : n->kind == ND_NE ? "NE" : n->kind == ND_LT || n->kind == ND_GT ? "LT" : "LE";
    OUT("PXG_%s2%s(", op, n->kind == ND_EQ || n->kind == ND_NE ? "" : sign == 'u' ? "U" : "S");
    half_operand(g, swap ? n->b : n->a);
    OUT(", ");
    half_operand(g, swap ? n->a : n->b);
    OUT(")");
    return;
  }
  case ND_LOGAND:
  case ND_LOGOR:
    OUT("(");
    cond(g, n->a);
    OUT(n->kind == ND_LOGAND ? " & " : " | ");
    cond(g, n->b);
    OUT(")");
    return;
  case ND_NOT:
    OUT("(~");
    cond(g, n->a);
    OUT(")");
    return;
  case ND_COND:
    OUT("PXG_SEL2(");
    cond(g, n->a);
    OUT(", ");
    expr(g, n->b);
    OUT(", ");
    expr(g, n->c);
    OUT(")");
    return;
  default: OUT("0u /* not packed */"); return;
  }
}

/* An operand of a comparison: a literal as its 16-bit half in both halves (cmp_sign
 * checked that it fits), else its value. */
static void half_operand(Gen *g, const Node *n) {
  int64_t c;
  if (const_int(n, &c)) OUT("0x%08xu", (unsigned)(((uint64_t)c & 0xffffu) * 0x10001u));
  else expr(g, n);
}

/* A condition's mask: a mask itself, a value's halves compared with 0. */
static void cond(Gen *g, const Node *n) {
  if (expr_class(g->D, g->variant, n) == PK_MASK) {
    expr(g, n);
    return;
  }
  OUT("PXG_NE2(");
  expr(g, n);
  OUT(", 0u)");
}

const char *gp_op2(int op) { return op == BI_MIN ? "PXG_MIN2" : op == BI_MAX ? "PXG_MAX2" : "PXG_ADDW"; }

static void ind(Gen *g) {
  for (int i = 0; i < g->depth; i++) OUT("  ");
}

/* The variables holding a known literal at this point of the (straight-line) pixel code. */
#define PK_KNOWN 32
typedef struct {
  const Var *var[PK_KNOWN];
  int64_t val[PK_KNOWN];
} Known;

static void forget(Known *k, const Var *v) {
  for (int i = 0; i < PK_KNOWN; i++)
    if (k->var[i] == v) k->var[i] = NULL;
}

/* v = e (NULL: a declaration's zero) */
static void know(Known *k, const Var *v, const Node *e) {
  int64_t c = 0;
  bool is = !e || const_int(e, &c);
  forget(k, v);
  for (int i = 0; is && i < PK_KNOWN; i++)
    if (!k->var[i]) {
      k->var[i] = v, k->val[i] = c;
      return;
    }
}

static bool known(const Known *k, const Var *v, int64_t *c) {
  for (int i = 0; i < PK_KNOWN; i++)
    if (k->var[i] == v) return *c = k->val[i], true;
  return false;
}

static void stmts(Gen *g, const Node *s, Known *k) {
  for (; s; s = s->next) {
    switch (s->kind) {
    case ND_BLOCK: stmts(g, s->body, k); break;
    case ND_DECL:
      ind(g), OUT("uint32_t v%d = ", s->var->slot);
      if (s->a) expr(g, s->a);
      else OUT("0u");
      OUT(";\n");
      know(k, s->var, s->a);
      break;
    case ND_ASSIGN:
      ind(g), OUT("v%d = ", s->var->slot);
      expr(g, s->a);
      OUT(";\n");
      know(k, s->var, s->a);
      break;
    case ND_FOR: { /* OP(start, window): the window's value itself where the start is OP's identity */
      const Separable *S = psep(g->D, g->variant);
      if (!(g->variant & V_ROWSUM) || s != S->loop) { /* an unrolled loop: a block per value of its counter */
        const Var *cv = NULL;
        int64_t lo = 0, hi = -1;
        unrolled(s, &cv, &lo, &hi);
        ctrs.var[ctrs.n++] = cv;
        for (int64_t i = lo; i <= hi; i++) {
          ctrs.val[ctrs.n - 1] = i;
          ind(g), OUT("{\n");
          g->depth++;
          stmts(g, s->b, k);
          g->depth--;
          ind(g), OUT("}\n");
        }
        ctrs.n--;
        break;
      }
      for (int i = 0; i < S->nacc; i++) {
        int v = S->acc[i]->slot;
        int64_t c;
        if (known(k, S->acc[i], &c) && (S->op[i] == BI_MIN ? c >= 255 : c <= 0))
          ind(g), OUT("v%d = r%d;\n", v, i);
        else
          ind(g), OUT("v%d = %s(v%d, r%d);\n", v, gp_op2(S->op[i]), v, i);
        forget(k, S->acc[i]);
      }
      break;
    }
    case ND_RETURN:
      ind(g), OUT("return ");
      expr(g, s->a);
      OUT(";\n");
      break;
    default: break; /* gp_packable admits no other statement */
    }
  }
}

void gp_pixel_fn(Gen *g, int variant, const char *name) {
  const Decl *D = g->D;
  g->variant = variant;
  StrBuf params = {0};
  cg_params_text(g, &params);
  OUT("PXR_FN_ALWAYS uint32_t %s_%s(%s", g->pfx, name, params.s ? params.s : "");
  sb_free(&params);
  if (variant & V_SMEM) /* the staged tile (bytes in shared memory) or the thread's window (words) */
    for (int i = 0; i < D->nparams; i++) {
      const Param *p = D->params[i];
      if (p->is_image && g->direct[p->img_index])
        OUT(", const %s *PXR_RESTRICT t%d, int ox%d, int oy%d, int tp%d",
            (variant & V_WIN) ? "uint32_t" : "PXR_LOCAL uint8_t", p->img_index, p->img_index, p->img_index,
            p->img_index);
    }
  if (variant & V_ROWSUM)
    for (int i = 0; i < psep(D, variant)->nacc; i++) OUT(", uint32_t r%d", i);
  if (variant & V_XREADS)
    for (int j = 0; j < D->sep_x->nxr; j++) OUT(", uint32_t q%d", j);
  OUT(", int x, int y) {\n  (void)x; (void)y;\n");
  g->depth = 1;
  Known k = {0};
  ctrs.n = 0;
  stmts(g, D->body, &k);
  OUT("}\n");
}
