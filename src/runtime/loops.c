/*
 * loops.c - runs pipelines with loops (docs/LANGUAGE.md, Pipelines: loops) on any backend.
 *
 * exec.c hands over a pipeline that has loops; this runner does what exec.c does for
 * the others - stages in order, each intermediate released after its last reader, the
 * result into the caller's image - and repeats each loop's body: values[first .. end)
 * once per iteration, then each carried image takes its value at the end of the body.
 * The semantics are those of this file run on the reference backend.
 *
 * Buffers: every image value holds a counted reference to a buffer. A buffer no value
 * holds while a loop runs goes to a pool and is taken again by the next stage of its
 * size and type, so a loop allocates in its first two iterations only: a carried image
 * and the body's new value of it end up in two buffers used in turn (double buffering).
 * The pool is freed when the outermost loop ends.
 *
 * `until unchanged(...)`: after an iteration the named images are compared, bit for bit,
 * with their values before it. Host images are compared with memcmp after every
 * iteration. Device images are compared on the device by a reduction (ne8/ne16/ne32
 * below, through the backend's reduce entry: one read-back of a u32), after every 8th
 * iteration (then every it/8th, once that is more) only: once the named images are all
 * of a loop's carried images, an iteration that changes none of them is a fixed point -
 * the next ones compute the same images - so a late test only costs the iterations after
 * the first unchanged one, and the result is the interpreter's. When the loop carries
 * images the test does not name, those may still change, and the test runs after every
 * iteration. At the cap no test runs: the state is that of the last iteration.
 * PXL_LOOP_CHECK=N tests after every Nth iteration with the reduction on any backend
 * (for the tests: the GPU path on the CPU).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/specialise.h"
#include "front/front.h"
#include "interp/interp.h"
#include "runtime/backend.h"
#include "util/alloc.h"

#define DEVICE_CHECK_EVERY 8 /* iterations between two until tests on device images */

/* A buffer: an image and the number of values holding it. */
typedef struct {
  struct pxl_image *img; /* NULL once freed */
  int refs;
  bool owned; /* allocated by this run (else a caller's image) */
} Buf;

typedef struct {
  Backend *be;
  const Decl *P;
  const ImgArg *imgs;
  const Lane *scalars;
  struct pxl_image *given; /* the caller's output image, or NULL */
  Buf **bufs; /* every buffer of the run */
  int nbufs, capbufs;
  Buf **val;                 /* per value: the buffer holding it, or NULL */
  struct pxl_image **vimg;   /* per value: val[v]->img, for exec_stage_args */
  int *last_use;             /* per value outside loops: the position after which none reads it */
  int depth;                 /* loops running */
  int every;                 /* > 0: PXL_LOOP_CHECK */
  int direct;                /* the value computed straight into `given` in this iteration, -1: none */
  Err *err;
} Run;

/* ---- buffers ---- */

static int buf_add(Run *R, struct pxl_image *img, bool owned, Buf **out) {
  if (R->nbufs == R->capbufs) {
    int nc = R->capbufs ? R->capbufs * 2 : 16;
    Buf **nb = PXL_REALLOC(R->bufs, sizeof *nb * (size_t)nc);
    if (!nb) return err_set(R->err, PXL_ENOMEM, "out of memory");
    R->bufs = nb;
    R->capbufs = nc;
  }
  Buf *b = PXL_CALLOC(1, sizeof *b);
  if (!b) return err_set(R->err, PXL_ENOMEM, "out of memory");
  b->img = img;
  b->owned = owned;
  R->bufs[R->nbufs++] = b;
  *out = b;
  return PXL_OK;
}

/* Value v no longer holds its buffer; an owned buffer nothing holds is freed, or pooled
 * while a loop runs. */
static void release(Run *R, int v) {
  Buf *b = R->val[v];
  R->val[v] = NULL;
  R->vimg[v] = NULL;
  if (!b || --b->refs > 0 || !b->owned || R->depth > 0) return;
  image_free(b->img);
  b->img = NULL;
}

static void hold(Run *R, int v, Buf *b) {
  if (b) b->refs++; /* first: b may be the buffer v holds */
  release(R, v);
  R->val[v] = b;
  R->vimg[v] = b ? b->img : NULL;
}

