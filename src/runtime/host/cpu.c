/*
 * cpu.c - the CPU backend: JIT compilation of generated C (see backend.h).
 *
 * For each stage instance (declaration + border per image) the C generator writes a
 * translation unit. Its key hashes the text with what the machine code depends on: the
 * C compiler (its name, resolved path and `--version` output), the flags, and with
 * -march=native the host CPU (/proc/cpuinfo's model and feature flags); the compiler and
 * CPU are identified once per process. A module found in memory is reused; else entry
 * pxl-KEY.so of the cache (runtime/cache.h: directory checked, entry verified against
 * its sum file) is loaded; else pxl-KEY.c is written there and compiled, and the
 * output, once it loads as a pxl module, is stored as the entry. Compiler messages go to
 * pxl-KEY.log and, on failure, into the error.
 *
 * What is dlopened is always a file of this process's own making: the verified bytes of
 * an entry, or the compiler's output, in a fresh NAME.XXXXXX file (O_EXCL, 0600) in the
 * directory in use, removed once loaded. So nothing done to the entry between its check
 * and the load (another process replacing it, damage) reaches the loaded code; and since
 * the name is new each time, the dynamic loader cannot hand back another module it
 * loaded under the same name.
 *
 * The compiler runs in a process group of its own with a time limit (PXL_CC_TIMEOUT
 * seconds, default 120, 0: none); past it the group is killed and the run fails
 * (PXL_EBACKEND), as when the compiler succeeds without writing a shared object.
 *
 * Modules are opened RTLD_NODELETE: they stay mapped until the process exits, even after
 * the context that loaded them is freed. Unmapping a module whose OpenMP regions had run
 * crashed libgomp's pooled worker threads (seen with GCC 12's libgomp); a module is a
 * few tens of kilobytes.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "codegen/c/gen_c.h"
#include "interp/interp.h"
#include "runtime/backend.h"
#include "runtime/cache.h"
#include "runtime/instance.h"
#include "util/alloc.h"
#include "util/file.h"
#include "util/hash.h"

extern char **environ;

#ifndef PXL_C_COMPILER
#define PXL_C_COMPILER "cc"
#endif

#define CC_TIMEOUT_DEFAULT 120 /* seconds: far above any kernel's compile time */

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

typedef struct {
  Backend base;
  char *want_dir;  /* the cache directory asked for, or NULL: the default */
  Warn *warn;      /* the context's warnings */
  Cache *cache;    /* opened at the first module not in memory */
  int nthreads;
  Module *modules;
  Instance *instances; /* resolved stage instances (runtime/instance.h): module = entry point */
} Cpu;

static const char *compiler(void) {
  const char *cc = getenv("PXL_CC");
  return cc && *cc ? cc : PXL_C_COMPILER;
}

/* The compiler's time limit in seconds (PXL_CC_TIMEOUT; 0: none). */
static double cc_timeout(void) {
  const char *v = getenv("PXL_CC_TIMEOUT");
  char *end = NULL;
  double t = v && *v ? strtod(v, &end) : -1;
  return end && !*end && t >= 0 ? t : CC_TIMEOUT_DEFAULT;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* Runs argv with stdin from /dev/null and stdout and stderr to the file `log` (truncated)
 * or, with log NULL, into *out (the first 64 KiB), in a process group of its own; waits
 * for it at most `limit` seconds (0: no limit), then kills the group. Returns
 * posix_spawn's error (0: it ran); *status as waitpid's, *timed_out when killed. */
static int run_limited(const char *const *argv, const char *log, StrBuf *out, double limit, int *status,
                       bool *timed_out) {
  *timed_out = false;
  int pipefd[2] = {-1, -1};
  if (!log && pipe2(pipefd, O_CLOEXEC)) return errno;
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&at);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&at, 0); /* its own group: a timeout kills its children too */
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  if (log) posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  else posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &fa, &at, (char *const *)argv, environ);
  int child = rc ? -1 : file_child_add((int)pid); /* a signal that ends pxl ends the compiler too */
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  if (pipefd[1] >= 0) close(pipefd[1]);
  if (rc) {
    if (pipefd[0] >= 0) close(pipefd[0]);
    return rc;
  }
  int rd = pipefd[0], pidfd = -1;
#ifdef SYS_pidfd_open
  pidfd = (int)syscall(SYS_pidfd_open, pid, 0); /* poll() then wakes at its exit (Linux 5.3+) */
