/*
 * test_typed_io.c - TIFF and NumPy .npy files: the formats that store every pxl type.
 *
 * Round trips of every type x channel count x size through both formats, bit for bit
 * (NaN payloads, infinities, -0 and subnormals included); TIFF layouts io_save never
 * writes, made with libtiff directly (tiles, separate planes, LZW with a predictor,
 * PackBits, big-endian, strips of 3 rows); .npy headers numpy may write (versions 2.0
 * and 3.0, big-endian, Fortran order, other key orders); and hostile files: every
 * unsupported TIFF layout, truncations, IFD and strip offsets out of the file, huge
 * dimensions, and .npy headers that break the grammar, dtypes pxl does not read, short
 * or long data. Each must fail with PXL_EFORMAT or PXL_ETOOBIG, a message naming the file
 * and nothing on stderr (libtiff's handlers are silenced). The io_check_save matrix is
 * checked against io_save.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <tiffio.h>

#include "image/image.h"
#include "io/imageio.h"
#include "util/alloc.h"

static char tmpdir[256];

static const pxl_type all_types[] = {PXL_U8, PXL_I16, PXL_U16, PXL_I32, PXL_U32, PXL_F32, PXL_F64};
#define NTYPES (sizeof all_types / sizeof all_types[0])

static const char *tpath(const char *name) {
  static char bufs[8][512];
  static int next;
  char *b = bufs[next++ % 8];
  snprintf(b, sizeof bufs[0], "%s/%s", tmpdir, name);
  return b;
}

static void write_bytes(const char *path, const void *buf, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(buf, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
}

static uint8_t *read_bytes(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *buf = malloc((size_t)len + 1);
  assert_non_null(buf);
  assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
  fclose(f);
  *n = (size_t)len;
  return buf;
}

static uint32_t hash(uint32_t v) {
  v ^= v >> 16;
  v *= 0x7feb352du;
  v ^= v >> 15;
  v *= 0x846ca68bu;
  return v ^ (v >> 16);
}

/* An image of hashed bit patterns; float images start with the special values. */
static struct pxl_image *make_image(int w, int h, pxl_type t, int ch) {
  struct pxl_image *img;
  Err err = {0};
  assert_int_equal(image_new(w, h, t, ch, &img, &err), PXL_OK);
  size_t es = (size_t)pxl_type_size(t), row = (size_t)w * (size_t)ch * es;
  for (int y = 0; y < h; y++) {
    uint8_t *r = image_row(img, y);
    for (size_t i = 0; i < row; i++) r[i] = (uint8_t)hash((uint32_t)(y * 7919 + (int)i * 31 + t));
  }
  if (t == PXL_F32) {
    uint32_t special[] = {0x7fc00000u, 0x7fa12345u, 0xffc00001u, 0x7f800000u, 0xff800000u,
                          0x80000000u, 0x00000001u, 0x3f800000u};
    size_t n = (size_t)w * (size_t)ch < 8 ? (size_t)w * (size_t)ch : 8;
    memcpy(image_row(img, 0), special, n * 4);
  } else if (t == PXL_F64) {
    uint64_t special[] = {0x7ff8000000000000u, 0x7ff0000000000123u, 0xfff8000000000001u,
                          0x7ff0000000000000u, 0xfff0000000000000u, 0x8000000000000000u,
                          0x0000000000000001u, 0x3ff0000000000000u};
    size_t n = (size_t)w * (size_t)ch < 8 ? (size_t)w * (size_t)ch : 8;
    memcpy(image_row(img, 0), special, n * 8);
  }
  return img;
}

static void assert_images_equal(const struct pxl_image *a, const struct pxl_image *b) {
  assert_int_equal(a->width, b->width);
  assert_int_equal(a->height, b->height);
  assert_int_equal(a->channels, b->channels);
  assert_int_equal(a->type, b->type);
  size_t row = (size_t)a->width * (size_t)a->channels * (size_t)pxl_type_size(a->type);
  for (int y = 0; y < a->height; y++) assert_memory_equal(image_row(a, y), image_row(b, y), row);
}

static struct pxl_image *load_ok(const char *p) {
  Err err = {0};
  struct pxl_image *back = NULL;
  int rc = io_load(p, &back, &err);
  if (rc != PXL_OK) fail_msg("load %s: %s", p, err.msg);
  return back;
}

/* Loads path expecting `code`, a message naming the file and containing `part` (if not
 * NULL), and nothing written to stderr. */
