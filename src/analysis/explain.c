/*
 * explain.c - the report of `pxl check --explain`: per declaration its skeleton class,
 * the window or affine pattern of each image it reads, and per-pixel metrics.
 */
#include <stdio.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/cost.h"
#include "analysis/specialise.h"
#include "util/alloc.h"
#include "util/strbuf.h"

/* Prints an affine index such as "h - 1 - y" or "2*x + 1". */
static void affine_str(char *out, size_t n, Affine a) {
  const int64_t c[5] = {a.cx, a.cy, a.cw, a.ch, a.c0};
  const char *const names[5] = {"x", "y", "w", "h", ""};
  size_t k = 0;
  out[0] = 0;
  for (int i = 0; i < 5 && k < n; i++) {
    if (i == 4 && a.c1 != a.c0) { /* a range of constants: "2*x + -2..2" */
      k += (size_t)snprintf(out + k, n - k, "%s%lld..%lld", k ? " + " : "", (long long)a.c0, (long long)a.c1);
      break;
    }
    if (!c[i] && (i < 4 || k)) continue;
    long long mag = c[i] < 0 ? -(long long)c[i] : (long long)c[i];
    const char *sign = k ? (c[i] < 0 ? " - " : " + ") : (c[i] < 0 ? "-" : "");
    if (i == 4)
      k += (size_t)snprintf(out + k, n - k, "%s%lld", sign, mag);
    else if (mag == 1)
      k += (size_t)snprintf(out + k, n - k, "%s%s", sign, names[i]);
    else
      k += (size_t)snprintf(out + k, n - k, "%s%lld*%s", sign, mag, names[i]);
  }
}

/* A loop's count as written, where it is a literal or a parameter. */
static void count_str(StrBuf *b, const Node *n) {
  n = ir_strip_casts(n);
  if (n->kind == ND_NUM && !scalar_is_float(n->type.s))
    sb_printf(b, "%lld", (long long)n->ival);
  else if (n->kind == ND_VAR && n->var->param)
    sb_printf(b, "'%s'", n->var->name);
  else
    sb_printf(b, "(a count computed at run time)");
}

/* The line of a pipeline loop: the "iterated group" class, its count, the test and the
 * images it carries (the stages of its body follow, indented). */
static void loop_header(StrBuf *b, const Decl *D, const PipeLoop *L, int depth) {
  sb_printf(b, "%*s  iterated group (loop of line %d): %s ", 2 * depth, "", L->loc.line,
            L->has_until ? "at most" : "exactly");
  count_str(b, L->count);
  sb_printf(b, " iterations");
  if (L->has_until) {
    sb_printf(b, ", until unchanged(");
    for (int k = 0, n = 0; k < L->ncarry; k++)
      if (L->until[k]) sb_printf(b, "%s%s", n++ ? ", " : "", D->values[L->phi + k].name);
    sb_printf(b, ")");
  }
  sb_printf(b, "; carries");
  for (int k = 0; k < L->ncarry; k++) sb_printf(b, "%s %s", k ? "," : "", D->values[L->phi + k].name);
  sb_printf(b, "\n");
}

/* Park et al.'s six metrics (seed 002) as the analysis knows them before a run: the
 * parallel fraction (every pixel independent; reductions and histograms then combine
 * their partial results), floating-point operations per memory access and per pixel,
 * memory accesses per pixel (reads, and one write per output), branches per pixel (the
 * paper's branching diversity is a variance measured per warp: here only the branches
 * that could diverge are counted) and task dependency (launches in sequence). */
static void park_metrics(StrBuf *b, const Decl *D) {
  Metrics tm;
  const Metrics *m = &D->metrics;
  int writes = D->kind == D_KERNEL ? (D->nouts ? D->nouts : 1) : 0;
  if (D->tile[0]) { /* a tiler's counts are per tile: per output pixel here */
    double k = D->tile[0] * D->tile[1];
    tm = *m;
    tm.arith /= k, tm.flops /= k, tm.reads /= k, tm.branches /= k;
    m = &tm;
  }
  double access = m->reads + writes;
  int launches = 1 + (D->scan & SCAN_X ? 1 : 0) + (D->scan & SCAN_Y ? 1 : 0);
  sb_printf(b, "  Park's metrics: parallel fraction 1%s; FP per memory access %.2f; FP per pixel %.0f; memory "
            "accesses per pixel %.6g (%.6g reads, %d write%s); branches per pixel %.6g; task dependency %d launch%s\n",
            D->kind == D_REDUCE || D->kind == D_HISTOGRAM ? " (then a combine of partial results)" : "",
            access > 0 ? m->flops / access : 0.0, m->flops, access, m->reads, writes, writes == 1 ? "" : "s",
            m->branches, launches, launches == 1 ? "" : "es");
}

