/*
 * fuse.c - pipelines with stages fused into their consumers (see analysis.h).
 *
 * A pipeline stage whose image only one later stage reads need not reach memory: the
 * consumer can compute it where it reads it. For each pipeline this pass makes a copy per
 * device class, Decl.fused[], whose fused-away values are marked (PipeValue.fused: never run) and whose
 * consumers call a fused kernel F: a declaration of its own (a copy of the consumer's
 * tree with the producer's inlined, analysed again, indexed after the entries like the
 * projections of outputs.c), so every backend, memo, cache and pipeline runner runs it
 * unchanged. The interpreter runs the pipeline as written (the oracle); the API picks
 * the fused copy for the compiled backends (docs/ARCHITECTURE.md, "Fusion").
 *
 * Three rules, each exact by construction (the differential tests check it); a pair fuses
 * only where the cost model (cost.h) predicts the fused kernel no slower on the class:
 *  A. the consumer C reads the producer's image only at (0, 0): F computes the producer
 *     once per pixel into a temporary first - its statements, returns turned into
 *     assignments to the temporary - and reads the temporary where C read the image.
 *     The producer's reads keep their offsets and border modes: F's pixel is the same
 *     position as both stages' (the three iteration spaces have one size). Where every
 *     exact fusion is asked for (model -1), a producer with size() (not a tiler) read
 *     under clamp is computed at F's pixel clamped into its own size (clamped_position):
 *     its x, y, width and height become F's locals, its relative reads absolute ones at
 *     that position (F is then a gather).
 *  B. the producer P is a point stage that is one expression (locals assigned once,
 *     returns under ifs): each read of its image in C, at offsets (a, b) with a border
 *     mode that maps the position into the image (clamp, mirror, mirror101, wrap), becomes
 *     P's expression with P's reads at (a, b) under that mode - the same position as C's
 *     read, since P's images have the size of its result. Each read recomputes P.
 *  C. (GPU forms only, after A and B) a window stage into a window consumer: F keeps C's
 *     tree and its parameter for the image, which becomes a tile the GPU generator
 *     computes from the producer (F->stage; fuse_tile).
 * A reduction or a histogram of the producer's image is a consumer too (`s = total(k(in))`):
 * rule A, the producer's statements before a histogram's body, and into a reduction's map
 * (an expression) the producer as one expression, its reads as they are. The image is
 * then never written.
 * Never fused: a value the pipeline returns or a loop carries, an image read by more
 * than one stage, stages in different loop bodies, border `none` anywhere (its zeroed
 * frame follows the kernel's window) or `constant` on B's and C's uses, size() clauses
 * but A's clamped producers, tilers, scans, several outputs, array parameters of the
 * producer and declarations specialised at run time.
 */
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/cost.h"

#define FUSE_MAX_PARAMS 32   /* a fused kernel's parameters (the runners' argument arrays hold 32 scalars) */
#define FUSE_MAX_SPLITS 8    /* if statements with a return in them a producer may have (rule A copies what follows) */
#define RULE_C_COST 3.0      /* rule C: a producer's operations in a tile cost this many times its own (fuse_tile) */

typedef struct {
  Arena *a;
  const Decl *K;       /* the producer's kernel */
  const PipeValue *cv, *kv; /* the consumer's and the producer's values */
  Decl *F;             /* the kernel being made */
  PipeArg *args;       /* its pipeline arguments, one per F->params */
  Param **cmap;        /* C->params[i] -> F's parameter; NULL for the images of value k */
  Param **kscal;       /* K's scalar parameters -> F's */
  Param **kimg;        /* rule A: K's image parameters -> F's */
  Var **kvars;         /* K's locals by slot -> their copies in F (made on first use) */
  int shift;           /* K's slots + shift are F's */
  Var *t;              /* rule A: the temporary holding K's value */
  Var *pos[4];         /* rule A at a clamped position: K's x, y, width and height in F
                        * (NULL otherwise) */
  const Node *expr;    /* rule B, and rule A into a reduction's map: K's value as one
                        * expression of K's nodes */
  bool moved;          /* rule B: K's reads move to the consumer's read and take its border */
  const Var **env;     /* K's locals and their initialisers, substituted into expr */
  const Node **envinit;
  int nenv;
  Border border;       /* rule B: the border of the read being replaced */
  const Node *dx, *dy; /* rule B: its offsets (F's nodes) */
  int splits;
  int model;           /* a device class (cost.h): fuse only where the cost model predicts a
                        * gain on it; -1: every exact fusion */
  bool failed;
} Fuse;

/* ---- which values may fuse ---- */

