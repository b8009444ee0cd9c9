/*
 * compile.c - the compiler driver: reads as the pipeline of phases.
 *
 *   source -> lex -> parse -> check -> analyze -> Program
 *
 * Code generation and loading happen later, per stage instance, in the runtime
 * (src/runtime/host), because the border mode of each use is part of the instance.
 */
#include <string.h>

#include "analysis/analysis.h"
#include "front/front.h"
#include "pxl/pxl.h"
#include "util/alloc.h"

int front_compile(const char *filename, const char *source, Program **out, Diag *d) {
  *out = NULL;
  Arena *a = arena_new();
  if (!a) return PXL_ENOMEM;
  Program *p = arena_alloc(a, sizeof *p);
  if (!p) {
    arena_free(a);
    return PXL_ENOMEM;
  }
  p->arena = a;
  static _Atomic uint64_t next_serial = 1;
  p->serial = next_serial++;
  p->filename = arena_strndup(a, filename, strlen(filename));
  p->source = source;
  int ntoks = 0;
  Token *toks = lex(a, d, source, &ntoks);
  if (!toks) {
    arena_free(a);
    return PXL_ENOMEM;
  }
  bool ok = d->nerrors == 0;
  ok = parse_program(p, d, toks, ntoks) && ok;
  PXL_FREE(toks);
  if (a->failed) { /* the tree may hold placeholders: do not check it */
    arena_free(a);
    return PXL_ENOMEM;
  }
  ok = check_program(p, d) && ok; /* checks the declarations that parsed cleanly */
  if (ok) ok = analyze_program(p, d);
  for (int i = 0; ok && i < p->ndecls; i++) {
    p->decls[i]->index = i;
    p->decls[i]->serial = p->serial;
    p->decls[i]->prog = p;
  }
  p->next_index = p->ndecls;
  for (int i = 0; ok && i < p->ndecls; i++) /* global operators' maps: kernels of their own (caches key on index) */
    for (int k = 0; k < PXL_MAX_GMAPS; k++) {
      Decl *M = p->decls[i]->gmap[k];
      if (!M) continue;
      M->index = p->next_index++;
      M->serial = p->serial;
      M->prog = p;
    }
  if (ok && !outputs_lower(p)) ok = false;
  if (ok && !fuse_program(p)) ok = false;
  if (a->failed || d->oom) {
    arena_free(a);
    return PXL_ENOMEM;
  }
  if (!ok) {
    arena_free(a);
    return PXL_ESOURCE;
  }
  *out = p;
  return PXL_OK;
}