#endif
  double deadline = limit > 0 ? now_s() + limit : 0, step = 0.001;
  bool exited = false;
  while (!exited || rd >= 0) {
    if (!exited) {
      pid_t r = waitpid(pid, status, WNOHANG);
      if (r == pid || (r < 0 && errno != EINTR)) exited = true;
      if (r < 0 && errno != EINTR) *status = -1;
    }
    if (exited && rd < 0) break;
    if (exited) fcntl(rd, F_SETFL, O_NONBLOCK); /* take what is there, then stop */
    double left = deadline ? deadline - now_s() : 1e9;
    if (!exited && left <= 0) {
      kill(-pid, SIGKILL);
      while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
      }
      *timed_out = true;
      break;
    }
    struct pollfd p[2] = {{-1, 0, 0}};
    int np = 0;
    if (rd >= 0) p[np++] = (struct pollfd){rd, POLLIN, 0};
    if (!exited && pidfd >= 0) p[np++] = (struct pollfd){pidfd, POLLIN, 0};
    int ms = left > 1e6 ? -1 : (int)(left * 1000) + 1;
    if (!exited && pidfd < 0) { /* no pidfd: look again soon (1 ms, doubling up to 20 ms) */
      ms = (int)(step * 1000) + 1 < ms || ms < 0 ? (int)(step * 1000) + 1 : ms;
      step = step * 2 > 0.02 ? 0.02 : step * 2;
    }
    if (exited && rd >= 0) ms = 0;
    if (np || ms > 0) poll(p, (nfds_t)np, ms);
    if (rd >= 0 && (exited || p[0].revents)) { /* (nonblocking once it exited) */
      char buf[4096];
      ssize_t r = read(rd, buf, sizeof buf);
      if (r > 0 && out->len < 65536) sb_append(out, buf, (size_t)r);
      if (r == 0 || (r < 0 && errno != EINTR && (errno != EAGAIN || exited))) {
        close(rd);
        rd = -1;
      }
    }
  }
  file_child_forget(child);
  if (rd >= 0) close(rd);
  if (pidfd >= 0) close(pidfd);
  return 0;
}

/* ---- what the generated code's machine code depends on ---- */

/* The compiler's path: as given when it holds a '/', else found in $PATH; resolved. */
static void resolve_compiler(const char *cc, char *out, size_t n) {
  char cand[PATH_MAX + 256], real[PATH_MAX];
  snprintf(out, n, "%s", cc);
  if (strchr(cc, '/')) {
    if (realpath(cc, real)) snprintf(out, n, "%s", real);
    return;
  }
  const char *path = getenv("PATH");
  for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
    size_t l = strcspn(p, ":");
    snprintf(cand, sizeof cand, "%.*s/%s", (int)l, l ? p : ".", cc);
    if (access(cand, X_OK) == 0 && realpath(cand, real)) {
      snprintf(out, n, "%s", real);
      return;
    }
    p += l + (p[l] == ':');
  }
}

/* A hash of the host CPU as -march=native sees it: /proc/cpuinfo's first processor's
 * vendor, family, model and feature flags (x86 and ARM names). */
static uint64_t cpu_features(void) {
  static const char *const keys[] = {"vendor_id", "cpu family", "model", "model name", "flags",
                                     "Features",  "CPU implementer", "CPU architecture", "CPU variant", "CPU part",
                                     "isa",       "uarch"};
  uint64_t h = hash_str(HASH_INIT, "cpu");
  char *text = NULL;
  Err ignored = {0};
  if (file_read_all("/proc/cpuinfo", 64u << 20, &text, NULL, &ignored)) return h; /* unknown: the name alone */
  for (char *line = text; line && *line && *line != '\n';) {
    char *nl = strchr(line, '\n'), *colon = strchr(line, ':');
    if (nl) *nl = 0;
    if (colon) {
      size_t k = (size_t)(colon - line);
      while (k && (line[k - 1] == ' ' || line[k - 1] == '\t')) k--;
      for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        if (strlen(keys[i]) == k && !strncmp(line, keys[i], k)) h = hash_str(h, line);
    }
    line = nl ? nl + 1 : NULL; /* the first blank line ends the first processor */
  }
  PXL_FREE(text);
  return h;
}

/* The hash of the compiler (PXL_CC or the default, its path, its --version output), the
 * flags and, with -march=native, the CPU: computed once per process and compiler. A
 * --version past the time limit is PXL_EBACKEND. */
