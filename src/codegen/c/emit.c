/*
 * emit.c - the C-family emitter (see emit.h): expressions, statements, border read
 * functions, pixel functions, and the combine, identity and per-pixel fold of
 * reductions, as text that is the same in C, CUDA and OpenCL C.
 *
 * The C generator (gen_c.c) and the GPU generator (codegen/gpu/gen_gpu.c) call it for
 * everything inside a stage instance except its entry point. Vector (multi-channel)
 * values are scalarised: every expression is emitted once per lane. All arithmetic goes
 * through src/ir/prelude.h, the same helpers the interpreter uses, so results match it
 * bit for bit (floats too, unless a reduction reorders sums).
 */
#include "codegen/c/emit.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "interp/interp.h"
#include "util/alloc.h"

const char *cg_ctype(Scalar s) {
  switch (s) {
  case T_U8: return "uint8_t";
  case T_I16: return "int16_t";
  case T_U16: return "uint16_t";
  case T_I32: return "int32_t";
  case T_U32: return "uint32_t";
  case T_I64: return "int64_t";
  case T_U64: return "uint64_t";
  case T_F32: return "float";
  case T_F64: return "double";
  default: return "void";
  }
}

bool cg_sliding_columns(const Separable *S) {
  if (S->y1 - S->y0 + 1 < 4) return false;
  for (int i = 0; i < S->nacc; i++) {
    if (S->wy[i]) return false; /* weighted sums do not slide */
    Scalar s = S->col[i].s; /* u16: sums of at most 257 u8 rows, exact in 16 bits */
    if (S->op[i] >= 0 || (s != T_U16 && s != T_I32 && s != T_U32 && s != T_I64 && s != T_U64)) return false;
  }
  return true;
}

bool cg_sliding_rows(const Separable *S) {
  if (S->x1 - S->x0 + 1 < 4) return false;
  for (int i = 0; i < S->nacc; i++) {
    if (S->wy[i]) return false;
    Scalar s = S->acc[i]->type.s;
    if (S->op[i] >= 0 || (s != T_I32 && s != T_U32 && s != T_I64 && s != T_U64)) return false;
  }
  return true;
}

const char *cg_unsigned_ctype(Scalar s) { return scalar_size(s) == 8 ? "uint64_t" : "uint32_t"; }

/* Whether array parameter p (a scalar parameter with len > 0) is read from a copy in its
 * element type (C: the entry makes it once per run; GPU: each block, in shared memory). */
static bool typed_array(const Gen *g, const Param *p) {
  if (g->shared_arrays) return p->len > 0 && p->len <= PXL_CG_SHARED_ARRAY;
  return g->typed_arrays && p->len > 0 && p->len <= PXL_CG_TYPED_ARRAY;
}

static const char *sfx(Scalar s) { return scalar_name(s); }

static void ind(Gen *g) {
  for (int i = 0; i < g->depth; i++) sb_append(g->o, "  ", 2);
}

#define OUT(...) sb_printf(g->o, __VA_ARGS__)

/* ---- literals and conversions ---- */

static void emit_float(StrBuf *o, double v, Scalar s) {
  const char *cast = s == T_F32 ? "(float)" : "(double)";
  if (isnan(v))
    sb_printf(o, "(%sNAN)", cast);
  else if (isinf(v))
    sb_printf(o, "(%s%sINFINITY)", cast, v < 0 ? "-" : "");
  else if (s == T_F32)
    sb_printf(o, "%af", v);
  else
    sb_printf(o, "%a", v);
}

static void emit_int(StrBuf *o, int64_t v, Scalar s) {
  switch (s) {
  case T_U64: sb_printf(o, "((uint64_t)%lluULL)", (unsigned long long)v); break;
  case T_U32: sb_printf(o, "((uint32_t)%lluU)", (unsigned long long)(uint32_t)v); break;
  case T_I64:
    if (v == INT64_MIN) sb_printf(o, "INT64_MIN");
    else sb_printf(o, "((int64_t)%lldLL)", (long long)v);
    break;
  default:
    if (v == INT32_MIN) sb_printf(o, "INT32_MIN");
    else sb_printf(o, "((%s)%lld)", cg_ctype(s), (long long)v);
    break;
  }
}

static bool is_int(Scalar s) { return s >= T_U8 && s <= T_U64; }
static bool is_uns(Scalar s) { return s == T_U8 || s == T_U16 || s == T_U32 || s == T_U64; }

/* Does every value of `from` fit in `to` (integers)? */
static bool int_widens(Scalar from, Scalar to) {
  int sf = scalar_size(from), st = scalar_size(to);
  if (is_uns(from) == is_uns(to)) return st >= sf;
  if (is_uns(from)) return st > sf; /* unsigned into a wider signed */
  return false;                     /* signed into unsigned: negatives don't fit */
}

/* Opens the conversion of a value of type `from` to `to`; returns the number of ')' to
 * close it with. */
static int open_conv(Gen *g, Scalar from, Scalar to) {
  if (from == to) {
    OUT("(");
    return 1;
  }
  if (is_int(from) && is_int(to)) {
    if (int_widens(from, to)) {
      OUT("((%s)(", cg_ctype(to));
      return 2;
    }
    if (from == T_U8 || from == T_I16 || from == T_U16 || from == T_I32) {
      if (to == T_I64 || to == T_U64) OUT("pxr_s2%s((int64_t)(", sfx(to));
      else OUT("pxr_i32_%s((int32_t)(", sfx(to));
    } else if (from == T_U32) {
      OUT("pxr_u32_%s((uint32_t)(", sfx(to));
    } else if (from == T_I64) {
      OUT("pxr_s2%s((int64_t)(", sfx(to));
    } else {
      OUT("pxr_u2%s((uint64_t)(", sfx(to));
    }
    return 2;
  }
  if (scalar_is_float(from) && is_int(to)) {
    if (from == T_F32) OUT("pxr_f32_%s((float)(", sfx(to)); /* no double: OpenCL devices may lack it */
    else OUT("pxr_f2%s((double)(", sfx(to));
    return 2;
  }
  OUT("((%s)(", cg_ctype(to)); /* int -> float, f32 <-> f64 */
  return 2;
}

/* ---- expressions ---- */

static int lane_of(const Node *n, int lane) { return n->type.lanes > 1 ? lane : 0; }

static void read_direct(Gen *g, const Param *p, const Node *ex, const Node *ey, bool relative) {
  int k = p->img_index, C = p->type.lanes;
  OUT("i%d[(ptrdiff_t)(", k);
  if (relative) OUT("y + ");
  cg_expr(g, ey, 0);
  OUT(") * p%d + (ptrdiff_t)(", k);
  if (relative) OUT("x + ");
  cg_expr(g, ex, 0);
  OUT(")");
  if (C > 1) OUT(" * %d", C);
}

static void img_args(Gen *g);

/* The element type of a GPU thread's window of pixels of type s (V_WIN): 8- and 16-bit
 * pixels held widened to 32 bits, as registers hold them, so that reading one costs no
 * conversion; a read converts back to s. */
const char *cg_window_ctype(Scalar s) {
  return s == T_U8 || s == T_U16 ? "uint32_t" : s == T_I16 ? "int32_t" : cg_ctype(s);
}

static void emit_read(Gen *g, const Node *n, int lane) {
  const Param *p = n->param;
  int k = p->img_index;
  bool rel = n->kind == ND_READ;
  bool direct = rel ? (g->variant & V_DIRECT_REL) && g->direct[k] : (g->variant & V_DIRECT_AT) != 0;
  if (rel && (g->variant & V_REG) && g->direct[k]) { /* the window is (0, 0): the pixel j_ of the registers */
    OUT("r%d[j_ * %d + %d]", k, p->type.lanes, lane);
    return;
  }
  if (rel && (g->variant & V_SMEM) && g->direct[k]) { /* the staged tile, or the thread's window */
    if (g->variant & V_WIN) OUT("((%s)", cg_ctype(p->type.s));
    OUT("t%d[(ptrdiff_t)(y + ", k);
    cg_expr(g, n->b, 0);
    OUT(" - oy%d) * tp%d + (ptrdiff_t)(x + ", k, k);
    cg_expr(g, n->a, 0);
    OUT(" - ox%d) * %d + %d]", k, p->type.lanes, lane);
    if (g->variant & V_WIN) OUT(")");
    return;
  }
  if (rel && (g->variant & V_SEP)) { /* row pass of a separable window: the column value */
    const Separable *S = g->D->sep;
    for (int i = 0; i < S->nacc; i++)
      if (S->read[i] == n) {
        OUT("c%d[x + v%d - xa]", i, S->vx->slot);
        return;
      }
  }
  if (!rel && cg_axes_read(g, n, lane)) return;
  if (k == g->virt) { /* the producer of a tile, computed there (its border mapping inside) */
    OUT("%s_vk(", g->pfx);
    img_args(g);
    OUT(", pxr_add_i32(x, ");
    cg_expr(g, n->a, 0);
    OUT("), pxr_add_i32(y, ");
    cg_expr(g, n->b, 0);
    OUT("), %d)", lane);
    return;
  }
  if (!rel && (g->variant & V_TILEBUF) && k == g->tb_img) { /* the tile's footprint, copied */
    /* rows of the buffer follow the coordinate that varies with the output's y, so the
     * pixel loop over x reads it contiguously */
    if (g->variant & V_WIN) { /* a GPU thread's window, widened (kernel_tiler_walk): the position less
                               * the paving's part (x and y times their coefficients, which the
                               * compiler cancels against the read's own, so that the index is a
                               * constant once unrolled) less the constant fx0, fy0 */
      const Access *ac = &g->D->access[k];
      OUT("((%s)tb[(ptrdiff_t)(pxr_sub_i32(", cg_ctype(p->type.s));
      cg_expr(g, n->b, 0);
      OUT(", pxr_mul_i32(%lld, y)) - fy0) * fs + (ptrdiff_t)(pxr_sub_i32(", (long long)ac->ay.cy);
      cg_expr(g, n->a, 0);
      OUT(", pxr_mul_i32(%lld, x)) - fx0) * %d + %d])", (long long)ac->ax.cx, p->type.lanes, lane);
      return;
    }
    OUT("tb[(ptrdiff_t)(");
    cg_expr(g, g->tb_t ? n->a : n->b, 0);
    OUT(g->tb_t ? " - fx0) * fs + (ptrdiff_t)(" : " - fy0) * fs + (ptrdiff_t)(");
    cg_expr(g, g->tb_t ? n->b : n->a, 0);
    OUT(g->tb_t ? " - fy0) * %d + %d]" : " - fx0) * %d + %d]", p->type.lanes, lane);
    return;
  }
  if (direct) {
    read_direct(g, p, n->a, n->b, rel);
    if (p->type.lanes > 1) OUT(" + %d", lane);
    OUT("]");
    return;
  }
  OUT("%s_r%c%d(i%d, p%d, w%d, h%d, ", g->pfx, (g->variant & V_LANES) ? 'l' : 'd', k, k, k, k, k);
  if (rel) OUT("pxr_add_i32(x, ");
  cg_expr(g, n->a, 0);
  if (rel) OUT(")");
  OUT(", ");
  if (rel) OUT("pxr_add_i32(y, ");
  cg_expr(g, n->b, 0);
  if (rel) OUT(")");
  OUT(", %d)", lane);
}

