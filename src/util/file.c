/*
 * file.c - see file.h.
 */
#define _POSIX_C_SOURCE 200809L
#include "util/file.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pxl/pxl.h"
#include "util/alloc.h"

int file_make_dirs(const char *dir, Err *err) {
  char tmp[4096];
  size_t n = strlen(dir);
  if (n >= sizeof tmp) return err_set(err, PXL_EIO, "cache directory name too long");
  memcpy(tmp, dir, n + 1);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(tmp, 0755) && errno != EEXIST) return err_set(err, PXL_EIO, "%s: %s", tmp, strerror(errno));
    *p = '/';
  }
  if (mkdir(tmp, 0755) && errno != EEXIST) return err_set(err, PXL_EIO, "%s: %s", tmp, strerror(errno));
  return PXL_OK;
}

int file_write_atomic(const char *path, const void *data, size_t n, Err *err) {
  char tmp[4400];
  snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "wb");
  if (!f) return err_set(err, PXL_EIO, "%s: %s", tmp, strerror(errno));
  size_t w = fwrite(data, 1, n, f);
  if (fclose(f) != 0 || w != n) {
    remove(tmp);
    return err_set(err, PXL_EIO, "%s: write failed", tmp);
  }
  if (rename(tmp, path)) {
    int e = errno;
    remove(tmp);
    return err_set(err, PXL_EIO, "%s: %s", path, strerror(e));
  }
  return PXL_OK;
}

char *file_read_all(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len + 4096 + 1 > cap) {
      size_t ncap = cap ? cap * 2 : 16384;
      char *nb = PXL_REALLOC(buf, ncap);
      if (!nb) {
        PXL_FREE(buf);
        fclose(f);
        return NULL;
      }
      buf = nb;
      cap = ncap;
    }
    size_t r = fread(buf + len, 1, cap - len - 1, f);
    len += r;
    if (r == 0) break;
  }
  bool bad = ferror(f);
  fclose(f);
  if (bad) {
    PXL_FREE(buf);
    return NULL;
  }
  buf[len] = 0;
  if (n) *n = len;
  return buf;
}
