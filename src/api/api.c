/*
 * api.c - the public C API (include/pxl/pxl.h) over the compiler and runtime.
 *
 * This is the only layer that knows every other one: it reads source files, calls the
 * compiler driver (compile.c), binds named arguments to parameters with clear errors,
 * picks the backend for the context's device and hands results back. Messages of every
 * failure end up on the context (pxl_errmsg); nothing here prints or exits.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "api/api_internal.h"
#include "codegen/c/gen_c.h"
#include "front/front.h"
#include "image/image.h"
#include "interp/interp.h"
#include "io/imageio.h"
#include "runtime/host/backend.h"
#include "util/alloc.h"
#include "util/file.h"

#define MAX_SOURCE (16u << 20) /* largest .pxl file accepted */

typedef enum { DEV_AUTO, DEV_CPU, DEV_REF, DEV_CUDA, DEV_OPENCL } Device;

struct pxl_context {
  Err err;          /* last failure */
  char *long_msg;   /* diagnostics longer than err.msg (heap), or NULL */
  Device device;
  char *cache_dir;  /* explicit cache directory, or NULL for the default */
  int nthreads;
  int cuda_ordinal; /* DEV_CUDA: the device number */
  int ocl_platform, ocl_device; /* DEV_OPENCL: the numbers, -1 -1 for "any, a GPU first" */
  bool auto_tried;  /* DEV_AUTO looked for a CUDA device once */
  Warn warn;        /* warnings not yet taken */
  char warn_out[sizeof(Warn)]; /* the last ones taken */
  Backend *cpu, *ref, *cuda, *opencl;
};

struct pxl_program {
  pxl_context *ctx;
  Program *prog;
  char *source;
};

typedef enum { ARG_IMAGE, ARG_SCALAR, ARG_BORDER } ArgKind;

typedef struct {
  ArgKind kind;
  char name[64];
  pxl_image *img;
  double value;
  char text[64];   /* scalar given as text (exact for 64-bit integers), or "" */
  Border border;
  bool used;
} Arg;

struct pxl_args {
  pxl_context *ctx;
  Arg *v;
  int n, cap;
  pxl_image *output;
};

struct pxl_run_result {
  char name[128];
  char device[256]; /* the backend that ran it */
  ExecResult r;
  double *bins; /* histogram as doubles */
};

/* ---- context and errors ---- */

static int fail(pxl_context *ctx, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(pxl_context *ctx, int code, const char *fmt, ...) {
  if (!ctx) return code;
  PXL_FREE(ctx->long_msg);
  ctx->long_msg = NULL;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ctx->err.msg, sizeof ctx->err.msg, fmt, ap);
  va_end(ap);
  ctx->err.code = code;
  return code;
}

/* Takes over an internal Err as the context's message. */
static int fail_err(pxl_context *ctx, const Err *e) {
  return fail(ctx, e->code ? e->code : PXL_ERROR, "%s", e->msg);
}

const char *pxl_take_warnings(pxl_context *ctx) {
  if (!ctx) return "";
  memcpy(ctx->warn_out, ctx->warn.text, ctx->warn.len);
  ctx->warn_out[ctx->warn.len] = 0;
  ctx->warn.len = 0;
  ctx->warn.text[0] = 0;
  return ctx->warn_out;
}

static void clear(pxl_context *ctx) {
  PXL_FREE(ctx->long_msg);
  ctx->long_msg = NULL;
  ctx->err.msg[0] = 0;
  ctx->err.code = PXL_OK;
}

const char *pxl_status_name(int status) {
  switch (status) {
#define X(name, value, text) \
  case value:                \
    return #name;
    PXL_STATUSES(X)
#undef X
  }
  return "PXL_?";
}

pxl_context *pxl_context_new(void) {
  pxl_context *ctx = PXL_CALLOC(1, sizeof *ctx);
  return ctx;
}

void pxl_context_free(pxl_context *ctx) {
  if (!ctx) return;
  if (ctx->cpu) ctx->cpu->free(ctx->cpu);
  if (ctx->ref) ctx->ref->free(ctx->ref);
  if (ctx->cuda) ctx->cuda->free(ctx->cuda);
  if (ctx->opencl) ctx->opencl->free(ctx->opencl);
  PXL_FREE(ctx->long_msg);
  PXL_FREE(ctx->cache_dir);
  PXL_FREE(ctx);
}

const char *pxl_errmsg(const pxl_context *ctx) {
  if (!ctx) return "no context (out of memory?)";
  return ctx->long_msg ? ctx->long_msg : ctx->err.msg;
}

/* Reads a device number (decimal digits only) at *p and moves past it. */
static bool device_number(const char **p, int *n) {
  if (!isdigit((unsigned char)**p)) return false;
  long v = 0;
  for (; isdigit((unsigned char)**p); (*p)++)
    if ((v = v * 10 + (**p - '0')) > 1000000) return false;
  *n = (int)v;
  return true;
}

/* "opencl" (-1, -1) or "opencl:P:D" into *platform, *device. */
static bool opencl_device(const char *s, int *platform, int *device) {
  *platform = *device = -1;
  if (!strcmp(s, "opencl")) return true;
  s += strlen("opencl");
  return *s++ == ':' && device_number(&s, platform) && *s++ == ':' && device_number(&s, device) && !*s;
}

