/*
 * cache.c - the compiled-kernel cache's directory and entries (see cache.h).
 *
 * Why the checks are where they are: an entry is loaded as code (dlopen, the OpenCL
 * driver, cuModuleLoadData), so a file someone else could write is someone else's code
 * running as this user. The directory is checked once, when opened; each entry again as
 * it is read, on the descriptor the bytes come from (fstat), so that what is checked is
 * what is read; the bytes are hashed and compared with the sum file, and only those bytes
 * are handed to the backend (the CPU backend writes them to a file of its own to dlopen:
 * nothing that happens to the entry afterwards reaches the loaded code).
 */
#define _GNU_SOURCE
#include "runtime/cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pxl/pxl.h"
#include "util/alloc.h"
#include "util/file.h"
#include "util/hash.h"

#define ENTRY_CAP (512u << 20) /* the largest entry read: a module, PTX or binary is far smaller */
#define SUM_CAP 512u

struct Cache {
  char dir[4096];    /* the directory in use */
  char wanted[4096]; /* the cache directory asked for; "" when there was none (no HOME) */
  bool temp;         /* dir is a private mkdtemp directory: removed by cache_free */
  Warn *warn;        /* where warnings go (the context's) */
};

const char *cache_dir_in_use(const Cache *c) { return c->dir; }

/* The default cache directory into buf; false when none of the variables is set. */
static bool default_dir(char *buf, size_t n) {
  const char *e = getenv("PXL_CACHE_DIR");
  if (e && *e) return snprintf(buf, n, "%s", e), true;
  if ((e = getenv("XDG_CACHE_HOME")) && *e) return snprintf(buf, n, "%s/pxl", e), true;
  if ((e = getenv("HOME")) && *e) return snprintf(buf, n, "%s/.cache/pxl", e), true;
  return false;
}

/* Whether path is a directory pxl may trust: a real directory (no symbolic link), owned
 * by the effective user, not writable by group or others. If not, why[] says why. */
static bool trusted_dir(const char *path, char *why, size_t n) {
  struct stat st;
  if (lstat(path, &st)) return snprintf(why, n, "cannot be examined: %s", strerror(errno)), false;
  if (S_ISLNK(st.st_mode)) return snprintf(why, n, "is a symbolic link"), false;
  if (!S_ISDIR(st.st_mode)) return snprintf(why, n, "is not a directory"), false;
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 || fstat(fd, &st)) {
    int e = errno;
    if (fd >= 0) close(fd);
    return snprintf(why, n, "cannot be opened: %s", strerror(e)), false;
  }
  close(fd);
  if (st.st_uid != geteuid())
    return snprintf(why, n, "is owned by uid %u, not by this user (uid %u)", (unsigned)st.st_uid,
                    (unsigned)geteuid()),
           false;
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return snprintf(why, n, "is writable by its group or by others (mode %04o)", (unsigned)(st.st_mode & 07777)),
           false;
  return true;
}

/* Makes a fresh private directory (mkdtemp, 0700) under $TMPDIR, else /tmp, as c->dir. */
static int make_private(Cache *c, Err *err) {
  const char *bases[2] = {getenv("TMPDIR"), "/tmp"};
  int e = 0;
  for (int i = 0; i < 2; i++) {
    if (!bases[i] || !*bases[i]) continue;
    char tmpl[4096], why[256];
    if (snprintf(tmpl, sizeof tmpl, "%s/pxl-cache-XXXXXX", bases[i]) >= (int)sizeof tmpl) continue;
    if (!mkdtemp(tmpl)) {
      e = errno;
      continue;
    }
    if (!trusted_dir(tmpl, why, sizeof why)) { /* cannot happen short of a hostile TMPDIR */
      rmdir(tmpl);
      e = EPERM;
      continue;
    }
    snprintf(c->dir, sizeof c->dir, "%s", tmpl);
    c->temp = true;
    return PXL_OK;
  }
  return err_set(err, PXL_EIO, "no private temporary directory for compiled kernels (TMPDIR, /tmp): %s",
                 strerror(e ? e : ENOENT));
}

/* Leaves the cache directory for a private one, with a warning naming it and why. */
static int fall_back(Cache *c, const char *why, Err *err) {
  if (c->temp) return err_set(err, PXL_EIO, "%s", why); /* the private directory itself failed */
  Err e = {0};
  if (make_private(c, &e))
    return err_set(err, PXL_EIO, "cache directory %s not usable (%s), and %s", c->wanted, why, e.msg);
  warn_add(c->warn, "cache directory %s not used (%s): compiled kernels go to %s, removed afterwards", c->wanted, why,
           c->dir);
  return PXL_OK;
}