static void expect_load_error_at(int line, const char *path, int code, const char *part) {
  Err err = {0};
  struct pxl_image *img = (void *)1;
  char errfile[512];
  snprintf(errfile, sizeof errfile, "%s/stderr.txt", tmpdir);
  fflush(stderr);
  int saved = dup(2);
  int fd = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  assert_true(saved >= 0 && fd >= 0);
  dup2(fd, 2);
  int rc = io_load(path, &img, &err);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(fd);
  struct stat st;
  assert_int_equal(stat(errfile, &st), 0);
  if (st.st_size != 0) fail_msg("%s: the decoder wrote %ld bytes to stderr", path, (long)st.st_size);
  if (rc != code) fail_msg("line %d: %s: expected status %d, got %d (%s)", line, path, code, rc, err.msg);
  assert_null(img);
  if (!strstr(err.msg, path)) fail_msg("message does not name the file: %s", err.msg);
  if (part && !strstr(err.msg, part)) fail_msg("%s: expected '%s' in: %s", path, part, err.msg);
}

#define expect_load_error(path, code, part) expect_load_error_at(__LINE__, path, code, part)

/* ---- round trips ---- */

static void test_round_trip(void **state) {
  (void)state;
  static const int sizes[][2] = {{1, 1}, {3, 5}, {257, 129}};
  static const int chans[] = {1, 3, 4};
  static const char *names[] = {"rt.tif", "rt.TIFF", "rt.npy"};
  static const char *magic[] = {"II*", "II*", "\x93NUMPY"};
  for (size_t f = 0; f < 3; f++)
    for (size_t t = 0; t < NTYPES; t++)
      for (size_t c = 0; c < 3; c++)
        for (size_t s = 0; s < 3; s++) {
          struct pxl_image *img = make_image(sizes[s][0], sizes[s][1], all_types[t], chans[c]);
          Err err = {0};
          const char *p = tpath(names[f]);
          int rc = io_save(p, img, &err);
          if (rc != PXL_OK) fail_msg("save %s: %s", p, err.msg);
          size_t n;
          uint8_t *bytes = read_bytes(p, &n);
          assert_memory_equal(bytes, magic[f], strlen(magic[f]));
          if (f == 2) { /* numpy.save's layout: data at a multiple of 64 */
            size_t hlen = (size_t)bytes[8] | (size_t)bytes[9] << 8;
            assert_int_equal((10 + hlen) % 64, 0);
            assert_int_equal(bytes[10 + hlen - 1], '\n');
          }
          free(bytes);
          struct pxl_image *back = load_ok(p);
          assert_images_equal(img, back);
          image_free(img);
          image_free(back);
        }
}

/* ---- TIFF layouts written with libtiff ---- */

typedef struct {
  const char *mode;      /* "w" little-endian, "wb" big-endian */
  int tiled, separate;   /* tiles 16x16; separate planes */
  uint16_t compression;  /* COMPRESSION_* */
  uint16_t predictor;    /* 1 none, 2 horizontal, 3 float */
  uint32_t rows;         /* rows per strip */
} TiffLayout;

static int silent(TIFF *t, void *u, const char *m, const char *f, va_list ap) {
  (void)t, (void)u, (void)m, (void)f, (void)ap;
  return 1;
}