/* A tiler's lines: its tile, the input pattern's origin per repetition, the repetition
 * space, and the footprint of one tile in each image it reads at affine positions. */
static void tiler_lines(StrBuf *b, const Decl *D) {
  const Param *first = NULL;
  for (int k = 0; k < D->nparams && !first; k++)
    if (D->params[k]->is_image) first = D->params[k];
  sb_printf(b, "  tiler: a tile of %d x %d output pixels per repetition (x, y), at (%d*x, %d*y); its reads "
            "relative to (%d + %d*x, %d + %d*y) (origin (%d, %d), paving (%d, %d))\n", D->tile[0], D->tile[1],
            D->tile[0], D->tile[1], D->origin[0], D->paving[0], D->origin[1], D->paving[1], D->origin[0], D->origin[1],
            D->paving[0], D->paving[1]);
  const Node *w = ir_strip_casts(D->size_w);
  if (first && w && w->kind == ND_DIV && w->loc.line == D->loc.line && w->loc.col == D->loc.col) /* made by the checker */
    sb_printf(b, "  repetition space: ceil(%s.width / %d) x ceil(%s.height / %d); output %d x %d times that\n",
              first->name, D->paving[0], first->name, D->paving[1], D->tile[0], D->tile[1]);
  else
    sb_printf(b, "  repetition space: repeat() as written; output %d x %d times that\n", D->tile[0], D->tile[1]);
  for (int k = 0; k < D->nparams; k++) {
    const Param *pa = D->params[k];
    const Access *ac = pa->is_image ? &D->access[pa->img_index] : NULL;
    if (!ac || !ac->read_abs || !ac->abs_affine || ac->gather) continue;
    sb_printf(b, "  footprint of a tile in %s: %lld x %lld pixels\n", pa->name, (long long)(ac->ax.c1 - ac->ax.c0 + 1),
              (long long)(ac->ay.c1 - ac->ay.c0 + 1));
  }
}

/* A pipeline value's name for the report: its local name, else its kernel's. */
static const char *value_name(const Decl *P, int v) {
  return P->values[v].name ? P->values[v].name : P->values[v].callee ? P->values[v].callee->name : "(input)";
}

/* Prints the values fused, directly or not, into value c of fused pipeline F. */
static void fused_into(StrBuf *b, const Decl *F, int c, int *n) {
  for (int v = c - 1; v >= 0; v--)
    if (F->values[v].fused && F->values[v].into == c) {
      sb_printf(b, "%s%s", (*n)++ ? ", " : "", value_name(F, v));
      fused_into(b, F, v, n);
    }
}

/* The bytes per pixel pipeline P's launches read and write (each image a launch reads
 * once, whatever its window; images of one size; a loop's body once). */
static int bytes_per_pixel(const Decl *P) {
  int bytes = 0;
  for (int v = 0; v < P->nvalues; v++) {
    const PipeValue *pv = &P->values[v];
    if (!pv->callee || pv->fused || pv->carried >= 0) continue;
    if (pv->kind == PV_IMAGE) bytes += scalar_size(pv->type.s) * pv->type.lanes;
    for (int a = 0; a < pv->nargs; a++) {
      const Param *q = pv->callee->params[a];
      bool seen = pv->callee->stage && a == pv->callee->stage_param; /* a tile computed in the kernel */
      for (int e = 0; e < a; e++) seen |= pv->args[e].source == pv->args[a].source && pv->callee->params[e]->is_image;
      if (q->is_image && !seen) bytes += scalar_size(q->type.s) * q->type.lanes;
    }
  }
  return bytes;
}

