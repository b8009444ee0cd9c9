/*
 * npy.c - NumPy .npy arrays as images (see formats.h).
 *
 * The format (numpy.org/doc/stable/reference/generated/numpy.lib.format.html): the magic
 * "\x93NUMPY", a major and minor version byte, the header's length (2 bytes little-endian
 * in version 1.0, 4 bytes in 2.0 and 3.0), then the header - a Python dict literal
 * padded with spaces and ended by '\n' - then the array's elements, raw.
 *
 * The header is untrusted, so it is parsed by a small exact grammar, not evaluated:
 *   '{' KEY ':' VALUE (',' KEY ':' VALUE)* ','? '}' ' '* '\n'
 * with optional blanks between tokens, the three keys 'descr', 'fortran_order' and
 * 'shape' each exactly once, descr a quoted string naming one of the element types
 * below, fortran_order True or False, shape a tuple of 2 or 3 decimal integers. Anything
 * else (other keys, escapes, nested structures, record dtypes, headers over 10000 bytes,
 * as NumPy's own reader limits them) is refused. An array of shape (H, W) is a 1-channel
 * image, (H, W, C) has C = 1, 3 or 4 channels. Elements: unsigned u1 u2 u4, signed i2 i4,
 * float f4 f8, little-endian ('<'), big-endian ('>', byte-swapped on load) or, for one
 * byte, '|'. Vectors (shape (N,), (N, 1) or (1, N), io_npy_load_vector) also take b1, i1,
 * i8, u8 and f2, converted to f32 or f64. Fortran (column-major) arrays are transposed on load. The data must be
 * exactly H*W*C elements long: short data is truncated and trailing bytes are refused.
 *
 * Saving writes what numpy.save writes: version 1.0, the header padded so that the data
 * starts at a multiple of 64 bytes, C order, shape (H, W) for one channel and (H, W, C)
 * otherwise, elements in host byte order ('<' on the machines pxl runs on; '|u1' for u8).
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "io/formats.h"
#include "util/alloc.h"

#define NPY_HEADER_LIMIT 10000 /* longest header read, as numpy.lib.format's default */
#define NPY_ALIGN 64           /* data offset alignment of written files */

/* Element types: pxl type and the dtype's kind letter and size. */
static const struct {
  pxl_type type;
  char kind;
  int size;
  bool vector_only; /* read as vectors (converted to f32 or f64), never as images */
} npy_types[] = {
    {PXL_U8, 'u', 1, false},  {PXL_U16, 'u', 2, false}, {PXL_I16, 'i', 2, false}, {PXL_I32, 'i', 4, false},
    {PXL_U32, 'u', 4, false}, {PXL_F32, 'f', 4, false}, {PXL_F64, 'f', 8, false}, {PXL_F64, 'b', 1, true},
    {PXL_F64, 'i', 1, true},  {PXL_F64, 'i', 8, true},  {PXL_F64, 'u', 8, true},  {PXL_F64, 'f', 2, true},
};
#define NNPY_TYPES (sizeof npy_types / sizeof npy_types[0])

static int host_is_little(void) {
  const uint16_t one = 1;
  return *(const uint8_t *)&one == 1;
}

/* What a header says. */
typedef struct {
  int type;            /* index in npy_types, -1 until descr is read */
  int swap;            /* elements are in the other byte order */
  int fortran;         /* 1: column-major, 0: C order, -1 until read */
  int ndim;            /* shape's length, -1 until read */
  char descr[16];      /* the descr as written, for messages */
  unsigned long long shape[3];
} Header;

typedef struct {
  const char *p, *end; /* unread header text */
  const char *name;    /* file name for messages */
  Err *err;
} Parser;

static int bad_header(Parser *ps, const char *what) {
  return io_err(ps->err, PXL_EFORMAT, ps->name, "invalid .npy header: %s", what);
}

static void skip_blanks(Parser *ps) {
  while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t')) ps->p++;
}

/* Consumes character ch after optional blanks; 1 if it was there. */
static int accept(Parser *ps, char ch) {
  skip_blanks(ps);
  if (ps->p < ps->end && *ps->p == ch) {
    ps->p++;
    return 1;
  }
  return 0;
}

