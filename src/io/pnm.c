/*
 * pnm.c - PGM/PPM (Netpbm P2 P3 P5 P6) reading and writing (see formats.h).
 *
 * The header grammar is Netpbm's (netpbm.sourceforge.net/doc/pgm.html, ppm.html): "Pn",
 * then width, height and maxval as decimal numbers, each after whitespace - blank, TAB,
 * CR or LF, nothing else - where a comment may stand wherever whitespace may: '#' up to
 * and including the next CR or LF. A single whitespace byte then ends the header and the
 * samples begin; a comment may take its place (as libnetpbm reads "255#c\n", the newline
 * ending the comment ends the header), but after that byte everything is samples, even a
 * '#'. Binary samples are one byte each for maxval < 256 and two (big-endian) otherwise;
 * plain (ASCII) samples are decimal numbers separated by whitespace (comments tolerated
 * there too, as libnetpbm does). Samples above maxval are errors. Images load as u8 for
 * maxval <= 255 and u16 above, rescaled to the full range when maxval is not 255 or 65535
 * (value / maxval is what a sample means). The header's size is checked against the
 * limits, and the data's length against the size, before any pixel allocation. Saving
 * writes P5 (1 channel) or P6 (3 channels) with maxval 255 for u8 and 65535 for u16; a
 * failed write is PXL_EIO with errno's reason.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "io/formats.h"
#include "util/alloc.h"

#define NUM_SATURATE 999999999u /* header numbers stop growing here (all are too big anyway) */

typedef struct {
  const uint8_t *p, *end; /* unread input */
  const char *name;       /* file name for messages */
} Cursor;

