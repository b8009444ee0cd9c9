/*
 * check.c - third phase of the front end: types every expression and makes every
 * conversion explicit.
 *
 * The rules are C's usual arithmetic conversions, except that two integer operands meet in
 * a type that holds both (docs/LANGUAGE.md, "Conversions and arithmetic"): u8, i16 and
 * u16 promote to i32; u32 and i32 meet in i64; u64 and a signed type are refused unless
 * the signed one is a non-negative literal, which becomes u64; float literals take f64
 * only next to an f64 operand, else f32; all conversions (implicit at assignment, return
 * and arguments, or written as casts) saturate and round to nearest. After this phase
 * each node's type is final and an ND_CAST stands wherever a value changes type, so the
 * interpreter and code generators never apply C's rules themselves. Pipelines get their
 * callees resolved and argument types checked here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/prelude.h"
#include "front/front.h"
#include "util/alloc.h"

typedef struct {
  Program *prog;
  Arena *a;
  Diag *d;
  Decl *decl;
  bool bin_seen; /* a bin call of decl was checked: decl->binop is its kind */
} Checker;

/* The names C programmers know, for pxl's types. */
static const struct {
  const char *alias;
  Scalar s;
} aliases[] = {{"int", T_I32}, {"uint", T_U32}, {"float", T_F32}, {"double", T_F64}};

bool type_from_name(const char *name, Type *out) {
  for (size_t i = 0; i < sizeof aliases / sizeof *aliases; i++)
    if (!strcmp(name, aliases[i].alias)) {
      *out = type_scalar(aliases[i].s);
      return true;
    }
  for (int s = T_U8; s < T_COUNT; s++) {
    const char *n = scalar_name((Scalar)s);
    size_t l = strlen(n);
    if (strncmp(name, n, l)) continue;
    if (name[l] == 0) {
      *out = type_scalar((Scalar)s);
      return true;
    }
    if ((name[l + 1] == '3' || name[l + 1] == '4') && name[l] == 'x' && name[l + 2] == 0) {
      *out = type_vec((Scalar)s, name[l + 1] - '0');
      return true;
    }
  }
  return false;
}

void type_names(char *buf, size_t n) {
  size_t k = 0;
  buf[0] = 0;
  for (int s = T_U8; s < T_COUNT && k < n; s++)
    k += (size_t)snprintf(buf + k, n - k, "%s%s", s == T_U8 ? "" : " ", scalar_name((Scalar)s));
  for (size_t i = 0; i < sizeof aliases / sizeof *aliases && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, ", %s", aliases[i].alias);
}

/* ".x/.r" ... for lane i, as the user may have written either. */
static const char *lane_str(int64_t i) {
  static const char *const names[] = {".x/.r", ".y/.g", ".z/.b", ".w/.a"};
  return i >= 0 && i < 4 ? names[i] : "?";
}

static const char *lanes_str(Type t) {
  return t.lanes <= 1 ? "it is not a vector" : t.lanes == 3 ? "it has 3 channels" : "it has 4 channels";
}

static char *tstr(Type t) {
  static char bufs[4][16];
  static int i;
  i = (i + 1) % 4;
  return (char *)type_str(t, bufs[i]);
}

static bool is_int(Scalar s) { return s >= T_U8 && s <= T_U64; }
static bool is_err(Node *n) { return !n || (n->flags & NF_ERROR); }

static Scalar promote(Scalar s) { return (s == T_U8 || s == T_I16 || s == T_U16) ? T_I32 : s; }

/* An operand as the usual arithmetic conversions see it: its type before promotion (which
 * says what values it holds) and whether it is a literal that may adapt to the other one. */
typedef struct {
  Scalar s;
  bool lit_nonneg; /* a signed integer literal >= 0: adopts u64 next to u64 */
  bool lit_float;  /* an untyped float literal: adopts f64 next to f64 */
} Operand;

static Operand operand_of(Node *n) {
  Operand o = {n->type.s, false, (n->flags & NF_UNTYPED_FLOAT) != 0};
  o.lit_nonneg = n->kind == ND_NUM && is_int(n->type.s) && scalar_is_signed(n->type.s) && n->ival >= 0;
  return o;
}

/* True if integer type t holds every value of integer type s. */
static bool holds(Scalar t, Scalar s) {
  if (scalar_is_signed(s)) return scalar_is_signed(t) && scalar_size(t) >= scalar_size(s);
  return scalar_is_signed(t) ? scalar_size(t) > scalar_size(s) : scalar_size(t) >= scalar_size(s);
}

/* The usual arithmetic conversions (docs/LANGUAGE.md): two integers meet in the first of
 * i32 u32 i64 u64 that holds every value of both, so mixed signedness computes the exact
 * result (u32 and i32 meet in i64, u8 and u32 in u32). u64 and a signed type have none:
 * false, unless the signed one is a non-negative literal, which becomes u64. Floats as in
 * C. The result is a literal only while both operands are. */
static bool operand_join(Operand a, Operand b, Operand *out) {
  static const Scalar ladder[] = {T_I32, T_U32, T_I64, T_U64};
  out->lit_nonneg = a.lit_nonneg && b.lit_nonneg;
  out->lit_float = a.lit_float && b.lit_float;
  if (a.lit_float && b.s == T_F64) a.s = T_F64;
  if (b.lit_float && a.s == T_F64) b.s = T_F64;
  if (a.s == T_F64 || b.s == T_F64) out->s = T_F64;
  else if (a.s == T_F32 || b.s == T_F32) out->s = T_F32;
  else {
    for (size_t i = 0; i < sizeof ladder / sizeof *ladder; i++)
      if (holds(ladder[i], a.s) && holds(ladder[i], b.s)) {
        out->s = ladder[i];
        return true;
      }
    if (!(a.s == T_U64 && b.lit_nonneg) && !(b.s == T_U64 && a.lit_nonneg)) return false;
    out->s = T_U64;
  }
  return true;
}

static Node *mk(Checker *C, NodeKind k, Type t, Loc loc) {
  Node *n = node_new(C->a, k, t, loc);
  if (!n) {
    static Node sink;
    memset(&sink, 0, sizeof sink);
    sink.flags = NF_ERROR;
    return &sink;
  }
  return n;
}

static Node *num_i32(Checker *C, int64_t v, Loc loc) {
  Node *n = mk(C, ND_NUM, type_scalar(T_I32), loc);
  n->ival = v;
  return n;
}

static Node *binary(Checker *C, NodeKind k, Node *a, Node *b) {
  Node *n = mk(C, k, type_scalar(T_I32), a->loc);
  n->a = a;
  n->b = b;
  return n;
}

/* Coordinate `axis` (0: x) of a tiler's relative read at offset d: the input pattern's
 * origin of repetition (x, y), origin + paving * x, plus d (all i32). */
static Node *tiler_coord(Checker *C, const Decl *D, int axis, Node *d) {
  Node *c = mk(C, ND_COORD, type_scalar(T_I32), d->loc);
  c->ival = axis;
  Node *o = binary(C, ND_ADD, num_i32(C, D->origin[axis], d->loc), binary(C, ND_MUL, num_i32(C, D->paving[axis], d->loc), c));
  return binary(C, ND_ADD, o, d);
}

/* Folds the conversion of integer literal n to scalar s with the language's rules. */
static void fold_int_literal(Node *n, Scalar s) {
  int64_t v = n->ival;
  bool from_u64 = n->type.s == T_U64;
  switch (s) {
  case T_U8: n->ival = from_u64 ? pxr_u2u8((uint64_t)v) : pxr_s2u8(v); break;
  case T_I16: n->ival = from_u64 ? pxr_u2i16((uint64_t)v) : pxr_s2i16(v); break;
  case T_U16: n->ival = from_u64 ? pxr_u2u16((uint64_t)v) : pxr_s2u16(v); break;
  case T_I32: n->ival = from_u64 ? pxr_u2i32((uint64_t)v) : pxr_s2i32(v); break;
  case T_U32: n->ival = from_u64 ? pxr_u2u32((uint64_t)v) : pxr_s2u32(v); break;
  case T_I64: n->ival = from_u64 ? pxr_u2i64((uint64_t)v) : v; break;
  case T_U64: n->ival = from_u64 ? v : (int64_t)pxr_s2u64(v); break;
  case T_F32: n->fval = (float)(from_u64 ? (double)(uint64_t)v : (double)v); break;
  case T_F64: n->fval = from_u64 ? (double)(uint64_t)v : (double)v; break;
  default: break;
  }
}