int pxl_set_device(pxl_context *ctx, const char *device) {
  if (!device) return fail(ctx, PXL_EARG, "no device name given");
  if (!strcmp(device, "auto")) ctx->device = DEV_AUTO;
  else if (!strcmp(device, "cpu")) ctx->device = DEV_CPU;
  else if (!strcmp(device, "ref")) ctx->device = DEV_REF;
  else if (!strncmp(device, "cuda", 4)) {
    int n = 0;
    char extra;
    if (device[4] && (device[4] != ':' || sscanf(device + 5, "%d%c", &n, &extra) != 1 || n < 0))
      return fail(ctx, PXL_EARG, "bad device '%s' (use cuda or cuda:N)", device);
    if (ctx->cuda && n != ctx->cuda_ordinal) { /* its device images must be freed already */
      ctx->cuda->free(ctx->cuda);
      ctx->cuda = NULL;
    }
    ctx->device = DEV_CUDA;
    ctx->cuda_ordinal = n;
  } else if (!strncmp(device, "opencl", 6)) {
    int p, d;
    if (!opencl_device(device, &p, &d))
      return fail(ctx, PXL_EARG, "bad device '%s' (use opencl or opencl:P:D)", device);
    if (ctx->opencl && (p != ctx->ocl_platform || d != ctx->ocl_device)) { /* its device images must be freed already */
      ctx->opencl->free(ctx->opencl);
      ctx->opencl = NULL;
    }
    ctx->device = DEV_OPENCL;
    ctx->ocl_platform = p;
    ctx->ocl_device = d;
  } else
    return fail(ctx, PXL_EARG, "unknown device '%s' (use auto, cpu, ref, cuda, cuda:N, opencl or opencl:P:D)", device);
  return PXL_OK;
}

static char *dup_str(const char *s) {
  size_t n = strlen(s);
  char *d = PXL_MALLOC(n + 1);
  if (d) memcpy(d, s, n + 1);
  return d;
}

int pxl_set_cache_dir(pxl_context *ctx, const char *dir) {
  if (!dir || !*dir) return fail(ctx, PXL_EARG, "empty cache directory");
  char *d = dup_str(dir);
  if (!d) return fail(ctx, PXL_ENOMEM, "out of memory");
  PXL_FREE(ctx->cache_dir);
  ctx->cache_dir = d;
  if (ctx->cpu) { /* modules of the old directory stay valid; new ones go to the new one */
    ctx->cpu->free(ctx->cpu);
    ctx->cpu = NULL;
  }
  return PXL_OK;
}

int pxl_set_threads(pxl_context *ctx, int nthreads) {
  if (nthreads < 0 || nthreads > 4096) return fail(ctx, PXL_EARG, "thread count %d out of range (0..4096)", nthreads);
  ctx->nthreads = nthreads;
  if (ctx->cpu) {
    ctx->cpu->free(ctx->cpu);
    ctx->cpu = NULL;
  }
  return PXL_OK;
}

/* The cache directory the context was given into dir, or "": the backends then take the
 * default ($PXL_CACHE_DIR, ...: runtime/cache.c, which checks whichever it is). */
static void cache_dir(pxl_context *ctx, char *dir, size_t n) {
  snprintf(dir, n, "%s", ctx->cache_dir ? ctx->cache_dir : "");
}

static Backend *backend_for(pxl_context *ctx, bool ref) {
  if (ref) {
    if (!ctx->ref) ctx->ref = backend_ref_new();
    return ctx->ref;
  }
  if (!ctx->cpu) {
    char dir[4096];
    cache_dir(ctx, dir, sizeof dir);
    ctx->cpu = backend_cpu_new(dir, ctx->nthreads, &ctx->warn);
  }
  return ctx->cpu;
}

/* The backend runs use: "cuda" and "opencl" must work; "auto" takes the first CUDA
 * device when one works (looked for once per context), else the CPU. */
static int pick_backend(pxl_context *ctx, Backend **be, Err *e) {
  char dir[4096];
  *be = NULL;
  if (ctx->device == DEV_OPENCL) {
    if (!ctx->opencl) {
      cache_dir(ctx, dir, sizeof dir);
      int rc = backend_opencl_new(ctx->ocl_platform, ctx->ocl_device, dir, &ctx->warn, &ctx->opencl, e);
      if (rc) return rc;
    }
    *be = ctx->opencl;
    return PXL_OK;
  }
  if (ctx->device == DEV_CUDA || (ctx->device == DEV_AUTO && !ctx->auto_tried)) {
    if (!ctx->cuda) {
      cache_dir(ctx, dir, sizeof dir);
      Err ignored = {0};
      int rc = backend_cuda_new(ctx->cuda_ordinal, dir, &ctx->warn, &ctx->cuda, ctx->device == DEV_CUDA ? e : &ignored);
      if (rc && ctx->device == DEV_CUDA) return rc;
    }
    ctx->auto_tried = true;
  }
  if (ctx->device == DEV_CUDA || (ctx->device == DEV_AUTO && ctx->cuda)) *be = ctx->cuda;
  else *be = backend_for(ctx, ctx->device == DEV_REF);
  return *be ? PXL_OK : err_set(e, PXL_ENOMEM, "out of memory");
}

/* ---- programs ---- */

