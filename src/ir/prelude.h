/*
 * prelude.h - the language's arithmetic semantics as C, shared by the reference
 * interpreter and every generated C file.
 *
 * This one file is the single source of truth for what a conversion, a division or a
 * border read means: the interpreter #includes it, and the C code generator pastes its
 * text at the top of each generated file (see CMakeLists.txt: it becomes a string). So
 * the CPU backend and the oracle cannot drift apart. It must stay self-contained C11
 * (stdint.h and math.h only) and define nothing but PXR_FN functions and macros
 * prefixed pxr_ / PXR_.
 */
#ifndef PXL_PRELUDE_H
#define PXL_PRELUDE_H

#if defined(__OPENCL_C_VERSION__) || defined(__OPENCL_VERSION__)
#define PXR_OPENCL 1 /* OpenCL C */
#endif

#if defined(PXR_OPENCL)
/* OpenCL C 1.2: no C library; fixed-width names, C99 float-function names and the
 * optional extensions pxl's code relies on: 64-bit floats (f64, float-weighted bins) and
 * 64-bit atomics (histograms). The runtime defines PXR_NO_F64 for a device without
 * cl_khr_fp64 and PXR_NO_INT64_ATOMICS for one without cl_khr_int64_base_atomics; then
 * nothing below mentions double, or the 64-bit atomics, so that kernels which need
 * neither build there (the runtime refuses the others, naming the extension). */
#if !defined(PXR_NO_F64)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#if !defined(PXR_NO_INT64_ATOMICS)
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#endif
typedef char int8_t;
typedef uchar uint8_t;
typedef short int16_t;
typedef ushort uint16_t;
typedef int int32_t;
typedef uint uint32_t;
typedef long int64_t;
typedef ulong uint64_t;
#define INT32_MIN (-2147483647 - 1)
#define INT32_MAX 2147483647
#define UINT32_MAX 4294967295u
#define INT64_MIN (-9223372036854775807L - 1)
#define INT64_MAX 9223372036854775807L
#define UINT64_MAX 18446744073709551615UL
#define nearbyint rint
#define nearbyintf rint
#define roundf round
#define fabsf fabs
#define sqrtf sqrt
#define expf exp
#define logf log
#define sinf sin
#define cosf cos
#define floorf floor
#define ceilf ceil
#define powf pow
#define atan2f atan2
#elif defined(__CUDACC_RTC__)
/* NVRTC has no C library headers: the few names used here, for 64-bit targets. */
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
typedef unsigned long long uintptr_t;
#define INT32_MIN (-2147483647 - 1)
#define INT32_MAX 2147483647
#define UINT32_MAX 4294967295u
#define INT64_MIN (-9223372036854775807LL - 1)
#define INT64_MAX 9223372036854775807LL
#define UINT64_MAX 18446744073709551615ULL
#define NAN __int_as_float(0x7fc00000)
#define INFINITY __int_as_float(0x7f800000)
#else
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#if defined(__SSE2__) && !defined(__CUDACC__) && !defined(PXR_OPENCL)
#include <emmintrin.h>
#endif
#endif

/* Double precision: everywhere except on OpenCL devices without it. */
#if !defined(PXR_OPENCL) || !defined(PXR_NO_F64)
#define PXR_F64 1
#endif
/* The float member of a GPU kernel's scalar argument slot (gen_gpu.c: pxlc_scalar):
 * double, or float on a device without double precision (f32 scalars and results). */
#if defined(PXR_F64)
#define PXR_SCALAR_FLOAT double
#else
#define PXR_SCALAR_FLOAT float
#endif

/* Function and pointer qualifiers of the dialects: C (CPU backend, interpreter), CUDA
 * and OpenCL C. PXR_GLOBAL / PXR_LOCAL are the address spaces of image memory and of a
 * work-group's shared tiles (OpenCL only); PXR_IMAGE_DATA is where image k's pixels start
 * (OpenCL passes buffers b<k> and byte offsets). */