/* A quoted string without escapes into out (at most cap - 1 characters). */
static int parse_string(Parser *ps, char *out, size_t cap) {
  skip_blanks(ps);
  if (ps->p >= ps->end || (*ps->p != '\'' && *ps->p != '"')) return bad_header(ps, "expected a quoted string");
  char q = *ps->p++;
  size_t k = 0;
  while (ps->p < ps->end && *ps->p != q) {
    if (*ps->p == '\\' || (unsigned char)*ps->p < 0x20 || (unsigned char)*ps->p >= 0x7f)
      return bad_header(ps, "unsupported character in a string");
    if (k + 1 >= cap) return bad_header(ps, "string too long");
    out[k++] = *ps->p++;
  }
  if (ps->p >= ps->end) return bad_header(ps, "unterminated string");
  ps->p++;
  out[k] = '\0';
  return PXL_OK;
}

static int parse_descr(Parser *ps, Header *h) {
  char d[16];
  int rc = parse_string(ps, d, sizeof d);
  if (rc != PXL_OK) return rc;
  size_t len = strlen(d);
  for (size_t i = 0; len == 3 && i < NNPY_TYPES; i++) {
    if (d[1] != npy_types[i].kind || d[2] != '0' + npy_types[i].size) continue;
    int one = npy_types[i].size == 1;
    if (d[0] != '<' && d[0] != '>' && !(one && d[0] == '|')) break;
    h->type = (int)i;
    h->swap = !one && (d[0] == '>') == host_is_little();
    memcpy(h->descr, d, sizeof h->descr);
    return PXL_OK;
  }
  return io_err(ps->err, PXL_EFORMAT, ps->name,
                "unsupported .npy element type '%s' (pxl reads u1 u2 u4 i2 i4 f4 f8, "
                "little- or big-endian; vectors also b1 i1 i8 u8 f2)",
                d);
}

static int parse_bool(Parser *ps, int *out) {
  skip_blanks(ps);
  size_t left = (size_t)(ps->end - ps->p);
  if (left >= 4 && memcmp(ps->p, "True", 4) == 0) {
    ps->p += 4;
    *out = 1;
  } else if (left >= 5 && memcmp(ps->p, "False", 5) == 0) {
    ps->p += 5;
    *out = 0;
  } else {
    return bad_header(ps, "fortran_order must be True or False");
  }
  return PXL_OK;
}

/* A tuple of decimal integers: "()", "(N,)", "(N, M)", "(N, M, K)" (trailing comma
 * optional past one element). At most 3 are kept; more is an error. */
static int parse_shape(Parser *ps, Header *h) {
  if (!accept(ps, '(')) return bad_header(ps, "shape must be a tuple");
  h->ndim = 0;
  if (accept(ps, ')')) return PXL_OK;
  for (;;) {
    skip_blanks(ps);
    if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
      return bad_header(ps, "shape must hold non-negative integers");
    unsigned long long v = 0;
    int digits = 0;
    while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
      if (++digits > 18) return bad_header(ps, "shape dimension too large");
      v = v * 10 + (unsigned)(*ps->p++ - '0');
    }
    if (h->ndim == 3)
      return io_err(ps->err, PXL_EFORMAT, ps->name,
                    "unsupported .npy shape: more than 3 dimensions (pxl reads (H, W) or (H, W, C))");
    h->shape[h->ndim++] = v;
    int comma = accept(ps, ',');
    if (accept(ps, ')')) {
      if (h->ndim == 1 && !comma) return bad_header(ps, "a one-element shape needs a comma");
      return PXL_OK;
    }
    if (!comma) return bad_header(ps, "expected ',' or ')' in shape");
  }
}

