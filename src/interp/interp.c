/*
 * interp.c - the reference interpreter (see interp.h).
 *
 * A tree walker over checked IR. Every operation is done in its node's type, with the
 * helper functions of src/ir/prelude.h that generated code uses too: integer arithmetic
 * wraps, division by zero gives 0, conversions saturate, f32 arithmetic is done in
 * float. Reads outside an image go through the border mode of that use.
 */
#include "interp/interp.h"

#include <math.h>
#include <string.h>

#include "ir/prelude.h"
#include "util/alloc.h"

typedef struct {
  const Decl *D;
  const ImgArg *imgs;
  const Lane *scalars;
  const Lane *pvals; /* a pipeline's scalar values (Var.pval), for its scalar arguments */
  Val *slots;
  int x, y, w, h;   /* output coordinates and size */
  Val ret;          /* value of the last return */
  Val *rets;        /* a kernel with several outputs: one value per output (D->nouts) */
  Lane *bins;       /* histogram */
  bool *oom;        /* set when a function call could not get its frame */
  bool oom_flag;    /* what oom points at in an entry's frame */
} Frame;

/* ---- conversions and arithmetic on lanes ---- */

static bool is_unsigned(Scalar s) { return s == T_U8 || s == T_U16 || s == T_U32 || s == T_U64; }

/* Wraps an integer to the width of s (two's complement). */
static int64_t wrap_int(int64_t v, Scalar s) {
  switch (s) {
  case T_U8: return (uint8_t)v;
  case T_I16: return (int16_t)v;
  case T_U16: return (uint16_t)v;
  case T_I32: return (int32_t)(uint32_t)v;
  case T_U32: return (uint32_t)v;
  default: return v;
  }
}

Lane lane_convert(Lane v, Scalar from, Scalar to) {
  Lane r;
  if (from == to) return v;
  if (scalar_is_float(from)) {
    double f = v.f;
    switch (to) {
    case T_F32: r.f = (float)f; return r;
    case T_F64: r.f = f; return r;
    case T_U8: r.i = pxr_f2u8(f); return r;
    case T_I16: r.i = pxr_f2i16(f); return r;
    case T_U16: r.i = pxr_f2u16(f); return r;
    case T_I32: r.i = pxr_f2i32(f); return r;
    case T_U32: r.i = pxr_f2u32(f); return r;
    case T_I64: r.i = pxr_f2i64(f); return r;
    case T_U64: r.i = (int64_t)pxr_f2u64(f); return r;
    default: r.i = 0; return r;
    }
  }
  if (scalar_is_float(to)) {
    double f = from == T_U64 ? (double)(uint64_t)v.i : (double)v.i;
    if (to == T_F32) f = from == T_U64 ? (float)(uint64_t)v.i : (float)v.i;
    r.f = f;
    return r;
  }
  if (from == T_U64) {
    uint64_t u = (uint64_t)v.i;
    switch (to) {
    case T_U8: r.i = pxr_u2u8(u); return r;
    case T_I16: r.i = pxr_u2i16(u); return r;
    case T_U16: r.i = pxr_u2u16(u); return r;
    case T_I32: r.i = pxr_u2i32(u); return r;
    case T_U32: r.i = pxr_u2u32(u); return r;
    case T_I64: r.i = pxr_u2i64(u); return r;
    default: r.i = v.i; return r;
    }
  }
  int64_t s = v.i;
  switch (to) {
  case T_U8: r.i = pxr_s2u8(s); return r;
  case T_I16: r.i = pxr_s2i16(s); return r;
  case T_U16: r.i = pxr_s2u16(s); return r;
  case T_I32: r.i = pxr_s2i32(s); return r;
  case T_U32: r.i = pxr_s2u32(s); return r;
  case T_I64: r.i = s; return r;
  case T_U64: r.i = (int64_t)pxr_s2u64(s); return r;
  default: r.i = s; return r;
  }
}

static bool truthy(Lane v, Scalar s) { return scalar_is_float(s) ? v.f != 0 : v.i != 0; }

