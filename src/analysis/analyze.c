/*
 * analyze.c - access analysis and skeleton classification (see analysis.h).
 *
 * Offsets of relative reads are bounded by interval arithmetic over constants, loop
 * counters of counted for-loops (constant start and bound, step +-1) and locals assigned
 * once from such values. Absolute reads are matched against the affine form
 * c0 + cx*x + cy*y + cw*w + ch*h (w, h the read image's size). What cannot be bounded or
 * matched is a data-dependent gather. The class follows from the accesses:
 *   only (0,0) reads                      -> P2P
 *   bounded relative window               -> N2P
 *   affine absolute reads, signed perm.   -> non-sequential P2P (transpose, flips)
 *   anything else                         -> gather
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "image/image.h"
#include "analysis/specialise.h"

typedef struct {
  bool known;
  int64_t lo, hi;
} Interval;

typedef struct An {
  Decl *D;
  Arena *a;
  Interval *vars;  /* per slot: interval of a loop counter or single-assignment local */
  int *assigns;    /* per slot: number of assignments outside declarations and for-steps */
  int *steps;      /* per slot: number of assignments in for-steps */
  Metrics *m;
  /* the pass: walk_expr (accesses, metrics), or mark_expr (conversions in range; values
   * set: pixels, conversions and divisions bounded too - the access analysis keeps
   * data-dependent reads as gathers) */
  void (*expr)(struct An *A, Node *n, double w);
  bool values;
  Interval sep_init[PXL_MAX_SEP_ACC]; /* mark_expr pass: separable accumulators' values before the loop */
  int64_t unrolled; /* the values pass: bodies the loops marked NF_UNROLL so far in a loop's body make */
} An;

/* Loop bodies a nest of loops marked NF_UNROLL may make (a 7 x 7 window; 15 x 15 made
 * generated C that took gcc 19 s: its inner loop is unrolled, its outer one kept). */
#define UNROLL_BODIES 64

static const Interval UNKNOWN = {false, 0, 0};

static Interval iv(int64_t lo, int64_t hi) { return (Interval){true, lo, hi}; }

static bool small(int64_t v) { return v > -(1 << 24) && v < (1 << 24); }

/* The values of integer type s, where they are small enough to track. */
static Interval type_range(Scalar s) {
  switch (s) {
  case T_U8: return iv(0, 255);
  case T_I16: return iv(-32768, 32767);
  case T_U16: return iv(0, 65535);
  default: return UNKNOWN;
  }
}

static Interval meet(Interval x, Interval t) { /* x clamped into t (saturation) */
  if (!t.known || !x.known) return x;
  return iv(x.lo < t.lo ? t.lo : x.lo > t.hi ? t.hi : x.lo, x.hi > t.hi ? t.hi : x.hi < t.lo ? t.lo : x.hi);
}

static bool unsigned_type(Scalar s) { return s == T_U8 || s == T_U16 || s == T_U32 || s == T_U64; }

static Interval interval_raw(An *A, Node *n);

/* The values n may take (integers), or UNKNOWN. */
static Interval interval_of(An *A, Node *n) {
  Interval x = interval_raw(A, n);
  /* unsigned arithmetic wraps below zero: such an interval says nothing */
  return x.known && n && unsigned_type(n->type.s) && x.lo < 0 ? UNKNOWN : x;
}

static Interval interval_raw(An *A, Node *n) {
  if (!n || n->type.lanes > 1) return UNKNOWN;
  Interval x, y;
  switch (n->kind) {
  case ND_NUM:
    if (scalar_is_float(n->type.s) || !small(n->ival)) return UNKNOWN;
    return iv(n->ival, n->ival);
  case ND_VAR:
    return (n->var && n->var->slot < A->D->nslots) ? A->vars[n->var->slot] : UNKNOWN;
  case ND_READ: case ND_AT: /* a pixel: its type's values */
    return A->values ? type_range(n->type.s) : UNKNOWN;
  case ND_COORD: /* (values pass) x, y: wide of the image's, as fused stages may compute
                  * neighbours' pixels; width, height: an image's size */
    if (!A->values) return UNKNOWN;
    return n->ival < 2 ? iv(-PXL_MAX_DIM, 2 * (int64_t)PXL_MAX_DIM) : iv(1, PXL_MAX_DIM);
  case ND_IMGDIM:
    return A->values ? iv(1, PXL_MAX_DIM) : UNKNOWN;
  case ND_CAST:
    if (scalar_is_float(n->type.s) || scalar_is_float(n->a->type.s)) return UNKNOWN;
    x = interval_of(A, n->a);
    if (!A->values) return x;
    return x.known ? meet(x, type_range(n->type.s)) : type_range(n->type.s); /* they saturate */
  case ND_DIV: case ND_SHR: case ND_MOD: case ND_BITAND: /* by a constant */
    if (!A->values) return UNKNOWN;
    x = interval_of(A, n->a);
    y = interval_of(A, n->b);
    if (!y.known || y.lo != y.hi) return UNKNOWN;
    if (n->kind == ND_BITAND) return y.lo >= 0 ? iv(0, y.lo) : UNKNOWN;
    if (!x.known) return UNKNOWN;
    if (n->kind == ND_DIV) /* truncating; x / 0 is 0 */
      return y.lo > 0 ? iv(x.lo / y.lo, x.hi / y.lo) : y.lo < -1 ? iv(x.hi / y.lo, x.lo / y.lo) : UNKNOWN;
    if (n->kind == ND_SHR) return y.lo >= 0 && y.lo < 31 && x.lo >= 0 ? iv(x.lo >> y.lo, x.hi >> y.lo) : UNKNOWN;
    return y.lo > 0 && x.lo >= 0 ? iv(0, x.hi < y.lo - 1 ? x.hi : y.lo - 1) : UNKNOWN; /* ND_MOD */
  case ND_NEG:
    x = interval_of(A, n->a);
    return x.known ? iv(-x.hi, -x.lo) : UNKNOWN;
  case ND_EQ: case ND_NE: case ND_LT: case ND_LE: case ND_GT: case ND_GE: case ND_LOGAND: case ND_LOGOR:
  case ND_NOT:
    return iv(0, 1);
  case ND_COND: /* either branch, whatever the condition */
    x = interval_of(A, n->b);
    y = interval_of(A, n->c);
    if (!x.known || !y.known) return UNKNOWN;
    return iv(x.lo < y.lo ? x.lo : y.lo, x.hi > y.hi ? x.hi : y.hi);
  case ND_CALL:
    if (scalar_is_float(n->type.s)) return UNKNOWN;
    if (n->builtin == BI_MIN || n->builtin == BI_MAX) {
      x = interval_of(A, n->args[0]);
      y = interval_of(A, n->args[1]);
      if (!x.known || !y.known) return UNKNOWN;
      if (n->builtin == BI_MIN) return iv(x.lo < y.lo ? x.lo : y.lo, x.hi < y.hi ? x.hi : y.hi);
      return iv(x.lo > y.lo ? x.lo : y.lo, x.hi > y.hi ? x.hi : y.hi);
    }
    if (n->builtin == BI_ABS) { /* wraps only at the type's minimum, which small() intervals exclude */
      x = interval_of(A, n->args[0]);
      if (!x.known || !small(x.lo) || !small(x.hi)) return UNKNOWN;
      if (x.lo >= 0) return x;
      if (x.hi <= 0) return iv(-x.hi, -x.lo);
      return iv(0, -x.lo > x.hi ? -x.lo : x.hi);
    }
    if (n->builtin == BI_CLAMP) { /* min(max(v, lo), hi): within [min(lo, hi), hi] whatever v is */
      Interval v = interval_of(A, n->args[0]), l = interval_of(A, n->args[1]), h = interval_of(A, n->args[2]);
      if (!l.known || !h.known) return UNKNOWN;
      Interval m = v.known ? iv(v.lo > l.lo ? v.lo : l.lo, v.hi > l.hi ? v.hi : l.hi) : iv(l.lo, h.hi > l.hi ? h.hi : l.hi);
      return iv(m.lo < h.lo ? m.lo : h.lo, m.hi < h.hi ? m.hi : h.hi);
    }
    return UNKNOWN;
  case ND_INDEX: /* a table's elements, and 0 where the index may fall outside it */
    if (!n->var->is_const || scalar_is_float(n->type.s)) return UNKNOWN;
    y = interval_of(A, n->a);
    x = y.known && y.lo >= 0 && y.hi < n->var->len ? UNKNOWN : iv(0, 0);
    for (int64_t i = y.known && y.lo >= 0 ? y.lo : 0; i < n->var->len && (!y.known || i <= y.hi); i++) {
      int64_t v = n->var->elems[i]->ival;
      if (!small(v)) return UNKNOWN;
      x = x.known ? iv(v < x.lo ? v : x.lo, v > x.hi ? v : x.hi) : iv(v, v);
    }
    return x;
  case ND_ADD: case ND_SUB: case ND_MUL:
    x = interval_of(A, n->a);
    y = interval_of(A, n->b);
    if (!x.known || !y.known) return UNKNOWN;
    if (n->kind == ND_ADD) x = iv(x.lo + y.lo, x.hi + y.hi);
    else if (n->kind == ND_SUB) x = iv(x.lo - y.hi, x.hi - y.lo);
    else {
      int64_t c[4] = {x.lo * y.lo, x.lo * y.hi, x.hi * y.lo, x.hi * y.hi};
      int64_t lo = c[0], hi = c[0];
      for (int i = 1; i < 4; i++) {
        if (c[i] < lo) lo = c[i];
        if (c[i] > hi) hi = c[i];
      }
      x = iv(lo, hi);
    }
    return small(x.lo) && small(x.hi) ? x : UNKNOWN;
  default:
    return UNKNOWN;
  }
}

