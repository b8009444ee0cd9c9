/*
 * run.c - runs: named arguments, binding them to an entry's parameters with messages that
 * name the entry, the parameter and the expected type, running on the context's backend
 * (and, for "auto", on the next one when it cannot), and the results (see handles.h).
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/handles.h"
#include "image/image.h"
#include "interp/interp.h"
#include "util/alloc.h"

typedef enum { ARG_IMAGE, ARG_SCALAR, ARG_BORDER, ARG_ARRAY } ArgKind;

typedef struct {
  ArgKind kind;
  char name[64];
  pxl_image *img;
  double value;
  char text[64];   /* scalar given as text (exact for 64-bit integers), or "" */
  Border border;
  double *vals;    /* ARG_ARRAY: a copy of the values (heap), nvals of them */
  int nvals;
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

/* ---- arguments ---- */

pxl_args *pxl_args_new(pxl_context *ctx) {
  pxl_args *a = PXL_CALLOC(1, sizeof *a);
  if (a) a->ctx = ctx;
  return a;
}

const pxl_image *api_args_image_at(const pxl_args *args, int i) {
  for (int k = 0; args && k < args->n; k++)
    if (args->v[k].kind == ARG_IMAGE && args->v[k].img && i-- == 0) return args->v[k].img;
  return args && i == 0 ? args->output : NULL;
}

void pxl_args_free(pxl_args *args) {
  if (!args) return;
  for (int i = 0; i < args->n; i++) PXL_FREE(args->v[i].vals);
  PXL_FREE(args->v);
  PXL_FREE(args);
}