static int toolchain_id(uint64_t *id, Err *err) {
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  static char known_cc[1024];
  static uint64_t known;
  const char *cc = compiler();
  pthread_mutex_lock(&lock);
  if (known_cc[0] && !strcmp(known_cc, cc)) {
    *id = known;
    pthread_mutex_unlock(&lock);
    return PXL_OK;
  }
  pthread_mutex_unlock(&lock);
  char path[PATH_MAX];
  resolve_compiler(cc, path, sizeof path);
  const char *argv[] = {cc, "--version", NULL};
  StrBuf out = {0};
  int status = 0;
  bool timed_out;
  double limit = cc_timeout();
  int rc = run_limited(argv, NULL, &out, limit, &status, &timed_out);
  if (timed_out) {
    sb_free(&out);
    return err_set(err, PXL_EBACKEND,
                   "the C compiler '%s' did not answer '--version' within %g s (PXL_CC_TIMEOUT); killed", cc, limit);
  }
  uint64_t h = hash_str(hash_str(hash_str(HASH_INIT, CACHE_FORMAT), cc), path);
  h = hash_bytes(h, out.s ? out.s : "", out.len); /* a compiler that cannot run: its name; compiling says why */
  h = hash_bytes(h, &status, sizeof status);
  h = hash_bytes(h, &rc, sizeof rc);
  sb_free(&out);
  for (size_t i = 0; i < sizeof jit_flags / sizeof *jit_flags; i++) {
    h = hash_str(h, jit_flags[i]);
    if (!strcmp(jit_flags[i], "-march=native")) h ^= cpu_features();
  }
  pthread_mutex_lock(&lock);
  snprintf(known_cc, sizeof known_cc, "%s", cc);
  known = h;
  pthread_mutex_unlock(&lock);
  *id = h;
  return PXL_OK;
}

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
  int status = 0;
  bool timed_out;
  double limit = cc_timeout();
  int rc = run_limited(argv, log, NULL, limit, &status, &timed_out);
  if (rc != 0)
    return err_set(err, PXL_EDEVICE, "cannot run the C compiler '%s': %s (set PXL_CC, or use --device ref)", argv[0],
                   strerror(rc));
  if (timed_out)
    return err_set(err, PXL_EBACKEND, "the C compiler '%s' did not finish within %g s (PXL_CC_TIMEOUT) on %s; killed",
                   argv[0], limit, src);
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

/* Records that (D, borders) resolved to fn. Out of memory only loses the shortcut. */
static void remember(Cpu *cpu, const Decl *D, const Border *borders, void *fn) {
  Instance *in = instance_new(D, borders, 0, sizeof *in);
  if (!in) return;
  in->module = fn;
  instance_link(&cpu->instances, in);
}

/* dlopens path as a pxl module of this version: *h and its entry point *fn, or false
 * with why[]. */
static bool open_module(const char *path, void **h, void **fn, char *why, size_t n) {
  *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!*h) return snprintf(why, n, "cannot be loaded: %s", dlerror()), false;
  const int *abi = dlsym(*h, "pxl_stage_abi");
  *fn = dlsym(*h, "pxl_stage");
  if (abi && *fn && *abi == PXLC_ABI_VERSION) return true;
  dlclose(*h);
  *h = NULL;
  return snprintf(why, n, "is not a pxl module of this version"), false;
}

/* Loads the verified bytes of cache entry `name` from a private copy. */
static bool load_entry(Cpu *cpu, const char *name, const char *bytes, size_t n, void **h, void **fn) {
  char path[4400], why[1200];
  Err e = {0};
  if (cache_temp_file(cpu->cache, name, bytes, n, path, sizeof path, &e)) return false; /* then compiled: fails too */
  bool ok = open_module(path, h, fn, why, sizeof why);
  unlink(path);
  if (!ok) cache_drop(cpu->cache, name, why);
  return ok;
}

/* Compiles src into a module, loads it and stores it as cache entry `name`. */
static int build(Cpu *cpu, const char *name, CacheId id, const StrBuf *src, void **h, void **fn, Err *err) {
  char base[64], cname[80], cfile[4400], log[4400], out[4400], why[1200];
  snprintf(base, sizeof base, "pxl-%016llx", (unsigned long long)id.key);
  snprintf(cname, sizeof cname, "%s.c", base);
  int rc = cache_write(cpu->cache, cname, src->s, src->len, err);
  if (!rc) rc = cache_temp_file(cpu->cache, name, NULL, 0, out, sizeof out, err);
  if (rc) return rc;
  const char *dir = cache_dir_in_use(cpu->cache); /* after any fallback: the .c is there too */
  snprintf(cfile, sizeof cfile, "%s/%s", dir, cname);
  snprintf(log, sizeof log, "%s/%s.log", dir, base);
  if (access(cfile, R_OK)) { /* written before a fallback moved the rest elsewhere */
    rc = cache_write(cpu->cache, cname, src->s, src->len, err);
    if (rc) return rc;
  }
  int partial = file_partial_add(out); /* removed if a signal ends pxl while it compiles */
  rc = run_compiler(cfile, out, log, err);
  char *bytes = NULL;
  size_t n = 0;
  if (!rc) rc = file_read_all(out, 512u << 20, &bytes, &n, err);
  if (!rc && n == 0)
    rc = err_set(err, PXL_EBACKEND,
                 "the C compiler '%s' succeeded on %s but wrote nothing (set PXL_CC, or use --device ref)", compiler(),
                 cfile);
  else if (!rc && (n < 4 || memcmp(bytes, "\177ELF", 4)))
    rc = err_set(err, PXL_EBACKEND, "the C compiler '%s' succeeded on %s but wrote no shared object (%zu bytes)",
                 compiler(), cfile, n);
  if (!rc && !open_module(out, h, fn, why, sizeof why))
    rc = err_set(err, PXL_EBACKEND, "the C compiler's output for %s %s", cfile, why);
  if (!rc) cache_put(cpu->cache, name, id, bytes, n);
  PXL_FREE(bytes);
  unlink(out);
  file_partial_forget(partial);
  return rc;
}