#if defined(PXR_OPENCL)
#define PXR_FN static inline
#define PXR_FN_ALWAYS static inline
#define PXR_RESTRICT restrict
#define PXR_GLOBAL __global
#define PXR_LOCAL __local
#define PXR_IMAGE_DATA(in, k) (b##k + (in)[k].data)
#elif defined(__CUDACC__)
#define PXR_FN static __device__ __forceinline__
#define PXR_FN_ALWAYS static __device__ __forceinline__
#define PXR_RESTRICT __restrict__
#define PXR_GLOBAL
#define PXR_LOCAL
#define PXR_IMAGE_DATA(in, k) ((in)[k].data)
#else
#define PXR_FN static inline
#define PXR_FN_ALWAYS PXR_FN __attribute__((always_inline))
#define PXR_RESTRICT restrict
#define PXR_GLOBAL
#define PXR_LOCAL
#define PXR_IMAGE_DATA(in, k) ((in)[k].data)
#endif

/* Before a loop of a few iterations known when it is written (a window's counter from
 * one literal to another): unroll it completely. GCC and clang otherwise keep a 5x5
 * window's loops when their bodies are large, and a row loop with loops in it is not
 * vectorised (NVRTC and OpenCL compilers unroll such loops by themselves). */
#if defined(PXR_OPENCL) || defined(__CUDACC__)
#define PXR_UNROLL
#elif defined(__clang__)
#define PXR_UNROLL _Pragma("clang loop unroll(full)")
#elif defined(__GNUC__)
#define PXR_UNROLL _Pragma("GCC unroll 16")
#else
#define PXR_UNROLL
#endif

/* Tables (const arrays of the language) live in constant memory on GPUs. An array
 * index outside 0..n-1 maps to n, the zero element past the end of every array (reads
 * there give 0; writes are guarded by the caller and never land there). */
#if defined(PXR_OPENCL)
#define PXR_TABLE __constant
#elif defined(__CUDACC__)
#define PXR_TABLE static __constant__
#else
#define PXR_TABLE static const
#endif
/* An array parameter's elements: pxlc_scalar[len + 1] (the last 0) whose address sc[k].i
 * holds (C, CUDA), or, in OpenCL, at byte offset sc[k].i of the buffer bprm. */
#if defined(PXR_OPENCL)
#define PXR_ARRAY_ARG(sc, k) ((const __global pxlc_scalar *)(bprm + (sc)[k].i))
#else
#define PXR_ARRAY_ARG(sc, k) ((const pxlc_scalar *)(unsigned long long)(sc)[k].i)
#endif
PXR_FN int32_t pxr_ix(int64_t i, int32_t n) { return (uint64_t)i < (uint64_t)n ? (int32_t)i : n; }

/* Histogram bin updates: plain on the CPU (each thread has its own bins), atomic on GPUs.
 * INC32 counts into 32-bit bins (a work-group's shared bins on GPUs). */
#if defined(PXR_OPENCL)
#if !defined(PXR_NO_INT64_ATOMICS) /* else left undefined: the runtime refuses histograms */
#define PXR_BIN_INC(p) atom_inc((volatile __global long *)(p))
#define PXR_BIN_ADD_I64(p, w) atom_add((volatile __global long *)(p), (long)(w))
#endif
#define PXR_BIN_INC32(p) atomic_inc((volatile __local uint *)(p))
#define PXR_BIN_ADD_F64(p, w) (*(p) += (w)) /* float bins run on one thread: exact order */
#elif defined(__CUDACC__)
#define PXR_BIN_INC(p) atomicAdd((unsigned long long *)(p), 1ull)
#define PXR_BIN_INC32(p) atomicAdd((unsigned *)(p), 1u)
#define PXR_BIN_ADD_I64(p, w) atomicAdd((unsigned long long *)(p), (unsigned long long)(w))
#define PXR_BIN_ADD_F64(p, w) (*(p) += (w)) /* float bins run on one thread: exact order */
#else
#define PXR_BIN_INC(p) ((*(p))++)
#define PXR_BIN_INC32(p) ((*(p))++)
#define PXR_BIN_ADD_I64(p, w) (*(p) = (int64_t)((uint64_t)*(p) + (uint64_t)(w)))
#define PXR_BIN_ADD_F64(p, w) (*(p) += (w))
#endif

