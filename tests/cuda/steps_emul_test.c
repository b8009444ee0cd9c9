/*
 * steps_emul_test.c - the CUDA units that run several steps of a loop in one launch
 * (gen_gpu_steps), executed on the CPU against the interpreter, without a GPU.
 *
 * usage: steps_emul_test EMULATE_DIR FILE.pxl...
 *
 * For every kernel of the files that gen_gpu_steps_plan accepts over one of its images
 * (with that image's border clamp or constant, the others clamp), generates the unit,
 * compiles it as C++ with tests/cuda/emulate.hpp (EMULATE_DIR: the CUDA built-ins as
 * POSIX threads, a thread per CUDA thread, a block at a time) into a shared object,
 * loads it and launches it over images of awkward and of several-tile sizes, for 1, 3
 * and the plan's most steps (units on words; two of those cases for the others), with the
 * tiles in both orders (a.flip): the result must equal
 * the interpreter's kernel applied that many times, pixel for pixel, and the test's word
 * must say whether the last step changed a pixel. The pixels are random bytes, or drawn
 * from a few levels (0, 1, 254, 255 and random: the values that min/max windows and
 * Canny-like growing act on). `BORDER` in a file reads as clamp, as in nvrtc_test. Units
 * on words (GpuSteps.words) are counted: the files must give at least one of each border
 * mode and one with reads beside its window (Decl.sep_x: canny's grow), or the test
 * fails (it would test nothing new).
 *
 * On a GPU the same units run in the differential tests with PXL_LOOP_STEPS=1
 * (tests/diff/CMakeLists.txt); this test is what CI has of them. Exits 77 ("skipped: no
 * C++ compiler") when `c++` cannot be run.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api_internal.h"
#include "codegen/gpu/gen_gpu.h"
#include "common/read_file.h"
#include "image/image.h"
#include "interp/interp.h"
#include "runtime/gpu/gpu_core.h"
#include "util/alloc.h"

typedef int (*emu_launch_fn)(const void *args, unsigned gx, unsigned gy, unsigned bx, unsigned by);

static int passed, failed;

static uint64_t rng = 0x9e3779b97f4a7c15u;
static unsigned next_rand(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (unsigned)(rng >> 24);
}

/* Compiles unit `cu` with the emulator into dir/NAME.so and loads it; NULL on failure
 * (reported). */
static emu_launch_fn build(const char *dir, const char *emu_dir, const char *name, const StrBuf *cu, void **handle) {
  char path[512], cmd[2048];
  snprintf(path, sizeof path, "%s/%s.cu", dir, name);
  FILE *f = fopen(path, "w");
  if (!f || fwrite(cu->s, 1, cu->len, f) != cu->len) {
    if (f) fclose(f);
    printf("FAIL %s: cannot write %s\n", name, path);
    return NULL;
  }
  fclose(f);
  snprintf(path, sizeof path, "%s/%s.wrap.cpp", dir, name);
  f = fopen(path, "w");
  if (!f) {
    printf("FAIL %s: cannot write %s\n", name, path);
    return NULL;
  }
  fprintf(f, "#include \"emulate.hpp\"\n#include \"%s.cu\"\n", name);
  fprintf(f, "extern \"C\" int emu_launch(const void *args, unsigned gx, unsigned gy, unsigned bx, unsigned by) {\n"
             "  pxl_kargs a;\n  memcpy(&a, args, sizeof a);\n  return emu_grid(pxl_stage, a, gx, gy, bx, by);\n}\n");
  fclose(f);
  snprintf(cmd, sizeof cmd,
           "c++ -std=c++17 -O1 -shared -fPIC -pthread -D__CUDACC__ -I'%s' -I'%s' '%s' -o '%s/%s.so' > '%s/%s.log' 2>&1",
           emu_dir, dir, path, dir, name, dir, name);
  if (system(cmd)) {
    printf("FAIL %s: the unit did not compile with the emulator (%s/%s.log):\n", name, dir, name);
    snprintf(cmd, sizeof cmd, "head -20 '%s/%s.log'", dir, name);
    if (system(cmd)) {}
    return NULL;
  }
  snprintf(path, sizeof path, "%s/%s.so", dir, name);
  *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  emu_launch_fn fn = *handle ? (emu_launch_fn)dlsym(*handle, "emu_launch") : NULL;
  if (!fn) printf("FAIL %s: cannot load %s: %s\n", name, path, dlerror());
  return fn;
}

