/*
 * tiff.c - TIFF reading and writing with libtiff (see formats.h).
 *
 * TIFF is the format that stores every pxl element type: a sample is 8, 16, 32 or 64 bits
 * of unsigned integer, signed integer or IEEE float (SampleFormat 1, 2, 3), and each
 * (format, bits) pair that is a pxl_type loads as that type, with 1, 3 or 4 samples per
 * pixel (gray or RGB photometric, extra samples taken as plain channels). Strips and
 * tiles, contiguous and separate planes, and every compression this libtiff decodes
 * (none, LZW, Deflate, PackBits, ...) load; everything else is refused by name before any
 * pixel allocation: 1/2/4/12-bit and 8-bit signed samples, 16-bit floats, palette,
 * min-is-white, YCbCr and CMYK photometrics, 2 or more than 4 samples. Only the first
 * image (IFD) of a multi-page file is read.
 *
 * libtiff never sees the file: loading runs over the bytes io.c already read (a read-only
 * client over a memory buffer, no mapping, so libtiff copies what it needs), and saving
 * writes through client procedures over the AtomicFile's stream, which keep the errno of
 * the first failed write. libtiff's warnings and errors go to per-handle handlers
 * (TIFFOpenOptions), never to its global stderr handlers: warnings are dropped and the
 * first error becomes the message ("in.tif: invalid TIFF: ..."). libtiff allocates
 * through its own allocator (it has no seam), capped per allocation by
 * TIFFOpenOptionsSetMaxSingleMemAlloc; pxl's strip or tile buffer is at most the image's
 * size, or a 1024x1024 tile, so a tiny file cannot claim gigabytes through its tile size.
 *
 * Saving writes one Deflate-compressed (zlib level 6, no predictor) strip image in host
 * byte order, rows per strip chosen for strips of about 256 KiB, RGB photometric for 3
 * and 4 channels (the 4th an unassociated alpha) and min-is-black for 1; classic TIFF
 * unless the pixels pass 3.5 GiB, then BigTIFF (classic offsets end at 4 GiB).
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <tiffio.h>

#include "io/formats.h"
#include "io/imageio.h"
#include "util/alloc.h"

/* Largest single libtiff allocation: its biggest is a strip's compressed bytes, which the
 * file (at most IO_FILE_LIMIT) holds; strip tables of a hostile IFD fail at this cap. */
#define TIFF_ALLOC_LIMIT ((tmsize_t)IO_FILE_LIMIT + ((tmsize_t)1 << 20))
#define TILE_SIDE_LIMIT 1024u                /* tiles may pass the image's sides up to this */
#define STRIP_TARGET ((size_t)256 << 10)     /* bytes per saved strip, roughly */
#define BIGTIFF_FROM ((size_t)7 << 29)       /* pixel bytes from which saves use BigTIFF */

/* The sample encodings pxl types have in TIFF: SampleFormat and BitsPerSample. */
static const struct {
  pxl_type type;
  uint16_t format, bits;
} sample_types[] = {
    {PXL_U8, SAMPLEFORMAT_UINT, 8},       {PXL_U16, SAMPLEFORMAT_UINT, 16},
    {PXL_I16, SAMPLEFORMAT_INT, 16},      {PXL_I32, SAMPLEFORMAT_INT, 32},
    {PXL_U32, SAMPLEFORMAT_UINT, 32},     {PXL_F32, SAMPLEFORMAT_IEEEFP, 32},
    {PXL_F64, SAMPLEFORMAT_IEEEFP, 64},
};
#define NSAMPLE_TYPES (sizeof sample_types / sizeof sample_types[0])

/* One libtiff handle's state: the input (loading) or output (saving) and messages. */
typedef struct {
  const uint8_t *buf; /* loading: the file's bytes */
  size_t n, pos;      /* its size and the read position */
  FILE *f;            /* saving: the stream */
  int werr;           /* saving: errno of the first failed write, 0 while none */
  char msg[512];      /* libtiff's first error message, "" while none */
} Client;

static int on_error(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap) {
  (void)tif;
  (void)module;
  Client *c = user;
  if (!c->msg[0]) vsnprintf(c->msg, sizeof c->msg, fmt, ap);
  return 1; /* handled: libtiff's global (stderr) handlers are not called */
}

