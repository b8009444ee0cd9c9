/*
 * test_io.c - tests of the image layer and image file I/O (src/image, src/io).
 *
 * Round trips through every format and layout, odd sizes, hand-written and crafted files
 * (ASCII PNM, palette / gray+alpha / 1-bit / interlaced PNG written with libspng
 * directly), and the failure paths: truncated, garbage, empty and missing files, headers
 * claiming huge dimensions, saves that must fail without touching an existing file, and
 * out-of-memory injection during loads and saves. Forked children check what must not
 * happen to the test process itself: reading /dev/zero (under an address-space limit),
 * a full disk (RLIMIT_FSIZE with SIGXFSZ ignored, so writes fail with EFBIG) and SIGTERM
 * in the middle of a save. All files live in a mkdtemp directory removed at the end.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jpeglib.h>
#include <spng.h>

#include "image/image.h"
#include "io/imageio.h"
#include "ir/value.h"
#include "util/alloc.h"
#include "util/file.h"

static char tmpdir[256];

/* ---- helpers ---- */

/* Path of `name` in the temp dir (one of 8 rotating buffers). */
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

/* The whole file (malloc'd) and its size; NULL if it cannot be read. */
static uint8_t *read_bytes(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
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

/* Number of entries in the temp dir whose name contains `part`. */
static int count_files(const char *part) {
  DIR *d = opendir(tmpdir);
  assert_non_null(d);
  int n = 0;
  for (struct dirent *e; (e = readdir(d));)
    if (strstr(e->d_name, part)) n++;
  closedir(d);
  return n;
}

/* A deterministic test image; `smooth` makes gradients (for JPEG), else hashed values. */
static struct pxl_image *make_image(int w, int h, pxl_type t, int ch, int smooth) {
  struct pxl_image *img;
  Err err = {0};
  assert_int_equal(image_new(w, h, t, ch, &img, &err), PXL_OK);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      for (int c = 0; c < ch; c++) {
        uint32_t v;
        if (smooth) {
          v = (uint32_t)(40 + (x * 150) / (w > 1 ? w - 1 : 1) + (y * 50) / (h > 1 ? h - 1 : 1) +
                         c * 7);
          if (t == PXL_U16) v *= 257;
        } else {
          v = (uint32_t)(x * 73856093u) ^ (uint32_t)(y * 19349663u) ^ (uint32_t)(c * 83492791u);
          v = (v ^ (v >> 13)) * 0x5bd1e995u;
          v ^= v >> 15;
        }
        size_t i = (size_t)x * (size_t)ch + (size_t)c;
        if (t == PXL_U8)
          ((uint8_t *)image_row(img, y))[i] = (uint8_t)v;
        else
          ((uint16_t *)image_row(img, y))[i] = (uint16_t)v;
      }
  return img;
}

static unsigned sample(const struct pxl_image *img, int x, int y, int c) {
  size_t i = (size_t)x * (size_t)img->channels + (size_t)c;
  if (img->type == PXL_U8) return ((const uint8_t *)image_row(img, y))[i];
  return ((const uint16_t *)image_row(img, y))[i];
}

static void assert_same_layout(const struct pxl_image *a, const struct pxl_image *b) {
  assert_int_equal(a->width, b->width);
  assert_int_equal(a->height, b->height);
  assert_int_equal(a->channels, b->channels);
  assert_int_equal(a->type, b->type);
}

static void assert_images_equal(const struct pxl_image *a, const struct pxl_image *b) {
  assert_same_layout(a, b);
  size_t row = (size_t)a->width * (size_t)a->channels * (size_t)pxl_type_size(a->type);
  for (int y = 0; y < a->height; y++) assert_memory_equal(image_row(a, y), image_row(b, y), row);
}

static double mean_abs_error(const struct pxl_image *a, const struct pxl_image *b) {
  assert_same_layout(a, b);
  double sum = 0;
  for (int y = 0; y < a->height; y++)
    for (int x = 0; x < a->width; x++)
      for (int c = 0; c < a->channels; c++)
        sum += abs((int)sample(a, x, y, c) - (int)sample(b, x, y, c));
  return sum / ((double)a->width * a->height * a->channels);
}

/* Saves img to name, loads it back, returns the loaded image. */
static struct pxl_image *round_trip(const struct pxl_image *img, const char *name) {
  Err err = {0};
  const char *p = tpath(name);
  int rc = io_save(p, img, &err);
  if (rc != PXL_OK) fail_msg("save %s: %s", p, err.msg);
  struct pxl_image *back = NULL;
  rc = io_load(p, &back, &err);
  if (rc != PXL_OK) fail_msg("load %s: %s", p, err.msg);
  assert_non_null(back);
  return back;
}

/* Loads path expecting `code` and a message naming the file. */
static void expect_load_error(const char *path, int code) {
  Err err = {0};
  struct pxl_image *img = (void *)1;
  int rc = io_load(path, &img, &err);
  if (rc != code) fail_msg("%s: expected status %d, got %d (%s)", path, code, rc, err.msg);
  assert_null(img);
  if (!strstr(err.msg, path)) fail_msg("message does not name the file: %s", err.msg);
}

static uint32_t crc32_of(const uint8_t *p, size_t n) {
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
  }
  return ~c;
}

static void put_be32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24);
  p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
}

/* A PNG signature and IHDR (valid CRC) claiming w x h, then a tiny IDAT and IEND. */
static size_t png_header(uint8_t *b, uint32_t w, uint32_t h, int depth, int color) {
  static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  memcpy(b, sig, 8);
  put_be32(b + 8, 13);
  memcpy(b + 12, "IHDR", 4);
  put_be32(b + 16, w);
  put_be32(b + 20, h);
  b[24] = (uint8_t)depth;
  b[25] = (uint8_t)color;
  b[26] = b[27] = b[28] = 0;
  put_be32(b + 29, crc32_of(b + 12, 17));
  static const uint8_t idat[] = {0, 0, 0, 2, 'I', 'D', 'A', 'T', 0x78, 0x9c};
  memcpy(b + 33, idat, sizeof idat);
  put_be32(b + 43, crc32_of(b + 37, 6));
  return 47;
}

