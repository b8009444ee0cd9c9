#!/usr/bin/env python3
"""graph_gpu.py - the global operators on a GPU against OpenCV on all CPU cores and NPP,
in one run.

Writes the benchmark's inputs (one-channel u8 .npy files), times OpenCV on them with every
core of the machine (cv2.distanceTransform DIST_L2 DIST_MASK_PRECISE: the distance to the
nearest zero pixel; cv2.connectedComponents 8- and 4-connected, CV_32S), then runs
`bench_cuda --only graph` on the same files (pxl's device passes and NPP, each checked
against the other: bench_cuda.cpp, run_graph), checks pxl's results against OpenCV's
(labels identical after numbering OpenCV's in raster order; distances within a relative
1e-6) and prints one table with both ratios.

Inputs, N x N (--size, default 8192):
  sparse  255 everywhere but 1% of the pixels, 0 (random): short distances, one huge component
  noise   0 or 255 with probability 1/2 each: thousands of tiny components
  spiral  a 1-pixel-wide spiral of 255 on 0: one component with the longest path there is

  graph_gpu.py --bench BUILD/bench/bench_cuda [--size 8192] [--reps 10] [--dir DIR]
Needs numpy and cv2 (OpenCV's Python module).
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import cv2
import numpy as np


def spiral(n):
    """Rings 2 pixels apart, each open on its left side where it turns into the next."""
    img = np.zeros((n, n), np.uint8)
    for a in range(0, n, 2):
        b = n - 1 - a
        if a > b:
            break
        img[a, a:b + 1] = 255
        img[a:b + 1, b] = 255
        img[b, a:b + 1] = 255
        if a + 2 <= b:
            img[a + 2:b + 1, a] = 255
            img[a + 2, a:min(a + 3, b + 1)] = 255
    return img


def inputs(n):
    rng = np.random.default_rng(13)
    return {
        "sparse": np.where(rng.random((n, n)) < 0.01, 0, 255).astype(np.uint8),
        "noise": np.where(rng.random((n, n)) < 0.5, 255, 0).astype(np.uint8),
        "spiral": spiral(n),
    }


def raster_order(labels):
    """labels renumbered 1, 2, ... in raster order of each label's first pixel (0 stays 0)."""
    flat = labels.ravel()
    first = np.zeros(int(flat.max()) + 1, np.int64)
    first[flat[::-1]] = np.arange(flat.size - 1, -1, -1)  # the last write of each label wins: its first pixel
    used = np.zeros(first.size, bool)
    used[flat] = True
    used[0] = False
    ids = np.nonzero(used)[0]
    remap = np.zeros(first.size, np.uint32)
    remap[ids[np.argsort(first[ids], kind="stable")]] = np.arange(1, ids.size + 1, dtype=np.uint32)
    return remap[labels]


def check_cv(pxl, ref, op):
    """pxl's result against OpenCV's: labels identical after renumbering OpenCV's in raster
    order; distances within a relative 1e-6 (OpenCV's are computed in float)."""
    if op == "edt":
        rel = np.abs(pxl.astype(np.float64) - ref) / np.maximum(1.0, np.abs(ref))
        worst = float(rel.max())
        return worst <= 1e-6, "max rel %.1e" % worst
    diff = int(np.count_nonzero(pxl != raster_order(ref)))
    return diff == 0, "identical" if diff == 0 else "%d pixels differ" % diff


def timed(fn, reps):
    fn()
    ms = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ms.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ms)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", required=True, help="the bench_cuda executable")
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--dir", help="where the inputs go (default: a temporary directory)")
    a = ap.parse_args()
    threads = os.cpu_count()
    cv2.setNumThreads(threads)
    tmp = None if a.dir else tempfile.TemporaryDirectory()
    d = a.dir or tmp.name
    os.makedirs(d, exist_ok=True)
    imgs = inputs(a.size)
    cv_ms, cv_out = {}, {}
    for name, img in imgs.items():
        np.save(os.path.join(d, name + ".npy"), img)
        edt = lambda: cv2.distanceTransform(img, cv2.DIST_L2, cv2.DIST_MASK_PRECISE)
        cv_ms[(name, "edt")], cv_out[(name, "edt")] = timed(edt, a.reps), edt()
        for conn in (8, 4):
            cc = lambda: cv2.connectedComponents(img, connectivity=conn, ltype=cv2.CV_32S)[1]
            cv_ms[(name, "label%d" % conn)], cv_out[(name, "label%d" % conn)] = timed(cc, a.reps), cc()
    spec = ",".join("%s=%s" % (k, os.path.join(d, k + ".npy")) for k in imgs)
    run = subprocess.run([a.bench, "--only", "graph", "--graph-inputs", spec, "--graph-save", d, "--reps",
                          str(a.reps)], capture_output=True, text=True)
    sys.stdout.write(run.stdout.split("graph:")[0])  # bench_cuda's header: device, versions, timing
    print("OpenCV %s on %d threads (cv2.setNumThreads), pxl on the device (runtime/cuda/ops.cu), NPP; "
          "median ms; ratios > 1: pxl faster" % (cv2.__version__, threads))
    print("%-8s | %-11s | %-6s | %10s | %9s | %9s | %10s | %9s | %-22s | %s" %
          ("input", "size", "op", "OpenCV ms", "pxl ms", "NPP ms", "OpenCV/pxl", "NPP/pxl", "pxl vs OpenCV",
           "pxl vs NPP"))
    print("-" * 140)
    rows, bad = 0, 0
    for line in run.stdout.splitlines():
        f = [x.strip() for x in line.split("|")]
        if len(f) != 7 or (f[0], f[2]) not in cv_ms:
            continue
        pxl_ms, npp_ms = float(f[3]), float(f[4])
        c = cv_ms[(f[0], f[2])]
        ok, text = check_cv(np.load(os.path.join(d, "%s-%s.npy" % (f[0], f[2]))), cv_out[(f[0], f[2])], f[2])
        bad += not ok
        print("%-8s | %-11s | %-6s | %10.3f | %9.3f | %9.3f | %10.1f | %9.2f | %-22s | %s" %
              (f[0], f[1], f[2], c, pxl_ms, npp_ms, c / pxl_ms, npp_ms / pxl_ms, text, f[6]))
        rows += 1
    if bad:
        print("graph_gpu: %d results differ from OpenCV's" % bad)
        return 1
    if run.returncode or rows != 3 * len(imgs):
        sys.stdout.write(run.stdout + run.stderr)
        print("graph_gpu: bench_cuda failed (rc=%d, %d rows)" % (run.returncode, rows))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