/* n (a / d or a % d, d a positive constant) by a 16-bit multiply-high where the
 * analysis found the dividend in [0, 65535] (NF_DIV16, analyze.c mark_division): the
 * vector units do it 32 lanes wide (gcc: vpmulhuw), a 32-bit division by a constant 16
 * lanes wide in several instructions - blur3's row pass 10 -> 3 ms a frame at 8192^2. */
static bool div16(Gen *g, const Node *n, int la) {
  if (!(n->flags & NF_DIV16) || n->type.lanes != 1) return false;
  if (n->kind == ND_DIV) OUT("((%s)pxr_udiv16((uint16_t)(", cg_ctype(n->type.s));
  else OUT("((%s)pxr_umod16((uint16_t)(", cg_ctype(n->type.s));
  cg_expr(g, n->a, la);
  if (n->kind == ND_DIV) OUT("), %d, %d))", (int)n->div_m, (int)n->div_s);
  else OUT("), %lld, %d, %d))", (long long)n->b->ival, (int)n->div_m, (int)n->div_s);
  return true;
}

static void binop(Gen *g, const Node *n, int lane) {
  Scalar s = n->type.s;
  const Node *a = n->a, *b = n->b;
  int la = lane_of(a, lane), lb = lane_of(b, lane);
  const char *op = NULL;
  switch (n->kind) {
  case ND_ADD: op = "+"; break;
  case ND_SUB: op = "-"; break;
  case ND_MUL: op = "*"; break;
  case ND_DIV: op = "/"; break;
  case ND_MOD: op = "%"; break;
  case ND_BITAND: op = "&"; break;
  case ND_BITOR: op = "|"; break;
  case ND_BITXOR: op = "^"; break;
  default: break;
  }
  const char *fn = NULL;
  bool const_div = b->kind == ND_NUM && !scalar_is_float(s) && b->ival != 0 && b->ival != -1;
  if (const_div && (n->kind == ND_DIV || n->kind == ND_MOD) && div16(g, n, la)) return;
  if (scalar_is_float(s)) {
    fn = NULL;
  } else if (n->kind == ND_SHL || n->kind == ND_SHR) {
    fn = n->kind == ND_SHL ? "shl" : "shr";
  } else if ((n->kind == ND_DIV || n->kind == ND_MOD) && !const_div) {
    fn = n->kind == ND_DIV ? "div" : "mod";
  } else if ((s == T_I32 || s == T_I64) && (n->kind == ND_ADD || n->kind == ND_SUB || n->kind == ND_MUL) &&
             !(g->signed_ops && (n->flags & NF_NO_WRAP))) { /* wrapping; where it cannot wrap, C's signed operators */
    fn = n->kind == ND_ADD ? "add" : n->kind == ND_SUB ? "sub" : "mul";
  }
  if (fn) {
    OUT("pxr_%s_%s(", fn, sfx(s));
    cg_expr(g, a, la);
    OUT(", ");
    cg_expr(g, b, lb);
    OUT(")");
    return;
  }
  OUT("((%s)(", cg_ctype(s));
  cg_expr(g, a, la);
  OUT(" %s ", op);
  cg_expr(g, b, lb);
  OUT("))");
}

static void call(Gen *g, const Node *n, int lane) {
  Scalar s = n->type.s;
  bool f32 = s == T_F32, fl = scalar_is_float(s);
  const char *name = NULL;
  switch (n->builtin) {
  case BI_MIN: case BI_MAX:
    OUT("pxr_%s_%s(", n->builtin == BI_MIN ? "min" : "max", sfx(s));
    cg_expr(g, n->args[0], lane_of(n->args[0], lane));
    OUT(", ");
    cg_expr(g, n->args[1], lane_of(n->args[1], lane));
    OUT(")");
    return;
  case BI_CLAMP:
    OUT("pxr_min_%s(pxr_max_%s(", sfx(s), sfx(s));
    cg_expr(g, n->args[0], lane_of(n->args[0], lane));
    OUT(", ");
    cg_expr(g, n->args[1], lane_of(n->args[1], lane));
    OUT("), ");
    cg_expr(g, n->args[2], lane_of(n->args[2], lane));
    OUT(")");
    return;
  case BI_ABS:
    if (!fl && is_uns(s)) {
      cg_expr(g, n->args[0], lane_of(n->args[0], lane));
      return;
    }
    name = fl ? (f32 ? "fabsf" : "fabs") : s == T_I32 ? "pxr_abs_i32" : "pxr_abs_i64";
    break;
  case BI_SQRT: name = f32 ? "sqrtf" : "sqrt"; break;
  case BI_EXP: name = f32 ? "expf" : "exp"; break;
  case BI_LOG: name = f32 ? "logf" : "log"; break;
  case BI_SIN: name = f32 ? "sinf" : "sin"; break;
  case BI_COS: name = f32 ? "cosf" : "cos"; break;
  case BI_FLOOR: name = f32 ? "floorf" : "floor"; break;
  case BI_CEIL: name = f32 ? "ceilf" : "ceil"; break;
  case BI_ROUND: name = f32 ? "pxr_round_f32" : "pxr_round_f64"; break;
  case BI_POW: name = f32 ? "powf" : "pow"; break;
  case BI_ATAN2: name = f32 ? "atan2f" : "atan2"; break;
  default: name = "?"; break;
  }
  OUT("%s(", name);
  for (int i = 0; i < n->nargs; i++) {
    if (i) OUT(", ");
    cg_expr(g, n->args[i], lane_of(n->args[i], lane));
  }
  OUT(")");
}

static void truth(Gen *g, const Node *n) {
  OUT("(");
  cg_expr(g, n, 0);
  OUT(" != 0)");
}

/* ---- narrowing ----
 * The checker widens u8/i16/u16 operands to i32, as C does. For min/max/clamp that is
 * wasted width: the result is one of the operands. narrow_of() finds an expression whose
 * value is exactly a min/max/clamp of values of one narrow type T (or constants that fit
 * T); it is then emitted in T, which keeps vector lanes narrow (32 u8 per AVX2 register
 * instead of 8 i32). Values are unchanged, so the interpreter still checks the result. */

static bool fits(int64_t v, Scalar t) {
  switch (t) {
  case T_U8: return v >= 0 && v <= 255;
  case T_I16: return v >= -32768 && v <= 32767;
  case T_U16: return v >= 0 && v <= 65535;
  default: return false;
  }
}

static bool narrow_type(Scalar t) { return t == T_U8 || t == T_I16 || t == T_U16; }

/* The narrow type T this integer expression is exactly a value of, or T_VOID. Literals
 * answer `want` when they fit it. */
static Scalar narrow_of(const Node *n, Scalar want) {
  if (n->type.lanes != 1 || !is_int(n->type.s)) return T_VOID;
  if (n->kind == ND_NUM) return fits(n->ival, want) ? want : T_VOID;
  if (n->kind == ND_CAST && narrow_type(n->a->type.s) && int_widens(n->a->type.s, n->type.s) &&
      n->a->type.lanes == 1)
    return n->a->type.s;
  if (n->kind == ND_CALL && (n->builtin == BI_MIN || n->builtin == BI_MAX || n->builtin == BI_CLAMP)) {
    Scalar t = T_VOID;
    for (int i = 0; i < n->nargs && t == T_VOID; i++)
      if (n->args[i]->kind != ND_NUM) t = narrow_of(n->args[i], T_VOID);
    if (t == T_VOID) return T_VOID;
    for (int i = 0; i < n->nargs; i++)
      if (narrow_of(n->args[i], t) != t) return T_VOID;
    return t;
  }
  return T_VOID;
}

