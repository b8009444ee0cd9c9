/*
 * nvrtc_test.c - every stage instance's generated CUDA compiles with NVRTC to PTX.
 *
 * Runs without a GPU (CI): NVRTC only. For every entry of the given .pxl files and every
 * border mode, generates the CUDA translation unit and compiles it for sm_90 (Hopper),
 * with the autotuner's tile shapes (rows 1, 2, 4, 8; 4 or 8 bytes) in turn across the
 * border modes - clamp for every entry and one of the other five in turn (mirror for
 * one entry, mirror101 for the next, ...: CI's time; every unit of every mode still goes
 * through the generator, PXL_TEST_FULL=1 compiles them all, and the GPU machines' tests
 * compile and run them all); then the reductions that test pipeline loops' until condition on GPUs
 * (exec_loop_compare_source, runtime/loops.c), named "<loop test>"; and for every kernel
 * image of the kernel's own type, with clamp (compiled) and constant (generated only)
 * borders, the unit that runs several steps of a loop (gen_gpu_steps) wherever
 * gen_gpu_steps_plan accepts it - which
 * it must for the loop bodies of the examples (distance's step4 and step8, canny's grow,
 * reconstruct's dilate_under and erode_over, hysteresis's follow); and the fused kernels
 * of the pipelines' GPU form (analysis/fuse.c), with the borders of their uses;
 * and every variant of the device passes of global operators (runtime/cuda/ops.cu);
 * exits 77 ("skipped: no NVRTC") when NVRTC cannot be loaded.
 *
 * With PXL_TEST_QUICK=1 (the sanitizer build) every unit is generated but only the
 * clamp units of every 4th entry go through NVRTC: the sanitizers watch the generator,
 * NVRTC under them takes minutes, and the release suite compiled every unit.
 *
 * With PXL_DUMP_CUDA=DIR set, also writes each unit (clamp border) to DIR/NAME.cu and
 * each scan pass to DIR/NAME.scanP.cu (P: its GpuScanPass; clamp for even P, constant for
 * odd, as generated here), for reading or for nvcc
 * -Xptxas -v (registers, spills); PXL_CUDA_TILE_ROWS and _BYTES choose the dumped units'
 * tile shape.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "common/read_file.h"
#include "analysis/cost.h"
#include "codegen/gpu/gen_gpu.h"
#include "runtime/backend.h"
#include "runtime/cuda/cuda_api.h"
#include "runtime/cuda/cuda_internal.h"
#include "util/alloc.h"

/* The examples' loop bodies that must run as iterated stencils: a bit each (0: others). */
static const char *const loop_bodies[] = {"", "step4", "step8", "grow", "dilate_under", "erode_over", "follow"};
enum { NBODIES = sizeof loop_bodies / sizeof *loop_bodies };

static int loop_body(const char *name) {
  for (int i = 1; i < NBODIES; i++)
    if (!strcmp(name, loop_bodies[i])) return i;
  return 0;
}

/* A dumped unit's tile shape: PXL_CUDA_TILE_ROWS (and _BYTES, default 4) where set with
 * PXL_DUMP_CUDA, else t. */
static GpuTile dumped_tile(GpuTile t) {
  const char *rows = getenv("PXL_CUDA_TILE_ROWS"), *bytes = getenv("PXL_CUDA_TILE_BYTES");
  if (!getenv("PXL_DUMP_CUDA") || !rows) return t;
  return (GpuTile){atoi(rows), bytes ? atoi(bytes) : 4};
}

/* The units generated so far: passed and failed, of which compiled went through NVRTC. */
typedef struct {
  const CudaApi *api;
  int passed, failed, compiled;
} Units;

/* Ends a generated unit cu (rc: its generator's status, e: its error): written to
 * $PXL_DUMP_CUDA/file when file is given and the variable set, compiled when `compile`,
 * counted, reported with `what` when it fails, freed. */
static void unit_done(Units *u, StrBuf *cu, int rc, Err *e, const char *file, bool compile, const char *what) {
  const char *dump = getenv("PXL_DUMP_CUDA");
  if (!rc && dump && file) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dump, file);
    FILE *f = fopen(path, "w");
    if (f) {
      fputs(cu->s, f);
      fclose(f);
    }
  }
  char *ptx = NULL;
  if (!rc && compile) rc = cuda_compile_ptx(u->api, cu->s, 90, &ptx, e), u->compiled++;
  if (rc) {
    printf("FAIL %s: %s\n", what, e->msg);
    u->failed++;
  } else {
    u->passed++;
  }
  PXL_FREE(ptx);
  sb_free(cu);
}