static int on_warning(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap) {
  (void)tif, (void)user, (void)module, (void)fmt, (void)ap;
  return 1;
}

static tmsize_t mem_read(thandle_t h, void *dst, tmsize_t n) {
  Client *c = h;
  if (n < 0) return -1;
  size_t k = c->pos < c->n ? c->n - c->pos : 0;
  if ((size_t)n < k) k = (size_t)n;
  memcpy(dst, c->buf + c->pos, k);
  c->pos += k;
  return (tmsize_t)k;
}

static tmsize_t no_write(thandle_t h, void *src, tmsize_t n) {
  (void)h, (void)src, (void)n;
  return -1;
}

static toff_t mem_seek(thandle_t h, toff_t off, int whence) {
  Client *c = h;
  uint64_t base = whence == SEEK_CUR ? c->pos : whence == SEEK_END ? c->n : 0;
  if (whence != SEEK_SET && whence != SEEK_CUR && whence != SEEK_END) return (toff_t)-1;
  if (off > UINT64_MAX - base || base + off > SIZE_MAX) return (toff_t)-1;
  c->pos = (size_t)(base + off); /* past the end is allowed; reads there return 0 bytes */
  return c->pos;
}

static toff_t mem_size(thandle_t h) { return ((Client *)h)->n; }

static int no_close(thandle_t h) {
  (void)h;
  return 0;
}

static int no_map(thandle_t h, void **base, toff_t *size) {
  (void)h, (void)base, (void)size;
  return 0;
}

static void no_unmap(thandle_t h, void *base, toff_t size) { (void)h, (void)base, (void)size; }

/* Opens a libtiff handle over c with per-handle message handlers; NULL on failure, the
 * reason in c->msg ("out of memory" when the options could not be made; "" when libtiff
 * gave none, as for a file whose first IFD offset is 0). */
static TIFF *open_client(const char *name, const char *mode, Client *c, TIFFReadWriteProc rd,
                         TIFFReadWriteProc wr, TIFFSeekProc sk, TIFFSizeProc sz) {
  TIFFOpenOptions *opts = TIFFOpenOptionsAlloc();
  if (!opts) {
    snprintf(c->msg, sizeof c->msg, "out of memory");
    return NULL;
  }
  TIFFOpenOptionsSetErrorHandlerExtR(opts, on_error, c);
  TIFFOpenOptionsSetWarningHandlerExtR(opts, on_warning, c);
  TIFFOpenOptionsSetMaxSingleMemAlloc(opts, TIFF_ALLOC_LIMIT);
  TIFF *tif = TIFFClientOpenExt(name, mode, c, rd, wr, sk, no_close, sz, no_map, no_unmap, opts);
  TIFFOpenOptionsFree(opts);
  return tif;
}

/* PXL_EFORMAT "name: invalid TIFF: <libtiff's message or fallback>". */
static int tiff_error(Err *err, const char *name, const Client *c, const char *fallback) {
  const char *m = c->msg[0] ? c->msg : fallback;
  size_t len = strlen(name);
  if (strncmp(m, name, len) == 0 && m[len] == ':' && m[len + 1] == ' ') m += len + 2; /* once */
  return io_err(err, PXL_EFORMAT, name, "invalid TIFF: %s", m);
}

/* The image layout a TIFF directory describes, as checked by read_layout. */
typedef struct {
  uint32_t w, h;
  uint16_t spp, planar;
  pxl_type type;
  size_t esize; /* bytes per sample */
} Layout;

static int unsupported(Err *err, const char *name, const char *what) {
  return io_err(err, PXL_EFORMAT, name, "unsupported TIFF: %s", what);
}