/* Finds or builds the module for the instance of D that runs imgs over a w x h
 * iteration space iw x ih (the output; reductions and histograms: the first image); returns its
 * entry point. */
static int get_stage(Cpu *cpu, const Decl *D, const ImgArg *imgs, int iw, int ih, void **fn, Err *err) {
  Border borders[64];
  if (D->nimages > 64) return err_set(err, PXL_EARG, "%s: too many image parameters", D->name);
  stage_borders(D, imgs, iw, ih, borders); /* one module for every mode where the mode cannot matter */
  bool memo = D->nimages <= INSTANCE_MAX_IMAGES;
  Instance *in = memo ? instance_find(cpu->instances, D, borders, 0) : NULL;
  if (in) {
    *fn = in->module;
    return PXL_OK;
  }
  StrBuf src = {0};
  uint64_t tools = 0;
  int rc = gen_c_stage(&src, D, borders, "pxl_stage", err);
  if (!rc) rc = toolchain_id(&tools, err);
  if (rc) {
    sb_free(&src);
    return rc;
  }
  CacheId id = {0, hash_bytes(HASH_INIT, src.s, src.len)};
  id.key = hash_bytes(tools, &id.source, sizeof id.source);
  for (Module *m = cpu->modules; m; m = m->next)
    if (m->key == id.key) {
      *fn = m->fn;
      sb_free(&src);
      if (memo) remember(cpu, D, borders, m->fn);
      return PXL_OK;
    }
  if (!cpu->cache) rc = cache_open(cpu->want_dir, cpu->warn, &cpu->cache, err);
  char name[64];
  snprintf(name, sizeof name, "pxl-%016llx.so", (unsigned long long)id.key);
  void *h = NULL, *f = NULL;
  char *bytes = NULL;
  size_t n = 0;
  if (!rc && cache_get(cpu->cache, name, id, &bytes, &n)) load_entry(cpu, name, bytes, n, &h, &f);
  PXL_FREE(bytes);
  if (!rc && !h) rc = build(cpu, name, id, &src, &h, &f, err);
  sb_free(&src);
  if (rc) return rc;
  Module *m = PXL_CALLOC(1, sizeof *m);
  if (!m) {
    dlclose(h);
    return err_set(err, PXL_ENOMEM, "out of memory");
  }
  m->key = id.key;
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
    if (p->len) cs[p->scalar_index].i = (int64_t)(intptr_t)scalars[p->scalar_index].arr; /* Lane = pxlc_scalar */
    else if (scalar_is_float(p->type.s)) cs[p->scalar_index].f = scalars[p->scalar_index].f;
    else cs[p->scalar_index].i = scalars[p->scalar_index].i;
  }
}

static int cpu_kernel(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars, struct pxl_image *out,
                      Err *err) {
  Cpu *cpu = (Cpu *)be;
  void *fn;
  int rc = get_stage(cpu, D, imgs, out->width, out->height, &fn, err);
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
  int rc = get_stage(cpu, D, imgs, imgs[0].img->width, imgs[0].img->height, &fn, err);
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
  int rc = get_stage(cpu, D, imgs, imgs[0].img->width, imgs[0].img->height, &fn, err);
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
  instance_list_free(cpu->instances);
  for (Module *m = cpu->modules, *n; m; m = n) {
    n = m->next;
    dlclose(m->handle);
    PXL_FREE(m);
  }
  cache_free(cpu->cache);
  PXL_FREE(cpu->want_dir);
  PXL_FREE(cpu);
}

Backend *backend_cpu_new(const char *cache_dir, int nthreads, Warn *warn) {
  Cpu *cpu = PXL_CALLOC(1, sizeof *cpu);
  if (!cpu) return NULL;
  if (cache_dir && *cache_dir && !(cpu->want_dir = PXL_MALLOC(strlen(cache_dir) + 1))) {
    PXL_FREE(cpu);
    return NULL;
  }
  if (cpu->want_dir) strcpy(cpu->want_dir, cache_dir);
  cpu->warn = warn;
  cpu->nthreads = nthreads;
  cpu->base.name = "cpu";
  cpu->base.kernel = cpu_kernel;
  cpu->base.reduce = cpu_reduce;
  cpu->base.histogram = cpu_histogram;
  cpu->base.free = cpu_free;
  return &cpu->base;
}