static GpuKImage kimage(const struct pxl_image *im) {
  return (GpuKImage){(uint64_t)(uintptr_t)im->data, im->width, im->height, (int64_t)im->pitch};
}

/* A w x h u8 image of random bytes, or of a few levels (0, 1, 254, 255) and random bytes. */
static struct pxl_image *input(int w, int h, bool levels, Err *e) {
  struct pxl_image *im = NULL;
  if (image_new(w, h, PXL_U8, 1, &im, e)) return NULL;
  static const uint8_t few[] = {0, 1, 254, 255};
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      unsigned r = next_rand();
      ((uint8_t *)image_row(im, y))[x] = (uint8_t)(levels && r % 5 < 4 ? few[r % 5] : next_rand());
    }
  return im;
}

static bool same_image(const struct pxl_image *a, const struct pxl_image *b, int *fx, int *fy) {
  for (int y = 0; y < a->height; y++)
    for (int x = 0; x < a->width; x++)
      if (((const uint8_t *)image_row(a, y))[x] != ((const uint8_t *)image_row(b, y))[x]) {
        *fx = x, *fy = y;
        return false;
      }
  return true;
}

/* One case: kernel D stepped `steps` times over its image `carried` (the others: the
 * input too), w x h. */
static void run_case(const char *what, const Decl *D, const Border *b, int carried, const GpuLaunch *L,
                     emu_launch_fn launch, int w, int h, int steps, bool levels, bool flip) {
  Err e = {0};
  struct pxl_image *src = input(w, h, levels, &e), *ab[2] = {NULL, NULL}, *got = NULL;
  if (!src || image_new(w, h, PXL_U8, 1, &ab[0], &e) || image_new(w, h, PXL_U8, 1, &ab[1], &e) ||
      image_new(w, h, PXL_U8, 1, &got, &e)) {
    printf("FAIL %s: %s\n", what, e.msg);
    failed++;
    goto done;
  }
  /* the interpreter, `steps` times: ab[s % 2] from the step before */
  const struct pxl_image *prev = src, *ref = src;
  bool changed = false;
  for (int s = 0; s < steps; s++) {
    ImgArg ia[PXL_GPU_MAX_IMAGES];
    for (int i = 0; i < D->nimages; i++) ia[i] = (ImgArg){i == carried ? prev : src, b[i]};
    if (interp_kernel(D, ia, NULL, ab[s % 2], &e)) {
      printf("FAIL %s: interpreter: %s\n", what, e.msg);
      failed++;
      goto done;
    }
    int fx, fy;
    changed = !same_image(prev, ab[s % 2], &fx, &fy);
    prev = ref = ab[s % 2];
  }
  /* the unit, once: a.n steps */
  GpuKArgs a;
  memset(&a, 0, sizeof a);
  for (int i = 0; i < D->nimages; i++) a.in[i] = kimage(src);
  a.out = kimage(got);
  uint32_t res[4] = {0};
  a.res = (uint64_t)(uintptr_t)res;
  a.n = steps;
  a.flip = flip;
  unsigned gx = (unsigned)((w + (int)(L->bx * L->px) - 1) / (int)(L->bx * L->px));
  unsigned gy = (unsigned)((h + (int)(L->by * L->py) - 1) / (int)(L->by * L->py));
  if (launch(&a, gx, gy, L->bx, L->by)) {
    printf("FAIL %s: the emulator could not launch %u x %u blocks of %u x %u\n", what, gx, gy, L->bx, L->by);
    failed++;
    goto done;
  }
  int fx = 0, fy = 0;
  if (!same_image(ref, got, &fx, &fy)) {
    printf("FAIL %s: pixel (%d, %d) is %d, the interpreter's %d\n", what, fx, fy,
           ((uint8_t *)image_row(got, fy))[fx], ((const uint8_t *)image_row(ref, fy))[fx]);
    failed++;
  } else if ((res[0] != 0) != changed) {
    printf("FAIL %s: the test says %s, the last step %s\n", what, res[0] ? "changed" : "unchanged",
           changed ? "changed pixels" : "changed none");
    failed++;
  } else {
    passed++;
  }
done:
  image_free(src);
  image_free(ab[0]);
  image_free(ab[1]);
  image_free(got);
}

