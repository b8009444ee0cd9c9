/*
 * ops.cu - the device passes of global operators on the CUDA backend (cuda_ops.c launches
 * them): the distance transforms and connected-component labelling of src/ops, computed
 * on the device with the same results, bit for bit, as the host algorithms (ops.h).
 *
 * Built by NVRTC once per variant: cuda_ops.c puts before this text the definitions of
 * MT (the map's element type), OT (the output's) and OT_MAX (the largest value of an
 * integer OT; 0 for floating-point types), from its own table; nothing from outside.
 *
 * Distances (Meijster, Roerdink and Hesselink's separable algorithm, as distance.c, with
 * the axes swapped so that every access of a warp is coalesced):
 *   dist_rows   a warp per row: g, the distance to the nearest feature in the row;
 *   dist_scan   a thread per pixel: where the distance is short (all but the emptiest
 *               images), the minimum over the few rows that can hold the nearest feature;
 *   dist_cols   a thread per column that dist_scan left unfinished: the lower envelope of
 *               the rows' functions on a stack, read back into the exact distances.
 * Distances are stored as lane_convert converts an f64.
 * Labels (union-find over the pixels in tiles, then across them: Playne and Hawick 2018):
 *   lab_local   per 32x32 tile in shared memory (runs by ballots, then unions between
 *               rows): every foreground pixel points at the first pixel of its component
 *               within the tile;
 *   lab_border  unites the pixels of neighbouring tiles (atomicMin on roots, so a
 *               component's root is its first pixel in raster order; paths halved);
 *   lab_flatten every pixel points at its root;
 *   lab_count, lab_offsets, lab_rank   numbers the roots in raster order (a scan);
 *   lab_final   every pixel takes its root's number.
 * Labels live in the output image itself, as element indices y * lp + x (lp: its pitch in
 * elements), which keep raster order; cuda_ops.c runs them only where those stay below
 * 2^31.
 */
typedef unsigned int u32;
typedef long long i64;

/* ---- distances ---- */

#define G_NONE 0x7fffffff /* g of a pixel whose row has no feature */

/* Phase 1 along the rows, a warp per row: g, the distance of every pixel to the nearest
 * feature in its row (G_NONE: none), from the last feature at or before it (a prefix
 * maximum of the lanes' feature positions, left to right) and the next at or after it (a
 * suffix minimum, right to left). Coalesced: a warp reads 32 consecutive pixels a step. */
extern "C" __global__ void dist_rows(const unsigned char *feat, i64 fp, int w, int h, int *g, i64 gp) {
  int y = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x & 31;
  if (y >= h) return;
  const unsigned char *f = feat + y * fp;
  int *o = g + y * gp;
  int last = -1;
  for (int x0 = 0; x0 < w; x0 += 32) {
    int x = x0 + lane, v = x < w && f[x] ? x : -1;
    for (int k = 1; k < 32; k <<= 1) {
      int n = __shfl_up_sync(0xffffffffu, v, k);
      if (lane >= k) v = max(v, n);
    }
    v = max(v, last);
    if (x < w) o[x] = v < 0 ? G_NONE : x - v;
    last = __shfl_sync(0xffffffffu, v, 31);
  }
  int next = 0x7fffffff;
  for (int x0 = (w - 1) / 32 * 32; x0 >= 0; x0 -= 32) {
    int x = x0 + lane, v = x < w && f[x] ? x : 0x7fffffff;
    for (int k = 1; k < 32; k <<= 1) {
      int n = __shfl_down_sync(0xffffffffu, v, k);
      if (lane + k < 32) v = min(v, n);
    }
    v = min(v, next);
    if (x < w && v != 0x7fffffff && v - x < o[x]) o[x] = v - x;
    next = __shfl_sync(0xffffffffu, v, 0);
  }
}

/* f(x, i) for column i whose g is gi (L2: its square, f then the squared distance). */
__device__ __forceinline__ i64 f_at(int metric, i64 x, i64 i, i64 gi) {
  i64 d = x > i ? x - i : i - x;
  if (metric == 0) return d * d + gi;
  if (metric == 1) return d + gi;
  return d > gi ? d : gi;
}

/* Sep + 1: the first x from which column u (> i) is strictly nearer than column i (distance.c:
 * start_of; positive where it is called, so truncating division is floor). */