/* The dict: every key once, in any order. */
static int parse_dict(Parser *ps, Header *h) {
  if (!accept(ps, '{')) return bad_header(ps, "expected '{'");
  int seen = 0, rc;
  while (!accept(ps, '}')) {
    char key[32];
    if ((rc = parse_string(ps, key, sizeof key)) != PXL_OK) return rc;
    if (!accept(ps, ':')) return bad_header(ps, "expected ':' after a key");
    int bit = strcmp(key, "descr") == 0 ? 1 : strcmp(key, "fortran_order") == 0 ? 2
              : strcmp(key, "shape") == 0 ? 4 : 0;
    if (!bit) return bad_header(ps, "unknown key (expected 'descr', 'fortran_order', 'shape')");
    if (seen & bit) return bad_header(ps, "repeated key");
    seen |= bit;
    rc = bit == 1 ? parse_descr(ps, h) : bit == 2 ? parse_bool(ps, &h->fortran) : parse_shape(ps, h);
    if (rc != PXL_OK) return rc;
    if (!accept(ps, ',')) {
      if (!accept(ps, '}')) return bad_header(ps, "expected ',' or '}'");
      break;
    }
  }
  if (seen != 7) return bad_header(ps, "missing 'descr', 'fortran_order' or 'shape'");
  while (ps->p < ps->end && *ps->p == ' ') ps->p++;
  if (ps->p + 1 != ps->end || *ps->p != '\n') return bad_header(ps, "text after the dict");
  return PXL_OK;
}

/* Copies one element, byte-swapped when asked. */
static void put_elem(uint8_t *dst, const uint8_t *src, int size, int swap) {
  if (!swap) {
    memcpy(dst, src, (size_t)size);
    return;
  }
  for (int k = 0; k < size; k++) dst[k] = src[size - 1 - k];
}

