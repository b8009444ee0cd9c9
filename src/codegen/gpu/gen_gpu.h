/*
 * gen_gpu.h - the GPU code generator: a stage instance as CUDA C++ (for NVRTC) or as
 * OpenCL C 1.2 - one set of skeletons, two dialects.
 *
 * The pixel functions come from the shared C-family emitter (codegen/c/emit.h); this
 * file writes the entry points - how pixels map to threads, per skeleton class - with
 * the dialect's words for threads, barriers, shared memory and atomics. One entry:
 *   CUDA:   extern "C" __global__ void pxl_stage(pxl_kargs a)
 *   OpenCL: __kernel void pxl_stage(__global uchar *b0, ..., __global uchar *b7,
 *                                   __global uchar *bo, __global uchar *baux,
 *                                   __global uchar *bres, __global uchar *bprm, pxl_kargs a)
 * pxl_kargs is passed by value: images, scalars, output, an auxiliary device buffer
 * (reduction partials, histogram bins), where results go, and a count. In CUDA the
 * image `data` fields and aux/res are device (or pinned host) addresses; in OpenCL,
 * which allows no pointers in kernel arguments, `data` is the byte offset of pixel (0, 0)
 * in buffer b<k> (bo for the output), aux/res are unused and the buffers are baux and
 * bres. How to launch is returned in a GpuLaunch: blocks (work-groups) of bx x by
 * threads; OpenCL's global size is the grid times (bx, by).
 *
 * Reductions: aux holds PXL_GPU_CHUNKS partial values (8 bytes each), their positions
 * (2 x int32 each) and a zero-initialised counter (PXL_GPU_AUX_REDUCE bytes in all); the
 * value lands in res[0..8), its position in res[8..16). Counting histograms (to_host):
 * aux holds the int64 bins, zero, then a zero counter; the bins land in res.
 */
#ifndef PXL_GEN_GPU_H
#define PXL_GEN_GPU_H

#include <stddef.h>

#include "ir/ir.h"
#include "util/err.h"
#include "util/strbuf.h"

#define PXL_GPU_MAX_IMAGES 8
#define PXL_GPU_MAX_SCALARS 16
#define PXL_GPU_CHUNKS 1024  /* reduction row chunks (at most): fixed per height, so results are deterministic */
#define PXL_GPU_BLOCK 256    /* threads per reduction and histogram block */
#define PXL_GPU_HIST_BLOCKS 512 /* blocks of a counting histogram (at most) */
#define PXL_GPU_HIST_THREADS 512 /* threads per counting histogram block */
#define PXL_GPU_AUX_REDUCE (PXL_GPU_CHUNKS * 16 + 16)

typedef enum {
  GPU_GRID_TILES,  /* grid over the output: a block covers bx*px x by*py pixels */
  GPU_GRID_ROWS,   /* min(H, chunks) blocks of bx threads, each a set of rows */
  GPU_GRID_ONE,    /* one thread */
  GPU_GRID_BANDS,  /* one block per by*py rows, its threads across the whole width */
  GPU_GRID_COLUMNS /* one block per bx*px columns, its threads down the whole height */
} GpuGrid;

typedef enum { GPU_CUDA, GPU_OPENCL } GpuDialect;

typedef struct {
  GpuGrid grid;
  unsigned bx, by;  /* threads per block */
  int px, py;       /* GPU_GRID_TILES (and BANDS, COLUMNS): output pixels per thread along x and y */
  int chunks;       /* GPU_GRID_ROWS: the most blocks */
  bool to_host;     /* histograms: the kernel writes the bins to res and resets aux itself */
  bool tiled;       /* the `tile` argument of gen_gpu_stage shapes this entry: tunable */
} GpuLaunch;

/* The shape of a thread's work in the tiled kernel entry (N2P and the like): `rows`
 * output rows (1..8, default 4) of `bytes` bytes of output (4 or 8, default 4; at least
 * one pixel); in the register-window entry, the rows a thread walks and its vectors of
 * 8 (bytes 4) or 16 (bytes 8) bytes of input. The runtime's autotuner picks it per
 * kernel, device and image size. */
typedef struct {
  int rows, bytes;
} GpuTile;

/* Appends the translation unit of instance (D, borders) in `dialect`; *launch says how
 * to run it. tile NULL: the default shape. */
int gen_gpu_stage(StrBuf *out, const Decl *D, const Border *borders, GpuDialect dialect, const GpuTile *tile,
                  GpuLaunch *launch, Err *err);

/* A loop's until test computed by the loop's kernel (loops.c): the unit of
 * gen_gpu_stage_test is gen_gpu_stage's (the same entry form and tile shape) with each
 * pixel's value also compared with image `carried`'s pixel at (x, y), read as the kernel
 * reads that image (registers, shared memory, L1). A thread that computed a differing
 * pixel reports it on return: when a.res is set, a.aux is the address of a device word
 * and a.n the test's number (never 0, each test's its own), the first such thread to
 * swap a.n into the word writes 1u to the host word at a.res (the host zeroed it), so
 * one write crosses to the host per launch, whatever changed. CUDA only (the report is a
 * destructor: it runs on every return of the entry). gen_gpu_test_ok: whether D can so -
 * integer pixels of the carried image's type, read relatively over a known window that
 * holds (0, 0), no border `none`, not a fused, scan or non-sequential kernel. */