/* Writes img with libtiff in layout L. */
static void write_tiff(const char *path, const struct pxl_image *img, const TiffLayout *L) {
  static const uint16_t fmt[] = {SAMPLEFORMAT_UINT, SAMPLEFORMAT_INT, SAMPLEFORMAT_UINT, SAMPLEFORMAT_INT,
                                 SAMPLEFORMAT_UINT, SAMPLEFORMAT_IEEEFP, SAMPLEFORMAT_IEEEFP};
  TIFFOpenOptions *o = TIFFOpenOptionsAlloc();
  TIFFOpenOptionsSetErrorHandlerExtR(o, silent, NULL);
  TIFFOpenOptionsSetWarningHandlerExtR(o, silent, NULL);
  TIFF *tif = TIFFOpenExt(path, L->mode, o);
  TIFFOpenOptionsFree(o);
  assert_non_null(tif);
  int ch = img->channels, es = pxl_type_size(img->type);
  uint32_t w = (uint32_t)img->width, h = (uint32_t)img->height;
  TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, w);
  TIFFSetField(tif, TIFFTAG_IMAGELENGTH, h);
  TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, (uint16_t)ch);
  TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, (uint16_t)(es * 8));
  TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, fmt[img->type]);
  TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, ch >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK);
  TIFFSetField(tif, TIFFTAG_PLANARCONFIG, L->separate ? PLANARCONFIG_SEPARATE : PLANARCONFIG_CONTIG);
  TIFFSetField(tif, TIFFTAG_COMPRESSION, L->compression);
  if (L->predictor > 1) TIFFSetField(tif, TIFFTAG_PREDICTOR, L->predictor);
  if (ch == 4) {
    uint16_t extra = EXTRASAMPLE_ASSOCALPHA;
    TIFFSetField(tif, TIFFTAG_EXTRASAMPLES, 1, &extra);
  }
  int planes = L->separate ? ch : 1, ns = L->separate ? 1 : ch;
  uint32_t cw = L->tiled ? 16 : w, chh = L->tiled ? 16 : L->rows;
  if (L->tiled) {
    TIFFSetField(tif, TIFFTAG_TILEWIDTH, cw);
    TIFFSetField(tif, TIFFTAG_TILELENGTH, chh);
  } else {
    TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, chh);
  }
  size_t cpx = (size_t)ns * (size_t)es, bytes = (size_t)cw * chh * cpx;
  uint8_t *chunk = malloc(bytes);
  uint32_t index = 0;
  for (int p = 0; p < planes; p++)
    for (uint32_t y0 = 0; y0 < h; y0 += chh)
      for (uint32_t x0 = 0; x0 < w; x0 += cw, index++) {
        memset(chunk, 0, bytes);
        uint32_t rows = y0 + chh > h ? h - y0 : chh;
        for (uint32_t r = 0; r < rows; r++)
          for (uint32_t x = x0; x < x0 + cw && x < w; x++)
            memcpy(chunk + ((size_t)r * cw + (x - x0)) * cpx,
                   (uint8_t *)image_row(img, (int)(y0 + r)) + ((size_t)x * (size_t)ch + (size_t)p) * (size_t)es,
                   cpx);
        tmsize_t k = L->tiled ? TIFFWriteEncodedTile(tif, index, chunk, (tmsize_t)bytes)
                              : TIFFWriteEncodedStrip(tif, index, chunk, (tmsize_t)((size_t)rows * cw * cpx));
        assert_true(k >= 0);
      }
  free(chunk);
  assert_true(TIFFWriteDirectory(tif));
  TIFFClose(tif);
}

static void test_tiff_layouts(void **state) {
  (void)state;
  static const TiffLayout layouts[] = {
      {"w", 0, 0, COMPRESSION_NONE, 1, 3},       {"wb", 0, 0, COMPRESSION_NONE, 1, 4},
      {"w", 1, 0, COMPRESSION_NONE, 1, 0},       {"wb", 1, 1, COMPRESSION_ADOBE_DEFLATE, 1, 0},
      {"w", 0, 1, COMPRESSION_LZW, 1, 5},        {"w", 0, 0, COMPRESSION_LZW, 2, 7},
      {"wb", 0, 0, COMPRESSION_PACKBITS, 1, 8},  {"w8", 1, 0, COMPRESSION_LZW, 1, 0},
  };
  static const int chans[] = {1, 3, 4};
  for (size_t l = 0; l < sizeof layouts / sizeof *layouts; l++)
    for (size_t t = 0; t < NTYPES; t++)
      for (size_t c = 0; c < 3; c++) {
        if (layouts[l].predictor == 2 && (all_types[t] == PXL_F32 || all_types[t] == PXL_F64)) continue;
        struct pxl_image *img = make_image(37, 29, all_types[t], chans[c]);
        const char *p = tpath("layout.tif");
        write_tiff(p, img, &layouts[l]);
        struct pxl_image *back = load_ok(p);
        assert_images_equal(img, back);
        image_free(img);
        image_free(back);
      }
}

/* Writes a 4x3 TIFF whose tags are set by `set` (after plain u8 gray ones). */
static void write_tiff_with(const char *path, void (*set)(TIFF *), int samples, int bits) {
  TIFFOpenOptions *o = TIFFOpenOptionsAlloc();
  TIFFOpenOptionsSetErrorHandlerExtR(o, silent, NULL);
  TIFFOpenOptionsSetWarningHandlerExtR(o, silent, NULL);
  TIFF *tif = TIFFOpenExt(path, "w", o);
  TIFFOpenOptionsFree(o);
  assert_non_null(tif);
  TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, 4u);
  TIFFSetField(tif, TIFFTAG_IMAGELENGTH, 3u);
  TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, (uint16_t)samples);
  TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, (uint16_t)bits);
  TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
  TIFFSetField(tif, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
  TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, 3u);
  set(tif);
  uint8_t data[4 * 3 * 8 * 8] = {0};
  TIFFWriteEncodedStrip(tif, 0, data, (tmsize_t)TIFFVStripSize(tif, 3));
  TIFFWriteDirectory(tif);
  TIFFClose(tif);
}