/* Reads and checks the tags of the current directory. */
static int read_layout(TIFF *tif, const char *name, Layout *L, Err *err) {
  uint16_t bits = 1, format = SAMPLEFORMAT_UINT, photo = PHOTOMETRIC_MINISBLACK, comp = 1;
  if (!TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &L->w) || !TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &L->h))
    return io_err(err, PXL_EFORMAT, name, "invalid TIFF: no image width or height");
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &L->spp);
  TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &bits);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &format);
  TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &L->planar);
  TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, &comp);
  int has_photo = TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &photo);

  char what[160];
  if (has_photo && photo != PHOTOMETRIC_MINISBLACK && photo != PHOTOMETRIC_RGB) {
    static const char *const names[] = {"min-is-white", "min-is-black", "RGB", "palette",
                                        "transparency mask", "CMYK", "YCbCr", "", "CIELab"};
    snprintf(what, sizeof what, "%s photometric interpretation (%u); pxl reads gray and RGB",
             photo < sizeof names / sizeof *names && *names[photo] ? names[photo] : "this",
             (unsigned)photo);
    return unsupported(err, name, what);
  }
  if (comp == COMPRESSION_OJPEG || comp == COMPRESSION_JPEG)
    return unsupported(err, name, "JPEG-compressed data");
  if (L->spp != 1 && L->spp != 3 && L->spp != 4) {
    snprintf(what, sizeof what, "%u samples per pixel (pxl images have 1, 3 or 4 channels)",
             (unsigned)L->spp);
    return unsupported(err, name, what);
  }
  if (L->planar != PLANARCONFIG_CONTIG && L->planar != PLANARCONFIG_SEPARATE)
    return io_err(err, PXL_EFORMAT, name, "invalid TIFF: planar configuration %u",
                  (unsigned)L->planar);
  size_t i = 0;
  while (i < NSAMPLE_TYPES && !(sample_types[i].format == format && sample_types[i].bits == bits)) i++;
  if (i == NSAMPLE_TYPES) {
    static const char *const kinds[] = {"", "unsigned", "signed", "floating-point", "void",
                                        "complex integer", "complex floating-point"};
    snprintf(what, sizeof what,
             "%u-bit %s samples (pxl reads 8/16/32-bit unsigned, 16/32-bit signed, "
             "32/64-bit float)",
             (unsigned)bits, format < sizeof kinds / sizeof *kinds && format ? kinds[format] : "unknown-format");
    return unsupported(err, name, what);
  }
  L->type = sample_types[i].type;
  L->esize = bits / 8;
  return io_check_dims(name, L->w > INT_MAX ? INT_MAX : (int)L->w, L->h > INT_MAX ? INT_MAX : (int)L->h,
                       L->type, L->spp, err);
}

/* Copies a decoded chunk (strip or tile) of cw x ch pixels holding `ns` samples per
 * pixel, the first of them channel `c0`, to the image at (x0, y0), clipped to it. */
static void place(struct pxl_image *img, const Layout *L, const uint8_t *chunk, uint32_t cw,
                  uint32_t ch, int ns, int c0, uint32_t x0, uint32_t y0) {
  size_t es = L->esize, px = es * (size_t)img->channels, cpx = es * (size_t)ns;
  uint32_t w = x0 + cw > L->w ? L->w - x0 : cw, h = y0 + ch > L->h ? L->h - y0 : ch;
  for (uint32_t r = 0; r < h; r++) {
    const uint8_t *src = chunk + (size_t)r * cw * cpx;
    uint8_t *dst = (uint8_t *)image_row(img, (int)(y0 + r)) + (size_t)x0 * px + (size_t)c0 * es;
    if (ns == img->channels) {
      memcpy(dst, src, (size_t)w * px);
      continue;
    }
    for (uint32_t x = 0; x < w; x++) memcpy(dst + x * px, src + x * cpx, es);
  }
}