bool gen_gpu_test_ok(const Decl *D, const Border *borders, int carried);
int gen_gpu_stage_test(StrBuf *out, const Decl *D, const Border *borders, GpuDialect dialect, const GpuTile *tile,
                       int carried, GpuLaunch *launch, Err *err);

/* The prefix passes of a scan. Float sums keep the interpreter's order of additions, so
 * they run sequentially (a thread per row, then a thread per column), after the map (the
 * scan's kernel entry, which writes the mapped values). Integer sums (they wrap) and
 * min/max, where any grouping of the same sequence gives the same bits, run in parallel;
 * they are fused (gen_gpu_scan_fused): the passes evaluate the map themselves and no map
 * entry runs. A fused scan works in tiles of PXL_GPU_SCAN_BAND rows by 32 vectors of 16
 * bytes of columns: each tile's totals (aux: per band its column totals, per row its
 * segments' totals), the carries between them, then each tile's prefixes from its carries
 * - the image read twice and written once. That regroups a 2-D scan (a rectangle's
 * values combined in tiles, not rows then columns): the same bits for integers, not for
 * float min and max (which of -0.0 and +0.0 is kept), so a 2-D float min/max scan runs
 * after its map, rows then columns in bands (ROWS, CARRIES, COLS). */
typedef enum {
  GSP_ROWS_SEQ, /* a thread per row, left to right */
  GSP_COLS_SEQ, /* a thread per column, top to bottom */
  GSP_ROWS,     /* unfused: warps across rows, and each band's column totals into aux */
  GSP_TOTALS,   /* fused: each tile's column totals (along y) and row totals (along x) into aux */
  GSP_CARRIES,  /* each band's column totals in aux -> the combine of the bands above it */
  GSP_COLS,     /* each band's columns, from its carry in aux (fused: computing the map) */
  GSP_RCARRY,   /* fused, along x: the row carries of every tile (and along y the band's
                   carry row combined along the row) */
  GSP_TILES     /* fused, along x: each tile's prefixes from its carries */
} GpuScanPass;

#define PXL_GPU_SCAN_BAND 32 /* rows per band of the parallel column passes */
#define PXL_GPU_SCAN_MAX_PASSES 4

/* Whether scan D's passes compute its map themselves (no map launch before them). */
bool gen_gpu_scan_fused(const Decl *D);

/* Whether gen_gpu_scan can write `pass` for scan D (TOTALS, RCARRY and TILES exist only
 * for fused scans); whether D uses it is gen_gpu_scan_passes'. */
bool gen_gpu_scan_pass_exists(const Decl *D, GpuScanPass pass);

/* PXL_EARG where D has more images or scalars than a GPU entry takes (every generator
 * here checks it; the runtime before it sizes arrays by the images). */
int gen_gpu_limits(const Decl *D, GpuDialect dialect, Err *err);

/* The passes of scan D (Decl.scan) in launch order, in passes[PXL_GPU_SCAN_MAX_PASSES];
 * returns how many. */
int gen_gpu_scan_passes(const Decl *D, GpuScanPass *passes);

/* Bytes of aux the passes of scan D need over a w x h output (0: none). */
size_t gen_gpu_scan_aux(const Decl *D, int w, int h);

/* Appends the translation unit of prefix pass `pass` of scan D (borders: its images',
 * for a fused scan's map), over the output image of pxl_kargs (aux: gen_gpu_scan_aux
 * bytes): in place, or from the map where fused; run it over the output's W x H with
 * *launch. */
int gen_gpu_scan(StrBuf *out, const Decl *D, const Border *borders, GpuDialect dialect, GpuScanPass pass,
                 GpuLaunch *launch, Err *err);

/* Iterated stencils: a loop of a pipeline whose body is one kernel D that reads its
 * last result as image `carried` (loops.c) runs up to k steps per launch (CUDA), each
 * block over a tx x ty tile of the output with the window's k-fold halo in shared
 * memory; a.n is the launch's steps (1..k), a.res NULL or where a last step that changed
 * a pixel writes 1u. */
typedef struct {
  int carried; /* the image parameter (img_index) that each step's result replaces */
  int k;       /* the most steps per launch */
  int tx, ty;  /* output pixels per block (multiples of 32 and 8; words: of 8 and 32) */
  bool words;  /* a u8 separable window stepped a word of 4 pixels per lane (gen_gpu.c, steps_words) */
} GpuSteps;

/* Whether D (with these borders) can run so - relative reads of known windows only,
 * integer pixels, the carried image's border clamp or constant, the tiles within shared
 * memory - and how: *plan. */
bool gen_gpu_steps_plan(const Decl *D, const Border *borders, int carried, GpuSteps *plan);

/* Appends the translation unit of plan p (CUDA only); launched over the output image. */
int gen_gpu_steps(StrBuf *out, const Decl *D, const Border *borders, GpuDialect dialect, const GpuSteps *p,
                  GpuLaunch *launch, Err *err);

#endif
