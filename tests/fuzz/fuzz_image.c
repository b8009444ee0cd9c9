/*
 * fuzz_image.c - fuzz target for the image decoders (PNG, JPEG, PGM/PPM, TIFF, .npy) behind
 * io_load_memory, with a small self-contained mutation driver.
 *
 * Built with -DPXL_LIBFUZZER it is a plain libFuzzer target (clang -fsanitize=fuzzer).
 * Otherwise main() is a driver: `fuzz_image SECONDS SEEDS...` (files or directories)
 * mutates the seeds - bit flips, byte and "interesting value" writes, truncation,
 * insertion, deletion, duplication, splices of two seeds, PNG chunk CRC repair so
 * mutations get past the CRC check - mixed with random byte strings and injected
 * out-of-memory failures, for SECONDS seconds, and prints
 * "fuzz_image: N inputs, K crashes". Set PXL_FUZZ_SEED for another random sequence.
 *
 * The seeds come from tools/mksamples, plus four made by hand for paths it does not
 * write: prog_gray.jpg (progressive), prog_rgb_noeoi.jpg (progressive, final EOI marker
 * removed), comment.pgm (comments after magic, width and maxval) and text.png (a tEXt
 * chunk, so CRC checks of ancillary chunks are exercised); and three written with
 * tifffile/numpy for layouts pxl never writes: tiled_planar.tif (16x16 tiles, separate
 * planes, Deflate, big-endian f32 RGB), strips_be.tif (big-endian i16, 2-row strips,
 * uncompressed) and fortran_be.npy (big-endian u16, Fortran order, (4, 3, 3)).
 *
 * A crash is a signal (segfault, sanitizer abort) or a broken contract: a decoder that
 * succeeds without a valid image, fails without a message naming the input, or returns a
 * status a decoder must not. The input is written to fuzz_image-crash-*.bin in the
 * current directory.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "image/image.h"
#include "io/frames.h"
#include "io/imageio.h"
#include "util/alloc.h"

#define NAME "fuzz-input" /* file name the decoders see */

static unsigned long by_status[16]; /* inputs per io_load_memory status */

#ifdef PXL_LIBFUZZER
static void broken(const char *why) {
  fprintf(stderr, "fuzz_image: %s\n", why);
  abort();
}
#else
static const char *violation; /* contract broken by the last input, or NULL */

static void broken(const char *why) { violation = why; }
#endif

/* Decodes one input and checks the io_load_memory contract. */
/* A YUV4MPEG2 input: the frame reader (io/frames.h) over the bytes, every frame read
 * (at most 64): planes sized as the colour space says, messages naming the input. */
static void fuzz_frames(const uint8_t *data, size_t size) {
  FrameReader *r = NULL;
  Err err = {0};
  int rc = frames_open_memory(data, size, NAME, &r, &err);
  for (int k = 0; rc == PXL_OK && k < 64; k++) {
    struct pxl_image *p[FRAMES_MAX_PLANES];
    int got = 0;
    rc = frames_read(r, p, &got, &err);
    if (rc != PXL_OK || !got) break;
    const FrameInfo *in = frames_info(r);
    int cw, ch;
    frames_chroma_size(in->chroma, in->width, in->height, &cw, &ch);
    for (int i = 0; i < in->planes; i++) {
      int w = i ? cw : in->width, h = i ? ch : in->height;
      if (!p[i] || p[i]->width != w || p[i]->height != h || p[i]->type != PXL_U8 || p[i]->channels != 1)
        broken("a frame's plane of the wrong size");
      else {
        volatile uint8_t sink = ((uint8_t *)image_row(p[i], h - 1))[w - 1];
        (void)sink;
      }
      image_free(p[i]);
    }
  }
  frames_close(r);
  if (rc != PXL_OK) {
    if (rc != PXL_EFORMAT && rc != PXL_ETOOBIG && rc != PXL_ENOMEM) broken("unexpected status");
    if (err.code != rc || strncmp(err.msg, NAME ": ", sizeof NAME + 1) != 0) broken("message does not name the input");
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size >= 9 && memcmp(data, "YUV4MPEG2", 9) == 0) {
    fuzz_frames(data, size);
    return 0;
  }
  struct pxl_image *img = NULL;
  Err err = {0};
  int rc = io_load_memory(data, size, NAME, &img, &err);
  by_status[rc >= 0 && rc < 16 ? rc : 15]++;
  if (rc == PXL_OK) {
    if (!img) {
      broken("success without an image");
      return 0;
    }
    /* any pxl_type now (TIFF and .npy); image_check_dims refuses values outside the enum */
    if (image_check_dims(img->width, img->height, img->type, img->channels, NULL) != PXL_OK ||
        img->pitch % 64 != 0)
      broken("success with an invalid image");
    /* Touch the first and last element so ASan checks the buffer. */
    size_t last = (size_t)img->width * (size_t)img->channels * (size_t)pxl_type_size(img->type) - 1;
    volatile uint8_t sink = ((uint8_t *)img->data)[0];
    sink = ((uint8_t *)image_row(img, img->height - 1))[last];
    (void)sink;
    image_free(img);
  } else {
    if (img) broken("failure that returned an image");
    if (rc != PXL_EFORMAT && rc != PXL_ETOOBIG && rc != PXL_ENOMEM) broken("unexpected status");
    if (err.code != rc || strncmp(err.msg, NAME ": ", sizeof NAME + 1) != 0)
      broken("message does not name the input");
  }
  return 0;
}

