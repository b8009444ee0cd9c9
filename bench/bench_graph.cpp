// bench_graph - the global operators of examples/graph.pxl (distance transforms, connected
// components) on pxl's CPU backend against OpenCV on the same threads, same images, same
// run. Each row: the best of --reps timed runs of each (after one untimed run that also
// compiles pxl's map), the ratio OpenCV / pxl (above 1: pxl is faster), and a check that
// the two agree (distances: largest difference - within 1.5 for L2, whose OpenCV 4.6
// envelope is computed in float, and exact for L1 and C where OpenCV is below 8192, where its
// 3x3-mask transforms saturate; labels: the number of components and the same partition
// after numbering both in raster order).
//
//   bench_graph [--sizes 4096,8192] [--threads N] [--reps R]
//               [--images sparse,single,noise,spiral,blobs,relief] [--no-python] [--table54 PHOTO]
//
// --table54 PHOTO: seed 003's Table 5.4 at 1600x1200 (PHOTO, a grey image file, resized to
// that size): pxl's bwdist (of PHOTO > 128), regional_minima, fill_holes and
// watershed_minima (of PHOTO blurred) beside the seed's MATLAB (Core i7) and GTX 280 times
// and ratios, with OpenCV's distanceTransform and watershed where they exist.
//
// Images (W x H, deterministic):
//   sparse  u8 noise with ~1% zero pixels: distances of a few pixels
//   single  one zero pixel in a corner: the longest distances the image has
//   noise   0/255 noise, half set: ~W*H/13 small components (8-connected)
//   spiral  a one-pixel-wide square spiral of 255 on 0: one component whose path visits
//           half the image (the worst case of an iterated fixed point, seed 003)
//   blobs   2000 filled discs of 255 on 0 (radius 2..20 pixels at 4096^2, scaled with the
//           size), overlapping: about 1500 components, for labels and for
//           cv::connectedComponentsWithStats against pxl's label_binary8 then the two
//           histograms of examples/components.pxl (`sums`: areas and sums of x and y;
//           `bounds`: the bounding boxes), the centroids divided on the host; checked
//           equal (areas, boxes; centroids within 1e-9)
//   relief  the noise blurred (sigma 4): a smooth relief with many basins, for pxl's
//           reconstruct (seed: the relief less 30), fill_holes (of the noise),
//           regional_minima and watershed_minima against skimage's reconstruction,
//           SciPy's binary_fill_holes, skimage's local_minima and watershed from the labelled
//           minima, and cv::watershed (another definition: 4-connected, with ridge lines)
//           from the same minima as markers
// Distances are to the nearest zero pixel: pxl's `edt`, `taxicab`, `chessboard` (SciPy's
// conventions) against cv::distanceTransform with DIST_L2 + DIST_MASK_PRECISE, DIST_L1 and
// DIST_C (both exact with a 3x3 mask); labels: pxl's label_binary4/8 against
// cv::connectedComponents(4 or 8, CV_32S). SciPy and scikit-image (single-threaded) are timed
// in the same run on the same image (written to a .npy file and timed by python3 in a
// child process, best of --reps, the array already loaded): scipy.ndimage's
// distance_transform_edt and distance_transform_cdt, skimage.measure.label; --no-python
// leaves them out.
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

extern "C" {
#include "pxl/pxl.h"
}

namespace {

cv::Mat make_image(const std::string &kind, int w, int h) {
  cv::Mat m(h, w, CV_8U, cv::Scalar(0));
  uint64_t s = 0x9E3779B97F4A7C15ULL;
  auto next = [&] {
    s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
    return s * 0x2545F4914F6CDD1DULL;
  };
  if (kind == "sparse") {
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) m.at<uint8_t>(y, x) = next() % 100 == 0 ? 0 : 1 + next() % 255;
  } else if (kind == "single") {
    m.setTo(255);
    m.at<uint8_t>(0, 0) = 0;
  } else if (kind == "noise") {
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) m.at<uint8_t>(y, x) = next() & 1 ? 255 : 0;
  } else if (kind == "blobs") {
    int rmax = std::max(2, 20 * std::max(w, h) / 4096);
    for (int k = 0; k < 2000; k++) {
      int cx = (int)(next() % (uint64_t)w), cy = (int)(next() % (uint64_t)h), r = 2 + (int)(next() % (uint64_t)(rmax - 1));
      cv::circle(m, cv::Point(cx, cy), r, cv::Scalar(255), cv::FILLED);
    }
  } else {  // spiral: arms two pixels apart
    int x0 = 0, y0 = 0, x1 = w - 1, y1 = h - 1;
    while (x0 <= x1 && y0 <= y1) {
      for (int x = x0; x <= x1; x++) m.at<uint8_t>(y0, x) = 255;
      for (int y = y0; y <= y1; y++) m.at<uint8_t>(y, x1) = 255;
      if (y1 > y0)
        for (int x = x0; x <= x1; x++) m.at<uint8_t>(y1, x) = 255;
      if (x1 - 2 >= x0)
        for (int y = y0 + 2; y <= y1; y++) m.at<uint8_t>(y, x0) = 255;
      if (x0 + 2 <= x1 && y0 + 2 <= y1) m.at<uint8_t>(y0 + 2, x0 + 1) = 255;
      x0 += 2, y0 += 2, x1 -= 2, y1 -= 2;
    }
  }
  return m;
}