int main(int argc, char **argv) {
  const CudaApi *api;
  Err err = {0};
  int st = cuda_load_nvrtc(&api, &err);
  if (st == PXL_EDEVICE) { /* absent; anything else is a failure, never a skip */
    printf("skipped: no NVRTC (%s)\n", err.msg);
    return 77;
  }
  if (st) {
    printf("FAIL: NVRTC did not load (%s): %s\n", pxl_status_name(st), err.msg);
    return 1;
  }
  const char *q = getenv("PXL_TEST_QUICK");
  const bool quick = q && *q && strcmp(q, "0");
  const char *fl = getenv("PXL_TEST_FULL");
  const bool full = fl && *fl && strcmp(fl, "0");
  static const BorderKind kinds[] = {B_CLAMP, B_MIRROR, B_MIRROR101, B_WRAP, B_CONSTANT, B_NONE};
  Units u = {api, 0, 0, 0};
  unsigned steps_planned = 0, tests_made = 0, bodies_given = 0;
  int entries = 0; /* entries so far: which border modes this one compiles */
  pxl_context *ctx = pxl_context_new();
  for (int i = 1; i <= argc; i++) {
    const char *name = i < argc ? argv[i] : "<loop test>";
    char *src = i < argc ? read_file(argv[i]) : strdup(exec_loop_compare_source);
    if (!src) {
      printf("FAIL %s: cannot read\n", name);
      u.failed++;
      continue;
    }
    for (char *p = strstr(src, "BORDER"); p; p = strstr(p, "BORDER")) memcpy(p, "clamp ", 6);
    pxl_program *prog;
    if (pxl_program_from_string(ctx, name, src, &prog)) {
      printf("FAIL %s: %s\n", name, pxl_errmsg(ctx));
      u.failed++;
      free(src);
      continue;
    }
    const Program *P = pxl_program_ir(prog);
    for (int d = 0; d < P->ndecls; d++) bodies_given |= 1u << loop_body(P->decls[d]->name);
    /* the fused kernels of the pipelines' GPU form, with the borders of their uses */
    for (int d = 0; d < P->ndecls; d++) {
      const Decl *F = P->decls[d]->kind == D_PIPELINE ? P->decls[d]->fused[COST_GPU] : NULL;
      for (int v = 0; F && v < F->nvalues; v++) {
        const PipeValue *pv = &F->values[v];
        if (pv->fused || !pv->callee || pv->callee == P->decls[d]->values[v].callee) continue;
        Border b[PXL_GPU_MAX_IMAGES];
        for (int j = 0; j < PXL_GPU_MAX_IMAGES; j++) b[j] = (Border){B_CLAMP, 0};
        for (int a = 0; a < pv->nargs; a++)
          if (pv->callee->params[a]->is_image && pv->callee->params[a]->img_index < PXL_GPU_MAX_IMAGES)
            b[pv->callee->params[a]->img_index] = pv->args[a].border;
        StrBuf cu = {0};
        Err e = {0};
        GpuLaunch launch;
        GpuTile tile = {4, 4};
        char file[300], what[600];
        int rc = gen_gpu_stage(&cu, pv->callee, b, GPU_CUDA, &tile, &launch, &e);
        snprintf(file, sizeof file, "%s.fused.%s.cu", P->decls[d]->name, pv->callee->name);
        snprintf(what, sizeof what, "%s %s: fused kernel of %s", name, P->decls[d]->name, pv->callee->name);
        unit_done(&u, &cu, rc, &e, file, true, what);
      }
    }
    for (int d = 0, out = 0; d < P->ndecls; d++) {
      const Decl *D = P->decls[d];
      if (D->kind == D_PIPELINE) continue;
      if (D->nouts) { /* several outputs: each output's projection, in turn (d again) */
        D = D->outs[out];
        if (++out < P->decls[d]->nouts) d--;
        else out = 0;
      }
      if (D->global) { /* a global operator: its maps, in turn (d again); the pass is the host's */
        D = D->gmap[out];
        if (out + 1 < PXL_MAX_GMAPS && P->decls[d]->gmap[out + 1]) out++, d--;
        else out = 0;
      }
      char file[300], what[600];
      entries++;
      for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        Border b[PXL_GPU_MAX_IMAGES];
        for (int j = 0; j < PXL_GPU_MAX_IMAGES; j++) b[j] = (Border){kinds[k], 3};
        StrBuf cu = {0};
        Err e = {0};
        GpuLaunch launch;
        GpuTile tile = {1 << (k % 4), 4 << (k % 2)}; /* the autotuner's candidates, in turn */
        if (kinds[k] == B_CLAMP) tile = dumped_tile(tile);
        int rc = gen_gpu_stage(&cu, D, b, GPU_CUDA, &tile, &launch, &e);
        snprintf(file, sizeof file, "%s.cu", D->name);
        snprintf(what, sizeof what, "%s %s border %s", name, D->name, border_name(kinds[k]));
        bool compile = quick  ? k == 0 && entries % 4 == 0
                       : full ? true
                              : k == 0 || (int)k == 1 + entries % 5;
        unit_done(&u, &cu, rc, &e, kinds[k] == B_CLAMP ? file : NULL, compile, what);
      }
      /* several steps of a loop over image j (clamp, constant) */
      for (int j = 0; j < D->nimages && D->kind == D_KERNEL; j++)
        for (int kb = 0; kb < 2; kb++) {
          Border b[PXL_GPU_MAX_IMAGES];
          for (int m = 0; m < PXL_GPU_MAX_IMAGES; m++) b[m] = (Border){kb ? B_CONSTANT : B_CLAMP, 0};
          GpuSteps plan;
          if (!gen_gpu_steps_plan(D, b, j, &plan)) continue;
          steps_planned |= 1u << loop_body(D->name);
          StrBuf cu = {0};
          Err e = {0};
          GpuLaunch launch;
          int rc = gen_gpu_steps(&cu, D, b, GPU_CUDA, &plan, &launch, &e);
          snprintf(file, sizeof file, "%s.steps%d.cu", D->name, j);
          snprintf(what, sizeof what, "%s %s steps over image %d (%s)", name, D->name, j, kb ? "constant" : "clamp");
          /* the constant border's unit differs in one line (CI time): generated only */
          unit_done(&u, &cu, rc, &e, kb ? NULL : file, !kb, what);
        }
      /* a loop's until test computed by its body's kernel, over image j (clamp, and the
       * tile shapes in turn): every loop body of the examples, the others generated only */
      for (int j = 0; j < D->nimages && D->kind == D_KERNEL; j++) {
        Border b[PXL_GPU_MAX_IMAGES];
        for (int m = 0; m < PXL_GPU_MAX_IMAGES; m++) b[m] = (Border){j % 2 ? B_CONSTANT : B_CLAMP, 0};
        if (!gen_gpu_test_ok(D, b, j)) continue;
        bool body = loop_body(D->name) != 0;
        tests_made |= 1u << loop_body(D->name);
        StrBuf cu = {0};
        Err e = {0};
        GpuLaunch launch;
        GpuTile tile = dumped_tile((GpuTile){1 << (entries % 4), 4 << (entries % 2)});
        int rc = gen_gpu_stage_test(&cu, D, b, GPU_CUDA, &tile, j, &launch, &e);
        snprintf(file, sizeof file, "%s.test%d.cu", D->name, j);
        snprintf(what, sizeof what, "%s %s testing image %d", name, D->name, j);
        unit_done(&u, &cu, rc, &e, body ? file : NULL, body, what);
      }
      /* a scan's prefix passes: every kind, those its scan does not use too (the sequential
       * ones of an integer scan, the parallel unfused ones of a float sum), but the fused
       * scans' own passes only for them, with clamp and constant borders in turn (a fused
       * scan's passes read its images); quick: compiled only those it uses */
      GpuScanPass used[PXL_GPU_SCAN_MAX_PASSES];
      int nused = D->scan ? gen_gpu_scan_passes(D, used) : 0;
      for (int pass = GSP_ROWS_SEQ; pass <= GSP_TILES && D->scan; pass++) {
        if (!gen_gpu_scan_pass_exists(D, (GpuScanPass)pass)) continue;
        bool uses = false;
        for (int k = 0; k < nused; k++) uses = uses || used[k] == (GpuScanPass)pass;
        StrBuf cu = {0};
        Err e = {0};
        GpuLaunch launch;
        Border b[PXL_GPU_MAX_IMAGES];
        for (int j = 0; j < PXL_GPU_MAX_IMAGES; j++) b[j] = (Border){pass % 2 ? B_CONSTANT : B_CLAMP, 3};
        int rc = gen_gpu_scan(&cu, D, b, GPU_CUDA, (GpuScanPass)pass, &launch, &e);
        snprintf(what, sizeof what, "%s %s scan pass %d", name, D->name, pass);
        char sfile[300];
        snprintf(sfile, sizeof sfile, "%s.scan%d.cu", D->name, pass);
        unit_done(&u, &cu, rc, &e, sfile, !quick || uses, what);
      }
    }
    pxl_program_free(prog);
    free(src);
  }
  pxl_context_free(ctx);
  /* the device passes of global operators (runtime/cuda/ops.cu), every variant */
  for (int v = 0; v < CUDA_OPS_VARIANTS; v++) {
    size_t len = 0;
    char *src = cuda_ops_source(v, &len), what[64], file[64];
    StrBuf cu = {0};
    Err e = {0};
    if (src) sb_append(&cu, src, len);
    PXL_FREE(src);
    snprintf(what, sizeof what, "ops.cu variant %d", v);
    snprintf(file, sizeof file, "ops%d.cu", v);
    unit_done(&u, &cu, src ? PXL_OK : err_set(&e, PXL_ENOMEM, "out of memory"), &e, file, !quick || v % 4 == 0,
              what);
  }
  for (int i = 1; i < NBODIES; i++)
    if ((bodies_given >> i & 1) && !(steps_planned >> i & 1)) {
      printf("FAIL %s: its loop's steps were not planned (gen_gpu_steps_plan)\n", loop_bodies[i]);
      u.failed++;
    }
  for (int i = 1; i < NBODIES; i++)
    if ((bodies_given >> i & 1) && !(tests_made >> i & 1)) {
      printf("FAIL %s: its kernel cannot compute its loop's until test (gen_gpu_test_ok)\n", loop_bodies[i]);
      u.failed++;
    }
  printf("%d units compiled with NVRTC\n", u.compiled);
  printf("%d passed, %d failed\n", u.passed, u.failed);
  return u.failed != 0;
}