static void set_nothing(TIFF *t) { (void)t; }
static void set_palette(TIFF *t) {
  static uint16_t map[256];
  TIFFSetField(t, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_PALETTE);
  TIFFSetField(t, TIFFTAG_COLORMAP, map, map, map);
}
static void set_int8(TIFF *t) { TIFFSetField(t, TIFFTAG_SAMPLEFORMAT, SAMPLEFORMAT_INT); }
static void set_half(TIFF *t) { TIFFSetField(t, TIFFTAG_SAMPLEFORMAT, SAMPLEFORMAT_IEEEFP); }
static void set_ycbcr(TIFF *t) { TIFFSetField(t, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_YCBCR); }
static void set_white(TIFF *t) { TIFFSetField(t, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISWHITE); }
static void set_i64(TIFF *t) { TIFFSetField(t, TIFFTAG_SAMPLEFORMAT, SAMPLEFORMAT_INT); }
static void set_gray_alpha(TIFF *t) {
  uint16_t extra = EXTRASAMPLE_UNASSALPHA;
  TIFFSetField(t, TIFFTAG_EXTRASAMPLES, 1, &extra);
}
static void set_five(TIFF *t) {
  uint16_t extra[4] = {0, 0, 0, 0};
  TIFFSetField(t, TIFFTAG_EXTRASAMPLES, 4, extra);
}