#ifndef PXL_LIBFUZZER

#define FUZZ_NAME "fuzz_image" /* in the driver's messages and crash file names */
#define SLOW_SECONDS 2.0       /* an input decoding longer than this is reported */
#include "mutation_driver.h"

/* ---- mutations ---- */

static uint32_t crc32_of(const uint8_t *p, size_t n) {
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
  }
  return ~c;
}

/* Recomputes the CRC of every complete PNG chunk so mutations reach the decoder. */
static void fix_png_crcs(Buf *b) {
  if (b->n < 8 || memcmp(b->data, "\x89PNG", 4) != 0) return;
  for (size_t i = 8; i + 12 <= b->n;) {
    uint32_t len = (uint32_t)b->data[i] << 24 | (uint32_t)b->data[i + 1] << 16 |
                   (uint32_t)b->data[i + 2] << 8 | b->data[i + 3];
    if (len > b->n - i - 12) break;
    uint32_t crc = crc32_of(b->data + i + 4, len + 4);
    uint8_t *p = b->data + i + 8 + len;
    p[0] = (uint8_t)(crc >> 24), p[1] = (uint8_t)(crc >> 16), p[2] = (uint8_t)(crc >> 8),
    p[3] = (uint8_t)crc;
    i += 12 + len;
  }
}

static void insert(Buf *b, size_t at, const uint8_t *src, size_t k) {
  if (b->n + k > INPUT_LIMIT) k = INPUT_LIMIT - b->n;
  memmove(b->data + at + k, b->data + at, b->n - at);
  memcpy(b->data + at, src, k);
  b->n += k;
}

static void mutate_once(Buf *b) {
  static const uint32_t interesting[] = {0,     1,      2,     7,      8,          15,
                                         16,    127,    128,   255,    256,        1000,
                                         32767, 32768,  65535, 65536,  100000,     0x7fffffff,
                                         0x80000000u, 0xffffffffu};
  static const char *numbers[] = {"0", "1", "255", "256", "65535", "65536", "-1", "99999999999",
                                  "#", " ", "\n"};
  uint8_t tmp[64];
  switch (below(11)) {
  case 0: /* flip a bit */
    if (b->n) b->data[below(b->n)] ^= (uint8_t)(1u << below(8));
    break;
  case 1: /* random byte */
    if (b->n) b->data[below(b->n)] = (uint8_t)rnd();
    break;
  case 2: { /* interesting 8/16/32-bit big-endian value */
    uint32_t v = interesting[below(sizeof interesting / sizeof interesting[0])];
    size_t w = (size_t)1 << below(3);
    if (b->n < w) break;
    size_t at = below(b->n - w + 1);
    for (size_t i = 0; i < w; i++) b->data[at + i] = (uint8_t)(v >> (8 * (w - 1 - i)));
    break;
  }
  case 3: /* truncate */
    b->n = below(b->n + 1);
    break;
  case 4: { /* insert random bytes */
    size_t k = 1 + below(16);
    for (size_t i = 0; i < k; i++) tmp[i] = (uint8_t)rnd();
    insert(b, below(b->n + 1), tmp, k);
    break;
  }
  case 5: { /* delete a range */
    if (!b->n) break;
    size_t at = below(b->n), k = 1 + below(b->n - at < 64 ? b->n - at : 64);
    memmove(b->data + at, b->data + at + k, b->n - at - k);
    b->n -= k;
    break;
  }
  case 6: { /* duplicate a range */
    if (!b->n) break;
    size_t at = below(b->n), k = 1 + below(b->n - at < 64 ? b->n - at : 64);
    memcpy(tmp, b->data + at, k);
    insert(b, below(b->n + 1), tmp, k);
    break;
  }
  case 7: { /* splice: our prefix, another seed's suffix */
    const Buf *o = &seeds[below(nseeds)];
    size_t cut = below(b->n + 1), from = below(o->n + 1), k = o->n - from;
    if (cut + k > INPUT_LIMIT) k = INPUT_LIMIT - cut;
    memcpy(b->data + cut, o->data + from, k);
    b->n = cut + k;
    break;
  }
  case 8: { /* text token (PNM headers and ASCII samples) */
    const char *s = numbers[below(sizeof numbers / sizeof numbers[0])];
    insert(b, below(b->n + 1), (const uint8_t *)s, strlen(s));
    break;
  }
  case 9: /* overwrite a run with one value */
    if (b->n) {
      size_t at = below(b->n), k = 1 + below(b->n - at < 256 ? b->n - at : 256);
      memset(b->data + at, (int)(uint8_t)rnd(), k);
    }
    break;
  default: /* swap two bytes */
    if (b->n > 1) {
      size_t i = below(b->n), j = below(b->n);
      uint8_t t = b->data[i];
      b->data[i] = b->data[j];
      b->data[j] = t;
    }
    break;
  }
}