static Arg *add_arg(pxl_args *args, ArgKind k, const char *name) {
  pxl_context *ctx = args->ctx;
  if (!name) name = "";
  if (strlen(name) >= sizeof args->v[0].name) {
    api_fail(ctx, PXL_EARG, "argument name '%.40s...' too long", name);
    return NULL;
  }
  for (int i = 0; i < args->n; i++)
    if (*name && args->v[i].kind == k && !strcmp(args->v[i].name, name)) {
      api_fail(ctx, PXL_EARG, "argument '%s' given twice", name);
      return NULL;
    }
  if (args->n == args->cap) {
    int cap = args->cap ? args->cap * 2 : 8;
    Arg *v = PXL_REALLOC(args->v, sizeof(Arg) * (size_t)cap);
    if (!v) {
      api_fail(ctx, PXL_ENOMEM, "out of memory");
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
  if (!img) return api_fail(args->ctx, PXL_EARG, "no image for argument '%s'", name ? name : "");
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
    return api_fail(args->ctx, PXL_EARG, "value '%s' of '%s' is not a number", text ? text : "", name ? name : "");
  if (strlen(text) >= sizeof args->v[0].text)
    return api_fail(args->ctx, PXL_EARG, "value of '%s' is too long", name ? name : "");
  Arg *a = add_arg(args, ARG_SCALAR, name);
  if (!a) return args->ctx->err.code;
  a->value = v;
  strcpy(a->text, text);
  return PXL_OK;
}

int pxl_args_array(pxl_args *args, const char *name, const double *values, int n) {
  if (n < 0 || n > PXL_MAX_ARRAY || (n && !values))
    return api_fail(args->ctx, PXL_EARG, "array argument '%s' must have 0 to %d values, got %d", name ? name : "",
                    PXL_MAX_ARRAY, n);
  double *copy = PXL_MALLOC(sizeof(double) * (size_t)(n ? n : 1));
  if (!copy) return api_fail(args->ctx, PXL_ENOMEM, "out of memory");
  Arg *a = add_arg(args, ARG_ARRAY, name);
  if (!a) {
    PXL_FREE(copy);
    return args->ctx->err.code;
  }
  if (n) memcpy(copy, values, sizeof(double) * (size_t)n);
  a->vals = copy;
  a->nvals = n;
  return PXL_OK;
}

int pxl_args_array_text(pxl_args *args, const char *name, const char *text) {
  pxl_context *ctx = args->ctx;
  if (!name) name = "";
  if (!text) text = "";
  double *v = PXL_MALLOC(sizeof(double) * PXL_MAX_ARRAY);
  if (!v) return api_fail(ctx, PXL_ENOMEM, "out of memory");
  int n = 0, rc = PXL_OK;
  const char *p = text;
  for (;;) {
    while (isspace((unsigned char)*p)) p++;
    if (!*p) break;
    const char *start = p;
    while (*p && *p != ',' && !isspace((unsigned char)*p)) p++;
    int len = (int)(p - start);
    char tok[64];
    if (len >= (int)sizeof tok) {
      rc = api_fail(ctx, PXL_EARG, "value %d of '%s' is too long (%.20s...)", n + 1, name, start);
      break;
    }
    memcpy(tok, start, (size_t)len);
    tok[len] = 0;
    char *end;
    double d = len ? strtod(tok, &end) : 0;
    if (!len || *end) {
      rc = api_fail(ctx, PXL_EARG, "value %d of '%s' is not a number: '%s'", n + 1, name, len ? tok : "(empty)");
      break;
    }
    if (n == PXL_MAX_ARRAY) {
      rc = api_fail(ctx, PXL_EARG, "'%s' has more than %d values", name, PXL_MAX_ARRAY);
      break;
    }
    v[n++] = d;
    while (isspace((unsigned char)*p)) p++;
    if (*p == ',') { /* one comma between values; a trailing one ends the list */
      p++;
      while (isspace((unsigned char)*p)) p++;
      if (*p == ',') {
        rc = api_fail(ctx, PXL_EARG, "value %d of '%s' is not a number: '(empty)'", n + 1, name);
        break;
      }
    }
  }
  if (!rc && !n) rc = api_fail(ctx, PXL_EARG, "'%s' has no values", name);
  if (!rc) rc = pxl_args_array(args, name, v, n);
  PXL_FREE(v);
  return rc;
}

int pxl_args_border(pxl_args *args, const char *name, const char *mode) {
  Border b;
  if (!border_parse(mode, &b))
    return api_fail(args->ctx, PXL_EARG,
                    "unknown border mode '%s' (use clamp, mirror, mirror101, wrap, constant(V) or none)",
                    mode ? mode : "");
  Arg *a = add_arg(args, ARG_BORDER, name);
  if (!a) return args->ctx->err.code;
  a->border = b;
  return PXL_OK;
}

int pxl_args_output(pxl_args *args, pxl_image *img) {
  if (!img) return api_fail(args->ctx, PXL_EARG, "no output image");
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
    api_fail(ctx, PXL_ENOTFOUND, "%s has no kernel, reduce, histogram or pipeline named '%s' (it has: %s)", p->filename,
         entry, p->ndecls ? list : "nothing");
    return NULL;
  }
  if (p->ndecls) return p->decls[api_default_entry(p)];
  api_fail(ctx, PXL_ENOTFOUND, "%s defines nothing to run", p->filename);
  return NULL;
}

/* Whether the images of args have the element types of D's image parameters, bound as
 * bind() binds them: by name, else the unnamed ones in order. */
static bool images_fit(const Decl *D, const pxl_args *args) {
  int unnamed = 0; /* the unnamed images before this one are taken */
  for (int i = 0; i < D->nparams && args; i++) {
    const Param *p = D->params[i];
    if (!p->is_image) continue;
    const Arg *found = NULL;
    for (int j = 0; j < args->n && !found; j++)
      if (args->v[j].kind == ARG_IMAGE && !strcmp(args->v[j].name, p->name)) found = &args->v[j];
    for (int j = unnamed; j < args->n && !found; j++)
      if (args->v[j].kind == ARG_IMAGE && !args->v[j].name[0]) {
        found = &args->v[j];
        unnamed = j + 1;
      }
    if (!found) continue; /* missing: bind() reports it */
    if (scalar_of_pxl(found->img->type) != p->type.s) return false;
  }
  return true;
}

Decl *api_entry_instance(Decl *D, const pxl_args *args) {
  if (!D->inst_first) return D;
  for (Decl *i = D->inst_first; i; i = i->inst_next)
    if (images_fit(i, args)) return i;
  return D;
}

int pxl_program_entry_for_args(const pxl_program *prog, int i, const pxl_args *args) {
  if (!prog || i < 0 || i >= prog->prog->ndecls) return -1;
  return api_entry_instance(prog->prog->decls[i], args)->index;
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
  return api_fail(ctx, PXL_EARG, "parameter '%s' of %s '%s' is %s: '%s' is not an integer", p->name, kind_name(D->kind),
              D->name, scalar_name(s), a->text[0] ? a->text : "(value)");
range : {
  char buf[64];
  snprintf(buf, sizeof buf, "%.17g", a->value);
  return api_fail(ctx, PXL_EARG, "value %s is out of range for %s parameter '%s' of '%s'", a->text[0] ? a->text : buf,
              scalar_name(s), p->name, D->name);
}
}

/* The values of array parameter p: len + 1 Lanes (the last 0) in *out (heap, the
 * caller frees), each value converted to p's element type as the language converts an
 * f64; fewer values than elements leave the rest 0, more are PXL_EARG. */
static int bind_array(pxl_context *ctx, const Decl *D, const Param *p, const Arg *a, Lane **out) {
  if (a->nvals > p->len)
    return api_fail(ctx, PXL_EARG, "array parameter '%s' of %s '%s' has %d elements (%s[%d]), got %d values", p->name,
                    kind_name(D->kind), D->name, p->len, scalar_name(p->type.s), p->len, a->nvals);
  Lane *v = PXL_CALLOC((size_t)p->len + 1, sizeof *v);
  if (!v) return api_fail(ctx, PXL_ENOMEM, "out of memory");
  if (a->kind == ARG_SCALAR) v[0] = lane_convert((Lane){.f = a->value}, T_F64, p->type.s);
  for (int i = 0; i < a->nvals; i++) v[i] = lane_convert((Lane){.f = a->vals[i]}, T_F64, p->type.s);
  *out = v;
  return PXL_OK;
}

/* PXL_EARG: the image for p is not what p declares; `why` is added after the types. */
static int image_type_error(pxl_context *ctx, const Decl *D, const Param *p, const pxl_image *img, const char *why) {
  char want[64], got[64];
  describe_type(p->type, want, sizeof want);
  describe_type(type_vec(scalar_of_pxl(img->type), img->channels), got, sizeof got);
  if (D->inst_first) { /* no instance fits */
    char types[128];
    decl_instance_types(D, types, sizeof types);
    return api_fail(ctx, PXL_EARG, "image for parameter '%s' of generic '%s' (%s = %s) is %s%s; no instance takes it",
                    p->name, D->name, D->tparam, types, got, why);
  }
  return api_fail(ctx, PXL_EARG, "image for parameter '%s' of '%s' must be %s, got %s%s", p->name, D->name, want, got,
                  why);
}

/* Every image must have its parameter's type, or - per channel - a kernel or pipeline
 * whose image parameters and output are all one channel is given images that all have
 * the same 3 or 4 channels of the parameters' element types (runtime/channels.c runs it
 * on each channel). Anything else is PXL_EARG naming the parameter, the expected type and
 * the given one. */
static int check_images(pxl_context *ctx, const Decl *D, const ImgArg *imgs) {
  const Param *multi = NULL; /* the first one-channel parameter given more channels */
  for (int i = 0; i < D->nparams; i++) {
    const Param *p = D->params[i];
    if (!p->is_image) continue;
    const pxl_image *img = imgs[p->img_index].img;
    if (scalar_of_pxl(img->type) != p->type.s || (img->channels != p->type.lanes && p->type.lanes != 1))
      return image_type_error(ctx, D, p, img, "");
    if (img->channels != p->type.lanes && !multi) multi = p;
  }
  if (!multi) return PXL_OK;
  const pxl_image *mimg = imgs[multi->img_index].img;
  int C = mimg->channels;
  char why[256];
  if (D->kind == D_REDUCE || D->kind == D_HISTOGRAM) {
    snprintf(why, sizeof why, "; a %s gives one result, so it does not run per channel (split the channels, or "
             "declare the parameter %sx%d)", kind_name(D->kind), scalar_name(multi->type.s), C);
    return image_type_error(ctx, D, multi, mimg, why);
  }
  for (int k = 0; k < (D->nouts ? D->nouts : 1); k++) {
    Type t = D->nouts ? D->out_types[k] : D->type;
    if (t.lanes == 1) continue;
    snprintf(why, sizeof why, "; '%s' makes %sx%d pixels%s%s, so it does not run per channel", D->name,
             scalar_name(t.s), t.lanes, D->out_names ? " in output " : "", D->out_names ? D->out_names[k] : "");
    return image_type_error(ctx, D, multi, mimg, why);
  }
  for (int i = 0; i < D->nparams; i++) {
    const Param *p = D->params[i];
    if (!p->is_image) continue;
    const pxl_image *img = imgs[p->img_index].img;
    if (p->type.lanes != 1) {
      snprintf(why, sizeof why, "; only an entry whose images are all one channel runs per channel, and '%s' is %sx%d",
               p->name, scalar_name(p->type.s), p->type.lanes);
      return image_type_error(ctx, D, multi, mimg, why);
    }
    if (img->channels != C) {
      char got[64], other[64];
      describe_type(type_vec(scalar_of_pxl(img->type), img->channels), got, sizeof got);
      describe_type(type_vec(scalar_of_pxl(mimg->type), C), other, sizeof other);
      return api_fail(ctx, PXL_EARG,
                      "image for parameter '%s' of '%s' is %s but the one for '%s' is %s: a one-channel %s runs per "
                      "channel only when all its images have the same number of channels",
                      p->name, D->name, got, multi->name, other, kind_name(D->kind));
    }
  }
  return PXL_OK;
}

/* Binds args to D's parameters: imgs, scalars (array parameters' values allocated into
 * arrays[scalar_index], freed by the caller). */
static int bind(pxl_context *ctx, const Decl *D, pxl_args *args, ImgArg *imgs, Lane *scalars, Lane **arrays) {
  for (int i = 0; args && i < args->n; i++) args->v[i].used = false;
  for (int i = 0; i < D->nparams; i++) {
    const Param *p = D->params[i];
    Arg *found = NULL;
    for (int j = 0; args && j < args->n && !found; j++) {
      Arg *a = &args->v[j];
      if (a->used) continue;
      if (a->kind != (p->is_image ? ARG_IMAGE : p->len ? ARG_ARRAY : ARG_SCALAR) &&
          !(p->len && a->kind == ARG_SCALAR)) /* one value for an array: its first element */
        continue;
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
        return api_fail(ctx, PXL_EARG, "%s '%s' needs an image for parameter '%s' (%s)", kind_name(D->kind), D->name,
                    p->name, t);
      for (int j = 0; !p->is_image && !p->len && args && j < args->n; j++)
        if (args->v[j].kind == ARG_ARRAY && !strcmp(args->v[j].name, p->name))
          return api_fail(ctx, PXL_EARG, "parameter '%s' of %s '%s' is one %s value, not an array", p->name,
                          kind_name(D->kind), D->name, scalar_name(p->type.s));
      if (p->len)
        return api_fail(ctx, PXL_EARG, "%s '%s' needs values for array parameter '%s' (%s[%d]; --param %s=V,V,... "
                        "or --param %s=@FILE)", kind_name(D->kind), D->name, p->name, scalar_name(p->type.s), p->len,
                        p->name, p->name);
      return api_fail(ctx, PXL_EARG, "%s '%s' needs a value for parameter '%s' (%s; --param %s=VALUE)", kind_name(D->kind),
                  D->name, p->name, scalar_name(p->type.s), p->name);
    }
    found->used = true;
    if (p->is_image) {
      pxl_image *img = found->img;
      ImgArg *ia = &imgs[p->img_index];
      ia->img = img;
      ia->border = p->border;
    } else if (p->len) {
      int rc = bind_array(ctx, D, p, found, &arrays[p->scalar_index]);
      if (rc) return rc;
      scalars[p->scalar_index].arr = arrays[p->scalar_index];
    } else {
      int rc = bind_scalar(ctx, D, p, found, &scalars[p->scalar_index]);
      if (rc) return rc;
    }
  }
  int rc = check_images(ctx, D, imgs);
  if (rc) return rc;
  /* border overrides */
  for (int j = 0; args && j < args->n; j++) {
    Arg *a = &args->v[j];
    if (a->kind != ARG_BORDER) continue;
    if (D->kind == D_PIPELINE)
      return api_fail(ctx, PXL_EARG, "'%s' is a pipeline: its border modes are written where each image is used",
                  D->name);
    const Param *p = NULL;
    for (int i = 0; i < D->nparams; i++)
      if (D->params[i]->is_image && (!strcmp(D->params[i]->name, a->name) || (!a->name[0] && D->nimages == 1)))
        p = D->params[i];
    if (!p) return api_fail(ctx, PXL_EARG, "'%s' has no image parameter '%s' to set a border for", D->name, a->name);
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
      return api_fail(ctx, PXL_EARG, "too many input images for '%s' (its parameters: %s)", D->name, names);
    return api_fail(ctx, PXL_EARG, "'%s' is not %s parameter of '%s' (its parameters: %s)", a->name,
                a->kind == ARG_IMAGE ? "an image" : a->kind == ARG_ARRAY ? "an array" : "a scalar", D->name,
                D->nparams ? names : "none");
  }
  return PXL_OK;
}

static bool uses_device_memory(const Decl *D, const ImgArg *imgs, const struct pxl_image *out) {
  for (int i = 0; i < D->nimages; i++)
    if (imgs[i].img->device) return true;
  return out && out->device;
}

/* Runs entry D on backend be in the form its device class takes (api_runnable). */
static int run_on(pxl_context *ctx, pxl_program *prog, Backend *be, const Decl *D, const ImgArg *imgs,
                  const Lane *scalars, struct pxl_image *output, ExecResult *r, Err *e) {
  const Decl *form;
  int rc = api_runnable(ctx, prog, api_device_class(be), D, &form);
  if (rc) {
    *e = ctx->err;
    return rc;
  }
  return exec_entry(be, form, imgs, scalars, output, r, e);
}

int pxl_run(pxl_context *ctx, pxl_program *prog, const char *entry, pxl_args *args, pxl_run_result **out) {
  api_clear(ctx);
  *out = NULL;
  if (!prog) return api_fail(ctx, PXL_EARG, "no program");
  Decl *D = find_entry(ctx, prog->prog, entry);
  if (!D) return ctx->err.code;
  D = api_entry_instance(D, args);
  ImgArg imgs[64];
  Lane scalars[32];
  Lane *arrays[32] = {0};
  memset(imgs, 0, sizeof imgs);
  memset(scalars, 0, sizeof scalars);
  int rc = bind(ctx, D, args, imgs, scalars, arrays);
  if (!rc && args && args->output && D->kind != D_KERNEL && D->kind != D_PIPELINE)
    rc = api_fail(ctx, PXL_EARG, "'%s' is a %s: it has no output image", D->name, kind_name(D->kind));
  pxl_run_result *res = rc ? NULL : PXL_CALLOC(1, sizeof *res);
  if (!rc && !res) rc = api_fail(ctx, PXL_ENOMEM, "out of memory");
  if (rc) {
    for (int i = 0; i < 32; i++) PXL_FREE(arrays[i]);
    return rc;
  }
  snprintf(res->name, sizeof res->name, "%s", D->name);
  Err e = {0};
  Backend *be;
  struct pxl_image *output = args ? args->output : NULL;
  rc = api_backend(ctx, &be, &e);
  if (!rc) rc = run_on(ctx, prog, be, D, imgs, scalars, output, &res->r, &e);
  /* "auto" keeps working: a backend that cannot compile or run this (a failing GPU, a
   * build the C compiler refuses, no C compiler) hands it to the next one, with a
   * warning; runs on device images stay where their pixels are */
  while (rc && (rc == PXL_EDEVICE || rc == PXL_EFAULT || rc == PXL_EBACKEND) && !uses_device_memory(D, imgs, output)) {
    char what[160];
    snprintf(what, sizeof what, "'%s'", D->name);
    Backend *next = api_backend_after(ctx, be, what, &e);
    if (!next) break;
    be = next;
    memset(&e, 0, sizeof e);
    rc = run_on(ctx, prog, be, D, imgs, scalars, output, &res->r, &e);
  }
  if (!rc && res->r.kind == PXL_RESULT_HISTOGRAM) {
    res->bins = PXL_MALLOC(sizeof(double) * (size_t)res->r.nbins);
    if (!res->bins) rc = err_set(&e, PXL_ENOMEM, "out of memory");
    for (int i = 0; !rc && i < res->r.nbins; i++)
      res->bins[i] = res->r.bins_float ? res->r.bins[i].f : (double)res->r.bins[i].i;
  }
  for (int i = 0; i < 32; i++) PXL_FREE(arrays[i]); /* the runs are done with them (backends copy) */
  if (rc) {
    pxl_result_free(res);
    return api_fail_err(ctx, &e);
  }
  snprintf(res->device, sizeof res->device, "%s", backend_describe(be));
  *out = res;
  return PXL_OK;
}

void pxl_result_free(pxl_run_result *res) {
  if (!res) return;
  exec_result_free(&res->r);
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

int pxl_result_image_count(const pxl_run_result *res) {
  if (!res || res->r.kind != PXL_RESULT_IMAGE) return 0;
  return res->r.nimages > 1 ? res->r.nimages : 1;
}

pxl_image *pxl_result_image_at(pxl_run_result *res, int i) {
  if (i < 0 || i >= pxl_result_image_count(res)) return NULL;
  return i == 0 ? res->r.image : res->r.more[i - 1];
}

pxl_image *pxl_result_take_image_at(pxl_run_result *res, int i) {
  if (i < 0 || i >= pxl_result_image_count(res)) return NULL;
  if (i == 0) return pxl_result_take_image(res);
  pxl_image *img = res->r.more[i - 1];
  res->r.more[i - 1] = NULL;
  return img;
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

_Static_assert(sizeof(Lane) == sizeof(int64_t), "pxl_result_bins_i64 hands out Lanes as int64_t");

const int64_t *pxl_result_bins_i64(const pxl_run_result *res, int *n) {
  if (n) *n = 0;
  if (!res || res->r.kind != PXL_RESULT_HISTOGRAM || res->r.bins_float) return NULL;
  if (n) *n = res->r.nbins;
  return &res->r.bins[0].i; /* a Lane's integer member; Lanes are 8 bytes, as int64_t */
}

int pxl_result_bins_op(const pxl_run_result *res) {
  if (!res || res->r.kind != PXL_RESULT_HISTOGRAM) return -1;
  return res->r.bins_op == BIN_MIN ? PXL_BINS_MIN : res->r.bins_op == BIN_MAX ? PXL_BINS_MAX : PXL_BINS_SUM;
}

const char *pxl_result_name(const pxl_run_result *res) { return res ? res->name : ""; }

const char *pxl_result_device(const pxl_run_result *res) { return res ? res->device : ""; }
