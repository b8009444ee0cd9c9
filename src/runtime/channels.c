/*
 * channels.c - one-channel entries run per channel on 3- and 4-channel images.
 *
 * A kernel or pipeline whose image parameters and output are one channel, given images
 * that all have C = 3 or 4 channels of the parameters' element types (the API's binding
 * admits exactly that, src/api/run.c), runs once per channel: every input is split into
 * a plane of channel c, the entry runs on those planes with the same scalars and borders
 * (exec_entry, so on any backend, with its copies to and from device memory), and the
 * result is interleaved into channel c of a C-channel output. This is what OpenCV's
 * filters do with a colour image. It lives here, under exec_entry, so that every backend
 * gets it unchanged and the front end, analysis and code generators never see it.
 *
 * The planes are host images: device images are refused with PXL_EARG, since no backend
 * entry point moves one channel of a device image (runs stay where their pixels are).
 */
#include <string.h>

#include "runtime/backend.h"

int exec_channels(const Decl *D, const ImgArg *imgs) {
  if ((D->kind != D_KERNEL && D->kind != D_PIPELINE) || D->type.lanes != 1 || D->nimages == 0) return 1;
  for (int i = 0; i < D->nparams; i++)
    if (D->params[i]->is_image && D->params[i]->type.lanes != 1) return 1;
  for (int k = 0; k < D->nouts; k++) /* several outputs: every one a channel */
    if (D->out_types[k].lanes != 1) return 1;
  return imgs[0].img->channels;
}

/* Copies n elements of sz bytes from every sstep-th element of s to every dstep-th of d;
 * constant sizes, so that the copies are plain loads and stores. */
static void copy_strided(char *d, size_t dstep, const char *s, size_t sstep, int n, size_t sz) {
#define STRIDED(SZ)                                                                       \
  for (int x = 0; x < n; x++) memcpy(d + (size_t)x * dstep * (SZ), s + (size_t)x * sstep * (SZ), (SZ)); \
  break
  switch (sz) {
  case 1: STRIDED(1);
  case 2: STRIDED(2);
  case 4: STRIDED(4);
  default: STRIDED(8);
  }
#undef STRIDED
}

/* Channel c of img into the one-channel plane (same size and element type). */
static void plane_get(struct pxl_image *plane, const struct pxl_image *img, int c) {
  size_t sz = (size_t)pxl_type_size(img->type);
  for (int y = 0; y < img->height; y++)
    copy_strided(image_row(plane, y), 1, (const char *)image_row(img, y) + (size_t)c * sz, (size_t)img->channels,
                 img->width, sz);
}

/* The one-channel plane into channel c of img. */
static void plane_put(struct pxl_image *img, const struct pxl_image *plane, int c) {
  size_t sz = (size_t)pxl_type_size(img->type);
  for (int y = 0; y < img->height; y++)
    copy_strided((char *)image_row(img, y) + (size_t)c * sz, (size_t)img->channels, image_row(plane, y), 1,
                 img->width, sz);
}

static const char *image_name(const Decl *D, int k) {
  for (int i = 0; i < D->nparams; i++)
    if (D->params[i]->is_image && D->params[i]->img_index == k) return D->params[i]->name;
  return "?";
}

/* Device images cannot be split here: PXL_EARG naming the first one. */
static int refuse_device(const Decl *D, const ImgArg *imgs, const struct pxl_image *out, int C, Err *err) {
  for (int i = 0; i < D->nimages; i++)
    if (imgs[i].img->device)
      return err_set(err, PXL_EARG,
                     "%s: the image for parameter '%s' is a %d-channel image in device memory; a one-channel entry "
                     "runs per channel on host images only (copy it with pxl_image_to_host, or declare the "
                     "parameter %sx%d)",
                     D->name, image_name(D, i), C, pxl_type_name(imgs[i].img->type), C);
  if (out && out->device)
    return err_set(err, PXL_EARG,
                   "%s: the output image is in device memory; a one-channel entry runs per channel on host images "
                   "only (bind a host output)",
                   D->name);
  return PXL_OK;
}

/* Checks the caller's output against the first plane's result r (C channels of its
 * type), or allocates one. */
static int channel_output(const Decl *D, const ImgArg *imgs, const struct pxl_image *r, int C,
                          struct pxl_image *given, struct pxl_image **out, Err *err) {
  if (!given) return image_new(r->width, r->height, r->type, C, out, err);
  if (given->width != r->width || given->height != r->height || given->type != r->type || given->channels != C)
    return err_set(err, PXL_EARG,
                   "output image of %s must be %dx%d %s with %d channels (run per channel), got %dx%d %s with %d "
                   "channel%s",
                   D->name, r->width, r->height, pxl_type_name(r->type), C, given->width, given->height,
                   pxl_type_name(given->type), given->channels, given->channels == 1 ? "" : "s");
  for (int i = 0; i < D->nimages; i++)
    if (image_overlap(given, imgs[i].img))
      return err_set(err, PXL_EARG, "the output image of %s overlaps an input image; use a separate buffer", D->name);
  *out = given;
  return PXL_OK;
}

int exec_per_channel(Backend *be, const Decl *D, const ImgArg *imgs, const Lane *scalars, struct pxl_image *out,
                     ExecResult *res, Err *err) {
  int C = imgs[0].img->channels;
  int rc = refuse_device(D, imgs, out, C, err);
  if (rc) return rc;
  struct pxl_image *planes[64] = {0};
  ImgArg pimgs[64];
  for (int i = 0; i < D->nimages && !rc; i++) {
    const struct pxl_image *img = imgs[i].img;
    rc = image_new(img->width, img->height, img->type, 1, &planes[i], err);
    pimgs[i] = imgs[i];
    pimgs[i].img = planes[i];
  }
  struct pxl_image *dst[PXL_MAX_OUTS] = {0}; /* one per image of the result (a pipeline's several) */
  int n = 0;
  for (int c = 0; c < C && !rc; c++) {
    for (int i = 0; i < D->nimages; i++) plane_get(planes[i], imgs[i].img, c);
    ExecResult r;
    rc = exec_entry(be, D, pimgs, scalars, NULL, &r, err);
    if (rc) break;
    int rn = r.nimages > 1 ? r.nimages : 1;
    if (c == 0) n = rn;
    for (int k = 0; k < n && k < rn && !rc; k++) {
      struct pxl_image *plane = k ? r.more[k - 1] : r.image;
      if (c == 0) rc = channel_output(D, imgs, plane, C, k ? NULL : out, &dst[k], err);
      if (!rc) plane_put(dst[k], plane, c);
    }
    exec_result_free(&r);
  }
  for (int i = 0; i < D->nimages; i++) image_free(planes[i]);
  if (rc) {
    for (int k = 0; k < PXL_MAX_OUTS; k++)
      if (dst[k] != out) image_free(dst[k]);
    return rc;
  }
  res->kind = PXL_RESULT_IMAGE;
  res->image = dst[0];
  res->image_owned = dst[0] != out;
  for (int k = 1; k < n; k++) res->more[k - 1] = dst[k];
  res->nimages = n;
  return PXL_OK;
}
