/*
 * emulate.hpp - the CUDA built-ins of pxl's generated units, on the CPU, for tests that
 * run a unit without a GPU (steps_emul_test.c). Compiled as C++ before the unit, with
 * __CUDACC__ defined so that the prelude takes its CUDA branch.
 *
 * A block runs as bx * by POSIX threads, one per CUDA thread, blocks one after another:
 * `__shared__` variables are function statics (one block at a time uses them),
 * __syncthreads is a barrier of the block's threads, and each warp shuffle is an exchange
 * through a per-warp array between two barriers of the warp's 32 threads - so every lane
 * of a warp must reach the same shuffle, as the generated code's full-mask shuffles
 * require on a GPU too. Only what the tested units use is here; a unit that needs more
 * fails to compile, which the test reports.
 */
#ifndef PXL_TESTS_CUDA_EMULATE_HPP
#define PXL_TESTS_CUDA_EMULATE_HPP

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define __device__
#define __global__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(n)
#define __align__(n) __attribute__((aligned(n)))
#define __shared__ static

struct emu_dim3 {
  unsigned x, y, z;
};
static thread_local emu_dim3 threadIdx, blockIdx;
static emu_dim3 blockDim, gridDim;

static pthread_barrier_t emu_block_bar;
static pthread_barrier_t emu_warp_bar[32];
static unsigned emu_xchg[32][32];

static inline unsigned emu_tid() { return threadIdx.y * blockDim.x + threadIdx.x; }
static inline void __syncthreads() { pthread_barrier_wait(&emu_block_bar); }
static inline void __syncwarp(unsigned = 0xffffffffu) { pthread_barrier_wait(&emu_warp_bar[emu_tid() / 32]); }
static inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

/* lane `from` of the caller's warp, every lane giving v (from outside the warp: v) */
static inline unsigned emu_shfl(unsigned v, int from) {
  unsigned t = emu_tid(), w = t / 32, lane = t % 32;
  emu_xchg[w][lane] = v;
  pthread_barrier_wait(&emu_warp_bar[w]);
  unsigned r = from >= 0 && from < 32 ? emu_xchg[w][from] : v;
  pthread_barrier_wait(&emu_warp_bar[w]);
  return r;
}
static inline unsigned __shfl_up_sync(unsigned, unsigned v, unsigned d) {
  int lane = (int)(emu_tid() % 32);
  return emu_shfl(v, lane >= (int)d ? lane - (int)d : lane);
}
static inline unsigned __shfl_down_sync(unsigned, unsigned v, unsigned d) {
  int lane = (int)(emu_tid() % 32);
  return emu_shfl(v, lane + (int)d < 32 ? lane + (int)d : lane);
}
static inline unsigned __shfl_sync(unsigned, unsigned v, int src) { return emu_shfl(v, src & 31); }
static inline unsigned __shfl_xor_sync(unsigned, unsigned v, int m) { return emu_shfl(v, (int)(emu_tid() % 32) ^ m); }

/* byte permutes: selector nibbles pick bytes of {b:a} (0-3 of a, 4-7 of b) */
static inline unsigned __byte_perm(unsigned a, unsigned b, unsigned s) {
  uint64_t v = (uint64_t)b << 32 | a;
  unsigned r = 0;
  for (int k = 0; k < 4; k++) r |= (unsigned)(v >> (8 * ((s >> (4 * k)) & 7)) & 0xffu) << (8 * k);
  return r;
}