/* A constant part: c0 .. c1. */
static Affine affine_const(int64_t lo, int64_t hi) { return (Affine){.ok = true, .c0 = lo, .c1 = hi}; }

static bool affine_is_const(Affine a) { return a.ok && !a.cx && !a.cy && !a.cw && !a.ch; }

/* Affine form of an index expression for image `img` (see Affine): the coordinates, the
 * image's size and numbers combined by + - and multiplication by a number, plus any
 * term whose values the interval analysis bounds (a loop counter, a table's element, a
 * variable of known range); ok=false when not affine. */
static Affine affine_of(An *A, Node *n, Param *img) {
  Affine r = {0};
  Affine x, y;
  if (!n) return r;
  switch (n->kind) {
  case ND_NUM:
    if (scalar_is_float(n->type.s)) return r;
    return affine_const(n->ival, n->ival);
  case ND_COORD:
    r.ok = true;
    if (n->ival == 0) r.cx = 1;
    else if (n->ival == 1) r.cy = 1;
    else return (Affine){0}; /* output width/height: not the read image's */
    return r;
  case ND_IMGDIM:
    if (n->param != img) return r;
    r.ok = true;
    if (n->ival == 0) r.cw = 1;
    else r.ch = 1;
    return r;
  case ND_CAST:
    if (scalar_is_float(n->type.s) || scalar_is_float(n->a->type.s)) return r;
    return affine_of(A, n->a, img);
  case ND_NEG:
    x = affine_of(A, n->a, img);
    if (!x.ok) return r;
    return (Affine){true, -x.c1, -x.cx, -x.cy, -x.cw, -x.ch, -x.c0};
  case ND_ADD: case ND_SUB: {
    x = affine_of(A, n->a, img);
    y = affine_of(A, n->b, img);
    if (!x.ok || !y.ok) return r;
    if (n->kind == ND_ADD)
      return (Affine){true, x.c0 + y.c0, x.cx + y.cx, x.cy + y.cy, x.cw + y.cw, x.ch + y.ch, x.c1 + y.c1};
    return (Affine){true, x.c0 - y.c1, x.cx - y.cx, x.cy - y.cy, x.cw - y.cw, x.ch - y.ch, x.c1 - y.c0};
  }
  case ND_MUL: {
    x = affine_of(A, n->a, img);
    y = affine_of(A, n->b, img);
    if (!x.ok || !y.ok) return r;
    bool xc = affine_is_const(x), yc = affine_is_const(y);
    if (xc && yc) break; /* two ranges: their product's interval, below */
    if (!xc && !yc) return r;
    Affine v = xc ? y : x, k = xc ? x : y;
    if (k.c0 != k.c1) return r; /* a linear part times a range: not affine */
    int64_t m = k.c0;
    return (Affine){true, m >= 0 ? v.c0 * m : v.c1 * m, v.cx * m, v.cy * m, v.cw * m, v.ch * m,
                    m >= 0 ? v.c1 * m : v.c0 * m};
  }
  default:
    break;
  }
  Interval v = interval_of(A, n); /* a bounded term */
  return v.known ? affine_const(v.lo, v.hi) : r;
}

static void note_read(An *A, Node *n) {
  Access *ac = &A->D->access[n->param->img_index];
  if (n->kind == ND_READ) {
    Interval dx = interval_of(A, n->a), dy = interval_of(A, n->b);
    if (!dx.known || !dy.known) {
      ac->gather = true;
      return;
    }
    if (!ac->read_rel) {
      ac->x0 = (int)dx.lo, ac->x1 = (int)dx.hi, ac->y0 = (int)dy.lo, ac->y1 = (int)dy.hi;
    } else {
      if (dx.lo < ac->x0) ac->x0 = (int)dx.lo;
      if (dx.hi > ac->x1) ac->x1 = (int)dx.hi;
      if (dy.lo < ac->y0) ac->y0 = (int)dy.lo;
      if (dy.hi > ac->y1) ac->y1 = (int)dy.hi;
    }
    ac->read_rel = true;
    ac->window_known = true;
  } else {
    Affine ax = affine_of(A, n->a, n->param), ay = affine_of(A, n->b, n->param);
    if (!ax.ok || !ay.ok) {
      ac->gather = true;
      ac->abs_affine = false;
      ac->read_abs = true;
      return;
    }
    if (!ac->read_abs) {
      ac->abs_affine = true;
      ac->ax = ax;
      ac->ay = ay;
    } else if (ac->abs_affine) {
      /* several affine reads: one linear part (else a gather), the constant parts joined,
       * so that a tile's corners bound every read */
      if (ax.cx != ac->ax.cx || ax.cy != ac->ax.cy || ax.cw != ac->ax.cw || ax.ch != ac->ax.ch ||
          ay.cx != ac->ay.cx || ay.cy != ac->ay.cy || ay.cw != ac->ay.cw || ay.ch != ac->ay.ch) {
        ac->abs_affine = false;
      } else {
        if (ax.c0 < ac->ax.c0) ac->ax.c0 = ax.c0;
        if (ax.c1 > ac->ax.c1) ac->ax.c1 = ax.c1;
        if (ay.c0 < ac->ay.c0) ac->ay.c0 = ay.c0;
        if (ay.c1 > ac->ay.c1) ac->ay.c1 = ay.c1;
      }
    }
    ac->read_abs = true;
  }
}