/* Netpbm whitespace: blank, TAB, CR, LF (not VT or FF, which C's isspace adds). */
static int is_space(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static int is_digit(uint8_t c) { return c >= '0' && c <= '9'; }

/* Skips a comment: '#' through the next CR or LF, which it includes. */
static void skip_comment(Cursor *c) {
  while (c->p < c->end && *c->p != '\n' && *c->p != '\r') c->p++;
  if (c->p < c->end) c->p++;
}

/* Skips whitespace and comments. */
static void skip_space(Cursor *c) {
  while (c->p < c->end) {
    if (is_space(*c->p))
      c->p++;
    else if (*c->p == '#')
      skip_comment(c);
    else
      break;
  }
}

static int truncated(const Cursor *c, Err *err) {
  return io_err(err, PXL_EFORMAT, c->name, "truncated PGM/PPM data");
}

/* Reads a decimal number after optional whitespace; `what` names it in messages. */
static int read_number(Cursor *c, const char *what, unsigned *out, Err *err) {
  skip_space(c);
  if (c->p >= c->end) return truncated(c, err);
  if (!is_digit(*c->p))
    return io_err(err, PXL_EFORMAT, c->name, "invalid PGM/PPM data: expected a number for the %s",
                  what);
  unsigned v = 0;
  while (c->p < c->end && is_digit(*c->p)) {
    unsigned d = (unsigned)(*c->p++ - '0');
    v = v > (NUM_SATURATE - d) / 10 ? NUM_SATURATE : v * 10 + d;
  }
  *out = v;
  return PXL_OK;
}

/* Converts a sample in 0..maxval to the image's range (0..255 or 0..65535). */
static unsigned rescale(unsigned v, unsigned maxval, unsigned outmax) {
  if (maxval == outmax) return v;
  return (unsigned)(((unsigned long long)v * outmax + maxval / 2) / maxval);
}

static void put_sample(struct pxl_image *img, int y, size_t i, unsigned v) {
  if (img->type == PXL_U8)
    ((uint8_t *)image_row(img, y))[i] = (uint8_t)v;
  else
    ((uint16_t *)image_row(img, y))[i] = (uint16_t)v;
}

/* Binary samples: one or two big-endian bytes each. The caller checked the length. */
static int read_binary(Cursor *c, struct pxl_image *img, unsigned maxval, Err *err) {
  size_t per_row = (size_t)img->width * (size_t)img->channels;
  unsigned outmax = img->type == PXL_U8 ? 255 : 65535;
  for (int y = 0; y < img->height; y++) {
    if (maxval == 255) {
      memcpy(image_row(img, y), c->p, per_row);
      c->p += per_row;
      continue;
    }
    for (size_t i = 0; i < per_row; i++) {
      unsigned v = maxval < 256 ? c->p[0] : (unsigned)c->p[0] << 8 | c->p[1];
      c->p += maxval < 256 ? 1 : 2;
      if (v > maxval)
        return io_err(err, PXL_EFORMAT, c->name,
                      "invalid PGM/PPM data: sample %u exceeds maxval %u", v, maxval);
      put_sample(img, y, i, rescale(v, maxval, outmax));
    }
  }
  return PXL_OK;
}

/* Plain (ASCII) samples. */
static int read_ascii(Cursor *c, struct pxl_image *img, unsigned maxval, Err *err) {
  size_t per_row = (size_t)img->width * (size_t)img->channels;
  unsigned outmax = img->type == PXL_U8 ? 255 : 65535;
  for (int y = 0; y < img->height; y++) {
    for (size_t i = 0; i < per_row; i++) {
      unsigned v;
      int rc = read_number(c, "sample", &v, err);
      if (rc != PXL_OK) return rc;
      if (v > maxval)
        return io_err(err, PXL_EFORMAT, c->name,
                      "invalid PGM/PPM data: sample %u exceeds maxval %u", v, maxval);
      put_sample(img, y, i, rescale(v, maxval, outmax));
    }
  }
  return PXL_OK;
}

int io_pnm_load(const uint8_t *buf, size_t n, const char *name, struct pxl_image **out,
                Err *err) {
  *out = NULL;
  Cursor c = {buf, buf + n, name};
  if (n < 2 || buf[0] != 'P' || !memchr("2356", buf[1], 4))
    return io_err(err, PXL_EFORMAT, name, "not a PGM/PPM file");
  int ascii = buf[1] == '2' || buf[1] == '3';
  int channels = buf[1] == '2' || buf[1] == '5' ? 1 : 3;
  c.p += 2;
  if (c.p < c.end && !is_space(*c.p) && *c.p != '#')
    return io_err(err, PXL_EFORMAT, name, "invalid PGM/PPM header");

  unsigned w, h, maxval;
  int rc = read_number(&c, "width", &w, err);
  if (rc == PXL_OK) rc = read_number(&c, "height", &h, err);
  if (rc == PXL_OK) rc = read_number(&c, "maxval", &maxval, err);
  if (rc != PXL_OK) return rc;
  if (maxval < 1 || maxval > 65535)
    return io_err(err, PXL_EFORMAT, name, "invalid PGM/PPM maxval %u (must be 1..65535)", maxval);
  if (w == 0 || h == 0)
    return io_err(err, PXL_EFORMAT, name, "invalid PGM/PPM size %ux%u", w, h);
  pxl_type type = maxval < 256 ? PXL_U8 : PXL_U16;
  rc = io_check_dims(name, (int)w, (int)h, type, channels, err);
  if (rc != PXL_OK) return rc;

  /* The single whitespace byte (or a comment) that ends the header. */
  if (c.p >= c.end) return truncated(&c, err);
  if (*c.p == '#') {
    skip_comment(&c);
    if (c.p[-1] != '\n' && c.p[-1] != '\r') return truncated(&c, err); /* never ended */
  } else if (is_space(*c.p)) {
    c.p++;
  } else {
    return io_err(err, PXL_EFORMAT, name, "invalid PGM/PPM header");
  }
  /* Enough data for every sample? (ASCII: at least a digit each and separators.) */
  unsigned long long samples = (unsigned long long)w * h * (unsigned)channels;
  unsigned long long need = ascii ? samples * 2 - 1 : samples * (maxval < 256 ? 1 : 2);
  if ((unsigned long long)(c.end - c.p) < need) return truncated(&c, err);

  struct pxl_image *img;
  rc = io_image_new(name, (int)w, (int)h, type, channels, &img, err);
  if (rc != PXL_OK) return rc;
  rc = ascii ? read_ascii(&c, img, maxval, err) : read_binary(&c, img, maxval, err);
  if (rc != PXL_OK) {
    image_free(img);
    return rc;
  }
  *out = img;
  return PXL_OK;
}

int io_pnm_save(FILE *f, const struct pxl_image *img, const char *name, Err *err) {
  int wide = img->type == PXL_U16;
  size_t per_row = (size_t)img->width * (size_t)img->channels;
  uint8_t *be = NULL;
  errno = 0;
  if (wide && !(be = PXL_MALLOC(per_row * 2)))
    return io_err(err, PXL_ENOMEM, name, "out of memory encoding PGM/PPM");
  int ok = fprintf(f, "P%c\n%d %d\n%d\n", img->channels == 1 ? '5' : '6', img->width,
                   img->height, wide ? 65535 : 255) > 0;
  for (int y = 0; ok && y < img->height; y++) {
    if (!wide) {
      ok = fwrite(image_row(img, y), 1, per_row, f) == per_row;
      continue;
    }
    const uint16_t *src = image_row(img, y);
    for (size_t i = 0; i < per_row; i++) {
      be[2 * i] = (uint8_t)(src[i] >> 8);
      be[2 * i + 1] = (uint8_t)src[i];
    }
    ok = fwrite(be, 1, per_row * 2, f) == per_row * 2;
  }
  int e = errno; /* of the failed write; PXL_FREE may change it */
  PXL_FREE(be);
  return ok ? PXL_OK : io_write_error(err, name, e);
}