/* Encodes raw PNG-format rows with libspng directly (for layouts io_save never writes). */
static void write_png_raw(const char *path, struct spng_ihdr *ihdr, const void *data, size_t len,
                          const struct spng_plte *plte, const struct spng_trns *trns) {
  spng_ctx *ctx = spng_ctx_new(SPNG_CTX_ENCODER);
  assert_non_null(ctx);
  assert_int_equal(spng_set_option(ctx, SPNG_ENCODE_TO_BUFFER, 1), 0);
  assert_int_equal(spng_set_ihdr(ctx, ihdr), 0);
  if (plte) assert_int_equal(spng_set_plte(ctx, (struct spng_plte *)plte), 0);
  if (trns) assert_int_equal(spng_set_trns(ctx, (struct spng_trns *)trns), 0);
  int e = spng_encode_image(ctx, data, len, SPNG_FMT_PNG, SPNG_ENCODE_FINALIZE);
  if (e) fail_msg("spng_encode_image: %s", spng_strerror(e));
  size_t n;
  void *png = spng_get_png_buffer(ctx, &n, &e);
  assert_non_null(png);
  write_bytes(path, png, n);
  free(png);
  spng_ctx_free(ctx);
}

static const int sizes[][2] = {{1, 1}, {3, 5}, {257, 129}};
#define NSIZES (sizeof sizes / sizeof sizes[0])

/* ---- image layer ---- */

static void test_image_new(void **state) {
  (void)state;
  struct pxl_image *img;
  Err err = {0};
  assert_int_equal(image_new(3, 5, PXL_U8, 3, &img, &err), PXL_OK);
  assert_int_equal((uintptr_t)img->data % 64, 0);
  assert_int_equal(img->pitch % 64, 0);
  assert_true(img->pitch >= 9);
  for (int y = 0; y < 5; y++)
    for (int i = 0; i < 9; i++) assert_int_equal(((uint8_t *)image_row(img, y))[i], 0);
  assert_int_equal(pxl_image_width(img), 3);
  assert_int_equal(pxl_image_height(img), 5);
  assert_int_equal(pxl_image_channels(img), 3);
  assert_int_equal(pxl_image_type(img), PXL_U8);
  assert_int_equal(pxl_image_pitch(img), img->pitch);
  assert_ptr_equal(pxl_image_data(img), img->data);
  pxl_image_free(img);
  pxl_image_free(NULL);

  assert_int_equal(image_new(257, 2, PXL_F64, 4, &img, &err), PXL_OK);
  assert_int_equal(img->pitch, 257 * 4 * 8 + 64 - (257 * 4 * 8) % 64);
  image_free(img);

  assert_int_equal(image_check_dims(0, 1, PXL_U8, 1, &err), PXL_EARG);
  assert_int_equal(image_check_dims(1, 1, PXL_U8, 2, &err), PXL_EARG);
  assert_int_equal(image_check_dims(1, 1, (pxl_type)99, 1, &err), PXL_EARG);
  assert_int_equal(image_check_dims(65536, 1, PXL_U8, 1, &err), PXL_ETOOBIG);
  assert_int_equal(image_check_dims(65535, 65535, PXL_U8, 1, &err), PXL_OK);
  assert_int_equal(image_check_dims(65535, 65535, PXL_F32, 4, &err), PXL_ETOOBIG);
  assert_non_null(strstr(err.msg, "65535x65535 is too large"));
  assert_int_equal(image_new(100000, 100000, PXL_U8, 1, &img, &err), PXL_ETOOBIG);
  assert_null(img);

  pxl_test_fail_alloc_after(1);
  assert_int_equal(image_new(8, 8, PXL_U8, 1, &img, &err), PXL_ENOMEM);
  pxl_test_fail_alloc_after(-1);
  assert_null(img);

  assert_int_equal(pxl_type_size(PXL_U8), 1);
  assert_int_equal(pxl_type_size(PXL_I16), 2);
  assert_int_equal(pxl_type_size(PXL_F64), 8);
  assert_string_equal(pxl_type_name(PXL_U16), "u16");
  assert_string_equal(pxl_type_name(PXL_F32), "f32");
  /* the API's names and sizes and the IR's agree, and the maps are inverse */
  for (int t = PXL_U8; t <= PXL_F64; t++) {
    Scalar s = scalar_of_pxl((pxl_type)t);
    assert_string_equal(scalar_name(s), pxl_type_name((pxl_type)t));
    assert_int_equal(scalar_size(s), pxl_type_size((pxl_type)t));
    assert_int_equal(pxl_of_scalar(s), t);
  }
  assert_string_equal(pxl_type_name((pxl_type)7), "?");
  assert_int_equal(pxl_type_size((pxl_type)-1), 0);
}

/* ---- round trips ---- */

static void test_png_round_trip(void **state) {
  (void)state;
  static const int chans[] = {1, 3, 4};
  static const pxl_type types[] = {PXL_U8, PXL_U16};
  for (size_t s = 0; s < NSIZES; s++)
    for (int t = 0; t < 2; t++)
      for (int c = 0; c < 3; c++) {
        struct pxl_image *img = make_image(sizes[s][0], sizes[s][1], types[t], chans[c], 0);
        struct pxl_image *back = round_trip(img, "rt.png");
        assert_images_equal(img, back);
        image_free(img);
        image_free(back);
      }
}

static void test_pnm_round_trip(void **state) {
  (void)state;
  static const pxl_type types[] = {PXL_U8, PXL_U16};
  for (size_t s = 0; s < NSIZES; s++)
    for (int t = 0; t < 2; t++)
      for (int c = 1; c <= 3; c += 2) {
        struct pxl_image *img = make_image(sizes[s][0], sizes[s][1], types[t], c, 0);
        const char *names[] = {c == 1 ? "rt.pgm" : "rt.ppm", "rt.pnm"};
        for (int k = 0; k < 2; k++) {
          struct pxl_image *back = round_trip(img, names[k]);
          assert_images_equal(img, back);
          image_free(back);
          size_t n;
          uint8_t *bytes = read_bytes(tpath(names[k]), &n);
          assert_int_equal(bytes[0], 'P');
          assert_int_equal(bytes[1], c == 1 ? '5' : '6');
          free(bytes);
        }
        image_free(img);
      }
}

static void test_jpeg_round_trip(void **state) {
  (void)state;
  for (size_t s = 0; s < NSIZES; s++)
    for (int c = 1; c <= 3; c += 2) {
      struct pxl_image *img = make_image(sizes[s][0], sizes[s][1], PXL_U8, c, 1);
      struct pxl_image *back = round_trip(img, s % 2 ? "rt.jpeg" : "rt.jpg");
      double mae = mean_abs_error(img, back);
      if (mae > 2.5) fail_msg("JPEG %dx%dx%d: mean abs error %.2f", img->width, img->height, c, mae);
      image_free(img);
      image_free(back);
    }
}

