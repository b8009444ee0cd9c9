/*
 * cost.c - the cost model (see cost.h).
 *
 * Per launch of a declaration over N pixels:
 *
 *     time = N * bytes * strided / bw  +  N * ops * scalar / rate  +  N * bins * bin
 *            + launch  (+ result for a reduction)
 *
 * bytes: each image the declaration reads, once (its element size times its channels;
 * windows come from caches), plus the output it writes; a scan moves its output again
 * per pass after the first. ops: the analysis's arithmetic operations and reads per pixel
 * (Metrics.arith + Metrics.reads, counted as written: a loop's counter arithmetic too), a
 * separable window's scaled to its column and row passes (a tiler's on the CPU only, GPUs
 * run its window as written; arithmetic on vectors counts
 * once per channel). scalar: code with a call the C compiler does not vectorise (exp,
 * log, pow, sin, cos, atan2, round), an integer division by a value not known when it is
 * compiled or a loop with run-time bounds; milder, code reading a table at data-dependent
 * indices (gathers), and on the CPU code on interleaved 3- or 4-channel pixels. A
 * division, square root or math call counts as several operations (each once, however
 * often it runs). strided: reads at permuted positions (transposes, flips)
 * touch a cache line per pixel on the CPU. The memory and operation times add rather than
 * overlap: on the kernels of the skeleton benchmark the sum was the closer fit on both
 * device classes (a 3x3 stencil at 60% of the copy's bandwidth on the H200 is bound by
 * neither alone).
 *
 * The numbers of each device are calibrated on those twelve kernels at 8192 x 8192 on the
 * machine named (docs/PERFORMANCE.md, "Cost model"); the other examples are the test.
 */
#include "analysis/cost.h"

#include <math.h>

/* bw, cache, cache_bw, ops, flops, scalar, launch, result, link; plus the per-bin and
 * strided factors below. */
const CostDevice cost_devices[COST_NDEVICES] = {
    {"cpu", "2-core development VM (AMD EPYC, AVX-512, 32 MiB L3)", 33e9, 32e6, 150e9, 6e11, 6e11, 8, 3e-6, 0, 0},
    {"gpu", "NVIDIA H100/H200 (CUDA, 50 MiB L2)", 3.0e12, 40e6, 6e12, 5e13, 1e14, 2, 3e-6, 12e-6, 20e9},
};

/* Seconds per bin() statement per pixel, all cores / SMs together (private bins on the
 * CPU, shared-memory atomics on GPUs), and the factor on bytes read at permuted
 * positions. */
static const double bin_s[COST_NDEVICES] = {1.9e-10, 3.0e-13};
static const double strided[COST_NDEVICES] = {8, 1.25};
static const double gather[COST_NDEVICES] = {4, 2}; /* operations of code with table gathers: slower by */
static const double interleaved[COST_NDEVICES] = {2, 1}; /* of code reading or writing 3- or 4-channel pixels */
static const double slow_op[COST_NDEVICES] = {8, 4};     /* a division, sqrt or math call: this many operations */

/* Divisions, square roots and math calls, each once however often it runs. */
static bool count_slow(const Node *n, const void *ctx) {
  int *k = (int *)ctx;
  *k += n->kind == ND_DIV || n->kind == ND_MOD || (n->kind == ND_CALL && n->builtin != BI_MIN && n->builtin != BI_MAX &&
                                                   n->builtin != BI_ABS && n->builtin != BI_CLAMP);
  return false;
}

static int dev_index(const CostDevice *dev) { return dev == &cost_devices[COST_GPU] ? COST_GPU : COST_CPU; }

/* The counters of a declaration's unrolled loops (their values are known per copy). */
typedef struct {
  const Var *v[32];
  int n;
} Counters;

static bool note_counter(const Node *n, const void *ctx) {
  Counters *c = (Counters *)ctx;
  if (n->kind == ND_FOR && (n->flags & NF_UNROLL) && n->init && n->init->var && c->n < 32) c->v[c->n++] = n->init->var;
  return false;
}

/* An index known when the code is written: numbers and unrolled counters. */
static bool known(const Node *n, const Counters *c) {
  if (!n) return true;
  if (n->kind == ND_NUM) return true;
  if (n->kind == ND_VAR) {
    for (int i = 0; i < c->n; i++)
      if (c->v[i] == n->var) return true;
    return false;
  }
  if (n->kind == ND_CAST || n->kind == ND_NEG || n->kind == ND_ADD || n->kind == ND_SUB || n->kind == ND_MUL)
    return known(n->a, c) && known(n->b, c);
  return false;
}