/* Converts n to type t, folding literals; broadcasts a scalar to a vector type. */
static Node *conv(Checker *C, Node *n, Type t) {
  if (is_err(n) || t.s == T_VOID) return n;
  if (type_eq(n->type, t) && !(n->flags & NF_UNTYPED_FLOAT && t.s == T_F64)) {
    if (n->kind == ND_NUM && n->type.s == T_F32) n->fval = (float)n->fval; /* literal now f32 */
    n->flags &= ~NF_UNTYPED_FLOAT;
    return n;
  }
  if (n->type.lanes > 1 && t.lanes != n->type.lanes) {
    diag_error(C->d, n->loc, "cannot convert %s to %s (channel counts differ)", tstr(n->type), tstr(t));
    n->flags |= NF_ERROR;
    return n;
  }
  if (n->kind == ND_NUM && t.lanes == 1) {
    if (scalar_is_float(n->type.s)) {
      double v = n->fval;
      if (t.s == T_F32)
        n->fval = (float)v;
      else if (t.s == T_F64)
        n->fval = v;
      else {
        switch (t.s) {
        case T_U8: n->ival = pxr_f2u8(v); break;
        case T_I16: n->ival = pxr_f2i16(v); break;
        case T_U16: n->ival = pxr_f2u16(v); break;
        case T_I32: n->ival = pxr_f2i32(v); break;
        case T_U32: n->ival = pxr_f2u32(v); break;
        case T_I64: n->ival = pxr_f2i64(v); break;
        case T_U64: n->ival = (int64_t)pxr_f2u64(v); break;
        default: break;
        }
      }
    } else {
      fold_int_literal(n, t.s);
    }
    n->type = t;
    n->flags &= ~NF_UNTYPED_FLOAT;
    return n;
  }
  Node *c = mk(C, ND_CAST, t, n->loc);
  c->a = n;
  n->flags &= ~NF_UNTYPED_FLOAT;
  return c;
}

static Node *check_expr(Checker *C, Node *n);


static bool need_scalar(Checker *C, Node *n, const char *what) {
  if (is_err(n)) return false;
  if (n->type.lanes != 1) {
    diag_error(C->d, n->loc, "%s needs a one-channel value, got %s", what, tstr(n->type));
    return false;
  }
  return true;
}

static bool need_int(Checker *C, Node *n, const char *what) {
  if (is_err(n)) return false;
  if (!is_int(n->type.s)) {
    diag_error(C->d, n->loc, "%s needs an integer, got %s", what, tstr(n->type));
    return false;
  }
  return true;
}

static const char *op_text(NodeKind k) {
  switch (k) {
  case ND_ADD: return "+";
  case ND_SUB: return "-";
  case ND_MUL: return "*";
  case ND_DIV: return "/";
  case ND_MOD: return "%";
  case ND_SHL: return "<<";
  case ND_SHR: return ">>";
  case ND_BITAND: return "&";
  case ND_BITOR: return "|";
  case ND_BITXOR: return "^";
  case ND_EQ: return "==";
  case ND_NE: return "!=";
  case ND_LT: return "<";
  case ND_LE: return "<=";
  case ND_GT: return ">";
  case ND_GE: return ">=";
  default: return "?";
  }
}

/* Reports two values of types x and y (described by what, e.g. "operands of '+'") that
 * have no common type: u64 and a signed type. The casts that would do and what they cost. */
static void no_common_type(Checker *C, Loc loc, Type x, Type y, const char *what) {
  int lanes = x.lanes > y.lanes ? x.lanes : y.lanes;
  diag_error(C->d, loc,
             "%s and %s %s have no common type that holds both; cast one of them: (%s) saturates u64 values "
             "above 2^63 - 1, (%s) makes negative values 0",
             tstr(x), tstr(y), what, tstr(type_vec(T_I64, lanes)), tstr(type_vec(T_U64, lanes)));
}

/* Channel count of two values: equal, or one of them a scalar that broadcasts. */
static bool common_lanes(Checker *C, Type x, Type y, Loc loc, int *out) {
  *out = x.lanes > y.lanes ? x.lanes : y.lanes;
  if (x.lanes == y.lanes || x.lanes == 1 || y.lanes == 1) return true;
  diag_error(C->d, loc, "operands have different channel counts (%s and %s)", tstr(x), tstr(y));
  return false;
}

/* Common type of two operands, lanes included (a scalar broadcasts to a vector); what
 * names them in a diagnostic. */
static bool common_type(Checker *C, Node *x, Node *y, Loc loc, const char *what, Type *out) {
  if (is_err(x) || is_err(y)) return false;
  int lanes;
  if (!common_lanes(C, x->type, y->type, loc, &lanes)) return false;
  Operand o;
  if (!operand_join(operand_of(x), operand_of(y), &o)) {
    no_common_type(C, loc, x->type, y->type, what);
    return false;
  }
  *out = type_vec(o.s, lanes);
  return true;
}

/* "operands of '+'" (or "'+='" when written as a compound assignment) for diagnostics. */
static const char *operands_of(Node *n) {
  static char buf[32];
  snprintf(buf, sizeof buf, "operands of '%s%s'", op_text(n->kind), n->flags & NF_COMPOUND ? "=" : "");
  return buf;
}

static Node *err_out(Node *n) {
  n->flags |= NF_ERROR;
  n->type = type_scalar(T_I32);
  return n;
}

/* A use of a file-scope constant `const T k = e;`: a copy of its value, e checked and
 * converted to T once (at the first use), which must fold to a number. */
static Node *named_number(Checker *C, Node *n) {
  Var *v = n->var;
  Node *e = v->elems[0];
  if (!(e->flags & NF_CHECKED)) {
    e = conv(C, check_expr(C, e), v->type);
    if (!is_err(e) && e->kind != ND_NUM) {
      diag_error(C->d, e->loc, "the value of constant '%s' must be a number (a literal, with a sign or a cast)", v->name);
      e->flags |= NF_ERROR;
    }
    e->flags |= NF_CHECKED;
    v->elems[0] = e;
  }
  if (is_err(e)) return err_out(n);
  Node *r = mk(C, ND_NUM, v->type, n->loc);
  r->ival = e->ival;
  r->fval = e->fval;
  return r;
}

static Node *check_binary(Checker *C, Node *n) {
  n->a = check_expr(C, n->a);
  n->b = check_expr(C, n->b);
  if (is_err(n->a) || is_err(n->b)) return err_out(n);
  Type t;
  switch (n->kind) {
  case ND_ADD: case ND_SUB: case ND_MUL: case ND_DIV:
    if (!common_type(C, n->a, n->b, n->loc, operands_of(n), &t)) return err_out(n);
    break;
  case ND_MOD: case ND_BITAND: case ND_BITOR: case ND_BITXOR:
    if (!is_int(n->a->type.s) || !is_int(n->b->type.s)) {
      diag_error(C->d, n->loc, "operator '%s' needs integers, got %s and %s", op_text(n->kind),
                 tstr(n->a->type), tstr(n->b->type));
      return err_out(n);
    }
    if (!common_type(C, n->a, n->b, n->loc, operands_of(n), &t)) return err_out(n);
    break;
  case ND_SHL: case ND_SHR:
    if (!is_int(n->a->type.s) || !is_int(n->b->type.s)) {
      diag_error(C->d, n->loc, "operator '%s' needs integers, got %s and %s", op_text(n->kind),
                 tstr(n->a->type), tstr(n->b->type));
      return err_out(n);
    }
    if (n->b->type.lanes != 1 && n->b->type.lanes != n->a->type.lanes) {
      diag_error(C->d, n->loc, "the shift count has %d channels but the shifted value %d", n->b->type.lanes,
                 n->a->type.lanes);
      return err_out(n);
    }
    t = type_vec(promote(n->a->type.s), n->a->type.lanes);
    break;
  case ND_EQ: case ND_NE: case ND_LT: case ND_LE: case ND_GT: case ND_GE: {
    if (!need_scalar(C, n->a, "a comparison") || !need_scalar(C, n->b, "a comparison")) return err_out(n);
    Type ct;
    if (!common_type(C, n->a, n->b, n->loc, operands_of(n), &ct)) return err_out(n);
    n->a = conv(C, n->a, ct);
    n->b = conv(C, n->b, ct);
    n->type = type_scalar(T_I32);
    return n;
  }
  case ND_LOGAND: case ND_LOGOR:
    if (!need_scalar(C, n->a, "an operand of '&&' or '||'") || !need_scalar(C, n->b, "an operand of '&&' or '||'"))
      return err_out(n);
    n->type = type_scalar(T_I32);
    return n;
  default:
    return err_out(n);
  }
  n->a = conv(C, n->a, t);
  n->b = conv(C, n->b, t);
  n->type = t;
  return n;
}

