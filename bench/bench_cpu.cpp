// bench_cpu - pxl's CPU backend vs OpenCV and Halide on the twelve kernels of the
// Nugteren "skeleton" paper (u8 images), timed in the same run, with a correctness check
// of every peer against pxl's output; then the examples of the language issue against
// OpenCV alone: gauss5, median3, median5, boxr (r = 15), the scan integral (i32), and
// the pipelines equalize, otsu, canny (50/150, L1), bilateral (5, 30, 2), edges
// (examples/edges.pxl, fused, against OpenCV's five calls and Halide) and outline
// (examples/outline.pxl: three local stages, against OpenCV's and Halide); the last
// seven are checked against OpenCV's outputs only (bilateral within 1: OpenCV's SIMD
// float sums).
//
//   bench_cpu [--sizes 2048,8192] [--kernels a,b,..|all] [--reps N] [--csv FILE]
//             [--check-ref] [--peers pxl,opencv,halide] [--max-bg PCT]
//
// Sizes are N (N x N) or WxH. Per kernel and size: 2 warm-up runs (the first pxl run
// JIT-compiles; Halide pipelines are compile_jit'ed once before any timing), then N timed
// runs (default 10 up to 16 Mpixel, 5 above); the table shows the median. GB/s counts the
// minimum traffic: every input pixel read once and every output element written once
// (reductions: the input only). Speedup columns are peer ms / pxl ms (> 1: pxl faster).
//
// Check: each peer's output is compared with pxl's (or, without pxl / when pxl fails, with
// a scalar reference): "ok", or per peer "<peer> diff D n=N" (max abs diff, mismatching
// elements). --check-ref also compares pxl with the reference. The exit status is 1 when
// a check fails (OpenCV's blur3 may differ by 1 from rounding: tolerated, still shown),
// or when pxl fails on a kernel.
//
// bg%: the share of the machine's CPU time used by other processes (or stolen by the
// hypervisor) while the row was timed; on a shared machine it inflates the timings (and
// hurts statically scheduled OpenMP code most). --max-bg PCT waits for a quiet machine
// before each row and retries a row (up to 5 attempts, keeping the quietest) whose bg%
// exceeded PCT. The peers run with their default thread pools (OpenCV: cv::getNumThreads;
// Halide: HL_NUM_THREADS or all cores; pxl: all cores); all three see the same input
// buffer and write into preallocated buffers with rows padded to 64 bytes.
//
// Build with -DBENCH_NO_PXL to time the peers alone. BENCH_NO_FUSE=1 runs pxl's pipelines
// as written (pxl_set_fusion PXL_FUSE_OFF), for comparison with the fused default.

#include <opencv2/core.hpp>
#include <opencv2/core/utility.hpp>
#include <opencv2/imgproc.hpp>

#include <Halide.h>
#ifndef BENCH_HALIDE_VERSION
#define BENCH_HALIDE_VERSION "?"
#endif

#ifndef BENCH_NO_PXL
#include <pxl/pxl.h>
#endif

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

// ------------------------------------------------------------------------------------
// Images and outputs

enum class Kind { Image, Scalar, Hist };

struct Image {
  uint8_t *data = nullptr;
  int w = 0, h = 0, esize = 1;  // esize: bytes per element (1 u8, 2 i16, 4 i32)
  size_t pitch = 0;             // bytes, multiple of 64
  Image() = default;
  Image(int w_, int h_, int esize_) : w(w_), h(h_), esize(esize_) {
    pitch = ((size_t)w * esize + 63) / 64 * 64;
    data = static_cast<uint8_t *>(std::aligned_alloc(64, pitch * (size_t)h));
    if (!data) {
      std::fprintf(stderr, "bench_cpu: out of memory (%dx%d)\n", w, h);
      std::exit(2);
    }
    std::memset(data, 0, pitch * (size_t)h);  // touch the pages outside the timings
  }
  Image(const Image &) = delete;
  Image &operator=(const Image &) = delete;
  Image(Image &&o) noexcept { *this = std::move(o); }
  Image &operator=(Image &&o) noexcept {
    std::swap(data, o.data);
    w = o.w, h = o.h, esize = o.esize, pitch = o.pitch;
    return *this;
  }
  ~Image() { std::free(data); }
  uint8_t *row(int y) { return data + (size_t)y * pitch; }
  const uint8_t *row(int y) const { return data + (size_t)y * pitch; }
  int64_t at(int x, int y) const {  // element value (u8, i16 or i32)
    return esize == 1   ? (int64_t)row(y)[x]
           : esize == 2 ? (int64_t)((const int16_t *)row(y))[x]
                        : (int64_t)((const int32_t *)row(y))[x];
  }
};

struct Output {
  Kind kind = Kind::Image;
  Image img;
  uint64_t scalar = 0;
  std::vector<uint64_t> bins;
  bool valid = false;
};

struct KernelDef {
  const char *name;
  Kind kind;
  int out_esize;  // image outputs: 1 (u8) or 2 (i16)
  bool transposed;
};

const KernelDef kKernels[] = {
    {"binarize", Kind::Image, 1, false}, {"copy", Kind::Image, 1, false},
    {"transpose", Kind::Image, 1, true}, {"blur3", Kind::Image, 1, false},
    {"sobel3", Kind::Image, 2, false},   {"erode3", Kind::Image, 1, false},
    {"dilate5", Kind::Image, 1, false},  {"gradient73", Kind::Image, 1, false},
    {"sum", Kind::Scalar, 0, false},     {"min", Kind::Scalar, 0, false},
    {"max", Kind::Scalar, 0, false},     {"hist256", Kind::Hist, 0, false},
    // written with tables, local arrays and a parameter radius (boxr: r = kBoxRadius)
    {"gauss5", Kind::Image, 1, false},   {"median3", Kind::Image, 1, false},
    {"median5", Kind::Image, 1, false},  {"boxr", Kind::Image, 1, false},
    // pipelines (pipeline values, loops, table stages); checked against OpenCV only
    {"equalize", Kind::Image, 1, false}, {"otsu", Kind::Image, 1, false},
    {"canny", Kind::Image, 1, false},    {"bilateral", Kind::Image, 1, false},
    {"integral", Kind::Image, 4, false},  // i32, cv::integral less its zero row and column
    // examples/edges.pxl (five stages, t = 40; pxl runs it fused: 2 kernels) against
    // OpenCV calling the same stages one after another
    {"edges", Kind::Image, 1, false},
    // examples/outline.pxl (three local stages: 3x3 mean, Sobel L1 magnitude, > 100)
    {"outline", Kind::Image, 1, false},
    // examples/downscale.pxl, the seed's HD downscaler (tilers; 1920x1080 -> 720x480):
    // folded into one tiler, and as a pipeline of its two filters; no OpenCV version
    {"downscale", Kind::Image, 1, false}, {"scale_hd", Kind::Image, 1, false},
    // resampling (examples/resample.pxl, warp.pxl), checked against OpenCV's functions,
    // which they equal: cv::pyrDown, cv::pyrUp (to twice the size); cv::resize INTER_LINEAR_EXACT and INTER_LINEAR to
    // 3/4 of the size; cv::warpAffine INTER_LINEAR by kWarp (a rotation by 30 degrees at
    // 0.8 scale about the centre), the size kept, border constant 0
    {"pyr_down", Kind::Image, 1, false}, {"pyr_down_sep", Kind::Image, 1, false},  // its two tilers
    {"pyr_up", Kind::Image, 1, false}, {"resize_linear", Kind::Image, 1, false},
    {"resize_bilinear", Kind::Image, 1, false}, {"warp_affine_linear", Kind::Image, 1, false},
};
bool resampler(const std::string &k) {
  return k == "pyr_down" || k == "pyr_down_sep" || k == "pyr_up" || k == "resize_linear" || k == "resize_bilinear" ||
         k == "warp_affine_linear";
}
// The example file of kernel k.
std::string example_file(const std::string &k) {
  if (k == "downscale" || k == "scale_hd") return "downscale";
  if (k == "pyr_down" || k == "pyr_down_sep" || k == "pyr_up") return "resample";
  if (resampler(k)) return "warp";
  return k;
}
// warp_affine_linear's matrix for a w x h image: cv::getRotationMatrix2D(centre, 30, 0.8)
std::vector<double> warp_matrix(int w, int h) {
  const double a = 0.8 * std::cos(30 * M_PI / 180), b = 0.8 * std::sin(30 * M_PI / 180), cx = w / 2.0,
               cy = h / 2.0;
  return {a, b, (1 - a) * cx - b * cy, -b, a, b * cx + (1 - a) * cy};
}
// The downscaler's output size: 3 of every 8 columns, 4 of every 9 rows (ceil: the last
// tile reads past the edge, clamped).
bool downscaler(const std::string &k) { return k == "downscale" || k == "scale_hd"; }
const int kDownH0[3] = {0, 2, 5}, kDownV0[4] = {0, 2, 5, 7};
// canny: cv::Canny(50, 150, 3, L1); bilateral: cv::bilateralFilter(5, 30, 2)
const double kCannyLow = 50, kCannyHigh = 150, kSigmaColor = 30, kSigmaSpace = 2;
// kernels without a scalar reference here (their checks compare pxl with OpenCV)
bool has_reference(const std::string &k) {
  return !resampler(k) && k != "equalize" && k != "otsu" && k != "canny" && k != "bilateral" && k != "integral" && k != "edges" &&
         k != "outline";
}
const int kBoxRadius = 15;  // boxr: a 31x31 box (cv::blur), the r = 15

