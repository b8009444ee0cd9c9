/*
 * range.c - the value ranges of a declaration's integer divisions by constants.
 *
 * An abstract interpretation of the body over intervals. Image reads take their pixel
 * type's range, numbers their value, variables what was last assigned to them (joined
 * where an if's branches meet). A for loop with a constant trip count (its counter set
 * from a number, compared with a number, stepped by a number, assigned nowhere else) is
 * run that many times, at most RANGE_MAX_TRIPS, with the counter exact in each; any
 * other loop makes every variable it assigns unknown before and after one visit of its
 * body. Unknown is the value's type's range; arithmetic that can leave its type (and
 * wrap) gives the type's range too. Each division or remainder by a positive constant
 * records its dividend's range, joined over every time it is met; one never met (code
 * after a return, a loop run zero times) records nothing. The code generator divides by
 * a 16-bit multiply-high where that range lies in [0, 65535] (codegen/c/emit.c).
 */
#include <limits.h>
#include <string.h>

#include "analysis/analysis.h"
#include "util/alloc.h"

#define RANGE_MAX_TRIPS 64
#define RANGE_MAX_WORK 200000 /* node visits before giving up (nothing recorded) */

typedef struct {
  int64_t lo, hi;
} Rng;

typedef struct {
  const Decl *D;
  Rng *env;    /* per variable slot */
  bool *known; /* env[slot] holds a range (else the type's) */
  DivRanges *out;
  long work;
  bool failed;
} St;

static const Rng full = {INT64_MIN, INT64_MAX};

/* The values of scalar type s (one lane); full for floats and 64-bit integers. */
static Rng type_rng(Type t) {
  if (t.lanes != 1) return full;
  switch (t.s) {
  case T_U8: return (Rng){0, 255};
  case T_I16: return (Rng){INT16_MIN, INT16_MAX};
  case T_U16: return (Rng){0, UINT16_MAX};
  case T_I32: return (Rng){INT32_MIN, INT32_MAX};
  case T_U32: return (Rng){0, UINT32_MAX};
  default: return full;
  }
}

/* r if it lies in type t, else t's range (a value that may wrap or saturate). */
static Rng fit(Rng r, Type t) {
  Rng tr = type_rng(t);
  return r.lo >= tr.lo && r.hi <= tr.hi ? r : tr;
}

static Rng join(Rng a, Rng b) { return (Rng){a.lo < b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi}; }

static bool is_full(Rng r) { return r.lo == INT64_MIN && r.hi == INT64_MAX; }

static bool int_num(const Node *n) { return n && n->kind == ND_NUM && !scalar_is_float(n->type.s); }

static void record(St *s, const Node *div, Rng r) {
  DivRanges *o = s->out;
  for (int i = 0; i < o->n; i++)
    if (o->d[i].div == div) {
      Rng j = join((Rng){o->d[i].lo, o->d[i].hi}, r);
      o->d[i].lo = j.lo;
      o->d[i].hi = j.hi;
      return;
    }
  if (o->n < RANGE_MAX_DIVS) o->d[o->n++] = (DivRange){.div = div, .lo = r.lo, .hi = r.hi};
  /* else not recorded: divided as written */
}

/* Interval arithmetic of + - * in 64 bits; full on overflow. */
static Rng arith(NodeKind k, Rng a, Rng b) {
  if (is_full(a) || is_full(b)) return full;
  int64_t v[4];
  bool ovf = false;
  if (k == ND_ADD) {
    ovf |= __builtin_add_overflow(a.lo, b.lo, &v[0]) | __builtin_add_overflow(a.hi, b.hi, &v[1]);
    v[2] = v[0], v[3] = v[1];
  } else if (k == ND_SUB) {
    ovf |= __builtin_sub_overflow(a.lo, b.hi, &v[0]) | __builtin_sub_overflow(a.hi, b.lo, &v[1]);
    v[2] = v[0], v[3] = v[1];
  } else {
    ovf |= __builtin_mul_overflow(a.lo, b.lo, &v[0]) | __builtin_mul_overflow(a.lo, b.hi, &v[1]);
    ovf |= __builtin_mul_overflow(a.hi, b.lo, &v[2]) | __builtin_mul_overflow(a.hi, b.hi, &v[3]);
  }
  if (ovf) return full;
  Rng r = {v[0], v[0]};
  for (int i = 1; i < 4; i++) r = join(r, (Rng){v[i], v[i]});
  return r;
}

static Rng rng(St *s, const Node *n);

/* Visits the operands of n that rng's cases below do not. */
static void visit_rest(St *s, const Node *n) {
  if (n->a) rng(s, n->a);
  if (n->b) rng(s, n->b);
  if (n->c) rng(s, n->c);
  for (int i = 0; i < n->nargs; i++) rng(s, n->args[i]);
}

