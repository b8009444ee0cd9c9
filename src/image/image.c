/*
 * image.c - the in-memory image every layer shares: element types, the size limits that
 * protect the loaders and the runtime from absurd dimensions, owned image allocation and
 * the public accessors of pxl.h.
 *
 * Owned images pad each row to a multiple of 64 bytes and align the first row to 64
 * bytes, so generated code may use aligned vector loads on any row. The limits are
 * checked in 64-bit arithmetic before anything is allocated, so a file header claiming
 * 100000x100000 pixels costs nothing.
 */
#include "image/image.h"

#include <stdint.h>
#include <string.h>

#include "image/types.h"
#include "util/alloc.h"

#define ROW_ALIGN 64 /* row pitch and base alignment of owned images, in bytes */

/* Every pxl_type has a row in the table of element types. */
enum {
#define X(e, name, size, pixel) +((pixel) != PXL_NOT_PIXEL)
  NPIXEL_ROWS = 0 PXL_ELEM_TYPES(X),
#undef X
};
_Static_assert(NPIXEL_ROWS == PXL_F64 + 1, "a pxl_type without a row in PXL_ELEM_TYPES");

int pxl_type_size(pxl_type t) {
#define X(e, name, size, pixel) \
  if ((pixel) != PXL_NOT_PIXEL && (int)t == (pixel)) return size;
  PXL_ELEM_TYPES(X)
#undef X
  return 0;
}

/* "u8", "f32", ...; "?" for a value outside pxl_type. */
const char *pxl_type_name(pxl_type t) {
#define X(e, name, size, pixel) \
  if ((pixel) != PXL_NOT_PIXEL && (int)t == (pixel)) return name;
  PXL_ELEM_TYPES(X)
#undef X
  return "?";
}

/* Row pitch of an owned image: the packed row rounded up to ROW_ALIGN. The caller has
 * checked width, channels and type, so this cannot overflow 64 bits. */
static uint64_t owned_pitch(int width, pxl_type type, int channels) {
  uint64_t row = (uint64_t)width * (uint64_t)channels * (uint64_t)pxl_type_size(type);
  return (row + ROW_ALIGN - 1) / ROW_ALIGN * ROW_ALIGN;
}

int image_check_dims(int width, int height, pxl_type type, int channels, Err *err) {
  if (pxl_type_size(type) == 0) return err_set(err, PXL_EARG, "invalid pixel type %d", (int)type);
  if (channels != 1 && channels != 3 && channels != 4)
    return err_set(err, PXL_EARG, "invalid channel count %d (must be 1, 3 or 4)", channels);
  if (width < 1 || height < 1)
    return err_set(err, PXL_EARG, "invalid image size %dx%d", width, height);
  uint64_t bytes = 0;
  if (width <= PXL_MAX_DIM && height <= PXL_MAX_DIM)
    bytes = owned_pitch(width, type, channels) * (uint64_t)height;
  if (width > PXL_MAX_DIM || height > PXL_MAX_DIM || bytes > (uint64_t)PXL_MAX_BYTES ||
      bytes > (uint64_t)SIZE_MAX - ROW_ALIGN)
    return err_set(err, PXL_ETOOBIG,
                   "image %dx%d is too large (limit %dx%d pixels and %llu MiB)", width,
                   height, PXL_MAX_DIM, PXL_MAX_DIM,
                   (unsigned long long)((uint64_t)PXL_MAX_BYTES >> 20));
  return PXL_OK;
}

int image_new(int width, int height, pxl_type type, int channels, struct pxl_image **out,
              Err *err) {
  *out = NULL;
  int rc = image_check_dims(width, height, type, channels, err);
  if (rc != PXL_OK) return rc;
  size_t pitch = (size_t)owned_pitch(width, type, channels);
  size_t bytes = pitch * (size_t)height;
  struct pxl_image *img = PXL_CALLOC(1, sizeof *img);
  void *alloc = img ? PXL_CALLOC(1, bytes + ROW_ALIGN - 1) : NULL;
  if (!alloc) {
    PXL_FREE(img);
    return err_set(err, PXL_ENOMEM, "out of memory for a %dx%d %s image (%zu bytes)", width,
                   height, pxl_type_name(type), bytes);
  }
  uintptr_t base = ((uintptr_t)alloc + ROW_ALIGN - 1) & ~(uintptr_t)(ROW_ALIGN - 1);
  img->width = width;
  img->height = height;
  img->channels = channels;
  img->type = type;
  img->pitch = pitch;
  img->data = (void *)base;
  img->alloc = alloc;
  *out = img;
  return PXL_OK;
}

void image_free(struct pxl_image *img) {
  if (!img) return;
  if (img->release) img->release(img);
  else PXL_FREE(img->alloc);
  PXL_FREE(img);
}

/* Frees an image and, if owned, its pixels; NULL is a no-op. */
void pxl_image_free(pxl_image *img) { image_free(img); }

/* Width in pixels (0 for NULL). */
int pxl_image_width(const pxl_image *img) { return img ? img->width : 0; }

/* Height in pixels (0 for NULL). */
int pxl_image_height(const pxl_image *img) { return img ? img->height : 0; }

/* Elements per pixel: 1, 3 or 4 (0 for NULL). */
int pxl_image_channels(const pxl_image *img) { return img ? img->channels : 0; }

/* Element type (PXL_U8 for NULL). */
pxl_type pxl_image_type(const pxl_image *img) { return img ? img->type : PXL_U8; }

/* Bytes between the starts of two rows (0 for NULL). */
size_t pxl_image_pitch(const pxl_image *img) { return img ? img->pitch : 0; }

/* First element of row 0 (NULL for NULL). */
void *pxl_image_data(pxl_image *img) { return img ? img->data : NULL; }

void image_copy_host(struct pxl_image *dst, const struct pxl_image *src) {
  for (int y = 0; y < src->height; y++) memmove(image_row(dst, y), image_row(src, y), image_row_bytes(src));
}

bool image_overlap(const struct pxl_image *a, const struct pxl_image *b) {
  if (a->device != b->device || a->buffer != b->buffer) return false; /* different memories */
  uintptr_t a0 = (uintptr_t)a->data, b0 = (uintptr_t)b->data;
  uintptr_t a1 = a0 + (size_t)(a->height - 1) * a->pitch + image_row_bytes(a);
  uintptr_t b1 = b0 + (size_t)(b->height - 1) * b->pitch + image_row_bytes(b);
  return a0 < b1 && b0 < a1;
}