__device__ __forceinline__ i64 start_of(int metric, i64 i, i64 gi, i64 u, i64 gu) {
  if (metric == 0) {
    i64 num = u * u - i * i + gu - gi, den = 2 * (u - i);
    if (num < 0x7fffffff) return (int)num / (int)den + 1;
    return num / den + 1;
  }
  if (metric == 1) {
    if (gu - gi >= u - i) return 0x7fffffffffffffffLL;
    return (u + i + gu - gi) / 2 + 1;
  }
  if (gi <= gu) return (gu + i > (i + u) / 2 ? gu + i : (i + u) / 2) + 1;
  return (u - gi < (i + u) / 2 ? u - gi : (i + u) / 2) + 1;
}

/* An exact distance (non-negative, or +inf) stored as lane_convert stores an f64. */
__device__ __forceinline__ OT convert(double v) {
#if OT_MAX
  double r = rint(v); /* round to nearest, ties to even */
  return r >= (double)OT_MAX ? (OT)OT_MAX : (OT)r;
#else
  return (OT)v;
#endif
}

/* Phase 2 where distances are short, a thread per pixel: the exact distance as the minimum
 * of f(y, u) over the rows u = y, y +- 1, y +- 2, ... until |y - u| alone reaches the best
 * so far (no farther row can do better), starting from the pixel's own row. A pixel that
 * has not finished after `cap` rows each way leaves its column to dist_cols
 * (unfinished[x] = 1); the others are stored. */
extern "C" __global__ void dist_scan(const int *g, i64 gp, int w, int h, int metric, int cap, int *unfinished,
                                     OT *out, i64 op) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  const i64 none = 0x7fffffffffffffffLL;
  int gy = g[(i64)y * gp + x];
  i64 best = gy == G_NONE ? none : f_at(metric, 0, 0, metric == 0 ? (i64)gy * gy : gy);
  bool done = false;
  for (int k = 1; k <= cap && !done; k++) {
    if (f_at(metric, k, 0, 0) >= best || (y - k < 0 && y + k >= h)) {
      done = true;
      break;
    }
    if (y - k >= 0) {
      int gu = g[(i64)(y - k) * gp + x];
      if (gu != G_NONE) best = min(best, f_at(metric, k, 0, metric == 0 ? (i64)gu * gu : gu));
    }
    if (y + k < h) {
      int gu = g[(i64)(y + k) * gp + x];
      if (gu != G_NONE) best = min(best, f_at(metric, k, 0, metric == 0 ? (i64)gu * gu : gu));
    }
  }
  if (!done) done = f_at(metric, cap + 1, 0, 0) >= best || (y - cap - 1 < 0 && y + cap + 1 >= h);
  if (!done) {
    unfinished[x] = 1;
    return;
  }
  out[(i64)y * op + x] = best == none ? convert(__longlong_as_double(0x7ff0000000000000LL))
                                      : convert(metric == 0 ? sqrt((double)best) : (double)best);
}

/* Phase 2 along the columns that dist_scan left unfinished, a thread per column (so that a
 * warp's reads of g and writes of the result are coalesced): the lower envelope of the rows' functions
 * f(y, u) = metric(y - u, g(u)) on a stack of entries {row u, first y where it is lowest,
 * g's value there (L2: its square, which fits 32 bits)}, then read back bottom up into the
 * exact distances. A column's stack is contiguous (h entries at stack + x * h), so that its
 * top stays in the L1 cache: the stack's loads are the loop's latency. metric: 0 L2, 1 L1,
 * 2 LINF. */
extern "C" __global__ void dist_cols(const int *g, i64 gp, int w, int h, int metric, const int *unfinished,
                                     int4 *stack, OT *out, i64 op) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x >= w || !unfinished[x]) return;
  g += x, out += x;
  int4 *st = stack + (i64)x * h;
  int q = -1;
  for (int u0 = 0; u0 < h; u0 += 8) {
    int gv[8];
#pragma unroll
    for (int k = 0; k < 8; k++) gv[k] = u0 + k < h ? g[(i64)(u0 + k) * gp] : G_NONE; /* 8 loads in flight */
#pragma unroll 1
    for (int k = 0; k < 8; k++) {
      if (gv[k] == G_NONE) continue;
      i64 u = u0 + k, gu = metric == 0 ? (i64)gv[k] * gv[k] : gv[k];
      int4 top = make_int4(0, 0, 0, 0);
      while (q >= 0) {
        top = st[q];
        if (f_at(metric, top.y, u, gu) >= f_at(metric, top.y, top.x, (u32)top.z)) break;
        q--;
      }
      if (q < 0) {
        st[q = 0] = make_int4((int)u, 0, (int)(u32)gu, 0);
        continue;
      }
      i64 y = start_of(metric, top.x, (u32)top.z, u, gu);
      if (y < h) st[++q] = make_int4((int)u, (int)y, (int)(u32)gu, 0);
    }
  }
  if (q < 0) { /* no row has a feature in its row: none in the image */
    for (int y = 0; y < h; y++) out[(i64)y * op] = convert(__longlong_as_double(0x7ff0000000000000LL));
    return;
  }
  int4 top = st[q];
  for (int y = h - 1; y >= 0; y--) {
    while (y < top.y) top = st[--q];
    i64 d = f_at(metric, y, top.x, (u32)top.z);
    out[(i64)y * op] = convert(metric == 0 ? sqrt((double)d) : (double)d);
  }
}

