/*
 * image.c - images: host images, views, files, and images in a device's memory with the
 * copies between the two (see handles.h).
 */
#include <stdint.h>
#include <string.h>

#include "api/handles.h"
#include "image/image.h"
#include "io/imageio.h"
#include "util/alloc.h"

int pxl_image_create(pxl_context *ctx, int width, int height, pxl_type type, int channels, pxl_image **out) {
  api_clear(ctx);
  Err e = {0};
  int rc = image_new(width, height, type, channels, out, &e);
  return rc ? api_fail_err(ctx, &e) : PXL_OK;
}

int pxl_image_wrap(pxl_context *ctx, void *data, int width, int height, pxl_type type, int channels,
                   size_t pitch_bytes, pxl_image **out) {
  api_clear(ctx);
  *out = NULL;
  Err e = {0};
  if ((unsigned)type > PXL_F64) return api_fail(ctx, PXL_EARG, "unknown pixel type %d", (int)type);
  if (image_check_dims(width, height, type, channels, &e)) return api_fail_err(ctx, &e);
  if (!data) return api_fail(ctx, PXL_EARG, "wrapped image has no data");
  size_t row = (size_t)width * (size_t)channels * (size_t)pxl_type_size(type);
  if (pitch_bytes < row)
    return api_fail(ctx, PXL_EARG, "row pitch %zu is smaller than a row (%zu bytes)", pitch_bytes, row);
  if (pitch_bytes % (size_t)pxl_type_size(type))
    return api_fail(ctx, PXL_EARG, "row pitch %zu is not a multiple of the element size %d", pitch_bytes,
                pxl_type_size(type));
  pxl_image *img = PXL_CALLOC(1, sizeof *img);
  if (!img) return api_fail(ctx, PXL_ENOMEM, "out of memory");
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
  api_clear(ctx);
  *out = NULL;
  if (!img) return api_fail(ctx, PXL_EARG, "no image");
  if (x < 0 || y < 0 || w < 1 || h < 1 || x > img->width - w || y > img->height - h)
    return api_fail(ctx, PXL_EARG, "region %d,%d %dx%d is not inside the %dx%d image", x, y, w, h, img->width,
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
  api_clear(ctx);
  Err e = {0};
  int rc = io_load(path, out, &e);
  return rc ? api_fail_err(ctx, &e) : PXL_OK;
}

int pxl_image_save(pxl_context *ctx, const pxl_image *img, const char *path) {
  api_clear(ctx);
  if (!img) return api_fail(ctx, PXL_EARG, "no image to save");
  if (img->device)
    return api_fail(ctx, PXL_EARG, "cannot save %s: the image is in device memory (copy it with pxl_image_to_host)", path);
  Err e = {0};
  int rc = io_save(path, img, &e);
  return rc ? api_fail_err(ctx, &e) : PXL_OK;
}

int pxl_image_save_check(pxl_context *ctx, const char *path, pxl_type type, int channels) {
  api_clear(ctx);
  if (!path) return api_fail(ctx, PXL_EARG, "no file name");
  Err e = {0};
  int rc = io_check_save(path, type, channels, &e);
  return rc ? api_fail_err(ctx, &e) : PXL_OK;
}

const char *pxl_image_save_format(const char *path) { return path ? io_save_format(path) : NULL; }

/* ---- device memory ---- */

/* The context's backend, which must have memory of its own. */
static int device_backend(pxl_context *ctx, Backend **be) {
  Err e = {0};
  if (api_backend(ctx, be, &e)) return api_fail_err(ctx, &e);
  if (!(*be)->image_new)
    return api_fail(ctx, PXL_EDEVICE, "device images need a GPU, and runs on this context use the %s backend%s",
                    (*be)->name, ctx->kind < 0 ? " (\"auto\" found no working GPU)" : "");
  return PXL_OK;
}

int pxl_image_create_device(pxl_context *ctx, int width, int height, pxl_type type, int channels, pxl_image **out) {
  api_clear(ctx);
  *out = NULL;
  Backend *be;
  if ((unsigned)type > PXL_F64) return api_fail(ctx, PXL_EARG, "unknown pixel type %d", (int)type);
  int rc = device_backend(ctx, &be);
  if (rc) return rc;
  Err e = {0};
  rc = be->image_new(be, width, height, type, channels, true, out, &e);
  if (!rc && (rc = be->sync(be, &e))) { /* usable from other streams at once */
    image_free(*out);
    *out = NULL;
  }
  return rc ? api_fail_err(ctx, &e) : PXL_OK;
}

int pxl_image_create_pinned(pxl_context *ctx, int width, int height, pxl_type type, int channels, pxl_image **out) {
  api_clear(ctx);
  *out = NULL;
  if ((unsigned)type > PXL_F64) return api_fail(ctx, PXL_EARG, "unknown pixel type %d", (int)type);
  Backend *be;
  Err e = {0};
  int rc = api_backend(ctx, &be, &e);
  if (rc) return api_fail_err(ctx, &e);
  if (!be->host_new) return pxl_image_create(ctx, width, height, type, channels, out);
  rc = be->host_new(be, width, height, type, channels, out, &e);
  return rc ? api_fail_err(ctx, &e) : PXL_OK;
}

int pxl_image_wrap_device(pxl_context *ctx, void *data, int width, int height, pxl_type type, int channels,
                          size_t pitch_bytes, pxl_image **out) {
  Backend *be;
  *out = NULL;
  int rc = device_backend(ctx, &be);
  if (!rc) rc = pxl_image_wrap(ctx, data, width, height, type, channels, pitch_bytes, out);
  if (!rc) (*out)->device = be;
  if (!rc && be->buffer_images) { /* data is the caller's buffer object; the image starts at its byte 0 */
    (*out)->buffer = data;
    (*out)->data = NULL;
  }
  return rc;
}

int pxl_image_copy(pxl_context *ctx, const pxl_image *src, pxl_image *dst) {
  api_clear(ctx);
  if (!src || !dst) return api_fail(ctx, PXL_EARG, "no image to copy");
  if (!image_same_layout(src, dst))
    return api_fail(ctx, PXL_EARG, "cannot copy a %dx%d %s image with %d channel(s) into a %dx%d %s image with %d", src->width,
                src->height, pxl_type_name(src->type), src->channels, dst->width, dst->height,
                pxl_type_name(dst->type), dst->channels);
  if (src->device && dst->device && src->device != dst->device)
    return api_fail(ctx, PXL_EARG, "cannot copy between the memories of two devices");
  Backend *be = src->device ? src->device : dst->device;
  if (!be) {
    image_copy_host(dst, src);
    return PXL_OK;
  }
  Err e = {0};
  return be->copy(be, dst, src, &e) ? api_fail_err(ctx, &e) : PXL_OK;
}

int pxl_image_to_device(pxl_context *ctx, const pxl_image *img, pxl_image **out) {
  api_clear(ctx);
  *out = NULL;
  if (!img) return api_fail(ctx, PXL_EARG, "no image");
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
    return api_fail_err(ctx, &e);
  }
  return PXL_OK;
}

int pxl_image_to_host(pxl_context *ctx, const pxl_image *img, pxl_image **out) {
  api_clear(ctx);
  *out = NULL;
  if (!img) return api_fail(ctx, PXL_EARG, "no image");
  Err e = {0};
  int rc = image_new(img->width, img->height, img->type, img->channels, out, &e);
  if (rc) return api_fail_err(ctx, &e);
  rc = pxl_image_copy(ctx, img, *out);
  if (rc) {
    image_free(*out);
    *out = NULL;
  }
  return rc;
}

int pxl_image_on_device(const pxl_image *img) { return img && img->device ? 1 : 0; }

