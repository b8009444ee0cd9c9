/*
 * image.h - the in-memory image every layer shares (struct pxl_image of the public API).
 *
 * A pitched 2-D array of pixels: `height` rows of `width` pixels, each pixel `channels`
 * elements of `type`, rows `pitch` bytes apart. Owned images pad rows to 64 bytes so
 * vector loads stay aligned; wrapped images and views use the caller's pitch.
 */
#ifndef PXL_IMAGE_H
#define PXL_IMAGE_H

#include <stdbool.h>
#include <stddef.h>

#include "pxl/pxl.h"
#include "util/err.h"

#define PXL_MAX_DIM 65535                      /* largest width or height accepted */
#define PXL_MAX_BYTES ((size_t)1 << 32)        /* largest image buffer accepted (4 GiB) */

struct pxl_image {
  int width, height;
  int channels;   /* 1, 3 or 4 */
  pxl_type type;  /* element type */
  size_t pitch;   /* bytes between the starts of two rows */
  void *data;     /* first element of row 0 */
  void *alloc;    /* owned allocation, or NULL for wrapped memory and views */
  /* Device images (memory of a GPU backend): the backend that owns the memory, and how
   * to free it. NULL for host images. For CUDA, data is then a device address; for
   * OpenCL, `buffer` is the cl_mem and data the byte offset of pixel (0, 0) in it (views
   * keep the buffer and add to the offset). */
  void *device;
  void *buffer;
  void (*release)(struct pxl_image *img);
  bool pinned; /* host memory a GPU backend made page-locked (Backend.host_new) */
};

int pxl_type_size(pxl_type t); /* bytes of one element */

/* Checks dimensions (1..PXL_MAX_DIM, channels 1/3/4, size under PXL_MAX_BYTES). */
int image_check_dims(int width, int height, pxl_type type, int channels, Err *err);
/* Allocates a zero-filled owned image; PXL_ENOMEM / PXL_ETOOBIG / PXL_EARG with err set. */
int image_new(int width, int height, pxl_type type, int channels, struct pxl_image **out,
              Err *err);
/* Frees an image and, if owned, its pixels. NULL is a no-op. */
void image_free(struct pxl_image *img);
/* Address of row y. */
static inline void *image_row(const struct pxl_image *img, int y) {
  return (char *)img->data + (size_t)y * img->pitch;
}
/* Bytes of pixels in one row (without the pitch's padding). */
static inline size_t image_row_bytes(const struct pxl_image *img) {
  return (size_t)img->width * (size_t)img->channels * (size_t)pxl_type_size(img->type);
}
/* Whether a and b have the same size, pixel type and channels. */
static inline bool image_same_layout(const struct pxl_image *a, const struct pxl_image *b) {
  return a->width == b->width && a->height == b->height && a->type == b->type && a->channels == b->channels;
}
/* The pixels of host image src into host image dst of the same layout, row by row (the
 * rows may overlap: a view copied into its own image). */
void image_copy_host(struct pxl_image *dst, const struct pxl_image *src);
/* Whether a and b share bytes: the same memory (host, or one device's buffer) and
 * intersecting spans. `data` may be an address or (OpenCL) an offset in the buffer: it is
 * compared as an integer. */
bool image_overlap(const struct pxl_image *a, const struct pxl_image *b);

#endif