/* ---- labels ---- */

#define BG 0xffffffffu   /* background */
#define RANK 0x80000000u /* lab_rank: marks a root's slot holding its number */

__device__ __forceinline__ MT map_at(const char *m, i64 mp, int x, int y) { return *(const MT *)(m + y * mp + x * sizeof(MT)); }

#define TW 32 /* lab_local's tiles: TW x TH pixels, a block of TW x 8 threads */
#define TH 32

/* The root of local index a's tree in a tile's labels s (shared memory). */
__device__ __forceinline__ u32 tile_root(volatile u32 *s, u32 a) {
  u32 p;
  while ((p = s[a]) != a) a = p;
  return a;
}

/* The root of a's tree in the image's labels, halving the path on the way (any ancestor is
 * a valid parent); read through L2 (__ldcg): other blocks relink roots meanwhile. */
__device__ __forceinline__ u32 root_of(u32 *L, u32 a) {
  for (;;) {
    u32 p = __ldcg(L + a);
    if (p == a) return a;
    u32 g = __ldcg(L + p);
    if (g == p) return p;
    __stcg(L + a, g);
    a = g;
  }
}

/* Joins the trees of a and b in the labels P - a tile's in shared memory (TILE) or the
 * image's: the larger root is linked under the smaller, so a component's root ends as
 * its first pixel in raster order. A link that lost a race is taken up again from the
 * value it lost to (so the union is never lost). */
template <bool TILE> __device__ void unite(u32 *P, u32 a, u32 b) {
  for (;;) {
    a = TILE ? tile_root(P, a) : root_of(P, a), b = TILE ? tile_root(P, b) : root_of(P, b);
    if (a == b) return;
    if (a > b) {
      u32 c = a;
      a = b, b = c;
    }
    u32 old = atomicMin(P + b, a);
    if (old == b) return;
    b = old;
  }
}

/* Each tile on its own, in shared memory: every foreground pixel of the tile points at the
 * first pixel (in raster order) of its component within the tile. A warp holds a tile row:
 * its runs of equal values are found by a ballot (each pixel points at its run's first
 * pixel at once), then runs are united with the row above where no union already made
 * implies it (by induction from the left: with the left pixel and the one above it equal
 * too, the left pixel's union covers this one; a diagonal is covered by the pixel above or
 * beside). */
extern "C" __global__ void lab_local(const char *m, i64 mp, int w, int h, int conn, u32 *L, i64 lp) {
  __shared__ u32 s[TW * TH];
  int x0 = blockIdx.x * TW, y0 = blockIdx.y * TH, tx = threadIdx.x, x = x0 + tx;
  unsigned upto = tx == 31 ? 0xffffffffu : (2u << tx) - 1; /* lanes 0 .. tx */
  for (int ly = threadIdx.y; ly < TH; ly += blockDim.y) {
    int y = y0 + ly;
    MT v = x < w && y < h ? map_at(m, mp, x, y) : (MT)0;
    bool fg = x < w && y < h && v != (MT)0, joins = fg && tx > 0 && map_at(m, mp, x - 1, y) == v;
    unsigned starts = __ballot_sync(0xffffffffu, fg && !joins);
    s[ly * TW + tx] = fg ? (u32)(ly * TW + 31 - __clz(starts & upto)) : BG;
  }
  __syncthreads();
  for (int ly = threadIdx.y; ly < TH; ly += blockDim.y) {
    int y = y0 + ly;
    u32 t = (u32)(ly * TW + tx);
    if (ly == 0 || s[t] == BG) continue; /* also outside the image */
    MT v = map_at(m, mp, x, y);
    bool right = tx + 1 < TW && x + 1 < w;
    bool eq_l = tx > 0 && map_at(m, mp, x - 1, y) == v, eq_u = map_at(m, mp, x, y - 1) == v;
    bool eq_ul = tx > 0 && map_at(m, mp, x - 1, y - 1) == v, eq_ur = right && map_at(m, mp, x + 1, y - 1) == v;
    if (eq_u && !(eq_l && eq_ul)) unite<true>(s, t, t - TW);
    if (conn == 8 && eq_ul && !eq_u && !eq_l) unite<true>(s, t, t - TW - 1);
    if (conn == 8 && eq_ur && !eq_u && !(right && map_at(m, mp, x + 1, y) == v)) unite<true>(s, t, t - TW + 1);
  }
  __syncthreads();
  for (int ly = threadIdx.y; ly < TH; ly += blockDim.y) {
    int y = y0 + ly;
    if (x >= w || y >= h) continue;
    u32 t = (u32)(ly * TW + tx), l = BG;
    if (s[t] != BG) {
      u32 r = tile_root(s, t);
      l = (u32)((y0 + r / TW) * lp + x0 + r % TW);
    }
    L[y * lp + x] = l;
  }
}