static Node *check_call(Checker *C, Node *n) {
  for (int i = 0; i < n->nargs; i++) {
    n->args[i] = check_expr(C, n->args[i]);
    if (is_err(n->args[i])) return err_out(n);
  }
  bool float_fn = n->builtin != BI_MIN && n->builtin != BI_MAX && n->builtin != BI_ABS && n->builtin != BI_CLAMP;
  Operand o = operand_of(n->args[0]);
  Type t = n->args[0]->type;
  for (int i = 1; i < n->nargs; i++) {
    Node *arg = n->args[i];
    if (!common_lanes(C, t, arg->type, n->loc, &t.lanes)) return err_out(n);
    Operand next;
    if (float_fn) { /* integers convert straight to the float type: no integer type needed */
      o.s = o.s == T_F64 && !o.lit_float ? T_F64 : T_F32;
      next = operand_of(arg);
      next.s = next.s == T_F64 && !next.lit_float ? T_F64 : T_F32;
    } else {
      next = operand_of(arg);
    }
    Operand joined;
    if (!operand_join(o, next, &joined)) {
      char what[48];
      snprintf(what, sizeof what, "arguments of '%s'", builtin_name(n->builtin));
      no_common_type(C, n->loc, type_vec(o.s, t.lanes), arg->type, what);
      return err_out(n);
    }
    o = joined;
  }
  t.s = promote(o.s);
  if (float_fn && t.s != T_F64) t.s = T_F32;
  for (int i = 0; i < n->nargs; i++) n->args[i] = conv(C, n->args[i], t);
  n->type = t;
  return n;
}

static Node *conv_store(Checker *C, Node *n, Type t, const char *what);

/* A call of a user function: resolved by name, arguments converted to the parameters'
 * types as at an assignment. */
static Node *check_fcall(Checker *C, Node *n) {
  const char *name = n->func->name;
  Decl *f = program_find_func(C->prog, name);
  for (int i = 0; i < n->nargs; i++) n->args[i] = check_expr(C, n->args[i]);
  if (!f) {
    Decl *e = program_find(C->prog, name);
    if (e)
      diag_error(C->d, n->loc, "'%s' is a %s, not a function; pipelines call kernels", name,
                 e->kind == D_KERNEL ? "kernel" : e->kind == D_REDUCE ? "reduction" : e->kind == D_HISTOGRAM ? "histogram" : "pipeline");
    else
      diag_error(C->d, n->loc, "unknown function '%s'", name);
    return err_out(n);
  }
  n->func = f;
  if (f->bad) return err_out(n); /* its own errors were reported */
  if (n->nargs != f->nparams) {
    diag_error(C->d, n->loc, "%s() takes %d argument%s, got %d", name, f->nparams, f->nparams == 1 ? "" : "s",
               n->nargs);
    return err_out(n);
  }
  for (int i = 0; i < n->nargs; i++) {
    if (is_err(n->args[i])) return err_out(n);
    n->args[i] = conv_store(C, n->args[i], f->params[i]->type, "argument");
    if (is_err(n->args[i])) return err_out(n);
  }
  n->type = f->type;
  return n;
}

/* ---- interpolating reads: img.nearest(fx, fy), img.linear(fx, fy), img.cubic(fx, fy) ----
 * Made here into plain reads and arithmetic (checked nodes), so that every later layer
 * sees absolute reads (ND_AT, ival 0) and the same arithmetic on every backend. F is f64
 * when a coordinate is f64, else f32; pixel centres are at integer coordinates. */

static Node *typed(Checker *C, NodeKind k, Type t, Node *a, Node *b) {
  Node *n = mk(C, k, t, a->loc);
  n->a = conv(C, a, t);
  n->b = b ? conv(C, b, t) : NULL;
  return n;
}

static Node *fnum(Checker *C, double v, Scalar F, Loc loc) {
  Node *n = mk(C, ND_NUM, type_scalar(F), loc);
  n->fval = F == T_F32 ? (float)v : v;
  return n;
}

/* A fresh copy of a checked coordinate (each use its own tree). */
static Node *copy(Checker *C, const Node *n) {
  bool failed = false;
  Node *c = ir_clone(C->a, n, NULL, NULL, &failed);
  if (!c || failed) {
    c = mk(C, ND_NUM, n->type, n->loc);
    c->flags |= NF_ERROR;
  }
  return c;
}

static Node *floor_of(Checker *C, Node *v) { /* floor(v), v of type F */
  Node *f = mk(C, ND_CALL, v->type, v->loc);
  f->builtin = BI_FLOOR;
  f->args = arena_alloc(C->a, sizeof(Node *));
  if (!f->args) return v;
  f->args[0] = v;
  f->nargs = 1;
  return f;
}

/* The read of img at integer coordinate (floor(cx) + dx, floor(cy) + dy), converted to
 * type t (the image's lanes of F). */
static Node *tap(Checker *C, const Node *at, const Node *cx, const Node *cy, int dx, int dy, Type t) {
  Type I = type_scalar(T_I32);
  Node *r = mk(C, ND_AT, at->param->type, at->loc);
  r->param = at->param;
  r->a = typed(C, ND_ADD, I, conv(C, floor_of(C, copy(C, cx)), I), num_i32(C, dx, at->loc));
  r->b = typed(C, ND_ADD, I, conv(C, floor_of(C, copy(C, cy)), I), num_i32(C, dy, at->loc));
  return conv(C, r, t);
}

/* Keys' cubic weights (a = -0.75, OpenCV's) of the 4 taps at t in [0, 1): the first three
 * from their polynomials, the fourth 1 less the others. */
static void cubic_weights(Checker *C, const Node *t, Scalar F, Node *w[4]) {
  Type T = type_scalar(F);
  const double A = -0.75;
  Loc l = t->loc;
  /* w0 = ((A (t + 1) - 5A) (t + 1) + 8A) (t + 1) - 4A */
  Node *t1 = typed(C, ND_ADD, T, copy(C, t), fnum(C, 1, F, l));
  Node *e = typed(C, ND_SUB, T, typed(C, ND_MUL, T, fnum(C, A, F, l), t1), fnum(C, 5 * A, F, l));
  e = typed(C, ND_ADD, T, typed(C, ND_MUL, T, e, copy(C, t1)), fnum(C, 8 * A, F, l));
  w[0] = typed(C, ND_SUB, T, typed(C, ND_MUL, T, e, copy(C, t1)), fnum(C, 4 * A, F, l));
  /* w1 = ((A + 2) t - (A + 3)) t t + 1; w2 the same at 1 - t */
  for (int k = 1; k <= 2; k++) {
    Node *u = k == 1 ? copy(C, t) : typed(C, ND_SUB, T, fnum(C, 1, F, l), copy(C, t));
    Node *g = typed(C, ND_SUB, T, typed(C, ND_MUL, T, fnum(C, A + 2, F, l), u), fnum(C, A + 3, F, l));
    g = typed(C, ND_MUL, T, typed(C, ND_MUL, T, g, copy(C, u)), copy(C, u));
    w[k] = typed(C, ND_ADD, T, g, fnum(C, 1, F, l));
  }
  Node *s = typed(C, ND_ADD, T, typed(C, ND_ADD, T, copy(C, w[0]), copy(C, w[1])), copy(C, w[2]));
  w[3] = typed(C, ND_SUB, T, fnum(C, 1, F, l), s);
}

