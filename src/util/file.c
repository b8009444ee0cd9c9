/*
 * file.c - see file.h.
 */
#define _GNU_SOURCE
#include "util/file.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pxl/pxl.h"
#include "util/alloc.h"

/* Temporary files of the writes in progress, for file_remove_partial. A slot is claimed
 * (FREE -> CLAIMED) with an atomic exchange, filled, then published (ACTIVE); the signal
 * handler only reads ACTIVE slots, whose name is complete. */
enum { SLOT_FREE, SLOT_CLAIMED, SLOT_ACTIVE };
#define NSLOTS 32
static struct {
  volatile sig_atomic_t state;
  char path[4400];
} slots[NSLOTS];

static int slot_claim(const char *tmp) {
  for (int i = 0; i < NSLOTS; i++) {
    int expect = SLOT_FREE;
    if (__atomic_compare_exchange_n((int *)&slots[i].state, &expect, SLOT_CLAIMED, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
      snprintf(slots[i].path, sizeof slots[i].path, "%s", tmp);
      __atomic_store_n((int *)&slots[i].state, SLOT_ACTIVE, __ATOMIC_RELEASE);
      return i;
    }
  }
  return -1; /* more writes at once than slots: this one is just not cleaned up by a signal */
}

static void slot_release(int i) {
  if (i >= 0) __atomic_store_n((int *)&slots[i].state, SLOT_FREE, __ATOMIC_RELEASE);
}

/* Child process groups that write files, for file_remove_partial (0: free slot). */
static volatile sig_atomic_t children[8];

int file_child_add(int pgid) {
  for (int i = 0; i < (int)(sizeof children / sizeof *children); i++) {
    int expect = 0;
    if (__atomic_compare_exchange_n((int *)&children[i], &expect, pgid, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      return i;
  }
  return -1;
}

void file_child_forget(int slot) {
  if (slot >= 0) __atomic_store_n((int *)&children[slot], 0, __ATOMIC_RELEASE);
}

int file_partial_add(const char *path) { return slot_claim(path); }

void file_partial_forget(int slot) { slot_release(slot); }

void file_remove_partial(void) {
  for (int i = 0; i < (int)(sizeof children / sizeof *children); i++) { /* first: they may still write */
    int pgid = __atomic_load_n((int *)&children[i], __ATOMIC_ACQUIRE);
    if (pgid > 0) kill(-pgid, SIGKILL);
  }
  for (int i = 0; i < NSLOTS; i++)
    if (__atomic_load_n((int *)&slots[i].state, __ATOMIC_ACQUIRE) == SLOT_ACTIVE) unlink(slots[i].path);
}

int file_atomic_open(AtomicFile *af, const char *path, FileMode mode, Err *err) {
  memset(af, 0, sizeof *af);
  af->slot = -1;
  if (snprintf(af->path, sizeof af->path, "%s", path) >= (int)sizeof af->path)
    return err_set(err, PXL_EIO, "%.200s...: path too long", path);
  /* the temporary file is created with open(O_EXCL) so that the kernel applies the umask
   * to FILE_SHARED files as it does for any new file (mkstemp would make them 0600) */
  static unsigned counter;
  uint64_t seed = (uint64_t)getpid() * 0x9E3779B97F4A7C15u ^ (uint64_t)time(NULL) ^ (uintptr_t)af;
  int fd = -1, e = 0;
  for (int tries = 0; tries < 64 && fd < 0; tries++) {
    uint64_t r = seed + __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED) * 0xBF58476D1CE4E5B9u;
    r ^= r >> 31;
    static const char al[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    char suffix[7];
    for (int i = 0; i < 6; i++, r /= 62) suffix[i] = al[r % 62];
    suffix[6] = 0;
    snprintf(af->tmp, sizeof af->tmp, "%s.tmp%s", path, suffix);
    fd = open(af->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode == FILE_PRIVATE ? 0600 : 0666);
    e = errno;
    if (fd < 0 && e != EEXIST) break;
  }
  if (fd < 0) return err_set(err, PXL_EIO, "%s: cannot create a temporary file beside it: %s", path, strerror(e));
  af->slot = slot_claim(af->tmp);
  struct stat st; /* a file replaced keeps its permissions */
  if (mode == FILE_SHARED && stat(path, &st) == 0 && S_ISREG(st.st_mode)) (void)fchmod(fd, st.st_mode & 07777);
  af->f = fdopen(fd, "wb");
  if (!af->f) {
    e = errno;
    close(fd);
    unlink(af->tmp);
    slot_release(af->slot);
    return err_set(err, PXL_EIO, "%s: %s", path, strerror(e));
  }
  return PXL_OK;
}

void file_atomic_abort(AtomicFile *af) {
  if (!af->f) return;
  fclose(af->f);
  af->f = NULL;
  unlink(af->tmp);
  slot_release(af->slot);
  af->slot = -1;
}

int file_atomic_commit(AtomicFile *af, Err *err) {
  if (!af->f) return err_set(err, PXL_EIO, "%s: not open for writing", af->path);
  int e = 0;
  if (fflush(af->f) != 0 || ferror(af->f)) e = errno ? errno : EIO;
  if (!e && fsync(fileno(af->f)) != 0) e = errno;
  if (fclose(af->f) != 0 && !e) e = errno ? errno : EIO;
  af->f = NULL;
  if (!e && rename(af->tmp, af->path) != 0) e = errno;
  if (e) unlink(af->tmp);
  slot_release(af->slot);
  af->slot = -1;
  if (e) return err_set(err, PXL_EIO, "%s: write failed: %s", af->path, strerror(e));
  return PXL_OK;
}

int file_write_atomic(const char *path, const void *data, size_t n, FileMode mode, Err *err) {
  AtomicFile af;
  int rc = file_atomic_open(&af, path, mode, err);
  if (rc) return rc;
  if (n) fwrite(data, 1, n, af.f); /* a short write leaves the stream's error flag: commit reports it */
  return file_atomic_commit(&af, err);
}

int file_read_all(const char *path, size_t cap, char **out, size_t *n, Err *err) {
  *out = NULL;
  if (n) *n = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return err_set(err, PXL_EIO, "%s: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    close(fd);
    return err_set(err, PXL_EIO, "%s: is a directory", path);
  }
  char *buf = NULL;
  size_t len = 0, size = 0;
  for (;;) {
    if (len == size) {
      if (size > cap) break;
      size_t ncap = size ? size * 2 : 65536;
      if (ncap > cap + 1) ncap = cap + 1; /* one byte past the cap tells "larger" */
      if (ncap <= size) ncap = size + 1;
      char *nb = PXL_REALLOC(buf, ncap + 1);
      if (!nb) {
        PXL_FREE(buf);
        close(fd);
        return err_set(err, PXL_ENOMEM, "%s: out of memory reading it", path);
      }
      buf = nb;
      size = ncap;
    }
    ssize_t r = read(fd, buf + len, size - len);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      int e = errno;
      PXL_FREE(buf);
      close(fd);
      return err_set(err, PXL_EIO, "%s: read error: %s", path, strerror(e));
    }
    if (r == 0) break;
    len += (size_t)r;
    if (len > cap) break;
  }
  close(fd);
  if (len > cap) {
    PXL_FREE(buf);
    return err_set(err, PXL_ETOOBIG, "%s: larger than %zu bytes, the limit for this kind of file", path, cap);
  }
  if (!buf && !(buf = PXL_MALLOC(1))) return err_set(err, PXL_ENOMEM, "out of memory");
  buf[len] = 0;
  *out = buf;
  if (n) *n = len;
  return PXL_OK;
}

int file_make_dirs(const char *dir, int mode, Err *err) {
  char tmp[4096];
  size_t n = strlen(dir);
  if (n >= sizeof tmp) return err_set(err, PXL_EIO, "%.200s...: directory name too long", dir);
  memcpy(tmp, dir, n + 1);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(tmp, (mode_t)mode) && errno != EEXIST) return err_set(err, PXL_EIO, "%s: %s", tmp, strerror(errno));
    *p = '/';
  }
  if (mkdir(tmp, (mode_t)mode) && errno != EEXIST) return err_set(err, PXL_EIO, "%s: %s", tmp, strerror(errno));
  return PXL_OK;
}