/* A buffer for a new w x h image of type t: a pooled one of that shape, else a new one. */
static int take(Run *R, int w, int h, Type t, Buf **out) {
  pxl_type pt = pxl_of_scalar(t.s);
  for (int i = 0; i < R->nbufs; i++) {
    Buf *b = R->bufs[i];
    if (b->owned && b->img && !b->refs && b->img->width == w && b->img->height == h && b->img->type == pt &&
        b->img->channels == t.lanes) {
      *out = b;
      return PXL_OK;
    }
  }
  struct pxl_image *img = NULL;
  int rc = exec_prepare_output(R->be, R->P->name, t, w, h, NULL, 0, NULL, &img, &(bool){0}, R->err);
  if (!rc) rc = buf_add(R, img, true, out);
  if (rc) image_free(img);
  return rc;
}

/* Frees the pooled buffers (when the outermost loop has ended). */
static void trim(Run *R) {
  for (int i = 0; i < R->nbufs; i++) {
    Buf *b = R->bufs[i];
    if (b->owned && b->img && !b->refs) {
      image_free(b->img);
      b->img = NULL;
    }
  }
}

/* Pixels of src into dst (equal shapes), on the device where they live. */
static int copy_pixels(Run *R, struct pxl_image *dst, const struct pxl_image *src) {
  if (R->be->copy) return R->be->copy(R->be, dst, src, R->err);
  for (int y = 0; y < src->height; y++) memcpy(image_row(dst, y), image_row(src, y), image_row_bytes(src));
  return PXL_OK;
}

/* ---- until unchanged: the comparison ---- */

const char exec_loop_compare_source[] =
    "reduce u32 ne8(image u8 a, image u8 b) = max(u32(a(0, 0) != b(0, 0)));\n"
    "reduce u32 ne16(image u16 a, image u16 b) = max(u32(a(0, 0) != b(0, 0)));\n"
    "reduce u32 ne32(image u32 a, image u32 b) = max(u32(a(0, 0) != b(0, 0)));\n";
static Program *cmp_prog; /* compiled once per process, never freed */
static pthread_once_t cmp_once = PTHREAD_ONCE_INIT;

static void cmp_compile(void) {
  Diag d;
  diag_init(&d, "<pxl loop test>", exec_loop_compare_source);
  if (front_compile("<pxl loop test>", exec_loop_compare_source, &cmp_prog, &d)) cmp_prog = NULL;
  diag_free(&d);
}

/* Whether a and b (same shape) hold the same bits: compared as rows of u32 (else u16, u8)
 * by one of the ne reductions, on the backend. */
static int differ_reduce(Run *R, const struct pxl_image *a, const struct pxl_image *b, bool *differ) {
  pthread_once(&cmp_once, cmp_compile);
  if (!cmp_prog) return err_set(R->err, PXL_ENOMEM, "out of memory compiling the until test of a loop");
  size_t row = image_row_bytes(a);
  uintptr_t bits = (uintptr_t)row | (uintptr_t)a->pitch | (uintptr_t)b->pitch | (uintptr_t)a->data |
                   (uintptr_t)b->data; /* OpenCL: data is an offset */
  int unit = bits % 4 == 0 ? 4 : bits % 2 == 0 ? 2 : 1;
  const Decl *D = program_find(cmp_prog, unit == 4 ? "ne32" : unit == 2 ? "ne16" : "ne8");
  struct pxl_image va = *a, vb = *b;
  va.type = vb.type = unit == 4 ? PXL_U32 : unit == 2 ? PXL_U16 : PXL_U8;
  va.width = vb.width = (int)(row / (size_t)unit);
  va.channels = vb.channels = 1;
  va.alloc = vb.alloc = NULL;
  va.release = vb.release = NULL;
  ImgArg args[2] = {{&va, D->params[0]->border}, {&vb, D->params[1]->border}};
  RedResult res;
  int rc = R->be->reduce(R->be, D, args, NULL, &res, R->err);
  *differ = !rc && res.value.i != 0;
  return rc;
}

static bool differ_host(const struct pxl_image *a, const struct pxl_image *b) {
  if (a == b) return false;
  for (int y = 0; y < a->height; y++)
    if (memcmp(image_row(a, y), image_row(b, y), image_row_bytes(a))) return true;
  return false;
}

/* *stop: every image loop L's until names is the same after the iteration (next) as
 * before it (phi). */
static int unchanged(Run *R, const PipeLoop *L, bool *stop) {
  *stop = true;
  for (int k = 0; k < L->ncarry && *stop; k++) {
    if (!L->until[k]) continue;
    const struct pxl_image *a = R->vimg[L->phi + k], *b = R->vimg[L->next[k]];
    bool d = false;
    if (a == b) continue;
    if (!a->device && !R->every) {
      d = differ_host(a, b);
    } else {
      int rc = differ_reduce(R, a, b, &d);
      if (rc) return rc;
    }
    if (d) *stop = false;
  }
  return PXL_OK;
}