/* Binary arithmetic in type s (a promoted type: i32, u32, i64, u64, f32 or f64). */
static Lane arith(NodeKind k, Lane a, Lane b, Scalar s) {
  Lane r;
  if (s == T_F32) {
    float x = (float)a.f, y = (float)b.f, z = 0;
    switch (k) {
    case ND_ADD: z = x + y; break;
    case ND_SUB: z = x - y; break;
    case ND_MUL: z = x * y; break;
    case ND_DIV: z = x / y; break;
    default: break;
    }
    r.f = z;
    return r;
  }
  if (s == T_F64) {
    double x = a.f, y = b.f, z = 0;
    switch (k) {
    case ND_ADD: z = x + y; break;
    case ND_SUB: z = x - y; break;
    case ND_MUL: z = x * y; break;
    case ND_DIV: z = x / y; break;
    default: break;
    }
    r.f = z;
    return r;
  }
  uint64_t x = (uint64_t)a.i, y = (uint64_t)b.i, z = 0;
  switch (k) {
  case ND_ADD: z = x + y; break;
  case ND_SUB: z = x - y; break;
  case ND_MUL: z = x * y; break;
  case ND_BITAND: z = x & y; break;
  case ND_BITOR: z = x | y; break;
  case ND_BITXOR: z = x ^ y; break;
  case ND_DIV: case ND_MOD:
    switch (s) {
    case T_I32: z = (uint64_t)(int64_t)(k == ND_DIV ? pxr_div_i32((int32_t)a.i, (int32_t)b.i)
                                                    : pxr_mod_i32((int32_t)a.i, (int32_t)b.i)); break;
    case T_U32: z = k == ND_DIV ? pxr_div_u32((uint32_t)x, (uint32_t)y) : pxr_mod_u32((uint32_t)x, (uint32_t)y); break;
    case T_I64: z = (uint64_t)(k == ND_DIV ? pxr_div_i64(a.i, b.i) : pxr_mod_i64(a.i, b.i)); break;
    default: z = k == ND_DIV ? pxr_div_u64(x, y) : pxr_mod_u64(x, y); break;
    }
    break;
  case ND_SHL: case ND_SHR:
    switch (s) {
    case T_I32: z = (uint64_t)(int64_t)(k == ND_SHL ? pxr_shl_i32((int32_t)a.i, (int32_t)b.i)
                                                    : pxr_shr_i32((int32_t)a.i, (int32_t)b.i)); break;
    case T_U32: z = k == ND_SHL ? pxr_shl_u32((uint32_t)x, (uint32_t)y) : pxr_shr_u32((uint32_t)x, (uint32_t)y); break;
    case T_I64: z = (uint64_t)(k == ND_SHL ? pxr_shl_i64(a.i, b.i) : pxr_shr_i64(a.i, b.i)); break;
    default: z = k == ND_SHL ? pxr_shl_u64(x, y) : pxr_shr_u64(x, y); break;
    }
    break;
  default: break;
  }
  r.i = wrap_int((int64_t)z, s);
  return r;
}

static int compare(Lane a, Lane b, Scalar s) {
  if (scalar_is_float(s)) return a.f < b.f ? -1 : a.f > b.f ? 1 : a.f == b.f ? 0 : 2; /* 2: unordered */
  if (is_unsigned(s) && s == T_U64) {
    uint64_t x = (uint64_t)a.i, y = (uint64_t)b.i;
    return x < y ? -1 : x > y;
  }
  return a.i < b.i ? -1 : a.i > b.i;
}

/* Does comparison k hold for compare()'s answer c (2: unordered, a NaN)? */
static bool holds(NodeKind k, int c) {
  switch (k) {
  case ND_EQ: return c == 0;
  case ND_NE: return c != 0;
  case ND_LT: return c == -1;
  case ND_LE: return c == -1 || c == 0;
  case ND_GT: return c == 1;
  default: return c == 1 || c == 0;
  }
}

static Lane call1(Builtin b, Lane a, Scalar s) {
  Lane r = a;
  bool f32 = s == T_F32;
  switch (b) {
  case BI_ABS:
    if (f32) r.f = fabsf((float)a.f);
    else if (s == T_F64) r.f = fabs(a.f);
    else if (s == T_I32) r.i = pxr_abs_i32((int32_t)a.i);
    else if (s == T_I64) r.i = pxr_abs_i64(a.i);
    return r; /* unsigned: unchanged */
  case BI_SQRT: r.f = f32 ? sqrtf((float)a.f) : sqrt(a.f); return r;
  case BI_EXP: r.f = f32 ? expf((float)a.f) : exp(a.f); return r;
  case BI_LOG: r.f = f32 ? logf((float)a.f) : log(a.f); return r;
  case BI_SIN: r.f = f32 ? sinf((float)a.f) : sin(a.f); return r;
  case BI_COS: r.f = f32 ? cosf((float)a.f) : cos(a.f); return r;
  case BI_FLOOR: r.f = f32 ? floorf((float)a.f) : floor(a.f); return r;
  case BI_CEIL: r.f = f32 ? ceilf((float)a.f) : ceil(a.f); return r;
  case BI_ROUND: r.f = f32 ? pxr_round_f32((float)a.f) : pxr_round_f64(a.f); return r;
  default: return r;
  }
}

static Lane minmax(bool is_max, Lane a, Lane b, Scalar s) {
  Lane r;
  if (s == T_F32) {
    r.f = is_max ? pxr_max_f32((float)a.f, (float)b.f) : pxr_min_f32((float)a.f, (float)b.f);
    return r;
  }
  if (s == T_F64) {
    r.f = is_max ? pxr_max_f64(a.f, b.f) : pxr_min_f64(a.f, b.f);
    return r;
  }
  int c = compare(a, b, s);
  return is_max ? (c < 0 ? b : a) : (c > 0 ? b : a);
}

