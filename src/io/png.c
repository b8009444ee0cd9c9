/*
 * png.c - PNG decoding and encoding with libspng (see formats.h).
 *
 * Decoding maps every PNG colour type onto the three layouts pxl images have: gray (1),
 * RGB (3) and RGBA (4 channels), u8 or, for 16-bit files, host-order u16. Gray+alpha
 * becomes RGBA with the gray replicated; palette images expand to RGB, or RGBA when they
 * carry a tRNS chunk (tRNS on gray or RGB images is ignored); 1/2/4-bit gray is scaled
 * to 0..255. Gamma and colour chunks are not applied. The header is checked against
 * the image limits before the pixel buffer exists, and rows are decoded progressively
 * straight into the pitched image, so no second full-size buffer is needed.
 *
 * Every chunk's CRC is checked, ancillary chunks' too (libspng's default discards those
 * silently, and tRNS changes the pixels), and after the last row the rest of the file is
 * read through IEND: libspng stops at the last row otherwise, before the CRC of the last
 * IDAT, so a corrupt IDAT CRC or a file cut after the image data went unnoticed.
 * Encoding writes through a callback that keeps errno, so a failed write is PXL_EIO with
 * its reason.
 *
 * libspng allocates through the PXL_* seam, so out-of-memory injection reaches it; a
 * thread-local flag remembers an injected failure, because spng reports some of them
 * (zlib's) as data errors.
 */
#include <errno.h>
#include <spng.h>
#include <string.h>

#include "io/formats.h"
#include "util/alloc.h"

#define CHUNK_LIMIT ((size_t)64 << 20) /* largest ancillary chunk kept (bytes) */
#define CACHE_LIMIT ((size_t)128 << 20) /* all ancillary chunks kept together (bytes) */

static _Thread_local int alloc_failed; /* an allocation for spng failed since reset */

static void *spng_malloc_cb(size_t n) {
  void *p = PXL_MALLOC(n);
  if (!p) alloc_failed = 1;
  return p;
}

static void *spng_realloc_cb(void *p, size_t n) {
  void *q = PXL_REALLOC(p, n);
  if (!q) alloc_failed = 1;
  return q;
}

static void *spng_calloc_cb(size_t n, size_t size) {
  void *p = PXL_CALLOC(n, size);
  if (!p) alloc_failed = 1;
  return p;
}

static void spng_free_cb(void *p) { PXL_FREE(p); }

static struct spng_alloc spng_allocator = {spng_malloc_cb, spng_realloc_cb, spng_calloc_cb,
                                           spng_free_cb};

/* Turns a libspng decoder error into a status and a message naming the file. */
static int decode_error(int e, const char *name, Err *err) {
  if (e == SPNG_EMEM || alloc_failed) return io_err(err, PXL_ENOMEM, name, "out of memory decoding PNG");
  if (e == SPNG_EOF || e == SPNG_IO_EOF) return io_err(err, PXL_EFORMAT, name, "truncated PNG data");
  if (e == SPNG_ECHUNK_CRC)
    return io_err(err, PXL_EFORMAT, name, "corrupt PNG: a chunk's CRC does not match its data");
  if (e == SPNG_ECHUNK_LIMITS)
    return io_err(err, PXL_EFORMAT, name, "invalid PNG: chunk exceeds the size limits");
  return io_err(err, PXL_EFORMAT, name, "invalid PNG: %s", spng_strerror(e));
}

/* Big-endian 32-bit value at p. */
static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Output layout for a PNG: spng format and flags, element type and channels. */
typedef struct {
  int fmt, flags;
  pxl_type type;
  int channels;
} Layout;

static Layout choose_layout(const struct spng_ihdr *h, int has_trns) {
  int wide = h->bit_depth == 16;
  switch (h->color_type) {
  case SPNG_COLOR_TYPE_GRAYSCALE:
    return wide ? (Layout){SPNG_FMT_PNG, 0, PXL_U16, 1} : (Layout){SPNG_FMT_G8, 0, PXL_U8, 1};
  case SPNG_COLOR_TYPE_TRUECOLOR:
    return wide ? (Layout){SPNG_FMT_PNG, 0, PXL_U16, 3} : (Layout){SPNG_FMT_RGB8, 0, PXL_U8, 3};
  case SPNG_COLOR_TYPE_INDEXED:
    return has_trns ? (Layout){SPNG_FMT_RGBA8, SPNG_DECODE_TRNS, PXL_U8, 4}
                    : (Layout){SPNG_FMT_RGB8, 0, PXL_U8, 3};
  default: /* gray+alpha, RGBA */
    return wide ? (Layout){SPNG_FMT_RGBA16, 0, PXL_U16, 4} : (Layout){SPNG_FMT_RGBA8, 0, PXL_U8, 4};
  }
}