Output make_output(const KernelDef &k, int w, int h) {
  Output o;
  o.kind = k.kind;
  if (k.kind == Kind::Image && downscaler(k.name))
    o.img = Image((w + 7) / 8 * 3, (h + 8) / 9 * 4, k.out_esize);
  else if (std::string(k.name) == "pyr_down" || std::string(k.name) == "pyr_down_sep")
    o.img = Image((w + 1) / 2, (h + 1) / 2, k.out_esize);
  else if (std::string(k.name) == "pyr_up")
    o.img = Image(2 * w, 2 * h, k.out_esize);
  else if (std::string(k.name) == "resize_linear" || std::string(k.name) == "resize_bilinear")
    o.img = Image(w * 3 / 4, h * 3 / 4, k.out_esize);
  else if (k.kind == Kind::Image)
    o.img = k.transposed ? Image(h, w, k.out_esize) : Image(w, h, k.out_esize);
  if (k.kind == Kind::Hist) o.bins.assign(256, 0);
  return o;
}

// Deterministic random u8 input (xorshift64*, fixed seed).
void fill_random(Image &im, uint64_t seed) {
  uint64_t s = seed ? seed : 1;
  for (int y = 0; y < im.h; y++) {
    uint8_t *r = im.row(y);
    for (int x = 0; x < im.w; x += 8) {
      s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
      uint64_t v = s * 0x2545F4914F6CDD1DULL;
      for (int i = 0; i < 8 && x + i < im.w; i++) r[x + i] = (uint8_t)(v >> (8 * i));
    }
  }
}

// ------------------------------------------------------------------------------------
// Scalar reference (untimed; the check baseline when pxl is absent or fails)

void reference(const std::string &k, const Image &in, Output &o) {
  if (!has_reference(k)) return;  // o.valid stays false
  const int w = in.w, h = in.h;
  auto px = [&](int x, int y) -> int {
    x = x < 0 ? 0 : (x >= w ? w - 1 : x);
    y = y < 0 ? 0 : (y >= h ? h - 1 : y);
    return in.row(y)[x];
  };
  auto window = [&](int rx, int ry, bool want_max) {
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) {
        int m = want_max ? 0 : 255;
        for (int dy = -ry; dy <= ry; dy++)
          for (int dx = -rx; dx <= rx; dx++)
            m = want_max ? std::max(m, px(x + dx, y + dy)) : std::min(m, px(x + dx, y + dy));
        o.img.row(y)[x] = (uint8_t)m;
      }
  };
  if (downscaler(k)) {  // the horizontal filter into rows of i32, then the vertical one
    const int ow = o.img.w, oh = o.img.h;
    std::vector<int> hrow((size_t)ow * h);
    for (int y = 0; y < h; y++)
      for (int x = 0; x < ow; x++) {
        int s = 0;
        for (int i = 0; i < 6; i++) s += px(x / 3 * 8 + kDownH0[x % 3] + i, y);
        hrow[(size_t)y * ow + x] = (s + 3) / 6;
      }
    for (int y = 0; y < oh; y++)
      for (int x = 0; x < ow; x++) {
        int s = 0;
        for (int j = 0; j < 6; j++) s += hrow[(size_t)std::min(y / 4 * 9 + kDownV0[y % 4] + j, h - 1) * ow + x];
        o.img.row(y)[x] = (uint8_t)((s + 3) / 6);
      }
  } else if (k == "binarize") {
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) o.img.row(y)[x] = in.row(y)[x] > 128 ? 255 : 0;
  } else if (k == "copy") {
    for (int y = 0; y < h; y++) std::memcpy(o.img.row(y), in.row(y), w);
  } else if (k == "transpose") {
    for (int y = 0; y < w; y++)
      for (int x = 0; x < h; x++) o.img.row(y)[x] = in.row(x)[y];
  } else if (k == "blur3") {
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) {
        int s = 0;
        for (int dy = -1; dy <= 1; dy++)
          for (int dx = -1; dx <= 1; dx++) s += px(x + dx, y + dy);
        o.img.row(y)[x] = (uint8_t)((s + 4) / 9);
      }
  } else if (k == "sobel3") {
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) {
        int v = (px(x + 1, y - 1) + 2 * px(x + 1, y) + px(x + 1, y + 1)) -
                (px(x - 1, y - 1) + 2 * px(x - 1, y) + px(x - 1, y + 1));
        ((int16_t *)o.img.row(y))[x] = (int16_t)v;
      }
  } else if (k == "erode3") {
    window(1, 1, false);
  } else if (k == "dilate5") {
    window(2, 2, true);
  } else if (k == "gradient73") {
    Image mx(w, h, 1);
    window(3, 1, true);
    std::swap(mx, o.img);
    window(3, 1, false);
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) o.img.row(y)[x] = (uint8_t)(mx.row(y)[x] - o.img.row(y)[x]);
  } else if (k == "gauss5") {  // mirror101 border, as GaussianBlur's default
    static const int taps[5] = {1, 4, 6, 4, 1};
    auto m101 = [](int i, int n) { return n == 1 ? 0 : i < 0 ? -i : i >= n ? 2 * n - 2 - i : i; };
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) {
        int s = 0;
        for (int dy = -2; dy <= 2; dy++)
          for (int dx = -2; dx <= 2; dx++)
            s += taps[dy + 2] * taps[dx + 2] * in.row(m101(y + dy, h))[m101(x + dx, w)];
        o.img.row(y)[x] = (uint8_t)((s + 128) >> 8);
      }
  } else if (k == "median3" || k == "median5") {
    int r = k == "median3" ? 1 : 2, n = (2 * r + 1) * (2 * r + 1);
    std::vector<int> v((size_t)n);
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) {
        int i = 0;
        for (int dy = -r; dy <= r; dy++)
          for (int dx = -r; dx <= r; dx++) v[(size_t)i++] = px(x + dx, y + dy);
        std::nth_element(v.begin(), v.begin() + n / 2, v.end());
        o.img.row(y)[x] = (uint8_t)v[(size_t)(n / 2)];
      }
  } else if (k == "boxr") {
    const int r = kBoxRadius, n = (2 * r + 1) * (2 * r + 1);
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) {
        int s = 0;
        for (int dy = -r; dy <= r; dy++)
          for (int dx = -r; dx <= r; dx++) s += px(x + dx, y + dy);
        o.img.row(y)[x] = (uint8_t)((s + n / 2) / n);
      }
  } else if (k == "sum" || k == "min" || k == "max") {
    uint64_t s = 0;
    int mn = 255, mx = 0;
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) {
        int v = in.row(y)[x];
        s += v, mn = std::min(mn, v), mx = std::max(mx, v);
      }
    o.scalar = k == "sum" ? s : k == "min" ? (uint64_t)mn : (uint64_t)mx;
  } else if (k == "hist256") {
    std::fill(o.bins.begin(), o.bins.end(), 0);
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) o.bins[in.row(y)[x]]++;
  }
  o.valid = true;
}

struct Diff {
  uint64_t mismatches = 0;
  uint64_t maxdiff = 0;
};

Diff compare(const Output &a, const Output &b) {
  Diff d;
  auto upd = [&](int64_t x, int64_t y) {
    if (x != y) d.mismatches++, d.maxdiff = std::max(d.maxdiff, (uint64_t)std::llabs(x - y));
  };
  if (a.kind == Kind::Image) {
    for (int y = 0; y < a.img.h; y++)
      for (int x = 0; x < a.img.w; x++) upd(a.img.at(x, y), b.img.at(x, y));
  } else if (a.kind == Kind::Scalar) {
    upd((int64_t)a.scalar, (int64_t)b.scalar);
  } else {
    for (size_t i = 0; i < a.bins.size(); i++) upd((int64_t)a.bins[i], (int64_t)b.bins[i]);
  }
  return d;
}

// ------------------------------------------------------------------------------------
// Peers. A peer prepares (untimed) a run closure per kernel and size; after the timed
// runs, finish() moves the result into the Output (untimed).

struct Prepared {
  std::function<void()> run;     // one timed run
  std::function<void()> finish;  // optional: result -> Output, untimed
  std::string error;             // non-empty: the peer cannot run this kernel
  std::string note;              // printed after the table
};

// ---- OpenCV ----

cv::Mat cv_wrap(Image &im) {
  return cv::Mat(im.h, im.w, im.esize == 1 ? CV_8UC1 : im.esize == 2 ? CV_16SC1 : CV_32SC1, im.data, im.pitch);
}