static Lane call_n(Builtin b, const Lane *v, Scalar s) {
  Lane r;
  switch (b) {
  case BI_MIN: return minmax(false, v[0], v[1], s);
  case BI_MAX: return minmax(true, v[0], v[1], s);
  case BI_CLAMP: return minmax(false, minmax(true, v[0], v[1], s), v[2], s);
  case BI_POW: r.f = s == T_F32 ? powf((float)v[0].f, (float)v[1].f) : pow(v[0].f, v[1].f); return r;
  case BI_ATAN2: r.f = s == T_F32 ? atan2f((float)v[0].f, (float)v[1].f) : atan2(v[0].f, v[1].f); return r;
  default: return call1(b, v[0], s);
  }
}

/* ---- image reads ---- */

static int map_coord(int i, int n, BorderKind k, bool *outside) {
  if (pxr_inside(i, n)) return i;
  switch (k) {
  case B_MIRROR: return pxr_mirror_idx(i, n);
  case B_MIRROR101: return pxr_mirror101_idx(i, n);
  case B_WRAP: return pxr_wrap_idx(i, n);
  case B_CONSTANT: *outside = true; return 0;
  default: return pxr_clamp_idx(i, n); /* clamp, and none for reads that still fall outside */
  }
}

Lane interp_load(const struct pxl_image *img, int x, int y, int c) {
  const char *row = (const char *)img->data + (size_t)y * img->pitch;
  size_t i = (size_t)x * (size_t)img->channels + (size_t)c;
  Lane r;
  switch (img->type) {
  case PXL_U8: r.i = ((const uint8_t *)row)[i]; break;
  case PXL_I16: r.i = ((const int16_t *)row)[i]; break;
  case PXL_U16: r.i = ((const uint16_t *)row)[i]; break;
  case PXL_I32: r.i = ((const int32_t *)row)[i]; break;
  case PXL_U32: r.i = ((const uint32_t *)row)[i]; break;
  case PXL_F32: r.f = ((const float *)row)[i]; break;
  default: r.f = ((const double *)row)[i]; break;
  }
  return r;
}

/* The pixel of image p at (ix, iy) through its border mode: its lanes into v (the others
 * 0), or with lane >= 0 that lane alone, returned (a Val returned by value costs a
 * store-forwarding stall: see eval). */
static Lane read_image(Frame *F, const Param *p, int ix, int iy, int lane, Val *v) {
  const ImgArg *ia = &F->imgs[p->img_index];
  const struct pxl_image *img = ia->img;
  bool outside = false;
  int x = map_coord(ix, img->width, ia->border.kind, &outside);
  int y = map_coord(iy, img->height, ia->border.kind, &outside);
  Lane c;
  if (outside) {
    c.f = ia->border.value;
    c = lane_convert(c, T_F64, p->type.s);
  }
  if (lane >= 0) return outside ? c : interp_load(img, x, y, lane);
  for (int k = 0; k < 4; k++) v->l[k] = k >= p->type.lanes ? (Lane){0} : outside ? c : interp_load(img, x, y, k);
  return v->l[0];
}

/* ---- expressions ---- */

/* eval() writes a value of any lanes into *r (every lane: unused ones 0); eval_s() gives
 * a value of one lane. Values go out through a pointer and are read lane by lane: a Val
 * returned by value was written in 8-byte lanes and copied in 16-byte moves, a
 * store-forwarding stall that took most of the interpreter's time. */
static void eval(Frame *F, const Node *n, Val *r);
static Lane eval_s(Frame *F, const Node *n);

/* Lane k of child n (a one-lane child broadcast). */
static inline Lane lane_of(const Val *v, const Node *n, int k) { return v->l[n->type.lanes == 1 ? 0 : k]; }

static void eval_any(Frame *F, const Node *n, Val *v) {
  if (n->type.lanes <= 1) {
    v->l[0] = eval_s(F, n);
    v->l[1].i = v->l[2].i = v->l[3].i = 0;
  } else {
    eval(F, n, v);
  }
}

/* Scalar fast path: a node whose value and operands all have one lane. The general
 * eval() below handles vectors; both follow the same rules. */
static bool all_scalar(const Node *n) {
  if (n->type.lanes > 1) return false;
  if (n->a && n->a->type.lanes > 1) return false;
  if (n->b && n->b->type.lanes > 1) return false;
  if (n->c && n->c->type.lanes > 1) return false;
  for (int i = 0; i < n->nargs; i++)
    if (n->args[i]->type.lanes > 1) return false;
  return true;
}