static Rng rng(St *s, const Node *n) {
  if (++s->work > RANGE_MAX_WORK) s->failed = true;
  if (s->failed) return full;
  Rng tr = type_rng(n->type);
  switch (n->kind) {
  case ND_NUM: return int_num(n) && n->type.lanes == 1 ? (Rng){n->ival, n->ival} : tr;
  case ND_VAR: {
    const Var *v = n->var;
    if (!v->param && !v->len && !v->pval && v->slot >= 0 && v->slot < s->D->nslots && s->known[v->slot])
      return fit(s->env[v->slot], n->type);
    return tr;
  }
  case ND_CAST: return fit(rng(s, n->a), n->type);
  case ND_NEG: {
    Rng a = rng(s, n->a);
    return is_full(a) || a.lo == INT64_MIN ? tr : fit((Rng){-a.hi, -a.lo}, n->type);
  }
  case ND_ADD: case ND_SUB: case ND_MUL: {
    Rng a = rng(s, n->a), b = rng(s, n->b);
    return n->type.lanes == 1 && !scalar_is_float(n->type.s) ? fit(arith(n->kind, a, b), n->type) : tr;
  }
  case ND_DIV: case ND_MOD: {
    Rng a = rng(s, n->a);
    rng(s, n->b);
    if (!int_num(n->b) || n->b->ival <= 0 || n->type.lanes != 1 || scalar_is_float(n->type.s)) return tr;
    int64_t c = n->b->ival;
    record(s, n, a);
    if (is_full(a)) return tr;
    if (n->kind == ND_DIV) return fit((Rng){a.lo / c, a.hi / c}, n->type);
    return fit(a.lo >= 0 ? (Rng){0, a.hi < c - 1 ? a.hi : c - 1} : (Rng){-(c - 1), c - 1}, n->type);
  }
  case ND_SHR: {
    Rng a = rng(s, n->a);
    rng(s, n->b);
    if (int_num(n->b) && n->b->ival >= 0 && n->b->ival < 63 && a.lo >= 0 && !is_full(a))
      return fit((Rng){a.lo >> n->b->ival, a.hi >> n->b->ival}, n->type);
    return tr;
  }
  case ND_BITAND: {
    rng(s, n->a);
    rng(s, n->b);
    const Node *m = int_num(n->b) ? n->b : int_num(n->a) ? n->a : NULL;
    return m && m->ival >= 0 ? fit((Rng){0, m->ival}, n->type) : tr;
  }
  case ND_COND: {
    rng(s, n->a);
    Rng b = rng(s, n->b), c = rng(s, n->c);
    return fit(join(b, c), n->type);
  }
  case ND_CALL: {
    Rng r[3] = {full, full, full};
    for (int i = 0; i < n->nargs; i++) {
      Rng v = rng(s, n->args[i]);
      if (i < 3) r[i] = v;
    }
    if (n->type.lanes != 1 || scalar_is_float(n->type.s)) return tr;
    if (n->builtin == BI_MIN || n->builtin == BI_MAX || n->builtin == BI_CLAMP) {
      Rng m = r[0];
      if (n->builtin != BI_MIN) m = (Rng){m.lo > r[1].lo ? m.lo : r[1].lo, m.hi > r[1].hi ? m.hi : r[1].hi};
      Rng lim = n->builtin == BI_CLAMP ? r[2] : r[1];
      if (n->builtin != BI_MAX) m = (Rng){m.lo < lim.lo ? m.lo : lim.lo, m.hi < lim.hi ? m.hi : lim.hi};
      return is_full(r[0]) && is_full(r[1]) ? tr : fit(m, n->type);
    }
    return tr;
  }
  case ND_EQ: case ND_NE: case ND_LT: case ND_LE: case ND_GT: case ND_GE: case ND_NOT:
    visit_rest(s, n);
    return fit((Rng){0, 1}, n->type);
  default:
    visit_rest(s, n);
    return tr;
  }
}

static void exec(St *s, const Node *n);

/* Marks unknown every variable that the statements of list n assign, anywhere inside. */
static void havoc(St *s, const Node *n) {
  for (; n; n = n->next) {
    if ((n->kind == ND_DECL || n->kind == ND_ASSIGN || n->kind == ND_LANESET) && n->var && n->var->slot >= 0 &&
        n->var->slot < s->D->nslots)
      s->known[n->var->slot] = false;
    if (n->kind == ND_BLOCK) havoc(s, n->body);
    if (n->kind == ND_IF) {
      havoc(s, n->b);
      havoc(s, n->c);
    }
    if (n->kind == ND_FOR) {
      havoc(s, n->init);
      havoc(s, n->step);
      havoc(s, n->b);
    }
  }
}

/* Whether the statements of list n (and what they contain) assign variable v. */
static bool assigns(const Node *n, const Var *v) {
  for (; n; n = n->next) {
    if ((n->kind == ND_DECL || n->kind == ND_ASSIGN || n->kind == ND_LANESET) && n->var == v) return true;
    if (n->kind == ND_BLOCK && assigns(n->body, v)) return true;
    if (n->kind == ND_IF && (assigns(n->b, v) || assigns(n->c, v))) return true;
    if (n->kind == ND_FOR && (assigns(n->init, v) || assigns(n->step, v) || assigns(n->b, v))) return true;
  }
  return false;
}

/* The trip count of `for (v = N; v OP M; v = v +- K) body` when constant and at most
 * RANGE_MAX_TRIPS (its counter's values v0 + i * step), else -1. */