/* Unites the pixels of different tiles: each foreground pixel on a tile's edge with its
 * equal earlier neighbours (left, up-left, up, up-right) that lie in another tile, where
 * no other union already implies it. A thread per edge pixel: the rows a tile starts at
 * (y = TH, 2 TH, ...: nrows of them, w pixels each), then the columns (x = TW, 2 TW, ...
 * and, 8-connected, the column before each), the rows above left out but for y = 0.
 *
 * The unions implied, pixel p with its left l, up u, up-left ul, up-right ur and right r,
 * all of p's value (lab_local has united every pair within a tile; each rule below leans
 * only on unions made in a tile or by an earlier pixel, or on one of p's own unions that
 * leans on nothing here, so there is no circle):
 *   p-l (p on a tile's first column): by p-u-ul-l when u and ul are in the tiles of p and l
 *       (p not on a tile's first row), u-ul being u's own union of this kind;
 *   p-u (p on a tile's first row): by p-l-ul-u when p is not on a tile's first column,
 *       l-ul being l's union of this kind;
 *   p-ul: by p-u-ul or p-l-ul (u-ul and l-ul are each within a tile or an earlier pixel's
 *       union), so only when neither u nor l is of p's value;
 *   p-ur: by p-u-ur (u-ur within a tile, or ur's union with its left) or by p-r-ur (r-ur
 *       r's union with its upper neighbour or within a tile, r-p r's union with its left or
 *       within p's tile), so only when neither u nor r is of p's value.
 * On an image of few large components this leaves about one union per run crossing an
 * edge, where a union per edge pixel contended for the same roots. */
extern "C" __global__ void lab_border(const char *m, i64 mp, int w, int h, int conn, u32 *L, i64 lp, int nrows,
                                      int ncols) {
  i64 k = (i64)blockIdx.x * blockDim.x + threadIdx.x;
  int x, y;
  if (k < (i64)nrows * w) {
    y = (int)(k / w + 1) * TH, x = (int)(k % w);
  } else {
    k -= (i64)nrows * w;
    if (k >= (i64)ncols * h) return;
    int c = (int)(k / h);
    y = (int)(k % h);
    x = conn == 4 ? (c + 1) * TW : (c / 2 + 1) * TW - 1 + (c & 1);
    if (x >= w || (y % TH == 0 && y > 0)) return;
  }
  int lx = x % TW, ly = y % TH;
  MT v = map_at(m, mp, x, y);
  if (v == (MT)0) return;
  u32 i = (u32)(y * lp + x);
  bool eq_l = x > 0 && map_at(m, mp, x - 1, y) == v;
  bool eq_r = x + 1 < w && map_at(m, mp, x + 1, y) == v;
  if (lx == 0 && eq_l && !(ly > 0 && y > 0 && map_at(m, mp, x, y - 1) == v && map_at(m, mp, x - 1, y - 1) == v))
    unite<false>(L, i, i - 1);
  if (y == 0) return;
  bool eq_u = map_at(m, mp, x, y - 1) == v;
  if (ly == 0 && eq_u && !(lx > 0 && eq_l && map_at(m, mp, x - 1, y - 1) == v)) unite<false>(L, i, i - (u32)lp);
  if (conn != 8) return;
  if ((lx == 0 || ly == 0) && x > 0 && !eq_u && !eq_l && map_at(m, mp, x - 1, y - 1) == v)
    unite<false>(L, i, i - (u32)lp - 1);
  if ((lx == TW - 1 || ly == 0) && x + 1 < w && !eq_u && !eq_r && map_at(m, mp, x + 1, y - 1) == v)
    unite<false>(L, i, i - (u32)lp + 1);
}