/* Minima and maxima per bin (bin_min, bin_max): the compiled backends keep a bin as an
 * unsigned 64-bit key whose order is the values' (reversed for minima), 0 when empty, and
 * keep the larger key, so one atomic maximum serves both, in any order; the runtime turns
 * keys back into values (i64: INT64_MAX / INT64_MIN when empty, f64: +inf / -inf; a NaN
 * value is key 0, no change; -0.0 orders below +0.0). On OpenCL a compare-and-swap loop
 * (cl_khr_int64_base_atomics, as the sums need). */
PXR_FN uint64_t pxr_bkey_i64(int64_t v, int lo) {
  uint64_t k = (uint64_t)v ^ 0x8000000000000000ull;
  return lo ? ~k : k;
}
#if !defined(PXR_NO_F64)
PXR_FN uint64_t pxr_bkey_f64(double v, int lo) {
#if defined(PXR_OPENCL)
  uint64_t u = as_ulong(v);
#elif defined(__CUDACC__)
  uint64_t u = (uint64_t)__double_as_longlong(v);
#else
  union { double d; uint64_t u; } c;
  c.d = v;
  uint64_t u = c.u;
#endif
  uint64_t k = (u >> 63) ? ~u : u | 0x8000000000000000ull;
  return v != v ? 0 : lo ? ~k : k;
}
#endif
#if defined(PXR_OPENCL)
#if !defined(PXR_NO_INT64_ATOMICS)
PXR_FN void pxr_bin_max_u64(volatile __global ulong *p, ulong k) {
  ulong o = *p;
  while (o < k) {
    ulong r = atom_cmpxchg(p, o, k);
    if (r == o) break;
    o = r;
  }
}
#define PXR_BIN_MAX_U64(p, k) pxr_bin_max_u64((volatile __global ulong *)(p), (ulong)(k))
#endif
#elif defined(__CUDACC__)
#define PXR_BIN_MAX_U64(p, k) atomicMax((unsigned long long *)(p), (unsigned long long)(k))
#else
#define PXR_BIN_MAX_U64(p, k)                                                        \
  do {                                                                               \
    uint64_t k_ = (k);                                                               \
    if (k_ > (uint64_t) * (p)) *(p) = (int64_t)k_;                                   \
  } while (0)
#endif

/* ---- conversions: saturating; float -> int rounds to nearest, ties to even; NaN -> 0 ---- */

/* From f64 (the interpreter converts f32 values here too; generated code uses the f32
 * versions below, which give the same results). */
#if defined(PXR_F64)
PXR_FN double pxr_rne(double v) { return nearbyint(v); } /* default rounding mode */

#define PXR_SAT_FROM_F(name, T, lo, hi)                                                     \
  PXR_FN T name(double v) {                                                        \
    if (!(v == v)) return 0;                                                              \
    v = pxr_rne(v);                                                                       \
    if (v <= (double)(lo)) return (T)(lo);                                                \
    if (v >= (double)(hi)) return (T)(hi);                                                \
    return (T)v;                                                                          \
  }
PXR_SAT_FROM_F(pxr_f2u8, uint8_t, 0, 255)
PXR_SAT_FROM_F(pxr_f2i16, int16_t, -32768, 32767)
PXR_SAT_FROM_F(pxr_f2u16, uint16_t, 0, 65535)
PXR_SAT_FROM_F(pxr_f2i32, int32_t, INT32_MIN, INT32_MAX)
PXR_SAT_FROM_F(pxr_f2u32, uint32_t, 0, UINT32_MAX)
#undef PXR_SAT_FROM_F