Prepared opencv_prepare(const std::string &k, Image &in, Output &o) {
  Prepared p;
  cv::Mat src = cv_wrap(in);
  if (o.kind == Kind::Image) {
    cv::Mat dst = cv_wrap(o.img);  // preallocated: OpenCV writes in place (same size/type)
    const uint8_t *dptr = o.img.data;
    auto check_inplace = [dst, dptr]() {
      if (dst.data != dptr) throw std::runtime_error("OpenCV reallocated the output");
    };
    if (k == "binarize")
      p.run = [=]() mutable { cv::threshold(src, dst, 128, 255, cv::THRESH_BINARY); };
    else if (k == "copy")
      p.run = [=]() mutable { src.copyTo(dst); };
    else if (k == "transpose")
      p.run = [=]() mutable { cv::transpose(src, dst); };
    else if (k == "blur3")
      p.run = [=]() mutable {
        cv::blur(src, dst, cv::Size(3, 3), cv::Point(-1, -1), cv::BORDER_REPLICATE);
      };
    else if (k == "sobel3")
      p.run = [=]() mutable {
        cv::Sobel(src, dst, CV_16S, 1, 0, 3, 1, 0, cv::BORDER_REPLICATE);
      };
    else if (k == "erode3" || k == "dilate5" || k == "gradient73") {
      cv::Size ks = k == "erode3" ? cv::Size(3, 3) : k == "dilate5" ? cv::Size(5, 5) : cv::Size(7, 3);
      cv::Mat se = cv::getStructuringElement(cv::MORPH_RECT, ks);
      int op = k == "erode3" ? cv::MORPH_ERODE : k == "dilate5" ? cv::MORPH_DILATE : cv::MORPH_GRADIENT;
      p.run = [=]() mutable {
        cv::morphologyEx(src, dst, op, se, cv::Point(-1, -1), 1, cv::BORDER_REPLICATE);
      };
    }
    else if (k == "gauss5")
      p.run = [=]() mutable { cv::GaussianBlur(src, dst, cv::Size(5, 5), 0, 0, cv::BORDER_REFLECT_101); };
    else if (k == "median3" || k == "median5")
      p.run = [=]() mutable { cv::medianBlur(src, dst, k == "median3" ? 3 : 5); };
    else if (k == "boxr")
      p.run = [=]() mutable {
        cv::blur(src, dst, cv::Size(2 * kBoxRadius + 1, 2 * kBoxRadius + 1), cv::Point(-1, -1),
                 cv::BORDER_REPLICATE);
      };
    else if (k == "equalize")
      p.run = [=]() mutable { cv::equalizeHist(src, dst); };
    else if (k == "otsu")
      p.run = [=]() mutable { cv::threshold(src, dst, 0, 255, cv::THRESH_BINARY | cv::THRESH_OTSU); };
    else if (k == "canny")
      p.run = [=]() mutable { cv::Canny(src, dst, kCannyLow, kCannyHigh, 3, false); };
    else if (k == "bilateral")
      p.run = [=]() mutable { cv::bilateralFilter(src, dst, 5, kSigmaColor, kSigmaSpace); };
    else if (k == "pyr_down" || k == "pyr_down_sep")
      p.run = [=]() mutable { cv::pyrDown(src, dst, dst.size()); };
    else if (k == "pyr_up")
      p.run = [=]() mutable { cv::pyrUp(src, dst, dst.size()); };
    else if (k == "resize_linear" || k == "resize_bilinear") {
      int mode = k == "resize_linear" ? cv::INTER_LINEAR_EXACT : cv::INTER_LINEAR;
      p.run = [=]() mutable { cv::resize(src, dst, dst.size(), 0, 0, mode); };
    } else if (k == "warp_affine_linear") {
      std::vector<double> m = warp_matrix(in.w, in.h);
      cv::Mat M(2, 3, CV_64F, m.data());
      cv::Mat Mc = M.clone();
      p.run = [=]() mutable { cv::warpAffine(src, dst, Mc, dst.size(), cv::INTER_LINEAR, cv::BORDER_CONSTANT, 0); };
    }
    else if (k == "edges") {  // the same definition: 1 2 1 smoothing rounded, Sobel in i16,
      // the f32 magnitude / 4 rounded to u8 (ties to even, as pxl), then > 40; reflect101
      auto tmp = std::make_shared<std::vector<cv::Mat>>(6);
      p.run = [=]() mutable {
        std::vector<cv::Mat> &m = *tmp;
        cv::GaussianBlur(src, m[0], cv::Size(3, 3), 0, 0, cv::BORDER_REFLECT_101);
        cv::Sobel(m[0], m[1], CV_16S, 1, 0, 3, 1, 0, cv::BORDER_REFLECT_101);
        cv::Sobel(m[0], m[2], CV_16S, 0, 1, 3, 1, 0, cv::BORDER_REFLECT_101);
        m[1].convertTo(m[3], CV_32F);
        m[2].convertTo(m[4], CV_32F);
        cv::magnitude(m[3], m[4], m[5]);
        m[5].convertTo(m[0], CV_8U, 0.25);
        cv::threshold(m[0], dst, 40, 255, cv::THRESH_BINARY);
      };
    } else if (k == "outline") {  // blur 3x3 (rounded), Sobel in i16, |gx| + |gy| saturated
      // to u8, > 100; reflect101
      auto tmp = std::make_shared<std::vector<cv::Mat>>(5);
      p.run = [=]() mutable {
        std::vector<cv::Mat> &m = *tmp;
        cv::blur(src, m[0], cv::Size(3, 3), cv::Point(-1, -1), cv::BORDER_REFLECT_101);
        cv::Sobel(m[0], m[1], CV_16S, 1, 0, 3, 1, 0, cv::BORDER_REFLECT_101);
        cv::Sobel(m[0], m[2], CV_16S, 0, 1, 3, 1, 0, cv::BORDER_REFLECT_101);
        cv::add(cv::abs(m[1]), cv::abs(m[2]), m[3]);
        m[3].convertTo(m[4], CV_8U);
        cv::threshold(m[4], dst, 100, 255, cv::THRESH_BINARY);
      };
    }
    p.finish = [=]() mutable { check_inplace(); };
    if (k == "integral") {  // (h + 1) x (w + 1) sums; the check compares the rest
      cv::Mat sums(in.h + 1, in.w + 1, CV_32SC1);
      const uint8_t *sptr = sums.data;
      p.run = [=]() mutable { cv::integral(src, sums, CV_32S); };
      p.finish = [=]() mutable {
        if (sums.data != sptr) throw std::runtime_error("OpenCV reallocated the sums");
        sums(cv::Rect(1, 1, dst.cols, dst.rows)).copyTo(dst);
        check_inplace();
      };
    }
  } else if (k == "sum") {
    auto r = std::make_shared<double>(0);
    p.run = [=]() { *r = cv::sum(src)[0]; };
    p.finish = [r, &o]() { o.scalar = (uint64_t)*r; };
  } else if (k == "min" || k == "max") {
    auto r = std::make_shared<double>(0);
    bool want_min = k == "min";
    p.run = [=]() {
      double mn = 0, mx = 0;
      cv::minMaxLoc(src, want_min ? &mn : nullptr, want_min ? nullptr : &mx);
      *r = want_min ? mn : mx;
    };
    p.finish = [r, &o]() { o.scalar = (uint64_t)*r; };
  } else if (k == "hist256") {
    auto hist = std::make_shared<cv::Mat>(256, 1, CV_32F);
    p.run = [=]() {
      const int channels[] = {0};
      const int sizes[] = {256};
      const float range[] = {0, 256};
      const float *ranges[] = {range};
      cv::calcHist(&src, 1, channels, cv::noArray(), *hist, 1, sizes, ranges, true, false);
    };
    p.finish = [hist, &o]() {
      for (int i = 0; i < 256; i++) o.bins[i] = (uint64_t)hist->at<float>(i);
    };
  }
  if (!p.run) p.error = "no OpenCV version";
  return p;
}

// ---- Halide ----
//
// One Pipeline per kernel over a shared ImageParam, compile_jit'ed once. Schedules (tuned
// on the 2-core AVX-512 box, see docs/PERFORMANCE.md): rows split into strips run in
// parallel; stencils read the clamped input from rows materialized per strip (sliding
// window), separable windows compute their row pass per strip as a sliding window
// (store_at strip, compute_at row); u8 vectors of 32 lanes for blur3/sobel3/erode3, of
// the natural width (64 with AVX-512) for the rest; transpose through cache tiles staged
// in a stack buffer and transposed in 8x8 register blocks; reductions as per-strip vector
// partials merged by a second stage; the histogram as 4 interleaved partial histograms
// per strip. Variants measured and rejected: row tiles (256x32, compute_at the tile:
// 2-5x slower: every tile row pays the clamped-edge gathers), repeat_edge read directly
// by the stencil (1.5-3x slower), fully inlined windows (except sobel3), vector width 64
// for the 3x3 windows.

namespace hl = Halide;

