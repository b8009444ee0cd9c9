/*
 * imageio.h - reading and writing image files (PNG, JPEG, PGM/PPM) for the API layer,
 * the CLI and the tools.
 *
 * Loading picks the format from the file's first bytes, never its name, and produces an
 * owned u8 image (u16 for 16-bit PNG and PNM with maxval > 255) with 1 (gray), 3 (RGB)
 * or 4 (RGBA) channels. Saving picks the format from the extension and is atomic: the
 * file is written next to `path` under a temporary name and renamed over it, so a
 * failure never leaves a partial file and never touches an existing one. Every error
 * message starts with the file name ("in.png: truncated PNG data").
 */
#ifndef PXL_IMAGEIO_H
#define PXL_IMAGEIO_H

#include <stddef.h>

#include "image/image.h"
#include "util/err.h"

/* Loads the image file at path into *out (free with image_free). PXL_EIO when the file
 * cannot be read, PXL_EFORMAT for unknown, corrupt or truncated data, PXL_ETOOBIG for
 * dimensions over the limits (before any pixel allocation), PXL_ENOMEM. */
int io_load(const char *path, struct pxl_image **out, Err *err);

/* Decodes an image file held in memory (n bytes at buf); `name` stands for the file in
 * messages. Same results as io_load except PXL_EIO. buf is not retained. */
int io_load_memory(const void *buf, size_t n, const char *name, struct pxl_image **out,
                   Err *err);

/* Saves img to path, in the format its extension names (.png .jpg .jpeg .pgm .ppm .pnm).
 * PXL_EARG for an unknown extension or a type/channel count the format cannot store,
 * PXL_EIO when the file cannot be written; on failure an existing file is untouched. */
int io_save(const char *path, const struct pxl_image *img, Err *err);

#endif
