/*
 * instance.h - stage instances, for the backends that compile code per instance (the CPU
 * backend, the GPU core): which border modes an instance depends on, and the memo of the
 * instances a backend has made.
 *
 * A stage instance is a declaration (kernel, reduction, histogram) with a border mode
 * fixed for each image parameter. An image read only at (0, 0) - no window, no absolute
 * read, no data-dependent read - that covers the iteration space (the output for a
 * kernel, the first image for a reduction or a histogram) is never read outside, so its
 * border cannot matter: stage_borders gives it one mode (clamp) and every mode shares one
 * module. An image smaller than the iteration space is read outside (relative reads use
 * the output's coordinates, LANGUAGE.md), so it keeps its mode.
 *
 * The memo maps (program serial, declaration index, normalised borders, size class) to
 * what the backend made of the instance, so a repeated run generates no code. A backend
 * that keeps more per instance puts an Instance first in its own record (gpu_cache.h).
 */
#ifndef PXL_INSTANCE_H
#define PXL_INSTANCE_H

#include <stddef.h>
#include <stdint.h>

#include "ir/value.h"

#define INSTANCE_MAX_IMAGES 8 /* instances with more image parameters are not remembered */

/* The border of each of D's images in the instance that runs imgs over a w x h iteration
 * space (see above), into out[0 .. D->nimages). */
void stage_borders(const Decl *D, const ImgArg *imgs, int w, int h, Border *out);

typedef struct Instance Instance;
struct Instance {
  Instance *next;
  uint64_t serial; /* Decl.serial: the program */
  int index;       /* Decl.index: the declaration */
  int nb;          /* its images */
  int sclass;      /* size class (0 where the backend has none) */
  Border borders[INSTANCE_MAX_IMAGES]; /* normalised (stage_borders) */
  void *module;    /* what the backend made of it */
};

/* The instance of D with `borders` (normalised) at size class sclass in list, or NULL. */
Instance *instance_find(Instance *list, const Decl *D, const Border *borders, int sclass);
/* A new unlinked instance record of `size` bytes (at least sizeof(Instance); a backend's
 * own record begins with the Instance), zero but for its key; freed with PXL_FREE or, once
 * linked, instance_list_free. NULL when out of memory or D has more than
 * INSTANCE_MAX_IMAGES images. */
Instance *instance_new(const Decl *D, const Border *borders, int sclass, size_t size);
/* Puts in at the head of *list. */
void instance_link(Instance **list, Instance *in);
/* Frees every record of list (not their modules). */
void instance_list_free(Instance *list);

#endif
