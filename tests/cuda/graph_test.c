/*
 * graph_test.c - pipelines replayed from CUDA graphs compute what they compute without.
 *
 * Runs the edges pipeline (examples/edges.pxl: five stages, intermediates of two types)
 * on device images again and again, with new pixels in the same input buffer before every
 * run, and compares each output with the reference interpreter's on the same pixels: the
 * second run of a key is recorded, later ones are replays, which must see the new input.
 * A new threshold is a new run key (recorded anew); an output elsewhere is another key;
 * a host-image run is never recorded. Checks that the backend did record graphs (the
 * count of recorded runs), so the replay path cannot go untested. Then a pipeline loop of
 * a fixed count, recorded whole and replayed; one with an until test that runs, never
 * recorded; and one whose count is too small for its test to run, recorded.
 * Prints "skipped: no CUDA device (REASON)" and exits 77 only when the backend reports
 * the device absent (tests/common/gpu_device.h); a device that opens and then fails
 * fails the test.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "common/check.h"
#include "common/gpu_device.h"
#include "pxl/pxl.h"

static unsigned char random_byte(void) { return (unsigned char)(random_u64() >> 24); }

/* Random pixels, in smooth blobs so that the threshold output is not all one value. */
static void fill(pxl_image *img, int seed) {
  unsigned char *p = pxl_image_data(img);
  for (int y = 0; y < pxl_image_height(img); y++)
    for (int x = 0; x < pxl_image_width(img); x++)
      p[(size_t)y * pxl_image_pitch(img) + x] =
          (unsigned char)(((x / 7 + y / 5 + seed) % 3) * 90 + (random_byte() & 15));
}

static int same(pxl_image *a, pxl_image *b) {
  for (int y = 0; y < pxl_image_height(a); y++)
    if (memcmp((char *)pxl_image_data(a) + (size_t)y * pxl_image_pitch(a),
               (char *)pxl_image_data(b) + (size_t)y * pxl_image_pitch(b), (size_t)pxl_image_width(a)))
      return 0;
  return 1;
}

/* Runs edges(in, t) on ctx into out (NULL: a new image, returned in *made). */
static int run(pxl_context *ctx, pxl_program *prog, pxl_image *in, double t, pxl_image *out, pxl_image **made) {
  pxl_args *args = pxl_args_new(ctx);
  pxl_run_result *res = NULL;
  int st = pxl_args_image(args, "in", in);
  if (!st) st = pxl_args_scalar(args, "t", t);
  if (!st && out) st = pxl_args_output(args, out);
  if (!st) st = pxl_run(ctx, prog, "edges", args, &res);
  if (!st && made) *made = pxl_result_take_image(res);
  pxl_result_free(res);
  pxl_args_free(args);
  return st;
}

/* A pipeline loop of a fixed count is recorded whole; one with an until test that runs
 * is not, but the iterations between its tests are (chunks, runtime/loops.c); one too
 * short for its test to run (16 iterations or fewer) is recorded whole. */
static const char loop_source[] =
    "kernel u8 smooth(image u8 a) { return (a(-1, 0) + 2 * a(0, 0) + a(1, 1) + 2) / 4; }\n"
    "pipeline iter(image u8 in, u32 n) -> image u8 {\n"
    "  image u8 d = smooth(in);\n  loop (n) { d = smooth(d); }\n  return d;\n}\n"
    "pipeline settle(image u8 in, u32 n) -> image u8 {\n"
    "  image u8 d = smooth(in);\n  loop (n) until unchanged(d) { d = smooth(d); }\n  return d;\n}\n"
    "kernel u8 up(image u8 a) { return a(0, 0) + 1; }\n" /* saturates: changes for 255 - min iterations */
    "pipeline rise(image u8 in, u32 n) -> image u8 {\n"
    "  image u8 d = smooth(in);\n  loop (n) until unchanged(d) { d = up(d); }\n  return d;\n}\n";

/* Runs ENTRY(in, n) of the loop source on ctx into out (NULL: a new image in *made). */
static int run_loop(pxl_context *ctx, pxl_program *prog, const char *entry, pxl_image *in, int n, pxl_image *out,
                    pxl_image **made) {
  pxl_args *args = pxl_args_new(ctx);
  pxl_run_result *res = NULL;
  int st = pxl_args_image(args, "in", in);
  if (!st) st = pxl_args_scalar(args, "n", n);
  if (!st && out) st = pxl_args_output(args, out);
  if (!st) st = pxl_run(ctx, prog, entry, args, &res);
  if (!st && made) *made = pxl_result_take_image(res);
  pxl_result_free(res);
  pxl_args_free(args);
  return st;
}

/* Runs 0-3 of iter with n=7 (recorded at run 1, replayed at 2 and 3, new pixels each
 * time), 4-5 with n=2 (a new key), 6-8 of rise with n=50 (not recorded whole, but
 * chunks of its iterations are from run 6 on: in one run, the chunks between tests start
 * from the same buffers), 9-11 of settle with n=12 (recorded at run 10); every output equal to the interpreter's, and the count of recorded runs as
 * expected after each. */