/* Counts assignments per slot (declarations and for-steps excluded) to find constants. */
static void count_assigns(An *A, Node *s, bool in_step) {
  for (; s; s = s->next) {
    switch (s->kind) {
    case ND_ASSIGN: case ND_LANESET: case ND_ISET:
      if (s->var) (in_step ? A->steps : A->assigns)[s->var->slot]++;
      break;
    case ND_BLOCK: count_assigns(A, s->body, false); break;
    case ND_IF: count_assigns(A, s->b, false); count_assigns(A, s->c, false); break;
    case ND_FOR:
      count_assigns(A, s->init, false);
      count_assigns(A, s->step, true);
      count_assigns(A, s->b, false);
      break;
    default: break;
    }
  }
}

static void walk_expr(An *A, Node *n, double weight);

static double count_ops(Node *n) { (void)n; return 1; }

static void walk_expr(An *A, Node *n, double w) {
  if (!n) return;
  switch (n->kind) {
  case ND_READ: case ND_AT:
    note_read(A, n);
    A->m->reads += w;
    break;
  case ND_ADD: case ND_SUB: case ND_MUL: case ND_DIV: case ND_MOD: case ND_SHL: case ND_SHR:
  case ND_BITAND: case ND_BITOR: case ND_BITXOR: case ND_NEG: case ND_BITNOT: case ND_NOT:
  case ND_EQ: case ND_NE: case ND_LT: case ND_LE: case ND_GT: case ND_GE: case ND_CALL: {
    double lanes = n->type.lanes > 1 ? n->type.lanes : 1;
    A->m->arith += w * lanes * count_ops(n);
    bool fl = scalar_is_float(n->type.s) || (n->a && scalar_is_float(n->a->type.s)) ||
              (n->nargs && scalar_is_float(n->args[0]->type.s));
    if (fl) A->m->flops += w * lanes;
    break;
  }
  case ND_COND: case ND_LOGAND: case ND_LOGOR:
    A->m->branches += w;
    break;
  case ND_FCALL: { /* the function's own counts, per call (analysed before its callers) */
    const Metrics *fm = &n->func->metrics;
    A->m->arith += w * fm->arith;
    A->m->flops += w * fm->flops;
    A->m->branches += w * fm->branches;
    if (!fm->exact) A->m->exact = false;
    break;
  }
  default:
    break;
  }
  walk_expr(A, n->a, w);
  walk_expr(A, n->b, w);
  walk_expr(A, n->c, w);
  for (int i = 0; i < n->nargs; i++) walk_expr(A, n->args[i], w);
}

/* Trip count of a counted loop `for (v = A; v </<=/>/>= B; v++/--)`, or -1. Sets the
 * counter's interval when it is counted and never assigned in the body. */
static int64_t counted_loop(An *A, Node *f) {
  Node *init = f->init, *cond = f->a, *step = f->step;
  if (!init || init->next || !cond || !step || step->next) return -1;
  Var *v = init->var;
  if (!v || (init->kind != ND_DECL && init->kind != ND_ASSIGN) || !init->a) return -1;
  if (A->assigns[v->slot] > (init->kind == ND_ASSIGN ? 1 : 0) || A->steps[v->slot] != 1) return -1;
  Interval start = interval_of(A, init->a);
  if (!start.known) return -1;
  if (step->kind != ND_ASSIGN || step->var != v || !step->a) return -1;
  Node *st = step->a;
  while (st->kind == ND_CAST) st = st->a;
  if ((st->kind != ND_ADD && st->kind != ND_SUB) || !st->b) return -1;
  Node *sv = st->a;
  while (sv && sv->kind == ND_CAST) sv = sv->a;
  Interval inc = interval_of(A, st->b);
  if (!sv || sv->kind != ND_VAR || sv->var != v || !inc.known || inc.lo != inc.hi || inc.lo != 1) return -1;
  int dir = st->kind == ND_ADD ? 1 : -1;
  Node *lhs = cond->a, *rhs = cond->b;
  while (lhs && lhs->kind == ND_CAST) lhs = lhs->a;
  if (!lhs || lhs->kind != ND_VAR || lhs->var != v) return -1;
  Interval bound = interval_of(A, rhs);
  if (!bound.known) return -1;
  /* start and bound may themselves range over an outer counter: take the hull */
  int64_t lo, hi;
  if (dir > 0 && cond->kind == ND_LT) lo = start.lo, hi = bound.hi - 1;
  else if (dir > 0 && cond->kind == ND_LE) lo = start.lo, hi = bound.hi;
  else if (dir < 0 && cond->kind == ND_GT) lo = bound.lo + 1, hi = start.hi;
  else if (dir < 0 && cond->kind == ND_GE) lo = bound.lo, hi = start.hi;
  else return -1;
  if (start.lo != start.hi || bound.lo != bound.hi) A->m->exact = false; /* trips: an upper bound */
  if (hi < lo) return 0;
  A->vars[v->slot] = iv(lo, hi);
  return hi - lo + 1;
}

static void sep_decl(An *A, const Node *decl);
static void sep_loop_done(An *A, const Node *loop);
static bool const_loop(const Node *f, Var **v, int *lo, int *hi);

/* Statements in order, each expression through the pass's A->expr; the intervals of
 * loop counters and constants are set as their scopes are entered. */
static void walk_stmts(An *A, Node *s, double w) {
  for (; s; s = s->next) {
    switch (s->kind) {
    case ND_BLOCK: walk_stmts(A, s->body, w); break;
    case ND_DECL:
      A->expr(A, s->a, w);
      for (int i = 0; i < s->nargs; i++) A->expr(A, s->args[i], w); /* an array's initialiser */
      if (s->var && s->a && A->assigns[s->var->slot] == 0 && A->steps[s->var->slot] == 0)
        A->vars[s->var->slot] = interval_of(A, s->a);
      if (A->values) sep_decl(A, s);
      break;
    case ND_ASSIGN: case ND_LANESET: case ND_RETURN: case ND_EXPRSTMT:
      A->expr(A, s->a, w);
      for (int i = 0; s->kind == ND_RETURN && i < s->nargs; i++) A->expr(A, s->args[i], w); /* several outputs */
      break;
    case ND_BIN: case ND_ISET:
      if (s->kind == ND_BIN) A->m->bins += w;
      A->expr(A, s->a, w);
      A->expr(A, s->b, w);
      if (s->kind == ND_ISET && A->values) { /* the range-marking pass: a store that needs no test */
        Interval x = interval_of(A, s->a);
        if (x.known && x.lo >= 0 && x.hi < s->var->len) s->flags |= NF_IN_RANGE;
      }
      break;
    case ND_IF:
      A->m->branches += w;
      A->expr(A, s->a, w);
      walk_stmts(A, s->b, w);
      walk_stmts(A, s->c, w);
      break;
    case ND_FOR: {
      walk_stmts(A, s->init, w);
      int64_t trips = counted_loop(A, s);
      Var *cv;
      int lo, hi;
      double iw = w;
      if (trips >= 0) iw = w * (double)trips;
      else A->m->exact = false;
      A->expr(A, s->a, iw);
      int64_t outer = A->unrolled; /* the body's nest decides first (inner loops unroll first) */
      A->unrolled = 1;
      walk_stmts(A, s->b, iw);
      int64_t inner = A->unrolled;
      if (A->values && trips >= 1 && trips <= 16 && trips * inner <= UNROLL_BODIES && const_loop(s, &cv, &lo, &hi)) {
        s->flags |= NF_UNROLL;
        inner *= trips;
      }
      A->unrolled = outer > inner ? outer : inner;
      if (trips < 0 || A->values) walk_stmts(A, s->step, iw); /* metrics: counted steps are in the trips */
      A->m->branches += iw;
      if (A->values) sep_loop_done(A, s);
      break;
    }
    default: break;
    }
  }
}


