/*
 * gpu_core.c - see gpu_core.h.
 */
#include "runtime/gpu/gpu_core.h"

#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"
#include "util/hash.h"
#include "util/strbuf.h"

/* ---- modules and instances ---- */

/* The module of D with these borders and tile shape: from memory, else generated, built
 * and loaded by the driver. */
static int load_source(GpuCore *g, const Decl *D, StrBuf src, GpuLaunch launch, GpuModule **out, Err *err);

static int load_module(GpuCore *g, const Decl *D, const Border *borders, const GpuTile *tile, GpuModule **out,
                       Err *err) {
  StrBuf src = {0};
  GpuLaunch launch;
  int rc = gen_gpu_stage(&src, D, borders, g->drv->dialect, tile, &launch, err);
  if (rc) {
    sb_free(&src);
    return rc;
  }
  return load_source(g, D, src, launch, out, err);
}

/* The module of generated unit src (freed here) of D: from memory, else built and loaded. */
static int load_source(GpuCore *g, const Decl *D, StrBuf src, GpuLaunch launch, GpuModule **out, Err *err) {
  const GpuDriver *drv = g->drv;
  int rc = PXL_OK;
  if (src.oom) rc = err_set(err, PXL_ENOMEM, "out of memory");
  if (!rc && drv->check) rc = drv->check(g, D, src.s, err);
  if (rc) {
    sb_free(&src);
    return rc;
  }
  uint64_t key = hash_bytes(HASH_INIT, src.s, src.len);
  for (GpuModule *m = g->mods; m; m = m->next)
    if (m->key == key) {
      sb_free(&src);
      *out = m;
      return PXL_OK;
    }
  void *prog = NULL, *fn = NULL;
  rc = drv->load(g, D, src.s, src.len, &prog, &fn, err);
  sb_free(&src);
  if (rc) return rc;
  GpuModule *m = PXL_CALLOC(1, sizeof *m);
  if (!m) {
    drv->unload(g, prog, fn);
    return err_set(err, PXL_ENOMEM, "out of memory");
  }
  *m = (GpuModule){g->mods, key, prog, fn, launch};
  g->mods = m;
  *out = m;
  return PXL_OK;
}

static int load_cb(void *be, const Decl *D, const Border *borders, const GpuTile *tile, GpuLoaded *out, Err *err) {
  GpuModule *m = NULL;
  int rc = load_module(be, D, borders, tile, &m, err);
  if (!rc) *out = (GpuLoaded){m, m->key, m->launch.tiled};
  return rc;
}

static int get_instance(GpuCore *g, const Decl *D, const ImgArg *imgs, int w, int h, GpuInstance **out, Err *err) {
  return gpu_instance_get(&g->instances, &g->tuner, g->drv->name, D, imgs, w, h, load_cb, g, out, err);
}

/* A kernel run's arguments, for timing candidates. */
typedef struct {
  const GpuArgs *c;
  int w, h;
} Run;

static int time_cb(void *be, void *module, void *run, double *ms, Err *err) {
  GpuCore *g = be;
  const Run *k = run;
  return g->drv->time(g, module, k->w, k->h, k->c, ms, err);
}

/* ---- arguments and launches ---- */

static GpuKImage kimage(const struct pxl_image *img) {
  return (GpuKImage){(uint64_t)(uintptr_t)img->data, img->width, img->height, (int64_t)img->pitch};
}

static int need(GpuCore *g, GpuBuf *b, size_t n, Err *err);

/* The kept bins that host array `bins` stands for, or NULL. */
static GpuKept *kept_of(GpuCore *g, const Lane *bins) {
  for (int i = 0; bins && i < PXL_GPU_KEPT; i++)
    if (g->kept[i].key == bins) return &g->kept[i];
  return NULL;
}

/* The elements of D's array parameters, uploaded into g->prm (each pxlc_scalar[len + 1],
 * the last 0; f32 values as floats where f32_float), and their addresses or byte offsets
 * in c's scalar slots. One upload per launch that has array parameters: a few KiB.
 * Histograms' bins kept on the device (histogram_keep) are not uploaded: a pointer
 * dialect passes the kept buffer's address, a buffer dialect copies it into g->prm. */
