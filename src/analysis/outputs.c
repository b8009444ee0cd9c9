/*
 * outputs.c - kernels with several outputs, as the backends run them (see analysis.h).
 *
 * A kernel `kernel (T1 a, T2 b) k(...)` returns one value per output. The interpreter
 * runs it as written: the body once per pixel, every output stored. For the code
 * generators each output k gets a projection: a copy of the declaration whose returns
 * give value k alone (type T_k), a single-output kernel like any other, with a
 * Decl.index of its own after the entries so that instance memos and caches tell the
 * projections apart. Pipelines call the projections (a tuple statement's value k is
 * output k), so every pipeline runner, loop, recording and backend runs them unchanged.
 * The body is a pure function of the pixel position and the inputs, so each projection
 * computes exactly the value the interpreter stores for its output.
 *
 * A projection reads a subset of its kernel's reads; its analysis would find a window
 * as small as that subset, and with border `none` the region left 0 follows the window.
 * So a projection whose reads differ from the kernel's takes the kernel's access and
 * class (a window at least as large as its reads: correct for every path) and no
 * separable passes; the output region is then the kernel's for every output. For the
 * same reason a projection is specialised on scalar values through its kernel
 * (specialise.c): the kernel is specialised, and the projection run is that
 * specialisation's own projection.
 */
#include <string.h>

#include "analysis/analysis.h"

/* ir_clone's edit: `return (v0, v1, ...)` keeps v_out alone. */
static void project_return(void *ctx, Node *c) {
  if (c->kind != ND_RETURN || !c->nargs) return;
  c->a = c->args[*(const int *)ctx];
  c->args = NULL;
  c->nargs = 0;
}

/* ---- dead stores: what only the other outputs needed ---- */

/* Marks in `read` (by slot) every variable n reads. */
static void mark_reads(const Node *n, bool *read) {
  for (; n; n = n->next) {
    if ((n->kind == ND_VAR || n->kind == ND_INDEX) && n->var && n->var->slot >= 0 && !n->var->param)
      read[n->var->slot] = true;
    mark_reads(n->a, read), mark_reads(n->b, read), mark_reads(n->c, read);
    mark_reads(n->init, read), mark_reads(n->step, read), mark_reads(n->body, read);
    for (int i = 0; i < n->nargs; i++) mark_reads(n->args[i], read);
  }
}

/* Whether statement s only stores into a local variable nothing reads. Expressions have
 * no effects (division by zero, indices outside arrays are defined), so it can go. */
static bool dead(const Node *s, const bool *read) {
  return (s->kind == ND_DECL || s->kind == ND_ASSIGN || s->kind == ND_LANESET || s->kind == ND_ISET) && s->var &&
         s->var->slot >= 0 && !s->var->param && !read[s->var->slot];
}

/* Unlinks the dead stores of the statement list at *list (blocks, branches and loop
 * bodies included); true when it removed one. */
static bool drop_dead(Node **list, const bool *read) {
  bool changed = false;
  for (Node **at = list; *at;) {
    Node *s = *at;
    if (dead(s, read)) {
      *at = s->next;
      changed = true;
      continue;
    }
    if (s->kind == ND_BLOCK) changed |= drop_dead(&s->body, read);
    if (s->kind == ND_IF) changed |= drop_dead(&s->b, read) | drop_dead(&s->c, read);
    if (s->kind == ND_FOR) changed |= drop_dead(&s->b, read) | drop_dead(&s->step, read);
    at = &s->next;
  }
  return changed;
}

/* Removes from projection S the variables only other outputs read, until none is left:
 * the generated code then has no unused variables, and the analysis sees only the reads
 * this output needs. */
static bool prune(Arena *a, Decl *S) {
  bool *read = arena_alloc(a, (size_t)S->nslots + 1);
  if (!read) return false;
  do {
    memset(read, 0, (size_t)S->nslots + 1);
    mark_reads(S->body, read);
  } while (drop_dead(&S->body->body, read));
  return true;
}

static bool same_access(const Access *x, const Access *y) {
  return x->read_rel == y->read_rel && x->window_known == y->window_known && x->x0 == y->x0 && x->x1 == y->x1 &&
         x->y0 == y->y0 && x->y1 == y->y1 && x->read_abs == y->read_abs && x->abs_affine == y->abs_affine &&
         !memcmp(&x->ax, &y->ax, sizeof x->ax) && !memcmp(&x->ay, &y->ay, sizeof x->ay) && x->gather == y->gather;
}

/* Projection `out` of kernel D (analysed already). NULL when out of memory. */
static Decl *project(Program *p, Decl *D, int out) {
  Decl *S = arena_alloc(p->arena, sizeof *S);
  if (!S) return NULL;
  *S = *D;
  bool failed = false;
  S->body = ir_clone(p->arena, D->body, project_return, &out, &failed);
  if (failed) return NULL;
  S->type = D->out_types[out];
  S->nouts = 0;
  S->out_types = NULL;
  S->out_names = NULL;
  S->out_locs = NULL;
  S->outs = NULL;
  S->parent = D;
  S->out_index = out;
  S->access = NULL;
  S->sep = NULL;
  memset(&S->metrics, 0, sizeof S->metrics);
  S->specs = NULL;
  S->nspecs = 0;
  S->index = p->next_index++;
  if (!prune(p->arena, S) || !analyze_decl_again(S, p->arena)) return NULL;
  bool same = S->skel == D->skel;
  for (int i = 0; i < D->nimages; i++) same = same && same_access(&S->access[i], &D->access[i]);
  if (!same) {
    memcpy(S->access, D->access, sizeof(Access) * (size_t)D->nimages);
    S->skel = D->skel;
    S->sep = NULL;
    S->spec_mask = D->spec_mask;
  }
  return S;
}

bool outputs_project(Program *p, Decl *D) {
  Decl **outs = arena_alloc(p->arena, sizeof(Decl *) * (size_t)D->nouts);
  if (!outs) return false;
  for (int k = 0; k < D->nouts; k++)
    if (!(outs[k] = project(p, D, k))) return false;
  D->outs = outs;
  return true;
}

bool outputs_lower(Program *p) {
  for (int i = 0; i < p->ndecls; i++) {
    Decl *D = p->decls[i];
    if (D->kind == D_KERNEL && D->nouts && !outputs_project(p, D)) return false;
  }
  for (int i = 0; i < p->ndecls; i++) { /* tuple statements call the projections */
    Decl *P = p->decls[i];
    if (P->kind != D_PIPELINE) continue;
    for (int v = 0; v < P->nvalues; v++) {
      PipeValue *pv = &P->values[v];
      if (pv->nouts && pv->callee && pv->callee->outs) pv->callee = pv->callee->outs[pv->out];
    }
  }
  return true;
}