static void test_pnm_ascii(void **state) {
  (void)state;
  Err err = {0};
  struct pxl_image *img;
  const char *p = tpath("a.pgm");
  static const char p2[] = "P2\n# a comment\n3 2 # trailing\n255\n0 1 2\n# mid\n253\t254 255\n";
  write_bytes(p, p2, sizeof p2 - 1);
  assert_int_equal(io_load(p, &img, &err), PXL_OK);
  assert_int_equal(img->width, 3);
  assert_int_equal(img->height, 2);
  assert_int_equal(img->channels, 1);
  assert_int_equal(img->type, PXL_U8);
  assert_int_equal(sample(img, 2, 0, 0), 2);
  assert_int_equal(sample(img, 0, 1, 0), 253);
  assert_int_equal(sample(img, 2, 1, 0), 255);
  image_free(img);

  p = tpath("a.ppm");
  static const char p3[] = "P3 2 1 65535 0 1 2 65535 300 40000";
  write_bytes(p, p3, sizeof p3 - 1);
  assert_int_equal(io_load(p, &img, &err), PXL_OK);
  assert_int_equal(img->channels, 3);
  assert_int_equal(img->type, PXL_U16);
  assert_int_equal(sample(img, 0, 0, 2), 2);
  assert_int_equal(sample(img, 1, 0, 0), 65535);
  assert_int_equal(sample(img, 1, 0, 2), 40000);
  image_free(img);

  /* maxval 15 rescales to 0..255; maxval 1000 loads as u16 rescaled to 0..65535. */
  static const char p2s[] = "P2 3 1 15 0 1 15";
  write_bytes(p, p2s, sizeof p2s - 1);
  assert_int_equal(io_load(p, &img, &err), PXL_OK);
  assert_int_equal(img->type, PXL_U8);
  assert_int_equal(sample(img, 1, 0, 0), 17);
  assert_int_equal(sample(img, 2, 0, 0), 255);
  image_free(img);
  static const char p5[] = "P5 2 1 1000\n\x03\xe8\x01\xf4";
  write_bytes(p, p5, sizeof p5 - 1);
  assert_int_equal(io_load(p, &img, &err), PXL_OK);
  assert_int_equal(img->type, PXL_U16);
  assert_int_equal(sample(img, 0, 0, 0), 65535);
  assert_int_equal(sample(img, 1, 0, 0), 32768);
  image_free(img);

  /* Invalid headers and samples. */
  static const char *bad[] = {
      "P2 2 1 255 0 256",   /* sample over maxval */
      "P2 2 1 255 0 x",     /* not a number */
      "P2 0 1 255 ",        /* zero width */
      "P2 1 1 0 0",         /* maxval 0 */
      "P5 1 1 70000 \1\1",  /* maxval over 65535 */
      "P5 1 1 255x\1",      /* no whitespace before the samples */
      "P5 2 1 200\n\1\xff", /* binary sample over maxval */
      "P2 -1 1 255 0",      /* sign */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    write_bytes(p, bad[i], strlen(bad[i]));
    expect_load_error(p, PXL_EFORMAT);
  }
}

static void test_png_layouts(void **state) {
  (void)state;
  Err err = {0};
  struct pxl_image *img;
  const char *p = tpath("layout.png");

  /* Palette without tRNS -> RGB; with tRNS -> RGBA. */
  struct spng_plte plte = {.n_entries = 3};
  for (int i = 0; i < 3; i++) {
    plte.entries[i].red = (uint8_t)(10 + i);
    plte.entries[i].green = (uint8_t)(100 + i);
    plte.entries[i].blue = (uint8_t)(200 + i);
  }
  uint8_t idx[4 * 3] = {0, 1, 2, 0, 2, 1, 0, 2, 1, 1, 1, 1};
  struct spng_ihdr ihdr = {.width = 4, .height = 3, .bit_depth = 8,
                           .color_type = SPNG_COLOR_TYPE_INDEXED};
  write_png_raw(p, &ihdr, idx, sizeof idx, &plte, NULL);
  assert_int_equal(io_load(p, &img, &err), PXL_OK);
  assert_int_equal(img->channels, 3);
  assert_int_equal(img->type, PXL_U8);
  assert_int_equal(sample(img, 1, 0, 0), 11);
  assert_int_equal(sample(img, 2, 0, 2), 202);
  image_free(img);
  struct spng_trns trns = {.n_type3_entries = 2, .type3_alpha = {0, 128}};
  write_png_raw(p, &ihdr, idx, sizeof idx, &plte, &trns);
  assert_int_equal(io_load(p, &img, &err), PXL_OK);
  assert_int_equal(img->channels, 4);
  assert_int_equal(sample(img, 0, 0, 3), 0);
  assert_int_equal(sample(img, 1, 0, 3), 128);
  assert_int_equal(sample(img, 2, 0, 3), 255);
  image_free(img);

  /* Gray+alpha -> RGBA with the gray replicated, 8 and 16 bits. */
  uint8_t ga[2 * 2 * 2] = {10, 255, 20, 0, 30, 100, 40, 200};
  ihdr = (struct spng_ihdr){.width = 2, .height = 2, .bit_depth = 8,
                            .color_type = SPNG_COLOR_TYPE_GRAYSCALE_ALPHA};
  write_png_raw(p, &ihdr, ga, sizeof ga, NULL, NULL);
  assert_int_equal(io_load(p, &img, &err), PXL_OK);
  assert_int_equal(img->channels, 4);
  assert_int_equal(img->type, PXL_U8);
  for (int c = 0; c < 3; c++) assert_int_equal(sample(img, 0, 1, c), 30);
  assert_int_equal(sample(img, 0, 1, 3), 100);
  image_free(img);
  uint16_t ga16[2 * 2 * 2] = {1000, 65535, 2000, 0, 3000, 1, 40000, 2};
  ihdr.bit_depth = 16;
  write_png_raw(p, &ihdr, ga16, sizeof ga16, NULL, NULL);
  assert_int_equal(io_load(p, &img, &err), PXL_OK);
  assert_int_equal(img->channels, 4);
  assert_int_equal(img->type, PXL_U16);
  for (int c = 0; c < 3; c++) assert_int_equal(sample(img, 1, 1, c), 40000);
  assert_int_equal(sample(img, 1, 1, 3), 2);
  image_free(img);

  /* 1-bit gray scales to 0/255. */
  uint8_t bits[2] = {0xa0, 0x40}; /* rows: 1 0 1, 0 1 0 */
  ihdr = (struct spng_ihdr){.width = 3, .height = 2, .bit_depth = 1,
                            .color_type = SPNG_COLOR_TYPE_GRAYSCALE};
  write_png_raw(p, &ihdr, bits, sizeof bits, NULL, NULL);
  assert_int_equal(io_load(p, &img, &err), PXL_OK);
  assert_int_equal(img->channels, 1);
  assert_int_equal(sample(img, 0, 0, 0), 255);
  assert_int_equal(sample(img, 1, 0, 0), 0);
  assert_int_equal(sample(img, 1, 1, 0), 255);
  image_free(img);

  /* Interlaced RGB 8-bit decodes to the same pixels. */
  struct pxl_image *src = make_image(13, 11, PXL_U8, 3, 0);
  uint8_t packed[13 * 11 * 3];
  for (int y = 0; y < 11; y++) memcpy(packed + y * 39, image_row(src, y), 39);
  ihdr = (struct spng_ihdr){.width = 13, .height = 11, .bit_depth = 8,
                            .color_type = SPNG_COLOR_TYPE_TRUECOLOR, .interlace_method = 1};
  write_png_raw(p, &ihdr, packed, sizeof packed, NULL, NULL);
  assert_int_equal(io_load(p, &img, &err), PXL_OK);
  assert_images_equal(src, img);
  image_free(img);
  image_free(src);
}

