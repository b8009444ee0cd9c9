/*
 * cuda_ops.c - the device passes of global operators on the CUDA backend
 * (Backend.global): the distance transforms (edt, cityblock, chessboard) and the
 * connected-component labellings (label4, label8), run on the device by the kernels of
 * ops.cu with the host algorithms' results (src/ops, ops.h), so that a pipeline's images
 * stay on the device. The other operators have no device pass yet: *done false, and
 * exec.c runs their host pass on copies.
 *
 * ops.cu is built by NVRTC once per variant - the output type of a distance, the map type
 * of a labelling - with the definitions of its element types put before it from the table
 * below, and loaded at the variant's first use; its PTX is cached on disk like a stage's.
 */
#include <stdio.h>
#include <string.h>

#include "ir/ir.h"
#include "runtime/cuda/cuda_internal.h"
#include "runtime/gpu/fault.h"
#include "util/alloc.h"

extern const char pxl_ops_cu_text[]; /* ops.cu (cmake/embed.cmake) */

/* C spellings of the pixel types (pxl_type order) and the largest value of the integers. */
static const struct {
  const char *c, *max;
} ctype[] = {{"unsigned char", "255"},     {"short", "32767"},      {"unsigned short", "65535"},
             {"int", "2147483647"},         {"unsigned int", "4294967295u"}, {"float", "0"},
             {"double", "0"}};
enum { NTYPES = sizeof ctype / sizeof ctype[0] };
_Static_assert(2 * NTYPES == CUDA_OPS_VARIANTS, "CUDA_OPS_VARIANTS: every variant");

char *cuda_ops_source(int v, size_t *len) {
  bool dist = v < NTYPES;
  int mt = dist ? PXL_U8 : v - NTYPES, ot = dist ? v : PXL_F32;
  char head[160];
  int hn = snprintf(head, sizeof head, "#define MT %s\n#define OT %s\n#define OT_MAX %s\n", ctype[mt].c, ctype[ot].c,
                    ctype[ot].max);
  size_t n = strlen(pxl_ops_cu_text);
  char *src = PXL_MALLOC((size_t)hn + n + 1);
  if (!src) return NULL;
  memcpy(src, head, (size_t)hn);
  memcpy(src + hn, pxl_ops_cu_text, n + 1);
  *len = (size_t)hn + n;
  return src;
}

/* The module of variant v, loaded at its first use. */
static int module(Cuda *cu, int v, CUmodule *out, Err *err) {
  if (cu->ops[v]) {
    *out = cu->ops[v];
    return PXL_OK;
  }
  size_t n = 0;
  char *src = cuda_ops_source(v, &n);
  if (!src) return err_set(err, PXL_ENOMEM, "out of memory");
  char *ptx = NULL;
  int rc = cuda_get_ptx(cu, src, n, &ptx, err);
  PXL_FREE(src);
  if (rc) return rc;
  CUresult r = cu->faults & FAULT_LOAD ? 200 /* CUDA_ERROR_INVALID_IMAGE */ : cu->api->cuModuleLoadData(out, ptx);
  PXL_FREE(ptx);
  if (r) return cu_fail(cu, r, "module load", err);
  cu->ops[v] = *out;
  return PXL_OK;
}

/* Queues entry `fn` of m over gx x gy blocks of bx x by threads with arguments args. */
static int launch(Cuda *cu, CUmodule m, const char *fn, size_t gx, size_t gy, int bx, int by, void **args,
                  Err *err) {
  CUfunction f = NULL;
  CUresult r = cu->api->cuModuleGetFunction(&f, m, fn);
  if (!r) r = cu->faults & FAULT_LAUNCH ? 719 /* CUDA_ERROR_LAUNCH_FAILED */
                                        : cu->api->cuLaunchKernel(f, (unsigned)gx, (unsigned)gy, 1, (unsigned)bx,
                                                                  (unsigned)by, 1, 0, cu->stream, args, NULL);
  return r ? cu_fail(cu, r, "kernel launch", err) : PXL_OK;
}

