/*
 * program.c - programs: compiling source text (the compiler driver, src/driver), entry
 * points and their signatures, the --explain report and `pxl compile` (see handles.h).
 */
#include <stdio.h>
#include <string.h>

#include "analysis/analysis.h"
#include "api/api_internal.h"
#include "api/handles.h"
#include "codegen/c/gen_c.h"
#include "front/front.h"
#include "ir/value.h"
#include "util/alloc.h"
#include "util/file.h"

#define MAX_SOURCE (16u << 20) /* largest .pxl file accepted */

static int compile_text(pxl_context *ctx, const char *name, char *src, pxl_program **out) {
  Diag d;
  diag_init(&d, name, src);
  Program *p = NULL;
  int rc = front_compile(name, src, &p, &d);
  if (rc) {
    if (rc == PXL_ESOURCE && d.text) {
      size_t n = strlen(d.text);
      while (n && d.text[n - 1] == '\n') d.text[--n] = 0;
      api_fail(ctx, rc, "%.*s", (int)(sizeof ctx->err.msg - 1), d.text);
      if (n >= sizeof ctx->err.msg) { /* keep every diagnostic */
        ctx->long_msg = d.text;
        d.text = NULL;
      }
    } else {
      api_fail(ctx, rc, rc == PXL_ENOMEM ? "out of memory compiling %s" : "%s: compilation failed", name);
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
    return api_fail(ctx, PXL_ENOMEM, "out of memory");
  }
  prog->ctx = ctx;
  prog->prog = p;
  prog->source = src;
  *out = prog;
  return PXL_OK;
}

int pxl_program_from_string(pxl_context *ctx, const char *name, const char *src, pxl_program **out) {
  api_clear(ctx);
  *out = NULL;
  if (!src) return api_fail(ctx, PXL_EARG, "no source text");
  size_t n = strlen(src);
  if (n > MAX_SOURCE) return api_fail(ctx, PXL_EARG, "%s: source larger than %u bytes", name, MAX_SOURCE);
  char *copy = PXL_MALLOC(n + 1);
  if (!copy) return api_fail(ctx, PXL_ENOMEM, "out of memory");
  memcpy(copy, src, n + 1);
  return compile_text(ctx, name ? name : "<string>", copy, out);
}

int pxl_program_from_file(pxl_context *ctx, const char *path, pxl_program **out) {
  api_clear(ctx);
  *out = NULL;
  if (!path) return api_fail(ctx, PXL_EARG, "no file name");
  char *buf;
  size_t n;
  Err e = {0};
  int rc = file_read_all(path, MAX_SOURCE, &buf, &n, &e);
  if (rc == PXL_ETOOBIG) return api_fail(ctx, PXL_EARG, "%s: larger than %u bytes; is it a kernel source?", path, MAX_SOURCE);
  if (rc) return api_fail_err(ctx, &e);
  if (memchr(buf, 0, n)) {
    PXL_FREE(buf);
    return api_fail(ctx, PXL_ESOURCE, "%s: contains a NUL byte; kernel sources are text", path);
  }
  return compile_text(ctx, path, buf, out);
}

void pxl_program_free(pxl_program *prog) {
  if (!prog) return;
  api_forms_free(prog);
  program_free(prog->prog);
  PXL_FREE(prog->source);
  PXL_FREE(prog);
}

const Program *pxl_program_ir(const pxl_program *prog) { return prog ? prog->prog : NULL; }

int pxl_program_entry_count(const pxl_program *prog) { return prog ? prog->prog->ndecls : 0; }

const char *pxl_program_entry_name(const pxl_program *prog, int i) {
  if (!prog || i < 0 || i >= prog->prog->ndecls) return NULL;
  return prog->prog->decls[i]->name;
}

int api_default_entry(const Program *p) {
  for (int i = p->ndecls - 1; i >= 0; i--)
    if (p->decls[i]->kind == D_PIPELINE) return i;
  return p->ndecls - 1;
}

int pxl_program_entry_find(const pxl_program *prog, const char *name) {
  if (!prog) return -1;
  if (!name || !*name) return api_default_entry(prog->prog);
  const Decl *D = program_find(prog->prog, name);
  return D ? D->index : -1;
}

int pxl_program_entry_is_generic(const pxl_program *prog, int i) {
  if (!prog || i < 0 || i >= prog->prog->ndecls) return 0;
  return prog->prog->decls[i]->inst_first != NULL;
}

int pxl_program_entry_makes_image(const pxl_program *prog, int i) {
  if (!prog || i < 0 || i >= prog->prog->ndecls) return 0;
  DeclKind k = prog->prog->decls[i]->kind;
  return k == D_KERNEL || k == D_PIPELINE;
}

int pxl_program_entry_output(const pxl_program *prog, int i, pxl_type *type, int *channels) {
  if (!pxl_program_entry_makes_image(prog, i)) return 0;
  Type t = prog->prog->decls[i]->type;
  pxl_type pt = pxl_of_scalar(t.s);
  if (scalar_of_pxl(pt) != t.s || t.lanes < 1) return 0; /* not a pixel type (the checker refuses) */
  if (type) *type = pt;
  if (channels) *channels = t.lanes;
  return 1;
}

int pxl_program_entry_output_count(const pxl_program *prog, int i) {
  if (!pxl_program_entry_makes_image(prog, i)) return 0;
  const Decl *D = prog->prog->decls[i];
  return D->nouts ? D->nouts : 1;
}

int pxl_program_entry_output_at(const pxl_program *prog, int i, int k, pxl_type *type, int *channels,
                                const char **name) {
  if (k < 0 || k >= pxl_program_entry_output_count(prog, i)) return 0;
  const Decl *D = prog->prog->decls[i];
  Type t = D->nouts ? D->out_types[k] : D->type;
  pxl_type pt = pxl_of_scalar(t.s);
  if (scalar_of_pxl(pt) != t.s || t.lanes < 1) return 0;
  if (type) *type = pt;
  if (channels) *channels = t.lanes;
  if (name) *name = D->out_names ? D->out_names[k] : "";
  return 1;
}

int pxl_program_entry_param_count(const pxl_program *prog, int i) {
  if (!prog || i < 0 || i >= prog->prog->ndecls) return -1;
  return prog->prog->decls[i]->nparams;
}

int pxl_program_entry_param(const pxl_program *prog, int i, int k, pxl_param_info *out) {
  if (!out || k < 0 || k >= pxl_program_entry_param_count(prog, i)) return 0;
  const Param *P = prog->prog->decls[i]->params[k];
  pxl_type pt = pxl_of_scalar(P->type.s);
  *out = (pxl_param_info){P->name, P->is_image ? PXL_PARAM_IMAGE : P->len ? PXL_PARAM_ARRAY : PXL_PARAM_SCALAR,
                          scalar_of_pxl(pt) == P->type.s ? pt : PXL_F64, P->type.lanes > 0 ? P->type.lanes : 1,
                          P->len};
  return 1;
}

const char *pxl_program_entry_signature(const pxl_program *prog, int i) {
  if (!prog || i < 0 || i >= prog->prog->ndecls) return NULL;
  const Decl *D = prog->prog->decls[i];
  char buf[2048], t[16];
  size_t n = 0;
  switch (D->kind) {
  case D_KERNEL:
    if (D->nouts) { /* kernel (T1 a, T2 b) name( */
      n += (size_t)snprintf(buf, sizeof buf, "kernel (");
      for (int k = 0; k < D->nouts; k++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s %s", k ? ", " : "", type_str(D->out_types[k], t),
                              D->out_names[k]);
      n += (size_t)snprintf(buf + n, sizeof buf - n, ") %s(", D->name);
      break;
    }
    n += (size_t)snprintf(buf, sizeof buf, "%s %s %s(", D->global ? "global" : D->scan ? "scan" : "kernel",
                          type_str(D->type, t), D->name);
    break;
  case D_REDUCE: n += (size_t)snprintf(buf, sizeof buf, "reduce %s %s(", type_str(D->type, t), D->name); break;
  case D_HISTOGRAM: n += (size_t)snprintf(buf, sizeof buf, "histogram[%d] %s(", D->nbins, D->name); break;
  case D_PIPELINE: n += (size_t)snprintf(buf, sizeof buf, "pipeline %s(", D->name); break;
  case D_FUNC: return NULL; /* functions are not entry points */
  }
  for (int j = 0; j < D->nparams && n < sizeof buf - 128; j++) {
    const Param *p = D->params[j];
    n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s%s %s", j ? ", " : "", p->is_image ? "image " : "",
                          type_str(p->type, t), p->name);
    if (p->len) n += (size_t)snprintf(buf + n, sizeof buf - n, "[%d]", p->len);
    if (p->has_border && D->kind != D_PIPELINE) {
      if (p->border.kind == B_CONSTANT)
        n += (size_t)snprintf(buf + n, sizeof buf - n, " : constant(%g)", p->border.value);
      else
        n += (size_t)snprintf(buf + n, sizeof buf - n, " : %s", border_name(p->border.kind));
    }
  }
  if (n < sizeof buf - 40 && D->kind == D_PIPELINE && D->nouts) { /* -> (image T1, image T2) */
    n += (size_t)snprintf(buf + n, sizeof buf - n, ") -> (");
    for (int k = 0; k < D->nouts; k++)
      n += (size_t)snprintf(buf + n, sizeof buf - n, "%simage %s", k ? ", " : "", type_str(D->out_types[k], t));
    n += (size_t)snprintf(buf + n, sizeof buf - n, ")");
  } else if (n < sizeof buf - 40) {
    n += (size_t)snprintf(buf + n, sizeof buf - n, D->kind == D_PIPELINE ? ") -> image %s" : ")",
                          type_str(D->type, t));
  }
  return arena_strndup(prog->prog->arena, buf, n < sizeof buf ? n : sizeof buf - 1);
}

const char *pxl_program_explain(pxl_context *ctx, pxl_program *prog) {
  if (!prog) return NULL;
  return explain_program(prog->prog);
}

int pxl_program_write_c(pxl_context *ctx, pxl_program *prog, const char *base) {
  api_clear(ctx);
  if (!prog || !base || !*base) return api_fail(ctx, PXL_EARG, "no program or output name");
  const char *slash = strrchr(base, '/');
  char cpath[4200], hpath[4200];
  if (snprintf(cpath, sizeof cpath, "%s.c", base) >= (int)sizeof cpath ||
      snprintf(hpath, sizeof hpath, "%s.h", base) >= (int)sizeof hpath) /* never a shortened name */
    return api_fail(ctx, PXL_EARG, "output name '%.60s...' is too long", base);
  StrBuf c = {0}, h = {0};
  Err e = {0};
  int rc = gen_c_program(prog->prog, slash ? slash + 1 : base, &c, &h, &e);
  if (rc) rc = api_fail_err(ctx, &e);
  if (!rc) rc = pxl_write_file(ctx, hpath, h.s, h.len);
  if (!rc) rc = pxl_write_file(ctx, cpath, c.s, c.len);
  sb_free(&c);
  sb_free(&h);
  return rc;
}