static void test_format_by_magic(void **state) {
  (void)state;
  Err err = {0};
  struct pxl_image *img = make_image(5, 4, PXL_U8, 3, 0), *back;
  assert_int_equal(io_save(tpath("m.png"), img, &err), PXL_OK);
  assert_int_equal(rename(tpath("m.png"), tpath("m.jpg")), 0);
  assert_int_equal(io_load(tpath("m.jpg"), &back, &err), PXL_OK);
  assert_images_equal(img, back);
  image_free(back);
  assert_int_equal(io_save(tpath("m.ppm"), img, &err), PXL_OK);
  assert_int_equal(rename(tpath("m.ppm"), tpath("m.dat")), 0);
  assert_int_equal(io_load(tpath("m.dat"), &back, &err), PXL_OK);
  assert_images_equal(img, back);
  image_free(back);
  assert_int_equal(io_save(tpath("M.PNG"), img, &err), PXL_OK); /* case-insensitive */
  image_free(img);
}

/* ---- bad files ---- */

static void test_truncated(void **state) {
  (void)state;
  static const char *names[] = {"t.png", "t16.png", "t.jpg", "tg.jpg", "t.pgm", "t.ppm", "t16.ppm"};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
    int wide = strstr(names[k], "16") != NULL;
    int ch = strstr(names[k], ".pgm") || strstr(names[k], "tg") ? 1 : 3;
    struct pxl_image *img = make_image(40, 30, wide ? PXL_U16 : PXL_U8, ch, 0);
    Err err = {0};
    const char *full = tpath(names[k]);
    assert_int_equal(io_save(full, img, &err), PXL_OK);
    image_free(img);
    size_t n;
    uint8_t *bytes = read_bytes(full, &n);
    assert_non_null(bytes);
    /* Cut inside the pixel data; for PNM also just before the end, for JPEG just before
     * the EOI marker (a JPEG that lacks only EOI loads: test_jpeg_missing_eoi). */
    size_t near_end = strstr(names[k], ".png") ? n / 3 : strstr(names[k], ".jpg") ? n - 3 : n - 1;
    size_t cuts[] = {n / 2, n * 3 / 4, near_end, 20};
    for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
      const char *p = tpath("cut.bin");
      write_bytes(p, bytes, cuts[c]);
      expect_load_error(p, PXL_EFORMAT);
    }
    free(bytes);
  }
  /* PNM truncation message. */
  const char *p = tpath("short.pgm");
  write_bytes(p, "P5\n4 4\n255\n\1\2\3", 14);
  Err err = {0};
  struct pxl_image *img;
  assert_int_equal(io_load(p, &img, &err), PXL_EFORMAT);
  char want[600];
  snprintf(want, sizeof want, "%s: truncated PGM/PPM data", p);
  assert_string_equal(err.msg, want);
  write_bytes(p, "P2 3 1 255 1 2", 14);
  expect_load_error(p, PXL_EFORMAT);
  write_bytes(p, "P5 3 1", 6);
  expect_load_error(p, PXL_EFORMAT);
}

static void test_garbage(void **state) {
  (void)state;
  const char *p = tpath("garbage.png");
  uint8_t junk[1000];
  uint32_t s = 12345;
  for (size_t i = 0; i < sizeof junk; i++) junk[i] = (uint8_t)((s = s * 1103515245u + 12345u) >> 16);
  junk[0] = 'G';
  write_bytes(p, junk, sizeof junk);
  expect_load_error(p, PXL_EFORMAT);
  Err err = {0};
  struct pxl_image *img;
  io_load(p, &img, &err);
  assert_non_null(strstr(err.msg, "unsupported image format (not PNG, JPEG, PGM/PPM, TIFF or .npy)"));

  static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  memcpy(junk, png_sig, 8);
  write_bytes(p, junk, sizeof junk);
  expect_load_error(p, PXL_EFORMAT);
  junk[0] = 0xff, junk[1] = 0xd8, junk[2] = 0xff;
  write_bytes(p, junk, sizeof junk);
  expect_load_error(p, PXL_EFORMAT);
  write_bytes(p, "P6\nabc", 6);
  expect_load_error(p, PXL_EFORMAT);
  write_bytes(p, "P4\n1 1\n\0", 8); /* PBM: not supported */
  expect_load_error(p, PXL_EFORMAT);
  write_bytes(p, "hello world\n", 12);
  expect_load_error(p, PXL_EFORMAT);
}

static void test_empty_missing(void **state) {
  (void)state;
  const char *p = tpath("empty.png");
  write_bytes(p, "", 0);
  expect_load_error(p, PXL_EFORMAT);
  expect_load_error(tpath("does-not-exist.png"), PXL_EIO);
  Err err = {0};
  struct pxl_image *img;
  io_load(tpath("does-not-exist.png"), &img, &err);
  assert_non_null(strstr(err.msg, "No such file"));
  expect_load_error(tmpdir, PXL_EIO); /* a directory */
}