static int compile_text(pxl_context *ctx, const char *name, char *src, pxl_program **out) {
  Diag d;
  diag_init(&d, name, src);
  Program *p = NULL;
  int rc = front_compile(name, src, &p, &d);
  if (rc) {
    if (rc == PXL_ESOURCE && d.text) {
      size_t n = strlen(d.text);
      while (n && d.text[n - 1] == '\n') d.text[--n] = 0;
      fail(ctx, rc, "%.*s", (int)(sizeof ctx->err.msg - 1), d.text);
      if (n >= sizeof ctx->err.msg) { /* keep every diagnostic */
        ctx->long_msg = d.text;
        d.text = NULL;
      }
    } else {
      fail(ctx, rc, rc == PXL_ENOMEM ? "out of memory compiling %s" : "%s: compilation failed", name);
    }
    diag_free(&d);
    PXL_FREE(src);
    return rc;
  }
  diag_free(&d);
  pxl_program *prog = PXL_CALLOC(1, sizeof *prog);
  if (!prog) {
    program_free(p);
    PXL_FREE(src);
    return fail(ctx, PXL_ENOMEM, "out of memory");
  }
  prog->ctx = ctx;
  prog->prog = p;
  prog->source = src;
  *out = prog;
  return PXL_OK;
}

int pxl_program_from_string(pxl_context *ctx, const char *name, const char *src, pxl_program **out) {
  clear(ctx);
  *out = NULL;
  if (!src) return fail(ctx, PXL_EARG, "no source text");
  size_t n = strlen(src);
  if (n > MAX_SOURCE) return fail(ctx, PXL_EARG, "%s: source larger than %u bytes", name, MAX_SOURCE);
  char *copy = PXL_MALLOC(n + 1);
  if (!copy) return fail(ctx, PXL_ENOMEM, "out of memory");
  memcpy(copy, src, n + 1);
  return compile_text(ctx, name ? name : "<string>", copy, out);
}

int pxl_program_from_file(pxl_context *ctx, const char *path, pxl_program **out) {
  clear(ctx);
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) return fail(ctx, PXL_EIO, "%s: %s", path, strerror(errno));
  char *buf = PXL_MALLOC(MAX_SOURCE + 1);
  if (!buf) {
    fclose(f);
    return fail(ctx, PXL_ENOMEM, "out of memory");
  }
  size_t n = fread(buf, 1, MAX_SOURCE + 1, f);
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    PXL_FREE(buf);
    return fail(ctx, PXL_EIO, "%s: read error (is it a directory?)", path);
  }
  if (n > MAX_SOURCE) {
    PXL_FREE(buf);
    return fail(ctx, PXL_EARG, "%s: larger than %u bytes; is it a kernel source?", path, MAX_SOURCE);
  }
  if (memchr(buf, 0, n)) {
    PXL_FREE(buf);
    return fail(ctx, PXL_ESOURCE, "%s: contains a NUL byte; kernel sources are text", path);
  }
  buf[n] = 0;
  return compile_text(ctx, path, buf, out);
}

void pxl_program_free(pxl_program *prog) {
  if (!prog) return;
  program_free(prog->prog);
  PXL_FREE(prog->source);
  PXL_FREE(prog);
}

const Program *pxl_program_ir(const pxl_program *prog) { return prog ? prog->prog : NULL; }

int pxl_context_cuda_graphs(const pxl_context *ctx) { return ctx && ctx->cuda ? backend_cuda_graphs(ctx->cuda) : 0; }

int pxl_program_entry_count(const pxl_program *prog) { return prog ? prog->prog->ndecls : 0; }

const char *pxl_program_entry_name(const pxl_program *prog, int i) {
  if (!prog || i < 0 || i >= prog->prog->ndecls) return NULL;
  return prog->prog->decls[i]->name;
}

static int default_entry(const Program *p) {
  for (int i = p->ndecls - 1; i >= 0; i--)
    if (p->decls[i]->kind == D_PIPELINE) return i;
  return p->ndecls - 1;
}

int pxl_program_entry_find(const pxl_program *prog, const char *name) {
  if (!prog) return -1;
  if (!name || !*name) return default_entry(prog->prog);
  const Decl *D = program_find(prog->prog, name);
  return D ? D->index : -1;
}

int pxl_program_entry_makes_image(const pxl_program *prog, int i) {
  if (!prog || i < 0 || i >= prog->prog->ndecls) return 0;
  DeclKind k = prog->prog->decls[i]->kind;
  return k == D_KERNEL || k == D_PIPELINE;
}

const char *pxl_program_entry_signature(const pxl_program *prog, int i) {
  if (!prog || i < 0 || i >= prog->prog->ndecls) return NULL;
  const Decl *D = prog->prog->decls[i];
  char buf[2048], t[16];
  size_t n = 0;
  switch (D->kind) {
  case D_KERNEL: n += (size_t)snprintf(buf, sizeof buf, "kernel %s %s(", type_str(D->type, t), D->name); break;
  case D_REDUCE: n += (size_t)snprintf(buf, sizeof buf, "reduce %s %s(", type_str(D->type, t), D->name); break;
  case D_HISTOGRAM: n += (size_t)snprintf(buf, sizeof buf, "histogram[%d] %s(", D->nbins, D->name); break;
  case D_PIPELINE: n += (size_t)snprintf(buf, sizeof buf, "pipeline %s(", D->name); break;
  }
  for (int j = 0; j < D->nparams && n < sizeof buf - 128; j++) {
    const Param *p = D->params[j];
    n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s%s %s", j ? ", " : "", p->is_image ? "image " : "",
                          type_str(p->type, t), p->name);
    if (p->has_border && D->kind != D_PIPELINE) {
      if (p->border.kind == B_CONSTANT)
        n += (size_t)snprintf(buf + n, sizeof buf - n, " : constant(%g)", p->border.value);
      else
        n += (size_t)snprintf(buf + n, sizeof buf - n, " : %s", border_name(p->border.kind));
    }
  }
  if (n < sizeof buf - 40)
    n += (size_t)snprintf(buf + n, sizeof buf - n, D->kind == D_PIPELINE ? ") -> image %s" : ")",
                          type_str(D->type, t));
  return arena_strndup(prog->prog->arena, buf, n < sizeof buf ? n : sizeof buf - 1);
}

