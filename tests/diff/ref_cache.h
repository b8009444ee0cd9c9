/*
 * ref_cache.h - for diff_test: the interpreter's results, kept on disk and shared by the
 * differential tests of one build.
 *
 * The same case (program, entry, border mode, size, inputs) runs on the interpreter in
 * diff_cpu_X, in each diff_opencl_X shard and again in the photo tests; the interpreter
 * is 98% of those tests' time. With PXL_TEST_REF_CACHE=DIR a result is computed once and
 * read back from DIR by the others. An entry's key hashes everything the result depends
 * on: the test program's own executable (so that any change to the interpreter, which is
 * linked into it, starts afresh), the source text, the entry, the border mode and every
 * input byte and argument value. An entry is written to a temporary file and renamed,
 * and carries its key, its length and a checksum: a torn, truncated or foreign file is
 * not used (the interpreter runs and the entry is written again).
 */
#ifndef PXL_TESTS_REF_CACHE_H
#define PXL_TESTS_REF_CACHE_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pxl/pxl.h"
#include "util/hash.h"

/* ---- a 128-bit key: two FNV-1a hashes (util/hash.h) from different starting values
 * (the cache is not adversarial) ---- */

typedef struct {
  uint64_t a, b;
} RefKey;

static void key_bytes(RefKey *k, const void *data, size_t n) {
  k->a = hash_bytes(k->a, data, n);
  k->b = hash_bytes(k->b, data, n);
}

static void key_str(RefKey *k, const char *s) { key_bytes(k, s ? s : "", s ? strlen(s) + 1 : 1); }
static void key_f64(RefKey *k, double v) { key_bytes(k, &v, sizeof v); }
static void key_int(RefKey *k, long v) { key_bytes(k, &v, sizeof v); }

static RefKey key_new(void) { return (RefKey){HASH_INIT, 0x84222325cbf29ce4ull}; }

/* The pixels of img (row by row, without the padding) and its shape. */
static void key_image(RefKey *k, pxl_image *img) {
  int w = pxl_image_width(img), h = pxl_image_height(img), c = pxl_image_channels(img);
  pxl_type t = pxl_image_type(img);
  key_int(k, w), key_int(k, h), key_int(k, c), key_int(k, t);
  size_t row = (size_t)w * c * pxl_type_size(t);
  for (int y = 0; y < h; y++) key_bytes(k, (const char *)pxl_image_data(img) + (size_t)y * pxl_image_pitch(img), row);
}

/* ---- the cache ---- */

static const char *ref_dir;  /* NULL: no cache */
static RefKey ref_exe;       /* hash of this executable */
static int ref_hits, ref_misses;

/* Opens the cache named by PXL_TEST_REF_CACHE, if any; without a readable executable to
 * hash there is no cache (results are then always computed). */
static void ref_cache_open(void) {
  const char *dir = getenv("PXL_TEST_REF_CACHE");
#ifdef PXL_REF_CACHE_DEFAULT
  if (!dir) dir = PXL_REF_CACHE_DEFAULT; /* the build's: set PXL_TEST_REF_CACHE= for none */
#endif
  if (!dir || !*dir) return;
  if (mkdir(dir, 0755) && errno != EEXIST) return;
  FILE *f = fopen("/proc/self/exe", "rb");
  if (!f) return;
  ref_exe = key_new();
  char buf[1 << 16];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) key_bytes(&ref_exe, buf, n);
  fclose(f);
  ref_dir = dir;
}

/* A result as the comparison needs it: the interpreter's status and message, and its
 * image, reduction or bins (live in a pxl_run_result, or read from the cache). */
typedef struct {
  int rc;
  char msg[256];
  pxl_result_kind kind;
  int nimg;            /* images: 1, or one per output of a kernel with several */
  pxl_image *img[8];
  pxl_scalar_result scalar;
  int nbins, float_bins;
  const double *bins;
  pxl_image *own_img[8]; /* read from the cache: freed with the result */
  double *own_bins;
} RefOut;