/* Every pixel points at its root. Only its own slot is written (a path halved here could
 * undo a pixel's flattening done a moment before). */
extern "C" __global__ void lab_flatten(int w, int h, u32 *L, i64 lp) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  u32 i = (u32)(y * lp + x), p = L[i], q;
  if (p == BG || p == i) return;
  while ((q = L[p]) != p) p = q;
  L[i] = p;
}

#define CHUNK 32768 /* elements a block of lab_count and lab_rank covers (256 threads) */

/* Whether element i (of n, pitch lp, width w) is a root: a pixel (not padding) whose slot
 * holds its own index. */
__device__ __forceinline__ bool is_root(const u32 *L, i64 i, i64 n, i64 lp, int w) {
  return i < n && i % lp < w && L[i] == (u32)i;
}

extern "C" __global__ void lab_count(const u32 *L, i64 n, i64 lp, int w, u32 *cnt) {
  __shared__ u32 part[8];
  i64 start = (i64)blockIdx.x * CHUNK;
  u32 c = 0;
  for (int k = threadIdx.x; k < CHUNK; k += 256) c += is_root(L, start + k, n, lp, w);
  for (int o = 16; o > 0; o >>= 1) c += __shfl_down_sync(0xffffffffu, c, o);
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = c;
  __syncthreads();
  if (threadIdx.x == 0) {
    u32 sum = 0;
    for (int k = 0; k < 8; k++) sum += part[k];
    cnt[blockIdx.x] = sum;
  }
}

/* One block of 1024 threads: cnt[0 .. nchunks) becomes its exclusive prefix sums. */
extern "C" __global__ void lab_offsets(u32 *cnt, int nchunks) {
  __shared__ u32 part[32];
  __shared__ u32 carry;
  if (threadIdx.x == 0) carry = 0;
  __syncthreads();
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int base = 0; base < nchunks; base += 1024) {
    int k = base + threadIdx.x;
    u32 v = k < nchunks ? cnt[k] : 0, incl = v;
    for (int o = 1; o < 32; o <<= 1) {
      u32 n = __shfl_up_sync(0xffffffffu, incl, o);
      if (lane >= o) incl += n;
    }
    if (lane == 31) part[warp] = incl;
    __syncthreads();
    if (warp == 0) {
      u32 p = part[lane], pi = p;
      for (int o = 1; o < 32; o <<= 1) {
        u32 n = __shfl_up_sync(0xffffffffu, pi, o);
        if (lane >= o) pi += n;
      }
      part[lane] = pi - p; /* exclusive: the warps before */
    }
    __syncthreads();
    if (k < nchunks) cnt[k] = carry + part[warp] + incl - v;
    __syncthreads();
    if (threadIdx.x == 1023) carry += part[warp] + incl;
    __syncthreads();
  }
}

/* A root's slot becomes RANK | its number (1, 2, ... in raster order). */
extern "C" __global__ void lab_rank(u32 *L, i64 n, i64 lp, int w, const u32 *off) {
  __shared__ u32 part[8];
  i64 start = (i64)blockIdx.x * CHUNK;
  u32 base = off[blockIdx.x];
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int r = 0; r < CHUNK; r += 256) {
    i64 i = start + r + threadIdx.x;
    bool f = is_root(L, i, n, lp, w);
    u32 m = __ballot_sync(0xffffffffu, f);
    if (lane == 0) part[warp] = __popc(m);
    __syncthreads();
    u32 before = base, total = 0;
    for (int k = 0; k < 8; k++) {
      if (k < warp) before += part[k];
      total += part[k];
    }
    if (f) L[i] = RANK | (before + __popc(m & ((1u << lane) - 1)) + 1);
    base += total;
    __syncthreads();
  }
}

extern "C" __global__ void lab_final(int w, int h, u32 *L, i64 lp) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  u32 i = (u32)(y * lp + x), v = L[i];
  L[i] = v == BG ? 0 : (v & RANK) ? v & ~RANK : L[v] & ~RANK;
}