/* Decodes every strip or tile into img. */
static int read_pixels(TIFF *tif, const char *name, const Layout *L, struct pxl_image *img,
                       Client *c, Err *err) {
  int separate = L->planar == PLANARCONFIG_SEPARATE && L->spp > 1;
  int planes = separate ? L->spp : 1, ns = separate ? 1 : L->spp;
  uint32_t cw, ch; /* chunk size in pixels */
  if (TIFFIsTiled(tif)) {
    if (!TIFFGetField(tif, TIFFTAG_TILEWIDTH, &cw) || !TIFFGetField(tif, TIFFTAG_TILELENGTH, &ch) ||
        cw == 0 || ch == 0)
      return tiff_error(err, name, c, "missing or zero tile size");
    /* a tile far larger than the image would make a tiny file allocate gigabytes */
    if (cw > (L->w > TILE_SIDE_LIMIT ? L->w : TILE_SIDE_LIMIT) ||
        ch > (L->h > TILE_SIDE_LIMIT ? L->h : TILE_SIDE_LIMIT))
      return unsupported(err, name, "tiles larger than the image and 1024 pixels");
  } else {
    cw = L->w;
    TIFFGetFieldDefaulted(tif, TIFFTAG_ROWSPERSTRIP, &ch);
    if (ch == 0) return tiff_error(err, name, c, "zero rows per strip");
    if (ch > L->h) ch = L->h;
  }
  uint64_t across = (L->w + (uint64_t)cw - 1) / cw, down = (L->h + (uint64_t)ch - 1) / ch;
  uint64_t chunk_bytes = (uint64_t)cw * ch * (uint64_t)ns * L->esize;
  if (chunk_bytes > (uint64_t)PXL_MAX_BYTES)
    return unsupported(err, name, "strips or tiles over 4 GiB");
  uint64_t nchunks = TIFFIsTiled(tif) ? TIFFNumberOfTiles(tif) : TIFFNumberOfStrips(tif);
  if (across * down * (uint64_t)planes != nchunks)
    return tiff_error(err, name, c, "the number of strips or tiles does not match the image size");
  uint64_t want = TIFFIsTiled(tif) ? (uint64_t)TIFFTileSize64(tif) : (uint64_t)TIFFVStripSize64(tif, ch);
  if (want != chunk_bytes) return tiff_error(err, name, c, "unexpected strip or tile size");

  uint8_t *chunk = PXL_MALLOC((size_t)chunk_bytes);
  if (!chunk) return io_err(err, PXL_ENOMEM, name, "out of memory decoding TIFF");
  int rc = PXL_OK;
  uint32_t index = 0;
  for (int p = 0; p < planes && rc == PXL_OK; p++)
    for (uint64_t ty = 0; ty < down && rc == PXL_OK; ty++)
      for (uint64_t tx = 0; tx < across && rc == PXL_OK; tx++, index++) {
        uint32_t y0 = (uint32_t)(ty * ch), x0 = (uint32_t)(tx * cw);
        /* a strip at the bottom holds only the rows left */
        uint32_t rows = TIFFIsTiled(tif) || y0 + ch <= L->h ? ch : L->h - y0;
        tmsize_t expect = (tmsize_t)((uint64_t)cw * rows * (uint64_t)ns * L->esize);
        tmsize_t got = TIFFIsTiled(tif) ? TIFFReadEncodedTile(tif, index, chunk, (tmsize_t)chunk_bytes)
                                        : TIFFReadEncodedStrip(tif, index, chunk, expect);
        if (got != (TIFFIsTiled(tif) ? (tmsize_t)chunk_bytes : expect)) {
          rc = got < 0 ? tiff_error(err, name, c, "cannot decode the image data")
                       : io_err(err, PXL_EFORMAT, name, "truncated TIFF data");
          break;
        }
        place(img, L, chunk, cw, rows, ns, p, x0, y0);
      }
  PXL_FREE(chunk);
  return rc;
}

int io_tiff_load(const uint8_t *buf, size_t n, const char *name, struct pxl_image **out,
                 Err *err) {
  *out = NULL;
  Client c = {.buf = buf, .n = n};
  /* "m": no mapping, libtiff copies what it reads (it never writes into buf) */
  TIFF *tif = open_client(name, "rm", &c, mem_read, no_write, mem_seek, mem_size);
  if (!tif) {
    if (strstr(c.msg, "out of memory") || strstr(c.msg, "Out of memory"))
      return io_err(err, PXL_ENOMEM, name, "out of memory decoding TIFF");
    return tiff_error(err, name, &c, "no image directory");
  }
  Layout L;
  struct pxl_image *img = NULL;
  int rc = read_layout(tif, name, &L, err);
  if (rc == PXL_OK) rc = io_image_new(name, (int)L.w, (int)L.h, L.type, L.spp, &img, err);
  if (rc == PXL_OK) rc = read_pixels(tif, name, &L, img, &c, err);
  TIFFClose(tif);
  if (rc != PXL_OK) {
    image_free(img);
    return rc;
  }
  *out = img;
  return PXL_OK;
}

/* ---- saving ---- */