/* A table element at a data-dependent index: a gather (slow on CPUs, serialised in GPUs'
 * constant memory). */
static bool gathers(const Node *n, const void *ctx) { return n->kind == ND_INDEX && !known(n->a, ctx); }

/* What keeps a C compiler from vectorising a pixel loop: a call it has no vector form of
 * without -ffast-math, an integer division by a value not known when compiling. */
static bool not_vectorised(const Node *n, const void *ctx) {
  (void)ctx;
  if (n->kind == ND_CALL) {
    switch (n->builtin) {
    case BI_EXP: case BI_LOG: case BI_POW: case BI_SIN: case BI_COS: case BI_ATAN2: case BI_ROUND:
      return true;
    default:
      return false;
    }
  }
  if ((n->kind == ND_DIV || n->kind == ND_MOD) && !scalar_is_float(n->type.s)) {
    const Node *d = ir_strip_casts(n->b);
    return !d || d->kind != ND_NUM;
  }
  return false;
}

static double literal(const Node *n) {
  n = ir_strip_casts(n);
  return n && n->kind == ND_NUM ? (scalar_is_float(n->type.s) ? n->fval : (double)n->ival) : -1;
}

/* One launch of declaration D (not a pipeline) over images of w x h pixels. */
static void launch_cost(const Decl *D, const CostDevice *dev, double w, double h, Prediction *p) {
  int d = dev_index(dev);
  if (D->global) { /* the map, then the operator's pass: about three passes over 4-byte
                    * scratch besides the map and the output, on the host (a GPU's copies of
                    * both through the link) or, where CUDA has a device pass, on the device */
    GlobalOp g = (GlobalOp)(D->global - 1);
    double io = scalar_size(D->type.s);
    for (int k = 0; k < global_arity(g); k++) {
      launch_cost(D->gmap[k], dev, w, h, p);
      io += scalar_size(D->gmap[k]->type.s);
    }
    double bytes = io + 12;
    if (d == COST_GPU && global_on_device(g))
      p->mem_s += w * h * bytes / dev->bw;
    else
      p->mem_s += w * h * bytes / cost_devices[COST_CPU].bw + (d == COST_GPU ? w * h * io / dev->link : 0);
    p->bytes += bytes;
    p->launches++;
    return;
  }
  double lw = literal(D->size_w), lh = literal(D->size_h);
  double n = lw > 0 && lh > 0 ? lw * lh : w * h; /* a table kernel: its literal size */
  /* a tiler: one item per repetition (as many as the paving fits), writing its tile and
   * reading its paving's share of each input */
  int tn = D->tile[0] ? D->tile[0] * D->tile[1] : 1, tin = D->tile[0] ? D->paving[0] * D->paving[1] : 1;
  if (D->tile[0] && !(lw > 0 && lh > 0)) n = ceil(w / D->paving[0]) * ceil(h / D->paving[1]);
  double bytes = D->kind == D_KERNEL ? tn * scalar_size(D->type.s) * D->type.lanes : 0, factor = 1;
  bool channels = D->kind == D_KERNEL && D->type.lanes > 1;
  for (int i = 0; i < D->nparams; i++) {
    const Param *q = D->params[i];
    if (!q->is_image) continue;
    const Access *ac = &D->access[q->img_index];
    if (!ac->read_rel && !ac->read_abs && !ac->gather) continue;
    if (D->stage && q->index == D->stage_param) continue; /* a tile computed in the kernel */
    bytes += tin * scalar_size(q->type.s) * q->type.lanes;
    if (ac->read_abs && ac->abs_affine && !ac->read_rel && (ac->ax.cy || ac->ay.cx || ac->ax.cx < 0 || ac->ay.cy < 0))
      factor = strided[d];
    channels |= q->type.lanes > 1;
  }
  if (D->scan && D->kind == D_KERNEL) /* the prefix passes after the map */
    bytes += (D->scan == (SCAN_X | SCAN_Y) ? 2 : 1) * scalar_size(D->type.s) * D->type.lanes;
  const Metrics *m = &D->metrics;
  int slow = 0;
  ir_any(D->body, count_slow, &slow);
  if (D->combine) ir_any(D->combine, count_slow, &slow);
  double ops = m->arith - m->flops + m->reads, flops = m->flops + slow * (slow_op[d] - 1);
  if (D->sep && (!D->tile[0] || d == COST_CPU)) { /* GPUs run a tiler's window as written */
    double nx = D->sep->x1 - D->sep->x0 + 1, ny = D->sep->y1 - D->sep->y0 + 1;
    ops *= (nx + ny) / (nx * ny);
    flops *= (nx + ny) / (nx * ny);
  }
  double rate = 1;
  Counters counters = {.n = 0};
  ir_any(D->body, note_counter, &counters);
  if (!m->exact || ir_any(D->body, not_vectorised, NULL) || (D->combine && ir_any(D->combine, not_vectorised, NULL)))
    rate = 1 / dev->scalar;
  else if (ir_any(D->body, gathers, &counters))
    rate = 1 / gather[d];
  if (channels) rate /= interleaved[d];
  p->mem_s += n * bytes * factor / (n * bytes <= dev->cache ? dev->cache_bw : dev->bw);
  p->ops_s += n * (ops / dev->ops + flops / dev->flops) / rate + n * m->bins * bin_s[d];
  p->fixed_s += dev->launch + (D->kind == D_REDUCE ? dev->result : 0);
  p->bytes += bytes * n / (w * h);
  p->ops += (ops + flops) * n / (w * h);
  p->launches++;
}