/* The value whose size value v has: a kernel without size() has its first image's. */
static int size_root(const Decl *P, int v) {
  for (int guard = 0; guard <= P->nvalues; guard++) {
    const PipeValue *pv = &P->values[v];
    const Decl *K = pv->callee;
    if (!K || K->kind == D_PIPELINE || K->kind == D_FUNC || K->size_w || (K->kind == D_KERNEL && pv->kind != PV_IMAGE))
      return v; /* a kernel making a table (size() checked at run time) too */
    int first = pipe_first_image(pv);
    if (first < 0) return v;
    v = first;
  }
  return v;
}

/* A kernel that may take part: one output, no scan or global operator, no run-time specialisation, no
 * size() unless `sized` (a producer read at (0, 0) under clamp; never a tiler). */
static bool plain_kernel(const PipeValue *pv, bool sized) {
  const Decl *K = pv->callee;
  return K && !pv->fused && pv->kind == PV_IMAGE && pv->carried < 0 && !pv->nouts && K->kind == D_KERNEL &&
         !K->nouts && !K->scan && !K->global && (!K->size_w || (sized && !K->tile[0])) && !K->spec_mask;
}

/* A consumer: such a kernel, a reduction (`T s = total(k(in));`: its map computes the
 * stage) or a histogram (its body does). */
static bool consumer(const PipeValue *pv) {
  const Decl *K = pv->callee;
  if (K && !pv->fused && pv->kind == PV_SCALAR && K->kind == D_REDUCE) return !K->spec_mask;
  if (K && !pv->fused && pv->kind == PV_ARRAY && K->kind == D_HISTOGRAM) return !K->spec_mask;
  return plain_kernel(pv, false);
}

static bool any_none(const PipeValue *pv) {
  for (int a = 0; a < pv->nargs; a++)
    if (pv->args[a].source >= 0 && pv->args[a].border.kind == B_NONE) return true;
  return false;
}

/* Whether value k must stay: returned, a loop's start or end value, or read by another
 * stage than c (or by a reduction, histogram or table). */
static bool pinned(const Decl *P, int k, int c) {
  if (P->result == k) return true;
  for (int r = 0; P->results && r < P->nouts; r++)
    if (P->results[r] == k) return true;
  for (int l = 0; l < P->nloops; l++)
    for (int j = 0; j < P->loops[l].ncarry; j++)
      if (P->loops[l].init[j] == k || P->loops[l].next[j] == k) return true;
  for (int v = 0; v < P->nvalues; v++) {
    if (P->values[v].fused || v == c) continue;
    for (int a = 0; a < P->values[v].nargs; a++)
      if (P->values[v].args[a].source == k) return true;
  }
  return false;
}

/* ---- the producer's value as statements (rule A) ---- */

static bool is_return(const Node *n, const void *ctx) {
  (void)ctx;
  return n->kind == ND_RETURN;
}

/* Whether statement s (not the ones after it) returns somewhere: returns are statements,
 * in blocks, branches and loop bodies. */
static bool returns(const Node *s) {
  return s->kind == ND_RETURN || ir_any(s->b, is_return, NULL) || ir_any(s->c, is_return, NULL) ||
         ir_any(s->body, is_return, NULL);
}

static Node *block_of(Fuse *f, Node *chain, Loc loc) {
  Node *b = node_new(f->a, ND_BLOCK, TYPE_VOID, loc);
  if (!b) f->failed = true;
  else b->body = chain;
  return b;
}

/* The chain s with every `return e` made `t = e` and nothing run after it: the
 * statements after an if that returns go into both of its branches (a copy each). */
static Node *tail(Fuse *f, Node *s) {
  if (!s || f->failed) return s;
  if (!returns(s)) {
    s->next = tail(f, s->next);
    return s;
  }
  if (s->kind == ND_RETURN) {
    Node *as = node_new(f->a, ND_ASSIGN, TYPE_VOID, s->loc);
    if (!as) return f->failed = true, NULL;
    as->var = f->t;
    as->a = s->a;
    return as;
  }
  if (s->kind == ND_BLOCK) { /* its statements, then the rest (the slots are distinct) */
    Node *last = s->body;
    if (!last) return tail(f, s->next);
    while (last->next) last = last->next;
    last->next = s->next;
    return tail(f, s->body);
  }
  if (s->kind != ND_IF || ++f->splits > FUSE_MAX_SPLITS) return f->failed = true, NULL; /* a return in a loop */
  Node *rest = s->next, *rest2 = ir_clone(f->a, rest, NULL, NULL, &f->failed);
  if (f->failed) return NULL;
  s->b->next = rest;
  s->b = block_of(f, tail(f, s->b), s->loc);
  if (s->c) s->c->next = rest2;
  Node *els = s->c ? s->c : rest2;
  s->c = els ? block_of(f, tail(f, els), s->loc) : NULL;
  s->next = NULL;
  return s;
}