static Node *interpolate(Checker *C, Node *n) {
  if (!need_scalar(C, n->a, "an image coordinate") || !need_scalar(C, n->b, "an image coordinate")) return err_out(n);
  Scalar F = n->a->type.s == T_F64 || n->b->type.s == T_F64 ? T_F64 : T_F32;
  Type T = type_scalar(F), pix = n->param->type, V = type_vec(F, pix.lanes);
  Node *fx = conv(C, n->a, T), *fy = conv(C, n->b, T);
  Loc l = n->loc;
  if (n->ival == 1) { /* nearest: the pixel at floor(f + 0.5) */
    Node *cx = typed(C, ND_ADD, T, fx, fnum(C, 0.5, F, l)), *cy = typed(C, ND_ADD, T, fy, fnum(C, 0.5, F, l));
    return tap(C, n, cx, cy, 0, 0, pix);
  }
  /* the fractions a = fx - floor(fx), b = fy - floor(fy) */
  Node *a = typed(C, ND_SUB, T, copy(C, fx), floor_of(C, copy(C, fx)));
  Node *b = typed(C, ND_SUB, T, copy(C, fy), floor_of(C, copy(C, fy)));
  if (n->ival == 2) { /* linear: (1 - b) ((1 - a) p00 + a p10) + b ((1 - a) p01 + a p11) */
    Node *rows[2];
    for (int j = 0; j < 2; j++) {
      Node *na = typed(C, ND_SUB, T, fnum(C, 1, F, l), copy(C, a));
      Node *left = typed(C, ND_MUL, V, na, tap(C, n, fx, fy, 0, j, V));
      Node *right = typed(C, ND_MUL, V, copy(C, a), tap(C, n, fx, fy, 1, j, V));
      rows[j] = typed(C, ND_ADD, V, left, right);
    }
    Node *nb = typed(C, ND_SUB, T, fnum(C, 1, F, l), copy(C, b));
    return typed(C, ND_ADD, V, typed(C, ND_MUL, V, nb, rows[0]), typed(C, ND_MUL, V, copy(C, b), rows[1]));
  }
  /* cubic: sum over j of wy[j] * (sum over i of wx[i] * p(i - 1, j - 1)), in that order */
  Node *wx[4], *wy[4], *sum = NULL;
  cubic_weights(C, a, F, wx);
  cubic_weights(C, b, F, wy);
  for (int j = 0; j < 4; j++) {
    Node *row = NULL;
    for (int i = 0; i < 4; i++) {
      Node *term = typed(C, ND_MUL, V, copy(C, wx[i]), tap(C, n, fx, fy, i - 1, j - 1, V));
      row = row ? typed(C, ND_ADD, V, row, term) : term;
    }
    Node *term = typed(C, ND_MUL, V, copy(C, wy[j]), row);
    sum = sum ? typed(C, ND_ADD, V, sum, term) : term;
  }
  return sum;
}

static Node *check_expr(Checker *C, Node *n) {
  if (is_err(n)) return n;
  switch (n->kind) {
  case ND_NUM:
    return n;
  case ND_VAR:
    if (n->var && n->var->is_const && !n->var->len && n->var->elems) return named_number(C, n);
    n->type = n->var ? n->var->type : type_scalar(T_I32);
    return n;
  case ND_COORD: case ND_IMGDIM:
    n->type = type_scalar(T_I32);
    return n;
  case ND_READ: case ND_AT: {
    const char *what = n->kind == ND_READ ? "an image offset" : "an image coordinate";
    n->a = check_expr(C, n->a);
    n->b = check_expr(C, n->b);
    if (n->kind == ND_AT && n->ival) return interpolate(C, n);
    if (!need_scalar(C, n->a, what) || !need_scalar(C, n->b, what) || !need_int(C, n->a, what) ||
        !need_int(C, n->b, what))
      return err_out(n);
    n->a = conv(C, n->a, type_scalar(T_I32));
    n->b = conv(C, n->b, type_scalar(T_I32));
    n->type = n->param->type;
    if (n->kind == ND_READ && C->decl->kind == D_KERNEL && C->decl->tile[0]) { /* a tiler's: absolute */
      n->kind = ND_AT;
      n->a = tiler_coord(C, C->decl, 0, n->a);
      n->b = tiler_coord(C, C->decl, 1, n->b);
    }
    return n;
  }
  case ND_LANE:
    n->a = check_expr(C, n->a);
    if (is_err(n->a)) return err_out(n);
    if (n->a->type.lanes <= 1 || n->ival >= n->a->type.lanes) {
      diag_error(C->d, n->loc, "%s has no component %s (%s)", tstr(n->a->type), lane_str(n->ival),
                 lanes_str(n->a->type));
      return err_out(n);
    }
    n->type = type_scalar(n->a->type.s);
    return n;
  case ND_VEC: {
    Type t = n->type;
    for (int i = 0; i < n->nargs; i++) {
      n->args[i] = check_expr(C, n->args[i]);
      if (is_err(n->args[i])) return err_out(n);
    }
    if (n->nargs == 1) {
      if (n->args[0]->type.lanes > 1 && t.lanes == 1) {
        diag_error(C->d, n->loc, "cannot convert %s to %s (pick a component with .x .y .z .w)",
                   tstr(n->args[0]->type), tstr(t));
        return err_out(n);
      }
      return conv(C, n->args[0], t);
    }
    if (n->nargs != t.lanes) {
      if (t.lanes == 1)
        diag_error(C->d, n->loc, "%s(...) takes 1 value, got %d", tstr(t), n->nargs);
      else
        diag_error(C->d, n->loc, "%s(...) takes 1 or %d values, got %d", tstr(t), t.lanes, n->nargs);
      return err_out(n);
    }
    for (int i = 0; i < n->nargs; i++) {
      if (!need_scalar(C, n->args[i], "a vector component")) return err_out(n);
      n->args[i] = conv(C, n->args[i], type_scalar(t.s));
    }
    return n;
  }
  case ND_CAST: {
    Type t = n->type;
    Node *a = check_expr(C, n->a);
    if (is_err(a)) return err_out(n);
    if (a->type.lanes > 1 && t.lanes == 1) {
      diag_error(C->d, n->loc, "cannot convert %s to %s (pick a component with .x .y .z .w)", tstr(a->type), tstr(t));
      return err_out(n);
    }
    return conv(C, a, t);
  }
  case ND_NEG:
    n->a = check_expr(C, n->a);
    if (is_err(n->a)) return err_out(n);
    n->type = type_vec(promote(n->a->type.s), n->a->type.lanes);
    if (n->a->flags & NF_UNTYPED_FLOAT) { /* keep -1.5 an untyped literal */
      n->a->fval = -n->a->fval;
      return n->a;
    }
    n->a = conv(C, n->a, n->type);
    if (n->a->kind == ND_NUM) { /* fold -literal with the type's wrap-around */
      Node *lit = n->a;
      if (scalar_is_float(lit->type.s)) lit->fval = -lit->fval;
      else if (lit->type.s == T_I32) lit->ival = pxr_neg_i32((int32_t)lit->ival);
      else if (lit->type.s == T_U32) lit->ival = (uint32_t)(0u - (uint32_t)lit->ival);
      else lit->ival = (int64_t)(0u - (uint64_t)lit->ival);
      return lit;
    }
    return n;
  case ND_BITNOT:
    n->a = check_expr(C, n->a);
    if (is_err(n->a)) return err_out(n);
    if (!need_int(C, n->a, "'~'")) return err_out(n);
    n->type = type_vec(promote(n->a->type.s), n->a->type.lanes);
    n->a = conv(C, n->a, n->type);
    return n;
  case ND_NOT:
    n->a = check_expr(C, n->a);
    if (!need_scalar(C, n->a, "'!'")) return err_out(n);
    n->type = type_scalar(T_I32);
    return n;
  case ND_COND: {
    n->a = check_expr(C, n->a);
    n->b = check_expr(C, n->b);
    n->c = check_expr(C, n->c);
    if (is_err(n->a) || is_err(n->b) || is_err(n->c)) return err_out(n);
    if (!need_scalar(C, n->a, "a condition")) return err_out(n);
    Type t;
    if (!common_type(C, n->b, n->c, n->loc, "branches of '?:'", &t)) return err_out(n);
    n->b = conv(C, n->b, t);
    n->c = conv(C, n->c, t);
    n->type = t;
    return n;
  }
  case ND_CALL:
    return check_call(C, n);
  case ND_INDEX:
    n->a = check_expr(C, n->a);
    if (!need_scalar(C, n->a, "an array index") || !need_int(C, n->a, "an array index")) return err_out(n);
    n->a = conv(C, n->a, type_scalar(T_I64));
    n->type = n->var->type;
    return n;
  case ND_FCALL:
    return check_fcall(C, n);
  default:
    if (n->kind >= ND_ADD && n->kind <= ND_LOGOR) return check_binary(C, n);
    diag_error(C->d, n->loc, "internal: unexpected %s in an expression", node_name(n->kind));
    return err_out(n);
  }
}