/* Emits n (for which narrow_of(n, t) == t) computed in type t. */
static void expr_narrow(Gen *g, const Node *n, Scalar t) {
  if (n->kind == ND_NUM) {
    emit_int(g->o, n->ival, t);
  } else if (n->kind == ND_CAST) {
    cg_expr(g, n->a, 0);
  } else if (n->builtin == BI_CLAMP) {
    OUT("pxr_min_%s(pxr_max_%s(", sfx(t), sfx(t));
    expr_narrow(g, n->args[0], t);
    OUT(", ");
    expr_narrow(g, n->args[1], t);
    OUT("), ");
    expr_narrow(g, n->args[2], t);
    OUT(")");
  } else {
    OUT("pxr_%s_%s(", n->builtin == BI_MIN ? "min" : "max", sfx(t));
    expr_narrow(g, n->args[0], t);
    OUT(", ");
    expr_narrow(g, n->args[1], t);
    OUT(")");
  }
}

/* The index of array read n (ND_INDEX) into an array of len elements: as is where
 * analysis proved it inside (NF_IN_RANGE), else through pxr_ix (outside -> the zero
 * element at len). */
static void array_index(Gen *g, const Node *n, int len) {
  if (n->flags & NF_IN_RANGE) {
    OUT("(int32_t)(");
    cg_expr(g, n->a, 0);
    OUT(")");
  } else {
    OUT("pxr_ix(");
    cg_expr(g, n->a, 0);
    OUT(", %d)", len);
  }
}

void cg_expr(Gen *g, const Node *n, int lane) {
  Scalar s = n->type.s;
  for (int k = 0; k < g->nhoist && !g->no_hoist; k++)
    if (g->hoist[k] == n) {
      OUT("u%d", k);
      return;
    }
  if (g->variant & V_SEP) { /* the row pass of a weighted window: WY was applied by the column pass */
    const Separable *S = g->D->sep;
    for (int i = 0; i < S->nacc; i++)
      if (S->wy_node[i] == n) {
        emit_int(g->o, 1, s);
        return;
      }
  }
  switch (n->kind) {
  case ND_NUM:
    if (scalar_is_float(s)) emit_float(g->o, n->fval, s);
    else emit_int(g->o, n->ival, s);
    return;
  case ND_VAR:
    if (g->variant & V_SEP) {
      const Separable *S = g->D->sep;
      for (int i = 0; i < S->nacc; i++)
        if (S->read[i] == n) {
          OUT("c%d[x + v%d - xa]", i, S->vx->slot);
          return;
        }
    }
    if (n->var->param) OUT("s%d", n->var->param->scalar_index);
    else if (n->type.lanes > 1) OUT("v%d[%d]", n->var->slot, lane);
    else if (g->in_lane && g->varying[n->var->slot]) OUT("v%d[ln_]", n->var->slot);
    else OUT("v%d", n->var->slot);
    return;
  case ND_COORD:
    if (g->in_lane && n->ival == 0) OUT("(x + ln_)");
    else OUT("%s", n->ival == 0 ? "x" : n->ival == 1 ? "y" : n->ival == 2 ? "W" : "H");
    return;
  case ND_IMGDIM:
    OUT("%c%d", n->ival ? 'h' : 'w', n->param->img_index);
    return;
  case ND_READ: case ND_AT:
    emit_read(g, n, lane);
    return;
  case ND_LANE:
    cg_expr(g, n->a, (int)n->ival);
    return;
  case ND_VEC:
    cg_expr(g, n->args[lane], 0);
    return;
  case ND_CAST:
  {
    if (n->type.lanes == 1 && narrow_type(s) && narrow_of(n->a, s) == s && n->a->kind != ND_NUM) {
      expr_narrow(g, n->a, s); /* the value already has type s */
      return;
    }
    /* a value analysis proved in range: a plain C conversion, no saturation */
    int close = n->flags & NF_IN_RANGE ? (OUT("((%s)(", cg_ctype(s)), 2) : open_conv(g, n->a->type.s, s);
    cg_expr(g, n->a, lane_of(n->a, lane));
    while (close--) OUT(")");
    return;
  }
  case ND_NEG:
    if (s == T_I32 || s == T_I64) OUT("pxr_neg_%s(", sfx(s));
    else if (scalar_is_float(s)) OUT("(-");
    else OUT("((%s)0 - (", cg_ctype(s));
    cg_expr(g, n->a, lane_of(n->a, lane));
    OUT(is_uns(s) ? "))" : ")");
    return;
  case ND_BITNOT:
    OUT("((%s)~(", cg_ctype(s));
    cg_expr(g, n->a, lane_of(n->a, lane));
    OUT("))");
    return;
  case ND_NOT:
    OUT("((int32_t)(");
    cg_expr(g, n->a, 0);
    OUT(" == 0))");
    return;
  case ND_LOGAND: case ND_LOGOR:
    OUT("((int32_t)(");
    truth(g, n->a);
    OUT(n->kind == ND_LOGAND ? " && " : " || ");
    truth(g, n->b);
    OUT("))");
    return;
  case ND_EQ: case ND_NE: case ND_LT: case ND_LE: case ND_GT: case ND_GE: {
    static const char *const ops[] = {"==", "!=", "<", "<=", ">", ">="};
    OUT("((int32_t)(");
    cg_expr(g, n->a, 0);
    OUT(" %s ", ops[n->kind - ND_EQ]);
    cg_expr(g, n->b, 0);
    OUT("))");
    return;
  }
  case ND_COND:
    OUT("(");
    truth(g, n->a);
    OUT(" ? ");
    cg_expr(g, n->b, lane_of(n->b, lane));
    OUT(" : ");
    cg_expr(g, n->c, lane_of(n->c, lane));
    OUT(")");
    return;
  case ND_INDEX: {
    const Var *v = n->var;
    if (v->param) { /* an array parameter: pxlc_scalar elements, or typed (typed_array) */
      bool typed = typed_array(g, v->param);
      if (typed) OUT("s%d[", v->param->scalar_index);
      else OUT("((%s)s%d[", cg_ctype(v->type.s), v->param->scalar_index);
      array_index(g, n, v->len);
      if (typed) OUT("]");
      else OUT("].%c)", scalar_is_float(v->type.s) ? 'f' : 'i');
      return;
    }
    if (v->is_const) OUT("%s_t%d[", g->pfx, v->table);
    else OUT("v%d[", v->slot);
    array_index(g, n, v->len);
    OUT("]");
    if (!v->is_const && v->type.lanes > 1) OUT("[%d]", lane);
    return;
  }
  case ND_FCALL: {
    const Decl *f = n->func;
    OUT("%s_f%d(", g->pfx, f->index);
    const char *sep = "";
    if (f->type.lanes > 1) OUT("%d", lane), sep = ", ";
    for (int i = 0; i < n->nargs; i++)
      for (int k = 0; k < f->params[i]->type.lanes; k++) {
        OUT("%s", sep);
        sep = ", ";
        cg_expr(g, n->args[i], lane_of(n->args[i], k));
      }
    OUT(")");
    return;
  }
  case ND_CALL: {
    Scalar t = n->type.lanes == 1 && is_int(s) ? narrow_of(n, T_VOID) : T_VOID;
    if (t != T_VOID) {
      OUT("((%s)", cg_ctype(s));
      expr_narrow(g, n, t);
      OUT(")");
      return;
    }
    call(g, n, lane);
    return;
  }
  default:
    binop(g, n, lane);
    return;
  }
}

/* ---- statements ---- */

static void stmts(Gen *g, const Node *s);

/* Gen.chg_img: `if (x < W && y < H && (o[0] != old0 || ...)) *chg_ = 1u; `, old the
 * image's pixel at (x, y) read as the variant reads it (its window contains (0, 0):
 * gen_gpu_stage_test). Positions past the output's edges, which tiles compute and do not
 * store, are not compared: their old values are what the border mode reads. The window
 * variant (V_WIN) runs only inside the image (kernel_walk's unchecked rows): there
 * `*chg_ |= o[0] != old0 | ...;`, no branch. */
static void changed_test(Gen *g, int lanes) {
  const Param *p = cg_image_param(g->D, g->chg_img);
  Node zero = {.kind = ND_NUM, .type = {T_I32, 1}, .ival = 0};
  Node rd = {.kind = ND_READ, .type = p->type, .param = (Param *)p, .a = &zero, .b = &zero};
  bool win = g->variant & V_WIN;
  OUT(win ? "*chg_ |= (uint32_t)(" : "if (x < W && y < H && (");
  for (int k = 0; k < lanes; k++) {
    OUT("%s(o[%d] != (%s)", k ? " | " : "", k, cg_ctype(g->D->type.s));
    emit_read(g, &rd, k);
    OUT(")");
  }
  OUT(win ? "); " : ")) *chg_ = 1u; ");
}

/* `T t_[lanes] = {e...}; v<slot><elem>[k] = t_[k]; ...`: a vector value stored lane by lane
 * through a temporary, since e may read the variable it is stored into (elem: "" for the
 * variable, "[i_]" for an array element). */
static void store_lanes(Gen *g, const Var *v, const Node *e, const char *elem) {
  int lanes = v->type.lanes;
  OUT("%s t_[%d] = {", cg_ctype(v->type.s), lanes);
  for (int k = 0; k < lanes; k++) {
    if (k) OUT(", ");
    cg_expr(g, e, lane_of(e, k));
  }
  OUT("}; ");
  for (int k = 0; k < lanes; k++) OUT("v%d%s[%d] = t_[%d]; ", v->slot, elem, k, k);
}

/* Whether v is a separable sum the C emitter holds in 16 bits (Gen.narrow_accs): its
 * every value fits, so each assignment stores what the i32 would. */
static bool narrow_acc(const Gen *g, const Var *v) {
  const Separable *S = g->D->sep;
  for (int i = 0; g->narrow_accs && S && i < S->nacc; i++)
    if (S->acc[i] == v && S->narrow[i]) return true;
  return false;
}

