/*
 * bench_model - the cost model against measurement: every example's entry timed on one
 * device, next to the time the model predicts (pxl_program_entry_predict), with the
 * correlation; and for every pipeline each form fusion could take (the model's choice,
 * as written, every exact fusion, and every exact fusion with each subset of its stages
 * kept as written), so that the model's choice is compared with the best of them. A form
 * predicted to take exactly the model's time is taken to be the model's form again: the
 * model's time is the best of those measurements (so that a noisy sample of the same
 * form does not count against it).
 *
 *   bench_model [--device cpu|cuda|opencl] [--size N] [--reps N] [--examples a,b|all]
 *
 * Defaults: --device cpu --size 2048 --reps 5 --examples all. The entry of an example is
 * the one `pxl run` takes: its last pipeline, else its first entry. Inputs are random
 * images of the entry's types; scalars and arrays come from the table `values` below.
 * A device with memory of its own gets device images (made before timing, outputs bound),
 * so no transfers are timed. Timing as in bench_backends: 2 warm-up runs, then per rep a
 * batch of at least 2 ms closed by pxl_sync; the median over reps.
 *
 * The correlation leaves out the entries with `until` loops (their iteration count
 * depends on the pixels; the model counts the most iterations they may make): they are
 * listed, marked "loop". Exit status 1 when a run fails.
 */
#define _POSIX_C_SOURCE 200809L
#include <pxl/pxl.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef PXL_EXAMPLES_DIR
#define PXL_EXAMPLES_DIR "examples"
#endif

/* Not warp.pxl and downscale.pxl: their entries make one image of another size than the
 * input, and bind() gives an entry of one output an output of the input's size
 * (resample.pxl's entry, laplace_level, returns two images, which the runs allocate). */
static const char *const examples[] = {
    "bilateral", "binarize", "blur3",    "boxr",      "boxsum", "canny",  "cartoon",     "conv5",  "copy",
    "dilate5",   "distance", "edges",    "equalize",  "erode3", "gauss5", "gradient73",  "gray601", "hist256",
    "hsv",       "hysteresis", "integral", "max",     "median3", "median5", "min",       "otsu",   "outline",   "reconstruct",
    "resample",  "rowsum",   "sobel3",   "sobel_xy", "sum",       "transpose"};
enum { NEXAMPLES = sizeof examples / sizeof *examples, MAXREPS = 50, MAXFORMS = 64 };

/* Values for the examples' scalar and array parameters, by name (others: 1). */
static const struct {
  const char *name, *value;
} values[] = {{"t", "40"},     {"r", "3"},      {"lo", "40"},          {"hi", "100"},        {"l2", "1"},
              {"levels", "4"}, {"cap", "16"},   {"sigma_color", "30"}, {"sigma_space", "2"}, {"div", "16"},
              {"taps", "1,4,6,4,1"}};

static const char *const loop_examples[] = {"canny", "distance", "hysteresis", "reconstruct"};

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static uint64_t rng = 0x9E3779B97F4A7C15u;
static unsigned rand8(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (unsigned)(rng >> 24) & 255;
}

static pxl_type type_of(const char *s, int *channels) {
  static const struct {
    const char *n;
    pxl_type t;
  } ts[] = {{"u8", PXL_U8}, {"u16", PXL_U16}, {"i16", PXL_I16}, {"u32", PXL_U32},
            {"i32", PXL_I32}, {"f32", PXL_F32}, {"f64", PXL_F64}};
  *channels = 1;
  for (size_t i = 0; i < sizeof ts / sizeof *ts; i++) {
    size_t n = strlen(ts[i].n);
    if (!strncmp(s, ts[i].n, n) && (!s[n] || s[n] == 'x')) {
      if (s[n] == 'x') *channels = atoi(s + n + 1);
      return ts[i].t;
    }
  }
  return PXL_U8;
}

/* One bound run: the context, program, entry, args and images. */
typedef struct {
  pxl_context *ctx;
  pxl_program *prog;
  int entry;
  const char *name;
  pxl_args *args;
  pxl_image *imgs[8];
  int nimgs;
  int device_memory;
} Run;