static int pack_arrays(GpuCore *g, const Decl *D, const Lane *scalars, GpuArgs *c, Err *err) {
  size_t total = 0, sent = 0; /* elements in g->prm; of them uploaded from the host */
  for (int i = 0; i < D->nparams; i++) {
    const Param *p = D->params[i];
    if (!p->len) continue;
    const GpuKept *k = kept_of(g, scalars[p->scalar_index].arr);
    if (k && (k->buf.size != ((size_t)p->len + 1) * sizeof(GpuKScalar) || scalar_is_float(p->type.s)))
      return err_set(err, PXL_ERROR, "internal: %s's array %s cannot take the bins kept on the device", D->name,
                     p->name);
    if (k && !g->base.buffer_images) {
      c->a.sc[p->scalar_index].i = (int64_t)(uintptr_t)k->buf.p;
      continue;
    }
    total += (size_t)p->len + 1;
    if (!k) sent = total;
  }
  if (!total) return PXL_OK;
  if (!g->drv->upload)
    return err_set(err, PXL_EDEVICE, "%s: the %s backend takes no array parameters", D->name, g->drv->name);
  int rc = need(g, &g->prm, total * sizeof(GpuKScalar), err);
  if (rc) return rc;
  GpuKScalar *blob = PXL_CALLOC(total, sizeof(GpuKScalar));
  if (!blob) return err_set(err, PXL_ENOMEM, "out of memory");
  size_t at = 0; /* in elements */
  for (int i = 0; i < D->nparams; i++) {
    const Param *p = D->params[i];
    if (!p->len) continue;
    const Lane *v = scalars[p->scalar_index].arr;
    const GpuKept *k = kept_of(g, v);
    if (k && !g->base.buffer_images) continue; /* its address, above */
    uint64_t off = at * sizeof(GpuKScalar);
    c->a.sc[p->scalar_index].i = (int64_t)(g->base.buffer_images ? off : (uint64_t)(uintptr_t)g->prm.p + off);
    for (int e = 0; !k && e < p->len; e++) {
      GpuKScalar *d = &blob[at + (size_t)e];
      if (p->type.s == T_F32 && g->f32_float) d->f32 = (float)v[e].f;
      else if (scalar_is_float(p->type.s)) d->f = v[e].f;
      else d->i = v[e].i;
    }
    at += (size_t)p->len + 1;
  }
  if (sent) rc = g->drv->upload(g, &g->prm, blob, sent * sizeof(GpuKScalar), err);
  PXL_FREE(blob);
  /* buffer dialects: the kept bins over their zeros, queued after the upload */
  at = 0;
  for (int i = 0; i < D->nparams && !rc && g->base.buffer_images; i++) {
    const Param *p = D->params[i];
    if (!p->len) continue;
    const GpuKept *k = kept_of(g, scalars[p->scalar_index].arr);
    if (k) rc = g->drv->copy_buf(g, &g->prm, at * sizeof(GpuKScalar), &k->buf, k->buf.size, err);
    at += (size_t)p->len + 1;
  }
  c->buf[GPU_ARG_PRM] = g->prm.p;
  return rc;
}

/* The images and scalars of a stage in c (f32 scalars as floats where f32_float:
 * PXR_SCALAR_FLOAT); a buffer dialect's images must be buffers. */
static int pack(GpuCore *g, const Decl *D, const ImgArg *imgs, const Lane *scalars, const char *kind, GpuArgs *c,
                Err *err) {
  memset(c, 0, sizeof *c);
  c->kind = kind;
  c->name = D->name;
  for (int i = 0; i < D->nimages; i++) {
    const struct pxl_image *img = imgs[i].img;
    if (g->base.buffer_images && !img->buffer)
      return err_set(err, PXL_EARG, "%s: image %d is not an %s buffer", D->name, i, g->drv->name);
    c->buf[i] = img->buffer;
    c->a.in[i] = kimage(img);
  }
  for (int i = 0; i < D->nparams; i++) {
    const Param *p = D->params[i];
    if (p->is_image || p->len) continue;
    if (p->type.s == T_F32 && g->f32_float) c->a.sc[p->scalar_index].f32 = (float)scalars[p->scalar_index].f;
    else if (scalar_is_float(p->type.s)) c->a.sc[p->scalar_index].f = scalars[p->scalar_index].f;
    else c->a.sc[p->scalar_index].i = scalars[p->scalar_index].i;
  }
  return pack_arrays(g, D, scalars, c, err);
}