static void refout_free(RefOut *r) {
  for (int i = 0; i < 8; i++) pxl_image_free(r->own_img[i]);
  free(r->own_bins);
}

/* The parts of a live result rr (the run's status rc; rr NULL when it failed). */
static void refout_from_run(RefOut *r, pxl_context *ref, int rc, pxl_run_result *rr) {
  memset(r, 0, sizeof *r);
  r->rc = rc;
  if (rc) {
    snprintf(r->msg, sizeof r->msg, "%s", pxl_errmsg(ref));
    return;
  }
  r->kind = pxl_result_kind_of(rr);
  if (r->kind == PXL_RESULT_IMAGE) {
    r->nimg = pxl_result_image_count(rr);
    if (r->nimg > 8) r->nimg = 8;
    for (int i = 0; i < r->nimg; i++) r->img[i] = pxl_result_image_at(rr, i);
  }
  else if (r->kind == PXL_RESULT_SCALAR) pxl_result_scalar(rr, &r->scalar);
  else r->bins = pxl_result_bins(rr, &r->nbins, &r->float_bins);
}

/* A growing byte buffer for an entry. */
typedef struct {
  char *p;
  size_t n, cap;
  bool oom;
} RefBuf;

static void put(RefBuf *b, const void *data, size_t n) {
  if (b->oom) return;
  if (b->n + n > b->cap) {
    size_t cap = (b->n + n) * 2;
    char *p = realloc(b->p, cap);
    if (!p) {
      b->oom = true;
      return;
    }
    b->p = p, b->cap = cap;
  }
  memcpy(b->p + b->n, data, n);
  b->n += n;
}

/* Reads n bytes at *at from an entry of size len; false past its end. */
static bool take(const char *p, size_t len, size_t *at, void *out, size_t n) {
  if (n > len - *at) return false;
  memcpy(out, p + *at, n);
  *at += n;
  return true;
}

static const char ref_magic[8] = "PXLREF2"; /* 2: every image of a result, with their count */

static void ref_path(char *path, size_t n, RefKey k) {
  snprintf(path, n, "%s/%016llx%016llx", ref_dir, (unsigned long long)k.a, (unsigned long long)k.b);
}

/* The full key of a case: the executable's hash and the case's own. */
static RefKey ref_full_key(RefKey k) {
  key_bytes(&k, &ref_exe, sizeof ref_exe);
  return k;
}

/* Writes r under key k (nothing when there is no cache; failures only lose the entry). */
static void ref_cache_put(RefKey k, const RefOut *r) {
  if (!ref_dir) return;
  k = ref_full_key(k);
  RefBuf b = {0};
  put(&b, ref_magic, sizeof ref_magic);
  put(&b, &k, sizeof k);
  int32_t head[2] = {r->rc, r->kind};
  put(&b, head, sizeof head);
  if (r->rc) {
    put(&b, r->msg, sizeof r->msg);
  } else if (r->kind == PXL_RESULT_IMAGE) {
    int32_t nimg = r->nimg;
    put(&b, &nimg, sizeof nimg);
    for (int i = 0; i < r->nimg; i++) {
      pxl_image *img = r->img[i];
      int32_t shape[4] = {pxl_image_width(img), pxl_image_height(img), pxl_image_channels(img), pxl_image_type(img)};
      put(&b, shape, sizeof shape);
      size_t row = (size_t)shape[0] * shape[2] * pxl_type_size(pxl_image_type(img));
      for (int y = 0; y < shape[1]; y++)
        put(&b, (const char *)pxl_image_data(img) + (size_t)y * pxl_image_pitch(img), row);
    }
  } else if (r->kind == PXL_RESULT_SCALAR) {
    put(&b, &r->scalar, sizeof r->scalar);
  } else {
    int32_t bins[2] = {r->nbins, r->float_bins};
    put(&b, bins, sizeof bins);
    put(&b, r->bins, sizeof(double) * (size_t)r->nbins);
  }
  RefKey sum = key_new();
  key_bytes(&sum, b.p, b.n);
  put(&b, &sum, sizeof sum);
  if (!b.oom) {
    char path[4096], tmp[4200];
    ref_path(path, sizeof path, k);
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    bool ok = f && fwrite(b.p, 1, b.n, f) == b.n;
    if (f && fclose(f)) ok = false;
    if (!ok || rename(tmp, path)) remove(tmp);
  }
  free(b.p);
}