/* ---- separable window reductions ---- */

static bool is_var(const Node *n, const Var *v) {
  n = ir_strip_casts(n);
  return n && n->kind == ND_VAR && n->var == v;
}

/* Does every value of `from` fit in `to` (a widening or identity conversion)? */
static bool widens(Type from, Type to) {
  if (from.lanes != 1 || to.lanes != 1) return false;
  if (from.s == to.s) return true;
  if (scalar_is_float(from.s) || scalar_is_float(to.s)) return false;
  bool uf = !scalar_is_signed(from.s), ut = !scalar_is_signed(to.s);
  int sf = scalar_size(from.s), st = scalar_size(to.s);
  if (uf == ut) return st >= sf;
  return uf && st > sf;
}

/* Only widening casts between n and the leaf. */
static bool widening_chain(const Node *n) {
  while (n && n->kind == ND_CAST) {
    if (!widens(n->a->type, n->type)) return false;
    n = n->a;
  }
  return true;
}

/* A counted loop `for (int v = A; v <= B / < B; v++)` with literal bounds: its range. */
static bool const_loop(const Node *f, Var **v, int *lo, int *hi) {
  const Node *init = f->init, *cond = f->a, *step = f->step;
  if (!init || init->next || init->kind != ND_DECL || !init->a || init->a->kind != ND_NUM) return false;
  if (!step || step->next || step->kind != ND_ASSIGN || step->var != init->var) return false;
  const Node *st = ir_strip_casts(step->a);
  if (st->kind != ND_ADD || !is_var(st->a, init->var) || ir_strip_casts(st->b)->kind != ND_NUM ||
      ir_strip_casts(st->b)->ival != 1)
    return false;
  if (!cond || (cond->kind != ND_LT && cond->kind != ND_LE) || !is_var(cond->a, init->var) ||
      ir_strip_casts(cond->b)->kind != ND_NUM)
    return false;
  int64_t a = init->a->ival, b = ir_strip_casts(cond->b)->ival - (cond->kind == ND_LT);
  if (b < a || a < -64 || b > 64) return false;
  *v = init->var;
  *lo = (int)a;
  *hi = (int)b;
  return true;
}

/* The single statement of a body (unwrapping blocks), or NULL. */
static const Node *only_stmt(const Node *s) {
  while (s && s->kind == ND_BLOCK && s->body && !s->body->next && !s->next) s = s->body;
  return s && !s->next ? s : NULL;
}

static bool reads_image(const Node *n, const Param *img) {
  if (!n) return false;
  if ((n->kind == ND_READ || n->kind == ND_AT) && (!img || n->param == img)) return true;
  if (reads_image(n->a, img) || reads_image(n->b, img) || reads_image(n->c, img)) return true;
  if (reads_image(n->init, img) || reads_image(n->step, img) || reads_image(n->body, img)) return true;
  for (int i = 0; i < n->nargs; i++)
    if (reads_image(n->args[i], img)) return true;
  return reads_image(n->next, img);
}

/* scratch of find_separable, per thread (programs may be compiled on several at once) */
static _Thread_local Node *tmp_reads[PXL_MAX_SEP_ACC]; /* the read behind each temporary */
static _Thread_local const Decl *sep_tiler;             /* the tiler it looks at, else NULL */

/* Coordinate `axis` of a tiler's relative read as the checker writes it (tiler_coord in
 * front/check.c): (origin + paving * x (or y)) + d; d, or NULL where e is not of that form. */
static const Node *tiler_offset_of(const Node *e, int axis) {
  if (!e || e->kind != ND_ADD) return NULL;
  const Node *o = e->a, *m = o ? o->b : NULL;
  bool base = o->kind == ND_ADD && o->a->kind == ND_NUM && o->a->ival == sep_tiler->origin[axis] && m &&
              m->kind == ND_MUL && m->a->kind == ND_NUM && m->a->ival == sep_tiler->paving[axis] && m->b &&
              m->b->kind == ND_COORD && m->b->ival == axis;
  return base ? e->b : NULL;
}

/* ... whose offset is the window counter v */
static bool tiler_offset(const Node *e, int axis, const Var *v) {
  const Node *d = tiler_offset_of(e, axis);
  return d && is_var(d, v);
}

/* Whether r reads its image at the window's position (vx, vy): img(vx, vy), or in a tiler
 * the absolute read the checker made of it. */
static bool window_read(const Node *r, const Separable *S) {
  if (sep_tiler) return r->kind == ND_AT && tiler_offset(r->a, 0, S->vx) && tiler_offset(r->b, 1, S->vy);
  return r->kind == ND_READ && is_var(r->a, S->vx) && is_var(r->b, S->vy) && widening_chain(r->a) &&
         widening_chain(r->b);
}

static const Node *tmp_read(const Separable *S, int i) {
  (void)S;
  return tmp_reads[i];
}

/* Matches `T t = img(vx, vy);` (widening only) and records t. */
static bool match_temp(Separable *S, const Node *d) {
  if (d->kind != ND_DECL || !d->var || !d->a || d->var->type.lanes != 1 || !widening_chain(d->a)) return false;
  const Node *r = ir_strip_casts(d->a);
  if (!window_read(r, S) || r->param->type.lanes != 1 || (S->img && r->param != S->img)) return false;
  if (S->ntmp == PXL_MAX_SEP_ACC) return false;
  tmp_reads[S->ntmp] = (Node *)r;
  S->tmp[S->ntmp++] = d->var;
  return true;
}

/* The value of weight expression n with loop counter v at `val`: integer numbers, v,
 * + - * and negation, widening casts and elements of const tables; false for anything
 * else (another variable, an index outside its table, a float). */
static bool weight_value(const Node *n, const Var *v, int64_t val, int64_t *out) {
  int64_t a, b;
  if (!n || n->type.lanes != 1 || scalar_is_float(n->type.s)) return false;
  switch (n->kind) {
  case ND_NUM: *out = n->ival; return true;
  case ND_VAR: if (n->var != v) return false; *out = val; return true;
  case ND_CAST: return widens(n->a->type, n->type) && weight_value(n->a, v, val, out);
  case ND_NEG: if (!weight_value(n->a, v, val, &a)) return false; *out = -a; return true;
  case ND_ADD: case ND_SUB: case ND_MUL:
    if (!weight_value(n->a, v, val, &a) || !weight_value(n->b, v, val, &b)) return false;
    if (a < -(1 << 20) || a > (1 << 20) || b < -(1 << 20) || b > (1 << 20)) return false; /* small, exact */
    *out = n->kind == ND_ADD ? a + b : n->kind == ND_SUB ? a - b : a * b;
    return true;
  case ND_INDEX:
    if (!n->var->is_const || !n->var->elems || !weight_value(n->a, v, val, &a) || a < 0 || a >= n->var->len)
      return false;
    return weight_value(n->var->elems[a], v, val, out);
  default: return false;
  }
}

