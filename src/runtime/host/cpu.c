/*
 * cpu.c - the CPU backend: JIT compilation of generated C (see backend.h).
 *
 * For each stage instance (declaration + border per image) the C generator writes a
 * translation unit; its text, the compiler and the flags are hashed into the cache key.
 * A module found in memory is reused; else pxl-KEY.so in the cache directory is loaded;
 * else pxl-KEY.c is written there and compiled into pxl-KEY.so (temporary name, then
 * rename, so concurrent processes never load a half-written file). Compiler messages go
 * to pxl-KEY.log and, on failure, into the error.
 *
 * Modules are opened RTLD_NODELETE: they stay mapped until the process exits, even after
 * the context that loaded them is freed. Unmapping a module whose OpenMP regions had run
 * crashed libgomp's pooled worker threads (seen with GCC 12's libgomp); a module is a
 * few tens of kilobytes, and reopening it later is then free.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codegen/c/gen_c.h"
#include "interp/interp.h"
#include "runtime/backend.h"
#include "util/alloc.h"
#include "util/file.h"
#include "util/hash.h"

extern char **environ;

#ifndef PXL_C_COMPILER
#define PXL_C_COMPILER "cc"
#endif

static const char *const jit_flags[] = {"-O3", "-march=native", "-fopenmp", "-ffp-contract=off", "-fno-math-errno",
                                        "-fPIC", "-shared", "-w", "-Wl,-z,defs"};

typedef void (*KernelFn)(const void *in, const void *sc, void *out, int nthreads);
typedef void (*ReduceFn)(const void *in, const void *sc, void *res, int32_t *pos, int nthreads);
typedef void (*HistFn)(const void *in, const void *sc, void *bins, int nthreads);

/* pxlc_image and pxlc_scalar, as the generated code declares them. */
typedef struct {
  void *data;
  int32_t width, height;
  int64_t pitch;
} CImage;
typedef union {
  int64_t i;
  double f;
} CScalar;

typedef struct Module Module;
struct Module {
  Module *next;
  uint64_t key;
  void *handle;
  void *fn;
};

/* A stage instance already resolved: skips generating and hashing its source again. */
typedef struct Instance Instance;
struct Instance {
  Instance *next;
  uint64_t serial; /* program */
  int index;       /* declaration in it */
  int nb;
  Border borders[8];
  void *fn;
};

typedef struct {
  Backend base;
  char *cache_dir;
  int nthreads;
  Module *modules;
  Instance *instances;
} Cpu;

static const char *compiler(void) {
  const char *cc = getenv("PXL_CC");
  return cc && *cc ? cc : PXL_C_COMPILER;
}

/* mkdir -p */
/* Runs the C compiler on src into so; messages to log. */
static int run_compiler(const char *src, const char *so, const char *log, Err *err) {
  const char *argv[32];
  int n = 0;
  argv[n++] = compiler();
  for (size_t i = 0; i < sizeof jit_flags / sizeof *jit_flags; i++) argv[n++] = jit_flags[i];
  argv[n++] = "-o";
  argv[n++] = so;
  argv[n++] = src;
  argv[n++] = "-lm";
  argv[n] = NULL;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0)
    return err_set(err, PXL_EDEVICE, "cannot run the C compiler '%s': %s (set PXL_CC, or use --device ref)", argv[0],
                   strerror(rc));
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return err_set(err, PXL_EBACKEND, "waiting for the C compiler: %s", strerror(errno));
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return PXL_OK;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
    return err_set(err, PXL_EDEVICE, "cannot run the C compiler '%s' (set PXL_CC, or use --device ref)", argv[0]);
  char msg[1200] = "";
  FILE *f = fopen(log, "rb");
  if (f) {
    size_t r = fread(msg, 1, sizeof msg - 1, f);
    msg[r] = 0;
    fclose(f);
  }
  return err_set(err, PXL_EBACKEND, "the C compiler failed on generated code %s (log: %s):\n%s", src, log, msg);
}