static Lane eval_s(Frame *F, const Node *n) {
  Lane r;
  Scalar s = n->type.s;
  switch (n->kind) {
  case ND_NUM:
    if (scalar_is_float(s)) r.f = n->fval;
    else r.i = n->ival;
    return r;
  case ND_VAR:
    if (n->var->param) return F->scalars[n->var->param->scalar_index];
    if (n->var->pval) return F->pvals[n->var->pval - 1];
    return F->slots[n->var->slot].l[0];
  case ND_COORD:
    r.i = n->ival == 0 ? F->x : n->ival == 1 ? F->y : n->ival == 2 ? F->w : F->h;
    return r;
  case ND_IMGDIM: {
    const struct pxl_image *img = F->imgs[n->param->img_index].img;
    r.i = n->ival ? img->height : img->width;
    return r;
  }
  case ND_READ:
    if (n->param->type.lanes == 1) {
      int dx = (int)eval_s(F, n->a).i, dy = (int)eval_s(F, n->b).i;
      return read_image(F, n->param, pxr_add_i32(F->x, dx), pxr_add_i32(F->y, dy), 0, NULL);
    }
    break;
  case ND_AT:
    if (n->param->type.lanes == 1) {
      int ex = (int)eval_s(F, n->a).i, ey = (int)eval_s(F, n->b).i;
      return read_image(F, n->param, ex, ey, 0, NULL);
    }
    break;
  case ND_CAST:
    if (n->a->type.lanes == 1) return lane_convert(eval_s(F, n->a), n->a->type.s, s);
    break;
  case ND_NEG:
    if (n->a->type.lanes == 1) {
      Lane a = eval_s(F, n->a), zero = {0};
      if (scalar_is_float(s)) r.f = s == T_F32 ? (double)-(float)a.f : -a.f;
      else r = arith(ND_SUB, zero, a, s);
      return r;
    }
    break;
  case ND_BITNOT:
    if (n->a->type.lanes == 1) {
      r.i = wrap_int(~eval_s(F, n->a).i, s);
      return r;
    }
    break;
  case ND_NOT:
    r.i = !truthy(eval_s(F, n->a), n->a->type.s);
    return r;
  case ND_LOGAND:
    r.i = truthy(eval_s(F, n->a), n->a->type.s) && truthy(eval_s(F, n->b), n->b->type.s);
    return r;
  case ND_LOGOR:
    r.i = truthy(eval_s(F, n->a), n->a->type.s) || truthy(eval_s(F, n->b), n->b->type.s);
    return r;
  case ND_ADD: case ND_SUB: case ND_MUL: case ND_DIV: case ND_MOD: case ND_SHL: case ND_SHR:
  case ND_BITAND: case ND_BITOR: case ND_BITXOR:
    if (all_scalar(n)) return arith(n->kind, eval_s(F, n->a), eval_s(F, n->b), s);
    break;
  case ND_EQ: case ND_NE: case ND_LT: case ND_LE: case ND_GT: case ND_GE: {
    r.i = holds(n->kind, compare(eval_s(F, n->a), eval_s(F, n->b), n->a->type.s));
    return r;
  }
  case ND_COND:
    if (all_scalar(n)) return truthy(eval_s(F, n->a), n->a->type.s) ? eval_s(F, n->b) : eval_s(F, n->c);
    break;
  case ND_CALL:
    if (all_scalar(n)) {
      Lane v[3];
      for (int i = 0; i < n->nargs; i++) v[i] = eval_s(F, n->args[i]);
      return call_n(n->builtin, v, s);
    }
    break;
  default:
    break;
  }
  Val v;
  eval(F, n, &v);
  return v.l[0];
}

static bool exec(Frame *F, const Node *s);

/* Element i of array v into *r, or 0 (every lane) outside it. */
static void array_get(Frame *F, const Var *v, int64_t i, Val *r) {
  memset(r, 0, sizeof *r);
  if (i < 0 || i >= v->len) return;
  if (v->param) { /* an array parameter: the run's values */
    r->l[0] = F->scalars[v->param->scalar_index].arr[i];
    return;
  }
  if (v->is_const) {
    const Node *e = v->elems[i];
    if (scalar_is_float(v->type.s)) r->l[0].f = e->fval;
    else r->l[0].i = e->ival;
    return;
  }
  *r = F->slots[v->slot + i];
}

/* A call of a user function: the arguments (already of the parameters' types) become
 * its parameters' slots; the body runs in a frame of its own. Functions do not recurse,
 * so the depth of calls is bounded by the number of functions. */
static void call_func(Frame *F, const Node *n, Val *r) {
  const Decl *f = n->func;
  Val local[16];
  Val *slots = local;
  memset(r, 0, sizeof *r);
  if (f->nslots > 16) {
    slots = PXL_CALLOC((size_t)f->nslots, sizeof(Val));
    if (!slots) {
      if (F->oom) *F->oom = true;
      return;
    }
  } else {
    memset(local, 0, sizeof local);
  }
  for (int i = 0; i < n->nargs; i++) eval_any(F, n->args[i], &slots[f->params[i]->var->slot]);
  Frame G = {.D = f, .slots = slots, .oom = F->oom};
  exec(&G, f->body);
  *r = G.ret;
  if (slots != local) PXL_FREE(slots);
}