struct HalidePeer {
  hl::Target target;
  hl::ImageParam in{hl::UInt(8), 2, "in"};
  std::map<std::string, hl::Pipeline> pipes, generic;  // tuned; generic (small images)
  int VN = 64;  // natural u8 vector width (streaming kernels, reductions)
  int V = 32;   // u8 vector width of the stencils
  int S = 32;   // rows per parallel strip (image kernels)
  int RS = 32;  // rows per parallel strip (reductions, histogram)
  int TT = 64;  // transpose cache tile
  int TB = 8;   // transpose register block
  int HK = 4;   // interleaved partial histograms per strip

  HalidePeer() {
    target = hl::get_jit_target_from_environment();
    VN = target.natural_vector_size<uint8_t>();
    V = std::min(VN, 32);
    // Tuning knobs (not needed for normal runs).
    auto knob = [](const char *name, int &v) {
      if (const char *e = std::getenv(name)) v = std::max(1, std::atoi(e));
    };
    knob("BENCH_HL_VEC", V), knob("BENCH_HL_VECN", VN), knob("BENCH_HL_STRIP", S);
    knob("BENCH_HL_RSTRIP", RS), knob("BENCH_HL_TTILE", TT), knob("BENCH_HL_TBLOCK", TB);
    knob("BENCH_HL_HISTK", HK);
    RS = std::min(RS, 4096);  // keeps the u32 lanes of sum's partials from overflowing
  }

  static void knob_env(const char *name, int &v) {
    if (const char *e = std::getenv(name)) v = std::atoi(e);
  }

  // The smallest image the tuned schedules handle (vectors, strips and tiles must fit);
  // smaller images run a generic (unscheduled, inlined) version of the same algorithm.
  bool fits(int w, int h) const {
    return w >= std::max({VN, V, TT}) && h >= std::max({S, TT});
  }

  // The seed's downscaler (examples/downscale.pxl): output column x is phase x % 3 of
  // tile x / 3 (the 6 pixels from 8 (x / 3) + H0[x % 3]), output row y phase y % 4 of
  // row group y / 4 (the 6 rows of the horizontal filter from 9 (y / 4) + V0[y % 4]).
  // Scheduled as a user would: x split by 3 and y by 4 with the phases unrolled (the
  // selects and divisions fold to constants), the tiles vectorised (stride-8 loads,
  // 3-way interleaved stores; BENCH_HL_DOWN_VEC lanes, default 16), parallel over strips
  // of row groups. BENCH_HL_DOWN picks where the horizontal filter is computed: 0 per row
  // group (its 13 rows, 4 of them again by the next group), 1 whole first (compute_root,
  // parallel over rows); 2 and 3 as 0 and 1 with the clamped input row materialised per
  // row (dense loads). Measured on the 2-core VM, bg% 0-6 (docs/PERFORMANCE.md): at HD
  // 0 1.86 ms (32 lanes), 1 1.20-1.32, 3 1.12 (16 lanes); at 4096^2 1 9.4-10.0, 3 10.4:
  // the default is 3 with 16 lanes.
  hl::Func downscale(bool tuned) {
    using namespace hl;
    Var x("x"), y("y"), xo("xo"), xi("xi"), yo("yo"), yi("yi"), yoo("yoo");
    Func c = BoundaryConditions::repeat_edge(in);
    Func hf("down_h"), f("downscale");
    Expr k = x % 3, t3 = x / 3;
    Expr h0 = select(k == 0, 0, k == 1, 2, 5);
    Expr hs = cast<uint16_t>(c(8 * t3 + h0, y));
    for (int i = 1; i < 6; i++) hs = hs + cast<uint16_t>(c(8 * t3 + h0 + i, y));
    hf(x, y) = cast<uint8_t>((hs + 3) / 6);
    Expr m = y % 4, s4 = y / 4;
    Expr v0 = select(m == 0, 0, m == 1, 2, m == 2, 5, 7);
    auto hrow = [&](Expr r) { return cast<uint16_t>(hf(x, min(r, in.height() - 1))); };
    Expr vs = hrow(9 * s4 + v0);
    for (int j = 1; j < 6; j++) vs = vs + hrow(9 * s4 + v0 + j);
    f(x, y) = cast<uint8_t>((vs + 3) / 6);
    if (tuned) {
      int sched = 3, DV = 16;
      knob_env("BENCH_HL_DOWN", sched);
      knob_env("BENCH_HL_DOWN_VEC", DV);
      f.split(y, yo, yi, 4).unroll(yi).split(yo, yoo, yo, 8).parallel(yoo);
      f.split(x, xo, xi, 3).unroll(xi).reorder(xi, xo, yi, yo, yoo).vectorize(xo, DV);
      hf.split(x, xo, xi, 3).unroll(xi).reorder(xi, xo, y).vectorize(xo, DV);
      if (sched == 1 || sched == 3) hf.compute_root().parallel(y);
      else hf.compute_at(f, yo);
      if (sched >= 2) c.compute_at(hf, y).vectorize(c.args()[0], VN);  // the clamped row, dense loads
    }
    return f;
  }