const char *pxl_program_explain(pxl_context *ctx, pxl_program *prog) {
  if (!prog) return NULL;
  return explain_program(prog->prog);
}

static int write_text_atomic(pxl_context *ctx, const char *path, const char *text, size_t n) {
  Err e = {0};
  return file_write_atomic(path, text, n, FILE_SHARED, &e) ? fail_err(ctx, &e) : PXL_OK;
}

int pxl_program_write_c(pxl_context *ctx, pxl_program *prog, const char *base) {
  clear(ctx);
  if (!prog || !base || !*base) return fail(ctx, PXL_EARG, "no program or output name");
  const char *slash = strrchr(base, '/');
  char hname[1024], cpath[4200], hpath[4200];
  snprintf(hname, sizeof hname, "%s.h", slash ? slash + 1 : base);
  snprintf(cpath, sizeof cpath, "%s.c", base);
  snprintf(hpath, sizeof hpath, "%s.h", base);
  StrBuf c = {0}, h = {0};
  Err e = {0};
  int rc = gen_c_program(prog->prog, hname, &c, &h, &e);
  if (rc) rc = fail_err(ctx, &e);
  if (!rc) rc = write_text_atomic(ctx, hpath, h.s, h.len);
  if (!rc) rc = write_text_atomic(ctx, cpath, c.s, c.len);
  sb_free(&c);
  sb_free(&h);
  return rc;
}

/* ---- images ---- */

int pxl_image_create(pxl_context *ctx, int width, int height, pxl_type type, int channels, pxl_image **out) {
  clear(ctx);
  Err e = {0};
  int rc = image_new(width, height, type, channels, out, &e);
  return rc ? fail_err(ctx, &e) : PXL_OK;
}

int pxl_image_wrap(pxl_context *ctx, void *data, int width, int height, pxl_type type, int channels,
                   size_t pitch_bytes, pxl_image **out) {
  clear(ctx);
  *out = NULL;
  Err e = {0};
  if ((unsigned)type > PXL_F64) return fail(ctx, PXL_EARG, "unknown pixel type %d", (int)type);
  if (image_check_dims(width, height, type, channels, &e)) return fail_err(ctx, &e);
  if (!data) return fail(ctx, PXL_EARG, "wrapped image has no data");
  size_t row = (size_t)width * (size_t)channels * (size_t)pxl_type_size(type);
  if (pitch_bytes < row)
    return fail(ctx, PXL_EARG, "row pitch %zu is smaller than a row (%zu bytes)", pitch_bytes, row);
  if (pitch_bytes % (size_t)pxl_type_size(type))
    return fail(ctx, PXL_EARG, "row pitch %zu is not a multiple of the element size %d", pitch_bytes,
                pxl_type_size(type));
  pxl_image *img = PXL_CALLOC(1, sizeof *img);
  if (!img) return fail(ctx, PXL_ENOMEM, "out of memory");
  img->width = width;
  img->height = height;
  img->channels = channels;
  img->type = type;
  img->pitch = pitch_bytes;
  img->data = data;
  *out = img;
  return PXL_OK;
}

int pxl_image_view(pxl_context *ctx, pxl_image *img, int x, int y, int w, int h, pxl_image **out) {
  clear(ctx);
  *out = NULL;
  if (!img) return fail(ctx, PXL_EARG, "no image");
  if (x < 0 || y < 0 || w < 1 || h < 1 || x > img->width - w || y > img->height - h)
    return fail(ctx, PXL_EARG, "region %d,%d %dx%d is not inside the %dx%d image", x, y, w, h, img->width,
                img->height);
  /* integer arithmetic: the data of an OpenCL image is a byte offset in its buffer (0 for
   * a whole image), which pxl_image_wrap would refuse as NULL: the buffer stands in */
  uintptr_t p = (uintptr_t)img->data + (size_t)y * img->pitch +
                (size_t)x * (size_t)img->channels * pxl_type_size(img->type);
  int rc = pxl_image_wrap(ctx, img->buffer ? img->buffer : (void *)p, w, h, img->type, img->channels, img->pitch, out);
  if (!rc) { /* a view of device memory is device memory */
    (*out)->data = (void *)p;
    (*out)->device = img->device;
    (*out)->buffer = img->buffer;
  }
  return rc;
}

int pxl_image_load(pxl_context *ctx, const char *path, pxl_image **out) {
  clear(ctx);
  Err e = {0};
  int rc = io_load(path, out, &e);
  return rc ? fail_err(ctx, &e) : PXL_OK;
}

int pxl_image_save(pxl_context *ctx, const pxl_image *img, const char *path) {
  clear(ctx);
  if (!img) return fail(ctx, PXL_EARG, "no image to save");
  if (img->device)
    return fail(ctx, PXL_EARG, "cannot save %s: the image is in device memory (copy it with pxl_image_to_host)", path);
  Err e = {0};
  int rc = io_save(path, img, &e);
  return rc ? fail_err(ctx, &e) : PXL_OK;
}