/* In "pv": `v<k>[ln_] = e` for every lane (a varying local's declaration or assignment). */
static void lane_store(Gen *g, const Node *s) {
  ind(g);
  if (s->kind == ND_DECL) OUT("%s v%d[%d]; ", cg_ctype(s->var->type.s), s->var->slot, PXL_CG_LANES);
  OUT("for (int ln_ = 0; ln_ < %d; ln_++) v%d[ln_] = ", PXL_CG_LANES, s->var->slot);
  g->in_lane = true;
  if (s->a) cg_expr(g, s->a, 0);
  else OUT("0");
  g->in_lane = false;
  OUT(";\n");
}

static void stmt(Gen *g, const Node *s) {
  int lanes;
  if ((g->variant & V_LANES) && (s->kind == ND_DECL || s->kind == ND_ASSIGN) && g->varying[s->var->slot]) {
    lane_store(g, s);
    return;
  }
  if ((g->variant & V_LANES) && s->kind == ND_RETURN) { /* the last statement (cg_lanes_plan) */
    ind(g), OUT("for (int ln_ = 0; ln_ < %d; ln_++) o[ln_] = ", PXL_CG_LANES);
    g->in_lane = true;
    cg_expr(g, s->a, 0);
    g->in_lane = false;
    OUT(";\n");
    ind(g), OUT("return;\n");
    return;
  }
  switch (s->kind) {
  case ND_BLOCK:
    ind(g), OUT("{\n");
    g->depth++;
    stmts(g, s->body);
    g->depth--;
    ind(g), OUT("}\n");
    return;
  case ND_DECL:
    if (cg_axes_decl(g, s)) return;
    if (g->variant & V_SEP) /* temporaries of the window loop: replaced by column values */
      for (int i = 0; i < g->D->sep->ntmp; i++)
        if (g->D->sep->tmp[i] == s->var) return;
    lanes = s->var->type.lanes;
    ind(g);
    if (s->var->len) { /* an array and its zero element past the end (pxr_ix) */
      OUT("%s v%d[%d]", cg_ctype(s->var->type.s), s->var->slot, s->var->len + 1);
      if (lanes > 1) OUT("[%d]", lanes);
      OUT(" = {");
      for (int i = 0; i < s->nargs; i++) {
        OUT("%s", i ? ", " : "");
        if (lanes > 1) OUT("{");
        for (int k = 0; k < lanes; k++) {
          if (k) OUT(", ");
          cg_expr(g, s->args[i], lane_of(s->args[i], k));
        }
        if (lanes > 1) OUT("}");
      }
      OUT("%s", s->nargs ? "};\n" : "0};\n");
      return;
    }
    if (lanes > 1) {
      OUT("%s v%d[%d] = {", cg_ctype(s->var->type.s), s->var->slot, lanes);
      for (int k = 0; k < lanes; k++) {
        if (k) OUT(", ");
        if (s->a) cg_expr(g, s->a, lane_of(s->a, k));
        else OUT("0");
      }
      OUT("};\n");
    } else {
      OUT("%s v%d = ", narrow_acc(g, s->var) ? "uint16_t" : cg_ctype(s->var->type.s), s->var->slot);
      if (s->a) cg_expr(g, s->a, 0);
      else OUT("0");
      OUT(";\n");
    }
    return;
  case ND_ASSIGN:
    lanes = s->var->type.lanes;
    ind(g);
    if (lanes > 1) { /* through a temporary: the right side may read the variable */
      OUT("{ ");
      store_lanes(g, s->var, s->a, "");
      OUT("}\n");
    } else {
      OUT("v%d = ", s->var->slot);
      cg_expr(g, s->a, 0);
      OUT(";\n");
    }
    return;
  case ND_LANESET:
    ind(g), OUT("v%d[%d] = ", s->var->slot, (int)s->ival);
    cg_expr(g, s->a, 0);
    OUT(";\n");
    return;
  case ND_ISET: /* outside the array: no effect */
    lanes = s->var->type.lanes;
    ind(g), OUT("{ int64_t i_ = ");
    cg_expr(g, s->a, 0);
    if (s->flags & NF_IN_RANGE) OUT("; { "); /* analysis: always inside */
    else OUT("; if ((uint64_t)i_ < %uu) { ", (unsigned)s->var->len);
    if (lanes > 1) { /* through a temporary: the right side may read the array */
      store_lanes(g, s->var, s->b, "[i_]");
    } else {
      OUT("v%d[i_] = ", s->var->slot);
      cg_expr(g, s->b, 0);
      OUT("; ");
    }
    OUT("} }\n");
    return;
  case ND_IF:
    ind(g), OUT("if ");
    truth(g, s->a);
    OUT(" {\n");
    g->depth++;
    stmts(g, s->b);
    g->depth--;
    if (s->c) {
      ind(g), OUT("} else {\n");
      g->depth++;
      stmts(g, s->c);
      g->depth--;
    }
    ind(g), OUT("}\n");
    return;
  case ND_FOR:
    if ((g->variant & V_ROWSUM) && s == g->D->sep->loop) { /* the window's values, given */
      const Separable *S = g->D->sep;
      for (int i = 0; i < S->nacc; i++) {
        Scalar as = S->acc[i]->type.s;
        const char *AT = cg_ctype(as), *UT = scalar_size(as) == 8 ? "uint64_t" : "uint32_t";
        int v = S->acc[i]->slot;
        if (S->op[i] >= 0) /* a minimum or maximum: of the start and the window's */
          ind(g), OUT("v%d = pxr_%s_%s(v%d, r%d);\n", v, S->op[i] == BI_MIN ? "min" : "max", scalar_name(as), v, i);
        else
          ind(g), OUT("v%d = (%s)((%s)v%d + (%s)r%d);\n", v, AT, UT, v, UT, i);
      }
      return;
    }
    if ((g->variant & V_SEP) && s == g->D->sep->loop) { /* the row pass over column values */
      const Separable *S = g->D->sep;
      const Node *inner = s->b;
      while (inner->kind == ND_BLOCK) inner = inner->body;
      ind(g), OUT("for (int32_t v%d = %d; v%d <= %d; v%d++) {\n", S->vx->slot, S->x0, S->vx->slot, S->x1,
                  S->vx->slot);
      g->depth++;
      stmts(g, inner->b);
      g->depth--;
      ind(g), OUT("}\n");
      return;
    }
    ind(g), OUT("{\n");
    g->depth++;
    stmts(g, s->init);
    if (s->flags & NF_UNROLL) ind(g), OUT("PXR_UNROLL\n");
    ind(g), OUT("while ");
    truth(g, s->a);
    OUT(" {\n");
    g->depth++;
    stmts(g, s->b);
    stmts(g, s->step);
    g->depth--;
    ind(g), OUT("}\n");
    g->depth--;
    ind(g), OUT("}\n");
    return;
  case ND_RETURN:
    lanes = g->D->type.lanes;
    if (g->in_func) { /* a function's value; a vector one lane at a time (l_) */
      ind(g), OUT("return ");
      for (int k = 0; k + 1 < lanes; k++) {
        OUT("l_ == %d ? ", k);
        cg_expr(g, s->a, lane_of(s->a, k));
        OUT(" : ");
      }
      cg_expr(g, s->a, lane_of(s->a, lanes - 1));
      OUT(";\n");
      return;
    }
    ind(g), OUT("{ ");
    /* one value, or a tiler's tile row by row (generators see no kernel with several
     * outputs: their projections) */
    for (int v = 0; v < (s->nargs ? s->nargs : 1); v++) {
      const Node *e = s->nargs ? s->args[v] : s->a;
      for (int k = 0; k < lanes; k++) {
        OUT("o[%d] = ", v * lanes + k);
        cg_expr(g, e, lane_of(e, k));
        OUT("; ");
      }
    }
    if (g->chg_img >= 0) changed_test(g, lanes);
    OUT("return; }\n");
    return;
  case ND_BIN:
    ind(g), OUT("{ int32_t b_ = ");
    cg_expr(g, s->a, 0);
    OUT("; if ((uint32_t)b_ < %uu) ", (unsigned)g->D->nbins);
    if (s->ival != BIN_SUM) { /* a minimum or maximum: keys (ir/prelude.h) */
      OUT("PXR_BIN_MAX_U64(&bins[b_], pxr_bkey_%s(", g->D->weighted_float ? "f64" : "i64");
      cg_expr(g, s->b, 0);
      OUT(", %d))", s->ival == BIN_MIN);
    } else if (g->D->weighted_float) {
      OUT("PXR_BIN_ADD_F64(&bins[b_], ");
      if (s->b) {
        OUT("(double)(");
        cg_expr(g, s->b, 0);
        OUT(")");
      } else {
        OUT("1.0");
      }
      OUT(")");
    } else if (s->b) {
      OUT("PXR_BIN_ADD_I64(&bins[b_], ");
      cg_expr(g, s->b, 0);
      OUT(")");
    } else {
      if (g->counts32 && g->bin_copies > 1) OUT("PXR_BIN_INC32(&bins[b_ * %d])", g->bin_copies);
      else OUT(g->counts32 ? "PXR_BIN_INC32(&bins[b_])" : "PXR_BIN_INC(&bins[b_])");
    }
    OUT("; }\n");
    return;
  default:
    return;
  }
}

/* Statements, each new .pxl line announced by a marker comment: a compiler's message
 * about a generated line leads back to the kernel's source (the OpenCL runtime quotes it;
 * PXL_LINE_MARK below is its spelling). */
