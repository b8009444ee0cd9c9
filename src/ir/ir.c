/*
 * ir.c - names and constructors of the IR (see ir.h and docs/IR.md).
 */
#include "ir/ir.h"
#include "ir/value.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const Type TYPE_VOID = {T_VOID, 0};

static const char *const scalar_names[] = {
#define X(e, name, size, pixel) name,
    PXL_ELEM_TYPES(X)
#undef X
};
static const int scalar_sizes[] = {
#define X(e, name, size, pixel) size,
    PXL_ELEM_TYPES(X)
#undef X
};

const char *scalar_name(Scalar s) { return s < T_COUNT ? scalar_names[s] : "?"; }
int scalar_size(Scalar s) { return s < T_COUNT ? scalar_sizes[s] : 0; }
bool scalar_is_signed(Scalar s) { return s == T_I16 || s == T_I32 || s == T_I64 || scalar_is_float(s); }
bool type_eq(Type a, Type b) { return a.s == b.s && a.lanes == b.lanes; }
Type type_scalar(Scalar s) { return (Type){s, s == T_VOID ? 0 : 1}; }
Type type_vec(Scalar s, int lanes) { return (Type){s, lanes}; }

const char *type_str(Type t, char buf[16]) {
  if (t.lanes <= 1)
    snprintf(buf, 16, "%s", scalar_name(t.s));
  else
    snprintf(buf, 16, "%sx%d", scalar_name(t.s), t.lanes);
  return buf;
}

bool border_parse(const char *text, Border *b) {
  for (int k = 0; text && k < B_COUNT; k++) {
    const char *n = border_name((BorderKind)k);
    size_t l = strlen(n);
    if (strncmp(text, n, l)) continue;
    b->kind = (BorderKind)k;
    b->value = 0;
    if (k != B_CONSTANT) {
      if (text[l] == 0) return true;
      continue; /* "mirror101" starts with "mirror" */
    }
    if (text[l] != '(') continue;
    char *end;
    b->value = strtod(text + l + 1, &end);
    return end != text + l + 1 && !strcmp(end, ")");
  }
  return false;
}

const char *border_name(BorderKind k) {
  static const char *const n[] = {
#define X(e, name) name,
      PXL_BORDERS(X)
#undef X
  };
  return k < B_COUNT ? n[k] : "?";
}

const char *node_name(NodeKind k) {
  static const char *const n[] = {
#define X(e) #e,
      PXL_NODES(X)
#undef X
  };
  return k < ND_COUNT ? n[k] : "?";
}

static const char *const builtin_names[] = {
#define X(e, name, arity) name,
    PXL_BUILTINS(X)
#undef X
};
static const int builtin_arities[] = {
#define X(e, name, arity) arity,
    PXL_BUILTINS(X)
#undef X
};
const char *builtin_name(Builtin b) { return b < BI_COUNT ? builtin_names[b] : "?"; }
int builtin_arity(Builtin b) { return b < BI_COUNT ? builtin_arities[b] : 0; }

const char *redop_name(RedOp r) {
  static const char *const n[] = {
#define X(e, name) name,
      PXL_REDOPS(X)
#undef X
  };
  return r < R_COUNT ? n[r] : "?";
}

const char *skeleton_name(Skeleton s) {
  static const char *const n[] = {
#define X(e, name) name,
      PXL_SKELETONS(X)
#undef X
  };
  return s < SK_COUNT ? n[s] : "?";
}

static const struct {
  const char *name;
  int arity, map, out;
} globals[] = {
#define X(e, name, arity, map, out) {name, arity, map, out},
    PXL_GLOBALS(X)
#undef X
};
const char *global_name(GlobalOp g) { return g < G_COUNT ? globals[g].name : "?"; }
int global_arity(GlobalOp g) { return g < G_COUNT ? globals[g].arity : 1; }
int global_map_kind(GlobalOp g) { return g < G_COUNT ? globals[g].map : GM_VALUE; }
int global_out_kind(GlobalOp g) { return g < G_COUNT ? globals[g].out : GT_ANY; }
bool global_on_device(GlobalOp g) {
  return g == G_EDT || g == G_CITYBLOCK || g == G_CHESSBOARD || g == G_LABEL4 || g == G_LABEL8;
}

bool hist_double_sums(const Decl *D) { return D->weighted_float && D->binop == BIN_SUM; }