static const char *border_word(BorderKind k) { return k == B_CLAMP ? "clamp" : "constant"; }

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: steps_emul_test EMULATE_DIR FILE.pxl...\n");
    return 2;
  }
  if (system("c++ --version > /dev/null 2>&1")) {
    printf("skipped: no C++ compiler\n");
    return 77;
  }
  char dir[] = "/tmp/pxl-steps-emul-XXXXXX";
  if (!mkdtemp(dir)) {
    printf("FAIL: cannot make a temporary directory\n");
    return 1;
  }
  /* sizes: one pixel, smaller than a tile, one tile's edges, several tiles with interior ones */
  static const int sizes[][2] = {{1, 1}, {5, 3}, {129, 70}, {300, 211}};
  unsigned words_made = 0; /* bit 0: clamp, bit 1: constant */
  pxl_context *ctx = pxl_context_new();
  for (int f = 2; f < argc; f++) {
    char *src = read_file(argv[f]);
    if (!src) {
      printf("FAIL %s: cannot read\n", argv[f]);
      failed++;
      continue;
    }
    for (char *p = strstr(src, "BORDER"); p; p = strstr(p, "BORDER")) memcpy(p, "clamp ", 6);
    pxl_program *prog;
    if (pxl_program_from_string(ctx, argv[f], src, &prog)) {
      printf("FAIL %s: %s\n", argv[f], pxl_errmsg(ctx));
      failed++;
      free(src);
      continue;
    }
    const Program *P = pxl_program_ir(prog);
    for (int d = 0; d < P->ndecls; d++) {
      const Decl *D = P->decls[d];
      if (D->kind != D_KERNEL || D->nouts || D->global || D->nimages > PXL_GPU_MAX_IMAGES) continue;
      for (int j = 0; j < D->nimages; j++)
        for (int kb = 0; kb < 2; kb++) {
          Border b[PXL_GPU_MAX_IMAGES];
          for (int m = 0; m < PXL_GPU_MAX_IMAGES; m++) b[m] = (Border){B_CLAMP, 0};
          b[j] = (Border){kb ? B_CONSTANT : B_CLAMP, kb ? 7 : 0};
          GpuSteps plan;
          bool scalars = false;
          for (int i = 0; i < D->nparams; i++) scalars = scalars || !D->params[i]->is_image;
          /* u8 images only (the inputs made here) and no scalars (none given) */
          bool bytes = D->type.s == T_U8 && D->type.lanes == 1;
          for (int i = 0; i < D->nparams; i++)
            if (D->params[i]->is_image && (D->params[i]->type.s != T_U8 || D->params[i]->type.lanes != 1)) bytes = false;
          if (scalars || !bytes || !gen_gpu_steps_plan(D, b, j, &plan)) continue;
          StrBuf cu = {0};
          Err e = {0};
          GpuLaunch L;
          char name[200], what[400];
          snprintf(name, sizeof name, "%s_%d_%s", D->name, j, border_word(b[j].kind));
          if (gen_gpu_steps(&cu, D, b, GPU_CUDA, &plan, &L, &e)) {
            printf("FAIL %s %s: %s\n", argv[f], name, e.msg);
            failed++;
            sb_free(&cu);
            continue;
          }
          if (plan.words) words_made |= (1u << kb) | (D->sep_x ? 4u : 0u);
          void *h = NULL;
          emu_launch_fn fn = build(dir, argv[1], name, &cu, &h);
          sb_free(&cu);
          if (!fn) {
            failed++;
            if (h) dlclose(h);
            continue;
          }
          /* the units on words in every case; the others (run on GPUs by the differential
           * tests, which the emulator's barriers make slow here) at two */
          int ks[] = {1, 3, plan.k};
          for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++)
            for (int k = 0; k < 3; k++) {
              if (!plan.words && (z + k) % 6 != 1 && (z + k) % 6 != 4) continue;
              bool levels = (z + k) % 2 == 0, flip = k == 1;
              snprintf(what, sizeof what, "%s %s%s, %dx%d, %d steps, %s pixels%s", argv[f], name,
                       plan.words ? " (words)" : "", sizes[z][0], sizes[z][1], ks[k], levels ? "levelled" : "random",
                       flip ? ", tiles reversed" : "");
              run_case(what, D, b, j, &L, fn, sizes[z][0], sizes[z][1], ks[k], levels, flip);
            }
          dlclose(h);
        }
    }
    free(src);
  }
  pxl_context_free(ctx);
  if ((words_made & 3) != 3) {
    printf("FAIL: no unit on words for the %s border among the files (steps_words: nothing tested)\n",
           words_made & 1 ? "constant" : "clamp");
    failed++;
  }
  if (!(words_made & 4)) {
    printf("FAIL: no unit on words with reads beside its window (Decl.sep_x) among the files\n");
    failed++;
  }
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd)) {}
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