/* ---- the producer's value as one expression (rule B) ---- */

static bool assigns(const Node *n, const void *v) {
  return (n->kind == ND_ASSIGN || n->kind == ND_LANESET || n->kind == ND_ISET) && n->var == v;
}

/* The pixel's coordinates x or y (rule B moves the position). */
static bool is_xy(const Node *n, const void *ctx) {
  (void)ctx;
  return n->kind == ND_COORD && n->ival < 2;
}

/* K's value from statement s on as one expression: `T v = e;` (v a plain local assigned
 * nowhere else, recorded in env), `return e`, `if (c) S1 [else S2]` whose both ways
 * return; no x or y where the expression moves (rule B). NULL where it is not of that
 * form. */
static const Node *exprify(Fuse *f, const Node *s, int depth) {
  for (; s && depth < 16; s = s->next) {
    switch (s->kind) {
    case ND_DECL:
      if (!s->a || s->var->len || s->var->param || ir_any(f->K->body, assigns, s->var) ||
          (f->moved && ir_any(s->a, is_xy, NULL)) || f->nenv >= 64)
        return NULL;
      f->env[f->nenv] = s->var;
      f->envinit[f->nenv++] = s->a;
      continue;
    case ND_RETURN:
      return s->a && !s->nargs && !(f->moved && ir_any(s->a, is_xy, NULL)) ? s->a : NULL;
    case ND_BLOCK:
      if (s->next) return NULL;
      return exprify(f, s->body, depth + 1);
    case ND_IF: {
      if (f->moved && ir_any(s->a, is_xy, NULL)) return NULL;
      const Node *then = exprify(f, s->b, depth + 1);
      const Node *els = exprify(f, s->c ? s->c : s->next, depth + 1);
      if (!then || !els) return NULL;
      Node *c = node_new(f->a, ND_COND, f->K->type, s->loc);
      if (!c) return f->failed = true, NULL;
      c->a = s->a, c->b = (Node *)then, c->c = (Node *)els;
      return c;
    }
    default:
      return NULL;
    }
  }
  return NULL;
}

/* ---- the fused kernel's parameters ---- */

static Param *add_param(Fuse *f, const Param *orig, PipeArg arg, int shift) {
  Decl *F = f->F;
  if (F->nparams >= FUSE_MAX_PARAMS) return f->failed = true, NULL;
  Param *q = arena_alloc(f->a, sizeof *q);
  if (!q) return f->failed = true, NULL;
  *q = *orig;
  q->index = F->nparams;
  q->img_index = q->scalar_index = -1;
  if (orig->is_image) {
    q->img_index = F->nimages++;
    q->border = arg.border;
  } else {
    q->scalar_index = F->nscalars++;
    Var *v = arena_alloc(f->a, sizeof *v);
    if (!v) return f->failed = true, NULL;
    *v = *orig->var;
    v->param = q;
    v->slot += shift;
    q->var = v;
  }
  f->args[F->nparams] = arg;
  F->params[F->nparams++] = q;
  return q;
}

/* F's image parameter for source `source` under border b: an existing one of the same
 * type, source and border, else a new one copied from orig. */
static Param *image_param(Fuse *f, const Param *orig, int source, Border b, Loc loc, int shift) {
  for (int i = 0; i < f->F->nparams; i++) {
    const Param *q = f->F->params[i];
    const PipeArg *x = &f->args[i];
    if (q->is_image && x->source == source && x->border.kind == b.kind && x->border.value == b.value &&
        type_eq(q->type, orig->type) && !q->len)
      return f->F->params[i];
  }
  PipeArg arg = {.source = source, .border = b, .has_border = true, .loc = loc};
  return add_param(f, orig, arg, shift);
}

/* ---- copying the trees ---- */

static Var *k_var(Fuse *f, Var *v) {
  if (!v || v->slot < 0 || v->is_const || v->pval) return v;
  if (v->param) return f->kscal[v->param->index] ? f->kscal[v->param->index]->var : v;
  if (v->slot >= f->K->nslots) return f->failed = true, v;
  if (!f->kvars[v->slot]) {
    Var *c = arena_alloc(f->a, sizeof *c);
    if (!c) return f->failed = true, v;
    *c = *v;
    c->slot += f->shift;
    f->kvars[v->slot] = c;
  }
  return f->kvars[v->slot];
}