static void test_huge_dims(void **state) {
  (void)state;
  uint8_t b[64];
  const char *p = tpath("huge.png");
  write_bytes(p, b, png_header(b, 100000, 100000, 8, SPNG_COLOR_TYPE_GRAYSCALE));
  expect_load_error(p, PXL_ETOOBIG);
  Err err = {0};
  struct pxl_image *img;
  io_load(p, &img, &err);
  assert_non_null(strstr(err.msg, "image 100000x100000 is too large (limit"));
  /* Within the side limit but over the byte limit. */
  write_bytes(p, b, png_header(b, 60000, 60000, 16, SPNG_COLOR_TYPE_TRUECOLOR_ALPHA));
  expect_load_error(p, PXL_ETOOBIG);

  p = tpath("huge.pgm");
  write_bytes(p, "P5\n100000 100000\n255\n", 21);
  expect_load_error(p, PXL_ETOOBIG);
  write_bytes(p, "P6 60000 60000 65535\n", 21);
  expect_load_error(p, PXL_ETOOBIG);
  write_bytes(p, "P2 99999999999999999999 2 255\n", 30);
  expect_load_error(p, PXL_ETOOBIG);

  /* JPEG whose SOF claims 65000x65000 RGB. */
  struct pxl_image *small = make_image(16, 16, PXL_U8, 3, 1);
  p = tpath("huge.jpg");
  assert_int_equal(io_save(p, small, &err), PXL_OK);
  image_free(small);
  size_t n;
  uint8_t *bytes = read_bytes(p, &n);
  int patched = 0;
  for (size_t i = 2; i + 9 < n; i++)
    if (bytes[i] == 0xff && (bytes[i + 1] == 0xc0 || bytes[i + 1] == 0xc2)) {
      bytes[i + 5] = bytes[i + 7] = 0xfd; /* height, width = 0xfde8 = 65000 */
      bytes[i + 6] = bytes[i + 8] = 0xe8;
      patched = 1;
      break;
    }
  assert_true(patched);
  write_bytes(p, bytes, n);
  free(bytes);
  expect_load_error(p, PXL_ETOOBIG);
}

/* ---- saving ---- */

static void test_save_errors(void **state) {
  (void)state;
  Err err = {0};
  const char *p = tpath("keep.png");
  struct pxl_image *good = make_image(7, 3, PXL_U8, 1, 0), *f32;
  assert_int_equal(io_save(p, good, &err), PXL_OK);
  size_t n0, n1;
  uint8_t *before = read_bytes(p, &n0);
  assert_int_equal(image_new(4, 4, PXL_F32, 1, &f32, &err), PXL_OK);

  assert_int_equal(io_save(p, f32, &err), PXL_EARG);
  assert_non_null(strstr(err.msg, p));
  assert_non_null(strstr(err.msg, "u8 or u16"));
  assert_non_null(strstr(err.msg, "f32"));

  /* Failures after the temporary file exists: injected out-of-memory in the encoder. */
  struct pxl_image *big = make_image(64, 64, PXL_U8, 3, 0);
  for (long k = 0; k < 8; k++) {
    pxl_test_fail_alloc_after(k);
    int rc = io_save(p, big, &err);
    pxl_test_fail_alloc_after(-1);
    if (rc == PXL_OK) break;
    assert_int_equal(rc, PXL_ENOMEM);
    uint8_t *after = read_bytes(p, &n1);
    assert_int_equal(n0, n1);
    assert_memory_equal(before, after, n0);
    free(after);
    assert_int_equal(count_files(".tmp"), 0);
  }
  assert_int_equal(io_save(p, good, &err), PXL_OK);

  struct pxl_image *u16 = make_image(4, 4, PXL_U16, 3, 0);
  struct pxl_image *rgba = make_image(4, 4, PXL_U8, 4, 0);
  struct pxl_image *gray = make_image(4, 4, PXL_U8, 1, 0);
  assert_int_equal(io_save(tpath("x.jpg"), u16, &err), PXL_EARG);
  assert_non_null(strstr(err.msg, "JPEG stores u8"));
  assert_int_equal(io_save(tpath("x.jpg"), rgba, &err), PXL_EARG);
  assert_int_equal(io_save(tpath("x.pgm"), u16, &err), PXL_EARG); /* 3 channels */
  assert_int_equal(io_save(tpath("x.ppm"), gray, &err), PXL_EARG);
  assert_int_equal(io_save(tpath("x.pnm"), rgba, &err), PXL_EARG);
  assert_int_equal(io_save(tpath("x.bmp"), gray, &err), PXL_EARG);
  assert_non_null(strstr(err.msg, ".png"));
  assert_non_null(strstr(err.msg, ".pgm"));
  assert_int_equal(io_save(tpath("noext"), gray, &err), PXL_EARG);
  assert_int_equal(count_files("x."), 0);

  char missing[600];
  snprintf(missing, sizeof missing, "%s/no/such/dir/out.png", tmpdir);
  assert_int_equal(io_save(missing, gray, &err), PXL_EIO);
  assert_non_null(strstr(err.msg, missing));

  uint8_t *after = read_bytes(p, &n1);
  assert_int_equal(n0, n1);
  assert_memory_equal(before, after, n0);
  assert_int_equal(count_files(".tmp"), 0);
  free(before);
  free(after);
  image_free(good);
  image_free(f32);
  image_free(big);
  image_free(u16);
  image_free(rgba);
  image_free(gray);
}

/* ---- out of memory ---- */

static void test_oom_load(void **state) {
  (void)state;
  struct {
    const char *name;
    pxl_type type;
    int ch;
  } files[] = {{"o.png", PXL_U8, 3}, {"o16.png", PXL_U16, 4}, {"o.jpg", PXL_U8, 3},
               {"o.pgm", PXL_U8, 1}, {"o16.ppm", PXL_U16, 3}};
  for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
    struct pxl_image *img = make_image(33, 17, files[k].type, files[k].ch, 1);
    Err err = {0};
    assert_int_equal(io_save(tpath(files[k].name), img, &err), PXL_OK);
    image_free(img);
    int saw_enomem = 0, saw_ok = 0;
    for (long n = 0; n <= 20; n++) {
      struct pxl_image *out = NULL;
      pxl_test_fail_alloc_after(n);
      int rc = io_load(tpath(files[k].name), &out, &err);
      pxl_test_fail_alloc_after(-1);
      if (rc != PXL_OK && rc != PXL_ENOMEM)
        fail_msg("%s with allocation %ld failing: status %d (%s)", files[k].name, n, rc, err.msg);
      if (rc == PXL_OK) {
        assert_non_null(out);
        assert_int_equal(out->width, 33);
        saw_ok = 1;
      } else {
        assert_null(out);
        saw_enomem = 1;
      }
      image_free(out);
    }
    assert_true(saw_enomem);
    assert_true(saw_ok);
  }
  const char *p = tpath("o.ppm");
  static const char p3[] = "P3 2 2 255 1 2 3 4 5 6 7 8 9 10 11 12";
  write_bytes(p, p3, sizeof p3 - 1);
  for (long n = 0; n <= 20; n++) {
    struct pxl_image *out = NULL;
    Err err = {0};
    pxl_test_fail_alloc_after(n);
    int rc = io_load(p, &out, &err);
    pxl_test_fail_alloc_after(-1);
    assert_true(rc == PXL_OK || rc == PXL_ENOMEM);
    image_free(out);
  }
}