/* Converts a value for storing into type t: a vector into a scalar is refused. */
static Node *conv_store(Checker *C, Node *n, Type t, const char *what) {
  if (is_err(n)) return n;
  if (n->type.lanes > 1 && t.lanes != n->type.lanes) {
    if (!strcmp(what, "return"))
      diag_error(C->d, n->loc, "cannot return a %s value from a %s %s", tstr(n->type), tstr(t),
                 C->decl->kind == D_FUNC ? "function" : C->decl->scan ? "scan" : "kernel");
    else if (!strcmp(what, "argument"))
      diag_error(C->d, n->loc, "cannot pass a %s value for a %s parameter", tstr(n->type), tstr(t));
    else if (!strcmp(what, "assign"))
      diag_error(C->d, n->loc, "cannot assign a %s value to a %s variable", tstr(n->type), tstr(t));
    else
      diag_error(C->d, n->loc, "cannot initialise a %s variable with a %s value", tstr(t), tstr(n->type));
    n->flags |= NF_ERROR;
    return n;
  }
  return conv(C, n, t);
}

static void check_stmts(Checker *C, Node *s);

static void check_stmt(Checker *C, Node *s) {
  switch (s->kind) {
  case ND_BLOCK:
    check_stmts(C, s->body);
    break;
  case ND_DECL:
    if (s->a && s->var) s->a = conv_store(C, check_expr(C, s->a), s->var->type, "initialise");
    for (int i = 0; i < s->nargs && s->var; i++) /* an array's initialiser */
      s->args[i] = conv_store(C, check_expr(C, s->args[i]), s->var->type, "initialise");
    break;
  case ND_ISET:
    if (!s->var) break;
    s->a = check_expr(C, s->a);
    if (need_scalar(C, s->a, "an array index") && need_int(C, s->a, "an array index"))
      s->a = conv(C, s->a, type_scalar(T_I64));
    s->b = conv_store(C, check_expr(C, s->b), s->var->type, "assign");
    break;
  case ND_ASSIGN:
    if (s->var) s->a = conv_store(C, check_expr(C, s->a), s->var->type, "assign");
    break;
  case ND_LANESET:
    if (!s->var) break;
    if (s->var->type.lanes <= 1 || s->ival >= s->var->type.lanes) {
      diag_error(C->d, s->loc, "%s has no component %s (%s)", tstr(s->var->type), lane_str(s->ival),
                 lanes_str(s->var->type));
      break;
    }
    s->a = check_expr(C, s->a);
    if (need_scalar(C, s->a, "a component")) s->a = conv(C, s->a, type_scalar(s->var->type.s));
    break;
  case ND_IF:
    s->a = check_expr(C, s->a);
    need_scalar(C, s->a, "a condition");
    check_stmts(C, s->b);
    check_stmts(C, s->c);
    break;
  case ND_FOR:
    check_stmts(C, s->init);
    s->a = check_expr(C, s->a);
    need_scalar(C, s->a, "a condition");
    check_stmts(C, s->step);
    check_stmts(C, s->b);
    break;
  case ND_RETURN: {
    Decl *D = C->decl;
    if (D->kind != D_KERNEL && D->kind != D_FUNC) break; /* reported by the parser */
    int given = s->nargs ? s->nargs : 1, want = D->nouts ? D->nouts : 1;
    if (D->kind == D_KERNEL && D->tile[0]) want = D->tile[0] * D->tile[1];
    if (given != want) {
      if (D->kind == D_FUNC)
        diag_error(C->d, s->loc, "a function returns one value; this return gives %d", given);
      else if (D->tile[0])
        diag_error(C->d, s->loc, "tiler '%s' makes a tile of %d x %d pixels; this return gives %d value%s (one per "
                   "pixel of the tile, row by row%s)", D->name, D->tile[0], D->tile[1], given, given == 1 ? "" : "s",
                   want > 1 ? ": return (v0, v1, ...);" : "");
      else if (D->kind == D_FUNC)
        diag_error(C->d, s->loc, "a function returns one value; this return gives %d", given);
      else if (want == 1)
        diag_error(C->d, s->loc, "%s '%s' has one output; this return gives %d values", D->scan ? "scan" : "kernel",
                   D->name, given);
      else
        diag_error(C->d, s->loc, "kernel '%s' has %d outputs; this return gives %d value%s (one per output: "
                   "return (%s, ...);)", D->name, want, given, given == 1 ? "" : "s", D->out_names[0]);
      break;
    }
    if (!s->nargs) {
      Node *e = check_expr(C, s->a);
      if (D->kind == D_KERNEL && D->type.s == T_VOID) { /* a global operator's map of GM_VALUE: its value's type */
        if (e->type.lanes != 1 || e->type.s == T_VOID) {
          diag_error(C->d, e->loc, "a global operator's value has one channel; this is %s", tstr(e->type));
          break;
        }
        D->type = e->type.s == T_I64 || e->type.s == T_U64 ? type_scalar(T_F64) : e->type;
        const Node *c = ir_strip_casts(e);
        if (c->kind == ND_NOT || (c->kind >= ND_EQ && c->kind <= ND_LOGOR)) /* 0 or 1: a byte is enough */
          D->type = type_scalar(T_U8);
        if (e->type.s == T_I64 || e->type.s == T_U64)
          diag_error(C->d, e->loc, "a global operator's value is a pixel type (u8 i16 u16 i32 u32 f32 f64), not %s",
                     tstr(e->type));
      }
      s->a = conv_store(C, e, D->type, "return");
      break;
    }
    for (int i = 0; i < s->nargs; i++)
      s->args[i] = conv_store(C, check_expr(C, s->args[i]), D->tile[0] ? D->type : D->out_types[i], "return");
    break;
  }
  case ND_BIN: {
    s->a = check_expr(C, s->a);
    if (!need_scalar(C, s->a, "a bin index")) break;
    if (scalar_is_float(s->a->type.s)) { /* float indices are floored */
      Node *f = mk(C, ND_CALL, s->a->type, s->a->loc);
      Node **args = arena_alloc(C->a, sizeof(Node *));
      if (!args) break;
      args[0] = s->a;
      f->builtin = BI_FLOOR;
      f->args = args;
      f->nargs = 1;
      s->a = f;
    }
    s->a = conv(C, s->a, type_scalar(T_I32));
    static const char *const call[] = {"bin()", "bin_min()", "bin_max()"};
    if (!C->bin_seen) {
      C->bin_seen = true, C->decl->binop = (int)s->ival;
    } else if (C->decl->binop != (int)s->ival) {
      diag_error(C->d, s->loc, "histogram '%s' calls %s and %s: its bins are sums, minima or maxima, one kind (write "
                               "two histograms)",
                 C->decl->name, call[C->decl->binop], call[s->ival]);
    }
    if (s->b) {
      s->b = check_expr(C, s->b);
      if (!need_scalar(C, s->b, s->ival == BIN_SUM ? "a bin weight" : "a bin value")) break;
      if (scalar_is_float(s->b->type.s)) C->decl->weighted_float = true;
      s->b = conv(C, s->b, type_scalar(scalar_is_float(s->b->type.s) ? T_F64 : T_I64));
    }
    break;
  }
  default:
    if (!(s->flags & NF_ERROR)) diag_error(C->d, s->loc, "internal: unexpected %s as a statement", node_name(s->kind));
    break;
  }
}

static void check_stmts(Checker *C, Node *s) {
  for (; s; s = s->next) check_stmt(C, s);
}

/* True if every path through the statement list ends in a return. */
static bool always_returns(Node *s) {
  for (; s; s = s->next) {
    if (s->kind == ND_RETURN) return true;
    if (s->kind == ND_BLOCK && always_returns(s->body)) return true;
    if (s->kind == ND_IF && s->c && always_returns(s->b) && always_returns(s->c)) return true;
  }
  return false;
}

/* size() and scalar pipeline arguments may use only constants, parameters and image sizes. */
static bool host_expr_ok(Checker *C, Node *n, const char *what) {
  if (!n) return true;
  switch (n->kind) {
  case ND_COORD: case ND_READ: case ND_AT: case ND_FCALL: case ND_INDEX:
    diag_error(C->d, n->loc, "%s may use only constants, scalar parameters and image sizes%s", what,
               n->kind == ND_FCALL ? " (no function calls)" : n->kind == ND_INDEX ? " (no tables)" : "");
    return false;
  default:
    break;
  }
  bool ok = host_expr_ok(C, n->a, what) && host_expr_ok(C, n->b, what) && host_expr_ok(C, n->c, what);
  for (int i = 0; ok && i < n->nargs; i++) ok = host_expr_ok(C, n->args[i], what);
  return ok;
}

static bool is_pixel_type(Type t) { return t.s != T_U64 && t.s != T_I64; }

