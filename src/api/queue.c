/*
 * queue.c - runs in flight (pxl_queue, include/pxl/pxl.h): one entry point run on a
 * sequence of arguments by `depth` workers, results handed back in push order.
 *
 * A worker is a thread with a context of its own on the caller's device and its own
 * copy of the program (compiled from the same source): a context is not thread-safe,
 * and on a GPU each context's backend has a stream (CUDA) or command queue (OpenCL) of
 * its own, all in the device's one CUDA context, so one worker's copies overlap another's
 * kernels. Runs wait in a ring of `depth` slots (a push needs fewer than `depth`
 * pending); each worker takes the oldest run not yet taken, so runs of different cost
 * (a frame's large Y plane and small chroma planes) spread over the workers, and pops
 * take the slots in push order.
 *
 * The first run compiles the entry (NVRTC, the C compiler); the other workers wait until
 * it is done and then find the code in the disk cache instead of compiling it again,
 * all at once.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/handles.h"
#include "runtime/backend.h"
#include "util/alloc.h"

#define QUEUE_CPU_DEPTH 8 /* CPU workers at most (depth 0) */
/* GPU workers (depth 0): bench_cuda --only stream on an H200, 300 HD frames plane by
 * plane, against the bare transfers: depth 2 1.49x, 3 1.55x, 4 1.10x */
#define QUEUE_GPU_DEPTH 4

/* A run pushed: its arguments until a worker takes it, then its result until popped. */
typedef struct {
  pxl_args *args;
  bool done;
  int status;
  pxl_run_result *res;
  char *msg;      /* its failure's message (heap) */
  char *warnings; /* its warnings (heap), or NULL */
} Job;

typedef struct {
  pxl_queue *q;
  pthread_t thread;
  bool started;
  pxl_context *ctx;
  pxl_program *prog;
} Worker;

struct pxl_queue {
  pxl_context *ctx;
  char *entry;
  int depth;
  /* jobs[n % depth] is run n; pushed, taken by a worker, popped: popped <= taken <= pushed
   * and pushed - popped <= depth, so a slot is free again once its run is popped */
  Job jobs[PXL_QUEUE_MAX_DEPTH];
  int64_t pushed, taken, popped;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  bool quit;
  bool warm; /* run 0 is over: the others may start */
  Worker w[PXL_QUEUE_MAX_DEPTH];
};

static char *dup_str(const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char *d = PXL_MALLOC(n);
  if (d) memcpy(d, s, n);
  return d;
}

/* A worker takes the oldest run not yet taken (all of them wait until run 0 is over) and
 * stores its result in the run's slot. */
static void *worker_main(void *arg) {
  Worker *w = arg;
  pxl_queue *q = w->q;
  for (;;) {
    pthread_mutex_lock(&q->lock);
    while (!q->quit && (q->taken == q->pushed || (q->taken > 0 && !q->warm))) pthread_cond_wait(&q->cond, &q->lock);
    if (q->quit) {
      pthread_mutex_unlock(&q->lock);
      return NULL;
    }
    Job *job = &q->jobs[q->taken % q->depth];
    q->taken++;
    pxl_args *args = job->args;
    job->args = NULL;
    pthread_mutex_unlock(&q->lock);

    pxl_run_result *res = NULL;
    int status = pxl_run(w->ctx, w->prog, q->entry, args, &res);
    char *msg = status ? dup_str(pxl_errmsg(w->ctx)) : NULL;
    const char *warn = pxl_take_warnings(w->ctx);
    char *warnings = warn && *warn ? dup_str(warn) : NULL;
    pxl_args_free(args);

    pthread_mutex_lock(&q->lock);
    job->status = status;
    job->res = res;
    job->msg = msg;
    job->warnings = warnings;
    job->done = true;
    q->warm = true;
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
  }
}

/* The row and numbers of the device ctx runs on ("auto" resolved: every worker takes the
 * device the caller's runs take). */