/* Passes aux and the result buffer: as buffer arguments, or as addresses in pxl_kargs. */
static void bind(const GpuCore *g, GpuArgs *c, const GpuBuf *aux) {
  if (g->base.buffer_images) {
    c->buf[GPU_ARG_AUX] = aux->p;
    c->buf[GPU_ARG_RES] = g->res.p;
  } else {
    c->a.aux = (uint64_t)(uintptr_t)aux->p;
    c->a.res = (uint64_t)(uintptr_t)g->res.p;
  }
}

/* pack() for a kernel writing image out: its buffer and shape in c too. */
static int pack_out(GpuCore *g, const Decl *D, const ImgArg *imgs, const Lane *scalars, const char *kind,
                    struct pxl_image *out, GpuArgs *c, Err *err) {
  int rc = pack(g, D, imgs, scalars, kind, c, err);
  if (rc) return rc;
  c->buf[GPU_ARG_OUT] = out->buffer;
  c->a.out = kimage(out);
  return PXL_OK;
}

/* Buffer b of at least n bytes (aux buffers zero-filled when (re)allocated). */
static int need(GpuCore *g, GpuBuf *b, size_t n, Err *err) {
  return b->size >= n ? PXL_OK : g->drv->alloc(g, b, n, err);
}

static size_t ceil_div(int64_t a, int64_t b) { return (size_t)((a + b - 1) / b); }

int gpu_core_launch(GpuCore *g, const GpuModule *m, int w, int h, const GpuArgs *a, Err *err) {
  const GpuLaunch *L = &m->launch;
  size_t gx = 1, gy = 1;
  if (L->grid == GPU_GRID_TILES) {
    gx = ceil_div(w, (int64_t)L->bx * L->px);
    gy = ceil_div(h, (int64_t)L->by * L->py);
    /* Within a run, tile grids alternate direction launch by launch (core_run_begin):
     * what a launch read or wrote last is still in L2 when the next one starts with it
     * (a 64 MiB image overflows the 50 MiB L2 of an H100 or H200). Every tile is
     * computed alone, so the order never changes a result. */
    GpuArgs c = *a;
    c.a.flip = g->flip_mode == 2 || (g->flip_mode == 1 && g->flip);
    g->flip = !g->flip;
    return g->drv->launch(g, m, gx, gy, &c, err);
  } else if (L->grid == GPU_GRID_ROWS) {
    gx = (size_t)(h < L->chunks ? h : L->chunks);
  } else if (L->grid == GPU_GRID_BANDS) {
    gy = ceil_div(h, (int64_t)L->by * L->py);
  } else if (L->grid == GPU_GRID_COLUMNS) {
    gx = ceil_div(w, (int64_t)L->bx * L->px);
  }
  return g->drv->launch(g, m, gx, gy, a, err);
}

/* ---- the Backend's entry points ---- */

/* The modules of a scan's prefix passes, per (D, borders): generating their text (four
 * units with the map's functions for a fused scan) cost ~42 us of host time per run. */
typedef struct {
  Instance base;
  int n;
  GpuModule *mods[PXL_GPU_SCAN_MAX_PASSES];
} GpuScanInstance;

/* The prefix passes of scan D (borders: its images', normalised) in out (c: the map's
 * arguments), in gen_gpu_scan_passes' order, each over the output, with the band totals
 * of the parallel column passes in g->scan: after the map, or computing it (fused). */
static int scan_passes(GpuCore *g, const Decl *D, const Border *borders, GpuArgs *c, const struct pxl_image *out,
                       Err *err) {
  size_t aux = gen_gpu_scan_aux(D, out->width, out->height);
  if (aux) {
    int rc = need(g, &g->scan, aux, err);
    if (rc) return rc;
    bind(g, c, &g->scan);
  }
  c->kind = "scan";
  GpuScanInstance made = {0}, *in = (GpuScanInstance *)instance_find(g->scans, D, borders, 0);
  if (!in) {
    GpuScanPass passes[PXL_GPU_SCAN_MAX_PASSES];
    made.n = gen_gpu_scan_passes(D, passes);
    for (int i = 0; i < made.n; i++) {
      StrBuf src = {0};
      GpuLaunch launch;
      int rc = gen_gpu_scan(&src, D, borders, g->drv->dialect, passes[i], &launch, err);
      if (rc) {
        sb_free(&src);
        return rc;
      }
      if ((rc = load_source(g, D, src, launch, &made.mods[i], err))) return rc;
    }
    /* remembered (the modules stay loaded until the backend closes); where the record
     * cannot be made (out of memory, too many images), made again next time */
    GpuScanInstance *kept = (GpuScanInstance *)instance_new(D, borders, 0, sizeof *kept);
    if (kept) {
      kept->n = made.n;
      memcpy(kept->mods, made.mods, sizeof made.mods);
      instance_link(&g->scans, &kept->base);
    }
    in = &made;
  }
  for (int i = 0; i < in->n; i++) {
    int rc = gpu_core_launch(g, in->mods[i], out->width, out->height, c, err);
    if (rc) return rc;
  }
  return PXL_OK;
}