/* The image parameter of K's param p as F reads it (rule A: K's own args; rule B: the
 * source of K's arg under the border of the read being replaced). */
static Param *k_image(Fuse *f, const Param *p) {
  if (f->moved) {
    const PipeArg *arg = &f->kv->args[p->index];
    return image_param(f, p, arg->source, f->border, arg->loc, f->shift);
  }
  return f->kimg[p->index];
}

static void edit_k(void *ctx, Node *c);

static Node *var_node(Fuse *f, Var *v) {
  Node *n = node_new(f->a, ND_VAR, v->type, v->loc);
  if (!n) return f->failed = true, NULL;
  n->var = v;
  return n;
}

/* v + e (i32) */
static Node *plus_var(Fuse *f, Var *v, Node *e) {
  Node *n = node_new(f->a, ND_ADD, type_scalar(T_I32), v->loc), *vn = var_node(f, v);
  if (!n || !vn) return f->failed = true, e;
  n->a = vn;
  n->b = e;
  return n;
}

/* Rule B: replaces node c by a copy of K's local's initialiser, or K's read at (0, 0) by
 * a read at the consumer's offsets. */
static void edit_k(void *ctx, Node *c) {
  Fuse *f = ctx;
  if (f->failed) return;
  if (f->pos[0] && c->kind == ND_COORD) { /* K's x, y, width or height */
    c->kind = ND_VAR;
    c->var = f->pos[c->ival];
    return;
  }
  if (f->expr && c->kind == ND_VAR && c->var && !c->var->param && c->var->slot >= 0 && !c->var->is_const) {
    for (int i = 0; i < f->nenv; i++)
      if (f->env[i] == c->var) {
        Node *next = c->next, *sub = ir_clone(f->a, f->envinit[i], edit_k, f, &f->failed);
        if (!sub) return;
        *c = *sub;
        c->next = next;
        return;
      }
  }
  if (c->param && (c->kind == ND_READ || c->kind == ND_AT || c->kind == ND_IMGDIM)) {
    Param *q = k_image(f, c->param);
    if (!q) return;
    c->param = q;
    if (f->pos[0] && c->kind == ND_READ) { /* in(dx, dy) at K's position: in.at(px + dx, py + dy) */
      c->kind = ND_AT;
      c->a = plus_var(f, f->pos[0], c->a);
      c->b = plus_var(f, f->pos[1], c->b);
    }
    if (f->moved && c->kind == ND_READ) {
      c->a = ir_clone(f->a, f->dx, NULL, NULL, &f->failed);
      c->b = ir_clone(f->a, f->dy, NULL, NULL, &f->failed);
    }
  }
  if (c->var) c->var = k_var(f, c->var);
}

/* Whether C's parameter p is bound to the producer's value. */
static bool of_k(const Fuse *f, const Param *p) { return p->is_image && !f->cmap[p->index]; }

static void edit_c(void *ctx, Node *c) {
  Fuse *f = ctx;
  if (f->failed) return;
  if (c->param && of_k(f, c->param)) {
    if (c->kind == ND_IMGDIM) { /* the producer's size is the pixel space's, or K's own */
      if (f->pos[0]) {
        c->kind = ND_VAR;
        c->var = f->pos[c->ival ? 3 : 2];
      } else {
        c->kind = ND_COORD;
        c->ival = c->ival ? 3 : 2;
      }
      c->param = NULL;
      return;
    }
    if (c->kind != ND_READ) {
      f->failed = true;
      return;
    }
    Node *next = c->next;
    if (f->t) { /* rule A */
      c->kind = ND_VAR;
      c->var = f->t;
      c->a = c->b = NULL;
      c->param = NULL;
      c->flags = 0;
      return;
    }
    f->border = f->cv->args[c->param->index].border; /* rule B, or A in a reduction's map */
    f->dx = c->a, f->dy = c->b;
    Node *sub = ir_clone(f->a, f->expr, edit_k, f, &f->failed);
    if (!sub) return;
    *c = *sub;
    c->next = next;
    return;
  }
  if (c->param) c->param = f->cmap[c->param->index];
  if (c->var && c->var->param) c->var = f->cmap[c->var->param->index]->var;
}

/* ---- one fusion ---- */

/* Starts fused kernel f->F as a copy of consumer C with room for cap parameters (none
 * yet), and the maps from C's and K's parameters; false when out of memory. */