static int resolve_device(pxl_context *ctx, Backend **be, int *kind, int nums[2]) {
  Err e = {0};
  if (api_backend(ctx, be, &e)) return api_fail_err(ctx, &e);
  for (int k = 0; k < MAX_BACKENDS; k++)
    if (ctx->open[k] == *be) {
      *kind = k;
      nums[0] = ctx->open_nums[k][0], nums[1] = ctx->open_nums[k][1];
      return PXL_OK;
    }
  return api_fail(ctx, PXL_ERROR, "the device of this context is not open (internal)");
}

/* A worker's context: the caller's device, cache directory and fusion settings, and
 * `threads` CPU threads. */
static int worker_context(pxl_context *ctx, int kind, const int nums[2], int threads, pxl_context **out) {
  pxl_context *c = pxl_context_new();
  if (!c) return api_fail(ctx, PXL_ENOMEM, "out of memory");
  c->kind = kind;
  c->nums[0] = nums[0], c->nums[1] = nums[1];
  int rc = ctx->cache_dir ? pxl_set_cache_dir(c, ctx->cache_dir) : PXL_OK;
  if (!rc) rc = pxl_set_threads(c, threads);
  if (!rc) rc = pxl_set_fusion(c, ctx->fusion);
  if (!rc && ctx->fuse_keep) rc = pxl_set_fusion_keep(c, ctx->fuse_keep);
  if (rc) {
    api_fail(ctx, rc, "%s", pxl_errmsg(c));
    pxl_context_free(c);
    return rc;
  }
  *out = c;
  return PXL_OK;
}

int pxl_queue_new(pxl_context *ctx, pxl_program *prog, const char *entry, int depth, pxl_queue **out) {
  api_clear(ctx);
  *out = NULL;
  if (!prog) return api_fail(ctx, PXL_EARG, "no program");
  if (depth < 0 || depth > PXL_QUEUE_MAX_DEPTH)
    return api_fail(ctx, PXL_EARG, "a queue's depth is 1 to %d (or 0: the device's choice), not %d", PXL_QUEUE_MAX_DEPTH,
                    depth);
  const Decl *D = entry ? program_find(prog->prog, entry) : NULL;
  if (entry && !D) return api_fail(ctx, PXL_ENOTFOUND, "no entry point '%s' in %s", entry, prog->prog->filename);
  Backend *be;
  int kind, nums[2];
  int rc = resolve_device(ctx, &be, &kind, nums);
  if (rc) return rc;
  int cores = (int)sysconf(_SC_NPROCESSORS_ONLN), threads = ctx->nthreads;
  if (cores < 1) cores = 1;
  if (!depth) depth = be->image_new ? QUEUE_GPU_DEPTH : cores < QUEUE_CPU_DEPTH ? cores : QUEUE_CPU_DEPTH;
  if (!be->image_new) { /* CPU threads shared out */
    int all = threads ? threads : cores;
    threads = all / depth > 0 ? all / depth : 1;
  }
  pxl_queue *q = PXL_CALLOC(1, sizeof *q);
  if (!q) return api_fail(ctx, PXL_ENOMEM, "out of memory");
  q->ctx = ctx;
  q->depth = depth;
  q->entry = dup_str(entry);
  pthread_mutex_init(&q->lock, NULL);
  pthread_cond_init(&q->cond, NULL);
  if (entry && !q->entry) rc = api_fail(ctx, PXL_ENOMEM, "out of memory");
  for (int i = 0; i < depth && !rc; i++) {
    Worker *w = &q->w[i];
    w->q = q;
    rc = worker_context(ctx, kind, nums, threads, &w->ctx);
    if (!rc && pxl_program_from_string(w->ctx, prog->prog->filename, prog->source, &w->prog))
      rc = api_fail(ctx, PXL_ERROR, "%s", pxl_errmsg(w->ctx));
    if (!rc && pthread_create(&w->thread, NULL, worker_main, w))
      rc = api_fail(ctx, PXL_ENOMEM, "cannot start a worker thread");
    else if (!rc)
      w->started = true;
  }
  if (rc) {
    pxl_queue_free(q);
    return rc;
  }
  *out = q;
  return PXL_OK;
}