static tmsize_t file_write(thandle_t h, void *src, tmsize_t n) {
  Client *c = h;
  if (c->werr || n < 0) return -1;
  errno = 0;
  if (fwrite(src, 1, (size_t)n, c->f) == (size_t)n) return n;
  c->werr = errno ? errno : EIO;
  return -1;
}

static tmsize_t no_read(thandle_t h, void *dst, tmsize_t n) {
  (void)h, (void)dst, (void)n;
  return -1;
}

static toff_t file_seek(thandle_t h, toff_t off, int whence) {
  Client *c = h;
  if (off > (toff_t)INT64_MAX) return (toff_t)-1;
  errno = 0;
  if (fseeko(c->f, (off_t)off, whence) != 0) {
    if (!c->werr) c->werr = errno ? errno : EIO;
    return (toff_t)-1;
  }
  off_t pos = ftello(c->f);
  return pos < 0 ? (toff_t)-1 : (toff_t)pos;
}

static toff_t file_size(thandle_t h) {
  Client *c = h;
  struct stat st;
  if (fflush(c->f) != 0 || fstat(fileno(c->f), &st) != 0) return 0;
  return (toff_t)st.st_size;
}

int io_tiff_save(FILE *f, const struct pxl_image *img, const char *name, Err *err) {
  size_t i = 0;
  while (i < NSAMPLE_TYPES && sample_types[i].type != img->type) i++;
  if (i == NSAMPLE_TYPES) return io_err(err, PXL_EARG, name, "TIFF cannot store this type");
  size_t es = (size_t)pxl_type_size(img->type), row = (size_t)img->width * (size_t)img->channels * es;
  size_t total = row * (size_t)img->height;
  Client c = {.f = f};
  TIFF *tif = open_client(name, total >= BIGTIFF_FROM ? "w8" : "w", &c, no_read, file_write,
                          file_seek, file_size);
  if (!tif) {
    if (c.werr) return io_write_error(err, name, c.werr);
    return io_err(err, strstr(c.msg, "ut of memory") ? PXL_ENOMEM : PXL_ERROR, name,
                  "TIFF encoding failed: %s", c.msg[0] ? c.msg : "libtiff error");
  }
  uint32_t rps = (uint32_t)(STRIP_TARGET / row ? STRIP_TARGET / row : 1);
  if (rps > (uint32_t)img->height) rps = (uint32_t)img->height;
  int ok = TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, (uint32_t)img->width) &&
           TIFFSetField(tif, TIFFTAG_IMAGELENGTH, (uint32_t)img->height) &&
           TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, (uint16_t)img->channels) &&
           TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, sample_types[i].bits) &&
           TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, sample_types[i].format) &&
           TIFFSetField(tif, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG) &&
           TIFFSetField(tif, TIFFTAG_PHOTOMETRIC,
                        img->channels >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK) &&
           TIFFSetField(tif, TIFFTAG_COMPRESSION, COMPRESSION_ADOBE_DEFLATE) &&
           TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, rps);
  if (ok && img->channels == 4) {
    uint16_t extra = EXTRASAMPLE_UNASSALPHA;
    ok = TIFFSetField(tif, TIFFTAG_EXTRASAMPLES, 1, &extra);
  }
  uint8_t *strip = ok ? PXL_MALLOC(row * rps) : NULL;
  int nomem = ok && !strip;
  for (uint32_t y = 0, s = 0; ok && strip && y < (uint32_t)img->height; y += rps, s++) {
    uint32_t rows = y + rps > (uint32_t)img->height ? (uint32_t)img->height - y : rps;
    for (uint32_t r = 0; r < rows; r++) memcpy(strip + r * row, image_row(img, (int)(y + r)), row);
    ok = TIFFWriteEncodedStrip(tif, s, strip, (tmsize_t)(row * rows)) >= 0;
  }
  PXL_FREE(strip);
  ok = ok && !nomem && TIFFWriteDirectory(tif);
  TIFFClose(tif);
  if (c.werr) return io_write_error(err, name, c.werr);
  if (nomem) return io_err(err, PXL_ENOMEM, name, "out of memory encoding TIFF");
  if (!ok)
    return io_err(err, PXL_ERROR, name, "TIFF encoding failed: %s", c.msg[0] ? c.msg : "libtiff error");
  return PXL_OK;
}