/* ---- running ---- */

static int run_values(Run *R, int from, int to);

static int run_stage(Run *R, int v, struct pxl_image *given) {
  const PipeValue *pv = &R->P->values[v];
  const Decl *K = pv->callee;
  ImgArg kimgs[64];
  Lane ks[32];
  exec_stage_args(R->P, pv, R->vimg, R->imgs, R->scalars, kimgs, ks);
  int w, h;
  int rc = interp_output_size(K, kimgs, ks, &w, &h, R->err);
  if (rc) return rc;
  Buf *b = NULL;
  if (given) {
    struct pxl_image *out = NULL;
    rc = exec_prepare_output(R->be, R->P->name, K->type, w, h, kimgs, K->nimages, given, &out, &(bool){0}, R->err);
    if (!rc) rc = buf_add(R, given, false, &b);
  } else {
    rc = take(R, w, h, K->type, &b);
  }
  if (rc) return rc;
  hold(R, v, b);
  return R->be->kernel(R->be, spec_for(K, ks), kimgs, ks, b->img, R->err);
}

/* Runs loop li: its carried images start as their values before it, the body runs at
 * most `count` times, each carried image taking its new value after each iteration. */
static int run_loop(Run *R, int li) {
  const Decl *P = R->P;
  const PipeLoop *L = &P->loops[li];
  int64_t n = interp_host_expr(L->count, P, R->imgs, R->scalars).i;
  for (int k = 0; k < L->ncarry; k++) hold(R, L->phi + k, R->val[L->init[k]]);
  bool all = true; /* the test names every carried image: a late test is exact */
  for (int k = 0; k < L->ncarry; k++) all = all && L->until[k];
  int every = R->every ? R->every : R->be->image_new ? DEVICE_CHECK_EVERY : 1;
  if (!all) every = 1;
  /* the pipeline returns a carried image of this loop, which runs a known number of times
   * (no until test, not nested): its last iteration computes it into the caller's image,
   * which saves the copy after the loop (a pass over the image) */
  int last_into = -1;
  int result = P->results ? P->results[0] : P->result;
  for (int k = 0; k < L->ncarry && R->given && L->parent < 0 && !L->has_until; k++)
    if (result == L->phi + k) last_into = L->next[k];
  int rc = PXL_OK;
  int64_t next_check = every; /* the iteration after which the until test runs next */
  R->depth++;
  for (int64_t it = 1; it <= n && !rc; it++) {
    R->direct = it == n ? last_into : -1;
    rc = run_values(R, L->first, L->end);
    R->direct = -1;
    for (int k = 0; k < L->ncarry && !rc; k++) {
      const struct pxl_image *a = R->vimg[L->phi + k], *b = R->vimg[L->next[k]];
      if (a->width != b->width || a->height != b->height)
        rc = err_set(R->err, PXL_EARG, "%s: image '%s' is %dx%d before the loop of line %d but %dx%d after an "
                     "iteration; a loop keeps the sizes of the images it carries", P->name,
                     P->values[L->phi + k].name, a->width, a->height, L->loc.line, b->width, b->height);
    }
    bool stop = false;
    if (!rc && L->has_until && it < n && it == next_check) {
      rc = unchanged(R, L, &stop);
      /* device images: every 8th iteration, then every it/8th once that is more - at most
       * 1/8 of the iterations run past the fixed point, and a loop of n iterations tests
       * about 8 + 8 ln(n / 64) times instead of n / 8 (each test a round trip to the host) */
      next_check += every > 1 && !R->every && it / 8 > every ? it / 8 : every;
    }
    for (int k = 0; k < L->ncarry && !rc; k++) hold(R, L->phi + k, R->val[L->next[k]]);
    for (int v = L->first; v < L->end; v++) release(R, v);
    if (stop) break;
  }
  if (--R->depth == 0) trim(R);
  return rc;
}

/* Runs values[from .. to) at one level: stages, and loops (each at its first carried
 * image); outside loops, releases each value after its last reader. */