static int core_kernel(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars, struct pxl_image *out,
                       Err *err) {
  GpuCore *g = (GpuCore *)be;
  if (g->drv->enter) g->drv->enter(g);
  GpuInstance *in;
  GpuArgs c;
  int rc;
  if (D->scan && gen_gpu_scan_fused(D)) { /* no map entry: the passes compute it */
    if ((rc = gen_gpu_limits(D, g->drv->dialect, err))) return rc;
    Border borders[PXL_GPU_MAX_IMAGES];
    stage_borders(D, imgs, out->width, out->height, borders);
    if ((rc = pack_out(g, D, imgs, scalars, "scan", out, &c, err))) return rc;
    return scan_passes(g, D, borders, &c, out, err);
  }
  rc = get_instance(g, D, imgs, out->width, out->height, &in, err);
  if (!rc) rc = pack_out(g, D, imgs, scalars, "tune", out, &c, err);
  if (rc) return rc;
  Run run = {&c, out->width, out->height};
  if (in->tune && (rc = gpu_instance_tune(&g->tuner, in, D, load_cb, time_cb, g, &run, err))) return rc;
  c.kind = "kernel";
  rc = gpu_core_launch(g, in->base.module, out->width, out->height, &c, err);
  return rc || !D->scan ? rc : scan_passes(g, D, in->base.borders, &c, out, err);
}

/* What a reduction or histogram run needs before its launch: the instance over the first
 * image, the arguments, the auxiliary buffer aux (aux_size bytes) and the result buffer
 * (res_size bytes), bound to the arguments. */
static int prepare_fold(GpuCore *g, const Decl *D, const ImgArg *imgs, const Lane *scalars, const char *kind,
                        GpuBuf *aux, size_t aux_size, size_t res_size, GpuInstance **in, GpuArgs *c, Err *err) {
  if (g->drv->enter) g->drv->enter(g);
  int rc = get_instance(g, D, imgs, imgs[0].img->width, imgs[0].img->height, in, err);
  if (!rc) rc = pack(g, D, imgs, scalars, kind, c, err);
  if (!rc) rc = need(g, aux, aux_size, err);
  if (!rc) rc = need(g, &g->res, res_size, err);
  if (!rc) bind(g, c, aux);
  return rc;
}

static int core_reduce(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars, RedResult *res,
                       Err *err) {
  GpuCore *g = (GpuCore *)be;
  GpuInstance *in;
  GpuArgs c;
  int rc = prepare_fold(g, D, imgs, scalars, "reduce", &g->red, PXL_GPU_AUX_REDUCE, 16, &in, &c, err);
  if (rc) return rc;
  rc = gpu_core_launch(g, in->base.module, imgs[0].img->width, imgs[0].img->height, &c, err);
  unsigned char out[16];
  if (!rc) rc = g->drv->fetch(g, &g->res, sizeof out, false, out, D->name, err);
  if (rc) return rc;
  if (D->type.s == T_F32 && g->f32_float) { /* a float in the slot (PXR_SCALAR_FLOAT): widen it as Lane holds it */
    float f;
    memcpy(&f, out, sizeof f);
    double d = f;
    memcpy(out, &d, sizeof d);
  }
  gpu_reduce_result(out, D->type.s, res);
  return PXL_OK;
}

/* An until test (loops.c) that leaves the queue running: the reduction writes its value
 * to tres (host memory; test_queue, which a recording may hold) and the driver marks the
 * queue after it (test_mark); test_end waits for the mark only. */
static int core_test_queue(Backend *be, const Decl *D, const ImgArg *imgs, Err *err) {
  GpuCore *g = (GpuCore *)be;
  GpuInstance *in;
  GpuArgs c;
  int rc = prepare_fold(g, D, imgs, NULL, "reduce", &g->red, PXL_GPU_AUX_REDUCE, 16, &in, &c, err);
  if (!rc) rc = need(g, &g->tres, 16, err);
  if (rc) return rc;
  c.a.res = (uint64_t)(uintptr_t)g->tres.p;
  return gpu_core_launch(g, in->base.module, imgs[0].img->width, imgs[0].img->height, &c, err);
}