/* ---- device memory ---- */

/* The context's backend, which must have memory of its own. */
static int device_backend(pxl_context *ctx, Backend **be) {
  Err e = {0};
  if (pick_backend(ctx, be, &e)) return fail_err(ctx, &e);
  if (!(*be)->image_new)
    return fail(ctx, PXL_EDEVICE, "device images need a GPU, and runs on this context use the %s backend%s",
                (*be)->name, ctx->device == DEV_AUTO ? " (\"auto\" found no working CUDA device)" : "");
  return PXL_OK;
}

int pxl_image_create_device(pxl_context *ctx, int width, int height, pxl_type type, int channels, pxl_image **out) {
  clear(ctx);
  *out = NULL;
  Backend *be;
  if ((unsigned)type > PXL_F64) return fail(ctx, PXL_EARG, "unknown pixel type %d", (int)type);
  int rc = device_backend(ctx, &be);
  if (rc) return rc;
  Err e = {0};
  rc = be->image_new(be, width, height, type, channels, true, out, &e);
  if (!rc && (rc = be->sync(be, &e))) { /* usable from other streams at once */
    image_free(*out);
    *out = NULL;
  }
  return rc ? fail_err(ctx, &e) : PXL_OK;
}

int pxl_image_wrap_device(pxl_context *ctx, void *data, int width, int height, pxl_type type, int channels,
                          size_t pitch_bytes, pxl_image **out) {
  Backend *be;
  *out = NULL;
  int rc = device_backend(ctx, &be);
  if (!rc) rc = pxl_image_wrap(ctx, data, width, height, type, channels, pitch_bytes, out);
  if (!rc) (*out)->device = be;
  if (!rc && be == ctx->opencl) { /* data is the caller's cl_mem; the image starts at its byte 0 */
    (*out)->buffer = data;
    (*out)->data = NULL;
  }
  return rc;
}

static bool same_layout(const pxl_image *a, const pxl_image *b) {
  return a->width == b->width && a->height == b->height && a->type == b->type && a->channels == b->channels;
}

int pxl_image_copy(pxl_context *ctx, const pxl_image *src, pxl_image *dst) {
  clear(ctx);
  if (!src || !dst) return fail(ctx, PXL_EARG, "no image to copy");
  if (!same_layout(src, dst))
    return fail(ctx, PXL_EARG, "cannot copy a %dx%d %s image with %d channel(s) into a %dx%d %s image with %d", src->width,
                src->height, pxl_type_name(src->type), src->channels, dst->width, dst->height,
                pxl_type_name(dst->type), dst->channels);
  if (src->device && dst->device && src->device != dst->device)
    return fail(ctx, PXL_EARG, "cannot copy between the memories of two devices");
  Backend *be = src->device ? src->device : dst->device;
  if (!be) {
    for (int y = 0; y < src->height; y++) memmove(image_row(dst, y), image_row(src, y), image_row_bytes(src));
    return PXL_OK;
  }
  Err e = {0};
  return be->copy(be, dst, src, &e) ? fail_err(ctx, &e) : PXL_OK;
}

int pxl_image_to_device(pxl_context *ctx, const pxl_image *img, pxl_image **out) {
  clear(ctx);
  *out = NULL;
  if (!img) return fail(ctx, PXL_EARG, "no image");
  Backend *be;
  int rc = device_backend(ctx, &be);
  if (rc) return rc;
  Err e = {0};
  rc = be->image_new(be, img->width, img->height, img->type, img->channels, false, out, &e);
  if (!rc) rc = img->device && img->device != (void *)be ? err_set(&e, PXL_EARG, "the image is on another device")
                                                         : be->copy(be, *out, img, &e);
  if (!rc) rc = be->sync(be, &e);
  if (rc) {
    image_free(*out);
    *out = NULL;
    return fail_err(ctx, &e);
  }
  return PXL_OK;
}

int pxl_image_to_host(pxl_context *ctx, const pxl_image *img, pxl_image **out) {
  clear(ctx);
  *out = NULL;
  if (!img) return fail(ctx, PXL_EARG, "no image");
  Err e = {0};
  int rc = image_new(img->width, img->height, img->type, img->channels, out, &e);
  if (rc) return fail_err(ctx, &e);
  rc = pxl_image_copy(ctx, img, *out);
  if (rc) {
    image_free(*out);
    *out = NULL;
  }
  return rc;
}

int pxl_image_on_device(const pxl_image *img) { return img && img->device ? 1 : 0; }

int pxl_sync(pxl_context *ctx) {
  clear(ctx);
  Err e = {0};
  if (ctx->cuda && ctx->cuda->sync(ctx->cuda, &e)) return fail_err(ctx, &e);
  if (ctx->opencl && ctx->opencl->sync(ctx->opencl, &e)) return fail_err(ctx, &e);
  return PXL_OK;
}

static const char *describe(pxl_context *ctx, Backend *be) {
  if (be == ctx->opencl) return backend_opencl_describe(be);
  return be == ctx->cuda ? backend_cuda_describe(be) : be->name;
}