/* Image parameters of any declaration must have pixel types. */
static void check_image_params(Checker *C, Decl *D) {
  for (int i = 0; i < D->nparams; i++) {
    Param *p = D->params[i];
    if (p->is_image && !is_pixel_type(p->type))
      diag_error(C->d, p->loc, "%s is not a pixel type (use u8 u16 i16 i32 u32 f32 f64)", tstr(p->type));
  }
}

/* The outputs of a kernel with several: pixel types, names distinct from each other and
 * from the parameters. */
static void check_outputs(Checker *C, Decl *D) {
  for (int i = 0; i < D->nouts; i++) {
    if (!is_pixel_type(D->out_types[i]))
      diag_error(C->d, D->out_locs[i], "output '%s' of kernel '%s': %s is not a pixel type (use u8 u16 i16 i32 u32 "
                 "f32 f64)", D->out_names[i], D->name, tstr(D->out_types[i]));
    for (int j = 0; j < i; j++)
      if (!strcmp(D->out_names[j], D->out_names[i]))
        diag_error(C->d, D->out_locs[i], "duplicate output '%s'", D->out_names[i]);
    for (int j = 0; j < D->nparams; j++)
      if (!strcmp(D->params[j]->name, D->out_names[i]))
        diag_error(C->d, D->out_locs[i], "output '%s' has the name of a parameter", D->out_names[i]);
  }
}

static void check_kernel(Checker *C, Decl *D) {
  if (D->nouts) check_outputs(C, D);
  else if (D->kind == D_KERNEL && (D->type.s == T_U64 || D->type.s == T_I64)) {
    diag_error(C->d, D->loc, "%s '%s': %s is not a pixel type (use u8 u16 i16 i32 u32 f32 f64)",
               D->scan ? "scan" : "kernel", D->name, tstr(D->type));
  }
  check_image_params(C, D);
  if (D->kind == D_KERNEL && D->nimages == 0 && !D->size_w && !D->scan)
    diag_error(C->d, D->loc, "%s '%s' has no image parameter, so it needs %s(width, height)", D->tile[0] ? "tiler" : "kernel",
               D->name, D->tile[0] ? "repeat" : "size");
  if (D->kind == D_KERNEL && D->tile[0] && !D->size_w && D->nimages) { /* ceil(image 0 / paving) tiles */
    const Param *p = NULL;
    for (int i = 0; i < D->nparams && !p; i++)
      if (D->params[i]->is_image) p = D->params[i];
    Node *sz[2];
    for (int k = 0; k < 2; k++) {
      Node *dim = mk(C, ND_IMGDIM, type_scalar(T_I32), D->loc);
      dim->param = (Param *)p;
      dim->ival = k;
      sz[k] = binary(C, ND_DIV, binary(C, ND_ADD, dim, num_i32(C, D->paving[k] - 1, D->loc)), num_i32(C, D->paving[k], D->loc));
    }
    D->size_w = sz[0], D->size_h = sz[1];
  }
  if (D->size_w) {
    D->size_w = check_expr(C, D->size_w);
    D->size_h = check_expr(C, D->size_h);
    if (host_expr_ok(C, D->size_w, "size()") && host_expr_ok(C, D->size_h, "size()")) {
      if (need_scalar(C, D->size_w, "size()") && need_int(C, D->size_w, "size()"))
        D->size_w = conv(C, D->size_w, type_scalar(T_I32));
      if (need_scalar(C, D->size_h, "size()") && need_int(C, D->size_h, "size()"))
        D->size_h = conv(C, D->size_h, type_scalar(T_I32));
    }
  }
  check_stmts(C, D->body);
  if (D->kind == D_KERNEL && D->body && !always_returns(D->body->body))
    diag_error(C->d, D->body->loc, "kernel '%s' can end without returning a value", D->name);
}

static void check_reduce(Checker *C, Decl *D) {
  check_image_params(C, D);
  if (D->nimages == 0) diag_error(C->d, D->loc, "reduction '%s' needs at least one image parameter", D->name);
  if (D->type.lanes != 1) {
    diag_error(C->d, D->loc, "reductions produce one value; %s has %d channels", tstr(D->type), D->type.lanes);
    return;
  }
  if (D->redop == R_SUM && (D->type.s == T_U8 || D->type.s == T_I16 || D->type.s == T_U16))
    diag_error(C->d, D->loc, "a sum in %s would saturate; use i32, u32, i64, u64, f32 or f64", tstr(D->type));
  D->body = check_expr(C, D->body);
  if (need_scalar(C, D->body, "a reduction")) D->body = conv(C, D->body, D->type);
  if (D->redop == R_COMBINE) {
    D->combine = check_expr(C, D->combine);
    if (host_expr_ok(C, D->combine, "combine() (besides a and b)") && need_scalar(C, D->combine, "combine()"))
      D->combine = conv(C, D->combine, D->type);
    D->identity = check_expr(C, D->identity);
    if (host_expr_ok(C, D->identity, "the identity of combine()") && need_scalar(C, D->identity, "the identity"))
      D->identity = conv(C, D->identity, D->type);
  }
}

/* A global operator: its output type is one the operator makes, one channel; its map is a
 * kernel over the first image's pixels (no size(): the output has that image's size). */
static void check_global(Checker *C, Decl *D) {
  GlobalOp g = (GlobalOp)(D->global - 1);
  static const char *const want[] = {"any pixel type", "f32 or f64", "u32 or i32"};
  int k = global_out_kind(g);
  bool ok = D->type.lanes == 1 && D->type.s != T_I64 && D->type.s != T_U64;
  if (k == GT_FLOAT) ok = ok && scalar_is_float(D->type.s);
  if (k == GT_LABEL) ok = ok && (D->type.s == T_U32 || D->type.s == T_I32);
  if (!ok)
    diag_error(C->d, D->loc, "global operator '%s' (%s) makes one channel of %s; %s is not one", D->name,
               global_name(g), k == GT_ANY ? "a pixel type (u8 i16 u16 i32 u32 f32 f64)" : want[k], tstr(D->type));
  if (D->nimages == 0) {
    diag_error(C->d, D->loc, "global operator '%s' needs an image parameter: it runs over the first image's pixels",
               D->name);
    return;
  }
  for (int k = 0; k < global_arity(g) && D->gmap[k]; k++) {
    C->decl = D->gmap[k];
    check_kernel(C, D->gmap[k]);
  }
  C->decl = D;
  if (global_map_kind(g) == GM_SAME && D->gmap[1] && D->gmap[0]->type.s != T_VOID && D->gmap[1]->type.s != T_VOID &&
      !type_eq(D->gmap[0]->type, D->gmap[1]->type))
    diag_error(C->d, D->loc, "the values of %s have one type: here %s and %s (convert one)", global_name(g),
               tstr(D->gmap[0]->type), tstr(D->gmap[1]->type));
}

/* A scan: a one-channel kernel over its first image's pixels, then the prefix pass. */
static void check_scan(Checker *C, Decl *D) {
  if (D->nimages == 0)
    diag_error(C->d, D->loc, "scan '%s' needs an image parameter: it runs over the first image's pixels", D->name);
  if (D->type.lanes != 1)
    diag_error(C->d, D->loc, "scan '%s' produces one channel; %s has %d", D->name, tstr(D->type), D->type.lanes);
  else if (D->redop == R_SUM && (D->type.s == T_U8 || D->type.s == T_I16 || D->type.s == T_U16))
    diag_error(C->d, D->loc, "a running sum in %s would saturate; use i32, u32, f32 or f64", tstr(D->type));
  check_kernel(C, D);
}

static void check_histogram(Checker *C, Decl *D) {
  if (D->nimages == 0) diag_error(C->d, D->loc, "histogram '%s' needs at least one image parameter", D->name);
  /* the body was checked by check_kernel */
  D->type = type_scalar(D->weighted_float ? T_F64 : T_I64);
}

/* Whether k may compute pipeline value v: a kernel for an image, a reduction of v's type
 * for a scalar, a histogram of v's length and bin type for an array. */