/* float -> 64-bit integers: the bounds are not exact doubles, so compare half-open. */
PXR_FN int64_t pxr_f2i64(double v) {
  if (!(v == v)) return 0;
  v = pxr_rne(v);
  if (v < -9223372036854775808.0) return INT64_MIN;
  if (v >= 9223372036854775808.0) return INT64_MAX;
  return (int64_t)v;
}
PXR_FN uint64_t pxr_f2u64(double v) {
  if (!(v == v)) return 0;
  v = pxr_rne(v);
  if (v <= 0) return 0;
  if (v >= 18446744073709551616.0) return UINT64_MAX;
  return (uint64_t)v;
}
#endif

/* Integer -> integer: clamp a signed 64-bit or unsigned 64-bit value into the target. */
#define PXR_SAT_FROM_S(name, T, lo, hi)                                                     \
  PXR_FN T name(int64_t v) { return v < (lo) ? (T)(lo) : v > (hi) ? (T)(hi) : (T)v; }
PXR_SAT_FROM_S(pxr_s2u8, uint8_t, 0, 255)
PXR_SAT_FROM_S(pxr_s2i16, int16_t, -32768, 32767)
PXR_SAT_FROM_S(pxr_s2u16, uint16_t, 0, 65535)
PXR_SAT_FROM_S(pxr_s2i32, int32_t, INT32_MIN, INT32_MAX)
PXR_SAT_FROM_S(pxr_s2u32, uint32_t, 0, (int64_t)UINT32_MAX)
#undef PXR_SAT_FROM_S
PXR_FN int64_t pxr_s2i64(int64_t v) { return v; }
PXR_FN uint64_t pxr_s2u64(int64_t v) { return v < 0 ? 0 : (uint64_t)v; }

#define PXR_SAT_FROM_U(name, T, hi)                                                         \
  PXR_FN T name(uint64_t v) { return v > (uint64_t)(hi) ? (T)(hi) : (T)v; }
PXR_SAT_FROM_U(pxr_u2u8, uint8_t, 255)
PXR_SAT_FROM_U(pxr_u2i16, int16_t, 32767)
PXR_SAT_FROM_U(pxr_u2u16, uint16_t, 65535)
PXR_SAT_FROM_U(pxr_u2i32, int32_t, INT32_MAX)
PXR_SAT_FROM_U(pxr_u2u32, uint32_t, UINT32_MAX)
PXR_SAT_FROM_U(pxr_u2i64, int64_t, INT64_MAX)
#undef PXR_SAT_FROM_U
PXR_FN uint64_t pxr_u2u64(uint64_t v) { return v; }

/* Narrow-source saturations, so generated code stays in 32-bit lanes (vectorisable). */
#define PXR_SAT_I32(name, T, lo, hi)                                                        \
  PXR_FN T name(int32_t v) { return v < (lo) ? (T)(lo) : v > (hi) ? (T)(hi) : (T)v; }
PXR_SAT_I32(pxr_i32_u8, uint8_t, 0, 255)
PXR_SAT_I32(pxr_i32_i16, int16_t, -32768, 32767)
PXR_SAT_I32(pxr_i32_u16, uint16_t, 0, 65535)
#undef PXR_SAT_I32
PXR_FN uint32_t pxr_i32_u32(int32_t v) { return v < 0 ? 0u : (uint32_t)v; }
#define PXR_SAT_U32(name, T, hi)                                                            \
  PXR_FN T name(uint32_t v) { return v > (uint32_t)(hi) ? (T)(hi) : (T)v; }
PXR_SAT_U32(pxr_u32_u8, uint8_t, 255)
PXR_SAT_U32(pxr_u32_i16, int16_t, 32767)
PXR_SAT_U32(pxr_u32_u16, uint16_t, 65535)
PXR_SAT_U32(pxr_u32_i32, int32_t, INT32_MAX)
#undef PXR_SAT_U32
/* f32 -> integers in single precision: in 32-bit lanes (vectorisable), and without
 * double on OpenCL devices that lack it. The result is pxr_f2*((double)v)'s for every
 * float v: NaN gives 0 in both; rounding a float to an integer is exact in float (from
 * 2^23 up every float is an integer, below it the result is at most 2^23, a float), so
 * nearbyintf(v) is pxr_rne((double)v); and each bound compare gives the same
 * answer: flo is the double version's lower bound exactly (0, -32768, -2^31, -2^63; at
 * -2^63 the double version's (T)v is INT64_MIN too), fhi its upper bound where that is
 * a float (255, 32767, 65535, 2^63, 2^64), else hi + 1 (2^31, 2^32), and no float lies
 * in [hi, hi + 1) there (floats near 2^31 are 128 apart, near 2^32 256). Between the
 * bounds (T)v converts the same integer value. (Checked for all 2^32 floats.) */