/* The number of times loop l's body runs (nested loops multiply); an until loop's at most. */
static double runs(const Decl *P, int l, Prediction *p) {
  double k = 1;
  for (; l >= 0; l = P->loops[l].parent) {
    double c = literal(P->loops[l].count);
    k *= c >= 0 ? c : 1;
    p->bound |= P->loops[l].has_until || c < 0;
  }
  return k;
}

Prediction cost_predict(const Decl *D, const CostDevice *dev, int w, int h) {
  Prediction p = {0};
  if (w < 1 || h < 1) return p;
  if (D->kind != D_PIPELINE) {
    launch_cost(D, dev, w, h, &p);
  } else {
    for (int v = 0; v < D->nvalues; v++) {
      const PipeValue *pv = &D->values[v];
      if (!pv->callee || pv->fused) continue;
      Prediction one = {0};
      launch_cost(pv->callee, dev, w, h, &one);
      double k = runs(D, pv->loop, &p);
      p.mem_s += k * one.mem_s;
      p.ops_s += k * one.ops_s;
      p.fixed_s += k * one.fixed_s;
      p.bytes += k * one.bytes;
      p.ops += k * one.ops;
      p.launches += (int)fmin(k, 1e6) * one.launches;
    }
  }
  p.seconds = p.mem_s + p.ops_s + p.fixed_s;
  return p;
}

void cost_copies(const Decl *D, int w, int h, double *up, double *down) {
  double n = (double)w * h;
  *up = *down = 0;
  for (int i = 0; i < D->nparams; i++)
    if (D->params[i]->is_image) *up += n * scalar_size(D->params[i]->type.s) * D->params[i]->type.lanes;
  if (D->kind == D_HISTOGRAM) *down = 8.0 * D->nbins;
  else if (D->kind == D_REDUCE) *down = 8;
  else
    for (int k = 0; k < (D->nouts ? D->nouts : 1); k++) {
      Type t = D->nouts ? D->out_types[k] : D->type;
      double lw = D->kind == D_KERNEL ? literal(D->size_w) : -1, lh = D->kind == D_KERNEL ? literal(D->size_h) : -1;
      double pixels = lw > 0 && lh > 0 ? lw * lh : n;
      if (D->kind == D_KERNEL && D->tile[0]) /* a tiler: its repetitions' tiles */
        pixels = (lw > 0 && lh > 0 ? lw * lh : ceil((double)w / D->paving[0]) * ceil((double)h / D->paving[1])) *
                 D->tile[0] * D->tile[1];
      *down += pixels * scalar_size(t.s) * t.lanes;
    }
}

#define COST_REF_SIDE 4096 /* fusion is decided for images of this size */

bool cost_fusion_pays(const Decl *K, const Decl *C, const Decl *F, const CostDevice *dev) {
  double apart = cost_predict(K, dev, COST_REF_SIDE, COST_REF_SIDE).seconds +
                 cost_predict(C, dev, COST_REF_SIDE, COST_REF_SIDE).seconds;
  return cost_predict(F, dev, COST_REF_SIDE, COST_REF_SIDE).seconds <= apart;
}