int io_png_load(const uint8_t *buf, size_t n, const char *name, struct pxl_image **out,
                Err *err) {
  *out = NULL;
  alloc_failed = 0;
  struct pxl_image *img = NULL;
  spng_ctx *ctx = spng_ctx_new2(&spng_allocator, 0);
  if (!ctx) return io_err(err, PXL_ENOMEM, name, "out of memory decoding PNG");
  int rc = PXL_OK, e;
  spng_set_image_limits(ctx, PXL_MAX_DIM, PXL_MAX_DIM);
  spng_set_chunk_limits(ctx, CHUNK_LIMIT, CACHE_LIMIT);
  spng_set_crc_action(ctx, SPNG_CRC_ERROR, SPNG_CRC_ERROR);
  spng_set_png_buffer(ctx, buf, n);

  struct spng_ihdr ihdr;
  e = spng_get_ihdr(ctx, &ihdr);
  if ((e == SPNG_EUSER_WIDTH || e == SPNG_EUSER_HEIGHT) && n >= 24) {
    /* Over our limits but a valid header: report the dimensions it claims. */
    uint32_t w = be32(buf + 16), h = be32(buf + 20);
    rc = io_check_dims(name, w > INT32_MAX ? INT32_MAX : (int)w, h > INT32_MAX ? INT32_MAX : (int)h,
                       PXL_U8, 1, err);
    if (rc == PXL_OK) rc = io_err(err, PXL_ETOOBIG, name, "image %ux%u is too large", w, h);
    goto done;
  }
  if (e) goto fail;

  struct spng_trns trns;
  int has_trns = 0;
  if (ihdr.color_type == SPNG_COLOR_TYPE_INDEXED) {
    e = spng_get_trns(ctx, &trns);
    if (e && e != SPNG_ECHUNKAVAIL) goto fail;
    has_trns = e == 0;
  }
  Layout lay = choose_layout(&ihdr, has_trns);
  rc = io_check_dims(name, (int)ihdr.width, (int)ihdr.height, lay.type, lay.channels, err);
  if (rc != PXL_OK) goto done;

  size_t total, row = (size_t)ihdr.width * (size_t)lay.channels * (size_t)pxl_type_size(lay.type);
  e = spng_decoded_image_size(ctx, lay.fmt, &total);
  if (e) goto fail;
  if (total / ihdr.height != row) {
    rc = io_err(err, PXL_EFORMAT, name, "unsupported PNG layout");
    goto done;
  }
  rc = io_image_new(name, (int)ihdr.width, (int)ihdr.height, lay.type, lay.channels, &img, err);
  if (rc != PXL_OK) goto done;

  e = spng_decode_image(ctx, NULL, 0, lay.fmt, lay.flags | SPNG_DECODE_PROGRESSIVE);
  if (e) goto fail;
  do {
    struct spng_row_info info;
    e = spng_get_row_info(ctx, &info);
    if (e) break;
    if (info.row_num >= ihdr.height) {
      e = SPNG_EINTERNAL;
      break;
    }
    e = spng_decode_row(ctx, image_row(img, (int)info.row_num), row);
  } while (!e);
  if (e != SPNG_EOI) goto fail;
  e = spng_decode_chunks(ctx);
  if (e) goto fail;
  *out = img;
  img = NULL;
  goto done;

fail:
  rc = decode_error(e, name, err);
done:
  image_free(img);
  spng_ctx_free(ctx);
  return rc;
}

/* Where encoded bytes go: the stream, and errno of the first write that failed. */
typedef struct {
  FILE *f;
  int err; /* errno of the failed write, 0 while all succeeded */
} Sink;

static int write_cb(spng_ctx *ctx, void *user, void *data, size_t n) {
  (void)ctx;
  Sink *s = user;
  errno = 0;
  if (fwrite(data, 1, n, s->f) == n) return 0;
  s->err = errno ? errno : EIO;
  return SPNG_IO_ERROR;
}

int io_png_save(FILE *f, const struct pxl_image *img, const char *name, Err *err) {
  alloc_failed = 0;
  spng_ctx *ctx = spng_ctx_new2(&spng_allocator, SPNG_CTX_ENCODER);
  if (!ctx) return io_err(err, PXL_ENOMEM, name, "out of memory encoding PNG");
  static const uint8_t color_of[5] = {0, SPNG_COLOR_TYPE_GRAYSCALE, 0, SPNG_COLOR_TYPE_TRUECOLOR,
                                      SPNG_COLOR_TYPE_TRUECOLOR_ALPHA};
  struct spng_ihdr ihdr = {
      .width = (uint32_t)img->width,
      .height = (uint32_t)img->height,
      .bit_depth = img->type == PXL_U16 ? 16 : 8,
      .color_type = color_of[img->channels],
  };
  size_t row = (size_t)img->width * (size_t)img->channels * (size_t)pxl_type_size(img->type);
  Sink sink = {f, 0};
  int e = spng_set_png_stream(ctx, write_cb, &sink);
  if (!e) e = spng_set_ihdr(ctx, &ihdr);
  if (!e) e = spng_encode_image(ctx, NULL, 0, SPNG_FMT_PNG,
                                SPNG_ENCODE_PROGRESSIVE | SPNG_ENCODE_FINALIZE);
  for (int y = 0; !e && y < img->height; y++) e = spng_encode_row(ctx, image_row(img, y), row);
  spng_ctx_free(ctx);
  if (e == SPNG_EOI || e == 0) return PXL_OK;
  if (sink.err) return io_write_error(err, name, sink.err);
  if (e == SPNG_EMEM || alloc_failed) return io_err(err, PXL_ENOMEM, name, "out of memory encoding PNG");
  return io_err(err, PXL_ERROR, name, "PNG encoding failed: %s", spng_strerror(e));
}