static size_t blocks(int64_t n, int per) { return (size_t)((n + per - 1) / per); }
static CUdeviceptr dptr(const struct pxl_image *img) { return (CUdeviceptr)(uintptr_t)img->data; }

/* ---- distances: Meijster's phases as distance.c, phase 1 along the rows ---- */

/* n bytes of device memory in stream order (the pool where there is one), or 0 when there
 * is no room; freed by dev_free in stream order. */
static CUdeviceptr dev_alloc(Cuda *cu, size_t n) {
  CUdeviceptr p = 0;
  CUresult r = cu->pool ? cu->api->cuMemAllocFromPoolAsync(&p, n, cu->pool, cu->stream)
               : cu->no_pools ? cu->api->cuMemAlloc_v2(&p, n)
                              : cu->api->cuMemAllocAsync(&p, n, cu->stream);
  return r ? 0 : p;
}

static void dev_free(Cuda *cu, CUdeviceptr p) {
  if (!p) return;
  if (cu->no_pools) {
    cu->api->cuStreamSynchronize(cu->stream);
    cu->api->cuMemFree_v2(p);
  } else {
    cu->api->cuMemFreeAsync(p, cu->stream);
  }
}

/* The rows dist_scan searches each way before it leaves a column to dist_cols: a pixel's
 * cost where its distance is short, and what an image without short distances (few
 * features) wastes before the stacks take over. */
enum { SCAN_CAP = 64 };

/* *done false where the device has no room for phase 2's stacks (16 bytes a pixel): the
 * host pass runs instead. */
static int distance(Cuda *cu, const struct pxl_image *feat, int metric, struct pxl_image *out, bool *done, Err *err) {
  Backend *be = &cu->g.base;
  int w = out->width, h = out->height;
  CUmodule m = NULL;
  struct pxl_image *g = NULL;
  CUdeviceptr stack = dev_alloc(cu, (size_t)w * (size_t)h * 16), unfinished = dev_alloc(cu, (size_t)w * 4);
  if (!stack || !unfinished) {
    dev_free(cu, stack), dev_free(cu, unfinished);
    return PXL_OK;
  }
  *done = true;
  int rc = module(cu, (int)out->type, &m, err), cap = SCAN_CAP;
  if (!rc) rc = be->image_new(be, w, h, PXL_I32, 1, false, &g, err);
  CUresult r = rc ? 0 : cu->api->cuMemsetD8Async(unfinished, 0, (size_t)w * 4, cu->stream);
  if (r) rc = cu_fail(cu, r, "memset", err);
  if (!rc) {
    CUdeviceptr pf = dptr(feat), pg = dptr(g), po = dptr(out);
    int64_t fp = (int64_t)feat->pitch, gp = (int64_t)g->pitch / 4, op = (int64_t)(out->pitch / pxl_type_size(out->type));
    void *a1[] = {&pf, &fp, &w, &h, &pg, &gp};
    void *a2[] = {&pg, &gp, &w, &h, &metric, &cap, &unfinished, &po, &op};
    void *a3[] = {&pg, &gp, &w, &h, &metric, &unfinished, &stack, &po, &op};
    rc = launch(cu, m, "dist_rows", blocks(h, 4), 1, 128, 1, a1, err);
    if (!rc) rc = launch(cu, m, "dist_scan", blocks(w, 32), blocks(h, 8), 32, 8, a2, err);
    if (!rc) rc = launch(cu, m, "dist_cols", blocks(w, 32), 1, 32, 1, a3, err);
  }
  image_free(g); /* freed in stream order */
  dev_free(cu, stack), dev_free(cu, unfinished);
  return rc;
}

/* ---- labels: union-find in the output's elements, then numbering by a scan ---- */

enum { CHUNK = 32768 }; /* ops.cu: the elements a block of lab_count and lab_rank covers */