/* ---- hardening: limits, failed writes, permissions, signals, hostile files ---- */

/* What a forked child reports back: the status of its call and the message. */
typedef struct {
  int rc;
  char msg[512];
} ChildReport;

typedef void (*ChildFn)(void *arg, ChildReport *out);

/* Runs fn(arg) in a forked child with RLIMIT_FSIZE at fsize bytes (0: unchanged; SIGXFSZ
 * ignored, so writes past it fail with EFBIG) and RLIMIT_AS raised by as_extra bytes
 * over the current address space (0: unchanged); returns its report. */
static ChildReport run_in_child(ChildFn fn, void *arg, rlim_t fsize, rlim_t as_extra) {
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    if (fsize) {
      signal(SIGXFSZ, SIG_IGN);
      struct rlimit rl = {fsize, fsize};
      if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(2);
    }
    if (as_extra) {
      long pages = 0;
      FILE *f = fopen("/proc/self/statm", "r");
      if (!f || fscanf(f, "%ld", &pages) != 1) _exit(2);
      fclose(f);
      rlim_t lim = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + as_extra;
      struct rlimit rl = {lim, lim};
      if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(2);
    }
    ChildReport r = {0};
    fn(arg, &r);
    ssize_t w = write(fds[1], &r, sizeof r);
    _exit(w == (ssize_t)sizeof r ? 0 : 2);
  }
  close(fds[1]);
  ChildReport r = {-1, ""};
  ssize_t got = read(fds[0], &r, sizeof r);
  close(fds[0]);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  if (got != (ssize_t)sizeof r || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fail_msg("child failed (status 0x%x)", status);
  return r;
}

static void child_load(void *arg, ChildReport *out) {
  Err err = {0};
  struct pxl_image *img = NULL;
  out->rc = io_load(arg, &img, &err);
  snprintf(out->msg, sizeof out->msg, "%.500s", err.msg);
  image_free(img);
}

typedef struct {
  const char *path;
  const struct pxl_image *img;
} SaveJob;

static void child_save(void *arg, ChildReport *out) {
  const SaveJob *job = arg;
  Err err = {0};
  out->rc = io_save(job->path, job->img, &err);
  snprintf(out->msg, sizeof out->msg, "%.500s", err.msg);
}

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

/* An endless file stops at the size cap (PXL_ETOOBIG naming it) instead of exhausting
 * memory; a FIFO with a writer still loads. The child's address space is limited to 3 GiB
 * more than it uses, so a reader without the cap fails there instead of on the machine. */
static void test_load_limits(void **state) {
  (void)state;
  ChildReport r = run_in_child(child_load, "/dev/zero", 0, UNDER_ASAN ? 0 : (rlim_t)3 << 30);
  if (r.rc != PXL_ETOOBIG) fail_msg("/dev/zero: status %d (%s)", r.rc, r.msg);
  assert_non_null(strstr(r.msg, "/dev/zero: larger than 1073741824 bytes"));

  struct pxl_image *img = make_image(9, 7, PXL_U8, 3, 0), *back;
  Err err = {0};
  assert_int_equal(io_save(tpath("fifo-src.png"), img, &err), PXL_OK);
  size_t n;
  uint8_t *bytes = read_bytes(tpath("fifo-src.png"), &n);
  const char *fifo = tpath("fifo.png");
  assert_int_equal(mkfifo(fifo, 0600), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int fd = open(fifo, O_WRONLY);
    _exit(fd >= 0 && write(fd, bytes, n) == (ssize_t)n ? 0 : 1);
  }
  assert_int_equal(io_load(fifo, &back, &err), PXL_OK);
  assert_images_equal(img, back);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  image_free(back);
  image_free(img);
  free(bytes);
}

/* A full disk (here: the file size limit) fails every format with PXL_EIO naming the file
 * and the reason, leaves the existing file as it was and no temporary file behind. */
static void test_save_full_disk(void **state) {
  (void)state;
  static const char *names[] = {"full.png", "full16.png", "full.jpg", "full.ppm", "full16.pgm",
                                "full.tif", "full16.tiff", "full.npy", "full16.npy"};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
    int wide = strstr(names[k], "16") != NULL;
    int ch = strstr(names[k], ".pgm") ? 1 : 3;
    pxl_type t = wide ? PXL_U16 : PXL_U8;
    struct pxl_image *small = make_image(4, 4, t, ch, 0), *big = make_image(300, 200, t, ch, 0);
    const char *p = tpath(names[k]);
    Err err = {0};
    assert_int_equal(io_save(p, small, &err), PXL_OK);
    size_t n0, n1;
    uint8_t *before = read_bytes(p, &n0);
    SaveJob job = {p, big};
    ChildReport r = run_in_child(child_save, &job, 16384, 0);
    if (r.rc != PXL_EIO) fail_msg("%s: status %d (%s)", names[k], r.rc, r.msg);
    if (!strstr(r.msg, p) || !strstr(r.msg, strerror(EFBIG)))
      fail_msg("%s: message without the file or the reason: %s", names[k], r.msg);
    uint8_t *after = read_bytes(p, &n1);
    assert_int_equal(n0, n1);
    assert_memory_equal(before, after, n0);
    assert_int_equal(count_files(".tmp"), 0);
    free(before);
    free(after);
    image_free(small);
    image_free(big);
  }
}

/* New files get 0666 less the umask; a replaced file keeps its mode. */
static void test_save_umask(void **state) {
  (void)state;
  struct pxl_image *img = make_image(3, 3, PXL_U8, 1, 0);
  Err err = {0};
  struct stat st;
  mode_t old = umask(027);
  assert_int_equal(io_save(tpath("mask1.png"), img, &err), PXL_OK);
  assert_int_equal(stat(tpath("mask1.png"), &st), 0);
  assert_int_equal(st.st_mode & 0777, 0640);
  umask(077);
  assert_int_equal(io_save(tpath("mask2.pgm"), img, &err), PXL_OK);
  assert_int_equal(stat(tpath("mask2.pgm"), &st), 0);
  assert_int_equal(st.st_mode & 0777, 0600);
  assert_int_equal(chmod(tpath("mask1.png"), 0604), 0);
  assert_int_equal(io_save(tpath("mask1.png"), img, &err), PXL_OK);
  assert_int_equal(stat(tpath("mask1.png"), &st), 0);
  assert_int_equal(st.st_mode & 0777, 0604);
  umask(old);
  image_free(img);
}