const char *pxl_device_name(pxl_context *ctx) {
  Backend *be;
  Err e = {0};
  if (pick_backend(ctx, &be, &e)) {
    fail_err(ctx, &e);
    return ctx->device == DEV_CUDA ? "cuda (unavailable)" : ctx->device == DEV_OPENCL ? "opencl (unavailable)" : "?";
  }
  return describe(ctx, be);
}

/* ---- arguments ---- */

pxl_args *pxl_args_new(pxl_context *ctx) {
  pxl_args *a = PXL_CALLOC(1, sizeof *a);
  if (a) a->ctx = ctx;
  return a;
}

void pxl_args_free(pxl_args *args) {
  if (!args) return;
  PXL_FREE(args->v);
  PXL_FREE(args);
}

static Arg *add_arg(pxl_args *args, ArgKind k, const char *name) {
  pxl_context *ctx = args->ctx;
  if (!name) name = "";
  if (strlen(name) >= sizeof args->v[0].name) {
    fail(ctx, PXL_EARG, "argument name '%.40s...' too long", name);
    return NULL;
  }
  for (int i = 0; i < args->n; i++)
    if (*name && args->v[i].kind == k && !strcmp(args->v[i].name, name)) {
      fail(ctx, PXL_EARG, "argument '%s' given twice", name);
      return NULL;
    }
  if (args->n == args->cap) {
    int cap = args->cap ? args->cap * 2 : 8;
    Arg *v = PXL_REALLOC(args->v, sizeof(Arg) * (size_t)cap);
    if (!v) {
      fail(ctx, PXL_ENOMEM, "out of memory");
      return NULL;
    }
    args->v = v;
    args->cap = cap;
  }
  Arg *a = &args->v[args->n++];
  memset(a, 0, sizeof *a);
  a->kind = k;
  strcpy(a->name, name);
  return a;
}

int pxl_args_image(pxl_args *args, const char *name, pxl_image *img) {
  if (!img) return fail(args->ctx, PXL_EARG, "no image for argument '%s'", name ? name : "");
  Arg *a = add_arg(args, ARG_IMAGE, name);
  if (!a) return args->ctx->err.code;
  a->img = img;
  return PXL_OK;
}

int pxl_args_scalar(pxl_args *args, const char *name, double value) {
  Arg *a = add_arg(args, ARG_SCALAR, name);
  if (!a) return args->ctx->err.code;
  a->value = value;
  return PXL_OK;
}

int pxl_args_scalar_text(pxl_args *args, const char *name, const char *text) {
  char *end;
  errno = 0;
  double v = text ? strtod(text, &end) : 0;
  if (!text || end == text || *end || !*text || isspace((unsigned char)*text))
    return fail(args->ctx, PXL_EARG, "value '%s' of '%s' is not a number", text ? text : "", name ? name : "");
  if (strlen(text) >= sizeof args->v[0].text)
    return fail(args->ctx, PXL_EARG, "value of '%s' is too long", name ? name : "");
  Arg *a = add_arg(args, ARG_SCALAR, name);
  if (!a) return args->ctx->err.code;
  a->value = v;
  strcpy(a->text, text);
  return PXL_OK;
}

static int parse_border(pxl_context *ctx, const char *mode, Border *b) {
  for (int k = 0; k < B_COUNT; k++) {
    const char *n = border_name((BorderKind)k);
    size_t l = strlen(n);
    if (strncmp(mode, n, l)) continue;
    b->kind = (BorderKind)k;
    b->value = 0;
    if (k == B_CONSTANT) {
      char *end;
      if (mode[l] != '(') break;
      errno = 0;
      b->value = strtod(mode + l + 1, &end);
      if (end == mode + l + 1 || strcmp(end, ")")) break;
      return PXL_OK;
    }
    if (mode[l] == 0) return PXL_OK;
  }
  return fail(ctx, PXL_EARG, "unknown border mode '%s' (use clamp, mirror, mirror101, wrap, constant(V) or none)",
              mode);
}

int pxl_args_border(pxl_args *args, const char *name, const char *mode) {
  Border b;
  if (!mode || parse_border(args->ctx, mode, &b)) return args->ctx->err.code ? args->ctx->err.code : PXL_EARG;
  Arg *a = add_arg(args, ARG_BORDER, name);
  if (!a) return args->ctx->err.code;
  a->border = b;
  return PXL_OK;
}

int pxl_args_output(pxl_args *args, pxl_image *img) {
  if (!img) return fail(args->ctx, PXL_EARG, "no output image");
  args->output = img;
  return PXL_OK;
}

/* ---- running ---- */

static const char *kind_name(DeclKind k) {
  static const char *const n[] = {"kernel", "reduction", "histogram", "pipeline"};
  return n[k];
}

static Decl *find_entry(pxl_context *ctx, const Program *p, const char *entry) {
  if (entry && *entry) {
    Decl *D = program_find(p, entry);
    if (D) return D;
    char list[1024] = "";
    size_t n = 0;
    for (int i = 0; i < p->ndecls && n < sizeof list - 64; i++)
      n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", p->decls[i]->name);
    fail(ctx, PXL_ENOTFOUND, "%s has no kernel, reduce, histogram or pipeline named '%s' (it has: %s)", p->filename,
         entry, p->ndecls ? list : "nothing");
    return NULL;
  }
  if (p->ndecls) return p->decls[default_entry(p)];
  fail(ctx, PXL_ENOTFOUND, "%s defines nothing to run", p->filename);
  return NULL;
}