/* The magic, version and header of a .npy file in buf: *h, and where the data starts. */
static int read_header(const uint8_t *buf, size_t n, const char *name, Header *h, size_t *data, Err *err) {
  if (n < 10 || memcmp(buf, "\x93NUMPY", 6) != 0) return io_err(err, PXL_EFORMAT, name, "not a .npy file");
  unsigned major = buf[6], minor = buf[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    return io_err(err, PXL_EFORMAT, name, "unsupported .npy format version %u.%u (pxl reads 1.0, 2.0, 3.0)",
                  major, minor);
  size_t pre = major == 1 ? 10 : 12;
  if (n < pre) return io_err(err, PXL_EFORMAT, name, "truncated .npy header");
  size_t hlen = major == 1 ? (size_t)buf[8] | (size_t)buf[9] << 8
                           : (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
  if (hlen > NPY_HEADER_LIMIT)
    return io_err(err, PXL_EFORMAT, name, "invalid .npy header: %zu bytes long (at most %d read)", hlen,
                  NPY_HEADER_LIMIT);
  if (hlen > n - pre) return io_err(err, PXL_EFORMAT, name, "truncated .npy header");
  *h = (Header){.type = -1, .fortran = -1, .ndim = -1};
  Parser ps = {(const char *)buf + pre, (const char *)buf + pre + hlen, name, err};
  *data = pre + hlen;
  return parse_dict(&ps, h);
}

int io_npy_load(const uint8_t *buf, size_t n, const char *name, struct pxl_image **out,
                Err *err) {
  *out = NULL;
  Header h;
  size_t pre_hlen;
  int rc = read_header(buf, n, name, &h, &pre_hlen, err);
  if (rc != PXL_OK) return rc;
  if (npy_types[h.type].vector_only)
    return io_err(err, PXL_EFORMAT, name,
                  "unsupported .npy element type '%s' for an image (pxl reads u1 u2 u4 i2 i4 f4 f8, "
                  "little- or big-endian)",
                  h.descr);
  if (h.ndim != 2 && h.ndim != 3)
    return io_err(err, PXL_EFORMAT, name, "unsupported .npy shape: %d dimension%s (pxl reads (H, W) or (H, W, C))",
                  h.ndim, h.ndim == 1 ? "" : "s");
  unsigned long long H = h.shape[0], W = h.shape[1], C = h.ndim == 3 ? h.shape[2] : 1;
  if (C != 1 && C != 3 && C != 4)
    return io_err(err, PXL_EFORMAT, name, "unsupported .npy shape: %llu channels (pxl images have 1, 3 or 4)", C);
  if (H == 0 || W == 0) return io_err(err, PXL_EFORMAT, name, "invalid image size %llux%llu", W, H);
  pxl_type type = npy_types[h.type].type;
  int es = npy_types[h.type].size;
  rc = io_check_dims(name, W > INT_MAX ? INT_MAX : (int)W, H > INT_MAX ? INT_MAX : (int)H, type, (int)C, err);
  if (rc != PXL_OK) return rc;
  /* dims are within the limits now, so this product cannot overflow */
  unsigned long long need = H * W * C * (unsigned long long)es, have = n - pre_hlen;
  if (have < need)
    return io_err(err, PXL_EFORMAT, name, "truncated .npy data (%llu bytes, the shape needs %llu)", have, need);
  if (have > need)
    return io_err(err, PXL_EFORMAT, name, "invalid .npy file: %llu bytes after the array's %llu", have - need, need);

  struct pxl_image *img;
  rc = io_image_new(name, (int)W, (int)H, type, (int)C, &img, err);
  if (rc != PXL_OK) return rc;
  const uint8_t *data = buf + pre_hlen;
  size_t row = (size_t)W * (size_t)C * (size_t)es;
  for (size_t y = 0; y < H; y++) {
    uint8_t *dst = image_row(img, (int)y);
    if (!h.fortran && !h.swap) {
      memcpy(dst, data + y * row, row);
      continue;
    }
    for (size_t x = 0; x < W; x++)
      for (size_t c = 0; c < C; c++) {
        /* C order: ((y * W) + x) * C + c; Fortran order: y + H * (x + W * c) */
        size_t at = h.fortran ? y + (size_t)H * (x + (size_t)W * c) : (y * W + x) * C + c;
        put_elem(dst + (x * C + c) * (size_t)es, data + at * (size_t)es, es, h.swap);
      }
  }
  *out = img;
  return PXL_OK;
}

/* Writes the magic, version 1.0 and the header of an array of element type t (an index
 * in npy_types) and shape (its tuple's text), padded so that the data starts at a
 * multiple of NPY_ALIGN; 1 when every byte was written (errno says why not). */
static int write_header(FILE *f, size_t t, const char *shape) {
  char dict[160];
  int len = snprintf(dict, sizeof dict, "{'descr': '%c%c%d', 'fortran_order': False, 'shape': %s, }",
                     npy_types[t].size == 1 ? '|' : host_is_little() ? '<' : '>', npy_types[t].kind,
                     npy_types[t].size, shape);
  /* magic (6) + version (2) + length (2) + dict + spaces + '\n' is a multiple of 64 */
  size_t hlen = ((10 + (size_t)len + 1 + NPY_ALIGN - 1) / NPY_ALIGN) * NPY_ALIGN - 10;
  uint8_t pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (uint8_t)hlen, (uint8_t)(hlen >> 8)};
  errno = 0;
  int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(dict, 1, (size_t)len, f) == (size_t)len;
  for (size_t k = (size_t)len; ok && k + 1 < hlen; k++) ok = fputc(' ', f) != EOF;
  return ok && fputc('\n', f) != EOF;
}

/* The npy_types index of an image type pxl saves (not a vector-only one); NNPY_TYPES if none. */
static size_t saved_type(pxl_type type) {
  size_t i = 0;
  while (i < NNPY_TYPES && (npy_types[i].type != type || npy_types[i].vector_only)) i++;
  return i;
}

int io_npy_save(FILE *f, const struct pxl_image *img, const char *name, Err *err) {
  size_t i = saved_type(img->type);
  if (i == NNPY_TYPES) return io_err(err, PXL_EARG, name, ".npy cannot store this type");
  char shape[64];
  if (img->channels == 1)
    snprintf(shape, sizeof shape, "(%d, %d)", img->height, img->width);
  else
    snprintf(shape, sizeof shape, "(%d, %d, %d)", img->height, img->width, img->channels);
  size_t row = (size_t)img->width * (size_t)img->channels * (size_t)pxl_type_size(img->type);
  int ok = write_header(f, i, shape);
  for (int y = 0; ok && y < img->height; y++) ok = fwrite(image_row(img, y), 1, row, f) == row;
  return ok ? PXL_OK : io_write_error(err, name, errno);
}

/* An IEEE half (binary16) as double, exactly. */
static double half_value(uint16_t h) {
  int e = h >> 10 & 0x1f, m = h & 0x3ff;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m | 0x400, e - 25);
  return h >> 15 ? -v : v;
}

/* One element of npy type t at src (byte-swapped when asked) as double (64-bit integers
 * rounded to the nearest double). */