int cache_open(const char *explicit_dir, Warn *w, Cache **out, Err *err) {
  *out = NULL;
  Cache *c = PXL_CALLOC(1, sizeof *c);
  if (!c) return err_set(err, PXL_ENOMEM, "out of memory");
  c->warn = w;
  int rc = PXL_OK;
  if (explicit_dir && *explicit_dir) snprintf(c->wanted, sizeof c->wanted, "%s", explicit_dir);
  else if (!default_dir(c->wanted, sizeof c->wanted)) c->wanted[0] = 0;
  size_t n = strlen(c->wanted);
  while (n > 1 && c->wanted[n - 1] == '/') c->wanted[--n] = 0; /* "dir/" would follow a link */
  if (!n) {
    rc = make_private(c, err); /* no HOME: a fresh directory, never a predictable name */
  } else {
    Err e = {0};
    char why[1200];
    if (file_make_dirs(c->wanted, 0700, &e)) snprintf(why, sizeof why, "cannot be created: %.900s", e.msg);
    else if (trusted_dir(c->wanted, why, sizeof why)) snprintf(c->dir, sizeof c->dir, "%s", c->wanted);
    if (!c->dir[0]) rc = fall_back(c, why, err);
  }
  if (rc) {
    PXL_FREE(c);
    return rc;
  }
  *out = c;
  return PXL_OK;
}

void cache_free(Cache *c) {
  if (!c) return;
  DIR *d = c->temp ? opendir(c->dir) : NULL;
  for (struct dirent *e; d && (e = readdir(d));)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) unlinkat(dirfd(d), e->d_name, 0);
  if (d) closedir(d);
  if (c->temp) rmdir(c->dir);
  PXL_FREE(c);
}

/* ---- entries ---- */

enum { READ_OK, READ_MISSING, READ_BAD, READ_UNTRUSTED };

/* Reads path through one descriptor: READ_OK with its bytes, READ_MISSING, READ_BAD
 * (unreadable, too large) or READ_UNTRUSTED (a link, not a regular file, another owner,
 * writable by others), with why[]. */
static int read_entry(const char *path, size_t cap, char **data, size_t *n, char *why, size_t wn) {
  *data = NULL;
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) return READ_MISSING;
  if (fd < 0 && errno == ELOOP) return snprintf(why, wn, "%s is a symbolic link", path), READ_UNTRUSTED;
  if (fd < 0) return snprintf(why, wn, "%s cannot be opened: %s", path, strerror(errno)), READ_BAD;
  struct stat st;
  int rc = READ_OK;
  if (fstat(fd, &st)) rc = READ_BAD, snprintf(why, wn, "%s: %s", path, strerror(errno));
  else if (!S_ISREG(st.st_mode)) rc = READ_UNTRUSTED, snprintf(why, wn, "%s is not a regular file", path);
  else if (st.st_uid != geteuid())
    rc = READ_UNTRUSTED, snprintf(why, wn, "%s is owned by uid %u, not by this user (uid %u)", path,
                                  (unsigned)st.st_uid, (unsigned)geteuid());
  else if (st.st_mode & (S_IWGRP | S_IWOTH))
    rc = READ_UNTRUSTED, snprintf(why, wn, "%s is writable by its group or by others (mode %04o)", path,
                                  (unsigned)(st.st_mode & 07777));
  if (rc == READ_OK) {
    /* read what fd names, not what path names by now: /proc/self/fd/N opens that inode */
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    Err e = {0};
    int r = file_read_all(access(self, F_OK) == 0 ? self : path, cap, data, n, &e);
    if (r == PXL_ENOMEM) rc = READ_MISSING; /* not the entry's fault: rebuild, keep it */
    else if (r) rc = READ_BAD, snprintf(why, wn, "%.900s", e.msg);
  }
  close(fd);
  return rc;
}

/* The sum file's line for bytes built from id. */
static void sum_line(char *buf, size_t size, CacheId id, const void *data, size_t n) {
  snprintf(buf, size, "pxl-cache 1 key=%016llx source=%016llx size=%zu sum=%016llx\n", (unsigned long long)id.key,
           (unsigned long long)id.source, n, (unsigned long long)hash_bytes(HASH_INIT, data, n));
}

/* Why the sum file `have` does not match `want` (the line for the entry's bytes). */
static void mismatch(const char *have, CacheId id, size_t n, char *why, size_t wn) {
  int version = 0;
  unsigned long long key, source, sum;
  size_t size;
  if (sscanf(have, "pxl-cache %d key=%llx source=%llx size=%zu sum=%llx", &version, &key, &source, &size, &sum) != 5 ||
      version != 1)
    snprintf(why, wn, "its sum file is damaged");
  else if (key != id.key)
    snprintf(why, wn, "it was built for another key (%016llx)", key);
  else if (source != id.source)
    snprintf(why, wn, "it was built from another generated source");
  else if (size != n)
    snprintf(why, wn, "it holds %zu bytes where %zu were written", n, size);
  else
    snprintf(why, wn, "its bytes do not match their checksum");
}