#define PXR_SAT_F32(name, T, lo, hi, flo, fhi)                                              \
  PXR_FN T name(float v) {                                                                \
    if (!(v == v)) return 0;                                                              \
    v = nearbyintf(v);                                                                    \
    return v <= (flo) ? (T)(lo) : v >= (fhi) ? (T)(hi) : (T)v;                            \
  }
PXR_SAT_F32(pxr_f32_u8, uint8_t, 0, 255, 0.0f, 255.0f)
PXR_SAT_F32(pxr_f32_i16, int16_t, -32768, 32767, -32768.0f, 32767.0f)
PXR_SAT_F32(pxr_f32_u16, uint16_t, 0, 65535, 0.0f, 65535.0f)
PXR_SAT_F32(pxr_f32_i32, int32_t, INT32_MIN, INT32_MAX, -0x1p31f, 0x1p31f)
PXR_SAT_F32(pxr_f32_u32, uint32_t, 0, UINT32_MAX, 0.0f, 0x1p32f)
PXR_SAT_F32(pxr_f32_i64, int64_t, INT64_MIN, INT64_MAX, -0x1p63f, 0x1p63f)
PXR_SAT_F32(pxr_f32_u64, uint64_t, 0, UINT64_MAX, 0.0f, 0x1p64f)
#undef PXR_SAT_F32

/* ---- integer min/max (functions, so nested uses do not repeat their operands) ---- */

#define PXR_MINMAX(T, sfx)                                                                  \
  PXR_FN T pxr_min_##sfx(T a, T b) { return b < a ? b : a; }                       \
  PXR_FN T pxr_max_##sfx(T a, T b) { return b > a ? b : a; }
PXR_MINMAX(uint8_t, u8)
PXR_MINMAX(int16_t, i16)
PXR_MINMAX(uint16_t, u16)
PXR_MINMAX(int32_t, i32)
PXR_MINMAX(uint32_t, u32)
PXR_MINMAX(int64_t, i64)
PXR_MINMAX(uint64_t, u64)
#undef PXR_MINMAX

/* ---- integer arithmetic: wraps (two's complement); x / 0 == 0 and x % 0 == 0 ---- */

/* v / d and v % d for v in a range where (v * m) >> (16 + s) == v / d holds for every v
 * (codegen checked each, emit.c div16): a 16-bit multiply-high, 32 lanes per AVX-512 op */
