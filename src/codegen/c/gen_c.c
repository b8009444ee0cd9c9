/*
 * gen_c.c - C code generator of the CPU backend (see gen_c.h).
 *
 * Each stage instance becomes:
 *   - one read function per image parameter with its border mode baked in (edge path);
 *   - pixel functions, one per variant: "pe" reads every pixel through the border
 *     functions, "pi" reads bounded relative windows directly (the interior, branch-free,
 *     vectorisable), "pt" also reads affine absolute reads directly (tiles of transposes
 *     and flips whose corners are inside);
 *   - the entry point: OpenMP over rows; per row only the edge strips call "pe".
 * Vector (multi-channel) values are scalarised: every expression is emitted once per
 * lane. All arithmetic goes through src/ir/prelude.h, the same helpers the interpreter
 * uses, so results match it bit for bit (floats too, unless a reduction reorders sums).
 */
#include "codegen/c/gen_c.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "interp/interp.h"

#include "codegen/c/emit.h"

static const char *ctype(Scalar s) {
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
    else sb_printf(o, "((%s)%lld)", ctype(s), (long long)v);
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
      OUT("((%s)(", ctype(to));
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
  OUT("((%s)(", ctype(to)); /* int -> float, f32 <-> f64 */
  return 2;
}

/* ---- expressions ---- */

static void expr(Gen *g, const Node *n, int lane);

static int lane_of(const Node *n, int lane) { return n->type.lanes > 1 ? lane : 0; }