static void test_tiff_unsupported(void **state) {
  (void)state;
  struct {
    void (*set)(TIFF *);
    int samples, bits;
    const char *part;
  } cases[] = {
      {set_nothing, 1, 1, "1-bit unsigned samples"},   {set_nothing, 1, 4, "4-bit"},
      {set_nothing, 1, 12, "12-bit"},                  {set_palette, 1, 8, "palette"},
      {set_int8, 1, 8, "8-bit signed samples"},        {set_half, 1, 16, "16-bit floating-point"},
      {set_ycbcr, 3, 8, "YCbCr"},                      {set_white, 1, 8, "min-is-white"},
      {set_gray_alpha, 2, 8, "2 samples per pixel"},   {set_five, 5, 8, "5 samples per pixel"},
      {set_i64, 1, 64, "64-bit signed"},               {set_nothing, 1, 64, "64-bit unsigned"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    const char *p = tpath("unsup.tif");
    write_tiff_with(p, cases[k].set, cases[k].samples, cases[k].bits);
    expect_load_error(p, PXL_EFORMAT, cases[k].part);
  }
  /* the u8 control: the same writer makes a file that loads */
  const char *p = tpath("ok.tif");
  write_tiff_with(p, set_nothing, 1, 8);
  struct pxl_image *img = load_ok(p);
  assert_int_equal(img->width, 4);
  image_free(img);
}

/* ---- hostile TIFFs, crafted byte by byte ---- */

static void put16(uint8_t *p, unsigned v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}
static void put32(uint8_t *p, uint32_t v) {
  put16(p, v & 0xffff);
  put16(p + 2, v >> 16);
}

/* A little-endian classic TIFF, one strip of w*h u8 gray at offset 8, IFD after it; the
 * entries' offsets are returned for patching (width, height, strip offset, byte count). */
static size_t craft_tiff(uint8_t *b, uint32_t w, uint32_t h, size_t *at_w, size_t *at_h,
                         size_t *at_off, size_t *at_count) {
  memcpy(b, "II*\0", 4);
  size_t data = (size_t)w * h, ifd = 8 + data + (data & 1);
  put32(b + 4, (uint32_t)ifd);
  for (size_t i = 0; i < data; i++) b[8 + i] = (uint8_t)i;
  static const uint16_t tags[][3] = {{256, 4, 0}, {257, 4, 0}, {258, 3, 8}, {259, 3, 1}, {262, 3, 1},
                                     {273, 4, 8}, {277, 3, 1}, {278, 4, 0}, {279, 4, 0}};
  size_t n = sizeof tags / sizeof *tags;
  put16(b + ifd, (unsigned)n);
  for (size_t i = 0; i < n; i++) {
    uint8_t *e = b + ifd + 2 + 12 * i;
    put16(e, tags[i][0]);
    put16(e + 2, tags[i][1]);
    put32(e + 4, 1);
    uint32_t v = tags[i][2];
    if (tags[i][0] == 256) v = w, *at_w = (size_t)(e + 8 - b);
    if (tags[i][0] == 257 || tags[i][0] == 278) v = h;
    if (tags[i][0] == 257) *at_h = (size_t)(e + 8 - b);
    if (tags[i][0] == 273) *at_off = (size_t)(e + 8 - b);
    if (tags[i][0] == 279) v = (uint32_t)data, *at_count = (size_t)(e + 8 - b);
    if (tags[i][1] == 3) put16(e + 8, v), put16(e + 10, 0);
    else put32(e + 8, v);
  }
  put32(b + ifd + 2 + 12 * n, 0);
  return ifd + 2 + 12 * n + 4;
}

static void test_tiff_malformed(void **state) {
  (void)state;
  uint8_t b[4096];
  size_t aw = 0, ah = 0, ao = 0, ac = 0;
  size_t n = craft_tiff(b, 6, 5, &aw, &ah, &ao, &ac);
  const char *p = tpath("craft.tif");
  write_bytes(p, b, n);
  struct pxl_image *img = load_ok(p); /* the control loads */
  assert_int_equal(img->width, 6);
  assert_int_equal(((uint8_t *)image_row(img, 4))[5], 29);
  image_free(img);

  /* truncations up to the next-IFD link (libtiff reads a file cut inside it: the image
   * is complete) */
  for (size_t cut = 0; cut < n - 4; cut += cut < 16 ? 1 : 7) {
    write_bytes(p, b, cut);
    Err err = {0};
    struct pxl_image *out = NULL;
    int rc = io_load(p, &out, &err);
    if (rc == PXL_OK) fail_msg("cut at %zu of %zu loaded", cut, n);
    image_free(out);
  }
  write_bytes(p, b, 40); /* cut inside the pixels: header, no IFD */
  expect_load_error(p, PXL_EFORMAT, "invalid TIFF");

  uint8_t c[4096];
  memcpy(c, b, n);
  put32(c + 4, 0xfffffff0u); /* IFD offset past the end */
  write_bytes(p, c, n);
  expect_load_error(p, PXL_EFORMAT, "invalid TIFF");
  put32(c + 4, 3); /* IFD offset inside the header */
  write_bytes(p, c, n);
  expect_load_error(p, PXL_EFORMAT, NULL);

  memcpy(c, b, n);
  put32(c + ao, 0x7ffffff0u); /* strip offset past the end */
  write_bytes(p, c, n);
  expect_load_error(p, PXL_EFORMAT, NULL);
  memcpy(c, b, n);
  put32(c + ao, (uint32_t)n - 10); /* a strip that runs past the end of the file */
  write_bytes(p, c, n);
  expect_load_error(p, PXL_EFORMAT, NULL);
  memcpy(c, b, n);
  put32(c + ac, 3); /* a byte count shorter than an uncompressed strip: libtiff repairs it */
  write_bytes(p, c, n);
  img = load_ok(p);
  assert_int_equal(((uint8_t *)image_row(img, 4))[5], 29);
  image_free(img);

  memcpy(c, b, n);
  put32(c + aw, 100000); /* huge dimensions: refused before any pixel allocation */
  put32(c + ah, 100000);
  write_bytes(p, c, n);
  expect_load_error(p, PXL_ETOOBIG, "too large");
  put32(c + aw, 60000);
  put32(c + ah, 60000);
  write_bytes(p, c, n);
  expect_load_error(p, PXL_EFORMAT, NULL); /* within limits, but the strips do not match */
  put32(c + aw, 0);
  write_bytes(p, c, n);
  expect_load_error(p, PXL_EFORMAT, NULL);

  /* a 4x3 image in one 2048x2048 tile: refused before pxl allocates the tile */
  TIFF *tif = TIFFOpen(p, "w");
  assert_non_null(tif);
  TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, 4u);
  TIFFSetField(tif, TIFFTAG_IMAGELENGTH, 3u);
  TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, 8);
  TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, 1);
  TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
  TIFFSetField(tif, TIFFTAG_COMPRESSION, COMPRESSION_ADOBE_DEFLATE);
  TIFFSetField(tif, TIFFTAG_TILEWIDTH, 2048u);
  TIFFSetField(tif, TIFFTAG_TILELENGTH, 2048u);
  uint8_t *zeros = calloc(2048 * 2048, 1);
  assert_true(TIFFWriteEncodedTile(tif, 0, zeros, 2048 * 2048) >= 0);
  free(zeros);
  TIFFClose(tif);
  expect_load_error(p, PXL_EFORMAT, "tiles larger than the image");

  write_bytes(p, "II*\0", 4);
  expect_load_error(p, PXL_EFORMAT, "invalid TIFF");
  write_bytes(p, "MM\0*\0\0\0\0", 8);
  expect_load_error(p, PXL_EFORMAT, "invalid TIFF");
  write_bytes(p, "II+\0\x08\0\0\0\xff\xff\xff\xff\xff\xff\xff\xff", 16);
  expect_load_error(p, PXL_EFORMAT, "invalid TIFF");
}

