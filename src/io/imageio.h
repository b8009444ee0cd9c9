/*
 * imageio.h - reading and writing image files (PNG, JPEG, PGM/PPM, TIFF, NumPy .npy) for
 * the API layer, the CLI and the tools.
 *
 * Loading picks the format from the file's first bytes, never its name, and produces an
 * owned image with 1 (gray), 3 (RGB) or 4 (RGBA) channels: u8 (u16 for 16-bit PNG and
 * PNM with maxval > 255) from PNG, JPEG and PGM/PPM, any pxl_type from TIFF and .npy. Saving picks the format from the extension and is atomic
 * (util/file.h's AtomicFile): the file is written next to `path` under a temporary name
 * and renamed over it, so a failure never leaves a partial file and never touches an
 * existing one. Every error message starts with the file name ("in.png: truncated PNG
 * data").
 */
#ifndef PXL_IMAGEIO_H
#define PXL_IMAGEIO_H

#include <stddef.h>

#include "image/image.h"
#include "util/err.h"

/* Largest image file io_load reads (1 GiB): past it the load fails with PXL_ETOOBIG
 * before anything is decoded, so /dev/zero or an endless pipe cannot exhaust memory. It
 * admits any compressed image within the size limits of image.h; binary PGM/PPM files
 * hold their samples raw, so the largest that loads is about 1 GiB of samples (a
 * 32767x32767 gray or 18918x18918 RGB u8 image). */
#define IO_FILE_LIMIT ((size_t)1 << 30)

/* Loads the image file at path into *out (free with image_free). PXL_EIO when the file
 * cannot be read (a directory included), PXL_EFORMAT for unknown, corrupt or truncated
 * data, PXL_ETOOBIG for a file over IO_FILE_LIMIT or dimensions over the limits (before
 * any pixel allocation), PXL_ENOMEM. */
int io_load(const char *path, struct pxl_image **out, Err *err);

/* Decodes an image file held in memory (n bytes at buf); `name` stands for the file in
 * messages. Same results as io_load except PXL_EIO. buf is not retained. */
int io_load_memory(const void *buf, size_t n, const char *name, struct pxl_image **out,
                   Err *err);

/* Saves img to path, in the format its extension names (.png .jpg .jpeg .pgm .ppm .pnm
 * .tif .tiff .npy, any case).
 * PXL_EARG for an unknown extension or a type/channel count the format cannot store,
 * PXL_EIO naming path and the reason ("No space left on device") when the file cannot
 * be written; on failure an existing file is untouched and no temporary file is left.
 * The file is created with 0666 less the umask, or keeps the mode of the file it
 * replaces; its temporary name is registered for file_remove_partial (util/file.h). */
int io_save(const char *path, const struct pxl_image *img, Err *err);

/* PXL_OK when io_save can write an image of this type and channel count to path, else
 * io_save's PXL_EARG and message; looks at the name only, touches no file. */
int io_check_save(const char *path, pxl_type type, int channels, Err *err);
/* The name of the format io_save writes for path's extension ("PNG", "TIFF"), or NULL. */
const char *io_save_format(const char *path);

#endif