static int core_test_mark(Backend *be, Err *err) {
  GpuCore *g = (GpuCore *)be;
  return g->drv->mark(g, err);
}

static int core_test_end(Backend *be, uint64_t *value, Err *err) {
  GpuCore *g = (GpuCore *)be;
  int rc = g->drv->wait_mark(g, err);
  if (!rc) memcpy(value, g->tres.p, sizeof *value);
  return rc;
}

/* ---- until tests computed by the loop's kernel (Backend.test_kernel_ok, kernel_test) ---- */

/* The load and time callbacks' `be` for the kernels reporting a change of image carried. */
typedef struct {
  GpuCore *g;
  int carried;
} TestLoad;

static int load_test_cb(void *be, const Decl *D, const Border *borders, const GpuTile *tile, GpuLoaded *out,
                        Err *err) {
  const TestLoad *t = be;
  StrBuf src = {0};
  GpuLaunch launch;
  GpuModule *m = NULL;
  int rc = gen_gpu_stage_test(&src, D, borders, t->g->drv->dialect, tile, t->carried, &launch, err);
  if (rc) sb_free(&src);
  else rc = load_source(t->g, D, src, launch, &m, err);
  if (!rc) *out = (GpuLoaded){m, m->key, m->launch.tiled};
  return rc;
}

static int time_test_cb(void *be, void *module, void *run, double *ms, Err *err) {
  return time_cb(((TestLoad *)be)->g, module, run, ms, err);
}

static bool core_test_kernel_ok(Backend *be, const Decl *D, const ImgArg *imgs, int carried) {
  (void)be;
  if (carried < 0 || carried >= D->nimages || D->nimages > PXL_GPU_MAX_IMAGES) return false;
  Border borders[PXL_GPU_MAX_IMAGES];
  const struct pxl_image *c = imgs[carried].img;
  stage_borders(D, imgs, c->width, c->height, borders);
  return gen_gpu_test_ok(D, borders, carried);
}

/* Kernel D into out; with `test`, whether a pixel of out differs from imgs[carried]'s is
 * then a test in flight (test_end gives 1 if so). Untested launches run D's own module. */
static int core_kernel_test(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars, int carried,
                            bool test, struct pxl_image *out, Err *err) {
  GpuCore *g = (GpuCore *)be;
  if (!test) return core_kernel(be, D, imgs, scalars, out, err);
  if (g->drv->enter) g->drv->enter(g);
  if (carried < 0 || carried >= PXL_GPU_MAX_IMAGES)
    return err_set(err, PXL_ERROR, "internal: %s has no image %d to test", D->name, carried);
  TestLoad tl = {g, carried};
  GpuInstance *in;
  GpuArgs c;
  int rc = gpu_instance_get(&g->tested[carried], &g->tuner, g->drv->name, D, imgs, out->width, out->height,
                            load_test_cb, &tl, &in, err);
  if (!rc) rc = pack_out(g, D, imgs, scalars, "tune", out, &c, err);
  if (!rc) rc = need(g, &g->tres, 16, err);
  if (!rc) rc = need(g, &g->tword, 8, err);
  if (rc) return rc;
  Run run = {&c, out->width, out->height}; /* timed without a.res: nothing reported */
  if (in->tune && (rc = gpu_instance_tune(&g->tuner, in, D, load_test_cb, time_test_cb, &tl, &run, err))) return rc;
  c.kind = "kernel";
  memset(g->tres.p, 0, 16); /* no test is in flight (one at a time): the host may write it */
  c.a.res = (uint64_t)(uintptr_t)g->tres.p;
  c.a.aux = (uint64_t)(uintptr_t)g->tword.p;
  c.a.n = (int64_t)++g->ntests; /* never 0, the word's first value */
  rc = gpu_core_launch(g, in->base.module, out->width, out->height, &c, err);
  return rc ? rc : g->drv->mark(g, err);
}

/* ---- iterated stencils (Backend.steps_max, kernel_steps) ---- */

typedef struct {
  Instance base; /* base.module: the GpuModule, NULL until the first run */
  bool ok;       /* gen_gpu_steps_plan accepted it */
  GpuSteps plan;
} GpuStepsInstance;