template <class F> double best_ms(int reps, F &&f) {
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  return best;
}

// The "SciPy/skimage" and "it/pxl" columns: its time and ratio, or dashes when it did not run.
std::string peer_columns(double ts, double tp) {
  char b[64];
  if (ts < 0) std::snprintf(b, sizeof b, "%10s %8s", "-", "-");
  else std::snprintf(b, sizeof b, "%10.1f %7.1fx", ts, ts / tp);
  return b;
}

// The raster-order number of each label of lab (0 stays 0): table[v], 1, 2, ... in order of
// each label's first pixel.
std::vector<uint32_t> raster_table(const cv::Mat &lab) {
  std::vector<uint32_t> table;
  uint32_t next = 0;
  for (int y = 0; y < lab.rows; y++)
    for (int x = 0; x < lab.cols; x++) {
      uint32_t v = lab.at<uint32_t>(y, x);
      if (v >= table.size()) table.resize((size_t)v + 1, UINT32_MAX);
      if (v && table[v] == UINT32_MAX) table[v] = ++next;
    }
  if (!table.empty()) table[0] = 0;
  return table;
}

// labels renumbered in raster order of first pixel (0 stays 0)
std::vector<uint32_t> raster(const cv::Mat &lab) {
  std::vector<uint32_t> table = raster_table(lab), out((size_t)lab.rows * lab.cols);
  for (int y = 0; y < lab.rows; y++)
    for (int x = 0; x < lab.cols; x++) out[(size_t)y * lab.cols + x] = table[lab.at<uint32_t>(y, x)];
  return out;
}

// in as a .npy file (u8, 2-D, C order)
bool write_npy(const cv::Mat &in, const std::string &path) {
  std::FILE *f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  char dict[128];
  int n = std::snprintf(dict, sizeof dict, "{'descr': '|u1', 'fortran_order': False, 'shape': (%d, %d), }", in.rows,
                        in.cols);
  int pad = 64 - (10 + n + 1) % 64;
  std::string header = std::string(dict) + std::string(pad % 64, ' ') + "\n";
  uint16_t hl = (uint16_t)header.size();
  bool ok = std::fwrite("\x93NUMPY\x01\x00", 1, 8, f) == 8 && std::fwrite(&hl, 2, 1, f) == 1 &&
            std::fwrite(header.data(), 1, header.size(), f) == header.size();
  for (int y = 0; ok && y < in.rows; y++) ok = std::fwrite(in.ptr(y), 1, (size_t)in.cols, f) == (size_t)in.cols;
  return std::fclose(f) == 0 && ok;
}

// The best time (ms) of `reps` runs of python statement `stmt` on array `a` loaded from path,
// or -1 when python3, SciPy or scikit-image cannot run it.
double python_ms(const std::string &path, const char *stmt, int reps) {
  std::string cmd = "/usr/bin/python3 -c \"import sys, time, numpy as np; from scipy import ndimage; "
                    "from skimage.measure import label; from skimage.morphology import reconstruction, local_minima; "
                    "from skimage.segmentation import watershed; a = np.load(sys.argv[1]); best = 1e30\n"
                    "for _ in range(int(sys.argv[2])):\n t = time.perf_counter(); " +
                    std::string(stmt) +
                    "; best = min(best, time.perf_counter() - t)\nprint(best * 1e3)\" " + path + " " +
                    std::to_string(reps) + " 2>/dev/null";
  std::FILE *p = popen(cmd.c_str(), "r");
  if (!p) return -1;
  double ms = -1;
  if (std::fscanf(p, "%lf", &ms) != 1) ms = -1;
  return pclose(p) == 0 ? ms : -1;
}

