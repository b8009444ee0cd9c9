/*
 * bench_backends - two pxl devices side by side on the twelve kernels of the skeleton
 * benchmark (examples/<kernel>.pxl, u8 input): e.g. NVIDIA OpenCL next to the CUDA
 * backend, or PoCL next to the CPU backend. Both devices see the same random input; the
 * outputs (images, reduction values, histograms) must agree exactly.
 *
 *   bench_backends [--devices A,B] [--sizes 8192,WxH] [--kernels a,b,..|all] [--reps N]
 *
 * Defaults: --devices cuda,opencl --sizes 8192 --kernels all --reps 10. A device with
 * memory of its own (cuda, opencl) gets device images (made before timing, outputs bound
 * with pxl_args_output), so no transfers are timed; cpu and ref get host images.
 *
 * Timing, the same for both: 2 warm-up runs (the first compiles, and on a GPU autotunes),
 * then per rep a batch of N back-to-back runs and pxl_sync, timed with the monotonic
 * clock; N makes a batch last at least 2 ms; ms per run = batch / N; the table shows the
 * median over reps and B ms / A ms (> 1: A faster). GB/s counts the input read once and
 * the output written once (reductions: the input). Exit status 1 when a run fails or the
 * outputs differ.
 */
#define _POSIX_C_SOURCE 200809L
#include <pxl/pxl.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef PXL_EXAMPLES_DIR
#define PXL_EXAMPLES_DIR "examples"
#endif

static const char *const kernels[] = {"binarize", "copy", "transpose", "blur3", "sobel3", "erode3",
                                      "dilate5", "gradient73", "sum", "min", "max", "hist256"};
enum { NKERNELS = sizeof kernels / sizeof *kernels, MAXREPS = 100 };

/* One device: its context, the kernel's program, the bound input and output. */
typedef struct {
  const char *name;
  pxl_context *ctx;
  pxl_program *prog;
  pxl_image *in, *out;
  pxl_args *args;
  pxl_run_result *last;
} Dev;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int fail(Dev *d, const char *what) {
  fprintf(stderr, "bench_backends: %s on %s: %s\n", what, d->name, pxl_errmsg(d->ctx));
  return 1;
}

/* An image for d: on the device when it has memory, else on the host; a copy of src when
 * given. */
static int make_image(Dev *d, int w, int h, pxl_type t, const pxl_image *src, pxl_image **out) {
  int rc = pxl_image_create_device(d->ctx, w, h, t, 1, out);
  if (rc == PXL_EDEVICE) rc = pxl_image_create(d->ctx, w, h, t, 1, out);
  if (!rc && src) rc = pxl_image_copy(d->ctx, src, *out);
  if (!rc) rc = pxl_sync(d->ctx);
  return rc ? fail(d, "image") : 0;
}

/* Runs the bound entry once, keeping the result for the check. */
static int run_once(Dev *d, const char *entry) {
  pxl_result_free(d->last);
  d->last = NULL;
  return pxl_run(d->ctx, d->prog, entry, d->args, &d->last) ? fail(d, entry) : 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Median ms per run over reps batches. */
static int time_runs(Dev *d, const char *entry, int reps, double *ms) {
  for (int i = 0; i < 2; i++)
    if (run_once(d, entry)) return 1;
  if (pxl_sync(d->ctx)) return fail(d, "sync");
  int n = 1;
  for (;;) { /* calibrate: a batch of at least 2 ms */
    double t0 = now_ms();
    for (int i = 0; i < n; i++)
      if (run_once(d, entry)) return 1;
    if (pxl_sync(d->ctx)) return fail(d, "sync");
    double t = now_ms() - t0;
    if (t >= 2.0 || n >= 1 << 16) break;
    n *= t > 0.2 ? (int)(2.0 / t) + 1 : 10;
  }
  double v[MAXREPS];
  for (int r = 0; r < reps; r++) {
    double t0 = now_ms();
    for (int i = 0; i < n; i++)
      if (run_once(d, entry)) return 1;
    if (pxl_sync(d->ctx)) return fail(d, "sync");
    v[r] = (now_ms() - t0) / n;
  }
  qsort(v, (size_t)reps, sizeof *v, cmp_double);
  *ms = v[reps / 2];
  return 0;
}

/* Whether the last results of a and b agree exactly. */
static int same_results(Dev *a, Dev *b, int makes_image) {
  if (makes_image) {
    pxl_image *ha, *hb;
    if (pxl_image_to_host(a->ctx, a->out, &ha)) return 0;
    if (pxl_image_to_host(b->ctx, b->out, &hb)) {
      pxl_image_free(ha);
      return 0;
    }
    size_t row = (size_t)pxl_image_width(ha) * pxl_image_channels(ha) * (pxl_image_type(ha) == PXL_I16 ? 2 : 1);
    int same = 1;
    for (int y = 0; y < pxl_image_height(ha) && same; y++)
      same = !memcmp((char *)pxl_image_data(ha) + (size_t)y * pxl_image_pitch(ha),
                     (char *)pxl_image_data(hb) + (size_t)y * pxl_image_pitch(hb), row);
    pxl_image_free(ha);
    pxl_image_free(hb);
    return same;
  }
  if (pxl_result_kind_of(a->last) == PXL_RESULT_SCALAR) {
    pxl_scalar_result x, y;
    pxl_result_scalar(a->last, &x);
    pxl_result_scalar(b->last, &y);
    return x.ivalue == y.ivalue && x.value == y.value;
  }
  int na, nb, fa, fb;
  const double *ba = pxl_result_bins(a->last, &na, &fa), *bb = pxl_result_bins(b->last, &nb, &fb);
  return na == nb && !memcmp(ba, bb, sizeof(double) * (size_t)na);
}

/* Binds kernel k's program and images on d; the output is W x H (H x W for transpose). */
static int bind(Dev *d, const char *k, const pxl_image *host, int w, int h) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.pxl", PXL_EXAMPLES_DIR, k);
  if (pxl_program_from_file(d->ctx, path, &d->prog)) return fail(d, path);
  int e = pxl_program_entry_find(d->prog, k);
  d->args = pxl_args_new(d->ctx);
  if (!d->args || make_image(d, w, h, PXL_U8, host, &d->in)) return 1;
  pxl_args_image(d->args, "in", d->in);
  if (!strcmp(k, "binarize")) pxl_args_scalar(d->args, "t", 128);
  if (pxl_program_entry_makes_image(d->prog, e)) {
    int t = !strcmp(k, "transpose");
    if (make_image(d, t ? h : w, t ? w : h, !strcmp(k, "sobel3") ? PXL_I16 : PXL_U8, NULL, &d->out)) return 1;
    pxl_args_output(d->args, d->out);
  }
  return 0;
}