/* The memo record of D stepping image `carried` over imgs (planned, not built). */
static GpuStepsInstance *steps_instance(GpuCore *g, const Decl *D, const ImgArg *imgs, int carried) {
  if (D->nimages > PXL_GPU_MAX_IMAGES || carried < 0 || carried >= D->nimages) return NULL;
  Border borders[PXL_GPU_MAX_IMAGES];
  const struct pxl_image *c = imgs[carried].img;
  stage_borders(D, imgs, c->width, c->height, borders);
  Instance *found = instance_find(g->steps, D, borders, carried);
  if (found) return (GpuStepsInstance *)found;
  GpuStepsInstance *in = (GpuStepsInstance *)instance_new(D, borders, carried, sizeof *in);
  if (!in) return NULL;
  in->ok = gen_gpu_steps_plan(D, borders, carried, &in->plan);
  instance_link(&g->steps, &in->base);
  return in;
}

static int core_steps_max(Backend *be, const Decl *D, const ImgArg *imgs, int carried) {
  GpuStepsInstance *in = steps_instance((GpuCore *)be, D, imgs, carried);
  return in && in->ok ? in->plan.k : 0;
}

static int core_kernel_steps(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars, int carried,
                             int steps, bool test, struct pxl_image *out, Err *err) {
  GpuCore *g = (GpuCore *)be;
  if (g->drv->enter) g->drv->enter(g);
  GpuStepsInstance *in = steps_instance(g, D, imgs, carried);
  if (!in || !in->ok || steps < 1 || steps > in->plan.k)
    return err_set(err, PXL_ERROR, "internal: %s cannot run %d steps of a loop in one launch", D->name, steps);
  int rc = PXL_OK;
  if (!in->base.module) {
    StrBuf src = {0};
    GpuLaunch launch;
    GpuModule *m = NULL;
    rc = gen_gpu_steps(&src, D, in->base.borders, g->drv->dialect, &in->plan, &launch, err);
    if (rc) sb_free(&src);
    else rc = load_source(g, D, src, launch, &m, err);
    if (rc) return rc;
    in->base.module = m;
  }
  GpuArgs c;
  rc = pack_out(g, D, imgs, scalars, "kernel", out, &c, err);
  if (!rc && test) rc = need(g, &g->tres, 16, err);
  if (rc) return rc;
  c.a.n = steps;
  if (test) { /* no test is in flight (one at a time): the host may write it */
    memset(g->tres.p, 0, 16);
    c.a.res = (uint64_t)(uintptr_t)g->tres.p;
  }
  rc = gpu_core_launch(g, in->base.module, out->width, out->height, &c, err);
  return rc || !test ? rc : g->drv->mark(g, err);
}

static int core_histogram(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars, Lane *bins,
                          Err *err) {
  GpuCore *g = (GpuCore *)be;
  GpuInstance *in;
  GpuArgs c;
  size_t n = (size_t)D->nbins * sizeof(Lane);
  int rc = prepare_fold(g, D, imgs, scalars, "histogram", &g->hist, n + 16, n, &in, &c, err);
  if (rc) return rc;
  const GpuModule *m = in->base.module;
  rc = gpu_core_launch(g, m, imgs[0].img->width, imgs[0].img->height, &c, err);
  if (rc) return rc;
  /* the kernel wrote the bins to res, or left them in aux: bring them back, leave them zero */
  if (m->launch.to_host) return g->drv->fetch(g, &g->res, n, false, bins, D->name, err);
  rc = g->drv->fetch(g, &g->hist, n, true, bins, D->name, err);
  if (!rc) hist_keys_to_values(D, bins); /* minima and maxima come as keys */
  return rc;
}

/* A counting histogram (its kernel hands the bins over itself: launch.to_host) writes
 * them into a kept buffer of nbins + 1 int64 instead of the result buffer; the last
 * element stays the 0 the buffer was made with. Buffers are reused by size; the
 * launches that read one were queued before the next histogram that writes it. */