struct Pxl {
  pxl_context *ctx = nullptr;
  pxl_program *prog = nullptr, *components = nullptr; // examples/graph.pxl, components.pxl
  // entry on u8 image `in` (parameter "in", or "seed" and "mask" with `mask`) into out
  bool run(const char *entry, const cv::Mat &in, cv::Mat &out, int out_type, const cv::Mat *mask = nullptr) {
    pxl_image *i = nullptr, *m = nullptr, *o = nullptr;
    out.create(in.rows, in.cols, out_type);
    pxl_type t = out_type == CV_32F ? PXL_F32 : out_type == CV_8U ? PXL_U8 : PXL_U32;
    bool ok = pxl_image_wrap(ctx, (void *)in.data, in.cols, in.rows, PXL_U8, 1, in.step, &i) == PXL_OK &&
              pxl_image_wrap(ctx, out.data, out.cols, out.rows, t, 1, out.step, &o) == PXL_OK &&
              (!mask || pxl_image_wrap(ctx, (void *)mask->data, mask->cols, mask->rows, PXL_U8, 1, mask->step, &m) ==
                            PXL_OK);
    pxl_args *a = ok ? pxl_args_new(ctx) : nullptr;
    pxl_run_result *res = nullptr;
    ok = ok && a && pxl_args_image(a, mask ? "seed" : "in", i) == PXL_OK &&
         (!mask || pxl_args_image(a, "mask", m) == PXL_OK) && pxl_args_output(a, o) == PXL_OK &&
         pxl_run(ctx, prog, entry, a, &res) == PXL_OK;
    if (!ok) std::fprintf(stderr, "bench_graph: pxl %s: %s\n", entry, pxl_errmsg(ctx));
    pxl_result_free(res);
    pxl_args_free(a);
    pxl_image_free(i);
    pxl_image_free(m);
    pxl_image_free(o);
    return ok;
  }
  // histogram `entry` of components.pxl over the label image lab (u32): its bins into out
  bool bins(const char *entry, const cv::Mat &lab, std::vector<int64_t> &out) {
    pxl_image *l = nullptr;
    pxl_args *a = nullptr;
    pxl_run_result *res = nullptr;
    int n = 0;
    const int64_t *b = nullptr;
    bool ok = pxl_image_wrap(ctx, (void *)lab.data, lab.cols, lab.rows, PXL_U32, 1, lab.step, &l) == PXL_OK &&
              (a = pxl_args_new(ctx)) && pxl_args_image(a, "lab", l) == PXL_OK &&
              pxl_run(ctx, components, entry, a, &res) == PXL_OK && (b = pxl_result_bins_i64(res, &n));
    if (ok) out.assign(b, b + n);
    else std::fprintf(stderr, "bench_graph: pxl %s: %s\n", entry, pxl_errmsg(ctx));
    pxl_result_free(res);
    pxl_args_free(a);
    pxl_image_free(l);
    return ok;
  }
};

// cv::connectedComponentsWithStats (8-connected) against pxl's label_binary8 and the two
// histograms of components.pxl (up to 4095 labels), the centroids sum / area on the host.
// Prints the row; false when the statistics differ.
bool stats_row(Pxl &p, const cv::Mat &in, int n, int reps) {
  const int L = 4096;  // components.pxl's LABELS
  cv::Mat mine, theirs, stats, cents;
  std::vector<int64_t> sums, box;
  std::vector<double> cx, cy;
  auto pxl_stats = [&] {
    bool ok = p.run("label_binary8", in, mine, CV_32S) && p.bins("sums", mine, sums) && p.bins("bounds", mine, box);
    cx.resize(L), cy.resize(L);
    for (int k = 0; ok && k < L; k++) {
      double area = (double)sums[k];
      cx[k] = area ? (double)sums[L + k] / area : NAN, cy[k] = area ? (double)sums[2 * L + k] / area : NAN;
    }
    return ok;
  };
  if (!pxl_stats()) return false;
  int count = 0;
  double tp = best_ms(reps, pxl_stats);
  double to = best_ms(reps, [&] { count = cv::connectedComponentsWithStats(in, theirs, stats, cents, 8, CV_32S); });
  std::vector<uint32_t> to_mine = raster_table(theirs);
  bool ok = count <= L && (int)to_mine.size() == count;
  double cerr = 0;
  for (int k = 1; ok && k < count; k++) {
    int m = (int)to_mine[k];
    ok = sums[m] == stats.at<int>(k, cv::CC_STAT_AREA) && -box[m] == stats.at<int>(k, cv::CC_STAT_LEFT) &&
         -box[L + m] == stats.at<int>(k, cv::CC_STAT_TOP) &&
         box[2 * L + m] + box[m] + 1 == stats.at<int>(k, cv::CC_STAT_WIDTH) &&
         box[3 * L + m] + box[L + m] + 1 == stats.at<int>(k, cv::CC_STAT_HEIGHT);
    cerr = std::max({cerr, std::fabs(cx[m] - cents.at<double>(k, 0)), std::fabs(cy[m] - cents.at<double>(k, 1))});
  }
  ok = ok && cerr < 1e-9;
  std::printf("%-6d %-8s %-14s %10.2f %10.2f %8.2fx %s  %s (%d components; pxl: labels, then 2 histograms)\n", n,
              "blobs", "stats 8-conn", tp, to, to / tp, peer_columns(-1, tp).c_str(), ok ? "ok" : "MISMATCH",
              count - 1);
  return ok;
}

}  // namespace