static bool check_value_callee(Checker *C, const PipeValue *v, const Decl *k, const char *name) {
  static const char *const what[] = {"kernel", "reduction", "histogram", "pipeline", "function"};
  if (v->kind == PV_IMAGE) {
    if (k->kind == D_KERNEL) return true;
    if (k->kind == D_REDUCE || k->kind == D_HISTOGRAM)
      diag_error(C->d, v->loc, "a pipeline keeps a %s's result in a value: %s %s%s = %s(...);", what[k->kind],
                 tstr(k->type), k->kind == D_REDUCE ? "s" : "h", k->kind == D_REDUCE ? "" : "[N]", name);
    else
      diag_error(C->d, v->loc, "a pipeline calls kernels; '%s' is a %s", name, what[k->kind]);
    return false;
  }
  if (v->kind == PV_ARRAY && k->kind == D_KERNEL) { /* a table of the kernel's pixels, row by row */
    if (k->nouts || k->type.lanes != 1) {
      diag_error(C->d, v->loc, "'%s' (an array) takes the pixels of a kernel with one one-channel output; '%s' has %s",
                 v->name, name, k->nouts ? "several outputs" : "vector pixels");
      return false;
    }
    if (!type_eq(v->type, k->type)) {
      diag_error(C->d, v->loc, "'%s' gives %s pixels, but '%s' is declared %s", name, tstr(k->type), v->name,
                 tstr(v->type));
      return false;
    }
    return true; /* the number of pixels is checked when it runs */
  }
  DeclKind want = v->kind == PV_SCALAR ? D_REDUCE : D_HISTOGRAM;
  if (k->kind != want) {
    diag_error(C->d, v->loc, "'%s' is a %s, but '%s' %s", name, what[k->kind], v->name,
               v->kind == PV_SCALAR ? "(a scalar) takes a reduction's result"
                                    : "(an array) takes a histogram's bins or a kernel's pixels");
    return false;
  }
  if (!type_eq(v->type, k->type)) {
    diag_error(C->d, v->loc, "'%s' gives %s%s, but '%s' is declared %s", name, tstr(k->type),
               k->kind == D_HISTOGRAM ? " bins" : "", v->name, tstr(v->type));
    return false;
  }
  if (k->kind == D_HISTOGRAM && k->nbins != v->len) {
    diag_error(C->d, v->loc, "'%s' has %d bins, but '%s' is declared with %d", name, k->nbins, v->name, v->len);
    return false;
  }
  return true;
}

/* Whether pipeline value v may use kernel k: a kernel with several outputs only in a
 * statement naming each of its images, and such a statement only for it. */
static bool check_outputs_use(Checker *C, const PipeValue *v, const Decl *k, const char *name) {
  if (v->nouts) {
    if (k->nouts == v->nouts) return true;
    if (v->out == 0) {
      if (k->nouts)
        diag_error(C->d, v->loc, "'%s' has %d outputs, but the statement names %d images", name, k->nouts, v->nouts);
      else
        diag_error(C->d, v->loc, "'%s' has one output; name its image with image %s name = %s(...);", name,
                   tstr(k->type), name);
    }
    return false;
  }
  if (!k->nouts) return true;
  if (v->name)
    diag_error(C->d, v->loc, "'%s' has %d outputs; name each of its images: (image %s %s, ...) = %s(...);", name,
               k->nouts, tstr(k->out_types[0]), k->out_names[0], name);
  else
    diag_error(C->d, v->loc, "'%s' has %d outputs, so it cannot be an argument or the returned image; name its "
               "images first: (image %s %s, ...) = %s(...);", name, k->nouts, tstr(k->out_types[0]),
               k->out_names[0], name);
  return false;
}

/* Argument j of a call of `name` for array parameter p: a histogram's bins of p's type
 * and length. */
static void check_array_arg(Checker *C, const Decl *D, const PipeArg *a, int j, const char *name, const Param *p) {
  const PipeValue *src = a->source >= 0 ? &D->values[a->source] : NULL;
  if (!src || src->kind != PV_ARRAY) {
    diag_error(C->d, a->loc, "argument %d of '%s' must be a histogram's bins %s[%d] (array parameter '%s')", j + 1,
               name, tstr(p->type), p->len, p->name);
    return;
  }
  if (!type_eq(src->type, p->type) || src->len != p->len)
    diag_error(C->d, a->loc, "argument %d of '%s' is %s %s[%d], but array parameter '%s' is %s[%d]", j + 1, name,
               tstr(src->type), src->name, src->len, p->name, tstr(p->type), p->len);
}

/* The instance of generic k that call v (in pipeline D) takes: the first whose image
 * parameters have the types of the images given; NULL (reported) when none has. */
static Decl *call_instance(Checker *C, const Decl *D, const PipeValue *v, Decl *k, const char *name) {
  for (Decl *i = k->inst_first; i; i = i->inst_next) {
    bool match = i->nparams == v->nargs;
    for (int j = 0; match && j < v->nargs; j++) {
      const PipeArg *a = &v->args[j];
      const Param *p = i->params[j];
      if (!p->is_image || a->source < 0 || D->values[a->source].kind != PV_IMAGE) continue;
      Type at = D->values[a->source].type;
      match = at.s == T_VOID || type_eq(at, p->type);
    }
    if (match) return i;
  }
  if (k->nparams != v->nargs) return k; /* the argument count is reported with the other checks */
  char types[128], got[256] = "";
  size_t m = 0;
  decl_instance_types(k, types, sizeof types);
  for (int j = 0; j < v->nargs && m < sizeof got; j++) {
    const PipeArg *a = &v->args[j];
    if (k->params[j]->is_image && a->source >= 0 && D->values[a->source].kind == PV_IMAGE)
      m += (size_t)snprintf(got + m, sizeof got - m, "%simage %s", m ? ", " : "", tstr(D->values[a->source].type));
  }
  diag_error(C->d, v->loc, "no instance of generic '%s' (%s = %s) takes %s", name, k->tparam, types,
             m ? got : "these arguments");
  return NULL;
}

static void check_pipeline(Checker *C, Decl *D) {
  check_image_params(C, D);
  for (int k = 0; k < (D->nouts ? D->nouts : 1); k++) {
    Type t = D->nouts ? D->out_types[k] : D->type;
    if (!is_pixel_type(t))
      diag_error(C->d, D->loc, "pipeline '%s': %s is not a pixel type (use u8 u16 i16 i32 u32 f32 f64)", D->name,
                 tstr(t));
  }
  for (int i = 0; i < D->nvalues; i++) {
    PipeValue *v = &D->values[i];
    if (!v->callee) continue; /* a parameter */
    const char *name = v->callee->name;
    Decl *k = program_find(C->prog, name);
    v->callee = NULL;
    if (k && k->inst_first && !(k = call_instance(C, D, v, k, name))) continue;
    if (k && k->bad) continue; /* its own errors were reported */
    if (!k) {
      diag_error(C->d, v->loc, "unknown kernel '%s'", name);
      continue;
    }
    if (k->scan) {
      diag_error(C->d, v->loc, "a pipeline calls kernels; '%s' is a scan", name);
      continue;
    }
    if (!check_value_callee(C, v, k, name)) continue;
    if (!check_outputs_use(C, v, k, name)) continue;
    v->callee = k;
    if (v->nargs != k->nparams) {
      diag_error(C->d, v->loc, "'%s' takes %d argument%s, got %d", name, k->nparams, k->nparams == 1 ? "" : "s",
                 v->nargs);
      v->callee = NULL;
      continue;
    }
    if (!v->name) v->type = k->type;
    else if (v->nouts && !type_eq(v->type, k->out_types[v->out]))
      diag_error(C->d, v->loc, "output %d of '%s' ('%s') is image %s, but '%s' is declared image %s", v->out + 1,
                 name, k->out_names[v->out], tstr(k->out_types[v->out]), v->name, tstr(v->type));
    else if (v->kind == PV_IMAGE && !v->nouts && !type_eq(v->type, k->type))
      diag_error(C->d, v->loc, "'%s' returns image %s, but '%s' is declared image %s", name, tstr(k->type),
                 v->name, tstr(v->type));
    if (v->nouts && v->out > 0) continue; /* the arguments are the tuple's first value's */
    for (int j = 0; j < v->nargs; j++) {
      PipeArg *a = &v->args[j];
      Param *p = k->params[j];
      if (p->len) {
        check_array_arg(C, D, a, j, name, p);
      } else if (p->is_image) {
        if (a->source == -1) {
          diag_error(C->d, a->loc, "argument %d of '%s' must be an image (parameter '%s')", j + 1, name, p->name);
          continue;
        }
        if (a->source < 0) continue;
        if (D->values[a->source].kind != PV_IMAGE) {
          diag_error(C->d, a->loc, "argument %d of '%s' must be an image (parameter '%s'), not the bins of a histogram",
                     j + 1, name, p->name);
          continue;
        }
        Type at = D->values[a->source].type;
        if (at.s != T_VOID && !type_eq(at, p->type)) /* void: its call was refused */
          diag_error(C->d, a->loc, "argument %d of '%s' is image %s, but parameter '%s' is image %s", j + 1, name,
                     tstr(at), p->name, tstr(p->type));
        if (!a->has_border) a->border = p->border;
      } else {
        if (a->source != -1) {
          diag_error(C->d, a->loc, "argument %d of '%s' must be a %s value (parameter '%s')", j + 1, name,
                     tstr(p->type), p->name);
          continue;
        }
        a->expr = check_expr(C, a->expr);
        if (host_expr_ok(C, a->expr, "a scalar argument") && need_scalar(C, a->expr, "a scalar argument"))
          a->expr = conv(C, a->expr, p->type);
      }
    }
  }
  int want = D->nouts ? D->nouts : 1, given = D->results ? D->nresults : 1;
  if (D->result >= 0 && given != want) {
    if (want == 1)
      diag_error(C->d, D->loc, "pipeline '%s' returns one image (-> image %s); its return gives %d", D->name,
                 tstr(D->type), given);
    else
      diag_error(C->d, D->loc, "pipeline '%s' returns %d images; its return gives %d", D->name, want, given);
    return;
  }
  for (int k = 0; k < want; k++) {
    int r = D->results ? D->results[k] : D->result;
    Type t = D->nouts ? D->out_types[k] : D->type;
    if (r < 0 || r >= D->nvalues) continue;
    const PipeValue *v = &D->values[r];
    if (v->kind != PV_IMAGE) {
      diag_error(C->d, D->loc, "pipeline '%s' returns '%s', a %s; a pipeline returns %s", D->name, v->name,
                 v->kind == PV_SCALAR ? "reduction's result" : "histogram", D->nouts ? "images" : "an image");
      return;
    }
    if (v->type.s != T_VOID && !type_eq(v->type, t)) {
      if (D->nouts)
        diag_error(C->d, D->loc, "pipeline '%s' returns image %s as its image %d, but declares image %s", D->name,
                   tstr(v->type), k + 1, tstr(t));
      else
        diag_error(C->d, D->loc, "pipeline '%s' returns image %s but is declared -> image %s", D->name,
                   tstr(v->type), tstr(t));
    }
    if (!v->callee && v->param)
      diag_error(C->d, D->loc, "pipeline '%s' returns its input unchanged; call a kernel", D->name);
    for (int j = 0; j < k; j++)
      if (D->results[j] == r)
        diag_error(C->d, D->loc, "pipeline '%s' returns '%s' twice; each image it returns is a stage of its own",
                   D->name, v->name ? v->name : "(call)");
  }
}

