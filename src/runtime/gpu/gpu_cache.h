/*
 * gpu_cache.h - what both GPU backends (runtime/cuda, runtime/opencl) keep between runs:
 * stage instances and the autotuner's choices.
 *
 * An instance is (program, entry, borders, size class) -> the backend's compiled module,
 * remembered in the memo of runtime/instance.h, borders normalised as there (an image
 * read only at (0, 0) that covers the output shares one module across border modes).
 * The tiled kernel entry (N2P and the like) gives each thread `rows` output rows of 4 or
 * 8 bytes (GpuTile, codegen/gpu); the best shape depends on the device, the kernel and
 * the image size. For images of at least GPU_TUNE_MIN_PIXELS the first run of an
 * instance per size class (a power of two of pixels) times each of gpu_tune_tiles and
 * keeps the fastest; the choice is stored in a file of "KEY ROWS BYTES" lines in the
 * cache directory, so it is made once per device kind. Smaller images take 1 row of 4
 * bytes. Environment variables (for tests) can force a shape.
 */
#ifndef PXL_GPU_CACHE_H
#define PXL_GPU_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "codegen/gpu/gen_gpu.h"
#include "ir/value.h"
#include "runtime/instance.h"

#define GPU_TUNE_MIN_PIXELS (1 << 20)

extern const GpuTile gpu_tune_tiles[];
extern const int gpu_ntune_tiles;

typedef struct GpuTune GpuTune;
typedef struct {
  GpuTune *list;
  char *path;     /* the file of choices, or NULL (memory only) */
  GpuTile forced; /* {0, 0}, or the shape the environment forces */
} GpuTuner;

/* Loads the choices of `path` (NULL: none) and reads the forcing variables PREFIX +
 * ROWS and BYTES (e.g. PXL_CUDA_TILE_ROWS; an unset one takes the default). */
void gpu_tuner_init(GpuTuner *t, const char *path, const char *env_prefix);
void gpu_tuner_free(GpuTuner *t);
/* Records a choice and rewrites the file (a cache: a failed write costs a later retune). */
void gpu_tuner_store(GpuTuner *t, uint64_t key, GpuTile tile);

typedef struct {
  Instance base;     /* the memo's record; base.module: the backend's module */
  bool tune;         /* to be chosen by timing at the next run (then gpu_tuner_store) */
  uint64_t tune_key;
} GpuInstance;

/* A module as the backend loaded it (generated, compiled or found in its caches). */
typedef struct {
  void *module;
  uint64_t key;  /* hash of its source */
  bool tiled;    /* its entry takes the tile shape */
} GpuLoaded;
typedef int (*GpuLoad)(void *be, const Decl *D, const Border *borders, const GpuTile *tile, GpuLoaded *out, Err *err);

/* The instance of D with imgs' borders (normalised: stage_borders) at a w x h size, from
 * *list or made with `load` (then linked in): its module, the tuned one when known, or a
 * note to tune. `backend` names it in errors. */
int gpu_instance_get(Instance **list, GpuTuner *tuner, const char *backend, const Decl *D, const ImgArg *imgs,
                     int w, int h, GpuLoad load, void *be, GpuInstance **out, Err *err);

/* Times one candidate module on the run's arguments `run` (3 launches after a warm-up),
 * in ms; the launches write the run's output. */
typedef int (*GpuTime)(void *be, void *module, void *run, double *ms, Err *err);
/* Chooses in's module among gpu_tune_tiles (a candidate that fails to build is skipped),
 * keeps the fastest, records the choice; every launch writes the same output. */
int gpu_instance_tune(GpuTuner *t, GpuInstance *in, const Decl *D, GpuLoad load, GpuTime time, void *be, void *run,
                      Err *err);

/* A reduction's result as the generated kernels leave it (gen_gpu.h): the value's 8 bytes
 * at res[0..8), its position (x, y) as int32 at res[8..16). */
void gpu_reduce_result(const void *res, Scalar type, RedResult *out);

#endif