static int fail(Run *r, const char *what) {
  fprintf(stderr, "bench_model: %s: %s\n", what, pxl_errmsg(r->ctx));
  return 1;
}

static int make_image(Run *r, int w, int h, pxl_type t, int ch, int fill, pxl_image **out) {
  pxl_image *host = NULL;
  if (pxl_image_create(r->ctx, w, h, t, ch, &host)) return fail(r, "image");
  if (fill)
    for (int y = 0; y < h; y++) {
      unsigned char *row = (unsigned char *)pxl_image_data(host) + (size_t)y * pxl_image_pitch(host);
      size_t n = (size_t)w * ch * (t == PXL_U8 ? 1 : t == PXL_U16 || t == PXL_I16 ? 2 : t == PXL_F64 ? 8 : 4);
      for (size_t i = 0; i < n; i++) row[i] = (unsigned char)rand8();
    }
  if (!r->device_memory) return *out = host, 0;
  int rc = pxl_image_create_device(r->ctx, w, h, t, ch, out);
  if (!rc) rc = pxl_image_copy(r->ctx, host, *out);
  if (!rc) rc = pxl_sync(r->ctx);
  pxl_image_free(host);
  return rc ? fail(r, "device image") : 0;
}

/* Binds entry r->entry's parameters from its signature "kind T name(PARAMS) ...". */
static int bind(Run *r, int w, int h) {
  const char *sig = pxl_program_entry_signature(r->prog, r->entry);
  const char *p = sig ? strchr(sig, '(') : NULL;
  if (!p || !(r->args = pxl_args_new(r->ctx))) return fail(r, "signature");
  for (p++; *p && *p != ')';) {
    char param[128];
    size_t n = strcspn(p, ",)");
    snprintf(param, sizeof param, "%.*s", (int)(n < sizeof param ? n : sizeof param - 1), p);
    p += n + (p[n] == ',');
    while (*p == ' ') p++;
    char *colon = strchr(param, ':'); /* "image u8 in : mirror101" */
    if (colon) *colon = 0;
    int image = !strncmp(param, "image ", 6);
    char *type = param + (image ? 6 : 0), *name = strchr(type, ' ');
    if (!name) continue;
    *name++ = 0;
    char *br = strchr(name, '[');
    if (br) *br = 0;
    for (size_t k = strlen(name); k && name[k - 1] == ' ';) name[--k] = 0;
    if (image) {
      int ch;
      pxl_type t = type_of(type, &ch);
      if (r->nimgs == 7 || make_image(r, w, h, t, ch, 1, &r->imgs[r->nimgs])) return 1;
      if (pxl_args_image(r->args, name, r->imgs[r->nimgs++])) return fail(r, name);
      continue;
    }
    const char *v = "1";
    for (size_t k = 0; k < sizeof values / sizeof *values; k++)
      if (!strcmp(values[k].name, name)) v = values[k].value;
    if (br ? pxl_args_array_text(r->args, name, v) : pxl_args_scalar_text(r->args, name, v)) return fail(r, name);
  }
  if (pxl_program_entry_makes_image(r->prog, r->entry) && pxl_program_entry_output_count(r->prog, r->entry) <= 1) {
    pxl_type t;
    int ch;
    if (!pxl_program_entry_output(r->prog, r->entry, &t, &ch) || r->nimgs == 8 ||
        make_image(r, w, h, t, ch, 0, &r->imgs[r->nimgs]))
      return 1;
    pxl_args_output(r->args, r->imgs[r->nimgs++]);
  }
  return 0;
}

static int run_once(Run *r) {
  pxl_run_result *res = NULL;
  int rc = pxl_run(r->ctx, r->prog, r->name, r->args, &res);
  pxl_result_free(res);
  return rc ? fail(r, r->name) : 0;
}