/* The values of weight expression n for loop counter v over lo..hi (arena), or NULL. */
static int64_t *weights(const Node *n, const Var *v, int lo, int hi, Arena *ar) {
  int64_t *w = arena_alloc(ar, sizeof *w * (size_t)(hi - lo + 1));
  for (int i = lo; w && i <= hi; i++)
    if (!weight_value(n, v, i, &w[i - lo]) || w[i - lo] < -(1 << 20) || w[i - lo] > (1 << 20)) return NULL;
  return w;
}

/* y = WY * WX * read in any order (products of acc's integer type): the read's operand
 * in *leaf_out, the factors' values in S (slot i, allocated in ar). False when y is not
 * such a product. */
static bool match_weights(Separable *S, int i, const Node *y, Type t, const Node **leaf_out, Arena *ar) {
  const Node *f[3];
  int n = 0;
  const Node *stack[4] = {y};
  int sp = 1;
  while (sp) { /* the factors of a product tree of up to 3 leaves */
    const Node *e = stack[--sp];
    if (e->kind == ND_MUL && e->type.s == t.s && e->type.lanes == 1 && sp + 2 <= 4) {
      stack[sp++] = e->a;
      stack[sp++] = e->b;
    } else if (n < 3) {
      f[n++] = e;
    } else {
      return false;
    }
  }
  if (n < 2 || y->kind != ND_MUL) return false;
  const Node *leaf = NULL, *wy = NULL, *wx = NULL;
  for (int k = 0; k < n; k++) {
    const Node *r = ir_strip_casts(f[k]);
    bool is_read = window_read(r, S) ||
                   (r->kind == ND_VAR && r->var != S->vx && r->var != S->vy && !r->var->param && r->var->len == 0 &&
                    !r->var->is_const);
    int64_t dummy;
    if (is_read && !leaf && widening_chain(f[k])) leaf = f[k];
    else if (!wy && weight_value(f[k], S->vy, S->y0, &dummy)) wy = f[k];
    else if (!wx && weight_value(f[k], S->vx, S->x0, &dummy)) wx = f[k];
    else return false;
  }
  if (!leaf || !wy) return false;
  S->wy_node[i] = wy;
  S->wy[i] = weights(wy, S->vy, S->y0, S->y1, ar);
  S->wx[i] = wx ? weights(wx, S->vx, S->x0, S->x1, ar) : NULL;
  if (!S->wy[i] || (wx && !S->wx[i])) return false;
  *leaf_out = leaf;
  return true;
}

/* The type of weighted sum i's column values (weights wy[i] over rows y0..y1): the
 * accumulator's, or 16 bits when u8 pixels under weights >= 0 cannot pass 65535. */
static Type weighted_column_type(const Separable *S, int i, Scalar pixel, Type acc) {
  int64_t most = 0;
  bool narrow = pixel == T_U8 && scalar_size(acc.s) >= 4 && !scalar_is_float(acc.s);
  for (int dy = S->y0; narrow && dy <= S->y1; dy++) {
    int64_t w = S->wy[i][dy - S->y0];
    narrow = w >= 0 && w <= 65535;
    most += w * 255;
    narrow = narrow && most <= 65535;
  }
  return narrow ? type_scalar(T_U16) : acc;
}

/* Matches one update `acc = OP(acc, img(vx, vy))` of the loop nest. */
static bool match_update(Separable *S, const Node *u, Arena *ar) {
  if (u->kind != ND_ASSIGN || !u->var || u->var->type.lanes != 1 || u->var->param) return false;
  Var *acc = u->var;
  if (!widening_chain(u->a) && !(u->a->kind == ND_CAST && widening_chain(u->a->a))) return false;
  const Node *e = ir_strip_casts(u->a);
  int op;
  const Node *x, *y;
  if (e->kind == ND_CALL && (e->builtin == BI_MIN || e->builtin == BI_MAX)) {
    op = e->builtin;
    x = e->args[0], y = e->args[1];
  } else if (e->kind == ND_ADD && e->type.s == acc->type.s && !scalar_is_float(e->type.s) && u->a == e) {
    op = -1; /* integer sums wrap: any grouping gives the same value */
    x = e->a, y = e->b;
  } else {
    return false;
  }
  if (!is_var(x, acc)) {
    const Node *t = x;
    x = y;
    y = t;
  }
  if (!is_var(x, acc) || !widening_chain(x)) return false;
  const Node *wleaf = NULL; /* a weighted sum: the read (or temporary) among the factors */
  if (op < 0 && S->nacc < PXL_MAX_SEP_ACC && match_weights(S, S->nacc, y, acc->type, &wleaf, ar)) y = wleaf;
  else if (!widening_chain(y)) return false;
  const Node *leaf = ir_strip_casts(y), *r = leaf;
  if (leaf->kind == ND_VAR) { /* a temporary `T t = img(vx, vy)` */
    r = NULL;
    for (int i = 0; i < S->ntmp; i++)
      if (S->tmp[i] == leaf->var) r = tmp_read(S, i);
    if (!r) return false;
  }
  if (!window_read(r, S) || r->param->type.lanes != 1) return false;
  if (S->img && r->param != S->img) return false;
  if (!widens(leaf->type, acc->type) || !widens(r->type, leaf->type)) return false;
  if (S->nacc == PXL_MAX_SEP_ACC) return false;
  for (int i = 0; i < S->nacc; i++)
    if (S->acc[i] == acc) return false;
  S->img = r->param;
  S->acc[S->nacc] = acc;
  S->op[S->nacc] = op;
  S->read[S->nacc] = (Node *)leaf;
  if (op >= 0) {
    S->col[S->nacc] = leaf->type;
  } else if (S->wy[S->nacc]) {
    S->col[S->nacc] = weighted_column_type(S, S->nacc, r->type.s, acc->type);
  } else { /* sums of a few u8 rows fit 16 bits: narrower vectors in the column pass */
    int rows = S->y1 - S->y0 + 1;
    S->col[S->nacc] = r->type.s == T_U8 && rows <= 257 && scalar_size(acc->type.s) >= 4 ? type_scalar(T_U16) : acc->type;
  }
  S->nacc++;
  return true;
}

/* ... whose offset along y is a number: *dy. */
static bool tiler_row_number(const Node *e, int64_t *dy) {
  const Node *d = ir_strip_casts(tiler_offset_of(e, 1));
  if (!d || d->kind != ND_NUM) return false;
  *dy = d->ival;
  return true;
}

/* A column of a tiler's window as one expression of type t: a sum or difference of terms
 * w * img(vx, dy) (w and dy numbers, either order, w absent: 1), every +, - and * of type
 * t. Adds each term's weight times sign to wy[dy + 64] and records the image in S. */
static bool column_terms(Separable *S, const Node *n, Type t, int64_t *wy, int sign, int depth) {
  if (depth > 64) return false;
  if ((n->kind == ND_ADD || n->kind == ND_SUB) && type_eq(n->type, t))
    return column_terms(S, n->a, t, wy, sign, depth + 1) &&
           column_terms(S, n->b, t, wy, n->kind == ND_SUB ? -sign : sign, depth + 1);
  int64_t w = 1;
  const Node *r = n;
  if (n->kind == ND_MUL && type_eq(n->type, t)) { /* the number on either side */
    const Node *f = ir_strip_casts(n->a);
    r = n->b;
    if (f->kind != ND_NUM) f = ir_strip_casts(n->b), r = n->a;
    if (f->kind != ND_NUM || scalar_is_float(f->type.s) || f->ival < -(1 << 20) || f->ival > (1 << 20)) return false;
    w = f->ival;
  }
  if (!widening_chain(r)) return false;
  r = ir_strip_casts(r);
  int64_t dy;
  if (r->kind != ND_AT || r->param->type.lanes != 1 || scalar_is_float(r->param->type.s) ||
      (S->img && r->param != S->img) || !tiler_offset(r->a, 0, S->vx) || !tiler_row_number(r->b, &dy) ||
      dy < -64 || dy > 64 || !widens(r->type, t))
    return false;
  S->img = r->param;
  wy[dy + 64] += sign * w;
  return llabs(wy[dy + 64]) <= (1 << 20);
}