/* ---- .npy ---- */

/* Writes a .npy file: version, header text (padded by this function when pad), data. */
static void write_npy(const char *path, int major, const char *dict, int pad, const void *data, size_t n) {
  uint8_t buf[20000];
  size_t pre = major == 1 ? 10 : 12, len = strlen(dict);
  size_t hlen = pad ? ((pre + len + 1 + 63) / 64) * 64 - pre : len;
  memcpy(buf, "\x93NUMPY", 6);
  buf[6] = (uint8_t)major;
  buf[7] = 0;
  put16(buf + 8, (unsigned)hlen);
  if (major != 1) put32(buf + 8, (uint32_t)hlen);
  memcpy(buf + pre, dict, len);
  if (pad) {
    memset(buf + pre + len, ' ', hlen - len);
    buf[pre + hlen - 1] = '\n';
  }
  assert_true(pre + hlen + n <= sizeof buf);
  memcpy(buf + pre + hlen, data, n);
  write_bytes(path, buf, pre + hlen + n);
}

static void test_npy_variants(void **state) {
  (void)state;
  /* 3 rows, 2 columns, 3 channels of i16: element (y, x, c) = 100y + 10x + c */
  int16_t c_order[18], f_order[18];
  uint8_t big[36];
  for (int y = 0; y < 3; y++)
    for (int x = 0; x < 2; x++)
      for (int c = 0; c < 3; c++) {
        int16_t v = (int16_t)(100 * y + 10 * x + c - 150);
        c_order[(y * 2 + x) * 3 + c] = v;
        f_order[y + 3 * (x + 2 * c)] = v;
        big[2 * ((y * 2 + x) * 3 + c)] = (uint8_t)((uint16_t)v >> 8);
        big[2 * ((y * 2 + x) * 3 + c) + 1] = (uint8_t)v;
      }
  const char *p = tpath("v.npy");
  write_npy(p, 1, "{'descr': '<i2', 'fortran_order': False, 'shape': (3, 2, 3), }", 1, c_order, 36);
  struct pxl_image *want = load_ok(p);
  assert_int_equal(want->type, PXL_I16);
  assert_int_equal(want->channels, 3);
  assert_int_equal(((int16_t *)image_row(want, 2))[5], 200 + 10 + 2 - 150);
  struct {
    int major;
    const char *dict;
    const void *data;
  } cases[] = {
      {2, "{'descr': '<i2', 'fortran_order': False, 'shape': (3, 2, 3), }", c_order},
      {3, "{'descr': '<i2', 'fortran_order': False, 'shape': (3, 2, 3), }", c_order},
      {1, "{'descr': '>i2', 'fortran_order': False, 'shape': (3, 2, 3), }", big},
      {1, "{'descr': '<i2', 'fortran_order': True, 'shape': (3, 2, 3), }", f_order},
      {1, "{\"shape\":(3,2,3),\"fortran_order\":False,\"descr\":\"<i2\"}", c_order},
  };
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    write_npy(p, cases[k].major, cases[k].dict, 1, cases[k].data, 36);
    struct pxl_image *got = load_ok(p);
    assert_images_equal(want, got);
    image_free(got);
  }
  image_free(want);
  /* (H, W) is one channel; |u1 and <u1 alike; (H, W, 1) too */
  uint8_t px[6] = {1, 2, 3, 4, 5, 6};
  const char *dicts[] = {"{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3), }",
                         "{'descr': '<u1', 'fortran_order': False, 'shape': (2, 3)}",
                         "{'descr': '>u1', 'fortran_order': False, 'shape': (2, 3, 1), }"};
  for (size_t k = 0; k < 3; k++) {
    write_npy(p, 1, dicts[k], 1, px, 6);
    struct pxl_image *g = load_ok(p);
    assert_int_equal(g->channels, 1);
    assert_int_equal(g->width, 3);
    assert_int_equal(((uint8_t *)image_row(g, 1))[2], 6);
    image_free(g);
  }
}