static bool begin(Fuse *f, const Decl *C, const Decl *K, int cap) {
  Arena *a = f->a;
  f->F = arena_alloc(a, sizeof *f->F);
  f->args = arena_alloc(a, sizeof *f->args * (size_t)cap);
  f->cmap = arena_alloc(a, sizeof *f->cmap * (size_t)(C->nparams + 1));
  f->kscal = arena_alloc(a, sizeof *f->kscal * (size_t)(K->nparams + 1));
  f->kimg = arena_alloc(a, sizeof *f->kimg * (size_t)(K->nparams + 1));
  if (!f->F || !f->args || !f->cmap || !f->kscal || !f->kimg) return false;
  *f->F = *C;
  f->F->params = arena_alloc(a, sizeof *f->F->params * (size_t)cap);
  f->F->nparams = f->F->nimages = f->F->nscalars = 0;
  return f->F->params != NULL;
}

/* Gives fused kernel F its body and an index, and analyses it afresh; false when out of
 * memory. */
static bool finish(Program *prog, Decl *F, Node *body) {
  F->body = body;
  F->access = NULL;
  F->sep = NULL;
  memset(&F->metrics, 0, sizeof F->metrics);
  F->specs = F->spec_next = NULL;
  F->nspecs = 0;
  F->spec_vals = NULL;
  F->parent = NULL;
  F->outs = NULL;
  F->index = prog->next_index++;
  return analyze_decl_again(F, prog->arena);
}

/* Points pipeline P at fused kernel f->F: value c calls it, value k is computed inside. */
static void commit(Decl *P, int k, int c, const Fuse *f) {
  PipeValue *pc = &P->values[c];
  pc->callee = f->F;
  pc->args = f->args;
  pc->nargs = f->F->nparams;
  P->values[k].fused = true;
  P->values[k].into = c;
}

/* `int v = e;` for a new local v of F in slot `slot`, chained before next. */
static Node *decl_i32(Fuse *f, Var **v, int slot, Node *e, Node *next) {
  Node *d = node_new(f->a, ND_DECL, TYPE_VOID, f->K->loc);
  *v = arena_alloc(f->a, sizeof **v);
  if (!d || !*v || !e) return f->failed = true, NULL;
  **v = (Var){.name = f->K->name, .type = type_scalar(T_I32), .slot = slot, .loc = f->K->loc, .table = -1};
  d->var = *v;
  d->a = e;
  d->next = next;
  return d;
}

/* Rule A at a clamped position: the declarations of K's width and height (its size()
 * expressions) and of its position clamp(x, 0, width - 1),
 * clamp(y, 0, height - 1), from F slot `slot` on (4 slots), chained before next; they go
 * to f->pos. The consumer reads K's image at (0, 0) under clamp, so its pixel (x, y) reads
 * K's value there, on whatever size K has. */
static Node *clamped_position(Fuse *f, int slot, Node *next) {
  const Decl *K = f->K;
  Node *dim[2] = {NULL, NULL};
  Loc loc = K->loc;
  for (int d = 0; d < 2; d++) {
    dim[d] = ir_clone(f->a, d ? K->size_h : K->size_w, edit_k, f, &f->failed);
    if (!dim[d]) return f->failed = true, NULL;
  }
  Var *wh[2];
  Node *coords[2];
  for (int d = 0; d < 2; d++) { /* clamp(x or y, 0, size - 1) */
    Node *call = node_new(f->a, ND_CALL, type_scalar(T_I32), loc), *xy = node_new(f->a, ND_COORD, type_scalar(T_I32), loc),
         *zero = node_new(f->a, ND_NUM, type_scalar(T_I32), loc), *one = node_new(f->a, ND_NUM, type_scalar(T_I32), loc),
         *last = node_new(f->a, ND_SUB, type_scalar(T_I32), loc);
    Node **args = arena_alloc(f->a, sizeof *args * 3);
    if (!call || !xy || !zero || !one || !last || !args) return f->failed = true, NULL;
    xy->ival = d;
    one->ival = 1;
    last->b = one;
    args[0] = xy, args[1] = zero, args[2] = last;
    call->builtin = BI_CLAMP;
    call->args = args;
    call->nargs = 3;
    coords[d] = call;
  }
  Node *py = decl_i32(f, &f->pos[1], slot + 3, coords[1], next);
  Node *px = decl_i32(f, &f->pos[0], slot + 2, coords[0], py);
  Node *kh = decl_i32(f, &wh[1], slot + 1, dim[1], px);
  Node *kw = decl_i32(f, &wh[0], slot, dim[0], kh);
  if (f->failed) return NULL;
  f->pos[2] = wh[0], f->pos[3] = wh[1];
  coords[0]->args[2]->a = var_node(f, wh[0]);
  coords[1]->args[2]->a = var_node(f, wh[1]);
  return f->failed ? NULL : kw;
}