static int time_runs(Run *r, int reps, double *ms) {
  for (int i = 0; i < 2; i++)
    if (run_once(r)) return 1;
  if (pxl_sync(r->ctx)) return fail(r, "sync");
  int n = 1;
  for (;;) {
    double t0 = now_ms();
    for (int i = 0; i < n; i++)
      if (run_once(r)) return 1;
    if (pxl_sync(r->ctx)) return fail(r, "sync");
    double t = now_ms() - t0;
    if (t >= 2.0 || n >= 1 << 14) break;
    n *= t > 0.2 ? (int)(2.0 / t) + 1 : 10;
  }
  double v[MAXREPS];
  for (int k = 0; k < reps; k++) {
    double t0 = now_ms();
    for (int i = 0; i < n; i++)
      if (run_once(r)) return 1;
    if (pxl_sync(r->ctx)) return fail(r, "sync");
    v[k] = (now_ms() - t0) / n;
  }
  qsort(v, (size_t)reps, sizeof *v, cmp_double);
  *ms = v[reps / 2];
  return 0;
}

/* The stages of pipeline `name` in the explain report, by name or, anonymous, by the
 * kernel they call (at most 6: 64 forms). */
static int stage_names(const char *explain, const char *name, char stages[6][64]) {
  char head[128];
  snprintf(head, sizeof head, "\npipeline %s:", name);
  const char *p = strstr(explain, head);
  int n = 0;
  for (p = p ? strchr(p + 1, '\n') : NULL; p && p[1] == ' ' && n < 6; p = strchr(p + 1, '\n')) {
    char s[64], k[64];
    if (sscanf(p + 1, " stage %63s = %63[A-Za-z0-9_]", s, k) == 2) {
      int dup = 0;
      const char *pick = strcmp(s, "(anonymous)") ? s : k;
      for (int i = 0; i < n; i++) dup |= !strcmp(stages[i], pick);
      if (!dup) snprintf(stages[n++], 64, "%s", pick);
    }
  }
  return n;
}

