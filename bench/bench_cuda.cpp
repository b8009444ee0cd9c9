// bench_cuda - pxl's CUDA backend vs NVIDIA NPP and cudaMemcpy, timed in the same run,
// with every NPP result checked against pxl's: the twelve kernels of the Nugteren
// "skeleton" paper on u8 images, the padding test of the access/execute paper, and the
// usual 3x3 and 5x5 filters.
//
//   bench_cuda [--device cuda[:N]] [--sizes 2048,8192,16384] [--kernels a,b,..|all]
//              [--reps N] [--only table|padding|pipeline|filters|loops|stream] [--no-padding]
//              [--no-pipeline] [--no-opencv-filters] [--loop-counts 1,10,100,1000]
//              [--loop-profile N] [--loop-profile-until N] [--stream-frames N] [--no-stream]
//              [--only graph --graph-inputs NAME=FILE,... [--graph-save DIR]]
//
// Sections (all six by default; --only keeps one, --no-padding / --no-pipeline /
// --no-opencv-filters drop one; --padding and --opencv-filters are accepted and change
// nothing):
//
//   table    Per size (N for N x N, or WxH): first a "memcpy" row, cudaMemcpyAsync device
//            to device of W*H bytes, whose GB/s (2*W*H bytes per copy) is the roofline (its
//            check column also shows cudaMemcpy2DAsync of the pitched image, which the copy
//            engine does slower); then per kernel pxl
//            (examples/<kernel>.pxl) and the closest NPP function, both reading the same
//            device input. Columns: median ms per run, speedup = NPP ms / pxl ms (> 1: pxl
//            faster), GB/s of each, pxl's GB/s as a percentage of the copy's, and the check.
//   padding  A vertical mean over 40 rows of f32 images 5120x3200 and 5121x3200, in
//            Gpixel/s, and their ratio: does a width that is not a multiple of the memory
//            transaction cost speed? Padded: pxl's device images (rows padded to the
//            driver's pitch); unpadded: cudaMalloc'ed rows of exactly width * 4 bytes,
//            wrapped with pxl_image_wrap_device.
//   pipeline The edges pipeline of examples/edges.pxl (five stages) on device images of
//            the table's sizes: as written (PXL_FUSE_OFF: five kernels), fused as usual
//            without graphs (PXL_CUDA_GRAPHS=0: one launch per kernel) and with them (the
//            run recorded as a CUDA graph and replayed), next to cudaMemcpyAsync of W*H
//            bytes; speedup = written / fused; the outputs must be identical.
//   loops    A pipeline loop (examples/distance.pxl's step4, a u16 image carried) with a
//            fixed count and with `until unchanged`, n = --loop-counts iterations per run,
//            next to n device-to-device copies of the image (run_loops). --loop-profile N
//            runs the fixed loop once under cudaProfilerStart/Stop for ncu instead
//            (--loop-profile-until N: the until loop).
//   stream   The seed's downscaler (examples/downscale.pxl) on 300 HD 4:2:0 frames from and
//            to pinned host memory, end to end, through pxl_queue (uploads, runs and
//            downloads overlapped on several streams) and in turn, next to the bare
//            transfers of the same bytes (run_stream).
//   graph    Only with --only graph: the global operators' device passes (edt, labels of
//            examples/graph.pxl) against NPP's distance transform and union-find labelling
//            on the images of --graph-inputs (run_graph; bench/graph_gpu.py adds OpenCV).
//   filters  "OpenCV-GPU filters vs NPP": box mean, Gaussian, Laplacian, Sobel d/dx, erosion
//            and dilation, each 3x3 and 5x5, on a 1024x1024 u8 image; the pxl kernels are
//            generated from NPP's own masks (kFilters) and compiled from strings.
//
// Timing, the same for every contender: inputs and outputs are device images allocated
// before timing (pxl writes into a bound output image, so nothing is allocated in the timed
// loop). Two warm-up runs (the first pxl run compiles the kernel with NVRTC), one
// calibration batch that chooses N, the runs per batch, so that a batch lasts at least
// 2 ms, then R batches (--reps, default 10), each timed with std::chrono::steady_clock from
// the first launch to the end of a full synchronisation (pxl_sync for pxl,
// cudaDeviceSynchronize for NPP and the copy; NPP's reductions and histogram also wait
// for their value on the host in every run, as a pxl run does); time per run = batch
// time / N, and the tables show the median over the R batches. pxl runs on its own stream of the device's primary
// context; NPP and the copy on stream 0 of the same context.
//
// GB/s counts the minimum traffic: every input pixel read once and every output element
// written once (transpose as copy; sobel3 writes 2 bytes per pixel; reductions and the
// histogram read the input only), except equalize, which reads its input twice: no output
// pixel is known before the histogram has seen every pixel, and an image as large as
// the benchmark's (64 MiB at 8192x8192) does not stay in the L2 cache (50 MiB on H100
// and H200) until the second read.
//
// Check: pxl's and NPP's outputs (images, reduction values, histograms) are downloaded and
// compared over the interior: a margin of the window's radius is left out at the image
// edges, where border conventions may differ. "ok", or "DIFF maxabs=D n=N" (largest
// absolute difference, number of differing elements). NPP truncates its means (blur3, box,
// Gaussian) where pxl rounds them to nearest: a difference of 1 is tolerated there, still
// shown. The exit status is 1 when a check fails or a pxl, NPP or CUDA call fails (its
// message is printed, with NPP's status code).
//
// Built only where the CUDA toolkit and NPP are found (bench/CMakeLists.txt).

#include <pxl/pxl.h>

#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <npp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <string>
#include <utility>
#include <vector>

#ifndef PXL_EXAMPLES_DIR
#define PXL_EXAMPLES_DIR "examples"
#endif

