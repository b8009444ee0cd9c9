/*
 * instance.c - see instance.h.
 */
#include "runtime/instance.h"

#include <string.h>

#include "image/image.h"
#include "util/alloc.h"

void stage_borders(const Decl *D, const ImgArg *imgs, int w, int h, Border *out) {
  for (int i = 0; i < D->nimages; i++) {
    const Access *ac = &D->access[i];
    const struct pxl_image *img = imgs[i].img;
    bool inside = !ac->read_abs && !ac->gather && !ac->x0 && !ac->x1 && !ac->y0 && !ac->y1;
    bool covers = img && img->width >= w && img->height >= h;
    out[i] = inside && covers ? (Border){B_CLAMP, 0} : imgs[i].border;
  }
}

static bool same_borders(const Border *a, const Border *b, int n) {
  for (int i = 0; i < n; i++)
    if (a[i].kind != b[i].kind || (a[i].kind == B_CONSTANT && a[i].value != b[i].value)) return false;
  return true;
}

Instance *instance_find(Instance *list, const Decl *D, const Border *borders, int sclass) {
  for (Instance *in = list; in; in = in->next)
    if (in->serial == D->serial && in->index == D->index && in->nb == D->nimages && in->sclass == sclass &&
        same_borders(in->borders, borders, D->nimages))
      return in;
  return NULL;
}

Instance *instance_new(const Decl *D, const Border *borders, int sclass, size_t size) {
  if (D->nimages > INSTANCE_MAX_IMAGES || size < sizeof(Instance)) return NULL;
  Instance *in = PXL_CALLOC(1, size);
  if (!in) return NULL;
  in->serial = D->serial;
  in->index = D->index;
  in->nb = D->nimages;
  in->sclass = sclass;
  memcpy(in->borders, borders, sizeof(Border) * (size_t)D->nimages);
  return in;
}

void instance_link(Instance **list, Instance *in) {
  in->next = *list;
  *list = in;
}

void instance_list_free(Instance *list) {
  for (Instance *in = list, *next; in; in = next) {
    next = in->next;
    PXL_FREE(in);
  }
}