static void read_direct(Gen *g, const Param *p, const Node *ex, const Node *ey, bool relative) {
  int k = p->img_index, C = p->type.lanes;
  OUT("i%d[(ptrdiff_t)(", k);
  if (relative) OUT("y + ");
  expr(g, ey, 0);
  OUT(") * p%d + (ptrdiff_t)(", k);
  if (relative) OUT("x + ");
  expr(g, ex, 0);
  OUT(")");
  if (C > 1) OUT(" * %d", C);
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
  if (rel && (g->variant & V_SMEM) && g->direct[k]) { /* the staged tile */
    OUT("t%d[(ptrdiff_t)(y + ", k);
    expr(g, n->b, 0);
    OUT(" - oy%d) * tp%d + (ptrdiff_t)(x + ", k, k);
    expr(g, n->a, 0);
    OUT(" - ox%d) * %d + %d]", k, p->type.lanes, lane);
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
  if (!rel && (g->variant & V_TILEBUF) && k == g->tb_img) { /* the tile's footprint, copied */
    /* rows of the buffer follow the coordinate that varies with the output's y, so the
     * pixel loop over x reads it contiguously */
    OUT("tb[(ptrdiff_t)(");
    expr(g, g->tb_t ? n->a : n->b, 0);
    OUT(g->tb_t ? " - fx0) * fs + (ptrdiff_t)(" : " - fy0) * fs + (ptrdiff_t)(");
    expr(g, g->tb_t ? n->b : n->a, 0);
    OUT(g->tb_t ? " - fy0) * %d + %d]" : " - fx0) * %d + %d]", p->type.lanes, lane);
    return;
  }
  if (direct) {
    read_direct(g, p, n->a, n->b, rel);
    if (p->type.lanes > 1) OUT(" + %d", lane);
    OUT("]");
    return;
  }
  OUT("%s_rd%d(i%d, p%d, w%d, h%d, ", g->pfx, k, k, k, k, k);
  if (rel) OUT("pxr_add_i32(x, ");
  expr(g, n->a, 0);
  if (rel) OUT(")");
  OUT(", ");
  if (rel) OUT("pxr_add_i32(y, ");
  expr(g, n->b, 0);
  if (rel) OUT(")");
  OUT(", %d)", lane);
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
  if (scalar_is_float(s)) {
    fn = NULL;
  } else if (n->kind == ND_SHL || n->kind == ND_SHR) {
    fn = n->kind == ND_SHL ? "shl" : "shr";
  } else if ((n->kind == ND_DIV || n->kind == ND_MOD) && !const_div) {
    fn = n->kind == ND_DIV ? "div" : "mod";
  } else if ((s == T_I32 || s == T_I64) && (n->kind == ND_ADD || n->kind == ND_SUB || n->kind == ND_MUL)) {
    fn = n->kind == ND_ADD ? "add" : n->kind == ND_SUB ? "sub" : "mul";
  }
  if (fn) {
    OUT("pxr_%s_%s(", fn, sfx(s));
    expr(g, a, la);
    OUT(", ");
    expr(g, b, lb);
    OUT(")");
    return;
  }
  OUT("((%s)(", ctype(s));
  expr(g, a, la);
  OUT(" %s ", op);
  expr(g, b, lb);
  OUT("))");
}

static void call(Gen *g, const Node *n, int lane) {
  Scalar s = n->type.s;
  bool f32 = s == T_F32, fl = scalar_is_float(s);
  const char *name = NULL;
  switch (n->builtin) {
  case BI_MIN: case BI_MAX:
    OUT("pxr_%s_%s(", n->builtin == BI_MIN ? "min" : "max", sfx(s));
    expr(g, n->args[0], lane_of(n->args[0], lane));
    OUT(", ");
    expr(g, n->args[1], lane_of(n->args[1], lane));
    OUT(")");
    return;
  case BI_CLAMP:
    OUT("pxr_min_%s(pxr_max_%s(", sfx(s), sfx(s));
    expr(g, n->args[0], lane_of(n->args[0], lane));
    OUT(", ");
    expr(g, n->args[1], lane_of(n->args[1], lane));
    OUT("), ");
    expr(g, n->args[2], lane_of(n->args[2], lane));
    OUT(")");
    return;
  case BI_ABS:
    if (!fl && is_uns(s)) {
      expr(g, n->args[0], lane_of(n->args[0], lane));
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
    expr(g, n->args[i], lane_of(n->args[i], lane));
  }
  OUT(")");
}

static void truth(Gen *g, const Node *n) {
  OUT("(");
  expr(g, n, 0);
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
    expr(g, n->a, 0);
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

static void expr(Gen *g, const Node *n, int lane) {
  Scalar s = n->type.s;
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
    else OUT("v%d", n->var->slot);
    return;
  case ND_COORD:
    OUT("%s", n->ival == 0 ? "x" : n->ival == 1 ? "y" : n->ival == 2 ? "W" : "H");
    return;
  case ND_IMGDIM:
    OUT("%c%d", n->ival ? 'h' : 'w', n->param->img_index);
    return;
  case ND_READ: case ND_AT:
    emit_read(g, n, lane);
    return;
  case ND_LANE:
    expr(g, n->a, (int)n->ival);
    return;
  case ND_VEC:
    expr(g, n->args[lane], 0);
    return;
  case ND_CAST:
  {
    if (n->type.lanes == 1 && narrow_type(s) && narrow_of(n->a, s) == s && n->a->kind != ND_NUM) {
      expr_narrow(g, n->a, s); /* the value already has type s */
      return;
    }
    /* a value analysis proved in range: a plain C conversion, no saturation */
    int close = n->flags & NF_IN_RANGE ? (OUT("((%s)(", ctype(s)), 2) : open_conv(g, n->a->type.s, s);
    expr(g, n->a, lane_of(n->a, lane));
    while (close--) OUT(")");
    return;
  }
  case ND_NEG:
    if (s == T_I32 || s == T_I64) OUT("pxr_neg_%s(", sfx(s));
    else if (scalar_is_float(s)) OUT("(-");
    else OUT("((%s)0 - (", ctype(s));
    expr(g, n->a, lane_of(n->a, lane));
    OUT(is_uns(s) ? "))" : ")");
    return;
  case ND_BITNOT:
    OUT("((%s)~(", ctype(s));
    expr(g, n->a, lane_of(n->a, lane));
    OUT("))");
    return;
  case ND_NOT:
    OUT("((int32_t)(");
    expr(g, n->a, 0);
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
    expr(g, n->a, 0);
    OUT(" %s ", ops[n->kind - ND_EQ]);
    expr(g, n->b, 0);
    OUT("))");
    return;
  }
  case ND_COND:
    OUT("(");
    truth(g, n->a);
    OUT(" ? ");
    expr(g, n->b, lane_of(n->b, lane));
    OUT(" : ");
    expr(g, n->c, lane_of(n->c, lane));
    OUT(")");
    return;
  case ND_CALL: {
    Scalar t = n->type.lanes == 1 && is_int(s) ? narrow_of(n, T_VOID) : T_VOID;
    if (t != T_VOID) {
      OUT("((%s)", ctype(s));
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

static void stmt(Gen *g, const Node *s) {
  int lanes;
  switch (s->kind) {
  case ND_BLOCK:
    ind(g), OUT("{\n");
    g->depth++;
    stmts(g, s->body);
    g->depth--;
    ind(g), OUT("}\n");
    return;
  case ND_DECL:
    if (g->variant & V_SEP) /* temporaries of the window loop: replaced by column values */
      for (int i = 0; i < g->D->sep->ntmp; i++)
        if (g->D->sep->tmp[i] == s->var) return;
    lanes = s->var->type.lanes;
    ind(g);
    if (lanes > 1) {
      OUT("%s v%d[%d] = {", ctype(s->var->type.s), s->var->slot, lanes);
      for (int k = 0; k < lanes; k++) {
        if (k) OUT(", ");
        if (s->a) expr(g, s->a, lane_of(s->a, k));
        else OUT("0");
      }
      OUT("};\n");
    } else {
      OUT("%s v%d = ", ctype(s->var->type.s), s->var->slot);
      if (s->a) expr(g, s->a, 0);
      else OUT("0");
      OUT(";\n");
    }
    return;
  case ND_ASSIGN:
    lanes = s->var->type.lanes;
    ind(g);
    if (lanes > 1) { /* through a temporary: the right side may read the variable */
      OUT("{ %s t_[%d] = {", ctype(s->var->type.s), lanes);
      for (int k = 0; k < lanes; k++) {
        if (k) OUT(", ");
        expr(g, s->a, lane_of(s->a, k));
      }
      OUT("}; ");
      for (int k = 0; k < lanes; k++) OUT("v%d[%d] = t_[%d]; ", s->var->slot, k, k);
      OUT("}\n");
    } else {
      OUT("v%d = ", s->var->slot);
      expr(g, s->a, 0);
      OUT(";\n");
    }
    return;
  case ND_LANESET:
    ind(g), OUT("v%d[%d] = ", s->var->slot, (int)s->ival);
    expr(g, s->a, 0);
    OUT(";\n");
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
    ind(g), OUT("{ ");
    for (int k = 0; k < lanes; k++) {
      OUT("o[%d] = ", k);
      expr(g, s->a, lane_of(s->a, k));
      OUT("; ");
    }
    OUT("return; }\n");
    return;
  case ND_BIN:
    ind(g), OUT("{ int32_t b_ = ");
    expr(g, s->a, 0);
    OUT("; if ((uint32_t)b_ < %uu) ", (unsigned)g->D->nbins);
    if (g->D->weighted_float) {
      OUT("PXR_BIN_ADD_F64(&bins[b_], ");
      if (s->b) {
        OUT("(double)(");
        expr(g, s->b, 0);
        OUT(")");
      } else {
        OUT("1.0");
      }
      OUT(")");
    } else if (s->b) {
      OUT("PXR_BIN_ADD_I64(&bins[b_], ");
      expr(g, s->b, 0);
      OUT(")");
    } else {
      OUT(g->counts32 ? "PXR_BIN_INC32(&bins[b_])" : "PXR_BIN_INC(&bins[b_])");
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
static const Param *image_param(const Decl *D, int k) {
  for (int i = 0; i < D->nparams; i++)
    if (D->params[i]->img_index == k) return D->params[i];
  return D->params[0];
}

/* For a non-sequential P2P kernel: the one image read by affine absolute reads only,
 * whose tile footprint can be staged in a buffer; -1 if there is no such single image. */
static int tile_buffer_image(const Decl *D) {
  int k = -1;
  for (int i = 0; i < D->nimages; i++) {
    const Access *ac = &D->access[i];
    if (!ac->read_abs) continue;
    if (k >= 0 || !ac->abs_affine || ac->read_rel || ac->gather) return -1;
    k = i;
  }
  return k;
}

/* Parameter list of the pixel and read functions: images then scalars. */
static void img_params(Gen *g) {
  const Decl *D = g->D;
  for (int i = 0; i < D->nparams; i++) {
    const Param *p = D->params[i];
    if (i) OUT(", ");
    if (p->is_image)
      OUT("const PXR_GLOBAL %s *PXR_RESTRICT i%d, ptrdiff_t p%d, int w%d, int h%d", ctype(p->type.s), p->img_index, p->img_index,
          p->img_index, p->img_index);
    else
      OUT("%s s%d", ctype(p->type.s), p->scalar_index);
  }
}

static void img_args(Gen *g);

/* The argument list of the pixel functions (images then scalars) as text, in `buf`. */
static void args_text(Gen *g, StrBuf *buf) {
  StrBuf *saved = g->o;
  g->o = buf;
  img_args(g);
  g->o = saved;
}

static void img_args(Gen *g) {
  const Decl *D = g->D;
  for (int i = 0; i < D->nparams; i++) {
    const Param *p = D->params[i];
    if (i) OUT(", ");
    if (p->is_image) OUT("i%d, p%d, w%d, h%d", p->img_index, p->img_index, p->img_index, p->img_index);
    else OUT("s%d", p->scalar_index);
  }
}

static void read_fns(Gen *g) {
  const Decl *D = g->D;
  for (int i = 0; i < D->nparams; i++) {
    const Param *p = D->params[i];
    if (!p->is_image) continue;
    int k = p->img_index;
    Border b = g->borders[k];
    const char *T = ctype(p->type.s);
    OUT("PXR_FN %s %s_rd%d(const PXR_GLOBAL %s *PXR_RESTRICT p, ptrdiff_t pitch, int w, int h, int x, int y, int c) {\n", T,
        g->pfx, k, T);
    if (b.kind == B_CONSTANT) {
      Lane v = lane_convert((Lane){.f = b.value}, T_F64, p->type.s);
      OUT("  if (!pxr_inside(x, w) || !pxr_inside(y, h)) return ");
      if (scalar_is_float(p->type.s)) emit_float(g->o, v.f, p->type.s);
      else emit_int(g->o, v.i, p->type.s);
      OUT(";\n");
    } else {
      const char *fn = b.kind == B_MIRROR ? "pxr_mirror_idx" : b.kind == B_MIRROR101 ? "pxr_mirror101_idx"
                       : b.kind == B_WRAP ? "pxr_wrap_idx" : "pxr_clamp_idx";
      OUT("  if (!pxr_inside(x, w)) x = %s(x, w);\n  if (!pxr_inside(y, h)) y = %s(y, h);\n", fn, fn);
    }
    OUT("  return p[(ptrdiff_t)y * pitch + (ptrdiff_t)x * %d + c];\n}\n", p->type.lanes);
  }
}

static const char *variant_name(int v) {
  return v == V_EDGE ? "pe" : v == V_DIRECT_REL ? "pi" : (v & V_TILEBUF) ? "pb" : (v & V_SEP) ? "ph" : "pt";
}

/* Pixel function of a kernel or histogram: runs the body for (x, y). `counts32`: the
 * histogram variant that counts into 32-bit sub-histograms (suffix "c"). */
static void reg_params(Gen *g) {
  const Decl *D = g->D;
  for (int i = 0; i < D->nparams; i++) {
    const Param *p = D->params[i];
    if (p->is_image && g->direct[p->img_index])
      OUT(", const %s *PXR_RESTRICT r%d", ctype(p->type.s), p->img_index);
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
        OUT(", const PXR_LOCAL %s *PXR_RESTRICT t%d, int ox%d, int oy%d, int tp%d", ctype(p->type.s), k, k, k, k);
    }
  if (variant & V_TILEBUF)
    OUT(", const PXR_LOCAL %s *PXR_RESTRICT tb, int fx0, int fy0, ptrdiff_t fs", ctype(image_param(D, g->tb_img)->type.s));
  if (variant & V_SEP)
    for (int i = 0; i < D->sep->nacc; i++) OUT(", const %s *PXR_RESTRICT c%d", ctype(D->sep->col[i].s), i);
  if (variant & V_SEP) OUT(", int xa");
  if (D->kind == D_HISTOGRAM)
    OUT(", int x, int y, int W, int H, %s *PXR_RESTRICT bins) {\n",
        counts32 ? "PXR_LOCAL uint32_t" : D->weighted_float ? "PXR_GLOBAL double" : "PXR_GLOBAL int64_t");
  else
    OUT(", int x, int y, int W, int H, %s *PXR_RESTRICT o) {\n", ctype(D->type.s));
  OUT("  (void)x; (void)y; (void)W; (void)H;\n");
  g->depth = 1;
  g->counts32 = counts32;
  stmts(g, D->body->body);
  g->counts32 = false;
  OUT("}\n");
}

static void pixel_fn(Gen *g, int variant, bool counts32) {
  pixel_fn_named(g, variant, counts32, variant_name(variant));
}

/* Pixel function of a reduction: returns the mapped value (or, when `inner`, the value
 * before its final widening conversion, for row-wise accumulation). */
static void reduce_fn_named(Gen *g, int variant, bool inner, const char *name) {
  const Decl *D = g->D;
  const Node *e = inner ? D->body->a : D->body;
  g->variant = variant;
  OUT("PXR_FN_ALWAYS %s %s_%s%s(", ctype(e->type.s), g->pfx, name, inner ? "r" : "");
  img_params(g);
  if (variant & V_REG) reg_params(g);
  OUT(", int x, int y, int W, int H) {\n  (void)x; (void)y; (void)W; (void)H;\n  return ");
  expr(g, e, 0);
  OUT(";\n}\n");
}

static void reduce_fn(Gen *g, int variant, bool inner) { reduce_fn_named(g, variant, inner, variant_name(variant)); }

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
static void prologue(Gen *g, bool has_out) {
  const Decl *D = g->D;
  for (int i = 0; i < D->nparams; i++) {
    const Param *p = D->params[i];
    int k = p->img_index;
    if (p->is_image)
      OUT("  const PXR_GLOBAL %s *i%d = (const PXR_GLOBAL %s *)PXR_IMAGE_DATA(in, %d); const ptrdiff_t p%d = (ptrdiff_t)(in[%d].pitch / (int64_t)sizeof(%s));"
          " const int w%d = in[%d].width, h%d = in[%d].height;\n",
          ctype(p->type.s), k, ctype(p->type.s), k, k, k, ctype(p->type.s), k, k, k, k);
    else
      OUT("  const %s s%d = (%s)sc[%d].%c;\n", ctype(p->type.s), p->scalar_index, ctype(p->type.s), p->scalar_index,
          scalar_is_float(p->type.s) ? 'f' : 'i');
  }
  if (has_out)
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

/* Emits "for x in [a, b) CALL(variant)" where CALL is `call_fmt` with %s = function. */
static void xloop(Gen *g, const char *from, const char *to, int variant, const char *tail) {
  OUT("      for (int x = %s; x < %s; x++) ", from, to);
  sb_printf(g->o, tail, g->pfx, variant_name(variant));
  OUT("\n");
}

static const char *A_text(const StrBuf *b) { return b->s ? b->s : ""; }

/* Column value of accumulator i at column xs (C expression text in `xs`), direct or
 * through the border function. */
static void column(Gen *g, int i, bool direct) {
  const Separable *S = g->D->sep;
  int k = S->img->img_index;
  const char *CT = ctype(S->col[i].s);
  char rd[256];
  if (direct)
    snprintf(rd, sizeof rd, "(%s)i%d[(ptrdiff_t)(y + %%d) * p%d + xs]", CT, k, k);
  else
    snprintf(rd, sizeof rd, "(%s)%s_rd%d(i%d, p%d, w%d, h%d, xs, y + %%d, 0)", CT, g->pfx, k, k, k, k, k);
  OUT("          %s v = ", CT);
  sb_printf(g->o, rd, S->y0);
  OUT(";\n");
  for (int dy = S->y0 + 1; dy <= S->y1; dy++) {
    OUT("          v = ");
    Scalar cs = S->col[i].s;
    if (S->op[i] >= 0) OUT("pxr_%s_%s(v, ", S->op[i] == BI_MIN ? "min" : "max", sfx(cs));
    else if (cs == T_I32 || cs == T_I64) OUT("pxr_add_%s(v, ", sfx(cs));
    else OUT("(%s)(v + ", CT);
    sb_printf(g->o, rd, dy);
    OUT(");\n");
  }
  OUT("          c%d[j] = v;\n", i);
}

/* A separable window: per row, a column pass into per-thread buffers, then the row pass
 * (pixel function "ph") over the column values. */
static void separable_loop(Gen *g, const char *A, int C, const char *OT) {
  const Decl *D = g->D;
  const Separable *S = D->sep;
  int k = S->img->img_index;
  OUT("  const int chunk_ = W >= 65536 ? 1 : 65536 / W;\n");
  OUT("  #pragma omp parallel num_threads(nt_) if ((int64_t)W * H > 16384)\n  {\n");
  OUT("    const int cn = rx1 - rx0 + %d;\n", S->x1 - S->x0);
  for (int i = 0; i < S->nacc; i++)
    OUT("    %s *c%d = (%s *)malloc(sizeof(%s) * (size_t)(cn > 0 ? cn : 1));\n", ctype(S->col[i].s), i,
        ctype(S->col[i].s), ctype(S->col[i].s));
  OUT("    int okbuf = 1");
  for (int i = 0; i < S->nacc; i++) OUT(" && c%d", i);
  OUT(";\n");
  OUT("    #pragma omp for schedule(dynamic, chunk_)\n");
  OUT("    for (int y = 0; y < H; y++) {\n");
  OUT("      %s *orow = o + (ptrdiff_t)y * op;\n", OT);
  OUT("      if (y < ry0 || y >= ry1) { for (ptrdiff_t i = 0; i < (ptrdiff_t)W * %d; i++) orow[i] = 0; continue; }\n", C);
  OUT("      for (ptrdiff_t i = 0; i < (ptrdiff_t)rx0 * %d; i++) orow[i] = 0;\n", C);
  OUT("      for (ptrdiff_t i = (ptrdiff_t)rx1 * %d; i < (ptrdiff_t)W * %d; i++) orow[i] = 0;\n", C, C);
  OUT("      if (!okbuf) {\n");
  OUT("        for (int x = rx0; x < rx1; x++) %s_pe(%s, x, y, W, H, orow + (ptrdiff_t)x * %d);\n", g->pfx, A, C);
  OUT("        continue;\n      }\n");
  OUT("      const int xa = rx0 + %d;\n", S->x0);
  OUT("      int jd0 = 0, jd1 = 0;\n");
  OUT("      if (y + %d >= 0 && y + %d < h%d) {\n", S->y0, S->y1, k);
  OUT("        jd0 = -xa < 0 ? 0 : -xa > cn ? cn : -xa;\n");
  OUT("        jd1 = w%d - xa < jd0 ? jd0 : w%d - xa > cn ? cn : w%d - xa;\n      }\n", k, k, k);
  const char *ranges[3][3] = {{"0", "jd0", "e"}, {"jd0", "jd1", "d"}, {"jd1", "cn", "e"}};
  for (int r = 0; r < 3; r++) {
    OUT("      for (int j = %s; j < %s; j++) {\n        const int xs = xa + j;\n", ranges[r][0], ranges[r][1]);
    for (int i = 0; i < S->nacc; i++) {
      OUT("        {\n");
      column(g, i, ranges[r][2][0] == 'd');
      OUT("        }\n");
    }
    OUT("      }\n");
  }
  OUT("      for (int x = rx0; x < rx1; x++) %s_ph(%s", g->pfx, A);
  for (int i = 0; i < S->nacc; i++) OUT(", c%d", i);
  OUT(", xa, x, y, W, H, orow + (ptrdiff_t)x * %d);\n", C);
  OUT("    }\n");
  for (int i = 0; i < S->nacc; i++) OUT("    free(c%d);\n", i);
  OUT("  }\n}\n");
}

static void kernel_entry(Gen *g, const char *fname, bool exported) {
  const Decl *D = g->D;
  int C = D->type.lanes;
  const char *OT = ctype(D->type.s);
  OUT("%svoid %s(const pxlc_image *in, const pxlc_scalar *sc, pxlc_image *out, int nthreads) {\n",
      exported ? "" : "static ", fname);
  prologue(g, true);
  OUT("  %s *o = (%s *)out->data;\n  const ptrdiff_t op = (ptrdiff_t)(out->pitch / (int64_t)sizeof(%s));\n", OT, OT, OT);
  /* the call of a pixel function, with %s_%s left for prefix and variant */
  StrBuf args = {0};
  args_text(g, &args);
  char tail[4096];
  snprintf(tail, sizeof tail, "%%s_%%s(%s, x, y, W, H, orow + (ptrdiff_t)x * %d);", args.s ? args.s : "", C);
  if (D->skel == SK_P2P_NONSEQ) {
    /* tiles, so that both the reads and the writes of a transpose stay in cache */
    const int TS = scalar_size(D->type.s) * C >= 4 ? 32 : 64;
    OUT("  const int TS = %d;\n", TS);
    OUT("  #pragma omp parallel for schedule(dynamic, 1) num_threads(nt_) if ((int64_t)W * H > 16384)\n");
    OUT("  for (int ty = 0; ty < H; ty += TS) {\n");
    OUT("    for (int tx = 0; tx < W; tx += TS) {\n");
    OUT("      const int ye = ty + TS < H ? ty + TS : H, xe = tx + TS < W ? tx + TS : W;\n");
    OUT("      int fast = tx >= ix0 && xe <= ix1 && ty >= iy0 && ye <= iy1;\n");
    for (int i = 0; i < D->nimages; i++) {
      const Access *ac = &D->access[i];
      if (!ac->read_abs || !ac->abs_affine) continue;
      for (int c = 0; c < 4; c++) {
        const char *cx = (c & 1) ? "(xe - 1)" : "tx", *cy = (c & 2) ? "(ye - 1)" : "ty";
        OUT("      fast = fast && pxr_inside((int)(%lldLL + %lldLL * %s + %lldLL * %s + %lldLL * w%d + %lldLL * h%d), w%d)"
            " && pxr_inside((int)(%lldLL + %lldLL * %s + %lldLL * %s + %lldLL * w%d + %lldLL * h%d), h%d);\n",
            (long long)ac->ax.c0, (long long)ac->ax.cx, cx, (long long)ac->ax.cy, cy, (long long)ac->ax.cw, i,
            (long long)ac->ax.ch, i, i, (long long)ac->ay.c0, (long long)ac->ay.cx, cx, (long long)ac->ay.cy, cy,
            (long long)ac->ay.cw, i, (long long)ac->ay.ch, i, i);
      }
    }
    if (g->tb_img >= 0) {
      /* stage the tile's footprint (a TS x TS block for a permutation) contiguously: the
       * column walk of a transpose then hits a small buffer, not rows a page apart that
       * all land in the same cache sets */
      const Access *ac = &D->access[g->tb_img];
      const Param *ip = image_param(D, g->tb_img);
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
      const char *ET = ctype(ip->type.s);
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
  if (D->sep) {
    separable_loop(g, A_text(&args), C, OT);
    sb_free(&args);
    return;
  }
  /* dynamic chunks of about 64K pixels: a core shared with another process does not hold
   * the whole launch back, as it would with a static split */
  OUT("  const int chunk_ = W >= 65536 ? 1 : 65536 / W;\n");
  OUT("  #pragma omp parallel for schedule(dynamic, chunk_) num_threads(nt_) if ((int64_t)W * H > 16384)\n");
  OUT("  for (int y = 0; y < H; y++) {\n");
  OUT("    %s *orow = o + (ptrdiff_t)y * op;\n", OT);
  OUT("    if (y < ry0 || y >= ry1) { for (ptrdiff_t i = 0; i < (ptrdiff_t)W * %d; i++) orow[i] = 0; continue; }\n", C);
  OUT("    for (ptrdiff_t i = 0; i < (ptrdiff_t)rx0 * %d; i++) orow[i] = 0;\n", C);
  OUT("    for (ptrdiff_t i = (ptrdiff_t)rx1 * %d; i < (ptrdiff_t)W * %d; i++) orow[i] = 0;\n", C, C);
  OUT("    if (y >= iy0 && y < iy1) {\n");
  xloop(g, "rx0", "ix0", V_EDGE, tail);
  xloop(g, "ix0", "ix1", V_DIRECT_REL, tail);
  xloop(g, "ix1", "rx1", V_EDGE, tail);
  OUT("    } else {\n");
  xloop(g, "rx0", "rx1", V_EDGE, tail);
  OUT("    }\n  }\n}\n");
  sb_free(&args);
}

/* The combine of a reduction as C: acc = acc OP v. */
static void combine_stmt(Gen *g, const char *acc, const char *v) {
  const Decl *D = g->D;
  Scalar s = D->type.s;
  switch (D->redop) {
  case R_SUM:
    if (s == T_I32 || s == T_I64) OUT("%s = pxr_add_%s(%s, %s);", acc, sfx(s), acc, v);
    else OUT("%s = (%s)(%s + %s);", acc, ctype(s), acc, v);
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

static void better_expr(Gen *g, const char *v, const char *acc) {
  const Decl *D = g->D;
  const char *cmp = D->redop == R_ARGMIN ? "<" : ">";
  if (scalar_is_float(D->type.s))
    OUT("(%s == %s && (%s != %s || %s %s %s))", v, v, acc, acc, v, cmp, acc);
  else
    OUT("(%s %s %s)", v, cmp, acc);
}

/* Folds the value v of pixel (x, y) into acc (and, for argmin/argmax, its position ax,
 * ay: the first pixel, then only a better value), without a trailing newline. */
static void fold_pixel(Gen *g, const char *v) {
  if (g->D->redop == R_ARGMIN || g->D->redop == R_ARGMAX) {
    OUT("if (ax < 0 || ");
    better_expr(g, v, "acc");
    OUT(") { acc = %s; ax = x; ay = y; }", v);
  } else {
    combine_stmt(g, "acc", v);
  }
}

static void identity(Gen *g) {
  const Decl *D = g->D;
  Scalar s = D->type.s;
  bool f = scalar_is_float(s);
  switch (D->redop) {
  case R_MIN:
    if (f) OUT("(%s)INFINITY", ctype(s));
    else emit_int(g->o, lane_convert((Lane){.i = INT64_MAX}, T_I64, s).i | (s == T_U64 ? -1 : 0), s);
    break;
  case R_MAX:
    if (f) OUT("(%s)-INFINITY", ctype(s));
    else emit_int(g->o, lane_convert((Lane){.i = INT64_MIN}, T_I64, s).i, s);
    break;
  case R_COMBINE:
    g->variant = V_EDGE;
    expr(g, D->identity, 0);
    break;
  default:
    OUT("0");
    break;
  }
}

static bool row_accumulate(const Decl *D) {
  if (D->redop != R_SUM || D->body->kind != ND_CAST || D->body->type.lanes != 1) return false;
  Scalar in = D->body->a->type.s, out = D->type.s;
  return (in == T_U8 || in == T_U16 || in == T_I16) && is_int(out) && scalar_size(out) >= 4;
}

static void reduce_entry(Gen *g, const char *fname, bool exported) {
  const Decl *D = g->D;
  const char *T = ctype(D->type.s);
  bool arg = D->redop == R_ARGMIN || D->redop == R_ARGMAX;
  bool rowacc = row_accumulate(D);
  StrBuf args = {0};
  args_text(g, &args);
  const char *A = args.s ? args.s : "";
  OUT("%svoid %s(const pxlc_image *in, const pxlc_scalar *sc, pxlc_scalar *res, int32_t *pos, int nthreads) {\n",
      exported ? "" : "static ", fname);
  prologue(g, false);
  OUT("  enum { MAXCH = 64 };\n  const int nch = H < MAXCH ? H : MAXCH;\n");
  OUT("  %s part[MAXCH]; int32_t px_[MAXCH], py_[MAXCH];\n", T);
  OUT("  #pragma omp parallel for schedule(dynamic, 1) num_threads(nt_) if ((int64_t)W * H > 16384)\n");
  OUT("  for (int c = 0; c < nch; c++) {\n");
  OUT("    const int y0 = (int)((int64_t)H * c / nch), y1 = (int)((int64_t)H * (c + 1) / nch);\n");
  OUT("    %s acc = ", T);
  identity(g);
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
        combine_stmt(g, "acc", v);
        OUT(" }\n");
        continue;
      }
      OUT("        for (int x = %s; x < %s; x++) {\n", ranges[r][q][0], ranges[r][q][1]);
      OUT("          const %s v = %s_%s(%s, x, y, W, H);\n          ", T, g->pfx, ranges[r][q][2], A);
      fold_pixel(g, "v");
      OUT("\n        }\n");
    }
  }
  OUT("      }\n    }\n    part[c] = acc; px_[c] = ax; py_[c] = ay;\n  }\n");
  OUT("  %s acc = ", T);
  identity(g);
  OUT(";\n  int32_t ax = -1, ay = -1;\n");
  OUT("  for (int c = 0; c < nch; c++) {\n    ");
  if (arg) {
    OUT("if (px_[c] >= 0 && (ax < 0 || ");
    better_expr(g, "part[c]", "acc");
    OUT(")) { acc = part[c]; ax = px_[c]; ay = py_[c]; }");
  } else {
    combine_stmt(g, "acc", "part[c]");
  }
  OUT("\n  }\n");
  if (scalar_is_float(D->type.s)) OUT("  res->f = (double)acc;\n");
  else OUT("  res->i = (int64_t)acc;\n");
  OUT("  pos[0] = ax; pos[1] = ay;\n}\n");
  sb_free(&args);
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

static void histogram_entry(Gen *g, const char *fname, bool exported) {
  const Decl *D = g->D;
  const char *BT = D->weighted_float ? "double" : "int64_t";
  bool counts = counts_only(D->body);
  StrBuf args = {0};
  args_text(g, &args);
  const char *A = args.s ? args.s : "";
  OUT("%svoid %s(const pxlc_image *in, const pxlc_scalar *sc, void *bins_out, int nthreads) {\n",
      exported ? "" : "static ", fname);
  prologue(g, false);
  OUT("  %s *bins = (%s *)bins_out;\n  const int NB = %d;\n", BT, BT, D->nbins);
  OUT("  for (int b = 0; b < NB; b++) bins[b] = 0;\n");
  /* integer bins: private copies per thread, merged (addition is exact and commutative);
   * float bins: one pass in row-major order, the interpreter's order. */
  OUT("  int nt = %s;\n", D->weighted_float ? "1" : "((int64_t)W * H > 65536 ? nt_ : 1)");
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
  OUT("    #pragma omp for schedule(dynamic, 16)\n");
  OUT("    for (int y = ry0; y < ry1; y++) {\n");
  const char *segs[4][3] = {{"rx0", "ix0", "pe"}, {"ix0", "ix1", "pi"}, {"ix1", "rx1", "pe"}, {"rx0", "rx1", "pe"}};
  for (int k = 0; k < 4; k++) {
    if (k == 0) OUT("      if (y >= iy0 && y < iy1) {\n");
    if (k == 3) OUT("      } else {\n");
    if (counts) {
      OUT("        if (sub) {\n");
      OUT("          int x = %s;\n", segs[k][0]);
      OUT("          for (; x + 3 < %s; x += 4) {\n", segs[k][1]);
      for (int j = 0; j < 4; j++)
        OUT("            %s_%sc(%s, x + %d, y, W, H, sub + (size_t)%d * NB);\n", g->pfx, segs[k][2], A, j, j);
      OUT("          }\n          for (; x < %s; x++) %s_%sc(%s, x, y, W, H, sub);\n", segs[k][1], g->pfx, segs[k][2], A);
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
  OUT("  }\n");
  OUT("  if (priv) {\n    for (int t = 0; t < nt; t++)\n      for (int b = 0; b < NB; b++)\n");
  OUT("        bins[b] = (int64_t)((uint64_t)bins[b] + (uint64_t)priv[(size_t)t * NB + b]);\n");
  OUT("    free(priv);\n  }\n}\n");
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
    "static inline int pxlc_threads(int n) {\n"
    "#ifdef _OPENMP\n  return n > 0 ? n : omp_get_max_threads();\n#else\n  (void)n;\n  return 1;\n#endif\n}\n"
    "static inline int pxlc_thread_id(void) {\n"
    "#ifdef _OPENMP\n  return omp_get_thread_num();\n#else\n  return 0;\n#endif\n}\n";

/* Emits the static functions and the entry point of one instance. */
static int emit_instance(StrBuf *out, const Decl *D, const Border *borders, const char *pfx, const char *fname,
                         bool exported, Err *err) {
  bool direct[64] = {0};
  if (D->nimages > 64) return err_set(err, PXL_EARG, "%s: too many image parameters", D->name);
  for (int i = 0; i < D->nimages; i++) {
    const Access *ac = &D->access[i];
    direct[i] = ac->read_rel && ac->window_known && !ac->gather;
  }
  Gen gen = {.o = out, .D = D, .borders = borders, .pfx = pfx, .direct = direct, .tb_img = -1};
  if (D->kind == D_KERNEL && D->skel == SK_P2P_NONSEQ) gen.tb_img = tile_buffer_image(D);
  if (gen.tb_img >= 0) gen.tb_t = D->access[gen.tb_img].ax.cx == 0; /* ex follows y: a transpose */
  Gen *g = &gen;
  OUT("\n/* ---- %s %s: %s", D->kind == D_KERNEL ? "kernel" : D->kind == D_REDUCE ? "reduce" : "histogram", D->name,
      skeleton_name(D->skel));
  for (int i = 0; i < D->nparams; i++)
    if (D->params[i]->is_image)
      OUT(", %s: %s", D->params[i]->name, border_name(borders[D->params[i]->img_index].kind));
  OUT(" ---- */\n");
  read_fns(g);
  if (D->kind == D_REDUCE) {
    if (D->redop == R_COMBINE) {
      OUT("PXR_FN %s %s_comb(%s v%d, %s v%d", ctype(D->type.s), pfx, ctype(D->type.s),
                D->combine_a->slot, ctype(D->type.s), D->combine_b->slot);
      for (int i = 0; i < D->nparams; i++)
        if (!D->params[i]->is_image)
          OUT(", %s s%d", ctype(D->params[i]->type.s), D->params[i]->scalar_index);
      OUT(") {\n  return ");
      g->variant = V_EDGE;
      expr(g, D->combine, 0);
      OUT(";\n}\n");
    }
    bool inner = row_accumulate(D);
    reduce_fn(g, V_EDGE, inner);
    reduce_fn(g, V_DIRECT_REL, inner);
    reduce_entry(g, fname, exported);
  } else if (D->kind == D_HISTOGRAM) {
    pixel_fn(g, V_EDGE, false);
    pixel_fn(g, V_DIRECT_REL, false);
    if (counts_only(D->body)) {
      pixel_fn(g, V_EDGE, true);
      pixel_fn(g, V_DIRECT_REL, true);
    }
    histogram_entry(g, fname, exported);
  } else {
    pixel_fn(g, V_EDGE, false);
    pixel_fn(g, V_DIRECT_REL, false);
    if (D->skel == SK_P2P_NONSEQ) pixel_fn(g, V_DIRECT_REL | V_DIRECT_AT, false);
    if (D->skel == SK_P2P_NONSEQ && g->tb_img >= 0) pixel_fn(g, V_DIRECT_REL | V_TILEBUF, false);
    if (D->sep) pixel_fn(g, V_SEP, false);
    kernel_entry(g, fname, exported);
  }
  if (out->oom) return err_set(err, PXL_ENOMEM, "out of memory generating C for %s", D->name);
  return PXL_OK;
}

int gen_c_stage(StrBuf *out, const Decl *D, const Border *borders, const char *fname, Err *err) {
  sb_printf(out, "/* generated by pxl %s: one stage instance; do not edit */\n", PXL_VERSION_STRING);
  /* Windows do more arithmetic per byte than a pass over memory: they gain from 512-bit
   * vectors where the chip has them (blur3 28 -> 18 ms at 8192^2 on an AVX-512 Xeon),
   * while P2P passes and reductions lose (binarize 6.8 -> 7.8 ms), so only N2P asks. It
   * must precede everything: functions of different targets would not inline. */
  if (D->skel == SK_N2P)
    sb_printf(out, "#if defined(__AVX512BW__) && defined(__GNUC__) && !defined(__clang__)\n"
                   "#pragma GCC target(\"prefer-vector-width=512\")\n#endif\n");
  sb_append(out, pxl_prelude_text, strlen(pxl_prelude_text));
  sb_append(out, abi_text, sizeof abi_text - 1);
  sb_append(out, threads_text, sizeof threads_text - 1);
  sb_printf(out, "const int pxl_stage_abi = %d;\n", PXLC_ABI_VERSION);
  return emit_instance(out, D, borders, "st", fname, true, err);
}

/* ---- ahead-of-time: a whole program ---- */

/* Emits a host expression (size(), scalar arguments) of declaration D. */
static void host_expr(StrBuf *o, const Decl *D, const Node *n) {
  bool direct[1] = {false};
  Gen g = {.o = o, .D = D, .pfx = "?", .direct = direct};
  expr(&g, n, 0);
}

/* `const T sN = sc[N]` for the scalar parameters of D. */
static void unpack_scalars(StrBuf *o, const Decl *D) {
  for (int i = 0; i < D->nparams; i++) {
    const Param *p = D->params[i];
    if (!p->is_image)
      sb_printf(o, "  const %s s%d = (%s)sc[%d].%c; (void)s%d;\n", ctype(p->type.s), p->scalar_index,
                ctype(p->type.s), p->scalar_index, scalar_is_float(p->type.s) ? 'f' : 'i', p->scalar_index);
  }
}

static void emit_size_fn(StrBuf *o, const Decl *D, const char *name) {
  sb_printf(o, "void %s_size(const pxlc_image *in, const pxlc_scalar *sc, int32_t *width, int32_t *height) {\n", name);
  for (int i = 0; i < D->nparams; i++) {
    const Param *p = D->params[i];
    if (p->is_image)
      sb_printf(o, "  const int w%d = in[%d].width, h%d = in[%d].height; (void)w%d; (void)h%d;\n", p->img_index,
                p->img_index, p->img_index, p->img_index, p->img_index, p->img_index);
  }
  unpack_scalars(o, D);
  if (D->size_w) {
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

/* The pipeline function (stages in order, intermediates malloc'd and freed) and its size
 * function (the size functions of the stages along the chain). */
static void pipeline_fn(StrBuf *o, const Decl *P) {
  sb_printf(o, "\nint %s(const pxlc_image *in, const pxlc_scalar *sc, pxlc_image *out, int nthreads) {\n", P->name);
  unpack_scalars(o, P);
  sb_printf(o, "  pxlc_image v[%d];\n  memset(v, 0, sizeof v);\n  int rc = 0;\n", P->nvalues);
  for (int i = 0; i < P->nvalues; i++) {
    const PipeValue *pv = &P->values[i];
    if (!pv->callee) {
      sb_printf(o, "  v[%d] = in[%d];\n", i, pv->param->img_index);
      continue;
    }
    const Decl *K = pv->callee;
    stage_args(o, P, pv);
    sb_printf(o, "    int32_t W, H;\n    %s__s%d_size(a, s, &W, &H);\n", P->name, i);
    if (i == P->result) {
      sb_printf(o, "    if (out->width != W || out->height != H) { rc = -1; goto done; }\n    v[%d] = *out;\n", i);
    } else {
      int es = scalar_size(K->type.s) * K->type.lanes;
      sb_printf(o, "    int64_t pitch = ((int64_t)W * %d + 63) / 64 * 64;\n", es);
      sb_printf(o, "    v[%d].data = malloc((size_t)(pitch * H));\n    if (!v[%d].data) { rc = -1; goto done; }\n", i, i);
      sb_printf(o, "    v[%d].width = W; v[%d].height = H; v[%d].pitch = pitch;\n", i, i, i);
    }
    sb_printf(o, "    %s__s%d(a, s, &v[%d], nthreads);\n  }\n", P->name, i, i);
  }
  sb_printf(o, "done:\n");
  for (int i = 0; i < P->nvalues; i++)
    if (P->values[i].callee && i != P->result) sb_printf(o, "  free(v[%d].data);\n", i);
  sb_printf(o, "  return rc;\n}\n");
  sb_printf(o, "void %s_size(const pxlc_image *in, const pxlc_scalar *sc, int32_t *width, int32_t *height) {\n", P->name);
  unpack_scalars(o, P);
  sb_printf(o, "  pxlc_image v[%d];\n  memset(v, 0, sizeof v);\n", P->nvalues);
  for (int i = 0; i < P->nvalues; i++) {
    const PipeValue *pv = &P->values[i];
    if (!pv->callee) {
      sb_printf(o, "  v[%d] = in[%d];\n", i, pv->param->img_index);
      continue;
    }
    stage_args(o, P, pv);
    sb_printf(o, "    %s__s%d_size(a, s, &v[%d].width, &v[%d].height);\n  }\n", P->name, i, i, i);
  }
  sb_printf(o, "  *width = v[%d].width;\n  *height = v[%d].height;\n}\n", P->result, P->result);
}

static void header_entry(StrBuf *h, const Decl *D) {
  char t[16];
  sb_printf(h, "\n/* %s %s(", D->kind == D_KERNEL ? "kernel" : D->kind == D_REDUCE ? "reduce"
                                 : D->kind == D_HISTOGRAM ? "histogram" : "pipeline", D->name);
  for (int i = 0; i < D->nparams; i++) {
    const Param *p = D->params[i];
    sb_printf(h, "%s%s%s %s", i ? ", " : "", p->is_image ? "image " : "", type_str(p->type, t), p->name);
  }
  sb_printf(h, ")\n * in[]: the image parameters in order; sc[]: the scalar parameters in order\n");
  switch (D->kind) {
  case D_KERNEL:
    sb_printf(h, " * out: image %s, allocated by the caller with the size from %s_size(). */\n", type_str(D->type, t), D->name);
    sb_printf(h, "void %s(const pxlc_image *in, const pxlc_scalar *sc, pxlc_image *out, int nthreads);\n", D->name);
    sb_printf(h, "void %s_size(const pxlc_image *in, const pxlc_scalar *sc, int32_t *width, int32_t *height);\n", D->name);
    break;
  case D_PIPELINE:
    sb_printf(h, " * out: image %s, allocated by the caller with the size from %s_size().\n * Returns 0, or -1 when out of memory or out has the wrong size. */\n",
              type_str(D->type, t), D->name);
    sb_printf(h, "int %s(const pxlc_image *in, const pxlc_scalar *sc, pxlc_image *out, int nthreads);\n", D->name);
    sb_printf(h, "void %s_size(const pxlc_image *in, const pxlc_scalar *sc, int32_t *width, int32_t *height);\n", D->name);
    break;
  case D_REDUCE:
    sb_printf(h, " * res: the %s %s (res->%c); pos: its position (x, y) for argmin/argmax, else -1. */\n",
              redop_name(D->redop), type_str(D->type, t), scalar_is_float(D->type.s) ? 'f' : 'i');
    sb_printf(h, "void %s(const pxlc_image *in, const pxlc_scalar *sc, pxlc_scalar *res, int32_t pos[2], int nthreads);\n",
              D->name);
    break;
  case D_HISTOGRAM:
    sb_printf(h, " * bins: %d %s. */\n", D->nbins, D->weighted_float ? "doubles" : "int64_t counts");
    sb_printf(h, "void %s(const pxlc_image *in, const pxlc_scalar *sc, void *bins, int nthreads);\n", D->name);
    break;
  }
}

int gen_c_program(const Program *p, const char *header_name, StrBuf *c, StrBuf *h, Err *err) {
  sb_printf(h, "/* generated by pxl %s from %s; do not edit.\n *\n"
               " * Compile the .c with a C11 compiler: cc -O3 -fopenmp -ffp-contract=off -c FILE.c (link -lm;\n"
               " * without -fopenmp it runs on one thread). -ffp-contract=off keeps floating-point results\n"
               " * identical to pxl's reference interpreter.\n"
               " * nthreads: 0 = all cores (OpenMP), else that many threads.\n */\n",
            PXL_VERSION_STRING, p->filename);
  sb_printf(h, "#ifndef PXLC_GENERATED_H\n#define PXLC_GENERATED_H\n");
  sb_append(h, abi_text, sizeof abi_text - 1);
  sb_printf(h, "#ifdef __cplusplus\nextern \"C\" {\n#endif\n");
  sb_printf(c, "/* generated by pxl %s from %s; do not edit */\n", PXL_VERSION_STRING, p->filename);
  sb_append(c, pxl_prelude_text, strlen(pxl_prelude_text));
  sb_printf(c, "#include \"%s\"\n", header_name);
  sb_append(c, threads_text, sizeof threads_text - 1);
  Border borders[64];
  for (int i = 0; i < p->ndecls; i++) {
    const Decl *D = p->decls[i];
    header_entry(h, D);
    if (D->kind == D_PIPELINE) {
      for (int v = 0; v < D->nvalues; v++) {
        const PipeValue *pv = &D->values[v];
        if (!pv->callee) continue;
        for (int j = 0; j < pv->nargs; j++)
          if (pv->callee->params[j]->is_image) borders[pv->callee->params[j]->img_index] = pv->args[j].border;
        char pfx[300], fname[300];
        snprintf(pfx, sizeof pfx, "%s__p%d", D->name, v);
        snprintf(fname, sizeof fname, "%s__s%d", D->name, v);
        int rc = emit_instance(c, pv->callee, borders, pfx, fname, false, err);
        if (rc) return rc;
        emit_size_fn(c, pv->callee, fname);
      }
      pipeline_fn(c, D);
      continue;
    }
    for (int j = 0; j < D->nparams; j++)
      if (D->params[j]->is_image) borders[D->params[j]->img_index] = D->params[j]->border;
    char pfx[300];
    snprintf(pfx, sizeof pfx, "%s__p", D->name);
    int rc = emit_instance(c, D, borders, pfx, D->name, true, err);
    if (rc) return rc;
    if (D->kind == D_KERNEL) emit_size_fn(c, D, D->name);
  }
  sb_printf(h, "\n#ifdef __cplusplus\n}\n#endif\n#endif\n");
  if (c->oom || h->oom) return err_set(err, PXL_ENOMEM, "out of memory generating C");
  return PXL_OK;
}

/* ---- the shared emitter's interface (emit.h), for the CUDA generator ---- */

void cg_init(Gen *g, StrBuf *out, const Decl *D, const Border *borders, const char *pfx, bool *direct) {
  memset(g, 0, sizeof *g);
  g->o = out;
  g->D = D;
  g->borders = borders;
  g->pfx = pfx;
  g->direct = direct;
  g->tb_img = -1;
  for (int i = 0; i < D->nimages; i++) {
    const Access *ac = &D->access[i];
    direct[i] = ac->read_rel && ac->window_known && !ac->gather;
  }
}

void cg_functions(Gen *g) {
  const Decl *D = g->D;
  read_fns(g);
  if (D->kind == D_REDUCE) {
    if (D->redop == R_COMBINE) {
      OUT("PXR_FN %s %s_comb(%s v%d, %s v%d", ctype(D->type.s), g->pfx, ctype(D->type.s), D->combine_a->slot,
          ctype(D->type.s), D->combine_b->slot);
      for (int i = 0; i < D->nparams; i++)
        if (!D->params[i]->is_image) OUT(", %s s%d", ctype(D->params[i]->type.s), D->params[i]->scalar_index);
      OUT(") {\n  return ");
      g->variant = V_EDGE;
      expr(g, D->combine, 0);
      OUT(";\n}\n");
    }
    reduce_fn(g, V_EDGE, false);
    reduce_fn(g, V_DIRECT_REL, false);
  } else {
    pixel_fn(g, V_EDGE, false);
    pixel_fn(g, V_DIRECT_REL, false);
  }
}

void cg_pixel_fn(Gen *g, int variant, const char *name, bool counts32) {
  if (g->D->kind == D_REDUCE) reduce_fn_named(g, variant, false, name);
  else pixel_fn_named(g, variant, counts32, name);
}

bool cg_counts_only(const Gen *g) { return g->D->kind == D_HISTOGRAM && counts_only(g->D->body); }

int cg_use_tile_buffer(Gen *g) {
  g->tb_img = tile_buffer_image(g->D);
  g->tb_t = g->tb_img >= 0 && g->D->access[g->tb_img].ax.cx == 0;
  return g->tb_img;
}

void cg_prologue(Gen *g, bool has_out) { prologue(g, has_out); }
void cg_args_text(Gen *g, StrBuf *buf) { args_text(g, buf); }
void cg_combine(Gen *g, const char *acc, const char *v) { combine_stmt(g, acc, v); }
void cg_better(Gen *g, const char *v, const char *acc) { better_expr(g, v, acc); }
void cg_fold_pixel(Gen *g, const char *v) { fold_pixel(g, v); }
void cg_identity(Gen *g) { identity(g); }
const char *cg_ctype(Scalar s) { return ctype(s); }