static void eval(Frame *F, const Node *n, Val *r) {
  int lanes = n->type.lanes > 0 ? n->type.lanes : 1;
  Scalar s = n->type.s;
  Val a, b;
  switch (n->kind) {
  case ND_NUM:
    if (scalar_is_float(s)) r->l[0].f = n->fval;
    else r->l[0].i = n->ival;
    for (int k = 1; k < 4; k++) r->l[k] = k < lanes ? r->l[0] : (Lane){0};
    return;
  case ND_VAR:
    if (n->var->param || n->var->pval) {
      r->l[0] = n->var->param ? F->scalars[n->var->param->scalar_index] : F->pvals[n->var->pval - 1];
      r->l[1].i = r->l[2].i = r->l[3].i = 0;
      return;
    }
    *r = F->slots[n->var->slot];
    return;
  case ND_READ: case ND_AT: {
    int u = (int)eval_s(F, n->a).i, v = (int)eval_s(F, n->b).i;
    if (n->kind == ND_READ) {
      u = pxr_add_i32(F->x, u);
      v = pxr_add_i32(F->y, v);
    }
    read_image(F, n->param, u, v, -1, r);
    return;
  }
  case ND_LANE:
    eval(F, n->a, &a);
    r->l[0] = a.l[n->ival];
    r->l[1].i = r->l[2].i = r->l[3].i = 0;
    return;
  case ND_VEC:
    memset(r, 0, sizeof *r);
    for (int k = 0; k < n->nargs; k++) r->l[k] = eval_s(F, n->args[k]);
    return;
  case ND_CAST:
    eval_any(F, n->a, &a);
    memset(r, 0, sizeof *r);
    for (int k = 0; k < lanes; k++) r->l[k] = lane_convert(lane_of(&a, n->a, k), n->a->type.s, s);
    return;
  case ND_NEG: {
    eval(F, n->a, &a);
    Lane zero = {0};
    memset(r, 0, sizeof *r);
    for (int k = 0; k < lanes; k++) {
      if (scalar_is_float(s)) r->l[k].f = s == T_F32 ? (double)-(float)a.l[k].f : -a.l[k].f;
      else r->l[k] = arith(ND_SUB, zero, a.l[k], s);
    }
    return;
  }
  case ND_BITNOT:
    eval(F, n->a, &a);
    memset(r, 0, sizeof *r);
    for (int k = 0; k < lanes; k++) r->l[k].i = wrap_int(~a.l[k].i, s);
    return;
  case ND_COND:
    if (truthy(eval_s(F, n->a), n->a->type.s)) eval_any(F, n->b, r);
    else eval_any(F, n->c, r);
    return;
  case ND_INDEX:
    array_get(F, n->var, eval_s(F, n->a).i, r);
    return;
  case ND_FCALL:
    call_func(F, n, r);
    return;
  case ND_CALL: {
    Val v3[3];
    for (int i = 0; i < n->nargs; i++) eval_any(F, n->args[i], &v3[i]);
    memset(r, 0, sizeof *r);
    for (int k = 0; k < lanes; k++) {
      Lane v[3];
      for (int i = 0; i < n->nargs; i++) v[i] = lane_of(&v3[i], n->args[i], k);
      r->l[k] = call_n(n->builtin, v, s);
    }
    return;
  }
  case ND_NOT: case ND_LOGAND: case ND_LOGOR:
  case ND_EQ: case ND_NE: case ND_LT: case ND_LE: case ND_GT: case ND_GE:
  case ND_COORD: case ND_IMGDIM:
    /* one lane always (the checker's types): eval_s has them */
    r->l[0] = eval_s(F, n);
    r->l[1].i = r->l[2].i = r->l[3].i = 0;
    return;
  default: {
    /* binary arithmetic */
    eval_any(F, n->a, &a);
    eval_any(F, n->b, &b);
    memset(r, 0, sizeof *r);
    for (int k = 0; k < lanes; k++) r->l[k] = arith(n->kind, lane_of(&a, n->a, k), lane_of(&b, n->b, k), s);
    return;
  }
  }
}

/* ---- statements ---- */