/* The launches of pipeline P's stages (a loop's body once). */
static int launches(const Decl *P) {
  int n = 0;
  for (int v = 0; v < P->nvalues; v++)
    n += P->values[v].callee != NULL && P->values[v].carried < 0 && !P->values[v].fused;
  return n;
}

/* The fusion plan of pipeline P (its fused form F): which stages each kernel computes,
 * what it reads, and the launches and bytes moved before and after. */
static void fusion_plan(StrBuf *b, const Decl *P, const Decl *F, const char *where) {
  int before = launches(P), after = launches(F);
  char t[16];
  sb_printf(b, "  fused (%s; --no-fuse runs the stages as written): %d kernel%s instead of %d, "
            "%d bytes per pixel moved instead of %d\n", where, after, after == 1 ? "" : "s", before, bytes_per_pixel(F),
            bytes_per_pixel(P));
  for (int c = 0; c < F->nvalues; c++) {
    const PipeValue *cv = &F->values[c];
    if (cv->fused || !cv->callee || cv->callee == P->values[c].callee) continue;
    int n = 0;
    sb_printf(b, "    %s computes ", value_name(F, c));
    fused_into(b, F, c, &n);
    sb_printf(b, " in its kernel [%s], reading", skeleton_name(cv->callee->skel));
    for (int a = 0, k = 0; a < cv->nargs; a++) {
      const Param *q = cv->callee->params[a];
      if (!q->is_image) continue;
      const Access *ac = &cv->callee->access[q->img_index];
      sb_printf(b, "%s %s %s : %s", k++ ? "," : "", type_str(q->type, t), value_name(F, cv->args[a].source),
                border_name(cv->args[a].border.kind));
      if (ac->read_rel && ac->window_known) sb_printf(b, " (%dx%d)", ac->x1 - ac->x0 + 1, ac->y1 - ac->y0 + 1);
      if (cv->callee->stage && a == cv->callee->stage_param) sb_printf(b, " from a tile it computes in shared memory");
    }
    const Metrics *m = &cv->callee->metrics;
    sb_printf(b, "; per pixel %.0f arithmetic ops, %.0f memory reads\n", m->arith, m->reads);
  }
}

#define EXPLAIN_SIDE 4096 /* the image size of the predictions */

/* Whether two fused forms of a pipeline (NULL: nothing fused) fuse the same stages. */
static bool same_plan(const Decl *A, const Decl *B) {
  if (!A || !B) return A == B;
  for (int v = 0; v < A->nvalues; v++)
    if (A->values[v].fused != B->values[v].fused || (A->values[v].fused && A->values[v].into != B->values[v].into))
      return false;
  return true;
}

/* The cost model's line: the time of one run of D (a pipeline: its fused form per device
 * class, and D as written) per device class, and the copies a GPU run from host images
 * adds. */
static void predictions(StrBuf *b, const Decl *D) {
  sb_printf(b, "  predicted at %dx%d (cost model):", EXPLAIN_SIDE, EXPLAIN_SIDE);
  bool bound = false;
  for (int d = 0; d < COST_NDEVICES; d++) {
    const Decl *F = D->kind == D_PIPELINE ? D->fused[d] : NULL;
    Prediction p = cost_predict(F ? F : D, &cost_devices[d], EXPLAIN_SIDE, EXPLAIN_SIDE);
    bound |= p.bound;
    sb_printf(b, "%s %s %.3g ms", d ? ";" : "", cost_devices[d].name, p.seconds * 1e3);
    if (F) sb_printf(b, " (as written %.3g)", cost_predict(D, &cost_devices[d], EXPLAIN_SIDE, EXPLAIN_SIDE).seconds * 1e3);
  }
  double up, down;
  cost_copies(D, EXPLAIN_SIDE, EXPLAIN_SIDE, &up, &down);
  sb_printf(b, "%s\n  host<->device copies of a GPU run from host images: %.3g MB in, %.3g MB out (%.3g ms)\n",
            bound ? "; until loops at their largest count" : "", up / 1e6, down / 1e6,
            (up + down) / cost_devices[COST_GPU].link * 1e3);
}