/* A tiler's window written as its columns: `for (vx) acc += WX(vx) * COLUMN` (factors in
 * either order), COLUMN a sum of weighted reads of rows with a number as offset
 * (column_terms) - examples/resample.pxl's pyr_down, column sums first. The same
 * Separable as the two loops with WY the column's weights; integer sums wrap, so the
 * grouping gives the same bits. */
static bool match_columns(Separable *S, const Node *u, Arena *ar) {
  if (u->kind != ND_ASSIGN || !u->var || u->var->type.lanes != 1 || u->var->param || S->nacc) return false;
  Var *acc = u->var;
  const Node *e = u->a;
  if (e->kind != ND_ADD || scalar_is_float(e->type.s) || e->type.s != acc->type.s) return false;
  const Node *x = e->a, *y = e->b;
  if (!is_var(x, acc)) x = e->b, y = e->a;
  if (!is_var(x, acc) || !widening_chain(x) || y->kind != ND_MUL || !type_eq(y->type, acc->type)) return false;
  int64_t dummy;
  const Node *wx = y->a, *col = y->b;
  if (!weight_value(wx, S->vx, S->x0, &dummy)) wx = y->b, col = y->a;
  if (!weight_value(wx, S->vx, S->x0, &dummy)) return false;
  int64_t wyall[129] = {0};
  if (!column_terms(S, col, acc->type, wyall, 1, 0)) return false;
  int lo = 64, hi = -64;
  for (int d = -64; d <= 64; d++)
    if (wyall[d + 64]) lo = d < lo ? d : lo, hi = d > hi ? d : hi;
  if (lo > hi) return false;
  S->y0 = lo, S->y1 = hi;
  S->wy[0] = arena_alloc(ar, sizeof *S->wy[0] * (size_t)(hi - lo + 1));
  S->wx[0] = weights(wx, S->vx, S->x0, S->x1, ar);
  if (!S->wy[0] || !S->wx[0]) return false;
  for (int d = lo; d <= hi; d++) S->wy[0][d - lo] = wyall[d + 64];
  S->acc[0] = acc;
  S->op[0] = -1;
  S->read[0] = (Node *)col;
  S->wy_node[0] = NULL;
  S->col[0] = weighted_column_type(S, 0, S->img->type.s, acc->type);
  S->nacc = 1;
  return true;
}

/* A literal integer offset of a read: a number, or a negated one, under casts. */
static bool literal_offset(const Node *n, int64_t *v) {
  n = ir_strip_casts(n);
  if (n && n->kind == ND_NEG) {
    if (!literal_offset(n->a, v)) return false;
    *v = -*v;
    return true;
  }
  if (!n || n->kind != ND_NUM || scalar_is_float(n->type.s)) return false;
  *v = n->ival;
  return true;
}

/* Whether every read of S's image in n (and what follows it) is a relative read at a
 * literal offset inside the window, recording each offset once in S (nxr). */
static bool beside_reads(const Node *n, Separable *S) {
  for (; n; n = n->next) {
    if ((n->kind == ND_READ || n->kind == ND_AT) && n->param == S->img) {
      int64_t dx, dy;
      if (n->kind != ND_READ || !literal_offset(n->a, &dx) || !literal_offset(n->b, &dy) || dx < S->x0 ||
          dx > S->x1 || dy < S->y0 || dy > S->y1)
        return false;
      int j = 0;
      while (j < S->nxr && (S->xr_dx[j] != dx || S->xr_dy[j] != dy)) j++;
      if (j == S->nxr) {
        if (S->nxr == PXL_MAX_SEP_XREADS) return false;
        S->xr_dx[j] = (int)dx, S->xr_dy[j] = (int)dy, S->nxr++;
      }
    }
    if (!beside_reads(n->a, S) || !beside_reads(n->b, S) || !beside_reads(n->c, S) || !beside_reads(n->init, S) ||
        !beside_reads(n->step, S) || !beside_reads(n->body, S))
      return false;
    for (int i = 0; i < n->nargs; i++)
      if (!beside_reads(n->args[i], S)) return false;
  }
  return true;
}

/* Finds `decls; for (vy) for (vx) { acc_i = OP_i(acc_i, img(vx, vy)); } rest` in a
 * kernel whose other statements do not read that image - or, with `beside`, read it only
 * at literal offsets inside the window (Decl.sep_x; not in tilers). In a tiler of 1 x 1
 * tiles only weighted sums (the C generator's row pass steps over the column values by
 * the paving: gen_c.c, separable_loop). */
static Separable *find_separable(Decl *D, Arena *a, bool beside) {
  if (D->kind != D_KERNEL || D->type.lanes != 1 || !D->body || D->nimages != 1) return NULL;
  sep_tiler = D->tile[0] ? D : NULL;
  if (sep_tiler && (D->tile[0] != 1 || D->tile[1] != 1)) return NULL;
  const Node *loop = NULL;
  for (const Node *s = D->body->body; s; s = s->next) {
    if (s->kind == ND_FOR && !loop) {
      loop = s;
      continue;
    }
    if (s->kind == ND_FOR) return NULL;
  }
  if (!loop) return NULL;
  Separable S = {0};
  const Node *inner = only_stmt(loop->b);
  if (sep_tiler && inner && inner->kind != ND_FOR) { /* one loop over the window's columns */
    if (!const_loop(loop, &S.vx, &S.x0, &S.x1) || !match_columns(&S, inner, a)) return NULL;
  } else {
    if (!const_loop(loop, &S.vy, &S.y0, &S.y1)) return NULL;
    if (!inner || inner->kind != ND_FOR || !const_loop(inner, &S.vx, &S.x0, &S.x1)) return NULL;
    const Node *u = inner->b;
    while (u && u->kind == ND_BLOCK && !u->next) u = u->body;
    for (; u; u = u->next)
      if (!match_temp(&S, u) && !match_update(&S, u, a)) return NULL;
  }
  if (!S.nacc || (S.y1 == S.y0 && S.x1 == S.x0)) return NULL;
  /* accumulators must be declared before the loop, and nothing else may read the image */
  if (beside && sep_tiler) return NULL;
  for (const Node *s = D->body->body; s; s = s->next) {
    if (s == loop) continue;
    if (beside) {
      if (!beside_reads(s->a, &S) || !beside_reads(s->b, &S) || !beside_reads(s->c, &S) ||
          !beside_reads(s->body, &S))
        return NULL;
      for (int i = 0; i < s->nargs; i++)
        if (!beside_reads(s->args[i], &S)) return NULL;
      continue;
    }
    if (reads_image(s->a, S.img) || reads_image(s->b, S.img) || reads_image(s->c, S.img) ||
        reads_image(s->body, S.img))
      return NULL;
    for (int i = 0; i < s->nargs; i++) /* return (a, b) */
      if (reads_image(s->args[i], S.img)) return NULL;
  }
  if (beside && !S.nxr) return NULL; /* then sep holds it */
  for (int i = 0; sep_tiler && i < S.nacc; i++)
    if (!S.wy[i]) return NULL;
  Separable *out = arena_alloc(a, sizeof *out);
  if (!out) return NULL;
  *out = S;
  out->loop = (Node *)loop;
  return out;
}