/* Reads the entry of key k into r; false (r untouched) when there is none or it is not
 * whole and consistent. */
static bool ref_cache_get(RefKey k, pxl_context *ctx, RefOut *r) {
  if (!ref_dir) return false;
  k = ref_full_key(k);
  char path[4096];
  ref_path(path, sizeof path, k);
  FILE *f = fopen(path, "rb");
  if (!f) {
    ref_misses++;
    return false;
  }
  char *p = NULL;
  size_t len = 0, cap = 0, n;
  char buf[1 << 16];
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
    if (len + n > cap) {
      cap = (len + n) * 2;
      char *q = realloc(p, cap);
      if (!q) break;
      p = q;
    }
    memcpy(p + len, buf, n);
    len += n;
  }
  fclose(f);
  RefOut o;
  memset(&o, 0, sizeof o);
  bool ok = p && len > sizeof(RefKey);
  RefKey sum = key_new(), stored;
  if (ok) {
    key_bytes(&sum, p, len - sizeof sum);
    memcpy(&stored, p + len - sizeof stored, sizeof stored);
    ok = sum.a == stored.a && sum.b == stored.b;
    len -= sizeof stored;
  }
  size_t at = 0;
  char magic[8];
  RefKey got;
  int32_t head[2];
  ok = ok && take(p, len, &at, magic, sizeof magic) && !memcmp(magic, ref_magic, sizeof magic) &&
       take(p, len, &at, &got, sizeof got) && got.a == k.a && got.b == k.b && take(p, len, &at, head, sizeof head);
  if (ok) {
    o.rc = head[0], o.kind = (pxl_result_kind)head[1];
    if (o.rc) {
      ok = take(p, len, &at, o.msg, sizeof o.msg);
      o.msg[sizeof o.msg - 1] = 0;
    } else if (o.kind == PXL_RESULT_IMAGE) {
      int32_t nimg = 0;
      ok = take(p, len, &at, &nimg, sizeof nimg) && nimg >= 1 && nimg <= 8;
      for (int i = 0; ok && i < nimg; i++) {
        int32_t s[4];
        ok = take(p, len, &at, s, sizeof s) && s[0] > 0 && s[1] > 0 && s[2] > 0 && s[2] <= 4 && s[3] >= 0 &&
             pxl_image_create(ctx, s[0], s[1], (pxl_type)s[3], s[2], &o.own_img[i]) == PXL_OK;
        size_t row = ok ? (size_t)s[0] * s[2] * pxl_type_size((pxl_type)s[3]) : 0;
        for (int y = 0; ok && y < s[1]; y++)
          ok = take(p, len, &at, (char *)pxl_image_data(o.own_img[i]) + (size_t)y * pxl_image_pitch(o.own_img[i]),
                    row);
        o.img[i] = o.own_img[i];
      }
      o.nimg = ok ? nimg : 0;
    } else if (o.kind == PXL_RESULT_SCALAR) {
      ok = take(p, len, &at, &o.scalar, sizeof o.scalar);
    } else if (o.kind == PXL_RESULT_HISTOGRAM) {
      int32_t bins[2];
      ok = take(p, len, &at, bins, sizeof bins) && bins[0] >= 0 && bins[0] <= (1 << 20) &&
           (o.own_bins = malloc(sizeof(double) * ((size_t)bins[0] + 1))) &&
           take(p, len, &at, o.own_bins, sizeof(double) * (size_t)bins[0]);
      o.nbins = ok ? bins[0] : 0, o.float_bins = ok ? bins[1] : 0, o.bins = o.own_bins;
    } else {
      ok = false;
    }
    ok = ok && at == len;
  }
  free(p);
  if (!ok) {
    refout_free(&o);
    ref_misses++;
    return false;
  }
  *r = o;
  ref_hits++;
  return true;
}

#endif