const char *explain_program(Program *p) {
  StrBuf b = {0};
  static const char *const kinds[] = {"kernel", "reduce", "histogram", "pipeline"};
  for (int i = 0; i < p->ndecls; i++) {
    Decl *D = p->decls[i];
    char t[16];
    char inst[48] = "";
    if (D->tparam) snprintf(inst, sizeof inst, " (generic, %s = %s)", D->tparam, type_str(D->targ, t));
    sb_printf(&b, "%s %s%s: %s\n", D->global ? "global" : D->scan ? "scan" : kinds[D->kind], D->name, inst,
              skeleton_name(D->skel));
    if (D->global) {
      GlobalOp g = (GlobalOp)(D->global - 1);
      sb_printf(&b, "  operator %s over %s", global_name(g), global_arity(g) == 1 ? "the map" : "the maps");
      for (int k = 0; k < global_arity(g); k++)
        sb_printf(&b, "%s a %s kernel of %s pixels", k ? " and" : ",", skeleton_name(D->gmap[k]->skel),
                  type_str(D->gmap[k]->type, t));
      sb_printf(&b, " (%s); the pass, %s, may make each output pixel depend on every pixel of the maps; their reads:\n",
                global_map_kind(g) == GM_FEATURE ? "1 where the value is nonzero" : "the values",
                global_on_device(g) ? "on the device on CUDA (runtime/cuda/ops.cu), else in the operator library "
                                      "(src/ops) on the host"
                                    : "in the operator library (src/ops) on the host for every device");
    }
    if (D->scan)
      sb_printf(&b, "  prefix %s in %s: %s\n", redop_name(D->redop), type_str(D->type, t),
                D->scan == SCAN_X ? "along each row (x), left to right"
                : D->scan == SCAN_Y ? "along each column (y), top to bottom"
                                    : "rows left to right, then columns top to bottom");
    if (D->nouts && D->kind == D_KERNEL) {
      sb_printf(&b, "  outputs:");
      for (int k = 0; k < D->nouts; k++)
        sb_printf(&b, "%s image %s %s", k ? "," : "", type_str(D->out_types[k], t), D->out_names[k]);
      sb_printf(&b, " (the same size; compiled backends run one pass per output)\n");
    }
    if (D->nouts && D->kind == D_PIPELINE) {
      sb_printf(&b, "  returns:");
      for (int k = 0; k < D->nouts; k++)
        sb_printf(&b, "%s image %s %s", k ? "," : "", type_str(D->out_types[k], t),
                  D->values[D->results[k]].name ? D->values[D->results[k]].name : "(anonymous)");
      sb_printf(&b, "\n");
    }
    if (D->kind == D_PIPELINE) {
      for (int v = 0; v < D->nvalues; v++) {
        PipeValue *pv = &D->values[v];
        int depth = 0;
        for (int l = pv->loop; l >= 0; l = D->loops[l].parent) depth++;
        if (pv->carried >= 0 && D->loops[pv->carried].phi == v) loop_header(&b, D, &D->loops[pv->carried], depth);
        if (!pv->callee) continue;
        sb_printf(&b, "%*s  %s %s = %s(", 2 * depth, "", pv->kind == PV_IMAGE ? "stage" : "value",
                  pv->name ? pv->name : "(anonymous)", pv->callee->name);
        for (int a = 0; a < pv->nargs; a++) {
          PipeArg *pa = &pv->args[a];
          if (pa->source >= 0 && D->values[pa->source].kind == PV_ARRAY)
            sb_printf(&b, "%s%s", a ? ", " : "", D->values[pa->source].name);
          else if (pa->source >= 0)
            sb_printf(&b, "%s%s : %s", a ? ", " : "", D->values[pa->source].name ? D->values[pa->source].name : "(call)",
                border_name(pa->border.kind));
          else
            sb_printf(&b, "%sscalar", a ? ", " : "");
        }
        if (pv->kind == PV_ARRAY)
          sb_printf(&b, ") -> %s[%d] [%s]\n", type_str(pv->type, t), pv->len, skeleton_name(pv->callee->skel));
        else
          sb_printf(&b, ") -> %s%s [%s]", pv->kind == PV_IMAGE ? "image " : "", type_str(pv->type, t),
                    skeleton_name(pv->callee->skel));
        if (pv->nouts) sb_printf(&b, " output %d of %d", pv->out + 1, pv->nouts);
        if (pv->kind != PV_ARRAY) sb_printf(&b, "\n");
      }
      const Decl *Fc = D->fused[COST_CPU], *Fg = D->fused[COST_GPU];
      bool same = same_plan(Fc, Fg);
      if (same && Fc) fusion_plan(&b, D, Fc, "every device but ref");
      for (int d = 0; !same && d < COST_NDEVICES; d++) {
        const char *where = d == COST_CPU ? "on the CPU" : "on GPUs";
        if (D->fused[d]) fusion_plan(&b, D, D->fused[d], where);
        else sb_printf(&b, "  fused (%s): none, the cost model predicts no gain\n", where);
      }
      int as_written = launches(D), fused = Fc ? launches(Fc) : as_written, fused_gpu = Fg ? launches(Fg) : as_written;
      sb_printf(&b, "  task dependency: %d launch%s in sequence", fused, fused == 1 ? "" : "es");
      if (fused_gpu != fused) sb_printf(&b, " on the CPU, %d on GPUs", fused_gpu);
      if (fused != as_written || fused_gpu != as_written) sb_printf(&b, " (%d as written)", as_written);
      sb_printf(&b, "%s\n", D->nloops ? ", a loop's body counted once" : "");
      predictions(&b, D);
      continue;
    }
    for (int k = 0; k < D->nparams; k++) {
      Param *pa = D->params[k];
      if (!pa->is_image) continue;
      Access *ac = &D->access[pa->img_index];
      sb_printf(&b, "  image %s %s:", type_str(pa->type, t), pa->name);
      if (ac->read_rel && ac->window_known)
        sb_printf(&b, " window dx %d..%d, dy %d..%d (%dx%d)", ac->x0, ac->x1, ac->y0, ac->y1, ac->x1 - ac->x0 + 1,
            ac->y1 - ac->y0 + 1);
      if (ac->read_abs && ac->abs_affine) {
        char ax[96], ay[96];
        affine_str(ax, sizeof ax, ac->ax);
        affine_str(ay, sizeof ay, ac->ay);
        sb_printf(&b, " affine read at (%s, %s)", ax, ay);
      }
      if (ac->gather) sb_printf(&b, " data-dependent reads (gather)");
      if (!ac->read_rel && !ac->read_abs && !ac->gather) sb_printf(&b, " not read");
      sb_printf(&b, "; border %s\n", border_name(pa->border.kind));
    }
    if (D->tile[0]) tiler_lines(&b, D);
    if (D->spec_mask) {
      sb_printf(&b, "  specialised when run on the values of");
      for (int k = 0, n = 0; k < D->nparams; k++) {
        Param *pa = D->params[k];
        if (!pa->is_image && pa->scalar_index < 32 && (D->spec_mask >> pa->scalar_index & 1))
          sb_printf(&b, "%s %s", n++ ? "," : "", pa->name);
      }
      sb_printf(&b, ": a window of known size where they bound it (radius up to %d), else this gather\n",
                SPEC_MAX_RADIUS);
    }
    if (D->sep)
      sb_printf(&b, "  separable: %d column pass%s over %d rows, then a row pass over %d columns\n", D->sep->nacc,
                D->sep->nacc == 1 ? "" : "es", D->sep->y1 - D->sep->y0 + 1, D->sep->x1 - D->sep->x0 + 1);
    Metrics *m = &D->metrics;
    sb_printf(&b, "  per %s: %.0f arithmetic ops (%.0f floating point), %.0f memory reads, %.0f branches%s\n",
        D->tile[0] ? "tile" : "pixel", m->arith, m->flops, m->reads, m->branches,
        m->exact ? "" : " (loops with run-time bounds counted once)");
    if (m->reads > 0) sb_printf(&b, "  arithmetic per read: %.2f\n", m->arith / m->reads);
    park_metrics(&b, D);
    predictions(&b, D);
  }
  if (b.oom || !b.s) {
    sb_free(&b);
    return "out of memory\n";
  }
  char *r = arena_strndup(p->arena, b.s, b.len);
  sb_free(&b);
  return r ? r : "out of memory\n";
}