  // The algorithm of kernel k; with tuned = false, left unscheduled (generic fallback).
  hl::Func build(const std::string &k, bool tuned) {
    using namespace hl;
    if (k == "gauss5" || k == "median3" || k == "median5" || k == "boxr" ||
        (!has_reference(k) && k != "edges" && k != "outline"))
      throw CompileError("no Halide version written for " + k);
    if (downscaler(k)) return downscale(tuned);
    Var x("x"), y("y"), yo("yo"), yi("yi");
    Func c = BoundaryConditions::repeat_edge(in);
    Func f(k);

    // Stencils: the repeat_edge'd input rows are materialized per strip as a sliding
    // window (store_at strip, compute_at row): clamped vector loads in Halide 14 are
    // scalarized gathers, and doing them on every row's first and last vectors of every
    // pass costs 1.5-3x at 2048 wide; from the materialized rows every load is dense.
    // Separable windows then compute the row pass per strip as a sliding window too.
    auto stencil = [&](int vec, std::vector<Func> rowpass) {
      if (!tuned) return;
      f.split(y, yo, yi, S).parallel(yo).vectorize(x, vec);
      for (Func &r : rowpass) r.store_at(f, yo).compute_at(f, yi).vectorize(x, vec);
      c.store_at(f, yo).compute_at(f, yi).vectorize(c.args()[0], vec);
    };

    if (k == "binarize") {
      f(x, y) = select(in(x, y) > 128, cast<uint8_t>(255), cast<uint8_t>(0));
      if (tuned) f.split(y, yo, yi, S).parallel(yo).vectorize(x, VN);
    } else if (k == "copy") {
      f(x, y) = in(x, y);
      if (tuned) f.split(y, yo, yi, S).parallel(yo).vectorize(x, VN);
    } else if (k == "transpose") {
      // Per TT x TT tile: the transposed tile is built in a stack buffer (so) from TB x TB
      // blocks: TB vector loads (blk), an interleave network (bt, vectorized along y:
      // Halide turns the TB strided stores into one interleave_vectors), TB vector stores;
      // then written out with full-width vector stores.
      Func blk("tr_blk"), bt("tr_bt"), so("tr_tile");
      blk(x, y) = in(x, y);
      bt(x, y) = blk(y, x);
      so(x, y) = bt(x, y);
      f(x, y) = so(x, y);
      Var xo("xo"), xi("xi"), sxo("sxo"), syo("syo"), sxi("sxi"), syi("syi");
      if (!tuned) return f;
      f.tile(x, y, xo, yo, xi, yi, TT, TT).vectorize(xi, std::min(VN, TT)).parallel(yo);
      so.compute_at(f, xo).tile(x, y, sxo, syo, sxi, syi, TB, TB).vectorize(sxi).unroll(syi);
      blk.compute_at(so, sxo).vectorize(x).unroll(y);
      bt.compute_at(so, sxo).vectorize(y).unroll(x);
    } else if (k == "blur3") {
      Func bx("blur3_x");
      bx(x, y) = cast<uint16_t>(c(x - 1, y)) + c(x, y) + c(x + 1, y);
      f(x, y) = cast<uint8_t>((bx(x, y - 1) + bx(x, y) + bx(x, y + 1) + 4) / 9);
      stencil(V, {bx});
    } else if (k == "sobel3") {
      // Inlined (6 loads per output vector): measured faster than either separable order.
      Func sy("sobel3_y");
      sy(x, y) = cast<int16_t>(c(x, y - 1)) + 2 * cast<int16_t>(c(x, y)) + c(x, y + 1);
      f(x, y) = sy(x + 1, y) - sy(x - 1, y);
      stencil(V, {});
    } else if (k == "erode3" || k == "dilate5") {
      bool is_max = k == "dilate5";
      int r = is_max ? 2 : 1;
      auto op = [&](Expr a, Expr b) { return is_max ? max(a, b) : min(a, b); };
      Func hx(k + "_x");
      Expr e = c(x - r, y);
      for (int d = -r + 1; d <= r; d++) e = op(e, c(x + d, y));
      hx(x, y) = e;
      Expr v = hx(x, y - r);
      for (int d = -r + 1; d <= r; d++) v = op(v, hx(x, y + d));
      f(x, y) = v;
      stencil(is_max ? VN : V, {hx});
    } else if (k == "gradient73") {
      Func hmax("grad_xmax"), hmin("grad_xmin");
      Expr emax = c(x - 3, y), emin = c(x - 3, y);
      for (int d = -2; d <= 3; d++) emax = max(emax, c(x + d, y)), emin = min(emin, c(x + d, y));
      hmax(x, y) = emax;
      hmin(x, y) = emin;
      Expr vmax = max(hmax(x, y - 1), hmax(x, y), hmax(x, y + 1));
      Expr vmin = min(hmin(x, y - 1), hmin(x, y), hmin(x, y + 1));
      f(x, y) = vmax - vmin;
      stencil(VN, {hmax, hmin});
    } else if (k == "edges") {
      // examples/edges.pxl: 1 2 1 smoothing rounded to u8, Sobel x and y in i16 from it,
      // |g| / 4 in f32 rounded (ties to even) to u8, > 40; reflect101 at both windows.
      // Four schedules were measured on the 2-core VM (BENCH_HL_EDGES; docs/PERFORMANCE.md):
      // 0, the input's and the mirrored smoothed image's rows as sliding windows per strip
      // (store_at the strip, compute_at the row): 258 ms at 8192; 1, the smoothed rows
      // only: 342 ms (x mirrored inside vectors: Halide 14 gathers lane by lane); 2, the
      // smoothed image whole first: 69 ms; 3 (the default), the smoothed image whole, then
      // its mirrored rows per strip: 61 ms. Everything after it inlined, vectorized along x.
      Func cm = BoundaryConditions::mirror_interior(in);
      Func sm("edges_smooth"), sx("edges_sx"), sy("edges_sy");
      Expr s = cast<uint16_t>(cm(x - 1, y - 1)) + 2 * cast<uint16_t>(cm(x, y - 1)) + cm(x + 1, y - 1) +
               2 * (cast<uint16_t>(cm(x - 1, y)) + 2 * cast<uint16_t>(cm(x, y)) + cm(x + 1, y)) +
               cast<uint16_t>(cm(x - 1, y + 1)) + 2 * cast<uint16_t>(cm(x, y + 1)) + cm(x + 1, y + 1);
      sm(x, y) = cast<uint8_t>((s + 8) / 16);
      Func g = BoundaryConditions::mirror_interior(sm, {{0, in.width()}, {0, in.height()}});
      auto px = [&](Expr a, Expr b) { return cast<int16_t>(g(a, b)); };
      Expr gx = (px(x + 1, y - 1) + 2 * px(x + 1, y) + px(x + 1, y + 1)) - (px(x - 1, y - 1) + 2 * px(x - 1, y) + px(x - 1, y + 1));
      Expr gy = (px(x - 1, y + 1) + 2 * px(x, y + 1) + px(x + 1, y + 1)) - (px(x - 1, y - 1) + 2 * px(x, y - 1) + px(x + 1, y - 1));
      Expr u = cast<float>(gx), v = cast<float>(gy);
      Expr mag = cast<uint8_t>(clamp(round(sqrt(u * u + v * v) * 0.25f), 0.0f, 255.0f));
      f(x, y) = select(mag > 40, cast<uint8_t>(255), cast<uint8_t>(0));
      if (tuned) {
        int sched = 3;
        knob_env("BENCH_HL_EDGES", sched);
        f.split(y, yo, yi, S).parallel(yo).vectorize(x, V);
        if (sched == 0) {  // the mirrored smoothed rows materialized as well
          g.store_at(f, yo).compute_at(f, yi).vectorize(g.args()[0], V);
          sm.store_at(f, yo).compute_at(f, yi).vectorize(x, V);
        } else if (sched == 1) {
          sm.store_at(f, yo).compute_at(f, yi).vectorize(x, V);
        } else if (sched == 2) {  // the smoothed image whole, first
          sm.compute_root().parallel(y).vectorize(x, V);
        } else {  // the smoothed image whole, mirrored rows materialized per strip
          sm.compute_root().parallel(y).vectorize(x, V);
          g.store_at(f, yo).compute_at(f, yi).vectorize(g.args()[0], V);
        }
        if (sched < 2) cm.store_at(f, yo).compute_at(f, yi).vectorize(cm.args()[0], V);
        else cm.compute_at(sm, y).vectorize(cm.args()[0], V);
      }
    } else if (k == "outline") {
      // examples/outline.pxl: the 3x3 mean rounded to u8, |gx| + |gy| of its Sobel
      // derivatives saturated to u8, > 100; reflect101 at both windows. Schedules
      // (BENCH_HL_OUTLINE; docs/PERFORMANCE.md), on the 2-core VM at 2048 / 8192: 0, the
      // mean computed per strip of rows as a sliding window (store_at the strip,
      // compute_at the row; one pass, but x mirrored inside vectors is gathered lane by
      // lane): 12.5 / 237 ms; 1 (the default), the mean whole first, then its mirrored
      // rows per strip (edges' best, two passes): 1.57 / 48 ms.
      Func cm = BoundaryConditions::mirror_interior(in);
      Func sm("outline_mean");
      Expr s = cast<uint16_t>(cm(x - 1, y - 1)) + cm(x, y - 1) + cm(x + 1, y - 1) + cm(x - 1, y) + cm(x, y) +
               cm(x + 1, y) + cm(x - 1, y + 1) + cm(x, y + 1) + cm(x + 1, y + 1);
      sm(x, y) = cast<uint8_t>((s + 4) / 9);
      Func g = BoundaryConditions::mirror_interior(sm, {{0, in.width()}, {0, in.height()}});
      auto px = [&](Expr a, Expr b) { return cast<int16_t>(g(a, b)); };
      Expr gx = (px(x + 1, y - 1) + 2 * px(x + 1, y) + px(x + 1, y + 1)) - (px(x - 1, y - 1) + 2 * px(x - 1, y) + px(x - 1, y + 1));
      Expr gy = (px(x - 1, y + 1) + 2 * px(x, y + 1) + px(x + 1, y + 1)) - (px(x - 1, y - 1) + 2 * px(x, y - 1) + px(x + 1, y - 1));
      Expr mag = min(abs(gx) + abs(gy), 255);
      f(x, y) = select(mag > 100, cast<uint8_t>(255), cast<uint8_t>(0));
      if (tuned) {
        int sched = 1;
        knob_env("BENCH_HL_OUTLINE", sched);
        f.split(y, yo, yi, S).parallel(yo).vectorize(x, V);
        if (sched == 0) {
          g.store_at(f, yo).compute_at(f, yi).vectorize(g.args()[0], V);
          sm.store_at(f, yo).compute_at(f, yi).vectorize(x, V);
          cm.store_at(f, yo).compute_at(f, yi).vectorize(cm.args()[0], V);
        } else {
          sm.compute_root().parallel(y).vectorize(x, V);
          g.store_at(f, yo).compute_at(f, yi).vectorize(g.args()[0], V);
          cm.compute_at(sm, y).vectorize(cm.args()[0], V);
        }
      }
    } else if (k == "sum" || k == "min" || k == "max") {
      // (Reductions use this schedule at every size.)
      // part(l, s): lane l of the partial of strip s (RS rows), VN lanes wide, over the
      // image padded to whole vectors and strips with the neutral element.
      Var l("l"), s("s");
      Type acc = k == "sum" ? UInt(32) : UInt(8);
      int pad = k == "min" ? 255 : 0;
      Func cz = BoundaryConditions::constant_exterior(in, cast<uint8_t>(pad));
      Expr nc = (in.width() + VN - 1) / VN, ns = (in.height() + RS - 1) / RS;
      RDom rr(0, nc, 0, RS, "rr");
      Func part(k + "_part");
      part(l, s) = cast(acc, pad);
      Expr v = cast(acc, cz(rr.x * VN + l, s * RS + rr.y));
      if (k == "sum") part(l, s) += v;  // < 2^32: RS * ceil(w / VN) * 255, w <= 65535
      else if (k == "min") part(l, s) = min(part(l, s), v);
      else part(l, s) = max(part(l, s), v);
      part.compute_root().vectorize(l).parallel(s);
      part.update().reorder(l, rr.x, rr.y, s).vectorize(l).parallel(s);
      RDom rt(0, VN, 0, ns, "rt");
      if (k == "sum") {
        f() = cast<uint64_t>(0);
        f() += cast<uint64_t>(part(rt.x, rt.y));
      } else {
        f() = cast<uint8_t>(pad);
        f() = k == "min" ? min(f(), part(rt.x, rt.y)) : max(f(), part(rt.x, rt.y));
      }
      return f;
    } else if (k == "hist256") {
      // HK partial histograms per strip of RS rows (pixel x goes to partial x % HK, which
      // breaks the store-to-load dependency between neighbouring pixels), strips in
      // parallel; the w % HK trailing columns go to partial 0; then a vectorized merge.
      Var b("b"), j("j"), s("s");
      Expr w = in.width(), h = in.height();
      Expr ns = (h + RS - 1) / RS, wk = w / HK;
      Func part("hist_part");
      part(b, j, s) = cast<uint32_t>(0);
      // (The row is clamped as well as predicated: bounds inference ignores predicates.)
      RDom r(0, HK, 0, wk, 0, RS, "r");
      r.where(s * RS + r.z < h);
      Expr ry = min(s * RS + r.z, h - 1);
      part(cast<int>(in(r.y * HK + r.x, ry)), r.x, s) += cast<uint32_t>(1);
      RDom t(0, w - wk * HK, 0, RS, "t");
      t.where(s * RS + t.y < h);
      Expr ty = min(s * RS + t.y, h - 1);
      part(cast<int>(in(wk * HK + t.x, ty)), 0, s) += cast<uint32_t>(1);
      part.compute_root().vectorize(b, 16).parallel(s);
      part.update(0).unroll(r.x).parallel(s);
      part.update(1).parallel(s);
      RDom m(0, HK, 0, ns, "m");
      f(b) = cast<uint32_t>(0);
      f(b) += part(b, m.x, m.y);
      f.vectorize(b, 16);
      f.update().vectorize(b, 16);
      return f;
    }
    return f;
  }