/* Whether args hold a device image (a worker's backend is not the caller's). */
static bool device_args(const pxl_args *args) {
  for (int i = 0;; i++) {
    const pxl_image *img = api_args_image_at(args, i);
    if (!img) return false;
    if (img->device) return true;
  }
}

int pxl_queue_push(pxl_queue *q, pxl_args *args) {
  if (!q) {
    pxl_args_free(args);
    return PXL_EARG;
  }
  api_clear(q->ctx);
  if (!args) return api_fail(q->ctx, PXL_EARG, "no arguments to push");
  int rc = PXL_OK;
  if (q->pushed - q->popped >= q->depth)
    rc = api_fail(q->ctx, PXL_EARG, "the queue is full (%d runs in flight): pop a result first", q->depth);
  else if (device_args(args))
    rc = api_fail(q->ctx, PXL_EARG, "a queue takes host images (device images run with pxl_run)");
  if (rc) {
    pxl_args_free(args);
    return rc;
  }
  pthread_mutex_lock(&q->lock);
  Job *job = &q->jobs[q->pushed % q->depth];
  *job = (Job){.args = args};
  q->pushed++;
  pthread_cond_broadcast(&q->cond);
  pthread_mutex_unlock(&q->lock);
  return PXL_OK;
}

int pxl_queue_pop(pxl_queue *q, pxl_run_result **out) {
  *out = NULL;
  if (!q) return PXL_EARG;
  api_clear(q->ctx);
  if (q->popped == q->pushed) return api_fail(q->ctx, PXL_EARG, "nothing to pop: no run is pending");
  pthread_mutex_lock(&q->lock);
  Job *job = &q->jobs[q->popped % q->depth];
  while (!job->done) pthread_cond_wait(&q->cond, &q->lock);
  Job got = *job;
  *job = (Job){0};
  q->popped++;
  pthread_mutex_unlock(&q->lock);
  if (got.warnings) warn_add(&q->ctx->warn, "%s", got.warnings);
  PXL_FREE(got.warnings);
  if (got.status) {
    api_fail(q->ctx, got.status, "%s", got.msg ? got.msg : "a queued run failed");
    PXL_FREE(got.msg);
    pxl_result_free(got.res);
    return got.status;
  }
  *out = got.res;
  return PXL_OK;
}

int pxl_queue_pending(const pxl_queue *q) { return q ? (int)(q->pushed - q->popped) : 0; }
int pxl_queue_depth(const pxl_queue *q) { return q ? q->depth : 0; }

void pxl_queue_free(pxl_queue *q) {
  if (!q) return;
  pthread_mutex_lock(&q->lock);
  for (int64_t n = q->popped; n < q->taken; n++) /* the runs a worker took finish; the others are dropped */
    while (!q->jobs[n % q->depth].done) pthread_cond_wait(&q->cond, &q->lock);
  q->quit = true;
  pthread_cond_broadcast(&q->cond);
  pthread_mutex_unlock(&q->lock);
  for (int i = 0; i < q->depth; i++) {
    Worker *w = &q->w[i];
    if (w->started) pthread_join(w->thread, NULL);
    pxl_program_free(w->prog);
    pxl_context_free(w->ctx);
  }
  for (int i = 0; i < q->depth; i++) {
    Job *job = &q->jobs[i];
    pxl_args_free(job->args);
    pxl_result_free(job->res);
    PXL_FREE(job->msg);
    PXL_FREE(job->warnings);
  }
  pthread_cond_destroy(&q->cond);
  pthread_mutex_destroy(&q->lock);
  PXL_FREE(q->entry);
  PXL_FREE(q);
}