static void stmts(Gen *g, const Node *s) {
  for (; s; s = s->next) {
    if (s->kind != ND_BLOCK && s->loc.line > 0 && s->loc.line != g->line) {
      ind(g), OUT("/* " PXL_LINE_MARK "%d */\n", s->loc.line);
      g->line = s->loc.line;
    }
    stmt(g, s);
  }
}

/* ---- functions of one instance ---- */

/* The parameter of image number k. */
const Param *cg_image_param(const Decl *D, int k) {
  for (int i = 0; i < D->nparams; i++)
    if (D->params[i]->img_index == k) return D->params[i];
  return D->params[0];
}

/* For a non-sequential P2P kernel: the one image read by affine absolute reads only, at
 * one constant offset, whose tile footprint can be staged in a buffer; -1 if there is no
 * such single image. */
static int tile_buffer_image(const Decl *D) {
  int k = -1;
  if (D->skel != SK_P2P_NONSEQ) return -1; /* a permutation's footprint is the tile's size */
  for (int i = 0; i < D->nimages; i++) {
    const Access *ac = &D->access[i];
    if (!ac->read_abs) continue;
    if (k >= 0 || !ac->abs_affine || ac->read_rel || ac->gather || ac->ax.c1 != ac->ax.c0 || ac->ay.c1 != ac->ay.c0)
      return -1;
    k = i;
  }
  return k;
}

/* "PXR_RESTRICT " for pointer parameters, or nothing (Gen.plain_ptrs). */
static const char *restrict_kw(const Gen *g) { return g->plain_ptrs ? "" : "PXR_RESTRICT "; }

/* Parameter list of the pixel and read functions: images, scalars, hoisted values. A
 * kernel without parameters (`kernel i32 one() size(1, 1)`) takes a placeholder, so that
 * the list never starts with a comma. */
static void img_params(Gen *g) {
  const Decl *D = g->D;
  if (!D->nparams) OUT("int none_");
  for (int i = 0; i < D->nparams; i++) {
    const Param *p = D->params[i];
    if (i) OUT(", ");
    if (p->is_image)
      OUT("const PXR_GLOBAL %s *%si%d, ptrdiff_t p%d, int w%d, int h%d", cg_ctype(p->type.s), restrict_kw(g), p->img_index, p->img_index,
          p->img_index, p->img_index);
    else
      cg_scalar_param(g, p);
  }
  for (int k = 0; k < g->nhoist; k++) OUT(", %s u%d", cg_ctype(g->hoist[k]->type.s), k);
  if (g->chg_img >= 0) OUT(", uint32_t *PXR_RESTRICT chg_");
}

void cg_scalar_param(Gen *g, const Param *p) {
  if (typed_array(g, p))
    OUT("const %s%s *%ss%d", g->shared_arrays ? "PXR_LOCAL " : "", cg_ctype(p->type.s), restrict_kw(g), p->scalar_index);
  else if (p->len) OUT("const PXR_GLOBAL pxlc_scalar *s%d", p->scalar_index);
  else OUT("%s s%d", cg_ctype(p->type.s), p->scalar_index);
}

static void img_args(Gen *g);

bool cg_row_arrays(Gen *g, const char *indent) {
  const Decl *D = g->D;
  size_t bytes = 0;
  int n = 0;
  for (int i = 0; i < D->nparams; i++)
    if (!D->params[i]->is_image && typed_array(g, D->params[i])) {
      bytes += (size_t)(D->params[i]->len + 1) * (size_t)scalar_size(D->params[i]->type.s);
      n++;
    }
  if (!n || bytes > PXL_CG_ROW_ARRAY_BYTES) return false;
  for (int i = 0; i < D->nparams; i++) {
    const Param *p = D->params[i];
    if (p->is_image || !typed_array(g, p)) continue;
    OUT("%s%s s%d_r[%d];\n%smemcpy(s%d_r, s%d, sizeof s%d_r);\n", indent, cg_ctype(p->type.s), p->scalar_index,
        p->len + 1, indent, p->scalar_index, p->scalar_index, p->scalar_index);
  }
  return true;
}

void cg_params_text(Gen *g, StrBuf *buf) {
  StrBuf *saved = g->o;
  g->o = buf;
  img_params(g);
  g->o = saved;
}

/* The argument list of the pixel functions (images then scalars) as text, in `buf`. */
void cg_args_text(Gen *g, StrBuf *buf) {
  StrBuf *saved = g->o;
  g->o = buf;
  img_args(g);
  g->o = saved;
}

static void img_args(Gen *g) {
  const Decl *D = g->D;
  if (!D->nparams) OUT("0");
  for (int i = 0; i < D->nparams; i++) {
    const Param *p = D->params[i];
    if (i) OUT(", ");
    if (p->is_image) OUT("i%d, p%d, w%d, h%d", p->img_index, p->img_index, p->img_index, p->img_index);
    else OUT("s%d%s", p->scalar_index, g->row_arrays && typed_array(g, p) ? "_r" : "");
  }
  for (int k = 0; k < g->nhoist; k++) OUT(", u%d", k);
  if (g->chg_img >= 0) OUT(", chg_");
}

const char *cg_border_index_fn(BorderKind b) {
  return b == B_MIRROR ? "pxr_mirror_idx" : b == B_MIRROR101 ? "pxr_mirror101_idx" : b == B_WRAP ? "pxr_wrap_idx"
                                                                                   : "pxr_clamp_idx";
}

void cg_read_fns(Gen *g) {
  const Decl *D = g->D;
  for (int i = 0; i < D->nparams; i++) {
    const Param *p = D->params[i];
    if (!p->is_image || (g->no_read0 && p->img_index == 0) || p->img_index == g->virt) continue;
    int k = p->img_index;
    Border b = g->borders[k];
    const char *T = cg_ctype(p->type.s);
    OUT("PXR_FN %s %s_rd%d(const PXR_GLOBAL %s *PXR_RESTRICT p, ptrdiff_t pitch, int w, int h, int x, int y, int c) {\n", T,
        g->pfx, k, T);
    if (b.kind == B_CONSTANT) {
      OUT("  if (!pxr_inside(x, w) || !pxr_inside(y, h)) return ");
      cg_border_value(g, k);
      OUT(";\n");
    } else {
      const char *fn = cg_border_index_fn(b.kind);
      OUT("  if (!pxr_inside(x, w)) x = %s(x, w);\n  if (!pxr_inside(y, h)) y = %s(y, h);\n", fn, fn);
    }
    OUT("  return p[(ptrdiff_t)y * pitch + (ptrdiff_t)x * %d + c];\n}\n", p->type.lanes);
    if (!g->varying) continue;
    /* the lanes' read ("pv"): the same pixel with no branch, so that the C compiler
     * vectorises the lanes' reads (a masked gather through the branches above ran 4x
     * slower): the index mapped unconditionally (clamp: two compares), a constant border
     * selected after a load from the clamped position */
    OUT("PXR_FN %s %s_rl%d(const PXR_GLOBAL %s *PXR_RESTRICT p, ptrdiff_t pitch, int w, int h, int x, int y, int c) {\n",
        T, g->pfx, k, T);
    if (b.kind == B_CONSTANT || b.kind == B_CLAMP) {
      if (b.kind == B_CONSTANT) OUT("  const int in_ = pxr_inside(x, w) & pxr_inside(y, h);\n");
      OUT("  x = pxr_clamp_lane(x, w);\n  y = pxr_clamp_lane(y, h);\n");
    } else {
      const char *fn = cg_border_index_fn(b.kind);
      OUT("  x = pxr_inside(x, w) ? x : %s(x, w);\n  y = pxr_inside(y, h) ? y : %s(y, h);\n", fn, fn);
    }
    OUT("  const %s v_ = p[(ptrdiff_t)y * pitch + (ptrdiff_t)x * %d + c];\n", T, p->type.lanes);
    if (b.kind == B_CONSTANT) {
      OUT("  return in_ ? v_ : ");
      cg_border_value(g, k);
      OUT(";\n}\n");
    } else {
      OUT("  return v_;\n}\n");
    }
  }
}

void cg_border_value(Gen *g, int k) {
  Scalar s = cg_image_param(g->D, k)->type.s;
  Lane v = lane_convert((Lane){.f = g->borders[k].value}, T_F64, s);
  if (scalar_is_float(s)) emit_float(g->o, v.f, s);
  else emit_int(g->o, v.i, s);
}

/* Marks the image and scalar parameters used, for the variants that read some images
 * only through others' windows, or not at all (warning-free under -Wall -Wextra). */
static void void_params(Gen *g) {
  const Decl *D = g->D;
  OUT(" ");
  if (!D->nparams) OUT(" (void)none_;");
  for (int i = 0; i < D->nparams; i++) {
    const Param *p = D->params[i];
    int k = p->img_index;
    if (p->is_image) OUT(" (void)i%d; (void)p%d; (void)w%d; (void)h%d;", k, k, k, k);
    else OUT(" (void)s%d;", p->scalar_index);
  }
  for (int k = 0; k < g->nhoist; k++) OUT(" (void)u%d;", k);
  OUT("\n");
}

/* Pixel function of a kernel or histogram: runs the body for (x, y). `counts32`: the
 * histogram variant that counts into 32-bit sub-histograms (suffix "c"). */
static void reg_params(Gen *g) {
  const Decl *D = g->D;
  for (int i = 0; i < D->nparams; i++) {
    const Param *p = D->params[i];
    if (p->is_image && g->direct[p->img_index])
      OUT(", const %s *PXR_RESTRICT r%d", cg_ctype(p->type.s), p->img_index);
  }
  OUT(", int j_");
}