static void test_npy_malformed(void **state) {
  (void)state;
  uint8_t data[4096] = {0};
  const char *p = tpath("bad.npy");
  struct {
    const char *dict;
    size_t n;
    int code;
    const char *part;
  } cases[] = {
      {"{'descr': '<i8', 'fortran_order': False, 'shape': (2, 3), }", 48, PXL_EFORMAT, "element type '<i8'"},
      {"{'descr': '<f2', 'fortran_order': False, 'shape': (2, 3), }", 12, PXL_EFORMAT, "'<f2'"},
      {"{'descr': '|b1', 'fortran_order': False, 'shape': (2, 3), }", 6, PXL_EFORMAT, "'|b1'"},
      {"{'descr': '|i1', 'fortran_order': False, 'shape': (2, 3), }", 6, PXL_EFORMAT, "'|i1'"},
      {"{'descr': '|u2', 'fortran_order': False, 'shape': (2, 3), }", 12, PXL_EFORMAT, "'|u2'"},
      {"{'descr': '<U4', 'fortran_order': False, 'shape': (2, 3), }", 96, PXL_EFORMAT, "'<U4'"},
      {"{'descr': [('a', '<u1')], 'fortran_order': False, 'shape': (2, 3), }", 6, PXL_EFORMAT, "quoted"},
      {"{'descr': '<u1', 'fortran_order': False, 'shape': (6,), }", 6, PXL_EFORMAT, "1 dimension"},
      {"{'descr': '<u1', 'fortran_order': False, 'shape': (1, 2, 3, 1), }", 6, PXL_EFORMAT, "3 dimensions"},
      {"{'descr': '<u1', 'fortran_order': False, 'shape': (1, 3, 2), }", 6, PXL_EFORMAT, "2 channels"},
      {"{'descr': '<u1', 'fortran_order': False, 'shape': (0, 3), }", 0, PXL_EFORMAT, "invalid image size"},
      {"{'descr': '<u1', 'fortran_order': False, 'shape': (100000, 100000), }", 6, PXL_ETOOBIG, "too large"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (60000, 60000, 4), }", 6, PXL_ETOOBIG, "too large"},
      {"{'descr': '<u1', 'fortran_order': False, 'shape': (99999999999999999999, 3), }", 6, PXL_EFORMAT, "too large"},
      {"{'descr': '<u1', 'fortran_order': False, 'shape': (2, 3), }", 5, PXL_EFORMAT, "truncated .npy data"},
      {"{'descr': '<u1', 'fortran_order': False, 'shape': (2, 3), }", 7, PXL_EFORMAT, "after the array"},
      {"{'descr': '<u1', 'fortran_order': False, 'shape': (2, -3), }", 6, PXL_EFORMAT, "non-negative"},
      {"{'descr': '<u1', 'fortran_order': 0, 'shape': (2, 3), }", 6, PXL_EFORMAT, "True or False"},
      {"{'descr': '<u1', 'shape': (2, 3), }", 6, PXL_EFORMAT, "missing"},
      {"{'descr': '<u1', 'descr': '<u1', 'fortran_order': False, 'shape': (2, 3), }", 6, PXL_EFORMAT, "repeated"},
      {"{'descr': '<u1', 'fortran_order': False, 'shape': (2, 3), 'x': 1}", 6, PXL_EFORMAT, "unknown key"},
      {"{'descr': '<u1', 'fortran_order': False, 'shape': (2, 3), } + 1", 6, PXL_EFORMAT, "after the dict"},
      {"{'descr': '<u1', 'fortran_order': False, 'shape': (2, 3),, }", 6, PXL_EFORMAT, "invalid .npy header"},
      {"{'descr': '<u1' 'fortran_order': False, 'shape': (2, 3)}", 6, PXL_EFORMAT, "invalid .npy header"},
      {"{'descr': '<u1', 'fortran_order': False, 'shape': [2, 3], }", 6, PXL_EFORMAT, "tuple"},
      {"{'descr': '<u1', 'fortran_order': False, 'shape': (2 3), }", 6, PXL_EFORMAT, "shape"},
      {"{'descr': '<u\\x31', 'fortran_order': False, 'shape': (2, 3), }", 6, PXL_EFORMAT, "character"},
      {"{'descr': '<u1, 'fortran_order': False, 'shape': (2, 3), }", 6, PXL_EFORMAT, "element type '<u1, '"},
      {"{'descr': __import__('os'), 'fortran_order': False, 'shape': (2, 3), }", 6, PXL_EFORMAT, "quoted"},
      {"", 6, PXL_EFORMAT, "expected '{'"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    write_npy(p, 1, cases[k].dict, 1, data, cases[k].n);
    expect_load_error(p, cases[k].code, cases[k].part);
  }
  /* framing: unpadded header without '\n', length past the file, over the limit, versions */
  write_npy(p, 1, "{'descr': '<u1', 'fortran_order': False, 'shape': (2, 3), }", 0, data, 6);
  expect_load_error(p, PXL_EFORMAT, "invalid .npy header");
  uint8_t b[64] = "\x93NUMPY\x01\x00\xff\x00{";
  write_bytes(p, b, 11);
  expect_load_error(p, PXL_EFORMAT, "truncated .npy header");
  memcpy(b, "\x93NUMPY\x02\x00\xff\xff\xff\x7f{", 13);
  write_bytes(p, b, 13);
  expect_load_error(p, PXL_EFORMAT, "at most 10000");
  memcpy(b, "\x93NUMPY\x04\x00\x10\x00", 10);
  write_bytes(p, b, 10);
  expect_load_error(p, PXL_EFORMAT, "version 4.0");
  write_bytes(p, "\x93NUMPY\x01", 7);
  expect_load_error(p, PXL_EFORMAT, "not a .npy file");
  write_bytes(p, "\x93NUMPY\x02\x00\x01\x00", 10);
  expect_load_error(p, PXL_EFORMAT, "truncated .npy header");
}

/* ---- what can be saved where ---- */

static void test_save_check(void **state) {
  (void)state;
  Err err = {0};
  static const char *typed[] = {"a.tif", "a.TIF", "a.tiff", "a.npy", "a.NPY"};
  for (size_t k = 0; k < 5; k++)
    for (size_t t = 0; t < NTYPES; t++) {
      assert_int_equal(io_check_save(typed[k], all_types[t], 1, &err), PXL_OK);
      assert_int_equal(io_check_save(typed[k], all_types[t], 3, &err), PXL_OK);
      assert_int_equal(io_check_save(typed[k], all_types[t], 4, &err), PXL_OK);
      assert_int_equal(io_check_save(typed[k], all_types[t], 2, &err), PXL_EARG);
    }
  assert_int_equal(io_check_save("a.png", PXL_F32, 1, &err), PXL_EARG);
  assert_non_null(strstr(err.msg, "a.png: PNG stores u8 or u16 images, not f32"));
  assert_int_equal(io_check_save("a.png", PXL_U16, 4, &err), PXL_OK);
  assert_int_equal(io_check_save("a.jpg", PXL_I16, 1, &err), PXL_EARG);
  assert_int_equal(io_check_save("a.ppm", PXL_U8, 1, &err), PXL_EARG);
  assert_int_equal(io_check_save("a.bmp", PXL_U8, 1, &err), PXL_EARG);
  assert_non_null(strstr(err.msg, ".tif, .tiff or .npy"));
  assert_string_equal(io_save_format("x/y.TIFF"), "TIFF");
  assert_string_equal(io_save_format("y.npy"), ".npy");
  assert_null(io_save_format("y.npz"));
  assert_null(io_save_format("dir.tif/noext"));

  /* io_save agrees with io_check_save, and a refused save leaves no file */
  struct pxl_image *f32 = make_image(4, 4, PXL_F32, 1);
  assert_int_equal(io_save(tpath("refused.png"), f32, &err), PXL_EARG);
  assert_int_equal(access(tpath("refused.png"), F_OK), -1);
  image_free(f32);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

static int setup(void **state) {
  (void)state;
  const char *base = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/pxl_test_typed_io.XXXXXX", base && *base ? base : "/tmp");
  return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  return nftw(tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip),       cmocka_unit_test(test_tiff_layouts),
      cmocka_unit_test(test_tiff_unsupported), cmocka_unit_test(test_tiff_malformed),
      cmocka_unit_test(test_npy_variants),     cmocka_unit_test(test_npy_malformed),
      cmocka_unit_test(test_save_check),
  };
  return cmocka_run_group_tests_name("typed_io", tests, setup, teardown);
}