  // compile_jit every requested kernel once, before any timing.
  void compile(const std::vector<std::string> &kernels, std::map<std::string, std::string> &errors) {
    for (const auto &k : kernels) {
      try {
        hl::Pipeline p(build(k, true));
        p.compile_jit(target);
        pipes[k] = p;
      } catch (const hl::Error &e) {
        errors[k] = e.what();
      }
    }
  }

  template <typename T>
  static hl::Buffer<T> wrap(Image &im) {
    halide_dimension_t shape[2] = {halide_dimension_t(0, im.w, 1),
                                   halide_dimension_t(0, im.h, (int32_t)(im.pitch / sizeof(T)))};
    return hl::Buffer<T>(hl::Runtime::Buffer<T>((T *)im.data, 2, shape));
  }

  Prepared prepare(const std::string &k, Image &input, Output &o) {
    Prepared p;
    auto it = pipes.find(k);
    if (it == pipes.end()) {
      p.error = "not compiled";
      return p;
    }
    hl::Pipeline pipe = it->second;
    if (o.kind == Kind::Image && !fits(input.w, input.h)) {
      if (!generic.count(k)) {  // compiled here, outside the timings
        try {
          hl::Pipeline g(build(k, false));
          g.compile_jit(target);
          generic[k] = g;
        } catch (const hl::Error &e) {
          p.error = e.what();
          return p;
        }
      }
      pipe = generic[k];
      p.note = "image smaller than the tuned schedule's tiles: generic (unscheduled) pipeline";
    }
    auto inbuf = std::make_shared<hl::Buffer<uint8_t>>(wrap<uint8_t>(input));
    hl::ImageParam param = in;
    auto bind = [param, inbuf]() mutable { param.set(*inbuf); };
    if (o.kind == Kind::Image) {
      if (o.img.esize == 1) {
        auto out = std::make_shared<hl::Buffer<uint8_t>>(wrap<uint8_t>(o.img));
        p.run = [=]() mutable { bind(); pipe.realize(*out); };
      } else {
        auto out = std::make_shared<hl::Buffer<int16_t>>(wrap<int16_t>(o.img));
        p.run = [=]() mutable { bind(); pipe.realize(*out); };
      }
    } else if (k == "sum") {
      auto out = std::make_shared<hl::Buffer<uint64_t>>(hl::Buffer<uint64_t>::make_scalar());
      p.run = [=]() mutable { bind(); pipe.realize(*out); };
      p.finish = [out, &o]() { o.scalar = (*out)(); };
    } else if (o.kind == Kind::Scalar) {
      auto out = std::make_shared<hl::Buffer<uint8_t>>(hl::Buffer<uint8_t>::make_scalar());
      p.run = [=]() mutable { bind(); pipe.realize(*out); };
      p.finish = [out, &o]() { o.scalar = (*out)(); };
    } else {
      auto out = std::make_shared<hl::Buffer<uint32_t>>(256);
      p.run = [=]() mutable { bind(); pipe.realize(*out); };
      p.finish = [out, &o]() {
        for (int i = 0; i < 256; i++) o.bins[i] = (*out)(i);
      };
    }
    return p;
  }
};

// ---- pxl ----

#ifndef BENCH_NO_PXL
struct PxlPeer {
  pxl_context *ctx = nullptr;
  std::map<std::string, pxl_program *> progs;
  std::vector<pxl_image *> images;  // wraps of the current size
  std::vector<pxl_args *> args;

  PxlPeer() {
    ctx = pxl_context_new();
    if (ctx && pxl_set_device(ctx, "cpu") != PXL_OK)
      std::fprintf(stderr, "bench_cpu: pxl_set_device(cpu): %s\n", pxl_errmsg(ctx));
    const char *nf = std::getenv("BENCH_NO_FUSE");  // pipelines as written, for comparison
    if (ctx && nf && *nf == '1') pxl_set_fusion(ctx, PXL_FUSE_OFF);
  }
  ~PxlPeer() {
    release();
    for (auto &kv : progs) pxl_program_free(kv.second);
    pxl_context_free(ctx);
  }
  void release() {  // the wraps and args of the previous kernel/size
    for (auto *a : args) pxl_args_free(a);
    for (auto *i : images) pxl_image_free(i);
    args.clear(), images.clear();
  }
  std::string err(const char *what) {
    return std::string(what) + ": " + (ctx ? pxl_errmsg(ctx) : "no context");
  }

  Prepared prepare(const std::string &k, Image &input, Output &o) {
    Prepared p;
    release();
    if (!ctx) return p.error = "no context (out of memory)", p;
    pxl_program *prog = progs[k];
    if (!prog) {
      std::string path = std::string(PXL_EXAMPLES_DIR) + "/" + example_file(k) + ".pxl";
      if (pxl_program_from_file(ctx, path.c_str(), &prog) != PXL_OK) {
        progs.erase(k);
        return p.error = err(path.c_str()), p;
      }
      progs[k] = prog;
    }
    pxl_image *img = nullptr;
    if (pxl_image_wrap(ctx, input.data, input.w, input.h, PXL_U8, 1, input.pitch, &img) != PXL_OK)
      return p.error = err("pxl_image_wrap(in)"), p;
    images.push_back(img);
    pxl_args *a = pxl_args_new(ctx);
    if (!a) return p.error = "pxl_args_new failed", p;
    args.push_back(a);
    if (pxl_args_image(a, "in", img) != PXL_OK) return p.error = err("pxl_args_image(in)"), p;
    if (k == "binarize" && pxl_args_scalar(a, "t", 128) != PXL_OK)
      return p.error = err("pxl_args_scalar(t)"), p;
    if (k == "edges" && pxl_args_scalar(a, "t", 40) != PXL_OK) return p.error = err("pxl_args_scalar(t)"), p;
    if (k == "outline" && pxl_args_scalar(a, "t", 100) != PXL_OK) return p.error = err("pxl_args_scalar(t)"), p;
    if ((k == "resize_linear" || k == "resize_bilinear" || k == "warp_affine_linear") &&
        (pxl_args_scalar(a, "ow", o.img.w) != PXL_OK || pxl_args_scalar(a, "oh", o.img.h) != PXL_OK))
      return p.error = err("pxl_args_scalar(ow, oh)"), p;
    if (k == "warp_affine_linear") {
      std::vector<double> m = warp_matrix(input.w, input.h);
      if (pxl_args_array(a, "m", m.data(), 6) != PXL_OK) return p.error = err("pxl_args_array(m)"), p;
    }
    if (k == "boxr" && pxl_args_scalar(a, "r", kBoxRadius) != PXL_OK)
      return p.error = err("pxl_args_scalar(r)"), p;
    if (k == "canny" && (pxl_args_scalar(a, "lo", kCannyLow) != PXL_OK || pxl_args_scalar(a, "hi", kCannyHigh) ||
                         pxl_args_scalar(a, "l2", 0)))
      return p.error = err("pxl_args_scalar(canny)"), p;
    if (k == "bilateral" && (pxl_args_scalar(a, "sigma_color", kSigmaColor) != PXL_OK ||
                             pxl_args_scalar(a, "sigma_space", kSigmaSpace) != PXL_OK))
      return p.error = err("pxl_args_scalar(bilateral)"), p;
    if (o.kind == Kind::Image) {
      pxl_image *out = nullptr;
      pxl_type t = o.img.esize == 1 ? PXL_U8 : o.img.esize == 2 ? PXL_I16 : PXL_I32;
      if (pxl_image_wrap(ctx, o.img.data, o.img.w, o.img.h, t, 1, o.img.pitch, &out) != PXL_OK)
        return p.error = err("pxl_image_wrap(out)"), p;
      images.push_back(out);
      if (pxl_args_output(a, out) != PXL_OK) return p.error = err("pxl_args_output"), p;
    }
    // Reductions keep the last result for finish(); a failed run throws (caught by the
    // timing loop, reported as pxl's error for this kernel).
    auto last = std::make_shared<Output>();
    last->kind = o.kind;
    pxl_context *c = ctx;
    std::string name = k;
    Kind kind = o.kind;
    p.run = [=]() {
      pxl_run_result *res = nullptr;
      if (pxl_run(c, prog, name.c_str(), a, &res) != PXL_OK)
        throw std::runtime_error(std::string("pxl_run: ") + pxl_errmsg(c));
      if (kind == Kind::Scalar) {
        pxl_scalar_result sr;
        if (pxl_result_scalar(res, &sr) != PXL_OK) {
          pxl_result_free(res);
          throw std::runtime_error(std::string("pxl_result_scalar: ") + pxl_errmsg(c));
        }
        last->scalar = sr.is_float ? (uint64_t)sr.value : (uint64_t)sr.ivalue;
      } else if (kind == Kind::Hist) {
        int n = 0, is_float = 0;
        const double *bins = pxl_result_bins(res, &n, &is_float);
        if (!bins || n != 256) {
          pxl_result_free(res);
          throw std::runtime_error("pxl_result_bins: expected 256 bins, got " + std::to_string(n));
        }
        last->bins.assign(bins, bins + n);
      }
      pxl_result_free(res);
    };
    p.finish = [last, &o]() {
      if (o.kind == Kind::Scalar) o.scalar = last->scalar;
      if (o.kind == Kind::Hist) o.bins = last->bins;
    };
    return p;
  }
};
#endif