static int trips(const Node *f, const Var **cv, int64_t *v0, int64_t *step) {
  const Node *in = f->init, *c = f->a, *st = f->step;
  if (!in || !c || !st || in->next || st->next) return -1;
  if ((in->kind != ND_DECL && in->kind != ND_ASSIGN) || !int_num(in->a) || in->var->type.lanes != 1) return -1;
  const Var *v = in->var;
  if (c->kind < ND_LT || c->kind > ND_GE || !c->a || c->a->kind != ND_VAR || c->a->var != v || !int_num(c->b)) return -1;
  if (st->kind != ND_ASSIGN || st->var != v || !st->a || (st->a->kind != ND_ADD && st->a->kind != ND_SUB) ||
      !st->a->a || st->a->a->kind != ND_VAR || st->a->a->var != v || !int_num(st->a->b))
    return -1;
  if (assigns(f->b, v)) return -1;
  int64_t k = st->a->kind == ND_ADD ? st->a->b->ival : -st->a->b->ival, m = c->b->ival, x = in->a->ival;
  Rng vt = type_rng(v->type);
  int n = 0;
  for (;; n++) {
    bool go = c->kind == ND_LT ? x < m : c->kind == ND_LE ? x <= m : c->kind == ND_GT ? x > m : x >= m;
    if (!go) break;
    if (n == RANGE_MAX_TRIPS || x + k < vt.lo || x + k > vt.hi) return -1;
    x += k;
  }
  *cv = v;
  *v0 = in->a->ival;
  *step = k;
  return n;
}

static void set(St *s, const Var *v, Rng r) {
  if (!v || v->slot < 0 || v->slot >= s->D->nslots) return;
  if (v->len || v->type.lanes != 1 || is_full(r)) {
    s->known[v->slot] = false;
    return;
  }
  s->env[v->slot] = r;
  s->known[v->slot] = true;
}

static void exec(St *s, const Node *n) {
  for (; n && !s->failed; n = n->next) {
    switch (n->kind) {
    case ND_BLOCK: exec(s, n->body); break;
    case ND_DECL:
      set(s, n->var, n->a ? fit(rng(s, n->a), n->var->type) : (Rng){0, 0});
      break;
    case ND_ASSIGN: set(s, n->var, fit(rng(s, n->a), n->var->type)); break;
    case ND_LANESET:
      rng(s, n->a);
      set(s, n->var, full);
      break;
    case ND_IF: {
      rng(s, n->a);
      int ns = s->D->nslots;
      Rng *e0 = PXL_MALLOC(sizeof *e0 * (size_t)(ns ? ns : 1));
      bool *k0 = PXL_MALLOC(sizeof *k0 * (size_t)(ns ? ns : 1));
      if (!e0 || !k0) {
        PXL_FREE(e0);
        PXL_FREE(k0);
        s->failed = true;
        return;
      }
      memcpy(e0, s->env, sizeof *e0 * (size_t)ns);
      memcpy(k0, s->known, sizeof *k0 * (size_t)ns);
      exec(s, n->b); /* then: s; else: from e0, then joined */
      for (int i = 0; i < ns; i++) {
        Rng t = e0[i];
        bool kt = k0[i];
        e0[i] = s->env[i];
        k0[i] = s->known[i];
        s->env[i] = t;
        s->known[i] = kt;
      }
      exec(s, n->c);
      for (int i = 0; i < ns; i++) {
        s->known[i] = s->known[i] && k0[i];
        if (s->known[i]) s->env[i] = join(s->env[i], e0[i]);
      }
      PXL_FREE(e0);
      PXL_FREE(k0);
      break;
    }
    case ND_FOR: {
      const Var *cv = NULL;
      int64_t x = 0, k = 0;
      int t = trips(n, &cv, &x, &k);
      if (t < 0) { /* unknown count: what the loop assigns is unknown throughout */
        exec(s, n->init);
        havoc(s, n->b);
        havoc(s, n->step);
        if (n->a) rng(s, n->a);
        exec(s, n->b);
        exec(s, n->step);
        havoc(s, n->b);
        havoc(s, n->step);
        break;
      }
      for (int i = 0; i < t && !s->failed; i++, x += k) {
        set(s, cv, (Rng){x, x});
        rng(s, n->a);
        exec(s, n->b);
      }
      set(s, cv, (Rng){x, x});
      rng(s, n->a);
      break;
    }
    default: visit_rest(s, n); break; /* return, bin, expression statements */
    }
  }
}

void range_divisions(const Decl *D, DivRanges *out) {
  memset(out, 0, sizeof *out);
  if (!D->body || D->nslots < 0) return;
  size_t ns = (size_t)(D->nslots ? D->nslots : 1);
  St s = {.D = D, .env = PXL_MALLOC(sizeof(Rng) * ns), .known = PXL_CALLOC(ns, sizeof(bool)), .out = out};
  if (s.env && s.known) exec(&s, D->body);
  if (!s.env || !s.known || s.failed) out->n = 0; /* nothing known: every division as written */
  PXL_FREE(s.env);
  PXL_FREE(s.known);
}