static void describe_type(Type t, char *buf, size_t n) {
  if (t.lanes > 1) snprintf(buf, n, "%sx%d (%d channels)", scalar_name(t.s), t.lanes, t.lanes);
  else snprintf(buf, n, "%s (1 channel)", scalar_name(t.s));
}

/* Converts a bound scalar to the parameter's type; refuses values the type cannot hold. */
static int bind_scalar(pxl_context *ctx, const Decl *D, const Param *p, const Arg *a, Lane *out) {
  Scalar s = p->type.s;
  if (scalar_is_float(s)) {
    out->f = s == T_F32 ? (double)(float)a->value : a->value;
    return PXL_OK;
  }
  char *end = NULL;
  errno = 0;
  if (a->text[0]) { /* exact integers from text */
    if (s == T_U64) {
      if (a->text[0] == '-') goto range;
      unsigned long long v = strtoull(a->text, &end, 0);
      if (*end || errno) goto notint;
      out->i = (int64_t)v;
      return PXL_OK;
    }
    long long v = strtoll(a->text, &end, 0);
    if (*end || errno) goto notint;
    Lane l = {.i = v};
    if (lane_convert(l, T_I64, s).i != v) goto range;
    out->i = v;
    return PXL_OK;
  }
  if (a->value != floor(a->value) || !isfinite(a->value)) goto notint;
  {
    Lane l = lane_convert((Lane){.f = a->value}, T_F64, s);
    double back = s == T_U64 ? (double)(uint64_t)l.i : (double)l.i;
    if (back != a->value) goto range;
    *out = l;
    return PXL_OK;
  }
notint:
  return fail(ctx, PXL_EARG, "parameter '%s' of %s '%s' is %s: '%s' is not an integer", p->name, kind_name(D->kind),
              D->name, scalar_name(s), a->text[0] ? a->text : "(value)");
range : {
  char buf[64];
  snprintf(buf, sizeof buf, "%.17g", a->value);
  return fail(ctx, PXL_EARG, "value %s is out of range for %s parameter '%s' of '%s'", a->text[0] ? a->text : buf,
              scalar_name(s), p->name, D->name);
}
}

static int bind(pxl_context *ctx, const Decl *D, pxl_args *args, ImgArg *imgs, Lane *scalars) {
  for (int i = 0; args && i < args->n; i++) args->v[i].used = false;
  for (int i = 0; i < D->nparams; i++) {
    const Param *p = D->params[i];
    Arg *found = NULL;
    for (int j = 0; args && j < args->n && !found; j++) {
      Arg *a = &args->v[j];
      if (a->used || a->kind != (p->is_image ? ARG_IMAGE : ARG_SCALAR)) continue;
      if (!strcmp(a->name, p->name)) found = a;
    }
    for (int j = 0; p->is_image && args && j < args->n && !found; j++) { /* unnamed images, in order */
      Arg *a = &args->v[j];
      if (!a->used && a->kind == ARG_IMAGE && !a->name[0]) found = a;
    }
    if (!found) {
      char t[64];
      describe_type(p->type, t, sizeof t);
      if (p->is_image)
        return fail(ctx, PXL_EARG, "%s '%s' needs an image for parameter '%s' (%s)", kind_name(D->kind), D->name,
                    p->name, t);
      return fail(ctx, PXL_EARG, "%s '%s' needs a value for parameter '%s' (%s; --param %s=VALUE)", kind_name(D->kind),
                  D->name, p->name, scalar_name(p->type.s), p->name);
    }
    found->used = true;
    if (p->is_image) {
      pxl_image *img = found->img;
      ImgArg *ia = &imgs[p->img_index];
      ia->img = img;
      ia->border = p->border;
      if (scalar_of_pxl(img->type) != p->type.s || img->channels != p->type.lanes) {
        char want[64], got[64];
        describe_type(p->type, want, sizeof want);
        describe_type(type_vec(scalar_of_pxl(img->type), img->channels), got, sizeof got);
        return fail(ctx, PXL_EARG, "image for parameter '%s' of '%s' must be %s, got %s", p->name, D->name, want, got);
      }
    } else {
      int rc = bind_scalar(ctx, D, p, found, &scalars[p->scalar_index]);
      if (rc) return rc;
    }
  }
  /* border overrides */
  for (int j = 0; args && j < args->n; j++) {
    Arg *a = &args->v[j];
    if (a->kind != ARG_BORDER) continue;
    if (D->kind == D_PIPELINE)
      return fail(ctx, PXL_EARG, "'%s' is a pipeline: its border modes are written where each image is used",
                  D->name);
    const Param *p = NULL;
    for (int i = 0; i < D->nparams; i++)
      if (D->params[i]->is_image && (!strcmp(D->params[i]->name, a->name) || (!a->name[0] && D->nimages == 1)))
        p = D->params[i];
    if (!p) return fail(ctx, PXL_EARG, "'%s' has no image parameter '%s' to set a border for", D->name, a->name);
    imgs[p->img_index].border = a->border;
    a->used = true;
  }
  for (int j = 0; args && j < args->n; j++) {
    Arg *a = &args->v[j];
    if (a->used) continue;
    char names[512] = "";
    size_t n = 0;
    for (int i = 0; i < D->nparams && n < sizeof names - 70; i++)
      n += (size_t)snprintf(names + n, sizeof names - n, "%s%s", i ? ", " : "", D->params[i]->name);
    if (a->kind == ARG_IMAGE && !a->name[0])
      return fail(ctx, PXL_EARG, "too many input images for '%s' (its parameters: %s)", D->name, names);
    return fail(ctx, PXL_EARG, "'%s' is not %s parameter of '%s' (its parameters: %s)", a->name,
                a->kind == ARG_IMAGE ? "an image" : "a scalar", D->name, D->nparams ? names : "none");
  }
  return PXL_OK;
}