/* The handler a program installs (the CLI's does the same): remove partial files, die. */
static void on_term(int sig) {
  file_remove_partial();
  signal(sig, SIG_DFL);
  raise(sig);
}

/* SIGTERM in the middle of a save: the handler's file_remove_partial removes the
 * temporary file, so nothing is left; the target never appears. */
static void test_save_signal(void **state) {
  (void)state;
  struct pxl_image *big = make_image(2048, 2048, PXL_U8, 3, 0);
  const char *p = tpath("sig.png");
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    signal(SIGTERM, on_term);
    for (;;) {
      Err err = {0};
      if (io_save(p, big, &err) != PXL_OK) _exit(1);
      unlink(p);
    }
  }
  int seen = 0;
  for (int i = 0; i < 20000 && !seen; i++) { /* up to 20 s for a temporary file to appear */
    seen = count_files("sig.png.tmp") > 0;
    if (!seen) usleep(1000);
  }
  assert_true(seen);
  usleep(20000); /* well inside the encoder */
  assert_int_equal(kill(pid, SIGTERM), 0);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
  assert_int_equal(count_files("sig.png"), 0);
  image_free(big);
}

/* Offset of the first chunk of the given type in a PNG, or 0. */
static size_t png_find_chunk(const uint8_t *b, size_t n, const char *type) {
  for (size_t i = 8; i + 12 <= n;) {
    uint32_t len = (uint32_t)b[i] << 24 | (uint32_t)b[i + 1] << 16 | (uint32_t)b[i + 2] << 8 | b[i + 3];
    if (memcmp(b + i + 4, type, 4) == 0) return i;
    i += 12 + (size_t)len;
  }
  return 0;
}

/* A wrong CRC on a critical chunk (IDAT, the data itself) or an ancillary one (tEXt)
 * makes the file corrupt. */
static void test_png_crc(void **state) {
  (void)state;
  struct pxl_image *img = make_image(20, 10, PXL_U8, 3, 0);
  const char *p = tpath("crc.png");
  Err err = {0};
  assert_int_equal(io_save(p, img, &err), PXL_OK);
  size_t n;
  uint8_t *bytes = read_bytes(p, &n);
  size_t at = png_find_chunk(bytes, n, "IDAT");
  assert_true(at > 0);
  uint32_t len = (uint32_t)bytes[at] << 24 | (uint32_t)bytes[at + 1] << 16 | (uint32_t)bytes[at + 2] << 8 | bytes[at + 3];
  bytes[at + 8 + len + 3] ^= 1; /* last byte of IDAT's CRC */
  write_bytes(p, bytes, n);
  expect_load_error(p, PXL_EFORMAT);
  io_load(p, &(struct pxl_image *){NULL}, &err);
  assert_non_null(strstr(err.msg, "CRC"));
  bytes[at + 8 + len + 3] ^= 1;
  write_bytes(p, bytes, n - 12); /* no IEND: the file was cut after the image data */
  expect_load_error(p, PXL_EFORMAT);

  /* a tEXt chunk right after IHDR, then before IEND: loads with a good CRC, not with a
   * bad one */
  static const char text[] = "Comment\0hello";
  size_t tl = sizeof text - 1, ihdr_end = 8 + 25, m = n + 12 + tl;
  uint8_t chunk[64], *withtext = malloc(m);
  put_be32(chunk, (uint32_t)tl);
  memcpy(chunk + 4, "tEXt", 4);
  memcpy(chunk + 8, text, tl);
  put_be32(chunk + 8 + tl, crc32_of(chunk + 4, tl + 4));
  for (int bad = 0; bad < 2; bad++) {
    chunk[8 + tl] ^= (uint8_t)(bad ? 0x80 : 0);
    for (int where = 0; where < 2; where++) {
      size_t cut = where ? n - 12 : ihdr_end;
      memcpy(withtext, bytes, cut);
      memcpy(withtext + cut, chunk, 12 + tl);
      memcpy(withtext + cut + 12 + tl, bytes + cut, n - cut);
      write_bytes(p, withtext, m);
      if (bad) {
        expect_load_error(p, PXL_EFORMAT);
        continue;
      }
      struct pxl_image *back;
      assert_int_equal(io_load(p, &back, &err), PXL_OK);
      assert_images_equal(img, back);
      image_free(back);
    }
  }
  free(withtext);
  free(bytes);
  image_free(img);
}

/* Writes img (u8, 1 or 3 channels) as JPEG with libjpeg directly: progressive when
 * nscans < 0 (jpeg_simple_progression), else with the given scan script (NULL: baseline). */
static void write_jpeg_scans(const char *path, const struct pxl_image *img,
                             const jpeg_scan_info *scans, int nscans) {
  struct jpeg_compress_struct cinfo;
  struct jpeg_error_mgr jerr;
  cinfo.err = jpeg_std_error(&jerr);
  jpeg_create_compress(&cinfo);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  jpeg_stdio_dest(&cinfo, f);
  cinfo.image_width = (JDIMENSION)img->width;
  cinfo.image_height = (JDIMENSION)img->height;
  cinfo.input_components = img->channels;
  cinfo.in_color_space = img->channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, 90, TRUE);
  if (nscans < 0) {
    jpeg_simple_progression(&cinfo);
  } else if (scans) {
    cinfo.scan_info = scans;
    cinfo.num_scans = nscans;
  }
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = image_row(img, (int)cinfo.next_scanline);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  assert_int_equal(fclose(f), 0);
}

/* Offset of the last marker FF <code> in a JPEG, or 0. */
static size_t jpeg_last_marker(const uint8_t *b, size_t n, uint8_t code) {
  size_t last = 0;
  for (size_t i = 2; i + 1 < n; i++)
    if (b[i] == 0xff && b[i + 1] == code) last = i;
  return last;
}

/* A JPEG that lacks only its EOI marker (or half of it) decodes to the same image as the
 * whole file, as libjpeg-turbo and OpenCV do; losing anything before it (a scan, a
 * component, entropy-coded data) is still an error. */