static int label(Cuda *cu, const struct pxl_image *map, int conn, struct pxl_image *out, Err *err) {
  Backend *be = &cu->g.base;
  int w = out->width, h = out->height;
  int64_t lp = (int64_t)out->pitch / 4, n = lp * h, mp = (int64_t)map->pitch;
  int nchunks = (int)blocks(n, CHUNK);
  CUmodule m = NULL;
  struct pxl_image *cnt = NULL;
  int rc = module(cu, NTYPES + (int)map->type, &m, err);
  if (!rc) rc = be->image_new(be, nchunks, 1, PXL_U32, 1, false, &cnt, err);
  if (!rc) {
    CUdeviceptr pm = dptr(map), pl = dptr(out), pc = dptr(cnt);
    void *a_pix[] = {&pm, &mp, &w, &h, &conn, &pl, &lp};
    /* lab_border: a thread per pixel of the rows tiles start at, then of the columns */
    int nrows = (h - 1) / 32, ncols = (w - 1) / 32 * (conn == 8 ? 2 : 1);
    void *a_edge[] = {&pm, &mp, &w, &h, &conn, &pl, &lp, &nrows, &ncols};
    size_t nedge = (size_t)nrows * (size_t)w + (size_t)ncols * (size_t)h;
    void *a_own[] = {&w, &h, &pl, &lp};
    void *a_cnt[] = {&pl, &n, &lp, &w, &pc};
    void *a_off[] = {&pc, &nchunks};
    size_t gx = blocks(w, 32), gy = blocks(h, 8);
    rc = launch(cu, m, "lab_local", blocks(w, 32), blocks(h, 32), 32, 8, a_pix, err);
    if (!rc && nedge) rc = launch(cu, m, "lab_border", blocks(nedge, 256), 1, 256, 1, a_edge, err);
    if (!rc) rc = launch(cu, m, "lab_flatten", gx, gy, 32, 8, a_own, err);
    if (!rc) rc = launch(cu, m, "lab_count", (size_t)nchunks, 1, 256, 1, a_cnt, err);
    if (!rc) rc = launch(cu, m, "lab_offsets", 1, 1, 1024, 1, a_off, err);
    if (!rc) rc = launch(cu, m, "lab_rank", (size_t)nchunks, 1, 256, 1, a_cnt, err);
    if (!rc) rc = launch(cu, m, "lab_final", gx, gy, 32, 8, a_own, err);
  }
  image_free(cnt);
  return rc;
}

int cuda_global(Backend *be, int op, const struct pxl_image *const *maps, struct pxl_image *out, bool *done,
                Err *err) {
  Cuda *cu = (Cuda *)be;
  *done = false;
  cu->api->cuCtxSetCurrent(cu->ctx);
  const struct pxl_image *map = maps[0];
  switch ((GlobalOp)op) {
  case G_EDT:
  case G_CITYBLOCK:
  case G_CHESSBOARD:
    if (map->type != PXL_U8 || out->pitch % pxl_type_size(out->type)) return PXL_OK;
    return distance(cu, map, op == G_EDT ? 0 : op == G_CITYBLOCK ? 1 : 2, out, done, err);
  case G_LABEL4:
  case G_LABEL8:
    /* element indices below 2^31 (ops.cu's RANK bit), in at most 65535 chunks */
    if ((out->type != PXL_U32 && out->type != PXL_I32) || out->pitch % 4 ||
        (int64_t)(out->pitch / 4) * out->height >= ((int64_t)1 << 31) - CHUNK || map->pitch % pxl_type_size(map->type))
      return PXL_OK;
    *done = true;
    return label(cu, map, op == G_LABEL4 ? 4 : 8, out, err);
  default: return PXL_OK;
  }
}

void cuda_ops_free(Cuda *cu) {
  for (int v = 0; v < CUDA_OPS_VARIANTS; v++)
    if (cu->ops[v]) cu->api->cuModuleUnload(cu->ops[v]);
}
