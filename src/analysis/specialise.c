/*
 * specialise.c - declarations specialised on scalar values at run time (see specialise.h).
 *
 * A specialisation is a deep copy of the declaration's trees in its program's arena, with
 * every read of a marked parameter replaced by an ND_NUM of its value (already converted
 * to the parameter's type by the caller), then analysed as a declaration of its own. It
 * gets a Decl.index of its own after the program's entries, so the backends' instance
 * memos and caches tell it from the generic declaration and from other values.
 */
#include "analysis/specialise.h"

#include <stdint.h>
#include <string.h>

#include "analysis/analysis.h"

/* Integer scalar parameters read anywhere in n. */
static uint32_t params_read(const Node *n) {
  uint32_t m = 0;
  for (; n; n = n->next) {
    if (n->kind == ND_VAR && n->var && n->var->param && !scalar_is_float(n->var->type.s) &&
        n->var->param->scalar_index < 32)
      m |= 1u << n->var->param->scalar_index;
    m |= params_read(n->a) | params_read(n->b) | params_read(n->c) | params_read(n->init) |
         params_read(n->step) | params_read(n->body);
    for (int i = 0; i < n->nargs; i++) m |= params_read(n->args[i]);
  }
  return m;
}

void spec_mark(Decl *D) {
  D->spec_mask = 0;
  if (D->skel != SK_GATHER) return;
  bool unbounded = false;
  for (int i = 0; i < D->nimages; i++) unbounded |= D->access[i].gather;
  if (unbounded) D->spec_mask = params_read(D->body);
}

typedef struct {
  const Decl *D;
  const Lane *vals;
} Clone;

/* Whether integer v (a value of type `from`, not u64) is a value of integer type `to`. */
static bool fits(int64_t v, Scalar to) {
  switch (to) {
  case T_U8: return v >= 0 && v <= 255;
  case T_I16: return v >= -32768 && v <= 32767;
  case T_U16: return v >= 0 && v <= 65535;
  case T_I32: return v >= INT32_MIN && v <= INT32_MAX;
  case T_U32: return v >= 0 && v <= (int64_t)UINT32_MAX;
  case T_I64: return true;
  case T_U64: return v >= 0;
  default: return false;
  }
}

/* Folds an integer negation, sum, difference, product or conversion of numbers into a
 * number, with the language's wrap-around (conversions only where nothing saturates),
 * so that loops from -r to 2 * r become loops between constants for the analysis. */
static void fold(Node *c) {
  Scalar s = c->type.s;
  const Node *x = c->a, *y = c->b;
  bool num_x = x && x->kind == ND_NUM && !scalar_is_float(x->type.s) && x->type.s != T_U64;
  bool num_y = y && y->kind == ND_NUM && !scalar_is_float(y->type.s) && y->type.s != T_U64;
  if (c->type.lanes != 1 || scalar_is_float(s) || !num_x) return;
  uint64_t v;
  switch (c->kind) {
  case ND_NEG: v = 0 - (uint64_t)x->ival; break;
  case ND_ADD: if (!num_y) return; v = (uint64_t)x->ival + (uint64_t)y->ival; break;
  case ND_SUB: if (!num_y) return; v = (uint64_t)x->ival - (uint64_t)y->ival; break;
  case ND_MUL: if (!num_y) return; v = (uint64_t)x->ival * (uint64_t)y->ival; break;
  case ND_CAST: if (!fits(x->ival, s)) return; v = (uint64_t)x->ival; break;
  default: return;
  }
  if (c->kind != ND_CAST && s != T_I32 && s != T_U32 && s != T_I64) return; /* operations are in promoted types */
  c->ival = s == T_I32 ? (int64_t)(int32_t)(uint32_t)v : s == T_U32 ? (int64_t)(uint32_t)v : (int64_t)v;
  c->kind = ND_NUM;
  c->a = c->b = NULL;
  c->flags = 0;
}