static void test_jpeg_missing_eoi(void **state) {
  (void)state;
  struct pxl_image *img = make_image(40, 30, PXL_U8, 3, 1), *full, *cut;
  jpeg_scan_info by_comp[3]; /* sequential, one scan per component */
  for (int c = 0; c < 3; c++) by_comp[c] = (jpeg_scan_info){1, {c}, 0, 63, 0, 0};
  struct {
    const char *name;
    const jpeg_scan_info *scans;
    int nscans;
  } kinds[] = {{"base.jpg", NULL, 0}, {"prog.jpg", NULL, -1}, {"comp.jpg", by_comp, 3}};
  Err err = {0};
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    const char *p = tpath(kinds[k].name), *q = tpath("noeoi.jpg");
    write_jpeg_scans(p, img, kinds[k].scans, kinds[k].nscans);
    assert_int_equal(io_load(p, &full, &err), PXL_OK);
    size_t n;
    uint8_t *bytes = read_bytes(p, &n);
    assert_true(n > 4 && bytes[n - 2] == 0xff && bytes[n - 1] == 0xd9);
    for (size_t drop = 1; drop <= 2; drop++) {
      write_bytes(q, bytes, n - drop);
      int rc = io_load(q, &cut, &err);
      if (rc != PXL_OK) fail_msg("%s less %zu bytes: %s", kinds[k].name, drop, err.msg);
      assert_images_equal(full, cut);
      image_free(cut);
    }
    write_bytes(q, bytes, n - 3); /* the last byte of entropy-coded data is missing */
    expect_load_error(q, PXL_EFORMAT);
    if (kinds[k].scans || kinds[k].nscans < 0) { /* a whole scan missing, no EOI */
      size_t sos = jpeg_last_marker(bytes, n, 0xda);
      assert_true(sos > 0);
      write_bytes(q, bytes, sos);
      expect_load_error(q, PXL_EFORMAT);
    }
    image_free(full);
    free(bytes);
  }
  image_free(img);
}

/* A gray progressive scan script of nscans (64..127) scans: DC, then one scan per AC
 * coefficient, the first nscans - 64 of them in two successive-approximation passes. */
static int gray_script(jpeg_scan_info *s, int nscans) {
  int k = 0, split = nscans - 64;
  s[k++] = (jpeg_scan_info){1, {0}, 0, 0, 0, 0};
  for (int coef = 1; coef < 64; coef++) {
    if (coef <= split) {
      s[k++] = (jpeg_scan_info){1, {0}, coef, coef, 0, 1};
      s[k++] = (jpeg_scan_info){1, {0}, coef, coef, 1, 0};
    } else {
      s[k++] = (jpeg_scan_info){1, {0}, coef, coef, 0, 0};
    }
  }
  return k;
}

/* Progressive JPEGs with more than 100 scans are refused (the limit is in the message);
 * 100 scans load. */
static void test_jpeg_scan_limit(void **state) {
  (void)state;
  struct pxl_image *img = make_image(32, 24, PXL_U8, 1, 1), *back;
  jpeg_scan_info script[128];
  const char *p = tpath("scans.jpg");
  Err err = {0};
  assert_int_equal(gray_script(script, 100), 100);
  write_jpeg_scans(p, img, script, 100);
  assert_int_equal(io_load(p, &back, &err), PXL_OK);
  double mae = mean_abs_error(img, back);
  if (mae > 2.5) fail_msg("100-scan JPEG: mean abs error %.2f", mae);
  image_free(back);
  assert_int_equal(gray_script(script, 101), 101);
  write_jpeg_scans(p, img, script, 101);
  expect_load_error(p, PXL_EFORMAT);
  io_load(p, &back, &err);
  assert_non_null(strstr(err.msg, "more than 100 scans"));
  image_free(img);
}

/* Netpbm header grammar: a comment may stand wherever whitespace may, including right
 * after maxval, where the comment's closing newline is the single whitespace byte before
 * the samples; after that byte everything is samples (a '#' too). */
static void test_pnm_header_comments(void **state) {
  (void)state;
#define TEXT(s) s, sizeof s - 1
  static const struct {
    const char *text;
    size_t len;
    unsigned px[4];
  } good[] = {
      {TEXT("P5\n2 2\n255#c\n\1\2\3\4"), {1, 2, 3, 4}},
      {TEXT("P5#c\n2#w\n2#h\n255#m\r\1\2\3\4"), {1, 2, 3, 4}},
      {TEXT("P5 2 2 255\n#\2\3\4"), {'#', 2, 3, 4}},
      {TEXT("P2\n2 2\n255#c\n1 2 3 4\n"), {1, 2, 3, 4}},
      {TEXT("P2 2 2 255#c\n# more\n1 2#x\n3 4"), {1, 2, 3, 4}},
  };
  const char *p = tpath("hdr.pgm");
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    write_bytes(p, good[i].text, good[i].len);
    Err err = {0};
    struct pxl_image *img;
    int rc = io_load(p, &img, &err);
    if (rc != PXL_OK) fail_msg("header %zu: %s", i, err.msg);
    assert_int_equal(img->width, 2);
    assert_int_equal(img->height, 2);
    for (int k = 0; k < 4; k++) assert_int_equal(sample(img, k % 2, k / 2, 0), good[i].px[k]);
    image_free(img);
  }
  static const struct {
    const char *text;
    size_t len;
  } bad[] = {
      {TEXT("P5\n2 2\n255#c")},         /* comment never ends: no samples */
      {TEXT("P5\v2 2 255\n\1\2\3\4")},  /* VT is not Netpbm whitespace */
      {TEXT("P5 2 2 255\f\1\2\3\4")},   /* nor FF */
      {TEXT("P5 2 2 255#c\n\1\2\3")},   /* one sample short after the comment */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    write_bytes(p, bad[i].text, bad[i].len);
    expect_load_error(p, PXL_EFORMAT);
  }
#undef TEXT
}

/* ---- setup ---- */

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

static int setup(void **state) {
  (void)state;
  const char *base = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/pxl_test_io.XXXXXX", base && *base ? base : "/tmp");
  return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  return nftw(tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_image_new),     cmocka_unit_test(test_png_round_trip),
      cmocka_unit_test(test_pnm_round_trip), cmocka_unit_test(test_jpeg_round_trip),
      cmocka_unit_test(test_pnm_ascii),     cmocka_unit_test(test_png_layouts),
      cmocka_unit_test(test_format_by_magic), cmocka_unit_test(test_truncated),
      cmocka_unit_test(test_garbage),       cmocka_unit_test(test_empty_missing),
      cmocka_unit_test(test_huge_dims),     cmocka_unit_test(test_save_errors),
      cmocka_unit_test(test_oom_load),      cmocka_unit_test(test_load_limits),
      cmocka_unit_test(test_save_full_disk), cmocka_unit_test(test_save_umask),
      cmocka_unit_test(test_save_signal),   cmocka_unit_test(test_png_crc),
      cmocka_unit_test(test_jpeg_missing_eoi), cmocka_unit_test(test_jpeg_scan_limit),
      cmocka_unit_test(test_pnm_header_comments),
  };
  return cmocka_run_group_tests_name("io", tests, setup, teardown);
}