PXR_FN uint16_t pxr_udiv16(uint16_t v, uint16_t m, int s) { return (uint16_t)((uint16_t)(((uint32_t)v * m) >> 16) >> s); }
PXR_FN uint16_t pxr_umod16(uint16_t v, uint16_t d, uint16_t m, int s) { return (uint16_t)(v - pxr_udiv16(v, m, s) * d); }
PXR_FN int32_t pxr_add_i32(int32_t a, int32_t b) { return (int32_t)((uint32_t)a + (uint32_t)b); }
PXR_FN int32_t pxr_sub_i32(int32_t a, int32_t b) { return (int32_t)((uint32_t)a - (uint32_t)b); }
PXR_FN int32_t pxr_mul_i32(int32_t a, int32_t b) { return (int32_t)((uint32_t)a * (uint32_t)b); }
PXR_FN int32_t pxr_neg_i32(int32_t a) { return (int32_t)(0u - (uint32_t)a); }
PXR_FN int64_t pxr_add_i64(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
PXR_FN int64_t pxr_sub_i64(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
PXR_FN int64_t pxr_mul_i64(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }
PXR_FN int64_t pxr_neg_i64(int64_t a) { return (int64_t)(0u - (uint64_t)a); }

PXR_FN int32_t pxr_div_i32(int32_t a, int32_t b) {
  return b == 0 ? 0 : (b == -1 ? pxr_neg_i32(a) : a / b);
}
PXR_FN int32_t pxr_mod_i32(int32_t a, int32_t b) { return (b == 0 || b == -1) ? 0 : a % b; }
PXR_FN uint32_t pxr_div_u32(uint32_t a, uint32_t b) { return b == 0 ? 0 : a / b; }
PXR_FN uint32_t pxr_mod_u32(uint32_t a, uint32_t b) { return b == 0 ? 0 : a % b; }
PXR_FN int64_t pxr_div_i64(int64_t a, int64_t b) {
  return b == 0 ? 0 : (b == -1 ? pxr_neg_i64(a) : a / b);
}
PXR_FN int64_t pxr_mod_i64(int64_t a, int64_t b) { return (b == 0 || b == -1) ? 0 : a % b; }
PXR_FN uint64_t pxr_div_u64(uint64_t a, uint64_t b) { return b == 0 ? 0 : a / b; }
PXR_FN uint64_t pxr_mod_u64(uint64_t a, uint64_t b) { return b == 0 ? 0 : a % b; }

/* Shifts use the count modulo the operand's width; >> is arithmetic for signed types. */
PXR_FN int32_t pxr_shl_i32(int32_t a, int32_t n) { return (int32_t)((uint32_t)a << (n & 31)); }
PXR_FN int32_t pxr_shr_i32(int32_t a, int32_t n) { return a >> (n & 31); }
PXR_FN uint32_t pxr_shl_u32(uint32_t a, uint32_t n) { return a << (n & 31); }
PXR_FN uint32_t pxr_shr_u32(uint32_t a, uint32_t n) { return a >> (n & 31); }
PXR_FN int64_t pxr_shl_i64(int64_t a, int64_t n) { return (int64_t)((uint64_t)a << (n & 63)); }
PXR_FN int64_t pxr_shr_i64(int64_t a, int64_t n) { return a >> (n & 63); }
PXR_FN uint64_t pxr_shl_u64(uint64_t a, uint64_t n) { return a << (n & 63); }
PXR_FN uint64_t pxr_shr_u64(uint64_t a, uint64_t n) { return a >> (n & 63); }

/* abs of the most negative integer wraps to itself, as the negation does. */
PXR_FN int32_t pxr_abs_i32(int32_t a) { return a < 0 ? pxr_neg_i32(a) : a; }
PXR_FN int64_t pxr_abs_i64(int64_t a) { return a < 0 ? pxr_neg_i64(a) : a; }

/* ---- floating point: min/max return the other operand when one is NaN ---- */

PXR_FN float pxr_min_f32(float a, float b) { return b < a || a != a ? b : a; }
PXR_FN float pxr_max_f32(float a, float b) { return b > a || a != a ? b : a; }
/* round(): half away from zero, like C's round. */
PXR_FN float pxr_round_f32(float a) { return roundf(a); }
#if defined(PXR_F64)
PXR_FN double pxr_min_f64(double a, double b) { return b < a || a != a ? b : a; }
PXR_FN double pxr_max_f64(double a, double b) { return b > a || a != a ? b : a; }
PXR_FN double pxr_round_f64(double a) { return round(a); }
#endif

/* ---- border modes: map a coordinate i into [0, n) ---- */

PXR_FN int pxr_clamp_idx(int i, int n) { return i < 0 ? 0 : i >= n ? n - 1 : i; }
/* The same as a maximum then a minimum: gcc vectorises it into two instructions (the
 * CPU's lanes, emit.c "pv"), where the nested choice above became masked gathers. */
PXR_FN int pxr_clamp_lane(int i, int n) {
  i = i < 0 ? 0 : i;
  return i > n - 1 ? n - 1 : i;
}
PXR_FN int pxr_wrap_idx(int i, int n) {
  int r = i % n;
  return r < 0 ? r + n : r;
}
/* mirror: the edge pixel repeats (dcba|abcd|dcba), period 2n. */
PXR_FN int pxr_mirror_idx(int i, int n) {
  int r = pxr_wrap_idx(i, 2 * n);
  return r < n ? r : 2 * n - 1 - r;
}
/* mirror101: the edge pixel does not repeat (dcb|abcd|cba), period 2n-2. */
PXR_FN int pxr_mirror101_idx(int i, int n) {
  if (n == 1) return 0;
  int r = pxr_wrap_idx(i, 2 * n - 2);
  return r < n ? r : 2 * n - 2 - r;
}
PXR_FN int pxr_inside(int i, int n) { return (unsigned)i < (unsigned)n; }

/* ---- staging for non-sequential P2P: dst[x * ds + y] = src[y * ss + x], bytes ---- */

#if defined(__SSE2__) && !defined(__CUDACC__) && !defined(PXR_OPENCL)
/* A 16x16 block: four rounds of interleaving (8, 16, 32, 64-bit units). */
PXR_FN void pxr_t16_u8(const uint8_t *src, ptrdiff_t ss, uint8_t *dst, ptrdiff_t ds) {
  __m128i r[16], a[16], b[16], c[16];
  for (int i = 0; i < 16; i++) r[i] = _mm_loadu_si128((const __m128i *)(const void *)(src + i * ss));
  for (int i = 0; i < 8; i++) { /* a[2i], a[2i+1]: columns 0-7, 8-15 of rows 2i, 2i+1 */
    a[2 * i] = _mm_unpacklo_epi8(r[2 * i], r[2 * i + 1]);
    a[2 * i + 1] = _mm_unpackhi_epi8(r[2 * i], r[2 * i + 1]);
  }
  for (int j = 0; j < 4; j++) { /* b[4j + k]: columns 4k..4k+3 of rows 4j..4j+3 */
    b[4 * j + 0] = _mm_unpacklo_epi16(a[4 * j], a[4 * j + 2]);
    b[4 * j + 1] = _mm_unpackhi_epi16(a[4 * j], a[4 * j + 2]);
    b[4 * j + 2] = _mm_unpacklo_epi16(a[4 * j + 1], a[4 * j + 3]);
    b[4 * j + 3] = _mm_unpackhi_epi16(a[4 * j + 1], a[4 * j + 3]);
  }
  for (int m = 0; m < 2; m++) /* c[8m + n]: columns 2n, 2n+1 of rows 8m..8m+7 */
    for (int k = 0; k < 4; k++) {
      c[8 * m + 2 * k] = _mm_unpacklo_epi32(b[8 * m + k], b[8 * m + 4 + k]);
      c[8 * m + 2 * k + 1] = _mm_unpackhi_epi32(b[8 * m + k], b[8 * m + 4 + k]);
    }
  for (int n = 0; n < 8; n++) { /* column 2n and 2n+1, all 16 rows */
    _mm_storeu_si128((__m128i *)(void *)(dst + (2 * n) * ds), _mm_unpacklo_epi64(c[n], c[8 + n]));
    _mm_storeu_si128((__m128i *)(void *)(dst + (2 * n + 1) * ds), _mm_unpackhi_epi64(c[n], c[8 + n]));
  }
}
#endif

PXR_FN void pxr_transpose_u8(const uint8_t *src, ptrdiff_t ss, uint8_t *dst, ptrdiff_t ds, int w, int h) {
  int y0 = 0;
#if defined(__SSE2__) && !defined(__CUDACC__) && !defined(PXR_OPENCL)
  for (; y0 + 16 <= h; y0 += 16) {
    int x0 = 0;
    for (; x0 + 16 <= w; x0 += 16) pxr_t16_u8(src + y0 * ss + x0, ss, dst + x0 * ds + y0, ds);
    for (int x = x0; x < w; x++)
      for (int y = y0; y < y0 + 16; y++) dst[x * ds + y] = src[y * ss + x];
  }
#endif
  for (int y = y0; y < h; y++)
    for (int x = 0; x < w; x++) dst[x * ds + y] = src[y * ss + x];
}

/* AVX-512 where the C compiler targets it (-march=native) and the unit calls
 * pxr_scan_add_u32 or pxr_lut_u8 (PXR_AVX512_HELPERS, defined before this text by the C
 * generator for such units and for every `pxl compile` program): <immintrin.h> with
 * AVX-512 on takes 0.13 s of a kernel's 0.4 s compile, which the other units skip. */
#if defined(__AVX512F__) && defined(PXR_AVX512_HELPERS) && !defined(__CUDACC__) && !defined(PXR_OPENCL)
#define PXR_AVX512 1
#include <immintrin.h>
#endif

/* r[i] = r[0] + ... + r[i] (+ p[i] when p is not NULL), in 32-bit wrap-around: the row
 * prefix of an integer sum scan, and its column step (gen_c.c). With AVX-512F, 16 at a
 * time: the prefix inside a vector in four shifted adds, then the carry of the row so
 * far; a scalar loop would be one dependent add per element. */
PXR_FN void pxr_scan_add_u32(uint32_t *r, const uint32_t *p, ptrdiff_t n) {
  ptrdiff_t i = 0;
  uint32_t c = 0;
#if defined(PXR_AVX512)
  const __m512i z = _mm512_setzero_si512(), last = _mm512_set1_epi32(15);
  __m512i cv = z;
  for (; i + 16 <= n; i += 16) {
    __m512i x = _mm512_loadu_si512((const void *)(r + i));
    x = _mm512_add_epi32(x, _mm512_alignr_epi32(x, z, 15));
    x = _mm512_add_epi32(x, _mm512_alignr_epi32(x, z, 14));
    x = _mm512_add_epi32(x, _mm512_alignr_epi32(x, z, 12));
    x = _mm512_add_epi32(x, _mm512_alignr_epi32(x, z, 8));
    x = _mm512_add_epi32(x, cv);
    cv = _mm512_permutexvar_epi32(last, x);
    if (p) x = _mm512_add_epi32(x, _mm512_loadu_si512((const void *)(p + i)));
    _mm512_storeu_si512((void *)(r + i), x);
  }
  c = (uint32_t)_mm_cvtsi128_si32(_mm512_castsi512_si128(cv));
#endif
  for (; i < n; i++) {
    c += r[i];
    r[i] = p ? c + p[i] : c;
  }
}

/* d[i] = t[s[i]] for i < n: a u8 -> u8 kernel made a table (gen_c.c, tabulated). With
 * AVX-512 VBMI, 64 pixels per step: two 128-byte halves of the table looked up by the
 * index's low 7 bits (vpermi2b), the high bit choosing between them. */
PXR_FN void pxr_lut_u8(const uint8_t *s, uint8_t *d, ptrdiff_t n, const uint8_t *t, int stream) {
  ptrdiff_t i = 0;
  (void)stream;
#if defined(PXR_AVX512) && defined(__AVX512VBMI__) && defined(__AVX512BW__)
  const __m512i t0 = _mm512_loadu_si512((const void *)t), t1 = _mm512_loadu_si512((const void *)(t + 64));
  const __m512i t2 = _mm512_loadu_si512((const void *)(t + 128)), t3 = _mm512_loadu_si512((const void *)(t + 192));
  if (stream) /* the output passes the caches by (streaming stores from 64-byte boundaries) */
    for (; i < n && ((uintptr_t)(d + i) & 63); i++) d[i] = t[s[i]];
  for (; i + 64 <= n; i += 64) {
    const __m512i v = _mm512_loadu_si512((const void *)(s + i));
    const __m512i lo = _mm512_permutex2var_epi8(t0, v, t1), hi = _mm512_permutex2var_epi8(t2, v, t3);
    const __m512i r = _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), lo, hi);
    if (stream) _mm512_stream_si512((void *)(d + i), r);
    else _mm512_storeu_si512((void *)(d + i), r);
  }
  if (stream) _mm_sfence();
#endif
  for (; i < n; i++) d[i] = t[s[i]];
}

#endif
