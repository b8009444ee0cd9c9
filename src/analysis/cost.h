/*
 * cost.h - the cost model: a predicted time for an entry on a class of device, from the
 * analysis's per-pixel counts (Park et al.'s metrics) and the bytes each launch moves.
 *
 * A launch costs the larger of its memory time (bytes moved per pixel x pixels over the
 * device's streaming bandwidth) and its operation time (operations per pixel x pixels
 * over the device's operation rate), plus a fixed cost per launch and per value returned
 * to the host. A pipeline costs the sum of the launches it makes (a loop's body times its
 * count). The devices' numbers are calibrated on the twelve kernels of the skeleton
 * benchmark on the machines named in each profile (docs/PERFORMANCE.md, "Cost model");
 * bench/bench_model.c measures every example against the prediction.
 *
 * Fusion (fuse.c) asks the model whether a fused kernel pays on every device class.
 */
#ifndef PXL_COST_H
#define PXL_COST_H

#include <stdbool.h>

#include "ir/ir.h"

/* A class of device, calibrated on one machine. */
typedef struct {
  const char *name;    /* "cpu", "gpu" */
  const char *machine; /* what its numbers were measured on */
  double bw;           /* bytes per second a streaming pass moves (a copy: read + write) */
  double cache;        /* a launch moving at most this many bytes runs from the last-level cache */
  double cache_bw;     /* at this many bytes per second (repeated runs on images that fit) */
  double ops;          /* integer operations and reads per second of vectorised code, all cores */
  double flops;        /* floating-point operations per second, likewise */
  double scalar;       /* code that does not vectorise (CPU) or is serialised (GPU) is this much slower */
  double launch;       /* seconds per launch */
  double result;       /* seconds per value returned to the host (reductions) */
  double link;         /* GPUs: bytes per second between host and device memory */
} CostDevice;

enum { COST_CPU, COST_GPU, COST_NDEVICES };
extern const CostDevice cost_devices[COST_NDEVICES];

typedef struct {
  double seconds;  /* predicted time of one run */
  double mem_s;    /* of which the memory time, summed over launches */
  double ops_s;    /* the operation time, summed over launches */
  double fixed_s;  /* launches and results returned */
  double bytes;    /* bytes moved per pixel of the entry's size */
  double ops;      /* operations per pixel */
  int launches;
  bool bound;      /* a loop with an `until` test: its count taken as the maximum */
} Prediction;

/* The predicted time of entry D (kernel, reduction, histogram or pipeline, the form given:
 * pass Decl.fused for a fused pipeline) on images of w x h pixels. Images made by a
 * stage have the entry's size unless the stage's size() is made of literals. */
Prediction cost_predict(const Decl *D, const CostDevice *dev, int w, int h);

/* The bytes a run of entry D on w x h images copies from host to device memory (its
 * images) and back (its image result, or its value or bins) on a GPU, from host images. */
void cost_copies(const Decl *D, int w, int h, double *up, double *down);

/* Whether fused kernel F (producer K computed inside consumer C) is predicted no slower
 * on dev than K and C run one after the other, at a reference size. */
bool cost_fusion_pays(const Decl *K, const Decl *C, const Decl *F, const CostDevice *dev);

#endif