// ------------------------------------------------------------------------------------
// Timing

struct Timing {
  bool ok = false;
  std::string error, note;
  double median_ms = 0, min_ms = 0;
};

// Background load: the share of all CPUs' time used by other processes (and stolen by the
// hypervisor) between two samples. The benchmark shares its cores with whatever else
// runs; rows with a high share have inflated timings.
struct CpuSample {
  unsigned long long busy = 0, total = 0;
  double self_s = 0;
};

CpuSample cpu_sample() {
  CpuSample c;
  std::ifstream f("/proc/stat");
  std::string cpu;
  unsigned long long v[8] = {0};  // user nice system idle iowait irq softirq steal
  f >> cpu;
  for (auto &x : v) f >> x;
  c.busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
  c.total = c.busy + v[3] + v[4];
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  c.self_s = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
  return c;
}

double background_load(const CpuSample &a, const CpuSample &b) {
  double hz = (double)sysconf(_SC_CLK_TCK);
  double total = (b.total - a.total) / hz, busy = (b.busy - a.busy) / hz;
  if (total <= 0) return 0;
  return std::max(0.0, std::min(1.0, (busy - (b.self_s - a.self_s)) / total));
}

// Waits (at most max_s seconds) until the background load over half a second is <= limit.
bool wait_quiet(double limit, double max_s) {
  auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    CpuSample a = cpu_sample();
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    if (background_load(a, cpu_sample()) <= limit) return true;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > max_s) return false;
  }
}

Timing time_it(Prepared &p, int warmup, int reps, Output &o) {
  Timing t;
  t.note = p.note;
  if (!p.error.empty()) return t.error = p.error, t;
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let other pools go idle
  try {
    for (int i = 0; i < warmup; i++) p.run();
    std::vector<double> ms;
    for (int i = 0; i < reps; i++) {
      auto t0 = std::chrono::steady_clock::now();
      p.run();
      auto t1 = std::chrono::steady_clock::now();
      ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    if (p.finish) p.finish();
    std::sort(ms.begin(), ms.end());
    size_t n = ms.size();
    t.median_ms = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
    t.min_ms = ms[0];
    t.ok = true;
    o.valid = true;
  } catch (const Halide::Error &e) {
    t.error = e.what();
  } catch (const std::exception &e) {
    t.error = e.what();
  }
  while (!t.error.empty() && std::isspace((unsigned char)t.error.back())) t.error.pop_back();
  return t;
}

// ------------------------------------------------------------------------------------
// Command line, machine, table

std::vector<std::string> split(const std::string &s, char sep) {
  std::vector<std::string> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep))
    if (!item.empty()) v.push_back(item);
  return v;
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      auto p = line.find(':');
      if (p != std::string::npos) return line.substr(p + 2);
    }
  return "unknown CPU";
}

// "Parallel framework:" of OpenCV's build information (pthreads, TBB, OpenMP, ...).
std::string cv_parallel_framework() {
  std::stringstream ss(cv::getBuildInformation());
  std::string line;
  while (std::getline(ss, line)) {
    auto p = line.find("Parallel framework:");
    if (p != std::string::npos) {
      std::string v = line.substr(p + 19);
      v.erase(0, v.find_first_not_of(" \t"));
      return v;
    }
  }
  return "?";
}

void usage(FILE *f) {
  std::fprintf(f,
               "usage: bench_cpu [--sizes 2048,8192] [--kernels a,b,..|all] [--reps N] [--csv FILE]\n"
               "                 [--check-ref] [--peers pxl,opencv,halide] [--max-bg PCT]\n"
               "  sizes: N (NxN) or WxH; kernels:");
  for (const auto &k : kKernels) std::fprintf(f, " %s", k.name);
  std::fprintf(f, "\n");
}

std::string fmt(const char *f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

}  // namespace

int main(int argc, char **argv) {
  std::vector<std::pair<int, int>> sizes = {{2048, 2048}, {8192, 8192}};
  std::vector<std::string> kernels;
  for (const auto &k : kKernels) kernels.push_back(k.name);
  int reps_override = 0;
  std::string csv_path;
  bool check_ref = false;
  double max_bg_allowed = 1.0;  // --max-bg: retry rows with more background load
  bool use_pxl = true, use_cv = true, use_hl = true;

  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_cpu: %s needs a value\n", a.c_str());
        usage(stderr);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--sizes") {
      sizes.clear();
      for (const auto &s : split(next(), ',')) {
        int w = 0, h = 0;
        if (std::sscanf(s.c_str(), "%dx%d", &w, &h) != 2) h = w = std::atoi(s.c_str());
        if (w < 1 || h < 1 || w > 65535 || h > 65535) {
          std::fprintf(stderr, "bench_cpu: bad size '%s'\n", s.c_str());
          return 2;
        }
        sizes.push_back({w, h});
      }
    } else if (a == "--kernels") {
      std::string v = next();
      if (v != "all") {
        kernels = split(v, ',');
        for (const auto &k : kernels) {
          bool known = false;
          for (const auto &d : kKernels) known |= k == d.name;
          if (!known) {
            std::fprintf(stderr, "bench_cpu: unknown kernel '%s'\n", k.c_str());
            usage(stderr);
            return 2;
          }
        }
      }
    } else if (a == "--reps") {
      reps_override = std::atoi(next().c_str());
      if (reps_override < 1) return std::fprintf(stderr, "bench_cpu: bad --reps\n"), 2;
    } else if (a == "--csv") {
      csv_path = next();
    } else if (a == "--max-bg") {
      max_bg_allowed = std::atof(next().c_str()) / 100.0;
      if (max_bg_allowed <= 0 || max_bg_allowed > 1) return std::fprintf(stderr, "bench_cpu: bad --max-bg (1..100)\n"), 2;
    } else if (a == "--check-ref") {
      check_ref = true;
    } else if (a == "--peers") {
      use_pxl = use_cv = use_hl = false;
      for (const auto &p : split(next(), ',')) {
        if (p == "pxl") use_pxl = true;
        else if (p == "opencv" || p == "cv") use_cv = true;
        else if (p == "halide" || p == "hl") use_hl = true;
        else return std::fprintf(stderr, "bench_cpu: unknown peer '%s'\n", p.c_str()), 2;
      }
    } else if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else {
      std::fprintf(stderr, "bench_cpu: unknown option '%s'\n", a.c_str());
      usage(stderr);
      return 2;
    }
  }
#ifdef BENCH_NO_PXL
  use_pxl = false;
  (void)use_pxl;
#endif

  // ---- machine ----
  HalidePeer halide;
  std::printf("machine: %s, %u hardware threads\n", cpu_model().c_str(),
              std::thread::hardware_concurrency());
  std::printf("OpenCV %s (%s, %d threads); Halide %s JIT, target %s, u8 vectors %d/%d\n",
              CV_VERSION, cv_parallel_framework().c_str(), cv::getNumThreads(), BENCH_HALIDE_VERSION,
              halide.target.to_string().c_str(), halide.V, halide.VN);
#ifdef BENCH_NO_PXL
  std::printf("pxl: not built (BENCH_NO_PXL): checks compare the peers with a scalar reference\n");
#else
  std::printf("pxl %s: CPU backend (device \"cpu\"), all threads; examples from %s\n",
              PXL_VERSION_STRING, PXL_EXAMPLES_DIR);