static void pixel_fn_named(Gen *g, int variant, bool counts32, const char *name) {
  const Decl *D = g->D;
  g->variant = variant;
  g->line = 0;
  OUT("PXR_FN_ALWAYS void %s_%s%s(", g->pfx, name, counts32 ? "c" : "");
  img_params(g);
  if (variant & V_REG) reg_params(g);
  if (variant & V_SMEM)
    for (int i = 0; i < D->nparams; i++) {
      const Param *p = D->params[i];
      int k = p->img_index;
      if (p->is_image && g->direct[k])
        OUT(", const %s%s *PXR_RESTRICT t%d, int ox%d, int oy%d, int tp%d", (variant & V_WIN) ? "" : "PXR_LOCAL ",
            (variant & V_WIN) ? cg_window_ctype(p->type.s) : cg_ctype(p->type.s), k, k, k, k);
    }
  if (variant & V_TILEBUF) { /* with V_WIN, a private array of widened pixels (a GPU thread's window) */
    Scalar ts = cg_image_param(D, g->tb_img)->type.s;
    OUT(", const %s%s *PXR_RESTRICT tb, int fx0, int fy0, ptrdiff_t fs", (variant & V_WIN) ? "" : "PXR_LOCAL ",
        (variant & V_WIN) ? cg_window_ctype(ts) : cg_ctype(ts));
  }
  if (variant & V_ROWSUM)
    for (int i = 0; i < D->sep->nacc; i++) OUT(", %s r%d", cg_ctype(D->sep->acc[i]->type.s), i);
  else if (variant & V_SEP)
    for (int i = 0; i < D->sep->nacc; i++) OUT(", const %s *PXR_RESTRICT c%d", cg_ctype(D->sep->col[i].s), i);
  if ((variant & V_SEP) && !(variant & V_ROWSUM)) OUT(", int xa");
  if (variant & V_AXES) cg_axes_params(g);
  if (D->kind == D_HISTOGRAM)
    OUT(", int x, int y, int W, int H, %s *PXR_RESTRICT bins) {\n",
        counts32 ? "PXR_LOCAL uint32_t" : hist_double_sums(D) ? "PXR_GLOBAL double" : "PXR_GLOBAL int64_t");
  else
    OUT(", int x, int y, int W, int H, %s *%so) {\n", cg_ctype(D->type.s), restrict_kw(g));
  OUT("  (void)x; (void)y; (void)W; (void)H;\n");
  void_params(g);
  if (variant & V_AXES) {
    cg_axes_voids(g);
    OUT("\n");
  }
  g->depth = 1;
  g->counts32 = counts32;
  stmts(g, D->body->body);
  g->counts32 = false;
  OUT("}\n");
}

/* Pixel function of a reduction: returns the mapped value (or, when `inner`, the value
 * before its final widening conversion, for row-wise accumulation). */
void cg_reduce_fn(Gen *g, int variant, bool inner, const char *name) {
  const Decl *D = g->D;
  const Node *e = inner ? D->body->a : D->body;
  g->variant = variant;
  OUT("PXR_FN_ALWAYS %s %s_%s%s(", cg_ctype(e->type.s), g->pfx, name, inner ? "r" : "");
  img_params(g);
  if (variant & V_REG) reg_params(g);
  OUT(", int x, int y, int W, int H) {\n  (void)x; (void)y; (void)W; (void)H;\n");
  void_params(g);
  OUT("  return ");
  cg_expr(g, e, 0);
  OUT(";\n}\n");
}

/* Margins of the iteration space for border-none inputs, and of the direct interior. */
typedef struct {
  int nl, nr, nt, nb; /* none margins (constants) */
} Margins;

static Margins none_margins(const Gen *g) {
  Margins m = {0};
  const Decl *D = g->D;
  for (int i = 0; i < D->nimages; i++) {
    const Access *ac = &D->access[i];
    if (g->borders[i].kind != B_NONE || !ac->read_rel || !ac->window_known) continue;
    if (-ac->x0 > m.nl) m.nl = -ac->x0;
    if (ac->x1 > m.nr) m.nr = ac->x1;
    if (-ac->y0 > m.nt) m.nt = -ac->y0;
    if (ac->y1 > m.nb) m.nb = ac->y1;
  }
  return m;
}

/* Emits the unpacking of arguments and the region/interior bounds shared by all loops. */
void cg_prologue(Gen *g, bool has_out) {
  const Decl *D = g->D;
  bool shared = false;
  for (int i = 0; i < D->nparams; i++) {
    const Param *p = D->params[i];
    int k = p->img_index;
    if (p->is_image) {
      OUT("  const PXR_GLOBAL %s *i%d = (const PXR_GLOBAL %s *)PXR_IMAGE_DATA(in, %d); const ptrdiff_t p%d = (ptrdiff_t)(in[%d].pitch / (int64_t)sizeof(%s));"
          " const int w%d = in[%d].width, h%d = in[%d].height;\n",
          cg_ctype(p->type.s), k, cg_ctype(p->type.s), k, k, k, cg_ctype(p->type.s), k, k, k, k);
    } else if (typed_array(g, p)) {
      /* the elements in their type (and the 0 after them): once per run (C), or by each
       * GPU block into shared memory, every thread of which reads every element, often in
       * a loop (equalize's table: 9.3 -> 5.1 us on an H100) */
      int si = p->scalar_index;
      const char *T = cg_ctype(p->type.s);
      char f = scalar_is_float(p->type.s) ? 'f' : 'i';
      if (g->shared_arrays) {
        OUT("  PXG_SHARED %s s%d_[%d];\n", T, si, p->len + 1);
        OUT("  for (int i_ = PXG_TY * PXG_NTX + PXG_TX; i_ <= %d; i_ += PXG_NTX * PXG_NTY) s%d_[i_] = (%s)PXR_ARRAY_ARG(sc, %d)[i_].%c;\n",
            p->len, si, T, si, f);
        OUT("  const PXR_LOCAL %s *s%d = s%d_;\n", T, si, si);
        shared = true;
      } else {
        OUT("  %s s%d_[%d];\n  for (int i = 0; i <= %d; i++) s%d_[i] = (%s)PXR_ARRAY_ARG(sc, %d)[i].%c;\n"
            "  const %s *s%d = s%d_;\n",
            T, si, p->len + 1, p->len, si, T, si, f, T, si, si);
      }
    } else if (p->len) {
      OUT("  const PXR_GLOBAL pxlc_scalar *s%d = PXR_ARRAY_ARG(sc, %d);\n", p->scalar_index, p->scalar_index);
    } else {
      OUT("  const %s s%d = (%s)sc[%d].%c;\n", cg_ctype(p->type.s), p->scalar_index, cg_ctype(p->type.s), p->scalar_index,
          scalar_is_float(p->type.s) ? 'f' : 'i');
    }
  }
  if (shared) OUT("  PXG_SYNC();\n");
  /* what the kernel computes from its scalar parameters alone, once */
  int variant = g->variant;
  g->variant = V_EDGE;
  g->no_hoist = true;
  for (int k = 0; k < g->nhoist; k++) {
    OUT("  const %s u%d = ", cg_ctype(g->hoist[k]->type.s), k);
    cg_expr(g, g->hoist[k], 0);
    OUT(";\n  (void)u%d;\n", k);
  }
  g->no_hoist = false;
  g->variant = variant;
  if (has_out && D->tile[0]) /* a tiler: the repetition space */
    OUT("  const int W = out->width / %d, H = out->height / %d;\n", D->tile[0], D->tile[1]);
  else if (has_out)
    OUT("  const int W = out->width, H = out->height;\n");
  else
    OUT("  const int W = w0, H = h0;\n");
  Margins m = none_margins(g);
  OUT("  const int rx0 = W < %d ? W : %d, rx1 = W - %d > rx0 ? W - %d : rx0;\n", m.nl, m.nl, m.nr, m.nr);
  OUT("  const int ry0 = H < %d ? H : %d, ry1 = H - %d > ry0 ? H - %d : ry0;\n", m.nt, m.nt, m.nb, m.nb);
  /* interior: every direct relative read stays inside its image */
  OUT("  int ix0 = rx0, ix1 = rx1, iy0 = ry0, iy1 = ry1;\n");
  for (int i = 0; i < D->nimages; i++) {
    if (!g->direct[i]) continue;
    const Access *ac = &D->access[i];
    OUT("  if (ix0 < %d) ix0 = %d;\n  if (ix1 > w%d - %d) ix1 = w%d - %d;\n", -ac->x0, -ac->x0, i, ac->x1, i, ac->x1);
    OUT("  if (iy0 < %d) iy0 = %d;\n  if (iy1 > h%d - %d) iy1 = h%d - %d;\n", -ac->y0, -ac->y0, i, ac->y1, i, ac->y1);
  }
  OUT("  if (ix1 < ix0) ix1 = ix0;\n  if (iy1 < iy0) iy1 = iy0;\n");
  OUT("  (void)ix0; (void)ix1; (void)iy0; (void)iy1;\n");
  OUT("  const int nt_ = pxlc_threads(nthreads);\n  (void)nt_;\n");
}
/* The combine of a reduction as C: acc = acc OP v. */
void cg_combine(Gen *g, const char *acc, const char *v) {
  const Decl *D = g->D;
  Scalar s = D->type.s;
  switch (D->redop) {
  case R_SUM:
    if (s == T_I32 || s == T_I64) OUT("%s = pxr_add_%s(%s, %s);", acc, sfx(s), acc, v);
    else OUT("%s = (%s)(%s + %s);", acc, cg_ctype(s), acc, v);
    break;
  case R_MIN: case R_MAX:
    OUT("%s = pxr_%s_%s(%s, %s);", acc, D->redop == R_MIN ? "min" : "max", sfx(s), acc, v);
    break;
  default: {
    StrBuf args = {0};
    StrBuf *saved = g->o;
    g->o = &args;
    for (int i = 0; i < D->nscalars; i++) OUT(", s%d", i);
    g->o = saved;
    OUT("%s = %s_comb(%s, %s%s);", acc, g->pfx, acc, v, args.s ? args.s : "");
    sb_free(&args);
    break;
  }
  }
}