static bool same_borders(const Border *a, const Border *b, int n) {
  for (int i = 0; i < n; i++)
    if (a[i].kind != b[i].kind || (a[i].kind == B_CONSTANT && a[i].value != b[i].value)) return false;
  return true;
}

/* Records that (D, borders) resolved to fn. Out of memory only loses the shortcut. */
static void remember(Cpu *cpu, const Decl *D, const Border *borders, void *fn) {
  Instance *in = PXL_CALLOC(1, sizeof *in);
  if (!in) return;
  in->serial = D->serial;
  in->index = D->index;
  in->nb = D->nimages;
  memcpy(in->borders, borders, sizeof(Border) * (size_t)D->nimages);
  in->fn = fn;
  in->next = cpu->instances;
  cpu->instances = in;
}

/* Finds or builds the module for instance (D, borders); returns its entry point. */
static int get_stage(Cpu *cpu, const Decl *D, const ImgArg *imgs, void **fn, Err *err) {
  Border borders[64];
  if (D->nimages > 64) return err_set(err, PXL_EARG, "%s: too many image parameters", D->name);
  for (int i = 0; i < D->nimages; i++) {
    /* an image read only at (0, 0) never reads outside: its border cannot matter, so
     * every mode shares one module */
    const Access *ac = &D->access[i];
    bool inside = !ac->read_abs && !ac->gather && !ac->x0 && !ac->x1 && !ac->y0 && !ac->y1;
    borders[i] = inside ? (Border){B_CLAMP, 0} : imgs[i].border;
  }
  bool memo = D->nimages <= 8;
  for (Instance *in = cpu->instances; memo && in; in = in->next)
    if (in->serial == D->serial && in->index == D->index && in->nb == D->nimages &&
        same_borders(in->borders, borders, D->nimages)) {
      *fn = in->fn;
      return PXL_OK;
    }
  StrBuf src = {0};
  int rc = gen_c_stage(&src, D, borders, "pxl_stage", err);
  if (rc) {
    sb_free(&src);
    return rc;
  }
  uint64_t key = hash_bytes(HASH_INIT, src.s, src.len);
  key = hash_str(key, compiler());
  for (size_t i = 0; i < sizeof jit_flags / sizeof *jit_flags; i++) key = hash_str(key, jit_flags[i]);
  for (Module *m = cpu->modules; m; m = m->next)
    if (m->key == key) {
      *fn = m->fn;
      sb_free(&src);
      if (memo) remember(cpu, D, borders, m->fn);
      return PXL_OK;
    }
  rc = file_make_dirs(cpu->cache_dir, 0700, err);
  char base[4096], so[4200], cfile[4200], log[4200], tmp_so[4300];
  snprintf(base, sizeof base, "%s/pxl-%016llx", cpu->cache_dir, (unsigned long long)key);
  snprintf(so, sizeof so, "%s.so", base);
  snprintf(cfile, sizeof cfile, "%s.c", base);
  snprintf(log, sizeof log, "%s.log", base);
  snprintf(tmp_so, sizeof tmp_so, "%s.so.tmp%ld", base, (long)getpid());
  void *h = NULL;
  if (!rc && access(so, R_OK) == 0) h = dlopen(so, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!h && !rc) {
    rc = file_write_atomic(cfile, src.s, src.len, FILE_PRIVATE, err);
    if (!rc) rc = run_compiler(cfile, tmp_so, log, err);
    if (!rc && rename(tmp_so, so)) rc = err_set(err, PXL_EIO, "%s: %s", so, strerror(errno));
    if (rc) remove(tmp_so);
    if (!rc) {
      h = dlopen(so, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
      if (!h) rc = err_set(err, PXL_EBACKEND, "cannot load %s: %s", so, dlerror());
    }
  }
  sb_free(&src);
  if (rc) return rc;
  const int *abi = dlsym(h, "pxl_stage_abi");
  void *f = dlsym(h, "pxl_stage");
  if (!abi || !f || *abi != PXLC_ABI_VERSION) {
    dlclose(h);
    return err_set(err, PXL_EBACKEND, "%s is not a pxl module of this version", so);
  }
  Module *m = PXL_CALLOC(1, sizeof *m);
  if (!m) {
    dlclose(h);
    return err_set(err, PXL_ENOMEM, "out of memory");
  }
  m->key = key;
  m->handle = h;
  m->fn = f;
  m->next = cpu->modules;
  cpu->modules = m;
  *fn = f;
  if (memo) remember(cpu, D, borders, f);
  return PXL_OK;
}

static void to_c(const struct pxl_image *img, CImage *c) {
  c->data = img->data;
  c->width = img->width;
  c->height = img->height;
  c->pitch = (int64_t)img->pitch;
}

/* Packs the arguments in the generated ABI's layout. */
static void pack(const Decl *D, const ImgArg *imgs, const Lane *scalars, CImage *ci, CScalar *cs) {
  for (int i = 0; i < D->nimages; i++) to_c(imgs[i].img, &ci[i]);
  for (int i = 0; i < D->nparams; i++) {
    const Param *p = D->params[i];
    if (p->is_image) continue;
    if (scalar_is_float(p->type.s)) cs[p->scalar_index].f = scalars[p->scalar_index].f;
    else cs[p->scalar_index].i = scalars[p->scalar_index].i;
  }
}

static int cpu_kernel(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars, struct pxl_image *out,
                      Err *err) {
  Cpu *cpu = (Cpu *)be;
  void *fn;
  int rc = get_stage(cpu, D, imgs, &fn, err);
  if (rc) return rc;
  CImage ci[64], co;
  CScalar cs[32];
  pack(D, imgs, scalars, ci, cs);
  to_c(out, &co);
  ((KernelFn)fn)(ci, cs, &co, cpu->nthreads);
  return PXL_OK;
}

static int cpu_reduce(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars, RedResult *res, Err *err) {
  Cpu *cpu = (Cpu *)be;
  void *fn;
  int rc = get_stage(cpu, D, imgs, &fn, err);
  if (rc) return rc;
  CImage ci[64];
  CScalar cs[32], r;
  int32_t pos[2];
  pack(D, imgs, scalars, ci, cs);
  ((ReduceFn)fn)(ci, cs, &r, pos, cpu->nthreads);
  res->type = D->type.s;
  if (scalar_is_float(D->type.s)) res->value.f = r.f;
  else res->value.i = r.i;
  res->x = pos[0];
  res->y = pos[1];
  return PXL_OK;
}

static int cpu_histogram(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars, Lane *bins, Err *err) {
  Cpu *cpu = (Cpu *)be;
  void *fn;
  int rc = get_stage(cpu, D, imgs, &fn, err);
  if (rc) return rc;
  CImage ci[64];
  CScalar cs[32];
  pack(D, imgs, scalars, ci, cs);
  /* Lane is 8 bytes holding an int64 or a double: the same layout the generated code fills */
  ((HistFn)fn)(ci, cs, bins, cpu->nthreads);
  return PXL_OK;
}

static void cpu_free(Backend *be) {
  Cpu *cpu = (Cpu *)be;
  for (Instance *in = cpu->instances, *n; in; in = n) {
    n = in->next;
    PXL_FREE(in);
  }
  for (Module *m = cpu->modules, *n; m; m = n) {
    n = m->next;
    dlclose(m->handle);
    PXL_FREE(m);
  }
  PXL_FREE(cpu->cache_dir);
  PXL_FREE(cpu);
}

Backend *backend_cpu_new(const char *cache_dir, int nthreads) {
  Cpu *cpu = PXL_CALLOC(1, sizeof *cpu);
  if (!cpu) return NULL;
  cpu->cache_dir = PXL_MALLOC(strlen(cache_dir) + 1);
  if (!cpu->cache_dir) {
    PXL_FREE(cpu);
    return NULL;
  }
  strcpy(cpu->cache_dir, cache_dir);
  cpu->nthreads = nthreads;
  cpu->base.name = "cpu";
  cpu->base.kernel = cpu_kernel;
  cpu->base.reduce = cpu_reduce;
  cpu->base.histogram = cpu_histogram;
  cpu->base.free = cpu_free;
  return &cpu->base;
}