/* Makes F, value c's kernel with value k's computed inside it (rule A when `at_origin`,
 * at a clamped position when `clamped`, else B with expr), and points the pipeline at it.
 * False: not fused (nothing changed), or out of memory (f->a->failed). */
static bool fuse_pair(Program *prog, Decl *P, int k, int c, bool at_origin, bool clamped, const Node *expr,
                      Fuse *f) {
  const PipeValue *kv = &P->values[k], *cv = &P->values[c];
  const Decl *C = cv->callee, *K = kv->callee;
  Arena *a = prog->arena;
  f->kvars = arena_alloc(a, sizeof *f->kvars * (size_t)(K->nslots + 1));
  if (!f->kvars || !begin(f, C, K, C->nparams + K->nparams * (C->nimages + 1))) return false;
  Decl *F = f->F;
  f->shift = C->nslots;
  F->nslots = C->nslots + K->nslots + 1 + (clamped ? 4 : 0);
  /* C's parameters in order, the images of value k left out (they become K's), then K's
   * scalars, then (rule A) K's images */
  for (int i = 0; i < C->nparams && !f->failed; i++) {
    const Param *p = C->params[i];
    f->cmap[i] = p->is_image && cv->args[i].source == k ? NULL : add_param(f, p, cv->args[i], 0);
  }
  for (int i = 0; i < K->nparams && !f->failed; i++) {
    const Param *p = K->params[i];
    if (!p->is_image) f->kscal[i] = add_param(f, p, kv->args[i], f->shift);
    else if (at_origin)
      f->kimg[i] = image_param(f, p, kv->args[i].source, kv->args[i].border, kv->args[i].loc, f->shift);
  }
  if (f->failed) return false;
  Node *cbody = NULL, *first = NULL;
  if (at_origin && !expr) {
    f->t = arena_alloc(a, sizeof *f->t);
    if (!f->t) return false;
    *f->t = (Var){.name = K->name, .type = K->type, .slot = C->nslots + K->nslots, .loc = K->loc, .table = -1};
    Node *decl = node_new(a, ND_DECL, TYPE_VOID, K->loc);
    if (!decl) return false;
    first = decl;
    if (clamped) first = clamped_position(f, C->nslots + K->nslots + 1, decl);
    Node *kbody = ir_clone(a, K->body, edit_k, f, &f->failed);
    if (f->failed || !first) return false;
    decl->var = f->t;
    /* clamped: K's statements at the top level, where the C generator's axis values
     * (codegen/c/axes.c) find the declarations that depend on x or y alone (a gather's
     * source columns: 16.8 -> 9.0 ms in a block and not; docs/PERFORMANCE.md); its locals
     * have slots of their own either way */
    decl->next = clamped ? tail(f, kbody->body) : block_of(f, tail(f, kbody->body), K->loc);
  } else {
    f->expr = expr;
  }
  cbody = ir_clone(a, C->body, edit_c, f, &f->failed);
  if (f->failed || !cbody) return false;
  if (first) { /* a kernel's or a histogram's statements: (the position,) t, K's block */
    Node *last = first;
    while (last->next) last = last->next;
    last->next = cbody->body;
    cbody->body = first;
  }
  if (!finish(prog, F, cbody)) return false;
  /* bounded windows only (never expected), but where K's position is computed */
  if (F->spec_mask || (F->skel == SK_GATHER && !clamped)) return false;
  if (f->model >= 0 && !cost_fusion_pays(K, C, F, &cost_devices[f->model])) return false;
  commit(P, k, c, f);
  return true;
}

/* Rule C: k into c through a tile (see the header). F is C's tree as it is, its parameter
 * for k's image kept (the tile's, F->stage_param: bound to no image), then K's scalars and
 * images with their sources and borders; K's body stays K's (F->stage), its parameters
 * mapped to F's (F->stage_map). F's access to K's images is widened to K's window around
 * C's window on the tile, the extent a tile of K's values needs. False: not fused. */
