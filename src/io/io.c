/*
 * io.c - image files in and out: format detection, whole-file reading and atomic saving
 * (see imageio.h); the codecs themselves live in png.c, jpeg.c, pnm.c, tiff.c and npy.c.
 *
 * Loading reads the file into memory (file_read_all, at most IO_FILE_LIMIT bytes, so
 * /dev/zero or an endless pipe stops there) and sniffs its magic bytes, so a PNG named
 * "photo.jpg" still loads and the fuzz target can drive the same code without files.
 * Saving checks the image against the format first, then encodes into an AtomicFile
 * (util/file.h): a temporary file beside path, registered for file_remove_partial,
 * renamed over path on success and removed on any failure, so path is either the new
 * image or left as it was. New files get 0666 less the umask; a replaced file keeps its
 * permissions.
 */
#define _POSIX_C_SOURCE 200809L /* strcasecmp under -std=c11 */

#include "io/imageio.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "io/formats.h"
#include "util/alloc.h"
#include "util/file.h"

/* Formats: name, the element types and channel counts it stores (bit sets: 1 << pxl_type,
 * 1 << channels, with the same sets spelt out for messages), and its codecs. */
#define T(t) (1u << (t))
#define ALL_TYPES \
  (T(PXL_U8) | T(PXL_I16) | T(PXL_U16) | T(PXL_I32) | T(PXL_U32) | T(PXL_F32) | T(PXL_F64))
#define IO_FORMATS(X)                                                                     \
  X(FMT_PNG, "PNG", T(PXL_U8) | T(PXL_U16), "u8 or u16", T(1) | T(3) | T(4), "1, 3 or 4", \
    io_png_load, io_png_save)                                                             \
  X(FMT_JPEG, "JPEG", T(PXL_U8), "u8", T(1) | T(3), "1 or 3", io_jpeg_load, io_jpeg_save) \
  X(FMT_PNM, "PGM/PPM", T(PXL_U8) | T(PXL_U16), "u8 or u16", T(1) | T(3), "1 or 3",       \
    io_pnm_load, io_pnm_save)                                                             \
  X(FMT_TIFF, "TIFF", ALL_TYPES, "every", T(1) | T(3) | T(4), "1, 3 or 4", io_tiff_load,  \
    io_tiff_save)                                                                         \
  X(FMT_NPY, ".npy", ALL_TYPES, "every", T(1) | T(3) | T(4), "1, 3 or 4", io_npy_load,    \
    io_npy_save)

typedef enum {
#define X(tag, name, types, tnames, chans, cnames, load, save) tag,
  IO_FORMATS(X)
#undef X
} Format;

static const struct {
  const char *name;
  unsigned types;      /* bit set of storable pxl_types */
  const char *tnames;  /* the same, for messages */
  unsigned chans;      /* bit set of storable channel counts */
  const char *cnames;  /* the same, for messages */
  int (*load)(const uint8_t *, size_t, const char *, struct pxl_image **, Err *);
  int (*save)(FILE *, const struct pxl_image *, const char *, Err *);
} formats[] = {
#define X(tag, name, types, tnames, chans, cnames, load, save) \
  [tag] = {name, types, tnames, chans, cnames, load, save},
    IO_FORMATS(X)
#undef X
};

/* Extensions io_save understands; `chans` narrows the format's channel counts. */
static const struct {
  const char *ext;
  Format fmt;
  int chans; /* required channel count, 0 = any the format stores */
} extensions[] = {
    {".png", FMT_PNG, 0},  {".jpg", FMT_JPEG, 0}, {".jpeg", FMT_JPEG, 0},
    {".pgm", FMT_PNM, 1},  {".ppm", FMT_PNM, 3},  {".pnm", FMT_PNM, 0},
    {".tif", FMT_TIFF, 0}, {".tiff", FMT_TIFF, 0}, {".npy", FMT_NPY, 0},
};

#define NEXTENSIONS (sizeof extensions / sizeof extensions[0])
#define EXTENSION_LIST ".png, .jpg, .jpeg, .pgm, .ppm, .pnm, .tif, .tiff or .npy"

int io_err(Err *err, int code, const char *name, const char *fmt, ...) {
  if (!err) return code;
  int len = snprintf(err->msg, sizeof err->msg, "%s: ", name);
  if (len < 0) len = 0;
  if ((size_t)len < sizeof err->msg) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg + len, sizeof err->msg - (size_t)len, fmt, ap);
    va_end(ap);
  }
  err->code = code;
  return code;
}

int io_write_error(Err *err, const char *name, int e) {
  return io_err(err, PXL_EIO, name, "write failed: %s", strerror(e ? e : EIO));
}

/* Puts "name: " in front of the message an image-layer call left in err. */
static int prefix_name(Err *err, int code, const char *name) {
  if (!err) return code;
  char msg[sizeof err->msg];
  memcpy(msg, err->msg, sizeof msg);
  msg[sizeof msg - 1] = '\0';
  return io_err(err, code, name, "%s", msg);
}