/* Fills b with the next input: a mutated seed, or random bytes (maybe after a magic). */
static void next_input(Buf *b) {
  static const char *magics[] = {"\x89PNG\r\n\x1a\n", "\xff\xd8\xff", "P5\n", "P6 ", "P2\n",
                                 "P3\n", "II*", "MM", "\x93NUMPY\x01"};
  size_t r = below(100);
  if (nseeds && r < 88) {
    const Buf *s = &seeds[below(nseeds)];
    memcpy(b->data, s->data, s->n);
    b->n = s->n;
    for (size_t k = 1 + below(6); k > 0; k--) mutate_once(b);
    if (below(2)) fix_png_crcs(b);
    return;
  }
  b->n = 0;
  if (r < 95) {
    const char *m = magics[below(sizeof magics / sizeof magics[0])];
    b->n = strlen(m);
    memcpy(b->data, m, b->n);
  }
  for (size_t k = below(300); k > 0; k--) b->data[b->n++] = (uint8_t)rnd();
}

int main(int argc, char **argv) {
  if (argc < 2 || atof(argv[1]) <= 0) {
    fprintf(stderr, "usage: fuzz_image SECONDS [SEED_FILE_OR_DIR...]\n");
    return 2;
  }
  double seconds = atof(argv[1]);
  const char *env = getenv("PXL_FUZZ_SEED");
  rng_state = env ? strtoull(env, NULL, 0) : 0x9e3779b97f4a7c15ull;
  if (!rng_state) rng_state = 1;
  for (int i = 2; i < argc; i++) add_seeds(argv[i]);
  static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) signal(sigs[i], on_signal);

  Buf b = {malloc(INPUT_LIMIT + 512), 0};
  if (!b.data) return 2;
  unsigned long inputs = 0, crashes = 0, slow = 0;
  double start = now();
  for (size_t i = 0; i < nseeds; i++) { /* the seeds themselves first */
    cur_data = seeds[i].data, cur_size = seeds[i].n;
    LLVMFuzzerTestOneInput(seeds[i].data, seeds[i].n);
    inputs++;
  }
  mutation_loop(&b, start, seconds, &inputs, &crashes, &slow);
  printf("fuzz_image: %lu inputs, %lu crashes\n", inputs, crashes);
  printf("fuzz_image: %lu decoded, %lu bad format, %lu too big, %lu out of memory\n",
         by_status[PXL_OK], by_status[PXL_EFORMAT], by_status[PXL_ETOOBIG], by_status[PXL_ENOMEM]);
  if (slow) printf("fuzz_image: %lu slow inputs\n", slow);
  for (size_t i = 0; i < nseeds; i++) free(seeds[i].data);
  free(seeds);
  free(b.data);
  return crashes ? 1 : 0;
}

#endif