void cg_better(Gen *g, const char *v, const char *acc) {
  const Decl *D = g->D;
  const char *cmp = D->redop == R_ARGMIN ? "<" : ">";
  if (scalar_is_float(D->type.s))
    OUT("(%s == %s && (%s != %s || %s %s %s))", v, v, acc, acc, v, cmp, acc);
  else
    OUT("(%s %s %s)", v, cmp, acc);
}

/* Folds the value v of pixel (x, y) into acc (and, for argmin/argmax, its position ax,
 * ay: the first pixel, then only a better value), without a trailing newline. */
void cg_fold_pixel(Gen *g, const char *v) {
  if (g->D->redop == R_ARGMIN || g->D->redop == R_ARGMAX) {
    OUT("if (ax < 0 || ");
    cg_better(g, v, "acc");
    OUT(") { acc = %s; ax = x; ay = y; }", v);
  } else {
    cg_combine(g, "acc", v);
  }
}

void cg_identity(Gen *g) {
  const Decl *D = g->D;
  Scalar s = D->type.s;
  bool f = scalar_is_float(s);
  switch (D->redop) {
  case R_MIN:
    if (f) OUT("(%s)INFINITY", cg_ctype(s));
    else emit_int(g->o, lane_convert((Lane){.i = INT64_MAX}, T_I64, s).i | (s == T_U64 ? -1 : 0), s);
    break;
  case R_MAX:
    if (f) OUT("(%s)-INFINITY", cg_ctype(s));
    else emit_int(g->o, lane_convert((Lane){.i = INT64_MIN}, T_I64, s).i, s);
    break;
  case R_COMBINE:
    g->variant = V_EDGE;
    cg_expr(g, D->identity, 0);
    break;
  default:
    OUT("0");
    break;
  }
}

/* True if no bin() of the body has a weight: the histogram only counts. */
static bool counts_only(const Node *s) {
  for (; s; s = s->next) {
    if (s->kind == ND_BIN && s->b) return false;
    if (s->kind == ND_BLOCK && !counts_only(s->body)) return false;
    if (s->kind == ND_IF && (!counts_only(s->b) || !counts_only(s->c))) return false;
    if (s->kind == ND_FOR && (!counts_only(s->init) || !counts_only(s->b) || !counts_only(s->step))) return false;
  }
  return true;
}

/* ---- lanes: neighbouring pixels in one call (C, "pv") ---- */

/* Whether expression n can be computed lane by lane: no relative reads (they go through
 * the border code of x), vectors or local arrays. */
static bool lane_expr_ok(const Node *n) {
  if (!n) return true;
  if (n->type.lanes > 1 || n->kind == ND_READ || n->kind == ND_VEC || n->kind == ND_LANE) return false;
  if (n->kind == ND_INDEX && !n->var->param && !n->var->is_const) return false;
  if (!lane_expr_ok(n->a) || !lane_expr_ok(n->b) || !lane_expr_ok(n->c)) return false;
  for (int i = 0; i < n->nargs; i++)
    if (!lane_expr_ok(n->args[i])) return false;
  return true;
}

/* Whether expression n depends on x: the coordinate, or a varying local. */
static bool lane_varies(const Gen *g, const Node *n) {
  if (!n) return false;
  if (n->kind == ND_COORD) return n->ival == 0;
  if (n->kind == ND_VAR) return !n->var->param && n->var->slot >= 0 && g->varying[n->var->slot];
  if (lane_varies(g, n->a) || lane_varies(g, n->b) || lane_varies(g, n->c)) return true;
  for (int i = 0; i < n->nargs; i++)
    if (lane_varies(g, n->args[i])) return true;
  return false;
}

/* Marks the locals assigned a varying value in statements s (and those after it); *changed
 * when one is new. */
static void lane_mark(Gen *g, const Node *s, bool *changed) {
  for (; s; s = s->next) {
    if ((s->kind == ND_DECL || s->kind == ND_ASSIGN) && !g->varying[s->var->slot] && lane_varies(g, s->a)) {
      g->varying[s->var->slot] = true;
      *changed = true;
    }
    lane_mark(g, s->body, changed);
    lane_mark(g, s->init, changed);
    lane_mark(g, s->step, changed);
    if (s->kind == ND_IF || s->kind == ND_FOR) {
      lane_mark(g, s->b, changed);
      lane_mark(g, s->c, changed);
    }
  }
}

/* Whether statements s fit "pv": scalar locals, conditions the same for every lane, a
 * return of a value that depends on x, only as the body's last statement (`top`);
 * *loops counts the for loops. */
static bool lane_stmts_ok(const Gen *g, const Node *s, bool top, int *loops) {
  for (; s; s = s->next) {
    switch (s->kind) {
    case ND_BLOCK:
      if (!lane_stmts_ok(g, s->body, false, loops)) return false;
      break;
    case ND_DECL: case ND_ASSIGN:
      if (s->var->len || s->var->type.lanes != 1 || s->var->param || !lane_expr_ok(s->a)) return false;
      break;
    case ND_IF:
      if (!lane_expr_ok(s->a) || lane_varies(g, s->a) || !lane_stmts_ok(g, s->b, false, loops) ||
          !lane_stmts_ok(g, s->c, false, loops))
        return false;
      break;
    case ND_FOR:
      if (!lane_expr_ok(s->a) || lane_varies(g, s->a) || !lane_stmts_ok(g, s->init, false, loops) ||
          !lane_stmts_ok(g, s->step, false, loops) || !lane_stmts_ok(g, s->b, false, loops))
        return false;
      ++*loops;
      break;
    case ND_RETURN: /* and its value depends on x: else every lane computes the same */
      if (!top || s->next || s->nargs || !lane_expr_ok(s->a) || !lane_varies(g, s->a)) return false;
      break;
    default:
      return false;
    }
  }
  return true;
}

bool cg_lanes_plan(Gen *g) {
  const Decl *D = g->D;
  if (D->kind != D_KERNEL || D->scan || D->tile[0] || D->sep || D->global || D->nouts || D->type.lanes != 1 ||
      !D->body || D->nslots <= 0)
    return false;
  for (int i = 0; i < D->nparams; i++)
    if (D->params[i]->is_image && D->params[i]->type.lanes != 1) return false;
  g->varying = PXL_CALLOC((size_t)D->nslots, sizeof *g->varying);
  if (!g->varying) return false;
  for (bool changed = true; changed;) {
    changed = false;
    lane_mark(g, D->body->body, &changed);
  }
  int loops = 0;
  if (lane_stmts_ok(g, D->body->body, true, &loops) && loops > 0) return true;
  cg_lanes_free(g);
  return false;
}

void cg_lanes_free(Gen *g) {
  PXL_FREE(g->varying);
  g->varying = NULL;
}

/* ---- values of the scalar parameters alone, computed once per launch ---- */

/* Whether expression n depends on the kernel's scalar parameters (and image sizes) only;
 * *worth: it calls a user function, a math function or divides - worth computing once. */
static bool uniform(const Node *n, bool *worth) {
  if (n->type.lanes != 1) return false;
  switch (n->kind) {
  case ND_NUM: case ND_IMGDIM:
    return true;
  case ND_VAR:
    return n->var->param && !n->var->len;
  case ND_FCALL: /* functions see only their arguments (check.c): no pixels, no coordinates */
    if (!n->func || !n->func->body || n->func->type.lanes != 1) return false;
    *worth = true;
    break;
  case ND_CALL:
    if (n->builtin != BI_MIN && n->builtin != BI_MAX && n->builtin != BI_ABS && n->builtin != BI_CLAMP) *worth = true;
    break;
  case ND_DIV: case ND_MOD:
    *worth = true;
    break;
  case ND_CAST: case ND_NEG: case ND_NOT: case ND_BITNOT: case ND_ADD: case ND_SUB: case ND_MUL: case ND_SHL:
  case ND_SHR: case ND_BITAND: case ND_BITOR: case ND_BITXOR: case ND_EQ: case ND_NE: case ND_LT: case ND_LE:
  case ND_GT: case ND_GE: case ND_LOGAND: case ND_LOGOR: case ND_COND:
    break;
  default:
    return false;
  }
  if ((n->a && !uniform(n->a, worth)) || (n->b && !uniform(n->b, worth)) || (n->c && !uniform(n->c, worth)))
    return false;
  for (int i = 0; i < n->nargs; i++)
    if (!uniform(n->args[i], worth)) return false;
  return true;
}

/* Collects the largest uniform expressions worth hoisting in node n (with `list`, also in
 * the statements after it), up to PXL_CG_MAX_HOIST. */
static void hoist_walk(Gen *g, const Node *n, bool list) {
  for (; n; n = list ? n->next : NULL) {
    bool worth = false;
    if (n->type.s != T_VOID && uniform(n, &worth)) {
      if (worth && g->nhoist < PXL_CG_MAX_HOIST) g->hoist[g->nhoist++] = n;
      continue;
    }
    const Node *kids[5] = {n->a, n->b, n->c, n->init, n->step};
    for (int i = 0; i < 5; i++) hoist_walk(g, kids[i], false);
    hoist_walk(g, n->body, true);
    for (int i = 0; i < n->nargs; i++) hoist_walk(g, n->args[i], false);
  }
}