static int core_histogram_keep(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars, const Lane *bins,
                               bool *kept, Err *err) {
  GpuCore *g = (GpuCore *)be;
  *kept = false;
  size_t n = ((size_t)D->nbins + 1) * sizeof(GpuKScalar);
  /* a free buffer of this size, else a slot without one (a buffer of another size is not
   * freed: launches queued by an earlier run may still read it) */
  GpuKept *k = NULL;
  int best = 0;
  for (int i = 0; i < PXL_GPU_KEPT; i++) {
    const GpuKept *f = &g->kept[i];
    int score = f->key ? 0 : f->buf.size == n ? 2 : !f->buf.p ? 1 : 0;
    if (score > best) best = score, k = &g->kept[i];
  }
  if (!k || kept_of(g, bins)) return PXL_OK;
  GpuInstance *in;
  GpuArgs c;
  size_t nb = (size_t)D->nbins * sizeof(Lane);
  /* whether its kernel hands the bins over itself, before anything is packed: else the
   * caller's `histogram` packs and uploads the stage's arrays (the memo finds the
   * instance again) */
  if (g->drv->enter) g->drv->enter(g);
  int rc = get_instance(g, D, imgs, imgs[0].img->width, imgs[0].img->height, &in, err);
  if (rc || !((const GpuModule *)in->base.module)->launch.to_host) return rc;
  rc = prepare_fold(g, D, imgs, scalars, "histogram", &g->hist, nb + 16, nb, &in, &c, err);
  if (rc) return rc;
  if (!k->buf.p) {
    rc = g->drv->alloc(g, &k->buf, n, err); /* zero-filled: the last element is 0 */
    if (rc) return rc;
  }
  if (g->base.buffer_images) c.buf[GPU_ARG_RES] = k->buf.p;
  else c.a.res = (uint64_t)(uintptr_t)k->buf.p;
  rc = gpu_core_launch(g, in->base.module, imgs[0].img->width, imgs[0].img->height, &c, err);
  if (rc) return rc;
  k->key = bins;
  *kept = true;
  return PXL_OK;
}

static void core_array_forget(Backend *be, const Lane *bins) {
  GpuKept *k = kept_of((GpuCore *)be, bins);
  if (k) k->key = NULL;
}

/* A run's first tile grid goes in order, the next in reverse, and so on: a run of one
 * kernel, repeated, never finds the previous run's last tiles in L2 by its order alone. */
static void core_run_begin(Backend *be) { ((GpuCore *)be)->flip = false; }

void gpu_core_init(GpuCore *g, const GpuDriver *drv) {
  g->drv = drv;
  const char *alt = getenv("PXL_GPU_ALTERNATE");
  g->flip_mode = !alt ? 1 : !strcmp(alt, "0") ? 0 : !strcmp(alt, "reverse") ? 2 : 1;
  g->base.run_begin = core_run_begin;
  g->res.result = true;
  g->tres.result = true;
  if (drv->mark && drv->wait_mark) {
    g->base.test_queue = core_test_queue;
    g->base.test_mark = core_test_mark;
    g->base.test_end = core_test_end;
    if (drv->dialect == GPU_CUDA) { /* gen_gpu_steps: the test writes host memory at a.res */
      g->base.steps_max = core_steps_max;
      g->base.kernel_steps = core_kernel_steps;
      g->base.test_kernel_ok = core_test_kernel_ok; /* gen_gpu_stage_test: the same */
      g->base.kernel_test = core_kernel_test;
    }
  }
  g->base.kernel = core_kernel;
  g->base.reduce = core_reduce;
  g->base.histogram = core_histogram;
  if (drv->copy_buf) {
    g->base.histogram_keep = core_histogram_keep;
    g->base.array_forget = core_array_forget;
  }
}

void gpu_core_free(GpuCore *g) {
  for (GpuModule *m = g->mods, *n; m; m = n) {
    n = m->next;
    g->drv->unload(g, m->prog, m->fn);
    PXL_FREE(m);
  }
  g->mods = NULL;
  instance_list_free(g->instances);
  g->instances = NULL;
  instance_list_free(g->steps);
  g->steps = NULL;
  for (int i = 0; i < PXL_GPU_MAX_IMAGES; i++) {
    instance_list_free(g->tested[i]);
    g->tested[i] = NULL;
  }
  instance_list_free(g->scans);
  g->scans = NULL;
  gpu_tuner_free(&g->tuner);
  GpuBuf *bufs[] = {&g->red, &g->hist, &g->res, &g->prm, &g->scan, &g->tres, &g->tword};
  for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
    if (bufs[i]->p) g->drv->release(g, bufs[i]);
  for (int i = 0; i < PXL_GPU_KEPT; i++)
    if (g->kept[i].buf.p) g->drv->release(g, &g->kept[i].buf);
}