/* ---- conversions that cannot saturate ---- */

/* The multiplier m and shift s with (v * m) >> (16 + s) == v / d for every v in [lo, hi]
 * (0 <= lo <= hi <= 65535, d > 1), m at most 65535, checked value by value; false when
 * there are none. */
static bool div16_magic(int64_t lo, int64_t hi, int64_t d, int32_t *m, int32_t *s) {
  for (int k = 0; k < 16; k++) {
    int64_t mm = ((INT64_C(1) << (16 + k)) + d - 1) / d;
    if (mm > 65535) break;
    bool ok = true;
    for (int64_t v = lo; v <= hi && ok; v++) ok = ((v * mm) >> (16 + k)) == v / d;
    if (ok) {
      *m = (int32_t)mm;
      *s = k;
      return true;
    }
  }
  return false;
}

/* A division or remainder n by an integer constant d > 1 met by the values pass: its
 * dividend's interval joined with what earlier visits and analyses of the node found (a
 * node met twice, a clone that kept its original's marks), and the 16-bit multiplier for
 * it (codegen/c/emit.c divides by a multiply-high: 32 lanes per AVX-512 instruction,
 * against 16 lanes in several for a 32-bit division by a constant). Once any visit finds
 * no multiplier, the node keeps none (NF_DIV_WIDE). */
static void mark_division(An *A, Node *n) {
  if (n->type.lanes != 1 || scalar_is_float(n->type.s) || !n->b || n->b->kind != ND_NUM || n->b->ival <= 1 ||
      (n->flags & NF_DIV_WIDE))
    return;
  Interval x = interval_of(A, n->a);
  if (x.known && (n->flags & NF_DIV16))
    x = iv(x.lo < n->div_lo ? x.lo : n->div_lo, x.hi > n->div_hi ? x.hi : n->div_hi);
  int32_t m, sh;
  if (!x.known || x.lo < 0 || x.hi > 65535 || !div16_magic(x.lo, x.hi, n->b->ival, &m, &sh)) {
    n->flags = (n->flags & ~NF_DIV16) | NF_DIV_WIDE;
    return;
  }
  n->flags |= NF_DIV16;
  n->div_lo = (int32_t)x.lo, n->div_hi = (int32_t)x.hi, n->div_m = m, n->div_s = sh;
}

/* Flags the integer conversions in n whose operand's values fit the target type, and the
 * divisions by constants whose dividends fit 16 bits. */
static void mark_expr(An *A, Node *n, double w) {
  if (!n) return;
  if (n->kind == ND_DIV || n->kind == ND_MOD) mark_division(A, n);
  if (n->kind == ND_INDEX) {
    Interval x = interval_of(A, n->a);
    if (x.known && x.lo >= 0 && x.hi < n->var->len) n->flags |= NF_IN_RANGE;
  }
  if (n->kind == ND_CAST && n->type.lanes == 1 && !scalar_is_float(n->type.s) && !scalar_is_float(n->a->type.s)) {
    Interval x = interval_of(A, n->a), t = type_range(n->type.s);
    if (x.known && t.known && x.lo >= t.lo && x.hi <= t.hi) n->flags |= NF_IN_RANGE;
  }
  if ((n->kind == ND_ADD || n->kind == ND_SUB || n->kind == ND_MUL) && n->type.lanes == 1 &&
      (n->type.s == T_I32 || n->type.s == T_I64) && !(n->flags & NF_MAY_WRAP)) {
    /* known operands and result: all within +-2^24 (interval_of's small()), far inside */
    if (interval_of(A, n->a).known && interval_of(A, n->b).known && interval_of(A, n).known) n->flags |= NF_NO_WRAP;
    else n->flags = (n->flags & ~NF_NO_WRAP) | NF_MAY_WRAP;
  }
  mark_expr(A, n->a, w);
  mark_expr(A, n->b, w);
  mark_expr(A, n->c, w);
  for (int i = 0; i < n->nargs; i++) mark_expr(A, n->args[i], w);
}

/* The interval of accumulator i of separable window S after its loop, given its value
 * before (UNKNOWN when it cannot be bounded). */
static Interval sep_result(const Separable *S, int i, Interval init) {
  Interval r = type_range(S->img->type.s);
  if (!init.known || !r.known) return UNKNOWN;
  int64_t n = (int64_t)(S->x1 - S->x0 + 1) * (S->y1 - S->y0 + 1);
  if (S->op[i] == BI_MIN) return iv(init.lo < r.lo ? init.lo : r.lo, init.hi < r.hi ? init.hi : r.hi);
  if (S->op[i] == BI_MAX) return iv(init.lo > r.lo ? init.lo : r.lo, init.hi > r.hi ? init.hi : r.hi);
  if (n >= (1 << 20)) return UNKNOWN;
  Interval x = iv(init.lo + n * r.lo, init.hi + n * r.hi); /* sums: no wrap while small */
  if (S->wy[i]) { /* weighted: each term w * pixel, w = wy * wx (weights and pixels small) */
    x = init;
    for (int dy = 0; dy <= S->y1 - S->y0; dy++)
      for (int dx = 0; dx <= S->x1 - S->x0; dx++) {
        int64_t w = S->wy[i][dy] * (S->wx[i] ? S->wx[i][dx] : 1);
        if (!small(w) || !small(r.lo) || !small(r.hi)) return UNKNOWN;
        int64_t a = w * r.lo, b = w * r.hi;
        x = iv(x.lo + (a < b ? a : b), x.hi + (a < b ? b : a));
        if (!small(x.lo) || !small(x.hi)) return UNKNOWN;
      }
  }
  return small(x.lo) && small(x.hi) ? x : UNKNOWN;
}

/* The mark_expr pass at a declaration: the value before the loop of a separable
 * window's accumulator. */
static void sep_decl(An *A, const Node *decl) {
  const Separable *S = A->D->sep ? A->D->sep : A->D->sep_x;
  for (int i = 0; S && i < S->nacc; i++)
    if (S->acc[i] == decl->var) A->sep_init[i] = decl->a ? interval_of(A, decl->a) : UNKNOWN;
}

/* Whether every term that sum i of S adds is at least 0: pixels of an unsigned type (or
 * a signed one whose range starts at 0), weights at least 0. */
static bool nonnegative_terms(const Separable *S, int i) {
  Interval r = type_range(S->img->type.s);
  if (!r.known || r.lo < 0) return false;
  for (int dy = 0; S->wy[i] && dy <= S->y1 - S->y0; dy++)
    if (S->wy[i][dy] < 0) return false;
  for (int dx = 0; S->wx[i] && dx <= S->x1 - S->x0; dx++)
    if (S->wx[i][dx] < 0) return false;
  return true;
}

/* The mark_expr pass after a loop: a separable window's accumulators, assigned nowhere
 * else, are bounded from here on. */