/* per 16-bit half: f(half of a, half of b) */
template <class F> static inline unsigned emu_halves(unsigned a, unsigned b, F f) {
  unsigned lo = f(a & 0xffffu, b & 0xffffu) & 0xffffu, hi = f(a >> 16, b >> 16) & 0xffffu;
  return lo | hi << 16;
}
static inline int emu_s16(unsigned h) { return (int)(int16_t)(uint16_t)h; }
static inline unsigned __vminu2(unsigned a, unsigned b) {
  return emu_halves(a, b, [](unsigned x, unsigned y) { return x < y ? x : y; });
}
static inline unsigned __vmaxu2(unsigned a, unsigned b) {
  return emu_halves(a, b, [](unsigned x, unsigned y) { return x > y ? x : y; });
}
static inline unsigned __vmaxs2(unsigned a, unsigned b) {
  return emu_halves(a, b, [](unsigned x, unsigned y) { return emu_s16(x) > emu_s16(y) ? x : y; });
}
static inline unsigned __vmins2(unsigned a, unsigned b) {
  return emu_halves(a, b, [](unsigned x, unsigned y) { return emu_s16(x) < emu_s16(y) ? x : y; });
}
static inline unsigned __vadd2(unsigned a, unsigned b) {
  return emu_halves(a, b, [](unsigned x, unsigned y) { return x + y; });
}
static inline unsigned __vsub2(unsigned a, unsigned b) {
  return emu_halves(a, b, [](unsigned x, unsigned y) { return x - y; });
}
#define EMU_CMP2(name, expr)                                                                                     \
  static inline unsigned name(unsigned a, unsigned b) {                                                          \
    return emu_halves(a, b, [](unsigned x, unsigned y) { return (expr) ? 0xffffu : 0u; });                      \
  }
EMU_CMP2(__vcmpeq2, x == y)
EMU_CMP2(__vcmpne2, x != y)
EMU_CMP2(__vcmplts2, emu_s16(x) < emu_s16(y))
EMU_CMP2(__vcmples2, emu_s16(x) <= emu_s16(y))
EMU_CMP2(__vcmpltu2, x < y)
EMU_CMP2(__vcmpleu2, x <= y)
EMU_CMP2(__vcmpgts2, emu_s16(x) > emu_s16(y))
EMU_CMP2(__vcmpges2, emu_s16(x) >= emu_s16(y))
EMU_CMP2(__vcmpgtu2, x > y)
EMU_CMP2(__vcmpgeu2, x >= y)
static inline long long __double_as_longlong(double v) {
  long long r;
  memcpy(&r, &v, sizeof r);
  return r;
}
static inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((uint64_t)a * b) >> 32); }

static inline unsigned atomicAdd(unsigned *p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
static inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v) {
  return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
static inline unsigned long long atomicExch(unsigned long long *p, unsigned long long v) {
  return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);
}

struct uint2 {
  unsigned x, y;
};
struct uint4 {
  unsigned x, y, z, w;
};

/* Runs kernel k over a grid of gx x gy blocks of bx x by threads: the threads are made
 * once and go through the blocks in order, meeting at a barrier after each (the next
 * block reuses the statics that stand for shared memory). */
template <class Args> struct emu_job {
  void (*k)(Args);
  const Args *a;
  unsigned tx, ty;
};
template <class Args> static void *emu_thread(void *p) {
  emu_job<Args> *j = (emu_job<Args> *)p;
  threadIdx = {j->tx, j->ty, 0};
  for (unsigned y = 0; y < gridDim.y; y++)
    for (unsigned x = 0; x < gridDim.x; x++) {
      blockIdx = {x, y, 0};
      j->k(*j->a);
      pthread_barrier_wait(&emu_block_bar);
    }
  return nullptr;
}
template <class Args>
static int emu_grid(void (*k)(Args), const Args &a, unsigned gx, unsigned gy, unsigned bx, unsigned by) {
  unsigned n = bx * by;
  if (n % 32 || n > 1024) return -1;
  blockDim = {bx, by, 1};
  gridDim = {gx, gy, 1};
  pthread_barrier_init(&emu_block_bar, nullptr, n);
  for (unsigned w = 0; w < n / 32; w++) pthread_barrier_init(&emu_warp_bar[w], nullptr, 32);
  static emu_job<Args> jobs[1024];
  static pthread_t th[1024];
  for (unsigned t = 0; t < n; t++) {
    jobs[t] = {k, &a, t % bx, t / bx};
    if (pthread_create(&th[t], nullptr, emu_thread<Args>, &jobs[t])) abort(); /* the others would wait forever */
  }
  for (unsigned t = 0; t < n; t++) pthread_join(th[t], nullptr);
  pthread_barrier_destroy(&emu_block_bar);
  for (unsigned w = 0; w < n / 32; w++) pthread_barrier_destroy(&emu_warp_bar[w]);
  return 0;
}

#endif
