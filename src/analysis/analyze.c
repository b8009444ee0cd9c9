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

typedef struct {
  bool known;
  int64_t lo, hi;
} Interval;

typedef struct {
  Decl *D;
  Arena *a;
  Interval *vars;  /* per slot: interval of a loop counter or single-assignment local */
  int *assigns;    /* per slot: number of assignments outside declarations and for-steps */
  int *steps;      /* per slot: number of assignments in for-steps */
  Metrics *m;
} An;

static const Interval UNKNOWN = {false, 0, 0};

static Interval iv(int64_t lo, int64_t hi) { return (Interval){true, lo, hi}; }

static bool small(int64_t v) { return v > -(1 << 24) && v < (1 << 24); }

static Interval interval_of(An *A, Node *n) {
  if (!n) return UNKNOWN;
  Interval x, y;
  switch (n->kind) {
  case ND_NUM:
    if (scalar_is_float(n->type.s) || !small(n->ival)) return UNKNOWN;
    return iv(n->ival, n->ival);
  case ND_VAR:
    return (n->var && n->var->slot < A->D->nslots) ? A->vars[n->var->slot] : UNKNOWN;
  case ND_CAST:
    if (scalar_is_float(n->type.s) || scalar_is_float(n->a->type.s)) return UNKNOWN;
    return interval_of(A, n->a);
  case ND_NEG:
    x = interval_of(A, n->a);
    return x.known ? iv(-x.hi, -x.lo) : UNKNOWN;
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

/* Affine form of an index expression for image `img`; ok=false when not affine. */
static Affine affine_of(Node *n, Param *img) {
  Affine r = {0};
  Affine x, y;
  if (!n) return r;
  switch (n->kind) {
  case ND_NUM:
    if (scalar_is_float(n->type.s)) return r;
    r.ok = true;
    r.c0 = n->ival;
    return r;
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
    return affine_of(n->a, img);
  case ND_NEG:
    x = affine_of(n->a, img);
    if (!x.ok) return r;
    return (Affine){true, -x.c0, -x.cx, -x.cy, -x.cw, -x.ch};
  case ND_ADD: case ND_SUB: {
    x = affine_of(n->a, img);
    y = affine_of(n->b, img);
    if (!x.ok || !y.ok) return r;
    int s = n->kind == ND_ADD ? 1 : -1;
    return (Affine){true, x.c0 + s * y.c0, x.cx + s * y.cx, x.cy + s * y.cy, x.cw + s * y.cw, x.ch + s * y.ch};
  }
  case ND_MUL: {
    x = affine_of(n->a, img);
    y = affine_of(n->b, img);
    if (!x.ok || !y.ok) return r;
    bool xc = !x.cx && !x.cy && !x.cw && !x.ch, yc = !y.cx && !y.cy && !y.cw && !y.ch;
    if (!xc && !yc) return r;
    Affine v = xc ? y : x;
    int64_t k = xc ? x.c0 : y.c0;
    return (Affine){true, v.c0 * k, v.cx * k, v.cy * k, v.cw * k, v.ch * k};
  }
  default:
    return r;
  }
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
    Affine ax = affine_of(n->a, n->param), ay = affine_of(n->b, n->param);
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
    } else if (memcmp(&ax, &ac->ax, sizeof ax) || memcmp(&ay, &ac->ay, sizeof ay)) {
      /* several affine reads: keep affine only if they share the linear part */
      if (ax.cx != ac->ax.cx || ax.cy != ac->ax.cy || ay.cx != ac->ay.cx || ay.cy != ac->ay.cy)
        ac->abs_affine = false;
    }
    ac->read_abs = true;
  }
}

/* Counts assignments per slot (declarations and for-steps excluded) to find constants. */
static void count_assigns(An *A, Node *s, bool in_step) {
  for (; s; s = s->next) {
    switch (s->kind) {
    case ND_ASSIGN: case ND_LANESET:
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

static void walk_stmts(An *A, Node *s, double w) {
  for (; s; s = s->next) {
    switch (s->kind) {
    case ND_BLOCK: walk_stmts(A, s->body, w); break;
    case ND_DECL:
      walk_expr(A, s->a, w);
      if (s->var && s->a && A->assigns[s->var->slot] == 0 && A->steps[s->var->slot] == 0)
        A->vars[s->var->slot] = interval_of(A, s->a);
      break;
    case ND_ASSIGN: case ND_LANESET: case ND_RETURN: case ND_EXPRSTMT:
      walk_expr(A, s->a, w);
      break;
    case ND_BIN:
      walk_expr(A, s->a, w);
      walk_expr(A, s->b, w);
      break;
    case ND_IF:
      A->m->branches += w;
      walk_expr(A, s->a, w);
      walk_stmts(A, s->b, w);
      walk_stmts(A, s->c, w);
      break;
    case ND_FOR: {
      walk_stmts(A, s->init, w);
      int64_t trips = counted_loop(A, s);
      double iw = w;
      if (trips >= 0) iw = w * (double)trips;
      else A->m->exact = false;
      walk_expr(A, s->a, iw);
      walk_stmts(A, s->b, iw);
      if (trips < 0) walk_stmts(A, s->step, iw);
      A->m->branches += iw;
      break;
    }
    default: break;
    }
  }
}

static bool is_signed_perm(const Access *ac) {
  int64_t ax = ac->ax.cx, ay = ac->ax.cy, bx = ac->ay.cx, by = ac->ay.cy;
  bool unit = (llabs(ax) + llabs(ay) == 1) && (llabs(bx) + llabs(by) == 1);
  return unit && (ax != 0) != (bx != 0);
}

static bool analyze_decl(Decl *D, Arena *arena) {
  D->access = arena_alloc(arena, sizeof(Access) * (size_t)(D->nimages ? D->nimages : 1));
  An A = {.D = D, .a = arena, .m = &D->metrics};
  A.vars = arena_alloc(arena, sizeof(Interval) * (size_t)(D->nslots + 1));
  A.assigns = arena_alloc(arena, sizeof(int) * (size_t)(D->nslots + 1));
  A.steps = arena_alloc(arena, sizeof(int) * (size_t)(D->nslots + 1));
  if (!D->access || !A.vars || !A.assigns || !A.steps) return false;
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
  bool gather = false, nonseq = false, window = false;
  for (int i = 0; i < D->nimages; i++) {
    Access *ac = &D->access[i];
    if (ac->gather || (ac->read_abs && !ac->abs_affine)) gather = true;
    if (ac->read_abs && ac->abs_affine) {
      if (is_signed_perm(ac)) nonseq = true;
      else gather = true;
    }
    if (ac->read_rel && (ac->x0 || ac->x1 || ac->y0 || ac->y1)) window = true;
  }
  D->skel = gather ? SK_GATHER : nonseq ? SK_P2P_NONSEQ : window ? SK_N2P : SK_P2P;
  return true;
}

bool analyze_program(Program *p, Diag *d) {
  (void)d;
  for (int i = 0; i < p->ndecls; i++) {
    Decl *D = p->decls[i];
    if (D->kind == D_PIPELINE) {
      D->skel = SK_PIPELINE;
      continue;
    }
    if (!analyze_decl(D, p->arena)) return false;
  }
  return true;
}