void hist_keys_to_values(const Decl *D, Lane *bins) {
  if (D->binop == BIN_SUM) return;
  const uint64_t sign = 0x8000000000000000ull;
  for (int b = 0; b < D->nbins; b++) {
    uint64_t k = (uint64_t)bins[b].i;
    if (D->binop == BIN_MIN) k = ~k;
    if (!D->weighted_float) {
      bins[b].i = (int64_t)(k ^ sign); /* key 0 (empty) gives INT64_MIN / INT64_MAX */
    } else if (bins[b].i == 0) {
      bins[b].f = D->binop == BIN_MIN ? INFINITY : -INFINITY;
    } else {
      uint64_t u = (k & sign) ? k & ~sign : ~k;
      memcpy(&bins[b].f, &u, sizeof u);
    }
  }
}

Decl *program_find(const Program *p, const char *name) {
  for (int i = 0; i < p->ndecls; i++)
    if (p->decls[i]->name && !strcmp(p->decls[i]->name, name)) return p->decls[i];
  return NULL;
}

Node *node_new(Arena *a, NodeKind k, Type t, Loc loc) {
  Node *n = arena_alloc(a, sizeof *n);
  if (!n) return NULL;
  n->kind = k;
  n->type = t;
  n->loc = loc;
  return n;
}

Node *ir_clone(Arena *a, const Node *n, void (*edit)(void *ctx, Node *copy), void *ctx, bool *failed) {
  if (!n || *failed) return NULL;
  Node *c = arena_alloc(a, sizeof *c);
  if (!c) {
    *failed = true;
    return NULL;
  }
  *c = *n;
  c->a = ir_clone(a, n->a, edit, ctx, failed);
  c->b = ir_clone(a, n->b, edit, ctx, failed);
  c->c = ir_clone(a, n->c, edit, ctx, failed);
  c->init = ir_clone(a, n->init, edit, ctx, failed);
  c->step = ir_clone(a, n->step, edit, ctx, failed);
  c->body = ir_clone(a, n->body, edit, ctx, failed);
  c->next = ir_clone(a, n->next, edit, ctx, failed);
  if (n->nargs) {
    c->args = arena_alloc(a, sizeof(Node *) * (size_t)n->nargs);
    if (!c->args) {
      *failed = true;
      return NULL;
    }
    for (int i = 0; i < n->nargs; i++) c->args[i] = ir_clone(a, n->args[i], edit, ctx, failed);
  }
  if (*failed) return NULL;
  if (edit) edit(ctx, c);
  return c;
}

bool ir_any_in(const Node *n, bool (*pred)(const Node *n, const void *ctx), const void *ctx) {
  if (pred(n, ctx) || ir_any(n->a, pred, ctx) || ir_any(n->b, pred, ctx) || ir_any(n->c, pred, ctx) ||
      ir_any(n->init, pred, ctx) || ir_any(n->step, pred, ctx) || ir_any(n->body, pred, ctx))
    return true;
  for (int i = 0; i < n->nargs; i++)
    if (ir_any(n->args[i], pred, ctx)) return true;
  return false;
}

bool ir_any(const Node *n, bool (*pred)(const Node *n, const void *ctx), const void *ctx) {
  for (; n; n = n->next)
    if (ir_any_in(n, pred, ctx)) return true;
  return false;
}

const Node *ir_strip_casts(const Node *n) {
  while (n && n->kind == ND_CAST) n = n->a;
  return n;
}

int pipe_first_image(const PipeValue *pv) {
  for (int a = 0; pv->callee && a < pv->nargs; a++)
    if (pv->callee->params[a]->is_image && pv->callee->params[a]->img_index == 0) return pv->args[a].source;
  return -1;
}

Decl *program_find_func(const Program *p, const char *name) {
  for (int i = 0; i < p->nfuncs; i++)
    if (p->funcs[i]->name && !strcmp(p->funcs[i]->name, name)) return p->funcs[i];
  return NULL;
}

void decl_instance_types(const Decl *g, char *buf, size_t n) {
  size_t m = 0;
  char t[16];
  buf[0] = 0;
  for (const Decl *i = g->inst_first; i && m < n; i = i->inst_next)
    m += (size_t)snprintf(buf + m, n - m, "%s%s", i == g->inst_first ? "" : ", ", type_str(i->targ, t));
}
