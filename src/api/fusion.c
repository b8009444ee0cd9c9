/*
 * fusion.c - which form of a pipeline a run takes, and the cost model's predictions
 * (see handles.h; docs/ARCHITECTURE.md, "Fusion" and "The cost model").
 *
 * A program's pipelines carry the forms the cost model chose per device class (Decl.fused,
 * made when the program was compiled): the host backends run the CPU's, the GPU backends
 * the GPU's, the interpreter the pipeline as written. Other forms are made on first use
 * and kept with the program: every exact fusion without the model (PXL_FUSE_ALL, the
 * interpreter too), or the model's choice with some stages kept as written
 * (pxl_set_fusion_keep), for comparison.
 */
#include <stdio.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/cost.h"
#include "api/handles.h"
#include "util/alloc.h"

/* A pipeline's form other than Decl.fused, made on first use. */
struct FusedForm {
  FusedForm *next;
  const Decl *D;
  int model;
  bool tiles;
  char *keep;      /* the stage names kept, as given */
  const Decl *F;   /* the form (D itself when nothing fuses) */
};

int pxl_set_fusion(pxl_context *ctx, int mode) {
  api_clear(ctx);
  if (mode != PXL_FUSE_AUTO && mode != PXL_FUSE_OFF && mode != PXL_FUSE_ALL)
    return api_fail(ctx, PXL_EARG, "fusion mode %d is not PXL_FUSE_AUTO, PXL_FUSE_OFF or PXL_FUSE_ALL", mode);
  ctx->fusion = mode;
  return PXL_OK;
}