static double pearson(const double *x, const double *y, int n) {
  double mx = 0, my = 0, sxy = 0, sxx = 0, syy = 0;
  for (int i = 0; i < n; i++) mx += x[i] / n, my += y[i] / n;
  for (int i = 0; i < n; i++) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  return sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0); /* each row as it is measured (a run cut short keeps them) */
  const char *device = "cpu", *list = "all";
  int size = 2048, reps = 5;
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(argv[i], "--device") && v) device = argv[++i];
    else if (!strcmp(argv[i], "--size") && v) size = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--reps") && v) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--examples") && v) list = argv[++i];
    else {
      fprintf(stderr, "usage: bench_model [--device cpu|cuda|opencl] [--size N] [--reps N] [--examples a,b|all]\n");
      return 2;
    }
  }
  if (reps < 1 || reps > MAXREPS) reps = 5;
  if (size < 16 || size > 32768) size = 2048;
  const char *cls = !strcmp(device, "cpu") ? "cpu" : "gpu";
  pxl_context *ctx = pxl_context_new();
  if (!ctx || pxl_set_device(ctx, device)) {
    fprintf(stderr, "bench_model: device %s: %s\n", device, ctx ? pxl_errmsg(ctx) : "out of memory");
    return 1;
  }
  pxl_image *probe = NULL;
  int device_memory = !pxl_image_create_device(ctx, 16, 16, PXL_U8, 1, &probe);
  pxl_image_free(probe);
  printf("bench_model: device %s (%s), %dx%d, model class %s, median of %d\n\n", device, pxl_device_name(ctx), size,
         size, cls, reps);
  printf("| example | entry | predicted ms | measured ms | measured / predicted |\n|---|---|---:|---:|---:|\n");
  double px[NEXAMPLES], my[NEXAMPLES], lx[NEXAMPLES], ly[NEXAMPLES];
  int n = 0, bad = 0, nforms_rows = 0;
  char forms_table[16384] = "";
  for (int e = 0; e < NEXAMPLES; e++) {
    if (strcmp(list, "all")) {
      const char *s = strstr(list, examples[e]);
      size_t k = strlen(examples[e]);
      if (!s || (s != list && s[-1] != ',') || (s[k] && s[k] != ',')) continue;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.pxl", PXL_EXAMPLES_DIR, examples[e]);
    Run r = {.ctx = ctx, .device_memory = device_memory};
    pxl_set_fusion(ctx, PXL_FUSE_AUTO);
    pxl_set_fusion_keep(ctx, NULL);
    if (pxl_program_from_file(ctx, path, &r.prog)) {
      bad |= fail(&r, path);
      continue;
    }
    r.entry = 0;
    for (int i = 0; i < pxl_program_entry_count(r.prog); i++)
      if (!strncmp(pxl_program_entry_signature(r.prog, i), "pipeline ", 9)) r.entry = i;
    r.name = pxl_program_entry_name(r.prog, r.entry);
    double pred = 0, ms = 0;
    if (bind(&r, size, size) || pxl_program_entry_predict(ctx, r.prog, r.entry, cls, size, size, &pred) ||
        time_runs(&r, reps, &ms)) {
      bad = 1;
    } else {
      int loop = 0;
      for (size_t k = 0; k < sizeof loop_examples / sizeof *loop_examples; k++) loop |= !strcmp(loop_examples[k], examples[e]);
      printf("| %s | %s | %.4g | %.4g | %.2f%s |\n", examples[e], r.name, pred * 1e3, ms, ms / (pred * 1e3),
             loop ? " (loop)" : "");
      if (!loop) px[n] = pred * 1e3, my[n] = ms, lx[n] = log(pred * 1e3), ly[n] = log(ms), n++;
      /* a pipeline's forms */
      char stages[6][64];
      int ns = strncmp(pxl_program_entry_signature(r.prog, r.entry), "pipeline ", 9)
                   ? 0
                   : stage_names(pxl_program_explain(ctx, r.prog), r.name, stages);
      if (ns && !loop) {
        /* the model's choice is one of the forms; -1: as written; f >= 0: every exact fusion but
         * of the stages of subset f */
        double best = ms, mine = ms;
        char best_form[400] = "the model's";
        for (int f = -1; f < (1 << ns) && !bad; f++) {
          char keep[400] = "";
          for (int s = 0; s < ns; s++)
            if (f >= 0 && (f >> s & 1)) snprintf(keep + strlen(keep), sizeof keep - strlen(keep), "%s%s", *keep ? "," : "", stages[s]);
          pxl_set_fusion(ctx, f < 0 ? PXL_FUSE_OFF : PXL_FUSE_ALL);
          pxl_set_fusion_keep(ctx, keep);
          double t, tp = 0;
          if (time_runs(&r, reps, &t) || pxl_program_entry_predict(ctx, r.prog, r.entry, cls, size, size, &tp)) {
            bad = 1;
            break;
          }
          if (tp == pred && t < mine) mine = t; /* the model's form again (same prediction): its best time */
          if (t < best) best = t, snprintf(best_form, sizeof best_form, "%s", f < 0 ? "as written" : *keep ? keep : "every fusion");
        }
        if (!bad)
          snprintf(forms_table + strlen(forms_table), sizeof forms_table - strlen(forms_table),
                   "| %s | %.4g | %.4g (%s%s) | %.2f |\n", r.name, mine, best,
                   strchr(best_form, ' ') ? "" : "kept: ", best_form, mine / best),
              nforms_rows++;
      }
    }
    pxl_args_free(r.args);
    for (int i = 0; i < r.nimgs; i++) pxl_image_free(r.imgs[i]);
    pxl_program_free(r.prog);
  }
  printf("\ncorrelation of predicted and measured over %d entries without loops: %.3f (times), %.3f (log times)\n", n,
         pearson(px, my, n), pearson(lx, ly, n));
  if (nforms_rows)
    printf("\nfusion: the model's choice against every form tried\n\n| pipeline | model's choice ms | best form ms "
           "| model / best |\n|---|---:|---:|---:|\n%s",
           forms_table);
  pxl_context_free(ctx);
  return bad;
}