static bool fuse_tile(Program *prog, Decl *P, int k, int c, Fuse *f) {
  const PipeValue *kv = &P->values[k], *cv = &P->values[c];
  const Decl *C = cv->callee, *K = kv->callee;
  Arena *a = prog->arena;
  int *map = arena_alloc(a, sizeof *map * (size_t)(K->nparams + 1));
  if (!map || !begin(f, C, K, C->nparams + K->nparams)) return false;
  Decl *F = f->F;
  int tile = -1;
  for (int i = 0; i < C->nparams && !f->failed; i++) {
    f->cmap[i] = add_param(f, C->params[i], cv->args[i], 0);
    if (f->cmap[i] && C->params[i]->is_image && cv->args[i].source == k) tile = f->cmap[i]->index;
  }
  for (int i = 0; i < K->nparams && !f->failed; i++) {
    const Param *p = K->params[i];
    Param *q = p->is_image ? image_param(f, p, kv->args[i].source, kv->args[i].border, kv->args[i].loc, 0)
                           : add_param(f, p, kv->args[i], 0);
    if (q) map[i] = q->index;
  }
  if (f->failed || tile < 0) return false;
  Node *cbody = ir_clone(a, C->body, edit_c, f, &f->failed);
  if (f->failed || !cbody) return false;
  if (!finish(prog, F, cbody) || F->spec_mask || F->sep || F->skel != SK_N2P) return false;
  F->stage = K;
  F->stage_param = tile;
  F->stage_map = map;
  /* K's images: read through K's window at every position of C's window on the tile */
  const Access *t = &F->access[F->params[tile]->img_index];
  for (int i = 0; i < K->nparams; i++) {
    const Param *p = K->params[i];
    if (!p->is_image) continue;
    const Access *ka = &K->access[p->img_index];
    Access *fa = &F->access[F->params[map[i]]->img_index];
    int x0 = t->x0 + ka->x0, x1 = t->x1 + ka->x1, y0 = t->y0 + ka->y0, y1 = t->y1 + ka->y1;
    if (fa->read_rel) x0 = x0 < fa->x0 ? x0 : fa->x0, x1 = x1 > fa->x1 ? x1 : fa->x1, y0 = y0 < fa->y0 ? y0 : fa->y0,
                      y1 = y1 > fa->y1 ? y1 : fa->y1;
    *fa = (Access){.read_rel = true, .window_known = true, .x0 = x0, .x1 = x1, .y0 = y0, .y1 = y1};
  }
  /* K runs once per position of the tile, at a cost measured against K's own kernel: on
   * the H100, edges.pxl's smoothing computed in the tile took 0.072 ms at 8192^2 where
   * the smoothing kernel took 0.062 ms with its memory (fewer loads shared, a barrier more,
   * fewer blocks per SM): RULE_C_COST times K's counts */
  F->metrics.arith += RULE_C_COST * K->metrics.arith;
  F->metrics.flops += RULE_C_COST * K->metrics.flops;
  F->metrics.reads += RULE_C_COST * K->metrics.reads;
  F->metrics.branches += RULE_C_COST * K->metrics.branches;
  if (!K->metrics.exact) F->metrics.exact = false;
  if (f->model >= 0 && !cost_fusion_pays(K, C, F, &cost_devices[f->model])) return false;
  commit(P, k, c, f);
  return true;
}

/* Whether rule C can put value k into value c: a kernel consumer reading k's image through
 * one parameter, a window under clamp, mirror, mirror101 or wrap, not separable; a
 * producer reading every image through known windows; neither already a rule C kernel. */
static bool tile_ok(const Decl *P, int k, int c) {
  const PipeValue *kv = &P->values[k], *cv = &P->values[c];
  const Decl *C = cv->callee, *K = kv->callee;
  if (C->kind != D_KERNEL || C->sep || C->stage || K->stage || !K->nimages) return false;
  int uses = 0;
  for (int i = 0; i < C->nparams; i++)
    if (C->params[i]->is_image && cv->args[i].source == k) {
      BorderKind b = cv->args[i].border.kind;
      if (b != B_CLAMP && b != B_MIRROR && b != B_MIRROR101 && b != B_WRAP) return false;
      uses++;
    }
  if (uses != 1) return false;
  for (int i = 0; i < K->nparams; i++) {
    const Param *p = K->params[i];
    if (!p->is_image) continue;
    const Access *ac = &K->access[p->img_index];
    if (ac->read_abs || ac->gather || !ac->read_rel || !ac->window_known) return false;
  }
  return true;
}

/* Tries to fuse value k into value c (c reads it); model: a device class, only where the
 * cost model predicts a gain on it (-1: every exact fusion); tiles: rule C may be used. */
