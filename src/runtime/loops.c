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
 * iteration (then every 2^k-th at most it/8, once that is more) only: once the named images are all
 * of a loop's carried images, an iteration that changes none of them is a fixed point -
 * the next ones compute the same images - so a late test only costs the iterations after
 * the first unchanged one, and the result is the interpreter's. For the same reason a
 * loop of at most 16 iterations over device images tests nothing (loop_every: a test's
 * round trip to the host is worth more than the iterations it could save), so that a run
 * of it can be recorded whole (exec.c). Where the backend can (test_queue) and the test
 * names every carried image, the test is queued and its answer read after the next
 * iteration has been queued, which then runs while the host waits; a test that finds the
 * fixed point stops the loop after that iteration, which computed the same images. When
 * the loop carries images the test does not name, those may still change, and the test
 * runs after every iteration. At the cap no test runs: the state is that of the last
 * iteration. PXL_LOOP_CHECK=N tests after every Nth iteration with the reduction on any
 * backend (for the tests: the GPU path on the CPU).
 *
 * The pipeline's result, when it is a carried image of an outer loop, is computed
 * straight into the caller's image by the iterations of the cap's parity, so the
 * caller's image and a pooled buffer take turns: at the cap it holds the last
 * iteration's value, and at a fixed point found by the test either buffer holds the
 * result (they are equal); only a loop stopped at its first iteration copies.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/specialise.h"
#include "front/front.h"
#include "interp/interp.h"
#include "runtime/backend.h"
#include "util/alloc.h"
#include "util/hash.h"

#define DEVICE_CHECK_EVERY 8 /* iterations between two until tests on device images */
#define DEVICE_SHORT_LOOP 16 /* a loop of at most this many iterations on device images runs untested */

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
  Lane *pvals;               /* per value: a reduction's result, an array's bins (exec_value) */
  int *last_use;             /* per value outside loops: the position after which none reads it */
  int depth;                 /* loops running */
  int every;                 /* > 0: PXL_LOOP_CHECK */
  int direct;                /* the value computed straight into `given` in this iteration, -1: none */
  bool chunks;               /* iterations between until tests may be recorded (run_loop) */
  uint64_t key;              /* the run's key (exec_run_key), for the chunks' */
  bool dry;                  /* a recorded chunk was replayed: its iterations' bookkeeping, no launches */
  bool no_alloc;             /* a chunk is being recorded: take() allocates nothing (NEED_ALLOC) */
  Err *err;
} Run;

/* take()'s answer in a chunk being recorded when the pool has no buffer to give */
#define NEED_ALLOC (-1000)

/* ---- buffers ---- */

static int buf_add(Run *R, struct pxl_image *img, bool owned, Buf **out) {
  for (int i = 0; i < R->nbufs && !owned; i++) /* the caller's image again (given, an input) */
    if (R->bufs[i]->img == img && !R->bufs[i]->owned) {
      *out = R->bufs[i];
      return PXL_OK;
    }
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
  exec_give_spare(R->be, b->img);
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
  if (R->no_alloc || R->dry) return NEED_ALLOC;
  struct pxl_image *img = NULL;
  int rc = exec_take_spare(R->be, w, h, pxl_of_scalar(t.s), t.lanes, &img, R->err);
  if (!rc) rc = buf_add(R, img, true, out);
  if (rc) exec_give_spare(R->be, img);
  return rc;
}

/* Frees the pooled buffers (when the outermost loop has ended). */
static void trim(Run *R) {
  for (int i = 0; i < R->nbufs; i++) {
    Buf *b = R->bufs[i];
    if (b->owned && b->img && !b->refs) {
      exec_give_spare(R->be, b->img);
      b->img = NULL;
    }
  }
}