/* ir_clone's edit: a specialised parameter becomes its value, and integer arithmetic on
 * numbers folds (children first, so whole expressions of them fold). */
static void specialise_node(void *ctx, Node *c) {
  const Clone *C = ctx;
  if (c->kind == ND_VAR && c->var && c->var->param && c->var->param->scalar_index < 32 &&
      (C->D->spec_mask >> c->var->param->scalar_index & 1)) {
    c->kind = ND_NUM;
    c->ival = C->vals[c->var->param->scalar_index].i;
    c->var = NULL;
    return;
  }
  fold(c);
}

static bool same_values(const Decl *S, const Decl *D, const Lane *vals) {
  for (int i = 0; i < D->nscalars && i < 32; i++)
    if ((D->spec_mask >> i & 1) && S->spec_vals[i] != vals[i].i) return false;
  return true;
}

/* The window of S stays within SPEC_MAX_RADIUS on every side. */
static bool narrow_enough(const Decl *S) {
  for (int i = 0; i < S->nimages; i++) {
    const Access *ac = &S->access[i];
    if (ac->read_rel && (ac->x0 < -SPEC_MAX_RADIUS || ac->x1 > SPEC_MAX_RADIUS || ac->y0 < -SPEC_MAX_RADIUS ||
                         ac->y1 > SPEC_MAX_RADIUS))
      return false;
  }
  return true;
}

const Decl *spec_for(const Decl *D, const Lane *scalars) {
  if (D->parent) { /* a projection (outputs.c): the same output of its kernel's specialisation,
                    * so that every output has the kernel's window (border none's frame) */
    const Decl *S = spec_for(D->parent, scalars);
    return S != D->parent && S->outs ? S->outs[D->out_index] : D;
  }
  if (!D->spec_mask || !D->prog) return D;
  Decl *M = (Decl *)D; /* the memo lives on the declaration */
  for (Decl *S = M->specs; S; S = S->spec_next)
    if (same_values(S, D, scalars)) return S->skel == SK_GATHER ? D : S; /* a gather: not worth it */
  if (M->nspecs >= SPEC_MAX) return D;
  Arena *a = D->prog->arena;
  Clone C = {.D = D, .vals = scalars};
  bool failed = false;
  Decl *S = arena_alloc(a, sizeof *S);
  int64_t *vals = arena_alloc(a, sizeof(int64_t) * 32);
  if (!S || !vals) return D;
  *S = *D;
  for (int i = 0; i < D->nscalars && i < 32; i++) vals[i] = scalars[i].i;
  S->body = ir_clone(a, D->body, specialise_node, &C, &failed);
  S->size_w = ir_clone(a, D->size_w, specialise_node, &C, &failed);
  S->size_h = ir_clone(a, D->size_h, specialise_node, &C, &failed);
  S->combine = ir_clone(a, D->combine, specialise_node, &C, &failed);
  S->identity = ir_clone(a, D->identity, specialise_node, &C, &failed);
  if (failed) return D;
  S->access = NULL;
  S->sep = NULL;
  memset(&S->metrics, 0, sizeof S->metrics);
  S->spec_mask = 0;
  S->specs = NULL;
  S->nspecs = 0;
  S->spec_vals = vals;
  S->index = D->prog->next_index++;
  if (!analyze_decl_again(S, a)) return D;
  /* only windows are worth it, and affine windows (resample.pxl's resize_area once k is
   * known); an affine read made a permutation, such as in.at(x + d, y), keeps the gather
   * path, which is tested on every backend for it; remembered */
  if ((S->skel != SK_N2P && S->skel != SK_P2P && S->skel != SK_AFFINE) || !narrow_enough(S)) S->skel = SK_GATHER;
  S->outs = NULL; /* several outputs: the specialisation's own projections */
  if (S->nouts && S->skel != SK_GATHER && !outputs_project(D->prog, S)) S->skel = SK_GATHER;
  S->spec_next = M->specs;
  M->specs = S;
  M->nspecs++;
  return S->skel == SK_GATHER ? D : S;
}