/* ---- instances ---- */

void cg_init(Gen *g, StrBuf *out, const Decl *D, const Border *borders, const char *pfx, bool *direct) {
  memset(g, 0, sizeof *g);
  g->o = out;
  g->D = D;
  g->borders = borders;
  g->pfx = pfx;
  g->direct = direct;
  g->tb_img = -1;
  g->virt = -1;
  g->chg_img = -1;
  for (int i = 0; i < D->nimages; i++) {
    const Access *ac = &D->access[i];
    direct[i] = ac->read_rel && ac->window_known && !ac->gather;
  }
  if (D->kind == D_KERNEL && !D->scan && D->body) hoist_walk(g, D->body, false);
}

void cg_combine_fn(Gen *g) {
  const Decl *D = g->D;
  if (D->kind != D_REDUCE || D->redop != R_COMBINE) return;
  OUT("PXR_FN %s %s_comb(%s v%d, %s v%d", cg_ctype(D->type.s), g->pfx, cg_ctype(D->type.s), D->combine_a->slot,
      cg_ctype(D->type.s), D->combine_b->slot);
  for (int i = 0; i < D->nparams; i++)
    if (!D->params[i]->is_image) {
      OUT(", ");
      cg_scalar_param(g, D->params[i]);
    }
  OUT(") {\n ");
  for (int i = 0; i < D->nparams; i++)
    if (!D->params[i]->is_image) OUT(" (void)s%d;", D->params[i]->scalar_index);
  OUT("\n  return ");
  g->variant = V_EDGE;
  cg_expr(g, D->combine, 0);
  OUT(";\n}\n");
}

/* ---- tables and user functions ---- */

typedef struct {
  const Var **tables;
  const Decl **funcs; /* in post-order: every function after the ones it calls */
  int ntables, nfuncs, cap_t, cap_f;
  bool oom;
} Uses;

static bool push(const void ***list, int *n, int *cap, const void *x) {
  for (int i = 0; i < *n; i++)
    if ((*list)[i] == x) return false;
  if (*n == *cap) {
    int nc = *cap ? *cap * 2 : 8;
    const void **nl = PXL_REALLOC((void *)*list, sizeof(void *) * (size_t)nc);
    if (!nl) return false;
    *list = nl;
    *cap = nc;
  }
  (*list)[(*n)++] = x;
  return true;
}

static bool seen_func(const Uses *u, const Decl *f) {
  for (int i = 0; i < u->nfuncs; i++)
    if (u->funcs[i] == f) return true;
  return false;
}

/* Collects the tables and functions used by the tree n (statements and expressions). */
static void collect_uses(Uses *u, const Node *n) {
  for (; n; n = n->next) {
    if (n->kind == ND_INDEX && n->var->is_const)
      push((const void ***)&u->tables, &u->ntables, &u->cap_t, n->var);
    collect_uses(u, n->a);
    collect_uses(u, n->b);
    collect_uses(u, n->c);
    collect_uses(u, n->init);
    collect_uses(u, n->step);
    collect_uses(u, n->body);
    for (int i = 0; i < n->nargs; i++) collect_uses(u, n->args[i]);
    if (n->kind == ND_FCALL && !seen_func(u, n->func)) {
      collect_uses(u, n->func->body); /* callees first; no recursion, so this ends */
      if (!seen_func(u, n->func)) push((const void ***)&u->funcs, &u->nfuncs, &u->cap_f, n->func);
    }
  }
}

static void user_func(Gen *g, const Decl *f) {
  const Decl *saved = g->D;
  OUT("PXR_FN %s %s_f%d(", cg_ctype(f->type.s), g->pfx, f->index);
  const char *sep = "";
  if (f->type.lanes > 1) OUT("int l_"), sep = ", ";
  for (int i = 0; i < f->nparams; i++) {
    const Param *p = f->params[i];
    if (p->type.lanes == 1) OUT("%s%s v%d", sep, cg_ctype(p->type.s), p->var->slot);
    else
      for (int k = 0; k < p->type.lanes; k++) OUT("%s%s q%d_%d", sep, cg_ctype(p->type.s), p->var->slot, k);
    sep = ", ";
  }
  OUT("%s) {\n", *sep ? "" : "void");
  if (f->type.lanes > 1) OUT("  (void)l_;\n");
  for (int i = 0; i < f->nparams; i++) {
    const Param *p = f->params[i];
    if (p->type.lanes == 1) {
      OUT("  (void)v%d;\n", p->var->slot);
      continue;
    }
    OUT("  %s v%d[%d] = {", cg_ctype(p->type.s), p->var->slot, p->type.lanes);
    for (int k = 0; k < p->type.lanes; k++) OUT("%sq%d_%d", k ? ", " : "", p->var->slot, k);
    OUT("};\n  (void)v%d;\n", p->var->slot);
  }
  g->D = f;
  g->in_func = true;
  g->depth = 1;
  g->line = 0;
  int variant = g->variant;
  g->variant = V_EDGE;
  stmts(g, f->body->body);
  OUT("  return 0; /* not reached: every path returns */\n}\n");
  g->variant = variant;
  g->in_func = false;
  g->D = saved;
}

void cg_user_defs(Gen *g) {
  const Decl *D = g->D;
  Uses u = {0};
  collect_uses(&u, D->body);
  collect_uses(&u, D->combine);
  collect_uses(&u, D->identity);
  collect_uses(&u, D->size_w);
  collect_uses(&u, D->size_h);
  for (int i = 0; i < u.ntables; i++) {
    const Var *v = u.tables[i];
    OUT("PXR_TABLE %s %s_t%d[%d] = {", cg_ctype(v->type.s), g->pfx, v->table, v->len + 1);
    for (int k = 0; k < v->len; k++) {
      if (k) OUT("%s", k % 16 ? ", " : ",\n  ");
      cg_expr(g, v->elems[k], 0);
    }
    OUT(", 0};\n");
  }
  for (int i = 0; i < u.nfuncs; i++) user_func(g, u.funcs[i]);
  PXL_FREE((void *)u.tables);
  PXL_FREE((void *)u.funcs);
}

void cg_functions(Gen *g) {
  cg_user_defs(g);
  cg_read_fns(g);
  cg_combine_fn(g);
  if (g->D->kind == D_REDUCE) {
    cg_reduce_fn(g, V_EDGE, false, "pe");
    cg_reduce_fn(g, V_DIRECT_REL, false, "pi");
  } else {
    pixel_fn_named(g, V_EDGE, false, "pe");
    pixel_fn_named(g, V_DIRECT_REL, false, "pi");
  }
}

void cg_pixel_fn(Gen *g, int variant, const char *name, bool counts32) {
  if (g->D->kind == D_REDUCE) cg_reduce_fn(g, variant, false, name);
  else pixel_fn_named(g, variant, counts32, name);
}

/* A histogram counts into 32-bit bins (a GPU block's shared bins, the CPU threads'
 * sub-histograms) only where no bin can pass 2^32 before it is flushed into the 64-bit
 * ones: a GPU block counts at most 128 rows of 65535 pixels, the CPU flushes every 256
 * rows, so at most 256 bin() calls per pixel, known when the analysis ran (no loop of
 * data-dependent length); other counting histograms add 64-bit counts. */
#define COUNTS32_BINS 256

bool cg_counts_only(const Gen *g) {
  const Decl *D = g->D;
  return D->kind == D_HISTOGRAM && counts_only(D->body) && D->metrics.exact && D->metrics.bins <= COUNTS32_BINS;
}

bool cg_corner_tiles(const Decl *D) { return D->skel == SK_P2P_NONSEQ || D->skel == SK_AFFINE; }

void cg_affine(Gen *g, const Affine *f, const char *X, const char *Y, int k, bool hi) {
  OUT("(int)(%lldLL + %lldLL * %s + %lldLL * %s + %lldLL * w%d + %lldLL * h%d)", (long long)(hi ? f->c1 : f->c0),
      (long long)f->cx, X, (long long)f->cy, Y, (long long)f->cw, k, (long long)f->ch, k);
}

void cg_corner_checks(Gen *g, const char *ind) {
  const Decl *D = g->D;
  for (int i = 0; i < D->nimages; i++) {
    const Access *ac = &D->access[i];
    if (!ac->read_abs || !ac->abs_affine) continue;
    for (int c = 0; c < 8; c++) {
      const char *cx = (c & 1) ? "(xe - 1)" : "tx", *cy = (c & 2) ? "(ye - 1)" : "ty";
      if ((c & 4) && ac->ax.c1 == ac->ax.c0 && ac->ay.c1 == ac->ay.c0) break;
      OUT("%sfast = fast && pxr_inside(", ind);
      cg_affine(g, &ac->ax, cx, cy, i, c & 4);
      OUT(", w%d) && pxr_inside(", i);
      cg_affine(g, &ac->ay, cx, cy, i, c & 4);
      OUT(", h%d);\n", i);
    }
  }
}

bool cg_tiler_direct(const Decl *D) {
  for (int i = 0; i < D->nimages; i++) /* a data-dependent read is checked always */
    if (D->access[i].gather || (D->access[i].read_abs && !D->access[i].abs_affine)) return false;
  return true;
}

void cg_tiler_fast(Gen *g, const char *ind) {
  OUT("%sint fast = %d;\n", ind, cg_tiler_direct(g->D));
  cg_corner_checks(g, ind);
}

int cg_use_tile_buffer(Gen *g) {
  g->tb_img = tile_buffer_image(g->D);
  g->tb_t = g->tb_img >= 0 && g->D->access[g->tb_img].ax.cx == 0;
  return g->tb_img;
}