static void fixed_loops(pxl_context *gpu, pxl_context *ref, pxl_image *host, pxl_image *din, pxl_image *dout) {
  pxl_program *prog = NULL, *rprog = NULL;
  if (pxl_program_from_string(gpu, "loops", loop_source, &prog) ||
      pxl_program_from_string(ref, "loops", loop_source, &rprog)) {
    CHECK(0, "loop source: %s %s", pxl_errmsg(gpu), pxl_errmsg(ref));
    return;
  }
  int base = pxl_context_cuda_graphs(gpu), chunks = 0, last = 0;
  for (int i = 0; i < 12; i++) {
    const char *entry = i < 6 ? "iter" : i < 9 ? "rise" : "settle";
    int n = i < 4 ? 7 : i < 6 ? 2 : i < 9 ? 50 : 12;
    pxl_image *got = NULL, *want = NULL;
    fill(host, 20 + i);
    int st = pxl_image_copy(gpu, host, din);
    if (!st) st = run_loop(gpu, prog, entry, din, n, dout, NULL);
    if (!st) st = pxl_image_to_host(gpu, dout, &got);
    CHECK(!st, "loop run %d (%s, n=%d): %s", i, entry, n, pxl_errmsg(gpu));
    CHECK(!run_loop(ref, rprog, entry, host, n, NULL, &want), "reference loop run %d: %s", i, pxl_errmsg(ref));
    if (got && want) CHECK(same(got, want), "loop run %d (%s, n=%d): the output differs from the interpreter's", i,
                           entry, n);
    int graphs = pxl_context_cuda_graphs(gpu) - base;
    if (i >= 6 && i <= 8) { /* rise's chunks: some at run 6; runs 7, 8 replay them, or record
                             * their own where the pool gave other buffers */
      if (i == 6) chunks = graphs - 2;
      CHECK(chunks >= 1 && graphs - 2 <= chunks * (i - 5),
            "after loop run %d: %d chunks of the until loop recorded, %d after run 6", i, graphs - 2, chunks);
      last = graphs;
    } else {
      int expect = i < 1 ? 0 : i < 5 ? 1 : i < 6 ? 2 : i < 10 ? last : last + 1;
      CHECK(graphs == expect, "after loop run %d: %d recorded loop runs, expected %d", i, graphs, expect);
    }
    pxl_image_free(got);
    pxl_image_free(want);
  }
  pxl_program_free(prog);
  pxl_program_free(rprog);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: graph_test examples/edges.pxl\n");
    return 2;
  }
  int open = gpu_device_check("cuda"); /* skipped only where the device is absent */
  if (open) return open;
  pxl_context *gpu = pxl_context_new(), *ref = pxl_context_new();
  const int W = 333, H = 211;
  pxl_image *host = NULL, *din = NULL, *dout = NULL, *dout2 = NULL;
  pxl_program *prog = NULL, *rprog = NULL;
  int st = !gpu || !ref ? PXL_ENOMEM : pxl_set_device(ref, "ref");
  if (!st) st = pxl_set_device(gpu, "cuda");
  if (!st) st = pxl_image_create_device(gpu, W, H, PXL_U8, 1, &din); /* the device is opened at first use */
  if (!st && (pxl_program_from_file(gpu, argv[1], &prog) || pxl_program_from_file(ref, argv[1], &rprog)))
    st = PXL_ERROR;
  if (!st) st = pxl_image_create(gpu, W, H, PXL_U8, 1, &host);
  if (!st) st = pxl_image_create_device(gpu, W, H, PXL_U8, 1, &dout);
  if (!st) st = pxl_image_create_device(gpu, W, H, PXL_U8, 1, &dout2);
  if (st) {
    printf("FAIL (%s): %s\n", pxl_status_name(st), gpu ? pxl_errmsg(gpu) : "out of memory");
    failed = 1;
  }
  /* runs 0-3 t=40 (record at 1, replays 2 and 3), 4-6 t=90 (a new key), 7-8 into another
   * output, 9 host images (never recorded) */
  for (int i = 0; i < 10 && !st; i++) {
    double t = i < 4 ? 40 : 90;
    pxl_image *out = i < 7 ? dout : dout2, *got = NULL, *want = NULL;
    fill(host, i);
    if (i < 9) {
      st = pxl_image_copy(gpu, host, din);
      if (!st) st = run(gpu, prog, din, t, out, NULL);
      if (!st) st = pxl_image_to_host(gpu, out, &got);
    } else {
      st = run(gpu, prog, host, t, NULL, &got);
    }
    CHECK(!st, "run %d: %s", i, pxl_errmsg(gpu));
    CHECK(!run(ref, rprog, host, t, NULL, &want), "reference run %d: %s", i, pxl_errmsg(ref));
    if (got && want) CHECK(same(got, want), "run %d (t=%g): the output differs from the interpreter's", i, t);
    int graphs = pxl_context_cuda_graphs(gpu), expect = i < 1 ? 0 : i < 5 ? 1 : i < 8 ? 2 : 3;
    CHECK(graphs == expect, "after run %d: %d recorded pipeline runs, expected %d", i, graphs, expect);
    pxl_image_free(got);
    pxl_image_free(want);
  }
  if (!st) fixed_loops(gpu, ref, host, din, dout);
  pxl_image_free(host);
  pxl_image_free(din);
  pxl_image_free(dout);
  pxl_image_free(dout2);
  pxl_program_free(prog);
  pxl_program_free(rprog);
  pxl_context_free(gpu);
  pxl_context_free(ref);
  printf("%s\n", failed ? "FAILED" : "graph_test: all runs agree with the interpreter");
  return failed ? 1 : 0;
}