void cache_drop(Cache *c, const char *name, const char *why) {
  char path[4400], sum[4500];
  snprintf(path, sizeof path, "%s/%s", c->dir, name);
  snprintf(sum, sizeof sum, "%s.sum", path);
  unlink(path);
  unlink(sum);
  warn_add(c->warn, "cache entry %s removed and rebuilt: %s", path, why);
}

bool cache_get(Cache *c, const char *name, CacheId id, char **data, size_t *n) {
  char path[4400], sum_path[4500], why[1200] = "";
  snprintf(path, sizeof path, "%s/%s", c->dir, name);
  snprintf(sum_path, sizeof sum_path, "%s.sum", path);
  char *bytes = NULL, *sum = NULL;
  size_t nb = 0;
  int r = read_entry(path, ENTRY_CAP, &bytes, &nb, why, sizeof why);
  if (r == READ_OK) {
    r = read_entry(sum_path, SUM_CAP, &sum, NULL, why, sizeof why);
    if (r == READ_MISSING) r = READ_BAD, snprintf(why, sizeof why, "it has no sum file %s.sum", name);
  }
  if (r == READ_OK) {
    char want[200];
    sum_line(want, sizeof want, id, bytes, nb);
    if (strcmp(sum, want)) r = READ_BAD, mismatch(sum, id, nb, why, sizeof why);
  }
  PXL_FREE(sum);
  if (r == READ_OK) {
    *data = bytes;
    *n = nb;
    return true;
  }
  PXL_FREE(bytes);
  Err ignored = {0};
  if (r == READ_BAD) cache_drop(c, name, why);
  else if (r == READ_UNTRUSTED) fall_back(c, why, &ignored); /* someone else wrote in it: leave it all */
  return false;
}

/* Writes the entry and then its sum file into dir; without its sum the entry goes. */
static int put_in(const char *dir, const char *name, CacheId id, const void *data, size_t n, Err *err) {
  char path[4400], sum_path[4500], line[200];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  snprintf(sum_path, sizeof sum_path, "%s.sum", path);
  sum_line(line, sizeof line, id, data, n);
  int rc = file_write_atomic(path, data, n, FILE_PRIVATE, err);
  if (!rc && (rc = file_write_atomic(sum_path, line, strlen(line), FILE_PRIVATE, err))) unlink(path);
  return rc;
}

void cache_put(Cache *c, const char *name, CacheId id, const void *data, size_t n) {
  Err e = {0}, ignored = {0};
  if (put_in(c->dir, name, id, data, n, &e) && !c->temp && !fall_back(c, e.msg, &ignored))
    put_in(c->dir, name, id, data, n, &ignored);
}

int cache_write(Cache *c, const char *name, const void *data, size_t n, Err *err) {
  char path[4400];
  snprintf(path, sizeof path, "%s/%s", c->dir, name);
  Err e = {0};
  int rc = file_write_atomic(path, data, n, FILE_PRIVATE, &e);
  if (rc && !c->temp && !(rc = fall_back(c, e.msg, err))) {
    snprintf(path, sizeof path, "%s/%s", c->dir, name);
    return file_write_atomic(path, data, n, FILE_PRIVATE, err);
  }
  if (rc && c->temp) err_set(err, rc, "%s", e.msg);
  return rc;
}

/* Writes n bytes to fd; false on a failure (errno set). */
static bool write_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= (size_t)w;
  }
  return true;
}

int cache_temp_file(Cache *c, const char *name, const void *data, size_t n, char *path, size_t size, Err *err) {
  for (;;) {
    if (snprintf(path, size, "%s/%s.XXXXXX", c->dir, name) >= (int)size)
      return err_set(err, PXL_EIO, "%s/%s: path too long", c->dir, name);
    int fd = mkostemp(path, O_CLOEXEC); /* 0600 */
    bool ok = fd >= 0 && write_all(fd, data, n);
    int e = errno;
    if (fd >= 0 && close(fd) && ok) ok = false, e = errno;
    if (ok) return PXL_OK;
    if (fd >= 0) unlink(path);
    char why[4600];
    snprintf(why, sizeof why, "%s: cannot write a file: %s", path, strerror(e));
    if (c->temp) return err_set(err, PXL_EIO, "%s", why);
    int rc = fall_back(c, why, err);
    if (rc) return rc;
  }
}