static void unbind(Dev *d) {
  pxl_result_free(d->last);
  pxl_args_free(d->args);
  pxl_image_free(d->in);
  pxl_image_free(d->out);
  pxl_program_free(d->prog);
  d->last = NULL;
  d->args = NULL;
  d->in = d->out = NULL;
  d->prog = NULL;
}

static int row(Dev dev[2], const char *k, const pxl_image *host, int w, int h, int reps) {
  double ms[2] = {0, 0};
  int bad = 0;
  for (int i = 0; i < 2 && !bad; i++) bad = bind(&dev[i], k, host, w, h) || time_runs(&dev[i], k, reps, &ms[i]);
  int makes_image = dev[0].out != NULL;
  const char *check = bad ? "error" : same_results(&dev[0], &dev[1], makes_image) ? "ok" : "DIFF";
  double bytes = (double)w * h * (makes_image ? (!strcmp(k, "sobel3") ? 3 : 2) : 1);
  printf("%-10s | %5dx%-5d | %9.4f | %9.4f | %7.2f | %8.1f | %8.1f | %s\n", k, w, h, ms[0], ms[1],
         ms[0] > 0 ? ms[1] / ms[0] : 0, ms[0] > 0 ? bytes / (ms[0] * 1e6) : 0, ms[1] > 0 ? bytes / (ms[1] * 1e6) : 0,
         check);
  for (int i = 0; i < 2; i++) unbind(&dev[i]);
  return bad || strcmp(check, "ok");
}

int main(int argc, char **argv) {
  const char *devices = "cuda,opencl", *sizes = "8192", *ks = "all";
  int reps = 10;
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(argv[i], "--devices") && v) devices = argv[++i];
    else if (!strcmp(argv[i], "--sizes") && v) sizes = argv[++i];
    else if (!strcmp(argv[i], "--kernels") && v) ks = argv[++i];
    else if (!strcmp(argv[i], "--reps") && v) reps = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: bench_backends [--devices A,B] [--sizes N,WxH] [--kernels a,b|all] [--reps N]\n");
      return 2;
    }
  }
  if (reps < 1 || reps > MAXREPS) reps = 10;
  char names[2][64] = {"", ""};
  if (sscanf(devices, "%63[^,],%63s", names[0], names[1]) != 2) {
    fprintf(stderr, "bench_backends: --devices wants two devices, e.g. cuda,opencl\n");
    return 2;
  }
  Dev dev[2] = {{.name = names[0]}, {.name = names[1]}};
  for (int i = 0; i < 2; i++)
    if (!(dev[i].ctx = pxl_context_new()) || pxl_set_device(dev[i].ctx, names[i])) return fail(&dev[i], "device");
  printf("A = %s\nB = %s\n", pxl_device_name(dev[0].ctx), pxl_device_name(dev[1].ctx));
  printf("%-10s | %-11s | %9s | %9s | %7s | %8s | %8s | check\n", "kernel", "size", "A ms", "B ms", "B/A", "A GB/s",
         "B GB/s");
  int status = 0;
  for (const char *s = sizes; *s;) {
    int w = 0, h = 0, n = 0;
    if (sscanf(s, "%dx%d%n", &w, &h, &n) != 2 && (sscanf(s, "%d%n", &w, &n) != 1 || !(h = w))) break;
    s += n + (s[n] == ',');
    pxl_image *host;
    if (pxl_image_create(dev[0].ctx, w, h, PXL_U8, 1, &host)) return fail(&dev[0], "image");
    uint64_t r = 0x9e3779b97f4a7c15ull;
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        ((uint8_t *)pxl_image_data(host) + (size_t)y * pxl_image_pitch(host))[x] = (uint8_t)(r >> 24);
      }
    for (int k = 0; k < NKERNELS; k++) {
      if (strcmp(ks, "all") && !strstr(ks, kernels[k])) continue;
      status |= row(dev, kernels[k], host, w, h, reps);
    }
    pxl_image_free(host);
  }
  for (int i = 0; i < 2; i++) pxl_context_free(dev[i].ctx);
  return status;
}