static bool uses_device_memory(const Decl *D, const ImgArg *imgs, const struct pxl_image *out) {
  for (int i = 0; i < D->nimages; i++)
    if (imgs[i].img->device) return true;
  return out && out->device;
}

int pxl_run(pxl_context *ctx, pxl_program *prog, const char *entry, pxl_args *args, pxl_run_result **out) {
  clear(ctx);
  *out = NULL;
  if (!prog) return fail(ctx, PXL_EARG, "no program");
  Decl *D = find_entry(ctx, prog->prog, entry);
  if (!D) return ctx->err.code;
  ImgArg imgs[64];
  Lane scalars[32];
  memset(imgs, 0, sizeof imgs);
  memset(scalars, 0, sizeof scalars);
  int rc = bind(ctx, D, args, imgs, scalars);
  if (rc) return rc;
  if (args && args->output && D->kind != D_KERNEL && D->kind != D_PIPELINE)
    return fail(ctx, PXL_EARG, "'%s' is a %s: it has no output image", D->name, kind_name(D->kind));
  pxl_run_result *res = PXL_CALLOC(1, sizeof *res);
  if (!res) return fail(ctx, PXL_ENOMEM, "out of memory");
  snprintf(res->name, sizeof res->name, "%s", D->name);
  Err e = {0};
  Backend *be;
  struct pxl_image *output = args ? args->output : NULL;
  rc = pick_backend(ctx, &be, &e);
  if (!rc) rc = exec_entry(be, D, imgs, scalars, output, &res->r, &e);
  if (ctx->device == DEV_AUTO && rc && !uses_device_memory(D, imgs, output)) {
    /* "auto" keeps working: a GPU that cannot compile or run this hands it to the CPU,
     * a machine without a C compiler to the interpreter */
    if (be == ctx->cuda && (rc == PXL_EDEVICE || rc == PXL_EBACKEND) && (be = backend_for(ctx, false))) {
      memset(&e, 0, sizeof e);
      rc = exec_entry(be, D, imgs, scalars, output, &res->r, &e);
    }
    if (rc == PXL_EDEVICE && be == ctx->cpu && (be = backend_for(ctx, true))) {
      memset(&e, 0, sizeof e);
      rc = exec_entry(be, D, imgs, scalars, output, &res->r, &e);
    }
  }
  if (!rc && res->r.kind == PXL_RESULT_HISTOGRAM) {
    res->bins = PXL_MALLOC(sizeof(double) * (size_t)res->r.nbins);
    if (!res->bins) rc = err_set(&e, PXL_ENOMEM, "out of memory");
    for (int i = 0; !rc && i < res->r.nbins; i++)
      res->bins[i] = res->r.bins_float ? res->r.bins[i].f : (double)res->r.bins[i].i;
  }
  if (rc) {
    pxl_result_free(res);
    return fail_err(ctx, &e);
  }
  snprintf(res->device, sizeof res->device, "%s", describe(ctx, be));
  *out = res;
  return PXL_OK;
}

void pxl_result_free(pxl_run_result *res) {
  if (!res) return;
  if (res->r.image_owned) image_free(res->r.image);
  PXL_FREE(res->r.bins);
  PXL_FREE(res->bins);
  PXL_FREE(res);
}

pxl_result_kind pxl_result_kind_of(const pxl_run_result *res) { return (pxl_result_kind)res->r.kind; }

pxl_image *pxl_result_image(pxl_run_result *res) {
  return res && res->r.kind == PXL_RESULT_IMAGE ? res->r.image : NULL;
}

pxl_image *pxl_result_take_image(pxl_run_result *res) {
  if (!res || res->r.kind != PXL_RESULT_IMAGE || !res->r.image_owned) return NULL;
  res->r.image_owned = false;
  return res->r.image;
}

int pxl_result_scalar(const pxl_run_result *res, pxl_scalar_result *out) {
  if (!res || res->r.kind != PXL_RESULT_SCALAR) return PXL_EARG;
  const RedResult *r = &res->r.red;
  memset(out, 0, sizeof *out);
  out->is_float = scalar_is_float(r->type);
  if (out->is_float) {
    out->value = r->value.f;
    out->ivalue = (int64_t)r->value.f;
  } else {
    out->ivalue = r->value.i;
    out->value = r->type == T_U64 ? (double)(uint64_t)r->value.i : (double)r->value.i;
  }
  out->has_pos = r->x >= 0;
  out->x = r->x;
  out->y = r->y;
  return PXL_OK;
}

const double *pxl_result_bins(const pxl_run_result *res, int *n, int *is_float) {
  if (!res || res->r.kind != PXL_RESULT_HISTOGRAM) {
    if (n) *n = 0;
    return NULL;
  }
  if (n) *n = res->r.nbins;
  if (is_float) *is_float = res->r.bins_float;
  return res->bins;
}

const char *pxl_result_name(const pxl_run_result *res) { return res ? res->name : ""; }

const char *pxl_result_device(const pxl_run_result *res) { return res ? res->device : ""; }