/* Pixels of src into dst (equal shapes), on the device where they live. */
static int copy_pixels(Run *R, struct pxl_image *dst, const struct pxl_image *src) {
  if (R->be->copy) return R->be->copy(R->be, dst, src, R->err);
  image_copy_host(dst, src);
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

/* The comparison of a and b (same shape) as one of the ne reductions, over rows of u32
 * (else u16, u8): the reduction, in *D, and its two image arguments (views va, vb). */
static int compare_args(Run *R, const struct pxl_image *a, const struct pxl_image *b, const Decl **D,
                        struct pxl_image *va, struct pxl_image *vb, ImgArg *args) {
  pthread_once(&cmp_once, cmp_compile);
  if (!cmp_prog) return err_set(R->err, PXL_ENOMEM, "out of memory compiling the until test of a loop");
  size_t row = image_row_bytes(a);
  uintptr_t bits = (uintptr_t)row | (uintptr_t)a->pitch | (uintptr_t)b->pitch | (uintptr_t)a->data |
                   (uintptr_t)b->data; /* OpenCL: data is an offset */
  int unit = bits % 4 == 0 ? 4 : bits % 2 == 0 ? 2 : 1;
  *D = program_find(cmp_prog, unit == 4 ? "ne32" : unit == 2 ? "ne16" : "ne8");
  *va = *a, *vb = *b;
  va->type = vb->type = unit == 4 ? PXL_U32 : unit == 2 ? PXL_U16 : PXL_U8;
  va->width = vb->width = (int)(row / (size_t)unit);
  va->channels = vb->channels = 1;
  va->alloc = vb->alloc = NULL;
  va->release = vb->release = NULL;
  args[0] = (ImgArg){va, (*D)->params[0]->border};
  args[1] = (ImgArg){vb, (*D)->params[1]->border};
  return PXL_OK;
}

/* Whether a and b (same shape) hold the same bits, by a reduction on the backend. */
static int differ_reduce(Run *R, const struct pxl_image *a, const struct pxl_image *b, bool *differ) {
  const Decl *D;
  struct pxl_image va, vb;
  ImgArg args[2];
  int rc = compare_args(R, a, b, &D, &va, &vb, args);
  RedResult res;
  if (!rc) rc = R->be->reduce(R->be, D, args, NULL, &res, R->err);
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

/* Queues the until test of loop L without waiting (*queued), where the backend can and
 * there is one image to compare: the answer comes from test_end after test_mark. In a
 * replayed chunk (Run.dry) the recording queued it. */
static int unchanged_queue(Run *R, const PipeLoop *L, bool *queued) {
  *queued = false;
  const struct pxl_image *a = NULL, *b = NULL;
  for (int k = 0; k < L->ncarry; k++) {
    if (!L->until[k] || R->vimg[L->phi + k] == R->vimg[L->next[k]]) continue;
    if (a) return PXL_OK; /* two to compare: tested as usual */
    a = R->vimg[L->phi + k], b = R->vimg[L->next[k]];
  }
  if (!a || !a->device || !R->be->test_queue) return PXL_OK;
  *queued = true;
  if (R->dry) return PXL_OK;
  const Decl *D;
  struct pxl_image va, vb;
  ImgArg args[2];
  int rc = compare_args(R, a, b, &D, &va, &vb, args);
  if (!rc) rc = R->be->test_queue(R->be, D, args, R->err);
  *queued = !rc;
  return rc;
}

/* The answer of the test queued after the last iteration (or launch), read once this
 * one is queued: *stop when it found the fixed point, which this one then kept. */
static int unchanged_end(Run *R, bool *stop) {
  uint64_t differ = 1;
  int rc = R->be->test_end(R->be, &differ, R->err);
  *stop = !rc && !differ;
  return rc;
}

/* A test still queued when the loop failed: its answer is not wanted, the error kept. */
static void unchanged_drop(Run *R) {
  uint64_t ignored;
  Err e2;
  R->be->test_end(R->be, &ignored, &e2);
}

/* ---- running ---- */

/* The largest power of two at most v (v >= 1). */
static int64_t pow2_floor(int64_t v) {
  int64_t p = 1;
  while (p <= v / 2) p *= 2;
  return p;
}

static int run_values(Run *R, int from, int to);

/* Iterations of an iterated stencil in one launch (run_steps): over the kernel's image
 * parameter `carried`, `test`: leaving the until test in flight; `by_kernel`: one
 * iteration, whose kernel computes the test itself (Backend.kernel_test). */
typedef struct {
  int carried, steps;
  bool test, by_kernel;
} Steps;

/* Runs stage v into `given` (NULL: a buffer of the pool). With st: st->steps iterations
 * of it in one kernel_steps call, or one kernel_test call. */
static int run_stage(Run *R, int v, struct pxl_image *given, const Steps *st) {
  const PipeValue *pv = &R->P->values[v];
  const Decl *K = pv->callee;
  ImgArg kimgs[64];
  Lane ks[32];
  exec_stage_args(R->P, pv, R->vimg, R->imgs, R->scalars, R->pvals, kimgs, ks);
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
  if (R->dry) return PXL_OK;
  if (st && st->by_kernel)
    return R->be->kernel_test(R->be, spec_for(K, ks), kimgs, ks, st->carried, st->test, b->img, R->err);
  if (st) return R->be->kernel_steps(R->be, spec_for(K, ks), kimgs, ks, st->carried, st->steps, st->test, b->img, R->err);
  return exec_kernel(R->be, spec_for(K, ks), kimgs, ks, b->img, R->err);
}

/* After how many iterations loop L's until test runs first (then see run_loop), or
 * INT64_MAX for never: after every iteration unless the test names every carried image;
 * over device images every DEVICE_CHECK_EVERY, but never in a loop of at most
 * DEVICE_SHORT_LOOP iterations (n). env: PXL_LOOP_CHECK, 0 when unset. */
static int64_t loop_every(const Backend *be, const PipeLoop *L, int64_t n, int env) {
  bool all = true; /* the test names every carried image: a late test is exact */
  for (int k = 0; k < L->ncarry; k++) all = all && L->until[k];
  if (!L->has_until) return INT64_MAX;
  if (!all) return 1;
  if (env) return env;
  if (!be->image_new) return 1;
  return n <= DEVICE_SHORT_LOOP ? INT64_MAX : DEVICE_CHECK_EVERY;
}

static int env_every(void) {
  const char *e = getenv("PXL_LOOP_CHECK");
  return e && atoi(e) > 0 ? atoi(e) : 0;
}

bool exec_loops_untested(const Backend *be, const Decl *P, const ImgArg *imgs, const Lane *scalars) {
  int env = env_every();
  for (int i = 0; i < P->nloops; i++) {
    const PipeLoop *L = &P->loops[i];
    int64_t n = interp_host_expr(L->count, P, imgs, scalars).i;
    if (L->has_until && loop_every(be, L, n, env) < n) return false;
  }
  return true;
}

/* Whether loop li runs as an iterated stencil, and how: the loop's one carried image is
 * the result of its body's one stage, a kernel that reads it as one of its images (the
 * others come from before the loop) and keeps its size; *carried: the kernel's image
 * parameter it is. Returns the iterations per launch (0: not so):
 * - with PXL_LOOP_STEPS=1 (never with PXL_LOOP_CHECK), several (Backend.kernel_steps,
 *   CUDA: the backend says how many). Opt-in: measured on an H100 it was no faster than
 *   a launch per iteration for distance.pxl's step4 and 3x slower for canny's grow
 *   (docs/PERFORMANCE.md), the redundant halo steps costing more than the memory passes
 *   they save; grow's words form (8 steps a launch, a word a lane) costs 82 us a step at
 *   8192^2, what a walking launch costs, and runs past the fixed point: 1.8x slower;
 * - else, when the loop's until test runs (`tests`) and names the image, and the image
 *   has at least KERNEL_TEST_PIXELS pixels, 1 with *by_kernel: the kernel computes the
 *   test as it runs (Backend.kernel_test) - no comparison pass over two images, and
 *   tests close together while the loop is young (run_steps; canny's grow at 8192 x 8192
 *   ran 17 iterations where 9 change something, now 12). On smaller images the
 *   host's round trip per test and a launch per iteration cost more than they save, and
 *   recorded chunks (run_loop) are faster: canny on an H200, chunks against kernel
 *   tests, 0.351 against 0.380 ms at 4096 x 4096, 1.254 against 0.937 at 6144 x 6144,
 *   1.871 against 1.506 at 8192 x 8192 (docs/PERFORMANCE.md). PXL_LOOP_KERNEL_TESTS=1
 *   forces it whatever the size, =0 never. */
#define KERNEL_TEST_PIXELS (6144 * 4096)
static int steppable(Run *R, int li, bool tests, int *carried, bool *by_kernel) {
  const Decl *P = R->P;
  const PipeLoop *L = &P->loops[li];
  *by_kernel = false;
  if (R->every || L->ncarry != 1 || L->end - L->first != 1 || L->next[0] != L->first) return 0;
  const PipeValue *pv = &P->values[L->first];
  const Decl *K = pv->callee;
  if (!K || K->kind != D_KERNEL || K->nouts || K->global || pv->nouts || pv->carried >= 0) return 0;
  *carried = -1;
  for (int a = 0; a < pv->nargs; a++)
    if (pv->args[a].source == L->phi) {
      if (*carried >= 0 || !K->params[a]->is_image) return 0;
      *carried = K->params[a]->img_index;
    }
  if (*carried < 0) return 0;
  ImgArg kimgs[64];
  Lane ks[32];
  exec_stage_args(P, pv, R->vimg, R->imgs, R->scalars, R->pvals, kimgs, ks);
  const struct pxl_image *c = kimgs[*carried].img;
  int w, h;
  Err ignored;
  if (interp_output_size(K, kimgs, ks, &w, &h, &ignored) || w != c->width || h != c->height) return 0;
  const char *e = getenv("PXL_LOOP_STEPS"), *kt = getenv("PXL_LOOP_KERNEL_TESTS");
  if (e && atoi(e) == 1) return R->be->kernel_steps ? R->be->steps_max(R->be, spec_for(K, ks), kimgs, *carried) : 0;
  bool big = (int64_t)w * h >= KERNEL_TEST_PIXELS;
  if (!tests || !L->until[0] || !R->be->kernel_test || (kt ? atoi(kt) != 1 : !big) ||
      !R->be->test_kernel_ok(R->be, spec_for(K, ks), kimgs, *carried))
    return 0;
  *by_kernel = true;
  return 1;
}

/* The integer square root of v >= 0. */
static int64_t isqrt(int64_t v) {
  int64_t r = 0;
  while ((r + 1) * (r + 1) <= v) r++;
  return r;
}

/* Loop L as an iterated stencil (steppable): launches of up to `per` iterations, n in
 * all, the carried image into the caller's image on the launches of the last one's
 * parity where res_k >= 0 (as run_loop). With `tests` (an until test that runs: not in
 * a loop too short for one, loop_every), a launch but the last may also say whether its
 * last iteration changed a pixel; the answer is read once the next launch is queued, and
 * "unchanged" (a fixed point) stops the loop after that one, which computed the same
 * image. Several iterations per launch: every other launch tests. One iteration whose
 * kernel tests (by_kernel): the first iteration, then after max(2, sqrt(it / 2)) more -
 * a tested launch costs a few percent more than a plain one (canny's grow at 8192 x 8192
 * on an H200: 116 against 98 us), so tests thin out as a loop runs long (a loop of 1000
 * iterations tests about 90 times, and runs at most 22 past its fixed point). */
static int run_steps(Run *R, const PipeLoop *L, int64_t n, int per, int carried, bool by_kernel, int res_k,
                     bool tests) {
  int rc = PXL_OK, v = L->first;
  bool pending = false, stop = false;
  int64_t next_test = 1; /* by_kernel: the iteration after which the test runs next */
  for (int64_t done = 0; done < n && !rc && !stop;) {
    int64_t left = n - done, launches = (left + per - 1) / per;
    Steps st = {carried, (int)(left < per ? left : per), false, by_kernel};
    st.test = tests && !pending && st.steps < left && (!by_kernel || done + 1 >= next_test);
    if (st.test && by_kernel) {
      int64_t gap = isqrt((done + 1) / 2);
      next_test = done + 1 + (gap > 2 ? gap : 2);
    }
    bool into = res_k >= 0 && (launches - 1) % 2 == 0 && R->vimg[L->phi] != R->given;
    rc = run_stage(R, v, into ? R->given : NULL, &st);
    done += st.steps;
    if (!rc && pending) {
      pending = false;
      rc = unchanged_end(R, &stop);
    } else if (!rc) {
      pending = st.test;
    }
    if (!rc && !(stop && res_k >= 0 && R->vimg[L->phi] == R->given)) hold(R, L->phi, R->val[v]);
    release(R, v);
  }
  if (pending) unchanged_drop(R);
  return rc;
}

/* ---- recorded chunks of iterations ----
 *
 * Between two until tests on device images, the iterations are recorded as one graph
 * (Backend.replay, CUDA) and replayed: one launch instead of one per stage and iteration.
 * A chunk's key is the run's (pipeline, images, scalars) with the loop, the chunk's
 * length and parity and the whole bookkeeping state it starts from: every value's buffer
 * and every buffer's image and holders. The same key therefore means the same launches
 * into the same buffers, and a replayed chunk runs its iterations' bookkeeping only
 * (Run.dry). The backend records a key at its second sighting (in a loop, the double
 * buffers come back every other iteration, so chunks of one length repeat their state),
 * and a chunk being recorded must not allocate (the recorded allocation would not be the
 * one the bookkeeping holds): take() then refuses, the recording is dropped, the state
 * put back and the chunk run as usual, as after any failure while recording. The test's
 * reduction is a chunk's last launch, recorded with it, and its mark is queued after the
 * chunk; the answer is read during the iteration after the test (run_loop), so chunks
 * start after that one and end at the next test. */

/* The bookkeeping a chunk being recorded starts from, put back if the recording fails:
 * each value's buffer, and each buffer's holders. */
typedef struct {
  Buf **val;
  int *refs;
  int nbufs, nvalues;
} Snap;

static void snap_free(Snap *S) {
  PXL_FREE(S->val);
  PXL_FREE(S->refs);
  S->val = NULL, S->refs = NULL;
}

static int snap_take(Run *R, Snap *S) {
  S->nvalues = R->P->nvalues;
  S->nbufs = R->nbufs;
  S->val = PXL_MALLOC(sizeof *S->val * (size_t)S->nvalues);
  S->refs = PXL_MALLOC(sizeof *S->refs * (size_t)(S->nbufs ? S->nbufs : 1));
  if (!S->val || !S->refs) {
    snap_free(S);
    return err_set(R->err, PXL_ENOMEM, "out of memory");
  }
  memcpy(S->val, R->val, sizeof *S->val * (size_t)S->nvalues);
  for (int i = 0; i < S->nbufs; i++) S->refs[i] = R->bufs[i]->refs;
  return PXL_OK;
}

/* Puts the state of S back (nothing was allocated since: no_alloc) and frees S. */
static void snap_put_back(Run *R, Snap *S) {
  for (int v = 0; v < S->nvalues; v++) {
    R->val[v] = S->val[v];
    R->vimg[v] = S->val[v] ? S->val[v]->img : NULL;
  }
  for (int i = 0; i < S->nbufs; i++) R->bufs[i]->refs = S->refs[i];
  snap_free(S);
}

static uint64_t chunk_key(const Run *R, int li, int64_t len, int64_t left, int res_k) {
  int64_t shape[5] = {li, len, left % 2, res_k, len <= left}; /* the test follows */
  uint64_t h = hash_bytes(R->key, shape, sizeof shape);
  for (int v = 0; v < R->P->nvalues; v++) {
    int at = -1;
    for (int i = 0; i < R->nbufs && R->val[v] && at < 0; i++)
      if (R->bufs[i] == R->val[v]) at = i;
    h = hash_bytes(h, &at, sizeof at);
  }
  for (int i = 0; i < R->nbufs; i++) {
    const Buf *b = R->bufs[i];
    int state[2] = {b->refs, b->owned};
    h = exec_hash_image(hash_bytes(h, state, sizeof state), b->img);
  }
  return h;
}

/* Whether loop L's iterations may be recorded in chunks: a loop of this run's
 * (Run.chunks: device images, a backend that records, no reductions), not nested and
 * holding none, whose test runs every few iterations and may be answered late (late: it
 * names every carried image). */
static bool chunkable(const Run *R, const PipeLoop *L, bool late, int64_t every) {
  if (!R->chunks || !late || every == INT64_MAX || L->parent >= 0) return false;
  for (int v = L->first; v < L->end; v++)
    if (R->P->values[v].carried >= 0 || !R->P->values[v].callee) return false;
  return true;
}

/* Runs loop li: its carried images start as their values before it, the body runs at
 * most `count` times, each carried image taking its new value after each iteration. */
static int run_loop(Run *R, int li) {
  const Decl *P = R->P;
  const PipeLoop *L = &P->loops[li];
  int64_t n = interp_pipe_expr(L->count, P, R->imgs, R->scalars, R->pvals).i;
  for (int k = 0; k < L->ncarry; k++) hold(R, L->phi + k, R->val[L->init[k]]);
  int64_t every = loop_every(R->be, L, n, R->every);
  /* the test names every carried image and runs every few iterations on the device: it
   * may be queued and answered later, and its interval grows */
  const bool late = every > 1 && !R->every;
  /* the pipeline returns carried image res_k of this loop (not nested): the iterations of
   * the cap's parity compute it into the caller's image (the file's comment); with an
   * until test only when the test names it (else the loop may stop at any iteration) */
  int res_k = -1;
  int result = P->results ? P->results[0] : P->result;
  for (int k = 0; k < L->ncarry && R->given && L->parent < 0; k++)
    if (result == L->phi + k && (!L->has_until || L->until[k])) res_k = k;
  int rc = PXL_OK;
  int64_t next_check = every; /* the iteration after which the until test runs next */
  bool pending = false;       /* the last iteration's test, queued: read after this one's */
  bool chunks = chunkable(R, L, late, every);
  int64_t chunk_from = 0, chunk_end = 0; /* the chunk running (recorded chunks), 0: none */
  int gstate = GRAPH_NONE;
  uint64_t gkey = 0;
  Snap snap = {0};
  R->depth++;
  bool tests = L->has_until && every < n, by_kernel = false;
  int carried, per = n > 1 ? steppable(R, li, tests, &carried, &by_kernel) : 0;
  if (per > 1 || by_kernel) {
    rc = run_steps(R, L, n, per, carried, by_kernel, res_k, tests);
    n = 0; /* done */
  }
  for (int64_t it = 1; it <= n && !rc; it++) {
    int64_t upto = next_check < n ? next_check : n; /* the iteration of the next test, or the last */
    if (chunks && !chunk_end && !pending && upto > it) {
      chunk_from = it;
      chunk_end = upto;
      gkey = chunk_key(R, li, chunk_end - it + 1, n - it, res_k);
      rc = R->be->replay(R->be, gkey, &gstate, R->err);
      if (!rc && gstate == GRAPH_RECORD) {
        rc = snap_take(R, &snap);
        if (rc) R->be->record_end(R->be, gkey, false);
      }
      if (rc) break;
      R->dry = gstate == GRAPH_REPLAYED;
      R->no_alloc = gstate == GRAPH_RECORD;
    }
    bool into = res_k >= 0 && (n - it) % 2 == 0 && R->vimg[L->phi + res_k] != R->given;
    R->direct = into ? L->next[res_k] : -1;
    rc = run_values(R, L->first, L->end);
    R->direct = -1;
    for (int k = 0; k < L->ncarry && !rc; k++) {
      const struct pxl_image *a = R->vimg[L->phi + k], *b = R->vimg[L->next[k]];
      if (a->width != b->width || a->height != b->height)
        rc = err_set(R->err, PXL_EARG, "%s: image '%s' is %dx%d before the loop of line %d but %dx%d after an "
                     "iteration; a loop keeps the sizes of the images it carries", P->name,
                     P->values[L->phi + k].name, a->width, a->height, L->loc.line, b->width, b->height);
    }
    /* the until test after this iteration; queued only when it names every carried image
     * (late): the next iteration then computes the same images */
    bool test_here = !rc && !pending && L->has_until && it < n && it == next_check, queued = false;
    if (chunk_end && (it == chunk_end || rc)) { /* the chunk's end: keep its recording */
      if (test_here && late) rc = unchanged_queue(R, L, &queued); /* recorded too */
      bool recorded = gstate != GRAPH_RECORD || R->be->record_end(R->be, gkey, rc == PXL_OK);
      R->dry = R->no_alloc = false;
      chunk_end = 0;
      if (!recorded) { /* nothing ran: once more, as usual (a real failure shows again) */
        snap_put_back(R, &snap);
        rc = PXL_OK; /* (the backend does not record this key again) */
        it = chunk_from - 1;
        continue;
      }
      snap_free(&snap);
      if (rc == NEED_ALLOC) rc = err_set(R->err, PXL_EFAULT, "%s: a replayed loop iteration needed a new buffer",
                                         P->name);
    }
    bool stop = false;
    if (!rc && pending) {
      pending = false;
      rc = unchanged_end(R, &stop);
    } else if (!rc && test_here) {
      if (!queued && late) rc = unchanged_queue(R, L, &queued);
      if (!rc && queued) {
        rc = R->be->test_mark(R->be, R->err);
        pending = !rc;
      } else if (!rc) {
        rc = unchanged(R, L, &stop);
      }
      /* device images: every 8th iteration, then every 2^k-th at most it/8 once that is
       * more (powers of two: chunks of few lengths, recorded once each) - at most
       * 1/8 of the iterations run past the fixed point, and a loop of n iterations tests
       * about 8 + 8 log2(n / 64) times instead of n / 8 (each test a round trip to the host) */
      next_check += late && it / 8 > every ? pow2_floor(it / 8) : every;
    }
    for (int k = 0; k < L->ncarry && !rc; k++)
      if (!(stop && k == res_k && R->vimg[L->phi + k] == R->given)) /* else equal: keep the caller's */
        hold(R, L->phi + k, R->val[L->next[k]]);
    for (int v = L->first; v < L->end; v++) release(R, v);
    if (stop) break;
  }
  if (pending) unchanged_drop(R);
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
    if (pv->fused) continue; /* computed inside its consumer's kernel */
    if (pv->carried >= 0) {
      rc = run_loop(R, pv->carried);
      v = P->loops[pv->carried].end - 1;
    } else if (pv->kind != PV_IMAGE) { /* a reduction's result, a histogram's or a kernel's array */
      if (!R->dry) rc = exec_value(R->be, P, v, R->vimg, R->imgs, R->scalars, R->pvals, R->err);
    } else if (!pv->callee) {
      Buf *b = NULL;
      rc = buf_add(R, (struct pxl_image *)R->imgs[pv->param->img_index].img, false, &b);
      if (!rc) hold(R, v, b);
    } else {
      /* straight into the caller's image: the result, or the last iteration's value of it */
      rc = run_stage(R, v, exec_result_index(P, v) == 0 || v == R->direct ? R->given : NULL, NULL);
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
    if (pv->fused) continue;
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
  R.every = env_every();
  R.chunks = be->image_new && exec_recordable_run(be, P, imgs, given);
  if (R.chunks) R.key = exec_run_key(P, imgs, scalars, given);
  R.val = PXL_CALLOC((size_t)n, sizeof *R.val);
  R.vimg = PXL_CALLOC((size_t)n, sizeof *R.vimg);
  R.last_use = PXL_CALLOC((size_t)n, sizeof *R.last_use);
  R.pvals = PXL_CALLOC((size_t)n, sizeof *R.pvals);
  int rc = PXL_OK;
  if (!R.val || !R.vimg || !R.last_use || !R.pvals) {
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
    if (R.bufs[i]->owned) exec_give_spare(be, R.bufs[i]->img);
    PXL_FREE(R.bufs[i]);
  }
  PXL_FREE(R.bufs);
  PXL_FREE(R.val);
  PXL_FREE(R.vimg);
  PXL_FREE(R.last_use);
  exec_values_free(be, P, R.pvals);
  return rc;
}