int main(int argc, char **argv) {
  std::vector<int> sizes = {4096};
  int threads = 0, reps = 5;
  bool python = true;
  std::string photo;
  std::string only = "sparse,single,noise,spiral,blobs,relief";
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--sizes" && i + 1 < argc) {
      sizes.clear();
      for (const char *p = argv[++i]; *p;) {
        sizes.push_back(std::atoi(p));
        while (*p && *p != ',') p++;
        if (*p) p++;
      }
    } else if (a == "--threads" && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else if (a == "--table54" && i + 1 < argc) {
      photo = argv[++i];
    } else if (a == "--no-python") {
      python = false;
    } else if (a == "--images" && i + 1 < argc) {
      only = argv[++i];
    } else if (a == "--reps" && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: bench_graph [--sizes 4096,8192] [--threads N] [--reps R] [--images LIST] [--no-python] [--table54 PHOTO]\n");
      return 2;
    }
  }
  if (threads <= 0) threads = cv::getNumberOfCPUs();
  cv::setNumThreads(threads);
  Pxl p;
  p.ctx = pxl_context_new();
  if (!p.ctx || pxl_set_device(p.ctx, "cpu") != PXL_OK || pxl_set_threads(p.ctx, threads) != PXL_OK ||
      pxl_program_from_file(p.ctx, PXL_EXAMPLES_DIR "/graph.pxl", &p.prog) != PXL_OK ||
      pxl_program_from_file(p.ctx, PXL_EXAMPLES_DIR "/components.pxl", &p.components) != PXL_OK) {
    std::fprintf(stderr, "bench_graph: %s\n", p.ctx ? pxl_errmsg(p.ctx) : "out of memory");
    return 1;
  }
  std::printf("OpenCV %s and pxl's CPU backend, %d threads each; best of %d runs (ms)\n", CV_VERSION, threads, reps);
  std::printf("%-6s %-8s %-14s %10s %10s %8s %10s %8s  %s\n", "size", "image", "operator", "pxl", "OpenCV", "OpenCV/pxl",
              "SciPy/skimage", "it/pxl", "check");
  char npy[64];
  std::snprintf(npy, sizeof npy, "/tmp/bench_graph_%d.npy", (int)getpid());
  int bad = 0;
  struct Dist {
    const char *entry, *name;
    int type, mask;
    const char *py;
  } dists[] = {{"edt", "edt (L2)", cv::DIST_L2, cv::DIST_MASK_PRECISE, "ndimage.distance_transform_edt(a)"},
               {"taxicab", "taxicab (L1)", cv::DIST_L1, 3, "ndimage.distance_transform_cdt(a, metric='taxicab')"},
               {"chessboard", "chessboard", cv::DIST_C, 3, "ndimage.distance_transform_cdt(a, metric='chessboard')"}};
  for (int n : sizes) {
    auto wanted = [&](const char *kind) { return ("," + only + ",").find("," + std::string(kind) + ",") != std::string::npos; };
    for (const char *kind : {"sparse", "single"}) {
      if (!wanted(kind)) continue;
      cv::Mat in = make_image(kind, n, n);
      bool have_npy = python && write_npy(in, npy);
      for (const Dist &d : dists) {
        bool l2 = d.type == cv::DIST_L2;
        cv::Mat mine, theirs, mine_f;
        if (!p.run(d.entry, in, mine, l2 ? CV_32F : CV_32S)) return 1;
        double tp = best_ms(reps, [&] { p.run(d.entry, in, mine, l2 ? CV_32F : CV_32S); });
        double to = best_ms(reps, [&] { cv::distanceTransform(in, theirs, d.type, d.mask, CV_32F); });
        if (l2) mine_f = mine;
        else mine.convertTo(mine_f, CV_32F);
        // OpenCV 4.6's L1 and C transforms saturate at 8192 (its 3x3 masks' integer
        // distances): compared below that only. Its precise L2 envelope is computed in
        // float: off by up to sqrt(2) on 8192^2 images, where pxl equals SciPy exactly
        // (docs/PERFORMANCE.md), hence the tolerance.
        cv::Mat below = l2 ? cv::Mat() : theirs < 8191.5f;
        int capped = l2 ? 0 : (int)(theirs.total() - (size_t)cv::countNonZero(below));
        double diff = cv::norm(mine_f, theirs, cv::NORM_INF, below);
        bool ok = diff <= (l2 ? 1.5 : 0);
        bad += !ok;
        double ts = have_npy ? python_ms(npy, d.py, std::min(reps, 3)) : -1;
        std::printf("%-6d %-8s %-14s %10.2f %10.2f %8.2fx %s  %s (largest difference %.3g%s)\n", n, kind, d.name, tp,
                    to, to / tp, peer_columns(ts, tp).c_str(), ok ? "ok" : "MISMATCH", diff,
                    capped ? ", where OpenCV is below its cap of 8192" : "");
      }
    }
    for (const char *kind : {"noise", "spiral", "blobs"}) {
      if (!wanted(kind)) continue;
      cv::Mat in = make_image(kind, n, n);
      bool have_npy = python && write_npy(in, npy);
      for (int conn : {4, 8}) {
        const char *entry = conn == 4 ? "label_binary4" : "label_binary8";
        cv::Mat mine, theirs;
        if (!p.run(entry, in, mine, CV_32S)) return 1;
        int count = 0;
        double tp = best_ms(reps, [&] { p.run(entry, in, mine, CV_32S); });
        double to = best_ms(reps, [&] { count = cv::connectedComponents(in, theirs, conn, CV_32S); });
        double mx;
        cv::minMaxLoc(mine, nullptr, &mx);
        bool ok = (int)mx == count - 1 && raster(mine) == raster(theirs);
        bad += !ok;
        double ts = have_npy ? python_ms(npy, conn == 4 ? "label(a, connectivity=1)" : "label(a, connectivity=2)",
                                         std::min(reps, 3))
                             : -1;
        std::printf("%-6d %-8s %-14s %10.2f %10.2f %8.2fx %s  %s (%d components)\n", n, kind,
                    conn == 4 ? "label 4-conn" : "label 8-conn", tp, to, to / tp, peer_columns(ts, tp).c_str(),
                    ok ? "ok" : "MISMATCH", count - 1);
      }
      if (std::string(kind) == "blobs" && !stats_row(p, in, n, reps)) bad++;
    }
    if (wanted("relief")) {  // morphology and watersheds: a smooth relief with many basins
      cv::Mat noise = make_image("noise", n, n), relief, seed, bin = make_image("noise", n, n);
      cv::GaussianBlur(noise, relief, cv::Size(0, 0), 4);
      cv::subtract(relief, cv::Scalar(30), seed);
      bool have_npy = python && write_npy(relief, npy);
      std::string seed_npy = std::string(npy) + ".seed.npy", bin_npy = std::string(npy) + ".bin.npy";
      have_npy = have_npy && write_npy(seed, seed_npy) && write_npy(bin, bin_npy);
      struct Morph {
        const char *entry, *name;
        const cv::Mat *in, *mask;
        int type;
        std::string py;
      } morphs[] = {
          {"reconstruct", "reconstruct", &seed, &relief, CV_8U,
           "reconstruction(np.load('" + seed_npy + "'), a, 'dilation')"},
          {"fill_holes", "fill holes", &bin, nullptr, CV_8U, "ndimage.binary_fill_holes(np.load('" + bin_npy + "'))"},
          {"regional_minima", "regional min", &relief, nullptr, CV_8U, "local_minima(a, connectivity=2)"},
          {"watershed_minima", "watershed", &relief, nullptr, CV_32S,
           "watershed(a, label(local_minima(a, connectivity=2)), connectivity=2)"},
      };
      for (const Morph &m : morphs) {
        cv::Mat mine;
        if (!p.run(m.entry, *m.in, mine, m.type, m.mask)) return 1;
        double tp = best_ms(reps, [&] { p.run(m.entry, *m.in, mine, m.type, m.mask); });
        double to = -1;
        if (std::string(m.entry) == "watershed_minima") {  // OpenCV's: 4-connected, ridge lines
          cv::Mat colour, minima, seeds, markers;
          cv::cvtColor(relief, colour, cv::COLOR_GRAY2BGR);
          if (!p.run("regional_minima", relief, minima, CV_8U)) return 1;
          cv::connectedComponents(minima, seeds, 8, CV_32S);  // the same minima as markers
          to = best_ms(reps, [&] {
            seeds.copyTo(markers);
            cv::watershed(colour, markers);
          });
        }
        double ts = have_npy ? python_ms(npy, m.py.c_str(), std::min(reps, 3)) : -1;
        char theirs[64] = "         -         -";  // no OpenCV function
        if (to > 0) std::snprintf(theirs, sizeof theirs, "%10.2f %8.2fx", to, to / tp);
        std::printf("%-6d %-8s %-14s %10.2f %s %s  %s\n", n, "relief", m.name, tp, theirs, peer_columns(ts, tp).c_str(),
                    to > 0 ? "OpenCV: cv::watershed (4-connected, ridge lines) from the same minima" : "");
      }
      std::remove(seed_npy.c_str());
      std::remove(bin_npy.c_str());
    }
  }
  std::remove(npy);
  if (!photo.empty()) {  // seed 003, Table 5.4: MATLAB on a Core i7 and the seed's GTX 280 code (ms)
    pxl_image *loaded = nullptr;  // read with pxl's loader (OpenCV's imgcodecs is not needed)
    if (pxl_image_load(p.ctx, photo.c_str(), &loaded) != PXL_OK || pxl_image_type(loaded) != PXL_U8 ||
        pxl_image_channels(loaded) == 4)
      return std::fprintf(stderr, "bench_graph: %s: not a grey or RGB u8 image (%s)\n", photo.c_str(),
                          pxl_errmsg(p.ctx)), 1;
    int ch = pxl_image_channels(loaded);
    cv::Mat file(pxl_image_height(loaded), pxl_image_width(loaded), CV_8UC(ch)), grey;
    for (int y = 0; y < file.rows; y++)
      std::memcpy(file.ptr(y), (const uint8_t *)pxl_image_data(loaded) + (size_t)y * pxl_image_pitch(loaded),
                  (size_t)file.cols * ch);
    pxl_image_free(loaded);
    if (ch == 3) cv::cvtColor(file, grey, cv::COLOR_RGB2GRAY);
    else grey = file;
    cv::Mat img, bin, blurred;
    cv::resize(grey, img, cv::Size(1600, 1200), 0, 0, cv::INTER_AREA);
    cv::threshold(img, bin, 128, 255, cv::THRESH_BINARY);
    cv::GaussianBlur(img, blurred, cv::Size(0, 0), 2);
    struct Row {
      const char *entry, *matlab;
      const cv::Mat *in;
      int type;
      double i7, gtx;
    } rows[] = {{"bwdist", "bwdist", &bin, CV_32F, 532.8, 252.2},
                {"regional_minima", "imregionalmin", &blurred, CV_8U, 452.4, 79.3},
                {"fill_holes", "imfill holes", &bin, CV_8U, 415.7, 81.2},
                {"watershed_minima", "watershed", &blurred, CV_32S, 2013, 799.3}};
    std::printf("\nseed 003, Table 5.4 at 1600x1200 (%s): pxl's CPU backend, %d threads, best of %d (ms)\n",
                photo.c_str(), threads, reps);
    std::printf("%-16s %-14s %9s %12s %10s %10s %10s\n", "pxl entry", "MATLAB", "pxl", "Core i7 (seed)",
                "i7/pxl", "GTX 280", "280/pxl");
    for (const Row &r : rows) {
      cv::Mat out;
      if (pxl_program_entry_find(p.prog, r.entry) < 0) continue;
      if (!p.run(r.entry, *r.in, out, r.type)) return 1;
      double tp = best_ms(reps, [&] { p.run(r.entry, *r.in, out, r.type); });
      std::printf("%-16s %-14s %9.2f %12.1f %9.0fx %10.1f %9.0fx\n", r.entry, r.matlab, tp, r.i7, r.i7 / tp, r.gtx,
                  r.gtx / tp);
    }
  }
  pxl_program_free(p.prog);
  pxl_program_free(p.components);
  pxl_context_free(p.ctx);
  return bad ? 1 : 0;
}
