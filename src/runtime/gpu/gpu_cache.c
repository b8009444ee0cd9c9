/*
 * gpu_cache.c - see gpu_cache.h.
 */
#include "runtime/gpu/gpu_cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pxl/pxl.h"
#include "util/alloc.h"
#include "util/file.h"
#include "util/hash.h"
#include "util/strbuf.h"

const GpuTile gpu_tune_tiles[] = {{1, 4}, {2, 4}, {4, 4}, {8, 4}, {1, 8}, {2, 8}, {4, 8}, {8, 8}};
const int gpu_ntune_tiles = sizeof gpu_tune_tiles / sizeof *gpu_tune_tiles;

struct GpuTune {
  GpuTune *next;
  uint64_t key;
  GpuTile tile;
};

static void add(GpuTuner *t, uint64_t key, GpuTile tile) {
  GpuTune *n = PXL_CALLOC(1, sizeof *n);
  if (!n) return; /* out of memory only loses the choice */
  *n = (GpuTune){t->list, key, tile};
  t->list = n;
}

static const GpuTile *find(const GpuTuner *t, uint64_t key) {
  for (const GpuTune *n = t->list; n; n = n->next)
    if (n->key == key) return &n->tile;
  return NULL;
}

static bool valid(GpuTile t) {
  return t.rows >= 1 && t.rows <= 8 && (t.bytes == 4 || t.bytes == 8);
}

/* The value of environment variable PREFIX + name as an int, or 0. */
static int env_int(const char *prefix, const char *name) {
  char var[64];
  snprintf(var, sizeof var, "%s%s", prefix, name);
  const char *v = getenv(var);
  return v ? atoi(v) : 0;
}

void gpu_tuner_init(GpuTuner *t, const char *path, const char *env_prefix) {
  memset(t, 0, sizeof *t);
  GpuTile f = {env_int(env_prefix, "ROWS"), env_int(env_prefix, "BYTES")};
  if (f.rows || f.bytes) { /* an unset part takes the default */
    if (!f.rows) f.rows = 4;
    if (!f.bytes) f.bytes = 4;
    if (valid(f)) t->forced = f;
  }
  if (!path) return;
  size_t n = strlen(path) + 1;
  if ((t->path = PXL_MALLOC(n))) memcpy(t->path, path, n);
  char *text = NULL;
  Err ignored = {0};
  file_read_all(path, 1u << 20, &text, NULL, &ignored);
  for (char *p = text; p && *p;) {
    unsigned long long key;
    GpuTile tile;
    if (sscanf(p, "%16llx %d %d", &key, &tile.rows, &tile.bytes) == 3 && valid(tile)) add(t, key, tile);
    char *nl = strchr(p, '\n');
    p = nl ? nl + 1 : NULL;
  }
  PXL_FREE(text);
}

void gpu_tuner_store(GpuTuner *t, uint64_t key, GpuTile tile) {
  add(t, key, tile);
  if (!t->path) return;
  StrBuf b = {0};
  for (const GpuTune *n = t->list; n; n = n->next)
    sb_printf(&b, "%016llx %d %d\n", (unsigned long long)n->key, n->tile.rows, n->tile.bytes);
  char dir[4200];
  snprintf(dir, sizeof dir, "%s", t->path);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = 0;
  Err ignored = {0};
  if (b.s && !b.oom && (!slash || !file_make_dirs(dir, 0700, &ignored)))
    file_write_atomic(t->path, b.s, b.len, FILE_PRIVATE, &ignored);
  sb_free(&b);
}

void gpu_tuner_free(GpuTuner *t) {
  for (GpuTune *n = t->list, *next; n; n = next) {
    next = n->next;
    PXL_FREE(n);
  }
  PXL_FREE(t->path);
  memset(t, 0, sizeof *t);
}

/* 0 below GPU_TUNE_MIN_PIXELS, else floor(log2(pixels)). */
static int size_class(int w, int h) {
  int64_t n = (int64_t)w * h;
  if (n < GPU_TUNE_MIN_PIXELS) return 0;
  int c = 0;
  while (n > 1) n >>= 1, c++;
  return c;
}

int gpu_instance_get(Instance **list, GpuTuner *tuner, const char *backend, const Decl *D, const ImgArg *imgs, int w,
                     int h, GpuLoad load, void *be, GpuInstance **out, Err *err) {
  Border borders[PXL_GPU_MAX_IMAGES];
  if (D->nimages > PXL_GPU_MAX_IMAGES)
    return err_set(err, PXL_EARG, "%s: the %s backend takes at most %d images", D->name, backend, PXL_GPU_MAX_IMAGES);
  stage_borders(D, imgs, w, h, borders);
  int sclass = size_class(w, h);
  Instance *found = instance_find(*list, D, borders, sclass);
  if (found) {
    *out = (GpuInstance *)found;
    return PXL_OK;
  }
  GpuInstance *in = (GpuInstance *)instance_new(D, borders, sclass, sizeof *in);
  if (!in) return err_set(err, PXL_ENOMEM, "out of memory");
  bool forced = tuner->forced.rows != 0;
  GpuTile tile = forced ? tuner->forced : (GpuTile){sclass ? 4 : 1, 4};
  GpuLoaded m;
  int rc = load(be, D, borders, &tile, &m, err);
  if (!rc) in->base.module = m.module;
  if (!rc && m.tiled && sclass && !forced) {
    in->tune_key = hash_bytes(m.key, &sclass, sizeof sclass);
    const GpuTile *known = find(tuner, in->tune_key);
    if (known && !(rc = load(be, D, borders, known, &m, err))) in->base.module = m.module;
    in->tune = !known;
  }
  if (rc) {
    PXL_FREE(in);
    return rc;
  }
  instance_link(list, &in->base);
  *out = in;
  return PXL_OK;
}

int gpu_instance_tune(GpuTuner *t, GpuInstance *in, const Decl *D, GpuLoad load, GpuTime time, void *be, void *run,
                      Err *err) {
  double best = 0;
  const GpuTile *best_tile = NULL;
  for (int i = 0; i < gpu_ntune_tiles; i++) {
    GpuLoaded m;
    Err ignored = {0};
    if (load(be, D, in->base.borders, &gpu_tune_tiles[i], &m, &ignored)) continue;
    double ms = 0;
    int rc = time(be, m.module, run, &ms, err);
    if (rc) return rc;
    if (!best_tile || ms < best) {
      best = ms;
      best_tile = &gpu_tune_tiles[i];
      in->base.module = m.module;
    }
  }
  in->tune = false;
  if (best_tile) gpu_tuner_store(t, in->tune_key, *best_tile);
  return PXL_OK;
}

void gpu_reduce_result(const void *res, Scalar type, RedResult *out) {
  int32_t pos[2];
  memcpy(&out->value, res, sizeof out->value); /* Lane: the same union of int64 and double */
  memcpy(pos, (const char *)res + 8, sizeof pos);
  out->type = type;
  out->x = pos[0];
  out->y = pos[1];
}