static bool try_pair(Program *prog, Decl *P, int k, int c, int model, bool tiles) {
  const PipeValue *kv = &P->values[k], *cv = &P->values[c];
  const Decl *C = cv->callee, *K = kv->callee;
  if (!plain_kernel(kv, true) || !consumer(cv) || kv->loop != cv->loop || C->parent || any_none(kv) ||
      any_none(cv) || pinned(P, k, c) || C->stage || K->stage) /* a rule C kernel takes no further part */
    return false;
  /* K's values at C's pixels: the same positions where both have one size (the size
   * roots are one value); a K with size() at its position clamped into that size (rule A
   * only; a K of another root without size() stays a stage: computed at a clamped
   * position it would be a gather where the sizes are the same) */
  bool clamped = K->size_w != NULL;
  if (!clamped && size_root(P, k) != size_root(P, c)) return false;
  /* ... made only when every exact fusion is asked for (model -1, `--fuse all`): the
   * fused kernel is a gather, and the one pipeline measured, a Laplacian level's pyrUp
   * (then a gather) into the difference, ran slower fused than as written - 1.25x on the
   * 2-core VM at 2048^2, 1.11-1.17x on an H100 - where the model predicted it faster */
  if (clamped && model >= 0) return false;
  for (int i = 0; i < K->nparams; i++)
    if (K->params[i]->len) return false;
  bool at_origin = true, window_ok = true;
  for (int i = 0; i < C->nparams; i++) {
    const Param *p = C->params[i];
    if (!p->is_image || cv->args[i].source != k) continue;
    if (!type_eq(p->type, K->type) || p->len) return false;
    const Access *ac = &C->access[p->img_index];
    if (ac->read_abs || ac->gather || (ac->read_rel && !ac->window_known)) return false;
    if (ac->read_rel && (ac->x0 || ac->x1 || ac->y0 || ac->y1)) at_origin = false;
    BorderKind b = cv->args[i].border.kind;
    if (b == B_CONSTANT || b == B_NONE) window_ok = false;
    if (clamped && b != B_CLAMP) return false;
  }
  if (clamped && (!at_origin || C->kind != D_KERNEL)) return false;
  Fuse f = {.a = prog->arena, .K = K, .cv = cv, .kv = kv, .model = model, .moved = !at_origin};
  /* K as one expression: rule B (at a window's taps), or A into a reduction's map */
  bool b_ok = window_ok && K->skel == SK_P2P && !C->sep;
  for (int i = 0; i < K->nparams && b_ok && !at_origin; i++)
    if (K->params[i]->is_image && size_root(P, kv->args[i].source) != size_root(P, k)) b_ok = false;
  const Node *expr = NULL;
  if ((!at_origin && b_ok) || (at_origin && C->kind == D_REDUCE)) {
    f.env = arena_alloc(prog->arena, sizeof *f.env * 64);
    f.envinit = arena_alloc(prog->arena, sizeof *f.envinit * 64);
    if (!f.env || !f.envinit) return false;
    expr = exprify(&f, K->body->body, 0);
  }
  if (!at_origin && !expr) { /* rule C, where rule B does not apply */
    if (prog->arena->failed || !tiles || !tile_ok(P, k, c)) return false;
    Fuse g = {.a = prog->arena, .K = K, .cv = cv, .kv = kv, .model = model};
    return fuse_tile(prog, P, k, c, &g);
  }
  if (at_origin && C->kind == D_REDUCE && !expr) return false;
  /* a failed attempt leaves the pipeline as it was: fuse_pair changes it last */
  return fuse_pair(prog, P, k, c, at_origin, clamped, expr, &f);
}

Decl *fuse_pipeline(Program *prog, const Decl *P0, const bool *keep, int model, bool tiles) {
  Decl *P = arena_alloc(prog->arena, sizeof *P);
  PipeValue *vals = arena_alloc(prog->arena, sizeof *vals * (size_t)(P0->nvalues + 1));
  if (!P || !vals) return NULL;
  *P = *P0;
  memcpy(vals, P0->values, sizeof *vals * (size_t)P0->nvalues);
  P->values = vals;
  int nfused = 0;
  /* rules A and B to a fixed point first, then rule C (a rule C kernel takes no further
   * part: edges.pxl's Sobel stages go into threshold before the smoothing goes into it) */
  for (int pass = 0; pass < (tiles ? 2 : 1); pass++)
    for (bool changed = true; changed;) {
      changed = false;
      for (int c = 0; c < P->nvalues && !changed; c++) {
        if (!consumer(&P->values[c])) continue;
        for (int a = 0; a < P->values[c].nargs && !changed; a++) {
          int k = P->values[c].args[a].source;
          if (k >= 0 && k < c && !(keep && keep[k]) && try_pair(prog, P, k, c, model, pass == 1))
            changed = true, nfused++;
        }
      }
    }
  return nfused ? P : NULL;
}

bool fuse_program(Program *p) {
  for (int i = 0; i < p->ndecls; i++) {
    Decl *D = p->decls[i];
    if (D->kind != D_PIPELINE) continue;
    for (int d = 0; d < COST_NDEVICES; d++) D->fused[d] = fuse_pipeline(p, D, NULL, d, d == COST_GPU);
    if (p->arena->failed) return false;
  }
  return true;
}