/* Executes a statement list; returns true when a return statement ran. */
static bool exec(Frame *F, const Node *s) {
  for (; s; s = s->next) {
    switch (s->kind) {
    case ND_BLOCK:
      if (exec(F, s->body)) return true;
      break;
    case ND_DECL:
      if (s->var->len) { /* an array: its initialiser, the rest 0 */
        for (int i = 0; i < s->var->len; i++) {
          Val v = {0};
          if (i < s->nargs) eval_any(F, s->args[i], &v);
          F->slots[s->var->slot + i] = v;
        }
        break;
      }
      /* fall through */
    case ND_ASSIGN:
      if (s->var->type.lanes == 1) {
        Lane v = {0};
        if (s->a) v = eval_s(F, s->a);
        F->slots[s->var->slot].l[0] = v;
      } else {
        Val v = {0};
        if (s->a) eval_any(F, s->a, &v);
        F->slots[s->var->slot] = v;
      }
      break;
    case ND_LANESET:
      F->slots[s->var->slot].l[s->ival] = eval_s(F, s->a);
      break;
    case ND_ISET: { /* outside the array: no effect */
      int64_t i = eval_s(F, s->a).i;
      Val v;
      eval_any(F, s->b, &v);
      if (i >= 0 && i < s->var->len) F->slots[s->var->slot + i] = v;
      break;
    }
    case ND_IF:
      if (truthy(eval_s(F, s->a), s->a->type.s)) {
        if (exec(F, s->b)) return true;
      } else if (s->c && exec(F, s->c)) {
        return true;
      }
      break;
    case ND_FOR:
      if (s->init && exec(F, s->init)) return true;
      while (truthy(eval_s(F, s->a), s->a->type.s)) {
        if (exec(F, s->b)) return true;
        if (s->step) exec(F, s->step);
      }
      break;
    case ND_RETURN:
      if (s->nargs) { /* return (a, b, ...): every value, in order */
        for (int i = 0; i < s->nargs; i++) {
          Val v;
          eval_any(F, s->args[i], &v);
          if (F->rets) F->rets[i] = v;
        }
        if (F->rets) F->ret = F->rets[0];
        return true;
      }
      eval_any(F, s->a, &F->ret);
      return true;
    case ND_BIN: {
      int64_t i = eval_s(F, s->a).i;
      if (i < 0 || i >= F->D->nbins) break;
      if (s->ival != BIN_SUM) { /* a minimum or maximum per bin: NaN skipped, -0.0 below +0.0 */
        Lane b = eval_s(F, s->b), *c = &F->bins[i];
        bool lo = s->ival == BIN_MIN;
        if (!F->D->weighted_float) {
          if (lo ? b.i < c->i : b.i > c->i) c->i = b.i;
          break;
        }
        double v = s->b->type.s == T_F64 ? b.f : (double)b.i;
        if (v != v) break;
        if (lo ? v < c->f || (v == c->f && signbit(v) && !signbit(c->f)) : v > c->f || (v == c->f && !signbit(v) && signbit(c->f)))
          c->f = v;
        break;
      }
      if (F->D->weighted_float) {
        double w = 1;
        if (s->b) {
          Lane b = eval_s(F, s->b);
          w = s->b->type.s == T_F64 ? b.f : (double)b.i;
        }
        F->bins[i].f += w;
      } else {
        int64_t w = s->b ? eval_s(F, s->b).i : 1;
        F->bins[i].i = (int64_t)((uint64_t)F->bins[i].i + (uint64_t)w);
      }
      break;
    }
    default:
      break;
    }
  }
  return false;
}

/* ---- entry points ---- */

static int frame_init(Frame *F, const Decl *D, const ImgArg *imgs, const Lane *scalars, Err *err) {
  memset(F, 0, sizeof *F);
  F->D = D;
  F->imgs = imgs;
  F->scalars = scalars;
  F->oom = &F->oom_flag;
  F->slots = PXL_CALLOC((size_t)(D->nslots + 1), sizeof(Val));
  if (!F->slots) return err_set(err, PXL_ENOMEM, "out of memory");
  return PXL_OK;
}

Lane interp_host_expr(const Node *n, const Decl *D, const ImgArg *imgs, const Lane *scalars) {
  return interp_pipe_expr(n, D, imgs, scalars, NULL);
}

Lane interp_pipe_expr(const Node *n, const Decl *P, const ImgArg *imgs, const Lane *scalars, const Lane *pvals) {
  Frame F = {.D = P, .imgs = imgs, .scalars = scalars, .pvals = pvals};
  return eval_s(&F, n);
}

int interp_output_size(const Decl *D, const ImgArg *imgs, const Lane *scalars, int *w, int *h, Err *err) {
  if (D->size_w) {
    int64_t W = interp_host_expr(D->size_w, D, imgs, scalars).i;
    int64_t H = interp_host_expr(D->size_h, D, imgs, scalars).i;
    if (W < 1 || H < 1 || W > PXL_MAX_DIM || H > PXL_MAX_DIM)
      return err_set(err, PXL_EARG, "%s: %s(%lld, %lld) is not a valid %s (1..%d)", D->name,
                     D->tile[0] ? "repeat" : "size", (long long)W, (long long)H,
                     D->tile[0] ? "number of tiles" : "image size", PXL_MAX_DIM);
    if (D->tile[0]) { /* a tiler: W x H tiles */
      W *= D->tile[0];
      H *= D->tile[1];
      if (W > PXL_MAX_DIM || H > PXL_MAX_DIM)
        return err_set(err, PXL_EARG, "%s: %lld x %lld tiles of %d x %d make an image of %lld x %lld, over %d", D->name,
                       (long long)(W / D->tile[0]), (long long)(H / D->tile[1]), D->tile[0], D->tile[1], (long long)W,
                       (long long)H, PXL_MAX_DIM);
    }
    *w = (int)W;
    *h = (int)H;
    return PXL_OK;
  }
  *w = imgs[0].img->width;
  *h = imgs[0].img->height;
  return PXL_OK;
}