namespace {

// ------------------------------------------------------------------------------------
// Errors: a failed call throws; the row (or section) that made it catches the failure,
// prints it and sets the exit status.

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void cuda_check(cudaError_t e, const char *what) {
  if (e != cudaSuccess)
    throw Failure(std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

// Any status other than NPP_SUCCESS fails, warnings (> 0) included: none is expected here.
void npp_check(NppStatus s, const char *what) {
  if (s != NPP_SUCCESS) throw Failure(std::string(what) + ": NPP status " + std::to_string((int)s));
}

void pxl_check(pxl_context *ctx, int status, const char *what) {
  if (status != PXL_OK)
    throw Failure(std::string(what) + ": " + pxl_status_name(status) + ": " + pxl_errmsg(ctx));
}

#define CUDA_CALL(fn, ...) cuda_check(fn(__VA_ARGS__), #fn)
#define NPP_CALL(fn, ...) npp_check(fn(__VA_ARGS__), #fn)

// ------------------------------------------------------------------------------------
// Memory

// Raw device memory: NPP scratch buffers, reduction results, morphology masks.
class DevBuf {
 public:
  explicit DevBuf(size_t bytes) { CUDA_CALL(cudaMalloc, &p_, std::max<size_t>(bytes, 1)); }
  ~DevBuf() { cudaFree(p_); }
  DevBuf(DevBuf &&o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  DevBuf &operator=(DevBuf &&) = delete;
  DevBuf(const DevBuf &) = delete;
  template <class T> T *as() const { return static_cast<T *>(p_); }

 private:
  void *p_ = nullptr;
};

// Page-locked host memory, so that copying a reduction result back stays asynchronous.
class HostPinned {
 public:
  HostPinned() = default;
  explicit HostPinned(size_t bytes) { CUDA_CALL(cudaMallocHost, &p_, std::max<size_t>(bytes, 1)); }
  ~HostPinned() { cudaFreeHost(p_); }
  HostPinned(const HostPinned &) = delete;
  HostPinned &operator=(HostPinned &&o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  template <class T> T *as() const { return static_cast<T *>(p_); }

 private:
  void *p_ = nullptr;
};

int type_size(pxl_type t) { return t == PXL_U8 ? 1 : t == PXL_I16 ? 2 : 4; }  // u8, i16, f32 here

// A one-channel device image allocated by pxl, so pxl and NPP read and write the same memory
// with the same (pxl's) row pitch.
class DevImage {
 public:
  DevImage(pxl_context *ctx, int w, int h, pxl_type t) : w_(w), h_(h), type_(t) {
    pxl_check(ctx, pxl_image_create_device(ctx, w, h, t, 1, &img_), "pxl_image_create_device");
    // The zero fill may be queued on pxl's stream: let it finish before stream 0 uses the image.
    pxl_check(ctx, pxl_sync(ctx), "pxl_sync");
  }
  ~DevImage() { pxl_image_free(img_); }
  DevImage(const DevImage &) = delete;
  DevImage &operator=(const DevImage &) = delete;

  pxl_image *pxl() const { return img_; }
  template <class T> T *ptr() const { return static_cast<T *>(pxl_image_data(img_)); }
  int step() const { return (int)pxl_image_pitch(img_); }  // NPP's line step, bytes
  NppiSize size() const { return {w_, h_}; }
  int width() const { return w_; }
  int height() const { return h_; }
  int esize() const { return type_size(type_); }
  pxl_type type() const { return type_; }

 private:
  pxl_image *img_ = nullptr;
  int w_, h_;
  pxl_type type_;
};

// Packed host copy of a device image (u8 or i16 elements).
struct HostImage {
  int w = 0, h = 0, esize = 1;
  std::vector<uint8_t> px;
  int64_t at(int x, int y) const {
    const uint8_t *p = px.data() + ((size_t)y * w + x) * esize;
    if (esize == 1) return *p;
    if (esize == 4) {
      int32_t v;
      std::memcpy(&v, p, sizeof v);
      return v;
    }
    int16_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
};

void upload(const DevImage &d, const void *host) {
  size_t row = (size_t)d.width() * d.esize();
  CUDA_CALL(cudaMemcpy2D, d.ptr<void>(), (size_t)d.step(), host, row, row, (size_t)d.height(),
            cudaMemcpyHostToDevice);
}

HostImage download(const DevImage &d) {
  HostImage h;
  h.w = d.width(), h.h = d.height(), h.esize = d.esize();
  size_t row = (size_t)h.w * h.esize;
  h.px.resize(row * h.h);
  CUDA_CALL(cudaMemcpy2D, h.px.data(), row, d.ptr<void>(), (size_t)d.step(), row, (size_t)h.h,
            cudaMemcpyDeviceToHost);
  return h;
}

// Deterministic random bytes (xorshift64*, fixed seed): never all zeros, so every kernel
// has something to compute and a wrong result shows.
std::vector<uint8_t> random_bytes(size_t n, uint64_t seed) {
  std::vector<uint8_t> v(n);
  uint64_t s = seed ? seed : 1;
  for (size_t i = 0; i < n; i += 8) {
    s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
    uint64_t r = s * 0x2545F4914F6CDD1DULL;
    for (size_t j = 0; j < 8 && i + j < n; j++) v[i + j] = (uint8_t)(r >> (8 * j));
  }
  return v;
}

// ------------------------------------------------------------------------------------
// Results and the check

enum class Kind { Image, Scalar, Hist };

struct Output {
  Kind kind = Kind::Image;
  HostImage img;
  int64_t scalar = 0;
  std::vector<int64_t> bins;
};

struct Diff {
  uint64_t n = 0;      // differing elements
  int64_t maxabs = 0;  // largest absolute difference
};

// Compares a and b, leaving out a margin of mx columns and my rows at the image edges.
Diff compare(const Output &a, const Output &b, int mx, int my) {
  Diff d;
  auto add = [&](int64_t x, int64_t y) {
    if (x != y) d.n++, d.maxabs = std::max<int64_t>(d.maxabs, x > y ? x - y : y - x);
  };
  if (a.kind == Kind::Scalar) {
    add(a.scalar, b.scalar);
  } else if (a.kind == Kind::Hist) {
    if (a.bins.size() != b.bins.size()) return d.n = 1, d.maxabs = -1, d;
    for (size_t i = 0; i < a.bins.size(); i++) add(a.bins[i], b.bins[i]);
  } else {
    if (a.img.w != b.img.w || a.img.h != b.img.h) return d.n = 1, d.maxabs = -1, d;
    for (int y = my; y < a.img.h - my; y++)
      for (int x = mx; x < a.img.w - mx; x++) add(a.img.at(x, y), b.img.at(x, y));
  }
  return d;
}

// "ok", or "DIFF maxabs=D n=N" (with "(tolerated)" when maxabs <= tol); sets *failed.
std::string check_text(const Diff &d, int tol, bool *failed) {
  if (d.n == 0) return "ok";
  bool bad = d.maxabs < 0 || d.maxabs > tol;
  *failed = *failed || bad;
  if (d.maxabs < 0) return "DIFF size";
  return "DIFF maxabs=" + std::to_string(d.maxabs) + " n=" + std::to_string(d.n) +
         (bad ? "" : " (tolerated)");
}

// ------------------------------------------------------------------------------------
// Timing

using Op = std::function<void()>;

constexpr int kWarmup = 2;
constexpr double kMinBatchMs = 2.0;
constexpr int kMaxBatch = 100000;

struct Timing {
  bool ok = false;
  double ms = 0;  // median time per run
  int batch = 0;  // runs per timed batch
  std::string error;
};

// Host time of n back-to-back runs followed by one full synchronisation, in ms.
double batch_ms(const Op &run, const Op &sync, int n) {
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; i++) run();
  sync();
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

// Warm-up, calibration of the batch length, then the median per-run time over reps batches.
Timing time_op(const Op &run, const Op &sync, int reps) {
  Timing t;
  try {
    for (int i = 0; i < kWarmup; i++) batch_ms(run, sync, 1);
    double one = batch_ms(run, sync, 1);
    t.batch = (int)std::min<double>(kMaxBatch, std::max(1.0, std::ceil(kMinBatchMs / std::max(one, 1e-6))));
    std::vector<double> per_run;
    for (int r = 0; r < reps; r++) per_run.push_back(batch_ms(run, sync, t.batch) / t.batch);
    std::sort(per_run.begin(), per_run.end());
    size_t n = per_run.size();
    t.ms = n % 2 ? per_run[n / 2] : 0.5 * (per_run[n / 2 - 1] + per_run[n / 2]);
    t.ok = true;
  } catch (const std::exception &e) {
    t.error = e.what();
  }
  return t;
}

void device_sync() { CUDA_CALL(cudaDeviceSynchronize); }

// ------------------------------------------------------------------------------------
// pxl

// A pxl context on the CUDA device, and the programs compiled so far (each once).
class Pxl {
 public:
  explicit Pxl(const std::string &device) {
    ctx_ = pxl_context_new();
    if (!ctx_) throw Failure("pxl_context_new: out of memory");
    pxl_check(ctx_, pxl_set_device(ctx_, device.c_str()), "pxl_set_device");
  }
  ~Pxl() {
    for (auto &kv : programs_) pxl_program_free(kv.second);
    pxl_context_free(ctx_);
  }
  Pxl(const Pxl &) = delete;
  Pxl &operator=(const Pxl &) = delete;

  pxl_context *ctx() const { return ctx_; }

  // examples/<name>.pxl
  pxl_program *example(const std::string &name) {
    return compile("example:" + name, [&](pxl_program **p) {
      std::string path = std::string(PXL_EXAMPLES_DIR) + "/" + name + ".pxl";
      return pxl_program_from_file(ctx_, path.c_str(), p);
    });
  }
  // Source text; name is its file name in diagnostics.
  pxl_program *source(const std::string &name, const std::string &src) {
    return compile("source:" + name, [&](pxl_program **p) {
      return pxl_program_from_string(ctx_, name.c_str(), src.c_str(), p);
    });
  }

  Op sync() const {
    pxl_context *c = ctx_;
    return [c]() { pxl_check(c, pxl_sync(c), "pxl_sync"); };
  }

 private:
  pxl_program *compile(const std::string &key, const std::function<int(pxl_program **)> &make) {
    auto it = programs_.find(key);
    if (it != programs_.end()) return it->second;
    pxl_program *p = nullptr;
    pxl_check(ctx_, make(&p), key.c_str());
    programs_[key] = p;
    return p;
  }

  pxl_context *ctx_ = nullptr;
  std::map<std::string, pxl_program *> programs_;
};

// One pxl entry point bound to its arguments, ready to be timed. Image runs return once
// queued; reductions and histograms return their value (so each of their runs waits for
// the device), which run() keeps for the check.
class PxlRun {
 public:
  PxlRun(pxl_context *ctx, pxl_program *prog, std::string entry, Kind kind)
      : ctx_(ctx), prog_(prog), entry_(std::move(entry)), kind_(kind) {
    args_ = pxl_args_new(ctx);
    if (!args_) throw Failure("pxl_args_new: out of memory");
  }
  ~PxlRun() { pxl_args_free(args_); }
  PxlRun(const PxlRun &) = delete;
  PxlRun &operator=(const PxlRun &) = delete;

  void image(const char *name, const DevImage &img) {
    pxl_check(ctx_, pxl_args_image(args_, name, img.pxl()), "pxl_args_image");
  }
  void scalar(const char *name, double v) {
    pxl_check(ctx_, pxl_args_scalar(args_, name, v), "pxl_args_scalar");
  }
  void output(const DevImage &img) { pxl_check(ctx_, pxl_args_output(args_, img.pxl()), "pxl_args_output"); }

  void run() {
    pxl_run_result *res = nullptr;
    pxl_check(ctx_, pxl_run(ctx_, prog_, entry_.c_str(), args_, &res), "pxl_run");
    std::unique_ptr<pxl_run_result, void (*)(pxl_run_result *)> hold(res, pxl_result_free);
    if (kind_ == Kind::Scalar) {
      pxl_scalar_result sr;
      pxl_check(ctx_, pxl_result_scalar(res, &sr), "pxl_result_scalar");
      scalar_ = sr.is_float ? (int64_t)std::llround(sr.value) : sr.ivalue;
    } else if (kind_ == Kind::Hist) {
      int n = 0, is_float = 0;
      const double *b = pxl_result_bins(res, &n, &is_float);
      if (!b) throw Failure("pxl_result_bins: no histogram");
      bins_.assign(n, 0);
      for (int i = 0; i < n; i++) bins_[i] = (int64_t)b[i];
    }
  }
  int64_t last_scalar() const { return scalar_; }
  const std::vector<int64_t> &last_bins() const { return bins_; }

 private:
  pxl_context *ctx_;
  pxl_program *prog_;
  std::string entry_;
  Kind kind_;
  pxl_args *args_ = nullptr;
  int64_t scalar_ = 0;
  std::vector<int64_t> bins_;
};

// ------------------------------------------------------------------------------------
// NPP

// The stream context of stream 0 on the current device (CUDA 13 has only the _Ctx API and
// no nppGetStreamContext).
NppStreamContext npp_stream_context() {
  NppStreamContext c;
  std::memset(&c, 0, sizeof c);
  c.hStream = 0;
  int dev = 0;
  CUDA_CALL(cudaGetDevice, &dev);
  c.nCudaDeviceId = dev;
  auto attr = [dev](cudaDeviceAttr a) {
    int v = 0;
    CUDA_CALL(cudaDeviceGetAttribute, &v, a, dev);
    return v;
  };
  c.nMultiProcessorCount = attr(cudaDevAttrMultiProcessorCount);
  c.nMaxThreadsPerMultiProcessor = attr(cudaDevAttrMaxThreadsPerMultiProcessor);
  c.nMaxThreadsPerBlock = attr(cudaDevAttrMaxThreadsPerBlock);
  c.nSharedMemPerBlock = (size_t)attr(cudaDevAttrMaxSharedMemoryPerBlock);
  c.nCudaDevAttrComputeCapabilityMajor = attr(cudaDevAttrComputeCapabilityMajor);
  c.nCudaDevAttrComputeCapabilityMinor = attr(cudaDevAttrComputeCapabilityMinor);
  unsigned int flags = 0;
  CUDA_CALL(cudaStreamGetFlags, c.hStream, &flags);
  c.nStreamFlags = flags;
  return c;
}

// One NPP peer bound to its buffers, ready to be timed; fetch() (untimed) brings the
// result of the last run to the host.
struct NppRun {
  Op run;
  std::function<void(Output &)> fetch;
  std::vector<DevBuf> bufs;                       // scratch, results, masks
  std::vector<std::unique_ptr<DevImage>> images;  // intermediate images
  HostPinned host;                                // reduction results, copied back every run
};

enum class Family { Box, Gauss, Laplace, Sobel, Erode, Dilate };

NppiMaskSize npp_mask(int k) { return k == 3 ? NPP_MASK_SIZE_3_X_3 : NPP_MASK_SIZE_5_X_5; }

// A device mask of w x h ones (a rectangular structuring element).
DevBuf ones_mask(int w, int h) {
  std::vector<Npp8u> ones((size_t)w * h, 1);
  DevBuf m(ones.size());
  CUDA_CALL(cudaMemcpy, m.as<void>(), ones.data(), ones.size(), cudaMemcpyHostToDevice);
  return m;
}

// Grey-level erosion (want_max false) or dilation over a kw x kh rectangle centred on the
// pixel, replicated border. 3x3 uses NPP's dedicated 3x3 functions.
Op npp_morph(bool want_max, int kw, int kh, const NppStreamContext &c, const DevImage &src,
             const DevImage &dst, std::vector<DevBuf> &keep) {
  const Npp8u *s = src.ptr<Npp8u>();
  Npp8u *d = dst.ptr<Npp8u>();
  int ss = src.step(), ds = dst.step();
  NppiSize size = src.size();
  NppiPoint origin = {0, 0};
  if (kw == 3 && kh == 3)
    return [=]() {
      if (want_max)
        NPP_CALL(nppiDilate3x3Border_8u_C1R_Ctx, s, ss, size, origin, d, ds, size, NPP_BORDER_REPLICATE, c);
      else
        NPP_CALL(nppiErode3x3Border_8u_C1R_Ctx, s, ss, size, origin, d, ds, size, NPP_BORDER_REPLICATE, c);
    };
  keep.push_back(ones_mask(kw, kh));
  const Npp8u *mask = keep.back().as<Npp8u>();
  NppiSize msize = {kw, kh};
  NppiPoint anchor = {kw / 2, kh / 2};
  return [=]() {
    if (want_max)
      NPP_CALL(nppiDilateBorder_8u_C1R_Ctx, s, ss, size, origin, d, ds, size, mask, msize, anchor,
               NPP_BORDER_REPLICATE, c);
    else
      NPP_CALL(nppiErodeBorder_8u_C1R_Ctx, s, ss, size, origin, d, ds, size, mask, msize, anchor,
               NPP_BORDER_REPLICATE, c);
  };
}

// The NPP call of one filter with a k x k window over the whole image, src -> dst, with
// NPP_BORDER_REPLICATE (pxl's clamp). These *Border functions read only inside the source
// image; the plain ones would read the halo outside the ROI.
Op npp_filter(Family f, int k, const NppStreamContext &c, const DevImage &src, const DevImage &dst,
              std::vector<DevBuf> &keep) {
  const Npp8u *s = src.ptr<Npp8u>();
  int ss = src.step(), ds = dst.step();
  NppiSize size = src.size();
  NppiPoint origin = {0, 0};
  NppiMaskSize mask = npp_mask(k);
  switch (f) {
    case Family::Box: {
      Npp8u *d = dst.ptr<Npp8u>();
      NppiSize msize = {k, k};
      NppiPoint anchor = {k / 2, k / 2};
      return [=]() {
        NPP_CALL(nppiFilterBoxBorder_8u_C1R_Ctx, s, ss, size, origin, d, ds, size, msize, anchor,
                 NPP_BORDER_REPLICATE, c);
      };
    }
    case Family::Gauss: {
      Npp8u *d = dst.ptr<Npp8u>();
      return [=]() {
        NPP_CALL(nppiFilterGaussBorder_8u_C1R_Ctx, s, ss, size, origin, d, ds, size, mask,
                 NPP_BORDER_REPLICATE, c);
      };
    }
    case Family::Laplace: {
      Npp16s *d = dst.ptr<Npp16s>();
      return [=]() {
        NPP_CALL(nppiFilterLaplaceBorder_8u16s_C1R_Ctx, s, ss, size, origin, d, ds, size, mask,
                 NPP_BORDER_REPLICATE, c);
      };
    }
    case Family::Sobel: {
      // NPP's "vertical" Sobel filter finds vertical edges: it is the x derivative, right
      // column minus left column, like pxl's sobel3 (its impulse response on NPP 13.0 says
      // so, for 3x3 and 5x5; the check confirms it on every run).
      Npp16s *d = dst.ptr<Npp16s>();
      return [=]() {
        NPP_CALL(nppiFilterSobelVertBorder_8u16s_C1R_Ctx, s, ss, size, origin, d, ds, size, mask,
                 NPP_BORDER_REPLICATE, c);
      };
    }
    case Family::Erode:
      return npp_morph(false, k, k, c, src, dst, keep);
    case Family::Dilate:
      return npp_morph(true, k, k, c, src, dst, keep);
  }
  throw Failure("npp_filter: unknown family");
}

// gradient73 = dilation - erosion over a 7x3 window: NPP's one call for it,
// nppiMorphGradientBorder (nppi_morphological_operations.h), with the scratch buffer its
// nppiMorphGetBufferSize asks for. Its output is not the dilation minus the erosion on
// many pixels (NPP 13.0.1 on an H200, with the arguments nppiDilateBorder takes: the
// check counts them, docs/PERFORMANCE.md); pxl's gradient73 equals OpenCV's
// morphologyEx(MORPH_GRADIENT) (bench_cpu's check) and the interpreter (tests/diff).
void npp_gradient73(NppRun &r, const NppStreamContext &c, const DevImage &src, const DevImage &dst) {
  const Npp8u *s = src.ptr<Npp8u>();
  Npp8u *d = dst.ptr<Npp8u>();
  int ss = src.step(), ds = dst.step();
  NppiSize size = src.size();
  NppiPoint origin = {0, 0};
  r.bufs.push_back(ones_mask(7, 3));
  const Npp8u *mask = r.bufs.back().as<Npp8u>();
  int scratch = 0;
  NPP_CALL(nppiMorphGetBufferSize_8u_C1R, size, &scratch);
  r.bufs.emplace_back((size_t)scratch);
  Npp8u *buf = r.bufs.back().as<Npp8u>();
  NppiSize msize = {7, 3};
  NppiPoint anchor = {3, 1};
  r.run = [=]() {
    NPP_CALL(nppiMorphGradientBorder_8u_C1R_Ctx, s, ss, size, origin, d, ds, size, mask, msize, anchor, buf,
             NPP_BORDER_REPLICATE, c);
  };
}

// Reductions. NPP leaves its result in device memory; each timed run also copies it to the
// host (cudaMemcpyAsync into pinned memory, complete at the batch's synchronisation), so
// that both contenders deliver the value to the host. pxl's reductions wait for the device
// on every run while NPP's runs of a batch overlap, so the comparison favours NPP.
void npp_reduction(NppRun &r, const std::string &k, const NppStreamContext &c, const DevImage &src) {
  const Npp8u *s = src.ptr<Npp8u>();
  int ss = src.step();
  NppiSize roi = src.size();
  size_t scratch = 0;
  if (k == "sum")
    NPP_CALL(nppiSumGetBufferHostSize_8u_C1R_Ctx, roi, &scratch, c);
  else if (k == "min")
    NPP_CALL(nppiMinGetBufferHostSize_8u_C1R_Ctx, roi, &scratch, c);
  else if (k == "max")
    NPP_CALL(nppiMaxGetBufferHostSize_8u_C1R_Ctx, roi, &scratch, c);
  else
    NPP_CALL(nppiHistogramEvenGetBufferSize_8u_C1R_Ctx, roi, 257, &scratch, c);
  r.bufs.emplace_back(scratch);
  Npp8u *buf = r.bufs.back().as<Npp8u>();
  size_t value_bytes = k == "sum" ? sizeof(Npp64f) : k == "hist256" ? 256 * sizeof(Npp32s) : sizeof(Npp8u);
  r.bufs.emplace_back(value_bytes);
  void *dval = r.bufs.back().as<void>();
  r.host = HostPinned(value_bytes);
  void *hval = r.host.as<void>();
  // The value is on the host when the run ends, as pxl's: pxl_run returns it, so a batch
  // of pxl runs waits for each value; NPP's runs queued back to back without this wait
  // each saved a round trip (at 2048^2 a third of hist256's time).
  auto copy_back = [=]() {
    CUDA_CALL(cudaMemcpyAsync, hval, dval, value_bytes, cudaMemcpyDeviceToHost, c.hStream);
    CUDA_CALL(cudaStreamSynchronize, c.hStream);
  };
  if (k == "sum") {
    r.run = [=]() {
      NPP_CALL(nppiSum_8u_C1R_Ctx, s, ss, roi, buf, static_cast<Npp64f *>(dval), c);
      copy_back();
    };
    r.fetch = [hval](Output &o) { o.scalar = (int64_t)std::llround(*static_cast<Npp64f *>(hval)); };
  } else if (k == "min" || k == "max") {
    bool want_min = k == "min";
    r.run = [=]() {
      if (want_min)
        NPP_CALL(nppiMin_8u_C1R_Ctx, s, ss, roi, buf, static_cast<Npp8u *>(dval), c);
      else
        NPP_CALL(nppiMax_8u_C1R_Ctx, s, ss, roi, buf, static_cast<Npp8u *>(dval), c);
      copy_back();
    };
    r.fetch = [hval](Output &o) { o.scalar = *static_cast<Npp8u *>(hval); };
  } else {
    // 257 levels 0, 1, ..., 256: bin i counts the values in [i, i + 1).
    r.run = [=]() {
      NPP_CALL(nppiHistogramEven_8u_C1R_Ctx, s, ss, roi, static_cast<Npp32s *>(dval), 257, 0, 256, buf, c);
      copy_back();
    };
    r.fetch = [hval](Output &o) {
      const Npp32s *b = static_cast<const Npp32s *>(hval);
      o.bins.assign(b, b + 256);
    };
  }
}

// median k x k: NPP's median has no border variant and reads the whole mask around each
// ROI pixel, so it runs on the interior (a margin of k / 2, which the check leaves out).
void npp_median(NppRun &r, int k, const NppStreamContext &c, const DevImage &src, const DevImage &dst) {
  int m = k / 2, ss = src.step(), ds = dst.step();
  NppiSize roi = {src.width() - 2 * m, src.height() - 2 * m}, mask = {k, k};
  NppiPoint anchor = {m, m};
  Npp32u bytes = 0;
  NPP_CALL(nppiFilterMedianGetBufferSize_8u_C1R_Ctx, roi, mask, &bytes, c);
  r.bufs.emplace_back(bytes);
  Npp8u *buf = r.bufs.back().as<Npp8u>();
  const Npp8u *s = src.ptr<Npp8u>() + (size_t)m * ss + m;
  Npp8u *d = dst.ptr<Npp8u>() + (size_t)m * ds + m;
  r.run = [=]() { NPP_CALL(nppiFilterMedian_8u_C1R_Ctx, s, ss, d, ds, roi, mask, anchor, buf, c); };
}

// integral: NPP writes (W+1) x (H+1) values with a zero first row and column; pxl's scan
// is the W x H rest. NPP writes into an image one larger, whose rest dst views: the
// check compares the same W x H values.
void npp_integral(NppRun &r, pxl_context *px, const NppStreamContext &c, const DevImage &src,
                  const DevImage &dst) {
  r.images.push_back(std::make_unique<DevImage>(px, src.width() + 1, src.height() + 1, PXL_I32));
  const DevImage &big = *r.images.back();
  const Npp8u *s = src.ptr<Npp8u>();
  Npp32s *b = big.ptr<Npp32s>();
  int ss = src.step(), bs = big.step(), ds = dst.step(), w = src.width(), h = src.height();
  void *d = dst.ptr<void>();
  NppiSize size = src.size();
  r.run = [=]() { NPP_CALL(nppiIntegral_8u32s_C1R_Ctx, s, ss, b, bs, size, 0, c); };
  // untimed, for the check: the W x H rest into dst
  r.fetch = [=](Output &) {
    CUDA_CALL(cudaMemcpy2D, d, (size_t)ds, (const char *)b + bs + 4, (size_t)bs, (size_t)w * 4,
              (size_t)h, cudaMemcpyDeviceToDevice);
  };
}

// equalize, as a user of NPP writes cv::equalizeHist: the histogram (nppiHistogramEven),
// copied to the host, the look-up table computed there as OpenCV does, uploaded, and
// applied with nppiLUTPalette. The copy back makes each run wait for the device, as
// pxl's does (its histogram is a pipeline value read back before the table is built).
void npp_equalize(NppRun &r, const NppStreamContext &c, const DevImage &src, const DevImage &dst) {
  const Npp8u *s = src.ptr<Npp8u>();
  Npp8u *d = dst.ptr<Npp8u>();
  int ss = src.step(), ds = dst.step();
  NppiSize roi = src.size();
  size_t scratch = 0;
  NPP_CALL(nppiHistogramEvenGetBufferSize_8u_C1R_Ctx, roi, 257, &scratch, c);
  r.bufs.emplace_back(scratch);
  r.bufs.emplace_back(256 * sizeof(Npp32s));
  r.bufs.emplace_back(256);
  Npp8u *buf = r.bufs[0].as<Npp8u>();
  Npp32s *dhist = r.bufs[1].as<Npp32s>();
  Npp8u *dlut = r.bufs[2].as<Npp8u>();
  r.host = HostPinned(256 * sizeof(Npp32s) + 256);
  Npp32s *hist = r.host.as<Npp32s>();
  Npp8u *lut = reinterpret_cast<Npp8u *>(hist + 256);
  double total = (double)roi.width * roi.height;
  r.run = [=]() {
    NPP_CALL(nppiHistogramEven_8u_C1R_Ctx, s, ss, roi, dhist, 257, 0, 256, buf, c);
    CUDA_CALL(cudaMemcpyAsync, hist, dhist, 256 * sizeof(Npp32s), cudaMemcpyDeviceToHost, c.hStream);
    CUDA_CALL(cudaStreamSynchronize, c.hStream);
    int i = 0;
    while (!hist[i]) i++;
    if (hist[i] == total) {
      for (int j = 0; j < 256; j++) lut[j] = (Npp8u)i;
    } else {
      float scale = 255.f / (float)(total - hist[i]);
      int sum = 0;
      for (int j = 0; j < 256; j++) {
        if (j > i) sum += hist[j];
        int v = j <= i ? 0 : (int)std::lrint(sum * scale);
        lut[j] = (Npp8u)std::min(255, std::max(0, v));
      }
    }
    CUDA_CALL(cudaMemcpyAsync, dlut, lut, 256, cudaMemcpyHostToDevice, c.hStream);
    NPP_CALL(nppiLUTPalette_8u_C1R_Ctx, s, ss, d, ds, roi, dlut, 8, c);
  };
}

// canny: nppiFilterCannyBorder (Sobel 3x3, L1, replicated border) with pxl's thresholds.
// NPP's suppression and hysteresis are its own: the check shows how many pixels differ
// (tolerated; examples/canny.pxl equals cv::Canny, tests/oracle).
constexpr short kCannyLow = 50, kCannyHigh = 150;
void npp_canny(NppRun &r, const NppStreamContext &c, const DevImage &src, const DevImage &dst) {
  NppiSize roi = src.size();
  int bytes = 0;
  NPP_CALL(nppiFilterCannyBorderGetBufferSize, roi, &bytes);
  r.bufs.emplace_back((size_t)bytes);
  Npp8u *buf = r.bufs.back().as<Npp8u>();
  const Npp8u *s = src.ptr<Npp8u>();
  Npp8u *d = dst.ptr<Npp8u>();
  int ss = src.step(), ds = dst.step();
  NppiPoint origin = {0, 0};
  r.run = [=]() {
    NPP_CALL(nppiFilterCannyBorder_8u_C1R_Ctx, s, ss, roi, origin, d, ds, roi, NPP_FILTER_SOBEL,
             NPP_MASK_SIZE_3_X_3, kCannyLow, kCannyHigh, nppiNormL1, NPP_BORDER_REPLICATE, buf, c);
  };
}

// Resampling to half the size: pyr_down and pyr_down_sep nppiFilterGaussPyramidLayerDownBorder
// (taps 1 4 6 4 1 / 16 in device memory, rate 2, reflect-101 as pxl's mirror101); to twice
// the size pyr_up nppiFilterGaussPyramidLayerUpBorder (taps / 8, another filter than
// cv::pyrUp's: its result differs); resize_area
// nppiResize NPPI_INTER_SUPER, resize_nearest nppiResize NPPI_INTER_NN, resize_linear
// (examples/warp.pxl, INTER_LINEAR_EXACT) nppiResize NPPI_INTER_LINEAR.
void npp_resample(NppRun &r, const std::string &name, const NppStreamContext &c, const DevImage &src,
                  const DevImage &dst) {
  const Npp8u *s = src.ptr<Npp8u>();
  Npp8u *d = dst.ptr<Npp8u>();
  int ss = src.step(), ds = dst.step();
  NppiSize ssz = src.size(), dsz = dst.size();
  if (name == "pyr_up" || name == "pyr_down" || name == "pyr_down_sep") {
    /* taps 1 4 6 4 1 / 16 down; / 8 up, where the zeros between source pixels halve each
     * pass's sum */
    const bool up = name == "pyr_up";
    const float n = up ? 8.f : 16.f;
    const Npp32f taps[5] = {1 / n, 4 / n, 6 / n, 4 / n, 1 / n};
    r.bufs.emplace_back(sizeof taps);
    Npp32f *k = r.bufs.back().as<Npp32f>();
    CUDA_CALL(cudaMemcpy, k, taps, sizeof taps, cudaMemcpyHostToDevice);
    NppiPoint origin = {0, 0};
    r.run = [=]() {
      if (up)
        NPP_CALL(nppiFilterGaussPyramidLayerUpBorder_8u_C1R_Ctx, s, ss, ssz, origin, d, ds, dsz, 2.0f, 5, k,
                 NPP_BORDER_MIRROR, c);
      else
        NPP_CALL(nppiFilterGaussPyramidLayerDownBorder_8u_C1R_Ctx, s, ss, ssz, origin, d, ds, dsz, 2.0f, 5, k,
                 NPP_BORDER_MIRROR, c);
    };
    return;
  }
  NppiRect srect = {0, 0, ssz.width, ssz.height}, drect = {0, 0, dsz.width, dsz.height};
  int mode = name == "resize_area" ? NPPI_INTER_SUPER : name == "resize_linear" ? NPPI_INTER_LINEAR : NPPI_INTER_NN;
  r.run = [=]() { NPP_CALL(nppiResize_8u_C1R_Ctx, s, ss, ssz, srect, d, ds, dsz, drect, mode, c); };
}

// ------------------------------------------------------------------------------------
// Section "table": the skeleton kernels

struct KernelDef {
  const char *name;
  Kind kind;
  pxl_type out;     // image kernels: the output type
  bool transposed;  // output is H x W
  int rx, ry;       // window radius: the margin the check leaves out
  int tol;          // largest tolerated difference (rounding of means)
  const char *file = nullptr;  // the example (examples/FILE.pxl) holding entry `name`; default: name
  int down = 1;                // the output is ceil(W / down) x ceil(H / down) (resampling)
  int up = 1;                  // or W * up x H * up
};

// clang-format off
const KernelDef kKernels[] = {
    {"binarize",   Kind::Image,  PXL_U8,  false, 0, 0, 0},
    {"copy",       Kind::Image,  PXL_U8,  false, 0, 0, 0},
    {"transpose",  Kind::Image,  PXL_U8,  true,  0, 0, 0},
    {"blur3",      Kind::Image,  PXL_U8,  false, 1, 1, 1},
    {"sobel3",     Kind::Image,  PXL_I16, false, 1, 1, 0},
    {"erode3",     Kind::Image,  PXL_U8,  false, 1, 1, 0},
    {"dilate5",    Kind::Image,  PXL_U8,  false, 2, 2, 0},
    {"gradient73", Kind::Image,  PXL_U8,  false, 3, 1, 255},  // NPP's single call is not dilate - erode: counted
    {"sum",        Kind::Scalar, PXL_U8,  false, 0, 0, 0},
    {"min",        Kind::Scalar, PXL_U8,  false, 0, 0, 0},
    {"max",        Kind::Scalar, PXL_U8,  false, 0, 0, 0},
    {"hist256",    Kind::Hist,   PXL_U8,  false, 0, 0, 0},
    // the operators of the language issue (examples written with tables, loops, scans,
    // pipeline values): NPP's closest functions
    {"gauss5",     Kind::Image,  PXL_U8,  false, 2, 2, 255},
    {"median3",    Kind::Image,  PXL_U8,  false, 1, 1, 0},
    {"median5",    Kind::Image,  PXL_U8,  false, 2, 2, 0},
    {"boxr",       Kind::Image,  PXL_U8,  false, 15, 15, 1},
    {"integral",   Kind::Image,  PXL_I32, false, 0, 0, 0},
    {"equalize",   Kind::Image,  PXL_U8,  false, 0, 0, 0},
    {"canny",      Kind::Image,  PXL_U8,  false, 1, 1, 255},
    // resampling (examples/resample.pxl, the multi-rate issue): output a quarter of the input
    {"pyr_down",       Kind::Image, PXL_U8, false, 2, 2, 1,   "resample", 2},  // NPP rounds its float sums
    {"resize_area",    Kind::Image, PXL_U8, false, 0, 0, 1,   "resample", 2},  // k = 2
    {"resize_nearest", Kind::Image, PXL_U8, false, 0, 0, 255, "resample", 2},  // NPP's own positions: counted
    {"pyr_down_sep",   Kind::Image, PXL_U8, false, 2, 2, 1,   "resample", 2},  // two tilers, pyr_down's bits
    {"resize_linear",  Kind::Image, PXL_U8, false, 1, 1, 255, "warp", 2},      // NPP's own weights: counted
    // to twice the size (an output 4 times the input)
    {"pyr_up",         Kind::Image, PXL_U8, false, 2, 2, 255, "resample", 1, 2},  // NPP's float taps: counted
};
// clang-format on

// The NPP peer of kernel k: the closest NPP function, on stream 0, replicated borders.
std::unique_ptr<NppRun> npp_prepare(const KernelDef &k, pxl_context *px, const NppStreamContext &c,
                                    const DevImage &src, const DevImage *dst) {
  auto r = std::make_unique<NppRun>();
  const std::string name = k.name;
  if (k.kind != Kind::Image) {
    npp_reduction(*r, name, c, src);
    return r;
  }
  const Npp8u *s = src.ptr<Npp8u>();
  Npp8u *d = dst->ptr<Npp8u>();
  int ss = src.step(), ds = dst->step();
  NppiSize size = src.size();
  if (name == "binarize")  // NPP writes 255 where the comparison holds, else 0
    r->run = [=]() { NPP_CALL(nppiCompareC_8u_C1R_Ctx, s, ss, (Npp8u)128, d, ds, size, NPP_CMP_GREATER, c); };
  else if (name == "copy")
    r->run = [=]() { NPP_CALL(nppiCopy_8u_C1R_Ctx, s, ss, d, ds, size, c); };
  else if (name == "transpose")  // oSrcROI: the source's size
    r->run = [=]() { NPP_CALL(nppiTranspose_8u_C1R_Ctx, s, ss, d, ds, size, c); };
  else if (name == "blur3")  // NPP truncates the mean, pxl rounds it ((s + 4) / 9): off by <= 1
    r->run = npp_filter(Family::Box, 3, c, src, *dst, r->bufs);
  else if (name == "sobel3")
    r->run = npp_filter(Family::Sobel, 3, c, src, *dst, r->bufs);
  else if (name == "erode3")
    r->run = npp_filter(Family::Erode, 3, c, src, *dst, r->bufs);
  else if (name == "dilate5")
    r->run = npp_filter(Family::Dilate, 5, c, src, *dst, r->bufs);
  else if (name == "gradient73")
    npp_gradient73(*r, c, src, *dst);
  else if (name == "gauss5")  // NPP's own 5x5 weights (not 1 4 6 4 1): the check counts differences
    r->run = npp_filter(Family::Gauss, 5, c, src, *dst, r->bufs);
  else if (name == "median3" || name == "median5")
    npp_median(*r, name == "median3" ? 3 : 5, c, src, *dst);
  else if (name == "boxr")  // 31x31, NPP truncates the mean, pxl rounds it
    r->run = npp_filter(Family::Box, 31, c, src, *dst, r->bufs);
  else if (name == "integral")
    npp_integral(*r, px, c, src, *dst);
  else if (name == "equalize")
    npp_equalize(*r, c, src, *dst);
  else if (name == "canny")
    npp_canny(*r, c, src, *dst);
  else if (name == "pyr_down" || name == "pyr_down_sep" || name == "pyr_up" || name == "resize_area" ||
           name == "resize_nearest" || name == "resize_linear")
    npp_resample(*r, name, c, src, *dst);
  else
    throw Failure("no NPP peer for " + name);
  return r;
}

std::string size_text(int w, int h) {
  return w == h ? std::to_string(w) : std::to_string(w) + "x" + std::to_string(h);
}

std::string fmt(const char *f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string ms_text(const Timing &t) { return t.ok ? fmt("%10.4f", t.ms) : "       err"; }

void table_header() {
  std::printf("%-10s | %-11s | %10s | %10s | %7s | %8s | %8s | %8s | %s\n", "kernel", "size", "pxl ms",
              "NPP ms", "speedup", "pxl GB/s", "NPP GB/s", "%memcpy", "check");
  std::printf("%s\n", std::string(110, '-').c_str());
}

// The roofline of one size: cudaMemcpyAsync device to device of W * H bytes between two
// plain cudaMalloc buffers (the "cudaMemcpy of the image"). The check column also
// shows cudaMemcpy2DAsync of the pitched W x H input, which the copy engine does slower.
double memcpy_row(Pxl &px, const DevImage &in, int reps, std::vector<std::string> &notes, int *status) {
  DevImage dst(px.ctx(), in.width(), in.height(), PXL_U8);
  const void *s = in.ptr<void>();
  void *d = dst.ptr<void>();
  size_t ss = in.step(), ds = dst.step(), w = in.width(), h = in.height();
  void *a = nullptr, *b = nullptr;
  CUDA_CALL(cudaMalloc, &a, w * h);
  CUDA_CALL(cudaMalloc, &b, w * h);
  CUDA_CALL(cudaMemset, a, 1, w * h);
  Op copy1d = [=]() { CUDA_CALL(cudaMemcpyAsync, b, a, w * h, cudaMemcpyDeviceToDevice, (cudaStream_t)0); };
  Op copy2d = [=]() {
    CUDA_CALL(cudaMemcpy2DAsync, d, ds, s, ss, w, h, cudaMemcpyDeviceToDevice, (cudaStream_t)0);
  };
  Timing t = time_op(copy1d, device_sync, reps);
  Timing t2 = time_op(copy2d, device_sync, reps);
  cudaFree(a);
  cudaFree(b);
  double gbs = t.ok ? 2.0 * w * h / (t.ms * 1e6) : 0;
  std::string note = "(roofline)";
  if (t2.ok) note += fmt("; cudaMemcpy2D of the pitched image: %.1f GB/s", 2.0 * w * h / (t2.ms * 1e6));
  std::printf("%-10s | %-11s | %10s | %s | %7s | %8s | %8s | %8s | %s\n", "memcpy",
              size_text(in.width(), in.height()).c_str(), "-", ms_text(t).c_str(), "-", "-",
              t.ok ? fmt("%8.1f", gbs).c_str() : "-", "100.0%", note.c_str());
  if (!t.ok) *status = 1, notes.push_back("memcpy: " + t.error);
  if (!t2.ok && !t2.error.empty()) *status = 1, notes.push_back("memcpy 2D: " + t2.error);
  return gbs;
}

// One row: pxl and NPP on kernel k, timed, checked, printed.
void kernel_row(Pxl &px, const NppStreamContext &c, const KernelDef &k, const DevImage &in, int reps,
                double memcpy_gbs, std::vector<std::string> &notes, int *status) {
  const int w = in.width(), h = in.height();
  const std::string size = size_text(w, h);
  Timing tp, tn;
  Output op, on;
  op.kind = on.kind = k.kind;
  std::string check;
  bool failed = false;
  try {
    std::unique_ptr<DevImage> out_pxl, out_npp;
    if (k.kind == Kind::Image) {
      int ow = k.transposed ? h : w, oh = k.transposed ? w : h;
      if (k.down > 1) ow = (ow + k.down - 1) / k.down, oh = (oh + k.down - 1) / k.down;
      ow *= k.up, oh *= k.up;
      out_pxl = std::make_unique<DevImage>(px.ctx(), ow, oh, k.out);
      out_npp = std::make_unique<DevImage>(px.ctx(), ow, oh, k.out);
    }
    // canny reads a picture of edges (blocks of 64 x 64 pixels, two levels, with noise):
    // on random bytes its hysteresis would follow noise across the whole image
    const std::string name = k.name;
    std::unique_ptr<DevImage> edges;
    if (name == "canny") {
      edges = std::make_unique<DevImage>(px.ctx(), w, h, PXL_U8);
      std::vector<uint8_t> pic = random_bytes((size_t)w * h, 0xED6E5ULL ^ (uint64_t)w);
      for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
          uint8_t &v = pic[(size_t)y * w + x];
          v = (uint8_t)((((x >> 6) + (y >> 6)) & 1 ? 190 : 60) + v % 17 - 8);
        }
      upload(*edges, pic.data());
    }
    const DevImage &src = edges ? *edges : in;
    PxlRun pr(px.ctx(), px.example(k.file ? k.file : k.name), k.name, k.kind);
    pr.image("in", src);
    if (name == "resize_area") pr.scalar("k", 2);
    if (name == "resize_nearest" || name == "resize_linear") pr.scalar("ow", (w + 1) / 2), pr.scalar("oh", (h + 1) / 2);
    if (name == "binarize") pr.scalar("t", 128);
    if (name == "boxr") pr.scalar("r", 15);
    if (name == "canny") pr.scalar("lo", kCannyLow), pr.scalar("hi", kCannyHigh), pr.scalar("l2", 0);
    if (out_pxl) pr.output(*out_pxl);
    std::unique_ptr<NppRun> nr = npp_prepare(k, px.ctx(), c, src, out_npp.get());

    tp = time_op([&pr]() { pr.run(); }, px.sync(), reps);
    tn = time_op(nr->run, device_sync, reps);

    if (tp.ok && tn.ok) {
      if (k.kind == Kind::Image) {
        if (nr->fetch) nr->fetch(on);  // integral: NPP's values into out_npp
        op.img = download(*out_pxl), on.img = download(*out_npp);
      } else {
        op.scalar = pr.last_scalar(), op.bins = pr.last_bins();
        nr->fetch(on);
      }
      check = check_text(compare(op, on, k.rx, k.ry), k.tol, &failed);
    } else {
      check = "-";
    }
  } catch (const std::exception &e) {
    failed = true;
    check = "err";
    notes.push_back(std::string(k.name) + " " + size + ": " + e.what());
  }
  if (!tp.ok && !tp.error.empty())
    failed = true, notes.push_back(std::string(k.name) + " " + size + ": pxl: " + tp.error);
  if (!tn.ok && !tn.error.empty())
    failed = true, notes.push_back(std::string(k.name) + " " + size + ": NPP: " + tn.error);
  if (failed) *status = 1;

  const double reads = std::string(k.name) == "equalize" ? 2 : 1;
  const double outs =
      (double)k.up * k.up * ((w + k.down - 1) / k.down) * ((h + k.down - 1) / k.down) / ((double)w * h);
  double bytes = (double)w * h * (k.kind == Kind::Image ? reads + type_size(k.out) * outs : reads);
  auto gbs = [&](const Timing &t) { return t.ok ? bytes / (t.ms * 1e6) : 0.0; };
  std::printf(
      "%-10s | %-11s | %s | %s | %7s | %8s | %8s | %8s | %s\n", k.name, size.c_str(), ms_text(tp).c_str(),
      ms_text(tn).c_str(), tp.ok && tn.ok ? fmt("%7.2f", tn.ms / tp.ms).c_str() : "-",
      tp.ok ? fmt("%8.1f", gbs(tp)).c_str() : "-", tn.ok ? fmt("%8.1f", gbs(tn)).c_str() : "-",
      tp.ok && memcpy_gbs > 0 ? fmt("%7.1f%%", 100 * gbs(tp) / memcpy_gbs).c_str() : "-", check.c_str());
  std::fflush(stdout);
}

int run_table(Pxl &px, const NppStreamContext &c, const std::vector<std::pair<int, int>> &sizes,
              const std::vector<std::string> &kernels, int reps) {
  int status = 0;
  std::vector<std::string> notes;
  std::printf("== skeleton kernels: pxl vs NPP (u8 input, random bytes)\n");
  table_header();
  for (auto wh : sizes) {
    const int w = wh.first, h = wh.second;
    try {
      DevImage in(px.ctx(), w, h, PXL_U8);
      upload(in,
             random_bytes((size_t)w * h, 0x9E3779B97F4A7C15ULL ^ ((uint64_t)w << 32) ^ (uint64_t)h).data());
      double memcpy_gbs = memcpy_row(px, in, reps, notes, &status);
      for (const auto &name : kernels)
        for (const auto &k : kKernels)
          if (name == k.name) kernel_row(px, c, k, in, reps, memcpy_gbs, notes, &status);
    } catch (const std::exception &e) {
      status = 1;
      notes.push_back(size_text(w, h) + ": " + e.what());
    }
  }
  std::printf(
      "\nms: median per run; speedup: NPP ms / pxl ms (> 1: pxl faster); GB/s: input read once\n"
      "(equalize: twice) + output written once; %%memcpy: pxl GB/s / cudaMemcpyAsync D2D GB/s of W*H\n"
      "bytes (memcpy rows:\n"
      "the copy's ms and GB/s in the NPP columns).\n"
      "NPP peers: binarize nppiCompareC (>, 255/0), copy nppiCopy, transpose nppiTranspose, blur3\n"
      "nppiFilterBoxBorder 3x3, sobel3 nppiFilterSobelVertBorder 8u16s 3x3, erode3 nppiErode3x3Border,\n"
      "dilate5 nppiDilateBorder 5x5, gradient73 nppiMorphGradientBorder 7x3,\n"
      "sum/min/max nppiSum/Min/Max + copy of the value to the host, hist256 nppiHistogramEven (257 levels);\n"
      "gauss5 nppiFilterGaussBorder 5x5 (NPP's weights, not 1 4 6 4 1: the check counts the differences),\n"
      "median3/5 nppiFilterMedian (interior),\n"
      "boxr nppiFilterBoxBorder 31x31 (pxl: radius 15, rounded), integral nppiIntegral_8u32s (W+1 x H+1),\n"
      "equalize nppiHistogramEven + table on the host + nppiLUTPalette, canny nppiFilterCannyBorder\n"
      "(L1, 50/150; on 64x64 blocks with noise; NPP's edges are its own: the check counts differences);\n"
      "to half the size: pyr_down, pyr_down_sep nppiFilterGaussPyramidLayerDownBorder (1 4 6 4 1 / 16,\n"
      "mirror), pyr_up (to twice the size) nppiFilterGaussPyramidLayerUpBorder (1 4 6 4 1 / 8,\n"
      "mirror), resize_area nppiResize SUPER, resize_nearest nppiResize NN, resize_linear nppiResize\n"
      "LINEAR (NPP's own positions and weights: counted);\n"
      "all with NPP_BORDER_REPLICATE (pxl: clamp). pxl's reductions wait for the device on every run.\n");
  for (const auto &n : notes) std::fprintf(stderr, "note: %s\n", n.c_str());
  return status;
}

// ------------------------------------------------------------------------------------
// Section "padding": vertical mean of 40 rows, f32, widths 5120 and 5121

const char *kVmeanSource =
    "kernel f32 vmean40(image f32 in) {\n"
    "    f32 s = 0;\n"
    "    for (int dy = -20; dy < 20; dy++)\n"
    "        s += in(0, dy);\n"
    "    return s / 40.0;\n"
    "}\n";

int run_padding(Pxl &px, int reps) {
  std::printf("\n== padding: vertical mean of 40 rows (dy -20..19, clamp), f32, pxl only\n");
  std::printf("%-10s | %-11s | %9s | %10s | %9s\n", "rows", "size", "pitch B", "ms", "Gpixel/s");
  std::printf("%s\n", std::string(62, '-').c_str());
  int status = 0;
  double gps[2] = {0, 0}, gpu[2] = {0, 0};
  const int widths[2] = {5120, 5121}, h = 3200;
  try {
    pxl_program *prog = px.source("vmean40.pxl", kVmeanSource);
    for (int i = 0; i < 2; i++) {
      const int w = widths[i];
      DevImage in(px.ctx(), w, h, PXL_F32), out(px.ctx(), w, h, PXL_F32);
      std::vector<uint8_t> bytes = random_bytes((size_t)w * h, 0xC0FFEEULL + w);
      std::vector<float> pixels(bytes.begin(), bytes.end());
      upload(in, pixels.data());
      PxlRun r(px.ctx(), prog, "vmean40", Kind::Image);
      r.image("in", in);
      r.output(out);
      Timing t = time_op([&r]() { r.run(); }, px.sync(), reps);
      if (!t.ok) throw Failure("vmean40 " + size_text(w, h) + ": " + t.error);
      gps[i] = (double)w * h / (t.ms * 1e6);
      std::printf("%-10s | %-11s | %9d | %s | %9.2f\n", "padded", size_text(w, h).c_str(), in.step(),
                  ms_text(t).c_str(), gps[i]);
      // the same on cudaMalloc'ed rows of exactly w * 4 bytes, wrapped as pxl images
      void *din = nullptr, *dout = nullptr;
      CUDA_CALL(cudaMalloc, &din, (size_t)w * h * 4);
      CUDA_CALL(cudaMalloc, &dout, (size_t)w * h * 4);
      CUDA_CALL(cudaMemcpy2D, din, (size_t)w * 4, in.ptr<void>(), (size_t)in.step(), (size_t)w * 4, (size_t)h,
                cudaMemcpyDeviceToDevice);
      pxl_image *win = nullptr, *wout = nullptr;
      pxl_check(px.ctx(), pxl_image_wrap_device(px.ctx(), din, w, h, PXL_F32, 1, (size_t)w * 4, &win),
                "pxl_image_wrap_device");
      pxl_check(px.ctx(), pxl_image_wrap_device(px.ctx(), dout, w, h, PXL_F32, 1, (size_t)w * 4, &wout),
                "pxl_image_wrap_device");
      pxl_args *wa = pxl_args_new(px.ctx());
      pxl_args_image(wa, "in", win);
      pxl_args_output(wa, wout);
      Timing tu = time_op(
          [&]() {
            pxl_run_result *res = nullptr;
            pxl_check(px.ctx(), pxl_run(px.ctx(), prog, "vmean40", wa, &res), "pxl_run vmean40");
            pxl_result_free(res);
          },
          px.sync(), reps);
      pxl_args_free(wa);
      pxl_image_free(win);
      pxl_image_free(wout);
      cudaFree(din);
      cudaFree(dout);
      if (!tu.ok) throw Failure("vmean40 unpadded " + size_text(w, h) + ": " + tu.error);
      gpu[i] = (double)w * h / (tu.ms * 1e6);
      std::printf("%-10s | %-11s | %9d | %s | %9.2f\n", "unpadded", size_text(w, h).c_str(), w * 4,
                  ms_text(tu).c_str(), gpu[i]);
    }
    std::printf("ratio 5121/5120: padded %.3f, unpadded %.3f\n", gps[1] / gps[0], gpu[1] / gpu[0]);
  } catch (const std::exception &e) {
    status = 1;
    std::fprintf(stderr, "note: padding: %s\n", e.what());
  }
  return status;
}

// ------------------------------------------------------------------------------------
// Section "pipeline": examples/edges.pxl (five stages) as written (PXL_FUSE_OFF) and
// fused (the default: 2 kernels, docs/ARCHITECTURE.md "Fusion"), each with CUDA graphs,
// and fused without graphs; the three outputs must be the same bits

int run_pipeline(Pxl &px, const std::string &device, const std::vector<std::pair<int, int>> &sizes, int reps) {
  std::printf("\n== pipeline: examples/edges.pxl (gauss3, sobel_x, sobel_y, magnitude, threshold), u8, "
              "device images\n");
  std::printf("%-11s | %10s | %10s | %10s | %10s | %7s | %8s\n", "size", "memcpy ms", "written ms", "no graph ms",
              "fused ms", "speedup", "x memcpy");
  std::printf("%s\n", std::string(85, '-').c_str());
  int status = 0;
  // the same device without graphs: a second context (its own CUDA backend), made while
  // PXL_CUDA_GRAPHS=0 is set
  setenv("PXL_CUDA_GRAPHS", "0", 1);
  Pxl plain(device);
  DevImage probe(plain.ctx(), 16, 16, PXL_U8);  // opens the backend now, reading the variable
  unsetenv("PXL_CUDA_GRAPHS");
  Pxl written(device);
  pxl_check(written.ctx(), pxl_set_fusion(written.ctx(), PXL_FUSE_OFF), "pxl_set_fusion");
  for (auto [w, h] : sizes) {
    try {
      DevImage in(px.ctx(), w, h, PXL_U8), out(px.ctx(), w, h, PXL_U8), out2(plain.ctx(), w, h, PXL_U8);
      DevImage in2(plain.ctx(), w, h, PXL_U8), in3(written.ctx(), w, h, PXL_U8), out3(written.ctx(), w, h, PXL_U8);
      std::vector<uint8_t> bytes = random_bytes((size_t)w * h, 0xED6E5ULL + w);
      upload(in, bytes.data());
      upload(in2, bytes.data());
      upload(in3, bytes.data());
      void *a = nullptr, *b = nullptr;
      CUDA_CALL(cudaMalloc, &a, (size_t)w * h);
      CUDA_CALL(cudaMalloc, &b, (size_t)w * h);
      Timing tm = time_op([&]() { CUDA_CALL(cudaMemcpyAsync, b, a, (size_t)w * h, cudaMemcpyDeviceToDevice, 0); },
                          device_sync, reps);
      cudaFree(a);
      cudaFree(b);
      PxlRun g(px.ctx(), px.example("edges"), "edges", Kind::Image), n(plain.ctx(), plain.example("edges"), "edges",
                                                                         Kind::Image);
      PxlRun u(written.ctx(), written.example("edges"), "edges", Kind::Image);
      g.image("in", in), g.scalar("t", 40), g.output(out);
      n.image("in", in2), n.scalar("t", 40), n.output(out2);
      u.image("in", in3), u.scalar("t", 40), u.output(out3);
      Timing tg = time_op([&]() { g.run(); }, px.sync(), reps);
      Timing tn = time_op([&]() { n.run(); }, plain.sync(), reps);
      Timing tu = time_op([&]() { u.run(); }, written.sync(), reps);
      if (!tm.ok || !tg.ok || !tn.ok || !tu.ok)
        throw Failure(!tm.ok ? tm.error : !tg.ok ? tg.error : !tn.ok ? tn.error : tu.error);
      bool failed = false;
      Output og, on, ou;
      og.img = download(out), on.img = download(out2), ou.img = download(out3);
      std::string check = check_text(compare(og, ou, 0, 0), 0, &failed);
      std::string check2 = check_text(compare(on, ou, 0, 0), 0, &failed);
      status |= failed;
      std::printf("%-11s | %s | %s | %s | %s | %7.2f | %8.2f  %s %s\n", size_text(w, h).c_str(), ms_text(tm).c_str(),
                  ms_text(tu).c_str(), ms_text(tn).c_str(), ms_text(tg).c_str(), tu.ms / tg.ms, tg.ms / tm.ms,
                  check.c_str(), check2.c_str());
    } catch (const std::exception &e) {
      status = 1;
      std::fprintf(stderr, "note: pipeline %s: %s\n", size_text(w, h).c_str(), e.what());
    }
  }
  return status;
}

// ------------------------------------------------------------------------------------
// Section "loops": pipeline loops on the GPU

// The loop pipelines timed: examples/distance.pxl's kernels (seeds, step4) in a loop of a
// fixed count, and the same loop with `until unchanged(d)` (a device-side change test
// every few iterations), on an image whose only 0 pixel is a corner, so that neither
// reaches its fixed point within the counts timed.
const char *const kLoopPipelines =
    "\npipeline fixed(image u8 in, u32 n) -> image u16 {\n"
    "    image u16 d = seeds(in);\n    loop (n) { d = step4(d); }\n    return d;\n}\n"
    "pipeline until(image u8 in, u32 n) -> image u16 {\n"
    "    image u16 d = seeds(in);\n    loop (n) until unchanged(d) { d = step4(d); }\n    return d;\n}\n";

std::string read_text(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Failure("cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Per size and iteration count n: ms per run of each loop (one pxl_run: seeds, then n
// iterations, on device images), and a cudaMemcpyAsync of the u16 image (2*W*H bytes)
// repeated n times, the memory-speed floor of n iterations that each read and write the
// image once. With profile_n > 0, instead runs `fixed` once with n = profile_n between
// cudaProfilerStart and cudaProfilerStop (after two warm-up runs: the run profiled is a
// replay of the recorded graph, as in the timed runs), for ncu
// --profile-from-start off to sum the kernels' durations against the run's time here;
// profile_n < 0 does the same with `until` and n = -profile_n (recorded whole when n is
// too small for the change test to run, 16 or less, else in chunks between the tests:
// runtime/loops.c).
int run_loops(Pxl &px, const std::vector<std::pair<int, int>> &sizes, const std::vector<int> &counts, int reps,
              int profile_n) {
  pxl_program *prog = px.source("distance+loops", read_text(std::string(PXL_EXAMPLES_DIR) + "/distance.pxl") +
                                                      kLoopPipelines);
  int status = 0;
  const bool profile_until = profile_n < 0;
  if (profile_until) profile_n = -profile_n;
  if (!profile_n) {
    std::printf("\n== loops: examples/distance.pxl's step4 in a pipeline loop (u16 image carried), device "
                "images;\n   n iterations per run (+ the seeds stage); memcpy: n copies of the u16 image\n");
    std::printf("%-11s | %6s | %10s | %10s | %10s | %12s | %9s\n", "size", "n", "fixed ms", "until ms",
                "memcpy ms", "fixed/memcpy", "until/fix");
    std::printf("%s\n", std::string(86, '-').c_str());
  }
  for (auto [w, h] : sizes) {
    try {
      DevImage in(px.ctx(), w, h, PXL_U8), out(px.ctx(), w, h, PXL_U16);
      std::vector<uint8_t> bytes((size_t)w * h, 255);
      bytes[0] = 0;
      upload(in, bytes.data());
      for (int n : profile_n ? std::vector<int>{profile_n} : counts) {
        PxlRun f(px.ctx(), prog, "fixed", Kind::Image), u(px.ctx(), prog, "until", Kind::Image);
        f.image("in", in), f.scalar("n", n), f.output(out);
        u.image("in", in), u.scalar("n", n), u.output(out);
        if (profile_n) {
          PxlRun &r = profile_until ? u : f;
          r.run();  // compiles; the second run records the graph, later ones replay it
          r.run();
          px.sync()();
          auto t0 = std::chrono::steady_clock::now();
          CUDA_CALL(cudaProfilerStart);
          r.run();
          px.sync()();
          CUDA_CALL(cudaProfilerStop);
          double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
          std::printf("profiled: %s, %s, n=%d: %.4f ms under the profiler\n", profile_until ? "until" : "fixed",
                      size_text(w, h).c_str(), n, ms);
          continue;
        }
        size_t bytes16 = (size_t)w * h * 2;
        void *a = nullptr, *b = nullptr;
        CUDA_CALL(cudaMalloc, &a, bytes16);
        CUDA_CALL(cudaMalloc, &b, bytes16);
        Timing tm = time_op(
            [&]() {
              for (int k = 0; k < n; k++) CUDA_CALL(cudaMemcpyAsync, b, a, bytes16, cudaMemcpyDeviceToDevice, 0);
            },
            device_sync, reps);
        cudaFree(a);
        cudaFree(b);
        Timing tf = time_op([&]() { f.run(); }, px.sync(), reps);
        Timing tu = time_op([&]() { u.run(); }, px.sync(), reps);
        if (!tm.ok || !tf.ok || !tu.ok) throw Failure(tm.ok ? tf.ok ? tu.error : tf.error : tm.error);
        std::printf("%-11s | %6d | %s | %s | %s | %12.2f | %9.2f\n", size_text(w, h).c_str(), n, ms_text(tf).c_str(),
                    ms_text(tu).c_str(), ms_text(tm).c_str(), tf.ms / tm.ms, tu.ms / tf.ms);
      }
    } catch (const std::exception &e) {
      status = 1;
      std::fprintf(stderr, "note: loops %s: %s\n", size_text(w, h).c_str(), e.what());
    }
  }
  return status;
}

// ------------------------------------------------------------------------------------
// Section "filters": 3x3 and 5x5 filters, pxl kernels generated from NPP's masks

struct FilterDef {
  const char *name;
  Family family;
  int k;                     // window k x k
  std::vector<double> mask;  // Gauss, Laplace, Sobel: k*k weights, row by row (dy, then dx)
  int tol;                   // largest tolerated difference
};

// The masks are NPP's as CUDA 13's NPP computes them (read off its impulse responses, as
// correlation weights). Laplace 3x3 is NPP's 8-neighbour one; Sobel is d/dx, right minus
// left. NPP's Gauss masks are sampled Gaussians with sigma 1 (3x3) and 1.4 (5x5: its header
// says 0.4 + (width / 2) * 0.6 = 1.6, the weights say 1.4), not binomial: the pxl kernels
// use the same f32 weights. NPP truncates its box and Gauss means (floor of the float sum)
// where pxl rounds to nearest, hence the tolerance of 1.
// clang-format off
const FilterDef kFilters[] = {
    {"box3",     Family::Box,     3, {}, 1},
    {"box5",     Family::Box,     5, {}, 1},
    {"gauss3",   Family::Gauss,   3, {0.0751136094, 0.123841405,  0.0751136094,
                                      0.123841405,  0.204179943,  0.123841405,
                                      0.0751136094, 0.123841405,  0.0751136094}, 1},
    {"gauss5",   Family::Gauss,   5, {0.0121461293, 0.0261099488, 0.0336973257, 0.0261099488, 0.0121461293,
                                      0.0261099488, 0.0561273023, 0.0724375173, 0.0561273023, 0.0261099488,
                                      0.0336973257, 0.0724375173, 0.0934873745, 0.0724375173, 0.0336973257,
                                      0.0261099488, 0.0561273023, 0.0724375173, 0.0561273023, 0.0261099488,
                                      0.0121461293, 0.0261099488, 0.0336973257, 0.0261099488, 0.0121461293}, 1},
    {"laplace3", Family::Laplace, 3, {-1, -1, -1,
                                      -1,  8, -1,
                                      -1, -1, -1}, 0},
    {"laplace5", Family::Laplace, 5, {-1, -3, -4, -3, -1,
                                      -3,  0,  6,  0, -3,
                                      -4,  6, 20,  6, -4,
                                      -3,  0,  6,  0, -3,
                                      -1, -3, -4, -3, -1}, 0},
    {"sobel3",   Family::Sobel,   3, {-1, 0, 1,
                                      -2, 0, 2,
                                      -1, 0, 1}, 0},
    {"sobel5",   Family::Sobel,   5, {-1,  -2, 0,  2, 1,
                                      -4,  -8, 0,  8, 4,
                                      -6, -12, 0, 12, 6,
                                      -4,  -8, 0,  8, 4,
                                      -1,  -2, 0,  2, 1}, 0},
    {"erode3",   Family::Erode,   3, {}, 0},
    {"erode5",   Family::Erode,   5, {}, 0},
    {"dilate3",  Family::Dilate,  3, {}, 0},
    {"dilate5",  Family::Dilate,  5, {}, 0},
};
// clang-format on

bool filter_is_i16(const FilterDef &f) { return f.family == Family::Laplace || f.family == Family::Sobel; }

// The pxl kernel of filter f: u8 input; u8 output (rounded to nearest), i16 for the
// derivatives. Window loops for box and morphology, one weighted read per non-zero weight
// otherwise (integer weights in int, Gauss weights in f32).
std::string filter_source(const FilterDef &f) {
  std::ostringstream s;
  const int r = f.k / 2, area = f.k * f.k;
  auto loops = [&](const char *body) {
    s << "    for (int dy = -" << r << "; dy <= " << r << "; dy++)\n"
      << "        for (int dx = -" << r << "; dx <= " << r << "; dx++)\n"
      << "            " << body << "\n";
  };
  s << "kernel " << (filter_is_i16(f) ? "i16 " : "u8 ") << f.name << "(image u8 in) {\n";
  if (f.family == Family::Erode || f.family == Family::Dilate) {
    bool want_max = f.family == Family::Dilate;
    s << "    u8 m = " << (want_max ? 0 : 255) << ";\n";
    loops(want_max ? "m = max(m, in(dx, dy));" : "m = min(m, in(dx, dy));");
    s << "    return m;\n";
  } else if (f.family == Family::Box) {
    s << "    int s = 0;\n";
    loops("s += in(dx, dy);");
    s << "    return (s + " << area / 2 << ") / " << area << ";\n";
  } else {
    bool real = f.family == Family::Gauss;
    s << (real ? "    f32 s = 0;\n" : "    int s = 0;\n");
    char w[32];
    for (int dy = -r; dy <= r; dy++)
      for (int dx = -r; dx <= r; dx++) {
        double v = f.mask[(size_t)(dy + r) * f.k + (dx + r)];
        if (v == 0) continue;
        std::snprintf(w, sizeof w, real ? "%.9g" : "%.0f", v);
        s << "    s += " << w << " * in(" << dx << ", " << dy << ");\n";
      }
    s << "    return s;\n";
  }
  s << "}\n";
  return s.str();
}

// One row of the filter table.
bool filter_row(Pxl &px, const NppStreamContext &c, const FilterDef &f, const DevImage &in, int reps,
                std::vector<std::string> &notes) {
  bool failed = false;
  Timing tp, tn;
  std::string check = "-";
  try {
    pxl_type t = filter_is_i16(f) ? PXL_I16 : PXL_U8;
    DevImage out_pxl(px.ctx(), in.width(), in.height(), t), out_npp(px.ctx(), in.width(), in.height(), t);
    PxlRun pr(px.ctx(), px.source(std::string(f.name) + ".pxl", filter_source(f)), f.name, Kind::Image);
    pr.image("in", in);
    pr.output(out_pxl);
    std::vector<DevBuf> keep;
    Op npp = npp_filter(f.family, f.k, c, in, out_npp, keep);
    tp = time_op([&pr]() { pr.run(); }, px.sync(), reps);
    tn = time_op(npp, device_sync, reps);
    if (tp.ok && tn.ok) {
      Output a, b;
      a.img = download(out_pxl), b.img = download(out_npp);
      check = check_text(compare(a, b, f.k / 2, f.k / 2), f.tol, &failed);
    }
  } catch (const std::exception &e) {
    failed = true;
    check = "err";
    notes.push_back(std::string(f.name) + ": " + e.what());
  }
  if (!tp.ok && !tp.error.empty()) failed = true, notes.push_back(std::string(f.name) + ": pxl: " + tp.error);
  if (!tn.ok && !tn.error.empty()) failed = true, notes.push_back(std::string(f.name) + ": NPP: " + tn.error);
  std::printf("%-10s | %s | %s | %7s | %s\n", f.name, ms_text(tp).c_str(), ms_text(tn).c_str(),
              tp.ok && tn.ok ? fmt("%7.2f", tn.ms / tp.ms).c_str() : "-", check.c_str());
  std::fflush(stdout);
  return failed;
}

int run_filters(Pxl &px, const NppStreamContext &c, int reps) {
  const int n = 1024;
  std::printf("\n== OpenCV-GPU filters vs NPP: %dx%d u8, replicated border (pxl clamp)\n", n, n);
  std::printf("%-10s | %10s | %10s | %7s | %s\n", "filter", "pxl ms", "NPP ms", "speedup", "check");
  std::printf("%s\n", std::string(62, '-').c_str());
  int status = 0;
  std::vector<std::string> notes;
  try {
    DevImage in(px.ctx(), n, n, PXL_U8);
    upload(in, random_bytes((size_t)n * n, 0x5EED0001ULL).data());
    for (const auto &f : kFilters)
      if (filter_row(px, c, f, in, reps, notes)) status = 1;
  } catch (const std::exception &e) {
    status = 1;
    notes.push_back(e.what());
  }
  std::printf(
      "\nNPP: nppiFilterBoxBorder, nppiFilterGaussBorder, nppiFilterLaplaceBorder 8u16s,\n"
      "nppiFilterSobelVertBorder 8u16s (mask size 3 or 5), nppiErode3x3Border/nppiDilate3x3Border (3x3),\n"
      "nppiErodeBorder/nppiDilateBorder with a 5x5 mask of ones (5x5). NPP truncates box and Gauss\n"
      "means, pxl rounds them: a difference of 1 is tolerated there.\n");
  for (const auto &m : notes) std::fprintf(stderr, "note: filters: %s\n", m.c_str());
  return status;
}

// ------------------------------------------------------------------------------------
// Command line, header

std::vector<std::string> split(const std::string &s, char sep) {
  std::vector<std::string> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep))
    if (!item.empty()) v.push_back(item);
  return v;
}

void usage(FILE *f) {
  std::fprintf(
      f,
      "usage: bench_cuda [--device cuda[:N]] [--sizes 2048,8192,16384] [--kernels a,b,..|all]\n"
      "                  [--reps N] [--only table|padding|pipeline|filters|loops|stream|graph] [--no-padding]\n"
      "                  [--no-pipeline] [--no-opencv-filters] [--loop-counts 1,10,100,1000]\n"
      "                  [--loop-profile N] [--loop-profile-until N] [--stream-frames N] [--no-stream]\n"
      "                  [--graph-inputs NAME=FILE,...] [--graph-save DIR] (with --only graph)\n"
      "  sizes: N (NxN) or WxH; kernels:");
  for (const auto &k : kKernels) std::fprintf(f, " %s", k.name);
  std::fprintf(f, "\n");
}

struct Options {
  std::string device = "cuda";
  std::vector<std::pair<int, int>> sizes = {{2048, 2048}, {8192, 8192}, {16384, 16384}};
  std::vector<std::string> kernels;
  int reps = 10;
  bool table = true, padding = true, pipeline = true, filters = true, loops = true, stream = true;
  int stream_frames = 300;
  std::vector<int> loop_counts = {1, 10, 100, 1000};
  int loop_profile = 0;  // --loop-profile N: one profiled run of the fixed loop, n = N (< 0: until, n = -N)
  bool graph = false;    // --only graph
  std::vector<std::string> graph_inputs;  // --graph-inputs NAME=FILE,...
  std::string graph_save;                 // --graph-save DIR
};

// ---- stream: the seed's downscaler on HD frames, host to host ----
//
// examples/downscale.pxl's `downscale` (a tiler: 1920x1080 -> 720x480, per plane of a
// 4:2:0 frame: a 1920x1080 Y plane and two 960x540 chroma planes in, 720x480 and two
// 360x240 out) on F frames (--stream-frames, default 300: the seed's run) that start and
// end in page-locked host memory, end to end: each plane copied to the device, filtered,
// copied back. Rows:
//   transfers       the bare copies of the same bytes (cudaMemcpy2DAsync host->device of
//                   every input plane, device->host of every output plane, frame after
//                   frame on one stream, one synchronisation at the end): the link's time
//   transfers, 2 streams  the uploads on one stream and the downloads on another
//   pxl, in turn    pxl_run per plane: upload, run, download, each waited for
//   pxl, queue N    pxl_queue of depth N (0: the device's choice): N runs in flight on N
//                   streams, so that uploads, kernels and downloads overlap
// Each row the median of --reps runs of the F frames (8 distinct frames used in turn);
// ratio = time / the bare transfers' time. The queue's outputs must equal the in-turn
// run's.
struct StreamFrame {
  pxl_image *in[3] = {nullptr, nullptr, nullptr}, *out[3] = {nullptr, nullptr, nullptr};
};

int run_stream(Pxl &px, int frames, int reps) {
  const int NB = 8, IW[3] = {1920, 960, 960}, IH[3] = {1080, 540, 540};
  pxl_context *ctx = px.ctx();
  pxl_program *prog = px.example("downscale");
  int OW[3], OH[3];
  for (int p = 0; p < 3; p++) OW[p] = (IW[p] + 7) / 8 * 3, OH[p] = (IH[p] + 8) / 9 * 4;
  std::vector<StreamFrame> fr(NB), ref(NB);
  uint64_t seed = 0x2545F4914F6CDD1DULL;
  double in_bytes = 0, out_bytes = 0;
  for (int p = 0; p < 3; p++) in_bytes += (double)IW[p] * IH[p], out_bytes += (double)OW[p] * OH[p];
  for (int b = 0; b < NB; b++)
    for (int p = 0; p < 3; p++) {
      pxl_check(ctx, pxl_image_create_pinned(ctx, IW[p], IH[p], PXL_U8, 1, &fr[b].in[p]), "pinned input");
      pxl_check(ctx, pxl_image_create_pinned(ctx, OW[p], OH[p], PXL_U8, 1, &fr[b].out[p]), "pinned output");
      pxl_check(ctx, pxl_image_create_pinned(ctx, OW[p], OH[p], PXL_U8, 1, &ref[b].out[p]), "pinned output");
      for (int y = 0; y < IH[p]; y++) {
        uint8_t *row = (uint8_t *)pxl_image_data(fr[b].in[p]) + (size_t)y * pxl_image_pitch(fr[b].in[p]);
        for (int x = 0; x < IW[p]; x++) {
          seed ^= seed >> 12, seed ^= seed << 25, seed ^= seed >> 27;
          row[x] = (uint8_t)(seed >> 56);
        }
      }
    }
  // device buffers of the bare copies
  void *dev_in[3], *dev_out[3];
  size_t dpi[3], dpo[3];
  for (int p = 0; p < 3; p++) {
    CUDA_CALL(cudaMallocPitch, &dev_in[p], &dpi[p], (size_t)IW[p], (size_t)IH[p]);
    CUDA_CALL(cudaMallocPitch, &dev_out[p], &dpo[p], (size_t)OW[p], (size_t)OH[p]);
  }
  cudaStream_t s1, s2;
  CUDA_CALL(cudaStreamCreateWithFlags, &s1, cudaStreamNonBlocking);
  CUDA_CALL(cudaStreamCreateWithFlags, &s2, cudaStreamNonBlocking);
  auto transfers = [&](bool two) {
    for (int f = 0; f < frames; f++) {
      StreamFrame &x = fr[f % NB];
      for (int p = 0; p < 3; p++)
        CUDA_CALL(cudaMemcpy2DAsync, dev_in[p], dpi[p], pxl_image_data(x.in[p]), pxl_image_pitch(x.in[p]),
                  (size_t)IW[p], (size_t)IH[p], cudaMemcpyHostToDevice, s1);
      for (int p = 0; p < 3; p++)
        CUDA_CALL(cudaMemcpy2DAsync, pxl_image_data(x.out[p]), pxl_image_pitch(x.out[p]), dev_out[p], dpo[p],
                  (size_t)OW[p], (size_t)OH[p], cudaMemcpyDeviceToHost, two ? s2 : s1);
    }
    CUDA_CALL(cudaStreamSynchronize, s1);
    CUDA_CALL(cudaStreamSynchronize, s2);
  };
  auto bind = [&](pxl_image *in, pxl_image *out) {
    pxl_args *a = pxl_args_new(ctx);
    if (!a) throw Failure("pxl_args_new: out of memory");
    pxl_check(ctx, pxl_args_image(a, "in", in), "pxl_args_image");
    pxl_check(ctx, pxl_args_output(a, out), "pxl_args_output");
    return a;
  };
  auto in_turn = [&](std::vector<StreamFrame> &outs) {
    for (int f = 0; f < frames; f++)
      for (int p = 0; p < 3; p++) {
        pxl_args *a = bind(fr[f % NB].in[p], outs[f % NB].out[p]);
        pxl_run_result *res = nullptr;
        int st = pxl_run(ctx, prog, "downscale", a, &res);
        pxl_args_free(a);
        pxl_result_free(res);
        pxl_check(ctx, st, "pxl_run downscale");
      }
  };
  auto queued = [&](int depth) {
    pxl_queue *q = nullptr;
    pxl_check(ctx, pxl_queue_new(ctx, prog, "downscale", depth, &q), "pxl_queue_new");
    int64_t jobs = (int64_t)frames * 3, pushed = 0, popped = 0;
    int st = PXL_OK;
    while (popped < jobs && !st) {
      if (pushed < jobs && pxl_queue_pending(q) < pxl_queue_depth(q)) {
        StreamFrame &x = fr[(pushed / 3) % NB];
        st = pxl_queue_push(q, bind(x.in[pushed % 3], x.out[pushed % 3]));
        pushed++;
        continue;
      }
      pxl_run_result *res = nullptr;
      st = pxl_queue_pop(q, &res);
      pxl_result_free(res);
      popped++;
    }
    int d = pxl_queue_depth(q);
    pxl_queue_free(q);
    pxl_check(ctx, st, "pxl_queue");
    return d;
  };
  auto timed = [&](const std::function<void()> &run) {
    run();  // warm-up: compiles, allocates, fills the caches
    std::vector<double> ms;
    for (int r = 0; r < reps; r++) {
      auto t0 = std::chrono::steady_clock::now();
      run();
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  };
  std::printf("stream: examples/downscale.pxl downscale, %d frames 1920x1080 4:2:0 -> 720x480 from and to pinned "
              "host memory (%.2f MB in, %.2f MB out a frame)\n", frames, in_bytes / 1e6, out_bytes / 1e6);
  std::printf("%-26s | %10s | %9s | %8s | %8s | %s\n", "run", "ms total", "ms/frame", "fps", "ratio", "check");
  std::printf("%s\n", std::string(84, '-').c_str());
  double t_copy = timed([&]() { transfers(false); });
  double t_copy2 = timed([&]() { transfers(true); });
  double t_turn = timed([&]() { in_turn(ref); });
  auto row = [&](const char *name, double t, const std::string &check) {
    std::printf("%-26s | %10.2f | %9.3f | %8.0f | %8.2f | %s\n", name, t, t / frames, frames / (t / 1e3), t / t_copy,
                check.c_str());
  };
  row("transfers", t_copy, "GB/s " + std::to_string((int)((in_bytes + out_bytes) * frames / (t_copy / 1e3) / 1e9)));
  row("transfers, 2 streams", t_copy2, "");
  row("pxl, in turn", t_turn, "");
  int status = 0;
  for (int depth : {2, 3, 4}) {
    for (auto &x : fr)
      for (int p = 0; p < 3; p++) std::memset(pxl_image_data(x.out[p]), 0, pxl_image_pitch(x.out[p]) * OH[p]);
    int used = 0;
    double t = timed([&]() { used = queued(depth); });
    int diff = 0;
    for (int b = 0; b < NB && b < frames; b++)
      for (int p = 0; p < 3; p++)
        for (int y = 0; y < OH[p]; y++)
          diff += std::memcmp((uint8_t *)pxl_image_data(fr[b].out[p]) + (size_t)y * pxl_image_pitch(fr[b].out[p]),
                              (uint8_t *)pxl_image_data(ref[b].out[p]) + (size_t)y * pxl_image_pitch(ref[b].out[p]),
                              (size_t)OW[p]) != 0;
    if (diff) status = 1;
    std::string name = "pxl, queue " + std::to_string(used);
    row(name.c_str(), t, diff ? "DIFFERS from in turn (" + std::to_string(diff) + " rows)" : "ok (= in turn)");
  }
  std::printf("seed 004 (GTX 480, 300 frames): Gaspard2 2.86 s (105 fps), SaC 3.43 s (87 fps)\n\n");
  for (int p = 0; p < 3; p++) cudaFree(dev_in[p]), cudaFree(dev_out[p]);
  cudaStreamDestroy(s1), cudaStreamDestroy(s2);
  for (auto *v : {&fr, &ref})
    for (auto &x : *v)
      for (int p = 0; p < 3; p++) pxl_image_free(x.in[p]), pxl_image_free(x.out[p]);
  return status;
}

// ---- graph: global operators (examples/graph.pxl) against NPP ----
//
// On each input of --graph-inputs NAME=FILE,... (one-channel u8 images in any format pxl
// reads; bench/graph_gpu.py writes them and adds OpenCV's times on all CPU cores):
//   edt      pxl's edt (the distance of every pixel to the nearest pixel of value 0, f32:
//            its device pass, runtime/cuda/ops.cu) against nppiDistanceTransformPBA_8u32f
//            with the pixels of value 0 as sites; check: the same distances (NPP's float
//            arithmetic may differ in the last bit beyond 2^24 squared: relative 1e-6);
//   label8, label4  pxl's label_binary8 / label_binary4 (the nonzero pixels' components,
//            numbered in raster order) against nppiLabelMarkersUF_8u32u (nppiNormInf /
//            nppiNormL1), which labels every region of equal values, background too, and
//            numbers them its own way; check: the two partition the nonzero pixels alike
//            (a one-to-one map between their labels there). A difference is reported, not
//            failed: NPP 13 splits long components (noise, spirals), where pxl's labels
//            equal OpenCV's (graph_gpu.py checks those).
// Columns: median ms per run of each (device images in and out, as the table), speedup =
// NPP ms / pxl ms (> 1: pxl faster), the check.
int run_graph(Pxl &px, NppStreamContext npp, const std::vector<std::string> &inputs, const std::string &save,
              int reps) {
  pxl_context *ctx = px.ctx();
  // --graph-save DIR: pxl's result of each row as DIR/INPUT-OP.npy (graph_gpu.py checks them)
  auto keep = [&](const DevImage &img, const std::string &file) {
    if (save.empty()) return;
    pxl_image *host = nullptr;
    pxl_check(ctx, pxl_image_to_host(ctx, img.pxl(), &host), "pxl_image_to_host");
    int st = pxl_image_save(ctx, host, (save + "/" + file + ".npy").c_str());
    pxl_image_free(host);
    pxl_check(ctx, st, "pxl_image_save");
  };
  pxl_program *prog = px.example("graph");
  int status = 0;
  std::printf("graph: examples/graph.pxl on the device vs NPP\n");
  std::printf("%-10s | %-11s | %-8s | %9s | %9s | %7s | %s\n", "input", "size", "op", "pxl ms", "NPP ms", "speedup",
              "check");
  std::printf("%s\n", std::string(84, '-').c_str());
  for (const auto &spec : inputs) {
    size_t eq = spec.find('=');
    std::string name = eq == std::string::npos ? spec : spec.substr(0, eq), path = spec.substr(eq + 1);
    pxl_image *host = nullptr;
    try {
      pxl_check(ctx, pxl_image_load(ctx, path.c_str(), &host), path.c_str());
      if (pxl_image_type(host) != PXL_U8 || pxl_image_channels(host) != 1)
        throw Failure(path + ": not a one-channel u8 image");
      int w = pxl_image_width(host), h = pxl_image_height(host);
      DevImage in(ctx, w, h, PXL_U8);
      CUDA_CALL(cudaMemcpy2D, in.ptr<void>(), (size_t)in.step(), pxl_image_data(host), pxl_image_pitch(host),
                (size_t)w, (size_t)h, cudaMemcpyHostToDevice);
      std::string size = std::to_string(w) + "x" + std::to_string(h);
      auto row = [&](const char *op, const Timing &tp, const Timing &tn, const std::string &check) {
        if (!tp.ok || !tn.ok) {
          status = 1;
          std::printf("%-10s | %-11s | %-8s | FAILED: %s\n", name.c_str(), size.c_str(), op,
                      (tp.ok ? tn.error : tp.error).c_str());
          return;
        }
        std::printf("%-10s | %-11s | %-8s | %9.3f | %9.3f | %7.2f | %s\n", name.c_str(), size.c_str(), op, tp.ms,
                    tn.ms, tn.ms / tp.ms, check.c_str());
      };
      // edt
      {
        DevImage po(ctx, w, h, PXL_F32), no(ctx, w, h, PXL_F32);
        PxlRun r(ctx, prog, "edt", Kind::Image);
        r.image("in", in);
        r.output(po);
        size_t bytes = 0;
        NPP_CALL(nppiDistanceTransformPBAGetBufferSize, in.size(), &bytes);
        DevBuf buf(bytes);
        Op npp_run = [&]() {
          NPP_CALL(nppiDistanceTransformPBA_8u32f_C1R_Ctx, in.ptr<Npp8u>(), in.step(), (Npp8u)0, (Npp8u)0, nullptr, 0,
                   nullptr, 0, nullptr, 0, no.ptr<Npp32f>(), no.step(), in.size(), buf.as<Npp8u>(), npp);
        };
        Timing tp = time_op([&]() { r.run(); }, px.sync(), reps), tn = time_op(npp_run, device_sync, reps);
        keep(po, name + "-edt");
        HostImage a = download(po), b = download(no);
        uint64_t n = 0;
        double worst = 0;
        for (size_t i = 0; i < a.px.size(); i += 4) {
          float x, y;
          std::memcpy(&x, &a.px[i], 4), std::memcpy(&y, &b.px[i], 4);
          double rel = x == y ? 0 : std::fabs((double)x - y) / std::max(1.0, (double)std::fabs(y));
          if (rel > 0) n++, worst = std::max(worst, rel);
        }
        bool bad = worst > 1e-6 || (n && !std::isfinite(worst));
        status |= bad;
        row("edt", tp, tn, n ? "DIFF n=" + std::to_string(n) + (bad ? "" : " (relative <= 1e-6: tolerated)") : "ok");
      }
      for (int conn : {8, 4}) {
        DevImage po(ctx, w, h, PXL_U32), no(ctx, w, h, PXL_U32);
        PxlRun r(ctx, prog, conn == 8 ? "label_binary8" : "label_binary4", Kind::Image);
        r.image("in", in);
        r.output(po);
        int bytes = 0;
        NPP_CALL(nppiLabelMarkersUFGetBufferSize_32u_C1R, in.size(), &bytes);
        DevBuf buf((size_t)bytes);
        Op npp_run = [&]() {
          NPP_CALL(nppiLabelMarkersUF_8u32u_C1R_Ctx, in.ptr<Npp8u>(), in.step(), no.ptr<Npp32u>(), no.step(),
                   in.size(), conn == 8 ? nppiNormInf : nppiNormL1, buf.as<Npp8u>(), npp);
        };
        Timing tp = time_op([&]() { r.run(); }, px.sync(), reps), tn = time_op(npp_run, device_sync, reps);
        keep(po, name + "-label" + std::to_string(conn));
        HostImage a = download(po), b = download(no);
        std::vector<uint32_t> p2n;
        std::unordered_map<uint32_t, uint32_t> n2p;
        uint64_t bad = 0, labels = 0;
        for (size_t i = 0; i < a.px.size(); i += 4) {
          uint32_t lp, ln;
          std::memcpy(&lp, &a.px[i], 4), std::memcpy(&ln, &b.px[i], 4);
          if (!lp) continue;
          if (lp >= p2n.size()) p2n.resize(std::max<size_t>(lp + 1, 2 * p2n.size()), UINT32_MAX);
          auto it = n2p.emplace(ln, lp).first;
          if (p2n[lp] == UINT32_MAX) p2n[lp] = ln, labels++;
          bad += p2n[lp] != ln || it->second != lp;
        }
        // not a failure: NPP 13's union-find splits long components (graph_gpu.py holds pxl to
        // OpenCV's labels, which it equals where NPP's differ)
        row(conn == 8 ? "label8" : "label4", tp, tn,
            bad ? "NPP's partition differs (" + std::to_string(bad) + " pixels)"
                : "ok (" + std::to_string(labels) + " components)");
      }
    } catch (const std::exception &e) {
      status = 1;
      std::printf("%-10s | FAILED: %s\n", name.c_str(), e.what());
    }
    pxl_image_free(host);
  }
  std::printf("\n");
  return status;
}

// Parses argv into o; returns -1 to go on, else the exit status.
int parse_args(int argc, char **argv, Options &o) {
  for (const auto &k : kKernels) o.kernels.push_back(k.name);
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_cuda: %s needs a value\n", a.c_str());
        usage(stderr);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--device") {
      o.device = next();
      if (o.device.rfind("cuda", 0) != 0)
        return std::fprintf(stderr, "bench_cuda: --device must be cuda or cuda:N\n"), 2;
    } else if (a == "--sizes") {
      o.sizes.clear();
      for (const auto &s : split(next(), ',')) {
        int w = 0, h = 0;
        if (std::sscanf(s.c_str(), "%dx%d", &w, &h) != 2) h = w = std::atoi(s.c_str());
        if (w < 1 || h < 1 || w > 65535 || h > 65535)
          return std::fprintf(stderr, "bench_cuda: bad size '%s'\n", s.c_str()), 2;
        o.sizes.push_back({w, h});
      }
    } else if (a == "--kernels") {
      std::string v = next();
      if (v == "all") continue;
      o.kernels = split(v, ',');
      for (const auto &k : o.kernels) {
        bool known = false;
        for (const auto &d : kKernels) known |= k == d.name;
        if (!known)
          return std::fprintf(stderr, "bench_cuda: unknown kernel '%s'\n", k.c_str()), usage(stderr), 2;
      }
    } else if (a == "--reps") {
      o.reps = std::atoi(next().c_str());
      if (o.reps < 1) return std::fprintf(stderr, "bench_cuda: bad --reps\n"), 2;
    } else if (a == "--only") {
      std::string v = next();
      o.table = v == "table", o.padding = v == "padding", o.pipeline = v == "pipeline", o.filters = v == "filters";
      o.loops = v == "loops", o.stream = v == "stream", o.graph = v == "graph";
      if (!o.table && !o.padding && !o.pipeline && !o.filters && !o.loops && !o.stream && !o.graph)
        return std::fprintf(stderr, "bench_cuda: bad --only '%s'\n", v.c_str()), 2;
    } else if (a == "--loop-counts") {
      o.loop_counts.clear();
      for (const auto &c : split(next(), ',')) {
        int n = std::atoi(c.c_str());
        if (n < 1) return std::fprintf(stderr, "bench_cuda: bad --loop-counts '%s'\n", c.c_str()), 2;
        o.loop_counts.push_back(n);
      }
    } else if (a == "--loop-profile" || a == "--loop-profile-until") {
      o.loop_profile = std::atoi(next().c_str());
      if (o.loop_profile < 1) return std::fprintf(stderr, "bench_cuda: bad %s\n", a.c_str()), 2;
      if (a == "--loop-profile-until") o.loop_profile = -o.loop_profile;
      o.table = o.padding = o.pipeline = o.filters = o.stream = false, o.loops = true;
    } else if (a == "--stream-frames") {
      o.stream_frames = std::atoi(next().c_str());
      if (o.stream_frames < 1) return std::fprintf(stderr, "bench_cuda: bad --stream-frames\n"), 2;
    } else if (a == "--graph-inputs") {
      o.graph_inputs = split(next(), ',');
    } else if (a == "--graph-save") {
      o.graph_save = next();
    } else if (a == "--no-stream") {
      o.stream = false;
    } else if (a == "--no-padding") {
      o.padding = false;
    } else if (a == "--no-pipeline") {
      o.pipeline = false;
    } else if (a == "--no-opencv-filters") {
      o.filters = false;
    } else if (a == "--padding" || a == "--opencv-filters") {
      // on by default
    } else if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else {
      std::fprintf(stderr, "bench_cuda: unknown option '%s'\n", a.c_str());
      usage(stderr);
      return 2;
    }
  }
  return -1;
}

// "13.0" from CUDA's 13000.
std::string cuda_version_text(int v) {
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

void print_header(Pxl &px, const Options &o) {
  int driver = 0, runtime = 0;
  CUDA_CALL(cudaDriverGetVersion, &driver);
  CUDA_CALL(cudaRuntimeGetVersion, &runtime);
  const NppLibraryVersion *npp = nppGetLibVersion();
  std::printf("device: %s\n", pxl_device_name(px.ctx()));
  std::printf("CUDA driver %s, runtime %s; NPP %d.%d.%d; pxl %s (examples from %s)\n",
              cuda_version_text(driver).c_str(), cuda_version_text(runtime).c_str(), npp->major, npp->minor,
              npp->build, PXL_VERSION_STRING, PXL_EXAMPLES_DIR);
  std::printf(
      "timing: %d warm-up runs, batches of >= %.0f ms (N back-to-back runs + full sync), median of %d\n\n",
      kWarmup, kMinBatchMs, o.reps);
}

}  // namespace

int main(int argc, char **argv) {
  Options o;
  int rc = parse_args(argc, argv, o);
  if (rc >= 0) return rc;

  int status = 0;
  try {
    // pxl and the CUDA runtime share the device's primary context: select the same device.
    int dev = o.device.size() > 5 && o.device[4] == ':' ? std::atoi(o.device.c_str() + 5) : 0;
    CUDA_CALL(cudaSetDevice, dev);
    CUDA_CALL(cudaFree, nullptr);  // creates the runtime's context now, outside any timing
    Pxl px(o.device);
    NppStreamContext npp = npp_stream_context();
    print_header(px, o);
    if (o.table) status |= run_table(px, npp, o.sizes, o.kernels, o.reps);
    if (o.padding) status |= run_padding(px, o.reps);
    if (o.pipeline) status |= run_pipeline(px, o.device, o.sizes, o.reps);
    if (o.filters) status |= run_filters(px, npp, o.reps);
    if (o.loops) status |= run_loops(px, o.sizes, o.loop_counts, o.reps, o.loop_profile);
    if (o.stream) status |= run_stream(px, o.stream_frames, o.reps < 5 ? o.reps : 5);
    if (o.graph) status |= run_graph(px, npp, o.graph_inputs, o.graph_save, o.reps);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "bench_cuda: %s\n", e.what());
    return 1;
  }
  return status;
}