static double elem_value(const uint8_t *src, int t, int swap) {
  uint8_t b[8];
  put_elem(b, src, npy_types[t].size, swap);
  char kind = npy_types[t].kind;
  switch (npy_types[t].size * 4 + (kind == 'f' ? 0 : kind == 'u' ? 1 : kind == 'i' ? 2 : 3)) {
  case 4 * 1 + 3: return b[0] != 0;
  case 4 * 1 + 1: return b[0];
  case 4 * 1 + 2: return (int8_t)b[0];
  case 4 * 2 + 0: { uint16_t v; memcpy(&v, b, 2); return half_value(v); }
  case 4 * 2 + 1: { uint16_t v; memcpy(&v, b, 2); return v; }
  case 4 * 2 + 2: { int16_t v; memcpy(&v, b, 2); return v; }
  case 4 * 4 + 0: { float v; memcpy(&v, b, 4); return v; }
  case 4 * 4 + 1: { uint32_t v; memcpy(&v, b, 4); return v; }
  case 4 * 4 + 2: { int32_t v; memcpy(&v, b, 4); return v; }
  case 4 * 8 + 1: { uint64_t v; memcpy(&v, b, 8); return (double)v; }
  case 4 * 8 + 2: { int64_t v; memcpy(&v, b, 8); return (double)v; }
  default: { double v; memcpy(&v, b, 8); return v; }
  }
}

int io_npy_load_vector(const uint8_t *buf, size_t n, const char *name, pxl_type type, void **out, int64_t *len,
                       Err *err) {
  *out = NULL;
  *len = 0;
  Header h;
  size_t pre_hlen;
  int rc = read_header(buf, n, name, &h, &pre_hlen, err);
  if (rc != PXL_OK) return rc;
  if (type != PXL_F32 && type != PXL_F64) return io_err(err, PXL_EARG, name, "vectors are f32 or f64");
  /* (N,), (N, 1) and (1, N): a vector either way */
  bool vec = h.ndim == 1 || (h.ndim == 2 && (h.shape[0] == 1 || h.shape[1] == 1));
  if (!vec)
    return io_err(err, PXL_EFORMAT, name, "a vector must have shape (N,), (N, 1) or (1, N), not %d dimensions%s",
                  h.ndim, h.ndim == 2 ? " of more than one element each" : "");
  unsigned long long N = h.ndim == 1 ? h.shape[0] : h.shape[0] * h.shape[1];
  if (N > (unsigned long long)INT32_MAX)
    return io_err(err, PXL_ETOOBIG, name, "a vector of %llu elements (at most %d)", N, INT32_MAX);
  int es = npy_types[h.type].size;
  unsigned long long need = N * (unsigned long long)es, have = n - pre_hlen;
  if (have < need)
    return io_err(err, PXL_EFORMAT, name, "truncated .npy data (%llu bytes, the shape needs %llu)", have, need);
  if (have > need)
    return io_err(err, PXL_EFORMAT, name, "invalid .npy file: %llu bytes after the array's %llu", have - need, need);
  size_t os = type == PXL_F32 ? 4 : 8;
  void *v = PXL_MALLOC(N ? (size_t)N * os : 1);
  if (!v) return io_err(err, PXL_ENOMEM, name, "out of memory for a vector of %llu elements", N);
  /* (1, N) and (N, 1) hold their elements in order in either memory order */
  for (size_t k = 0; k < N; k++) {
    double d = elem_value(buf + pre_hlen + k * (size_t)es, h.type, h.swap);
    if (type == PXL_F32)
      ((float *)v)[k] = (float)d;
    else
      ((double *)v)[k] = d;
  }
  *out = v;
  *len = (int64_t)N;
  return PXL_OK;
}

int io_npy_save_vector(FILE *f, const void *v, int64_t len, int64_t cols, pxl_type type, const char *name,
                       Err *err) {
  if (type != PXL_F32 && type != PXL_F64) return io_err(err, PXL_EARG, name, "vectors are f32 or f64");
  char shape[64];
  if (cols > 0)
    snprintf(shape, sizeof shape, "(%lld, %lld)", (long long)(len / cols), (long long)cols);
  else
    snprintf(shape, sizeof shape, "(%lld,)", (long long)len);
  size_t es = (size_t)pxl_type_size(type);
  int ok = write_header(f, saved_type(type), shape) && fwrite(v, es, (size_t)len, f) == (size_t)len;
  return ok ? PXL_OK : io_write_error(err, name, errno);
}