void stage_region(const Decl *D, const ImgArg *imgs, int w, int h, int *x0, int *y0, int *x1, int *y1) {
  int l = 0, r = 0, t = 0, b = 0;
  for (int i = 0; i < D->nimages; i++) {
    const Access *ac = &D->access[i];
    if (imgs[i].border.kind != B_NONE || !ac->read_rel || !ac->window_known) continue;
    if (-ac->x0 > l) l = -ac->x0;
    if (ac->x1 > r) r = ac->x1;
    if (-ac->y0 > t) t = -ac->y0;
    if (ac->y1 > b) b = ac->y1;
  }
  *x0 = l < w ? l : w;
  *x1 = w - r > *x0 ? w - r : *x0;
  *y0 = t < h ? t : h;
  *y1 = h - b > *y0 ? h - b : *y0;
}

static void store_elem(struct pxl_image *img, int x, int y, int c, Lane v) {
  char *row = (char *)img->data + (size_t)y * img->pitch;
  size_t i = (size_t)x * (size_t)img->channels + (size_t)c;
  switch (img->type) {
  case PXL_U8: ((uint8_t *)row)[i] = (uint8_t)v.i; break;
  case PXL_I16: ((int16_t *)row)[i] = (int16_t)v.i; break;
  case PXL_U16: ((uint16_t *)row)[i] = (uint16_t)v.i; break;
  case PXL_I32: ((int32_t *)row)[i] = (int32_t)v.i; break;
  case PXL_U32: ((uint32_t *)row)[i] = (uint32_t)v.i; break;
  case PXL_F32: ((float *)row)[i] = (float)v.f; break;
  default: ((double *)row)[i] = v.f; break;
  }
}

static Lane red_identity(const Decl *D, const ImgArg *imgs, const Lane *scalars);

/* A scan's step: acc OP v in the scan's type (sums wrap; min/max skip NaN). */
static Lane scan_step(const Decl *D, Lane acc, Lane v) {
  if (D->redop == R_SUM) return arith(ND_ADD, acc, v, D->type.s);
  return minmax(D->redop == R_MAX, acc, v, D->type.s);
}

/* The prefix pass of scan D over its mapped values in out, in place: every row from the
 * identity left to right (acc = acc OP v, each pixel gets acc), then every column the
 * same way top to bottom. Every backend combines in exactly this order, so results are
 * bit-identical, floats included (LANGUAGE.md, "Scans"). */
static void scan_pass(const Decl *D, struct pxl_image *out) {
  Lane id = red_identity(D, NULL, NULL);
  if (D->scan & SCAN_X)
    for (int y = 0; y < out->height; y++) {
      Lane acc = id;
      for (int x = 0; x < out->width; x++) {
        acc = scan_step(D, acc, interp_load(out, x, y, 0));
        store_elem(out, x, y, 0, acc);
      }
    }
  if (D->scan & SCAN_Y)
    for (int x = 0; x < out->width; x++) {
      Lane acc = id;
      for (int y = 0; y < out->height; y++) {
        acc = scan_step(D, acc, interp_load(out, x, y, 0));
        store_elem(out, x, y, 0, acc);
      }
    }
}

int interp_kernel(const Decl *D, const ImgArg *imgs, const Lane *scalars, struct pxl_image *out, Err *err) {
  if (D->nouts) return err_set(err, PXL_EARG, "%s has %d outputs; run it with interp_kernel_outs", D->name, D->nouts);
  return interp_kernel_outs(D, imgs, scalars, &out, err);
}

int interp_kernel_outs(const Decl *D, const ImgArg *imgs, const Lane *scalars, struct pxl_image *const *outs,
                       Err *err) {
  Val rets[PXL_MAX_TILE > PXL_MAX_OUTS ? PXL_MAX_TILE : PXL_MAX_OUTS];
  Frame F;
  int rc = frame_init(&F, D, imgs, scalars, err);
  if (rc) return rc;
  if (D->nouts || D->tile[0]) F.rets = rets; /* several: return (v0, v1, ...) fills rets */
  int nouts = D->nouts ? D->nouts : 1;
  F.w = outs[0]->width;
  F.h = outs[0]->height;
  if (D->tile[0]) { /* a tiler: the body once per tile, its values stored row by row */
    int tw = D->tile[0], th = D->tile[1], n = tw * th;
    F.w /= tw;
    F.h /= th;
    for (int y = 0; y < F.h; y++)
      for (int x = 0; x < F.w; x++) {
        F.x = x;
        F.y = y;
        exec(&F, D->body);
        for (int k = 0; k < n; k++) {
          const Val *v = n > 1 ? &rets[k] : &F.ret;
          for (int c = 0; c < D->type.lanes; c++) store_elem(outs[0], tw * x + k % tw, th * y + k / tw, c, v->l[c]);
        }
      }
    PXL_FREE(F.slots);
    if (F.oom_flag) return err_set(err, PXL_ENOMEM, "out of memory (a function's frame)");
    return PXL_OK;
  }
  int x0, y0, x1, y1;
  stage_region(D, imgs, F.w, F.h, &x0, &y0, &x1, &y1);
  Lane zero = {0};
  for (int y = 0; y < F.h; y++) {
    for (int x = 0; x < F.w; x++) {
      bool inside = x >= x0 && x < x1 && y >= y0 && y < y1;
      if (inside) { /* the body once; every output stored */
        F.x = x;
        F.y = y;
        exec(&F, D->body);
      }
      for (int k = 0; k < nouts; k++) {
        const Val *v = D->nouts ? &rets[k] : &F.ret;
        int lanes = D->nouts ? D->out_types[k].lanes : D->type.lanes;
        for (int c = 0; c < lanes; c++) store_elem(outs[k], x, y, c, inside ? v->l[c] : zero);
      }
    }
  }
  if (D->scan) scan_pass(D, outs[0]);
  PXL_FREE(F.slots);
  if (F.oom_flag) return err_set(err, PXL_ENOMEM, "out of memory (a function's frame)");
  return PXL_OK;
}