/* The counts of a pipeline's loops: integer host expressions (constants, scalar
 * parameters, the sizes of image parameters, values computed before the loop), converted
 * to i64. The loops themselves were
 * resolved by the parser; the carried images' calls are checked with the other calls. */
static void check_pipeline_loops(Checker *C, Decl *D) {
  for (int i = 0; i < D->nloops; i++) {
    PipeLoop *L = &D->loops[i];
    L->count = check_expr(C, L->count);
    if (host_expr_ok(C, L->count, "a loop count") && need_scalar(C, L->count, "a loop count") &&
        need_int(C, L->count, "a loop count"))
      L->count = conv(C, L->count, type_scalar(T_I64));
  }
}

/* The elements of a table: number literals of its element type (missing ones 0). */
static void check_table(Checker *C, Var *v) {
  for (int i = 0; i < v->len; i++) {
    Node *e = v->elems[i];
    if (!e) {
      e = mk(C, ND_NUM, type_scalar(T_I32), v->loc);
      v->elems[i] = conv(C, e, v->type);
      continue;
    }
    e = conv(C, check_expr(C, e), v->type);
    if (!is_err(e) && e->kind != ND_NUM) {
      diag_error(C->d, e->loc, "the elements of const array '%s' must be numbers", v->name);
      e->flags |= NF_ERROR;
    }
    v->elems[i] = e;
  }
}

/* Depth-first search of the call graph from the calls in n; state per function (by
 * Decl.index): 0 not seen, 1 on the current path, 2 finished. True when a call leads
 * back to a function on the path: recursion. */
static bool has_cycle(Node *n, char *state) {
  for (; n; n = n->next) {
    if (n->kind == ND_FCALL && n->func && n->func->body) {
      Decl *g = n->func;
      if (state[g->index] == 1) return true;
      if (state[g->index] == 0) {
        state[g->index] = 1;
        if (has_cycle(g->body, state)) return true;
        state[g->index] = 2;
      }
    }
    if (has_cycle(n->a, state) || has_cycle(n->b, state) || has_cycle(n->c, state) || has_cycle(n->init, state) ||
        has_cycle(n->step, state) || has_cycle(n->body, state))
      return true;
    for (int i = 0; i < n->nargs; i++)
      if (has_cycle(n->args[i], state)) return true;
  }
  return false;
}

static void check_func(Checker *C, Decl *F) {
  if (F->type.s == T_VOID) return;
  check_stmts(C, F->body);
  if (F->body && !always_returns(F->body->body))
    diag_error(C->d, F->body->loc, "function '%s' can end without returning a value", F->name);
}

/* An instance of a generic declaration: its errors say which (Diag.context), and one of
 * its image parameters must have the type parameter's type, since that is how a run
 * picks the instance. */
static void generic_context(Checker *C, const Decl *D, char *buf, size_t n) {
  if (!D->tparam) return;
  snprintf(buf, n, "with %s = %s", D->tparam, tstr(D->targ));
  C->d->context = buf;
  bool named = false;
  for (int i = 0; i < D->nparams; i++)
    named |= D->params[i]->is_image && D->params[i]->of_tparam;
  if (!named)
    diag_error(C->d, D->loc, "generic '%s': no image parameter has type %s, so a run cannot tell which instance to "
               "take; declare an image parameter 'image %s NAME'", D->name, D->tparam, D->tparam);
}

bool check_program(Program *p, Diag *d) {
  Checker C = {.prog = p, .a = p->arena, .d = d};
  int errs = d->nerrors;
  for (int i = 0; i < p->ntables; i++) check_table(&C, p->tables[i]);
  for (int i = 0; i < p->nfuncs; i++) {
    C.decl = p->funcs[i];
    p->funcs[i]->index = i;
    if (!p->funcs[i]->bad) check_func(&C, p->funcs[i]);
  }
  if (d->nerrors == errs && p->nfuncs) { /* every call resolved: no recursion, direct or through others */
    char *state = arena_alloc(p->arena, (size_t)p->nfuncs);
    for (int i = 0; state && i < p->nfuncs; i++) {
      memset(state, 0, (size_t)p->nfuncs);
      state[i] = 1;
      if (has_cycle(p->funcs[i]->body, state)) {
        diag_error(d, p->funcs[i]->loc, "function '%s' calls itself (directly or through other functions); "
                   "pxl functions are inlined and cannot recurse", p->funcs[i]->name);
        break;
      }
    }
  }
  char ctx[64];
  for (int i = 0; i < p->ndecls; i++) {
    Decl *D = p->decls[i];
    C.decl = D;
    C.bin_seen = false;
    if (D->bad) continue;
    generic_context(&C, D, ctx, sizeof ctx);
    switch (D->kind) {
    case D_KERNEL: D->global ? check_global(&C, D) : D->scan ? check_scan(&C, D) : check_kernel(&C, D); break;
    case D_REDUCE: check_reduce(&C, D); break;
    case D_HISTOGRAM: check_kernel(&C, D); check_histogram(&C, D); break;
    case D_PIPELINE: break; /* below: after the histograms' bin types are known */
    case D_FUNC: break; /* functions live in Program.funcs */
    }
    d->context = NULL;
    if (d->nerrors > DIAG_MAX_ERRORS) break;
  }
  for (int i = 0; i < p->ndecls && d->nerrors <= DIAG_MAX_ERRORS; i++) {
    Decl *D = p->decls[i];
    C.decl = D;
    if (!D->bad && D->kind == D_PIPELINE) {
      generic_context(&C, D, ctx, sizeof ctx);
      check_pipeline(&C, D);
      check_pipeline_loops(&C, D);
      d->context = NULL;
    }
  }
  return d->nerrors == errs && !p->arena->failed;
}

void program_free(Program *p) {
  if (!p) return;
  arena_free(p->arena); /* p itself lives in the arena */
}
