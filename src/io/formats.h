/*
 * formats.h - the per-format codecs behind imageio.h (private to src/io).
 *
 * Each loader decodes a complete file held in memory; each saver writes to an open
 * stream that io.c created as the temporary file and will rename or remove. `name` is
 * the user's file name, used in messages. Loaders leave *out NULL on failure. Savers get
 * an image whose type and channel count io.c has already checked against the format;
 * a write that fails is PXL_EIO with errno's reason (io_write_error), never a codec
 * error, and io.c then removes the temporary file.
 */
#ifndef PXL_IO_FORMATS_H
#define PXL_IO_FORMATS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "image/image.h"
#include "util/err.h"

int io_png_load(const uint8_t *buf, size_t n, const char *name, struct pxl_image **out,
                Err *err);                        /* any PNG; palette expands to RGB(A) */
int io_png_save(FILE *f, const struct pxl_image *img, const char *name, Err *err); /* u8/u16 */
int io_jpeg_load(const uint8_t *buf, size_t n, const char *name, struct pxl_image **out,
                 Err *err);                       /* gray or YCbCr/RGB baseline/progressive */
int io_jpeg_save(FILE *f, const struct pxl_image *img, const char *name, Err *err); /* q 95 */
int io_pnm_load(const uint8_t *buf, size_t n, const char *name, struct pxl_image **out,
                Err *err);                        /* P2 P3 P5 P6 */
int io_pnm_save(FILE *f, const struct pxl_image *img, const char *name, Err *err); /* P5/P6 */
int io_tiff_load(const uint8_t *buf, size_t n, const char *name, struct pxl_image **out,
                 Err *err);                       /* first page; strips, tiles, planes */
int io_tiff_save(FILE *f, const struct pxl_image *img, const char *name, Err *err); /* Deflate */
int io_npy_load(const uint8_t *buf, size_t n, const char *name, struct pxl_image **out,
                Err *err);                        /* versions 1.0-3.0, (H, W[, C]) */
int io_npy_save(FILE *f, const struct pxl_image *img, const char *name, Err *err); /* 1.0 */
/* A vector: shape (N,), (N, 1) or (1, N) of any element type above, converted to type
 * (PXL_F32 or PXL_F64) into *out (PXL_FREE), N in *len; saved as (N,), or with cols > 0
 * as a C-order array (len / cols, cols). */
int io_npy_load_vector(const uint8_t *buf, size_t n, const char *name, pxl_type type, void **out, int64_t *len,
                       Err *err);
int io_npy_save_vector(FILE *f, const void *v, int64_t len, int64_t cols, pxl_type type, const char *name,
                       Err *err);

/* Records code and "name: <formatted message>" in err; returns code. */
int io_err(Err *err, int code, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* PXL_EIO "name: write failed: <strerror(e)>" (EIO when e is 0); returns PXL_EIO. */
int io_write_error(Err *err, const char *name, int e);
/* image_check_dims with the file name in front of the message. */
int io_check_dims(const char *name, int width, int height, pxl_type type, int channels,
                  Err *err);
/* image_new with the file name in front of the message. */
int io_image_new(const char *name, int width, int height, pxl_type type, int channels,
                 struct pxl_image **out, Err *err);

#endif