static int run_values(Run *R, int from, int to) {
  const Decl *P = R->P;
  int rc = PXL_OK;
  for (int v = from; v < to && !rc; v++) {
    const PipeValue *pv = &P->values[v];
    int pos = v;
    if (pv->carried >= 0) {
      rc = run_loop(R, pv->carried);
      v = P->loops[pv->carried].end - 1;
    } else if (!pv->callee) {
      Buf *b = NULL;
      rc = buf_add(R, (struct pxl_image *)R->imgs[pv->param->img_index].img, false, &b);
      if (!rc) hold(R, v, b);
    } else {
      /* straight into the caller's image: the result, or the last iteration's value of it */
      rc = run_stage(R, v, exec_result_index(P, v) == 0 || v == R->direct ? R->given : NULL);
    }
    if (pv->loop >= 0) continue; /* a body's values are released after each iteration */
    for (int s = 0; s <= v && !rc; s++)
      if (R->last_use[s] == pos && exec_result_index(P, s) < 0 && R->val[s]) release(R, s);
  }
  return rc;
}

/* Where each value outside loops is read for the last time: a read inside a loop counts
 * at the loop's position (its first carried image) at the value's level. */
static void find_last_uses(const Decl *P, int *last_use) {
  for (int v = 0; v < P->nvalues; v++) last_use[v] = -1;
  for (int v = 0; v < P->nvalues; v++) {
    const PipeValue *pv = &P->values[v];
    int nsrc = 0, src[33], u0 = v;
    for (int a = 0; a < pv->nargs && nsrc < 32; a++)
      if (pv->args[a].source >= 0) src[nsrc++] = pv->args[a].source;
    if (pv->carried >= 0) { /* a loop's start reads the carried images' first values */
      const PipeLoop *L = &P->loops[pv->carried];
      src[nsrc++] = L->init[v - L->phi];
      u0 = L->phi; /* the loop runs at its first carried image */
    }
    for (int i = 0; i < nsrc; i++) {
      int s = src[i], u = u0;
      for (int l = P->values[u].loop; l >= 0 && !(s >= P->loops[l].first && s < P->loops[l].end);
           l = P->values[u].loop)
        u = P->loops[l].phi;
      if (u > last_use[s]) last_use[s] = u;
    }
  }
}

int exec_pipeline_loops(Backend *be, const Decl *P, const ImgArg *imgs, const Lane *scalars,
                        struct pxl_image *given, ExecResult *res, Err *err) {
  int n = P->nvalues;
  Run R = {.be = be, .P = P, .imgs = imgs, .scalars = scalars, .given = given, .err = err, .direct = -1};
  const char *e = getenv("PXL_LOOP_CHECK");
  if (e && atoi(e) > 0) R.every = atoi(e);
  R.val = PXL_CALLOC((size_t)n, sizeof *R.val);
  R.vimg = PXL_CALLOC((size_t)n, sizeof *R.vimg);
  R.last_use = PXL_CALLOC((size_t)n, sizeof *R.last_use);
  int rc = PXL_OK;
  if (!R.val || !R.vimg || !R.last_use) {
    rc = err_set(err, PXL_ENOMEM, "out of memory");
    goto done;
  }
  find_last_uses(P, R.last_use);
  rc = run_values(&R, 0, n);
  if (rc) goto done;
  res->kind = PXL_RESULT_IMAGE;
  res->nimages = P->nouts ? P->nouts : 1;
  for (int k = 0; k < res->nimages && !rc; k++) { /* each image returned (-> (image T1, ...): several) */
    Buf *b = R.val[P->results ? P->results[k] : P->result];
    struct pxl_image *img = b->img, *got = NULL;
    bool got_owned = false;
    struct pxl_image *g = k == 0 ? given : NULL;
    if (g || !b->owned) { /* a carried image into the caller's image, or a copy of an input */
      struct pxl_image *out = NULL;
      bool owned = false;
      Type t = P->nouts ? P->out_types[k] : P->type;
      rc = exec_prepare_output(be, P->name, t, img->width, img->height, imgs, P->nimages, g, &out, &owned, err);
      if (!rc && out != img) rc = copy_pixels(&R, out, img);
      if (!rc) {
        got = out;
        got_owned = owned;
      } else if (owned) {
        image_free(out);
      }
    } else {
      got = img;
      got_owned = true;
      b->owned = false; /* the caller's now */
    }
    if (rc) break;
    if (k == 0) {
      res->image = got;
      res->image_owned = got_owned;
    } else {
      res->more[k - 1] = got; /* never the caller's */
    }
  }
  if (rc) exec_result_free(res);
done:
  for (int i = 0; i < R.nbufs; i++) {
    if (R.bufs[i]->owned) image_free(R.bufs[i]->img);
    PXL_FREE(R.bufs[i]);
  }
  PXL_FREE(R.bufs);
  PXL_FREE(R.val);
  PXL_FREE(R.vimg);
  PXL_FREE(R.last_use);
  return rc;
}