/* Reduction identity for sum/min/max/combine. */
static Lane red_identity(const Decl *D, const ImgArg *imgs, const Lane *scalars) {
  Lane r = {0};
  Scalar s = D->type.s;
  bool f = scalar_is_float(s);
  switch (D->redop) {
  case R_MIN:
    if (f) r.f = INFINITY;
    else r = lane_convert((Lane){.i = INT64_MAX}, T_I64, s);
    if (s == T_U64) r.i = -1; /* UINT64_MAX */
    break;
  case R_MAX:
    if (f) r.f = -INFINITY;
    else r = lane_convert((Lane){.i = INT64_MIN}, T_I64, s);
    break;
  case R_COMBINE:
    r = interp_host_expr(D->identity, D, imgs, scalars);
    break;
  default:
    break;
  }
  return r;
}

/* argmin/argmax: is v strictly better than the accumulator? NaN never is, and a NaN
 * accumulator is replaced by any number. */
static bool arg_better(const Decl *D, Lane v, Lane acc) {
  Scalar s = D->type.s;
  if (scalar_is_float(s)) {
    if (v.f != v.f) return false;
    if (acc.f != acc.f) return true;
  }
  int c = compare(v, acc, s);
  return D->redop == R_ARGMIN ? c == -1 : c == 1;
}

int interp_reduce(const Decl *D, const ImgArg *imgs, const Lane *scalars, RedResult *res, Err *err) {
  Frame F;
  int rc = frame_init(&F, D, imgs, scalars, err);
  if (rc) return rc;
  F.w = imgs[0].img->width;
  F.h = imgs[0].img->height;
  Scalar s = D->type.s;
  Lane acc = red_identity(D, imgs, scalars);
  res->x = res->y = -1;
  bool arg = D->redop == R_ARGMIN || D->redop == R_ARGMAX;
  int x0, y0, x1, y1;
  stage_region(D, imgs, F.w, F.h, &x0, &y0, &x1, &y1);
  for (int y = y0; y < y1; y++) {
    for (int x = x0; x < x1; x++) {
      F.x = x;
      F.y = y;
      Lane v = eval_s(&F, D->body);
      if (arg) {
        if (res->x < 0 || arg_better(D, v, acc)) {
          acc = v;
          res->x = x;
          res->y = y;
        }
        continue;
      }
      switch (D->redop) {
      case R_SUM: acc = arith(ND_ADD, acc, v, s); break;
      case R_MIN: acc = minmax(false, acc, v, s); break;
      case R_MAX: acc = minmax(true, acc, v, s); break;
      default:
        F.slots[D->combine_a->slot].l[0] = acc;
        F.slots[D->combine_b->slot].l[0] = v;
        acc = eval_s(&F, D->combine);
        break;
      }
    }
  }
  res->value = acc;
  res->type = s;
  PXL_FREE(F.slots);
  if (F.oom_flag) return err_set(err, PXL_ENOMEM, "out of memory (a function's frame)");
  return PXL_OK;
}

/* A histogram's empty bin: 0 for sums; for minima the largest value (i64 max, +inf), for
 * maxima the smallest (i64 min, -inf). */
static Lane bin_identity(const Decl *D) {
  bool lo = D->binop == BIN_MIN;
  if (D->binop == BIN_SUM) return D->weighted_float ? (Lane){.f = 0} : (Lane){.i = 0};
  if (D->weighted_float) return (Lane){.f = lo ? INFINITY : -INFINITY};
  return (Lane){.i = lo ? INT64_MAX : INT64_MIN};
}

int interp_histogram(const Decl *D, const ImgArg *imgs, const Lane *scalars, Lane *bins, Err *err) {
  Frame F;
  int rc = frame_init(&F, D, imgs, scalars, err);
  if (rc) return rc;
  F.w = imgs[0].img->width;
  F.h = imgs[0].img->height;
  F.bins = bins;
  for (int b = 0; b < D->nbins; b++) bins[b] = bin_identity(D);
  int x0, y0, x1, y1;
  stage_region(D, imgs, F.w, F.h, &x0, &y0, &x1, &y1);
  for (int y = y0; y < y1; y++)
    for (int x = x0; x < x1; x++) {
      F.x = x;
      F.y = y;
      exec(&F, D->body);
    }
  PXL_FREE(F.slots);
  if (F.oom_flag) return err_set(err, PXL_ENOMEM, "out of memory (a function's frame)");
  return PXL_OK;
}