int io_check_dims(const char *name, int width, int height, pxl_type type, int channels,
                  Err *err) {
  int rc = image_check_dims(width, height, type, channels, err);
  if (rc == PXL_EARG) return io_err(err, PXL_EFORMAT, name, "invalid image size %dx%d", width, height);
  return rc == PXL_OK ? rc : prefix_name(err, rc, name);
}

int io_image_new(const char *name, int width, int height, pxl_type type, int channels,
                 struct pxl_image **out, Err *err) {
  int rc = io_check_dims(name, width, height, type, channels, err);
  if (rc != PXL_OK) return rc;
  rc = image_new(width, height, type, channels, out, err);
  return rc == PXL_OK ? rc : prefix_name(err, rc, name);
}

/* The format whose signature starts buf, or -1. */
static int sniff(const uint8_t *b, size_t n) {
  static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (n >= 8 && memcmp(b, png_sig, 8) == 0) return FMT_PNG;
  if (n >= 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff) return FMT_JPEG;
  if (n >= 2 && b[0] == 'P' && memchr("2356", b[1], 4) &&
      (n == 2 || memchr(" \t\r\n#", b[2], 5)))
    return FMT_PNM;
  if (n >= 4 && (memcmp(b, "II*\0", 4) == 0 || memcmp(b, "MM\0*", 4) == 0 ||
                 memcmp(b, "II+\0", 4) == 0 || memcmp(b, "MM\0+", 4) == 0))
    return FMT_TIFF; /* classic or BigTIFF, either byte order */
  if (n >= 6 && memcmp(b, "\x93NUMPY", 6) == 0) return FMT_NPY;
  return -1;
}

int io_load_memory(const void *buf, size_t n, const char *name, struct pxl_image **out,
                   Err *err) {
  *out = NULL;
  if (n == 0) return io_err(err, PXL_EFORMAT, name, "empty file, not an image");
  int fmt = sniff(buf, n);
  if (fmt < 0)
    return io_err(err, PXL_EFORMAT, name, "unsupported image format (not PNG, JPEG, PGM/PPM, TIFF or .npy)");
  return formats[fmt].load(buf, n, name, out, err);
}

int io_load(const char *path, struct pxl_image **out, Err *err) {
  *out = NULL;
  char *buf = NULL;
  size_t n = 0;
  int rc = file_read_all(path, IO_FILE_LIMIT, &buf, &n, err);
  if (rc != PXL_OK) return rc;
  rc = io_load_memory(buf, n, path, out, err);
  PXL_FREE(buf);
  return rc;
}

/* The extensions[] entry for path's extension, or -1. */
static int find_extension(const char *path) {
  const char *slash = strrchr(path, '/');
  const char *dot = strrchr(slash ? slash + 1 : path, '.');
  if (!dot) return -1;
  for (size_t i = 0; i < NEXTENSIONS; i++)
    if (strcasecmp(dot, extensions[i].ext) == 0) return (int)i;
  return -1;
}

/* Checks that the format chosen by extension entry `e` can store type x channels. */
static int check_storable(const char *path, int e, pxl_type type, int channels, Err *err) {
  Format fmt = extensions[e].fmt;
  if ((int)type < 0 || (int)type >= 32 || !(formats[fmt].types & (1u << type)))
    return io_err(err, PXL_EARG, path, "%s stores %s images, not %s", formats[fmt].name,
                  formats[fmt].tnames, pxl_type_name(type));
  if (extensions[e].chans && channels != extensions[e].chans)
    return io_err(err, PXL_EARG, path, "%s files store %d channel%s, the image has %d",
                  extensions[e].ext, extensions[e].chans, extensions[e].chans == 1 ? "" : "s",
                  channels);
  if (channels < 0 || channels >= 32 || !(formats[fmt].chans & (1u << channels)))
    return io_err(err, PXL_EARG, path, "%s stores %s channels, the image has %d",
                  formats[fmt].name, formats[fmt].cnames, channels);
  return PXL_OK;
}

const char *io_save_format(const char *path) {
  int e = find_extension(path);
  return e < 0 ? NULL : formats[extensions[e].fmt].name;
}

int io_check_save(const char *path, pxl_type type, int channels, Err *err) {
  int e = find_extension(path);
  if (e < 0)
    return io_err(err, PXL_EARG, path, "unknown image file extension (use " EXTENSION_LIST ")");
  return check_storable(path, e, type, channels, err);
}

int io_save(const char *path, const struct pxl_image *img, Err *err) {
  if (!img || !img->data || img->width < 1 || img->height < 1)
    return io_err(err, PXL_EARG, path, "no image to save");
  int rc = io_check_save(path, img->type, img->channels, err);
  if (rc != PXL_OK) return rc;
  int e = find_extension(path);

  AtomicFile af;
  rc = file_atomic_open(&af, path, FILE_SHARED, err);
  if (rc != PXL_OK) return rc;
  rc = formats[extensions[e].fmt].save(af.f, img, path, err);
  if (rc != PXL_OK) {
    file_atomic_abort(&af);
    return rc;
  }
  return file_atomic_commit(&af, err);
}