#endif

  std::map<std::string, std::string> hl_errors;
  if (use_hl) {
    auto t0 = std::chrono::steady_clock::now();
    halide.compile(kernels, hl_errors);
    auto t1 = std::chrono::steady_clock::now();
    std::printf("Halide compile_jit of %zu pipelines: %.0f ms (untimed)\n", kernels.size(),
                std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
#ifndef BENCH_NO_PXL
  std::unique_ptr<PxlPeer> pxl;
  if (use_pxl) pxl = std::make_unique<PxlPeer>();
#endif
  std::printf("\n");

  FILE *csv = nullptr;
  if (!csv_path.empty()) {
    csv = std::fopen(csv_path.c_str(), "w");
    if (!csv) return std::fprintf(stderr, "bench_cpu: cannot write %s\n", csv_path.c_str()), 2;
    std::fprintf(csv,
                 "kernel,width,height,reps,bytes,pxl_ms,pxl_min_ms,opencv_ms,opencv_min_ms,halide_ms,"
                 "halide_min_ms,pxl_gbs,opencv_gbs,halide_gbs,opencv_over_pxl,halide_over_pxl,"
                 "opencv_mismatches,opencv_maxdiff,halide_mismatches,halide_maxdiff,check_baseline,"
                 "pxl_ref_mismatches,background_load\n");
  }

  std::printf("%-10s | %-9s | %9s | %9s | %9s | %8s | %10s | %10s | %3s | %s\n", "kernel", "size",
              "pxl ms", "OpenCV ms", "Halide ms", "pxl GB/s", "OpenCV/pxl", "Halide/pxl", "bg%", "check");
  std::printf("%s\n", std::string(116, '-').c_str());

  int status = 0;
  double max_bg = 0;
  std::vector<std::string> notes;
  for (auto wh : sizes) {
    const int w = wh.first, h = wh.second;
    Image input(w, h, 1);
    fill_random(input, 0x9E3779B97F4A7C15ULL ^ ((uint64_t)w << 32) ^ (uint64_t)h);
    int reps = reps_override ? reps_override : ((int64_t)w * h > 16LL * 1024 * 1024 ? 5 : 10);
    for (const auto &kname : kernels) {
      const KernelDef *kd = nullptr;
      for (const auto &d : kKernels)
        if (kname == d.name) kd = &d;
      const std::string k = kd->name;
      Output o_pxl = make_output(*kd, w, h), o_cv = make_output(*kd, w, h),
             o_hl = make_output(*kd, w, h);
      double bytes = (double)w * h;
      if (kd->kind == Kind::Image) bytes += (double)o_pxl.img.w * o_pxl.img.h * kd->out_esize;
      // Prepare (untimed) once; time the row, retried under --max-bg.
      Prepared p_pxl, p_cv, p_hl;
      p_pxl.error = "not built";
      p_cv.error = p_hl.error = "skipped";
#ifndef BENCH_NO_PXL
      if (use_pxl) p_pxl = pxl->prepare(k, input, o_pxl);
      else p_pxl.error = "skipped";
#endif
      if (use_cv) p_cv = opencv_prepare(k, input, o_cv);
      if (use_hl) {
        if (hl_errors.count(k)) p_hl.error = hl_errors[k];
        else p_hl = halide.prepare(k, input, o_hl);
      }
      Timing t_pxl, t_cv, t_hl;
      double bg = 1;
      for (int attempt = 1;; attempt++) {
        if (max_bg_allowed < 1) wait_quiet(max_bg_allowed, 60);
        CpuSample cpu0 = cpu_sample();
        Timing a_pxl = time_it(p_pxl, 2, reps, o_pxl);
        Timing a_cv = time_it(p_cv, 2, reps, o_cv);
        Timing a_hl = time_it(p_hl, 2, reps, o_hl);
        double b = background_load(cpu0, cpu_sample());
        if (attempt == 1 || b < bg) t_pxl = a_pxl, t_cv = a_cv, t_hl = a_hl, bg = b;
        if (b <= max_bg_allowed || attempt >= 5) break;
      }
      if (!t_pxl.ok && p_pxl.error != "skipped" && p_pxl.error != "not built") status = 1;
      max_bg = std::max(max_bg, bg);

      // ---- check ----
      Output ref;
      bool need_ref = check_ref || !t_pxl.ok;
      if (need_ref) {
        ref = make_output(*kd, w, h);
        reference(k, input, ref);
      }
      const Output &base = t_pxl.ok ? o_pxl : ref;
      std::string check;
      Diff d_cv, d_hl, d_pxl;
      auto peer_check = [&](const char *name, const Timing &t, const Output &o, Diff &d,
                            uint64_t tolerance) {
        if (!t.ok) return;
        d = compare(o, base);
        if (d.mismatches == 0) return;
        if (d.maxdiff > tolerance) status = 1;
        check += std::string(check.empty() ? "" : "; ") + name + " diff " + std::to_string(d.maxdiff) +
                 " n=" + std::to_string(d.mismatches);
      };
      peer_check("cv", t_cv, o_cv, d_cv, k == "blur3" || k == "bilateral" ? 1 : 0);
      peer_check("hl", t_hl, o_hl, d_hl, 0);
      if (t_pxl.ok && check_ref && ref.valid) {
        d_pxl = compare(o_pxl, ref);
        if (d_pxl.mismatches) {
          status = 1;
          check += std::string(check.empty() ? "" : "; ") + "pxl-vs-ref diff " +
                   std::to_string(d_pxl.maxdiff) + " n=" + std::to_string(d_pxl.mismatches);
        }
      }
      if (check.empty()) check = "ok";
      if (!t_pxl.ok) check += " (vs ref)";

      // ---- row ----
      auto ms = [](const Timing &t) {
        return t.ok ? fmt("%9.2f", t.median_ms)
                    : std::string(t.error == "skipped" || t.error == "not built" ? "        -" : "      err");
      };
      auto ratio = [&](const Timing &t) {
        return t.ok && t_pxl.ok ? fmt("%10.2f", t.median_ms / t_pxl.median_ms) : std::string("         -");
      };
      std::string size = w == h ? std::to_string(w) : std::to_string(w) + "x" + std::to_string(h);
      std::printf("%-10s | %-9s | %s | %s | %s | %8s | %s | %s | %3.0f | %s\n", k.c_str(),
                  size.c_str(), ms(t_pxl).c_str(), ms(t_cv).c_str(), ms(t_hl).c_str(),
                  t_pxl.ok ? fmt("%8.2f", bytes / (t_pxl.median_ms * 1e6)).c_str() : "       -",
                  ratio(t_cv).c_str(), ratio(t_hl).c_str(), 100 * bg, check.c_str());
      std::fflush(stdout);
      for (auto [peer, t] : {std::pair<const char *, Timing *>{"pxl", &t_pxl}, {"OpenCV", &t_cv},
                             {"Halide", &t_hl}})
        if (!t->ok && t->error != "skipped" && t->error != "not built")
          notes.push_back(k + " " + size + ": " + peer + ": " + t->error);
        else if (!t->note.empty())
          notes.push_back(k + " " + size + ": " + peer + ": " + t->note);

      if (csv) {
        auto num = [](const Timing &t, double v) { return t.ok ? fmt("%.4f", v) : std::string(""); };
        auto gbs = [&](const Timing &t) { return t.ok ? fmt("%.3f", bytes / (t.median_ms * 1e6)) : std::string(""); };
        auto rat = [&](const Timing &t) {
          return t.ok && t_pxl.ok ? fmt("%.4f", t.median_ms / t_pxl.median_ms) : std::string("");
        };
        std::fprintf(csv, "%s,%d,%d,%d,%.0f,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%.3f\n",
                     k.c_str(), w, h, reps, bytes, num(t_pxl, t_pxl.median_ms).c_str(),
                     num(t_pxl, t_pxl.min_ms).c_str(), num(t_cv, t_cv.median_ms).c_str(),
                     num(t_cv, t_cv.min_ms).c_str(), num(t_hl, t_hl.median_ms).c_str(),
                     num(t_hl, t_hl.min_ms).c_str(), gbs(t_pxl).c_str(), gbs(t_cv).c_str(),
                     gbs(t_hl).c_str(), rat(t_cv).c_str(), rat(t_hl).c_str(),
                     t_cv.ok ? std::to_string(d_cv.mismatches).c_str() : "",
                     t_cv.ok ? std::to_string(d_cv.maxdiff).c_str() : "",
                     t_hl.ok ? std::to_string(d_hl.mismatches).c_str() : "",
                     t_hl.ok ? std::to_string(d_hl.maxdiff).c_str() : "", t_pxl.ok ? "pxl" : "ref",
                     t_pxl.ok && check_ref ? std::to_string(d_pxl.mismatches).c_str() : "", bg);
      }
    }
  }
  if (csv) std::fclose(csv);
  std::printf("\nms: median of the timed runs; speedups: peer ms / pxl ms (> 1: pxl faster); bg%%: CPU\n"
              "share used by other processes during the row (max %.0f%%)\n", 100 * max_bg);
  if (max_bg > 0.10)
    std::printf("warning: other processes used up to %.0f%% of the CPUs during timed runs: "
                "those rows are inflated; rerun on an idle machine\n", 100 * max_bg);
  for (const auto &n : notes) std::fprintf(stderr, "note: %s\n", n.c_str());
  return status;
}