static void sep_loop_done(An *A, const Node *loop) {
  const Separable *S = A->D->sep ? A->D->sep : A->D->sep_x;
  if (!S || loop != S->loop) return;
  for (int i = 0; i < S->nacc; i++)
    if (A->assigns[S->acc[i]->slot] == 1 && A->steps[S->acc[i]->slot] == 0) {
      Interval r = sep_result(S, i, A->sep_init[i]);
      A->vars[S->acc[i]->slot] = r;
      /* a sum of terms that are never negative grows from its start to the whole
       * window's: every value it holds lies between the two */
      ((Separable *)S)->narrow[i] = S->op[i] < 0 && r.known && A->sep_init[i].lo >= 0 && r.hi <= 65535 &&
                                    S->acc[i]->type.lanes == 1 && !scalar_is_float(S->acc[i]->type.s) &&
                                    nonnegative_terms(S, i);
    }
}

static bool is_signed_perm(const Access *ac) {
  int64_t ax = ac->ax.cx, ay = ac->ax.cy, bx = ac->ay.cx, by = ac->ay.cy;
  bool unit = (llabs(ax) + llabs(ay) == 1) && (llabs(bx) + llabs(by) == 1);
  return unit && (ax != 0) != (bx != 0);
}

/* The first pass's state for D (metrics into D->metrics); false when out of memory. */
static bool an_init(An *A, Decl *D, Arena *arena) {
  *A = (An){.D = D, .a = arena, .m = &D->metrics, .expr = walk_expr};
  A->vars = arena_alloc(arena, sizeof(Interval) * (size_t)(D->nslots + 1));
  A->assigns = arena_alloc(arena, sizeof(int) * (size_t)(D->nslots + 1));
  A->steps = arena_alloc(arena, sizeof(int) * (size_t)(D->nslots + 1));
  return A->vars && A->assigns && A->steps;
}

/* The second pass over D's statements: conversions that cannot saturate (metrics and
 * accesses stay the first pass's). */
static void an_mark_ranges(An *A, Decl *D) {
  Metrics scratch = D->metrics;
  A->m = &scratch;
  A->expr = mark_expr;
  A->values = true;
  for (int i = 0; i < PXL_MAX_SEP_ACC; i++) A->sep_init[i] = UNKNOWN;
  walk_stmts(A, D->body, 1);
}

static bool analyze_decl(Decl *D, Arena *arena) {
  D->access = arena_alloc(arena, sizeof(Access) * (size_t)(D->nimages ? D->nimages : 1));
  An A;
  if (!an_init(&A, D, arena) || !D->access) return false;
  D->metrics.exact = true;
  if (D->kind == D_REDUCE) {
    walk_expr(&A, D->body, 1);
    D->metrics.arith += 1; /* the combine */
    D->skel = SK_R2S;
    return true;
  }
  count_assigns(&A, D->body, false);
  walk_stmts(&A, D->body, 1);
  if (D->kind == D_HISTOGRAM) {
    D->skel = SK_R2V;
    return true;
  }
  bool gather = false, nonseq = false, affine = false, window = false;
  for (int i = 0; i < D->nimages; i++) {
    Access *ac = &D->access[i];
    if (ac->gather || (ac->read_abs && !ac->abs_affine)) gather = true;
    if (ac->read_abs && ac->abs_affine) {
      if (is_signed_perm(ac)) nonseq = true;
      else if (ac->ax.cx || ac->ax.cy || ac->ay.cx || ac->ay.cy) affine = true;
      else gather = true; /* the same pixels wherever the output is (otsu's level.at(0, 0)) */
    }
    if (ac->read_rel && (ac->x0 || ac->x1 || ac->y0 || ac->y1)) window = true;
  }
  D->skel = gather ? SK_GATHER : affine ? SK_AFFINE : nonseq ? SK_P2P_NONSEQ : window ? SK_N2P : SK_P2P;
  if (D->tile[0]) D->skel = SK_TILER; /* its reads' footprint is in access (absolute, affine where known) */
  if (D->scan) {
    /* the map runs as a plain kernel (no tiles or separable passes); each prefix pass
     * reads and combines every output pixel once more */
    int passes = (D->scan & SCAN_X ? 1 : 0) + (D->scan & SCAN_Y ? 1 : 0);
    D->skel = SK_SCAN;
    D->metrics.arith += passes;
    D->metrics.reads += passes;
  }
  if ((D->skel == SK_N2P || D->skel == SK_TILER) && !D->nouts) {
    D->sep = find_separable(D, arena, false); /* several outputs: per projection */
    D->sep_x = D->sep ? NULL : find_separable(D, arena, true);
  }
  an_mark_ranges(&A, D);
  spec_mark(D);
  return true;
}

bool analyze_decl_again(Decl *D, Arena *arena) { return analyze_decl(D, arena); }

/* A user function: its metrics per call (callers add them) and the conversions in its
 * body that cannot saturate. Callees first, each once (access marks it done). */
static bool analyze_func(Decl *F, Arena *arena);

static bool analyze_calls(const Node *n, Arena *arena) {
  for (; n; n = n->next) {
    if (n->kind == ND_FCALL && !n->func->access && !analyze_func(n->func, arena)) return false;
    if (!analyze_calls(n->a, arena) || !analyze_calls(n->b, arena) || !analyze_calls(n->c, arena) ||
        !analyze_calls(n->init, arena) || !analyze_calls(n->step, arena) || !analyze_calls(n->body, arena))
      return false;
    for (int i = 0; i < n->nargs; i++)
      if (!analyze_calls(n->args[i], arena)) return false;
  }
  return true;
}

static bool analyze_func(Decl *F, Arena *arena) {
  F->access = arena_alloc(arena, sizeof(Access));
  if (!F->access || !analyze_calls(F->body, arena)) return false;
  An A;
  if (!an_init(&A, F, arena)) return false;
  F->metrics.exact = true;
  count_assigns(&A, F->body, false);
  walk_stmts(&A, F->body, 1);
  an_mark_ranges(&A, F);
  F->skel = SK_P2P;
  return true;
}

bool analyze_program(Program *p, Diag *d) {
  (void)d;
  for (int i = 0; i < p->nfuncs; i++)
    if (!p->funcs[i]->access && !analyze_func(p->funcs[i], p->arena)) return false;
  for (int i = 0; i < p->ndecls; i++) {
    Decl *D = p->decls[i];
    if (D->kind == D_PIPELINE) {
      D->skel = SK_PIPELINE;
      continue;
    }
    if (D->global) { /* the map's reads; class SK_GLOBAL says that the pass after it may
                      * make every output pixel depend on every pixel of the map */
      int n = global_arity((GlobalOp)(D->global - 1));
      for (int k = 0; k < n; k++)
        if (!analyze_decl(D->gmap[k], p->arena)) return false;
      D->access = D->gmap[0]->access; /* each image's reads: the first map's that reads it */
      for (int k = 1; k < n; k++)
        for (int i = 0; i < D->nimages; i++)
          if (!D->access[i].read_rel && !D->access[i].read_abs) D->access[i] = D->gmap[k]->access[i];
      D->metrics = D->gmap[0]->metrics;
      for (int k = 1; k < n; k++) {
        D->metrics.arith += D->gmap[k]->metrics.arith, D->metrics.flops += D->gmap[k]->metrics.flops;
        D->metrics.reads += D->gmap[k]->metrics.reads, D->metrics.branches += D->gmap[k]->metrics.branches;
        D->metrics.exact &= D->gmap[k]->metrics.exact;
      }
      D->skel = SK_GLOBAL;
      continue;
    }
    if (!analyze_decl(D, p->arena)) return false;
  }
  return true;
}