static bool name_char(char c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

int pxl_set_fusion_keep(pxl_context *ctx, const char *stages) {
  api_clear(ctx);
  char *copy = NULL;
  if (stages && *stages) {
    size_t n = strlen(stages);
    if (n > 4096) return api_fail(ctx, PXL_EARG, "stage list of %zu bytes (at most 4096)", n);
    for (size_t i = 0; i < n; i++) /* the message quotes only bytes checked to be names and commas */
      if (stages[i] != ',' && !name_char(stages[i]))
        return api_fail(ctx, PXL_EARG, "stage list \"%.*s\": byte 0x%02x after it is not part of a name",
                        (int)(i < 64 ? i : 64), stages, (unsigned char)stages[i]);
    for (size_t i = 0, start = 0; i <= n; i++) {
      if (i < n && stages[i] != ',') continue;
      if (i == start || (stages[start] >= '0' && stages[start] <= '9'))
        return api_fail(ctx, PXL_EARG, "stage list \"%.64s\": expected stage names separated by commas", stages);
      start = i + 1;
    }
    copy = PXL_MALLOC(n + 1);
    if (!copy) return api_fail(ctx, PXL_ENOMEM, "out of memory");
    memcpy(copy, stages, n + 1);
  }
  PXL_FREE(ctx->fuse_keep);
  ctx->fuse_keep = copy;
  return PXL_OK;
}

/* keep[v] for each stage of pipeline D named in list, by its name or the name of the
 * kernel it calls (an anonymous call has only that); PXL_EARG for a name that is neither
 * for any stage. */
static int keep_flags(pxl_context *ctx, const Decl *D, const char *list, bool *keep) {
  for (const char *s = list; *s;) {
    size_t n = strcspn(s, ",");
    bool found = false;
    for (int v = 0; v < D->nvalues; v++) {
      const char *name = D->values[v].name, *callee = D->values[v].callee ? D->values[v].callee->name : NULL;
      if (callee && ((name && strlen(name) == n && !memcmp(name, s, n)) || (strlen(callee) == n && !memcmp(callee, s, n))))
        keep[v] = found = true;
    }
    if (!found) {
      char stages[512] = "";
      for (int v = 0, k = 0; v < D->nvalues; v++) {
        const PipeValue *pv = &D->values[v];
        const char *name = pv->callee ? (pv->name ? pv->name : pv->callee->name) : NULL;
        if (name && strlen(stages) + strlen(name) + 3 < sizeof stages)
          snprintf(stages + strlen(stages), sizeof stages - strlen(stages), "%s%s", k++ ? ", " : "", name);
      }
      return api_fail(ctx, PXL_EARG, "pipeline '%s' has no stage '%.*s' to keep unfused (its stages: %s)", D->name,
                      (int)(n > 64 ? 64 : n), s, *stages ? stages : "none");
    }
    s += n + (s[n] == ',');
  }
  return PXL_OK;
}

/* The form of pipeline D with `model` and `tiles` (fuse_pipeline's) and the stages of
 * ctx->fuse_keep kept. */
static int other_form(pxl_context *ctx, pxl_program *prog, const Decl *D, int model, bool tiles, const Decl **out) {
  const char *keep = ctx->fuse_keep ? ctx->fuse_keep : "";
  for (FusedForm *f = prog->forms; f; f = f->next)
    if (f->D == D && f->model == model && f->tiles == tiles && !strcmp(f->keep, keep)) return *out = f->F, PXL_OK;
  bool *flags = PXL_CALLOC((size_t)D->nvalues + 1, sizeof *flags);
  FusedForm *f = PXL_CALLOC(1, sizeof *f);
  char *k = PXL_MALLOC(strlen(keep) + 1);
  if (!flags || !f || !k) {
    PXL_FREE(flags), PXL_FREE(f), PXL_FREE(k);
    return api_fail(ctx, PXL_ENOMEM, "out of memory");
  }
  int rc = keep_flags(ctx, D, keep, flags);
  const Decl *F = rc ? NULL : fuse_pipeline(prog->prog, D, flags, model, tiles);
  PXL_FREE(flags);
  if (!rc && !F && prog->prog->arena->failed) rc = api_fail(ctx, PXL_ENOMEM, "out of memory");
  if (rc) {
    PXL_FREE(f), PXL_FREE(k);
    return rc;
  }
  memcpy(k, keep, strlen(keep) + 1);
  *f = (FusedForm){.next = prog->forms, .D = D, .model = model, .tiles = tiles, .keep = k, .F = F ? F : D};
  prog->forms = f;
  *out = f->F;
  return PXL_OK;
}

int api_device_class(const Backend *be) {
  return !strcmp(be->name, "ref") ? -1 : be->image_new ? COST_GPU : COST_CPU;
}

int api_runnable(pxl_context *ctx, pxl_program *prog, int cls, const Decl *D, const Decl **out) {
  *out = D;
  if (D->kind != D_PIPELINE || ctx->fusion == PXL_FUSE_OFF || (cls < 0 && ctx->fusion != PXL_FUSE_ALL)) return PXL_OK;
  if (ctx->fusion == PXL_FUSE_AUTO && !ctx->fuse_keep) {
    if (D->fused[cls]) *out = D->fused[cls];
    return PXL_OK;
  }
  return other_form(ctx, prog, D, ctx->fusion == PXL_FUSE_ALL ? -1 : cls, cls == COST_GPU, out);
}

void api_forms_free(pxl_program *prog) {
  for (FusedForm *f = prog->forms, *next; f; f = next) {
    next = f->next;
    PXL_FREE(f->keep);
    PXL_FREE(f);
  }
  prog->forms = NULL;
}

int pxl_program_entry_predict(pxl_context *ctx, pxl_program *prog, int i, const char *device, int width, int height,
                              double *seconds) {
  api_clear(ctx);
  if (seconds) *seconds = 0;
  if (!prog || i < 0 || i >= prog->prog->ndecls) return api_fail(ctx, PXL_EARG, "no entry number %d", i);
  if (!seconds) return api_fail(ctx, PXL_EARG, "no place for the prediction");
  if (width < 1 || height < 1) return api_fail(ctx, PXL_EARG, "image size %dx%d", width, height);
  int d = !device ? -1 : !strcmp(device, "cpu") ? COST_CPU : !strcmp(device, "gpu") ? COST_GPU : -1;
  if (d < 0) return api_fail(ctx, PXL_EARG, "device class \"%.32s\" is not \"cpu\" or \"gpu\"", device ? device : "(null)");
  const Decl *F;
  int rc = api_runnable(ctx, prog, d, prog->prog->decls[i], &F);
  if (rc) return rc;
  *seconds = cost_predict(F, &cost_devices[d], width, height).seconds;
  return PXL_OK;
}
