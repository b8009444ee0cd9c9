#!/usr/bin/env python3
"""bench_kmeans - k-means of examples/kmeans.pxl on a pxl device against OpenCV and SciPy.

Usage: bench_kmeans.py PXL [--device cpu] [--threads N] [--reps R] [--quick]

Two jobs, each run R + 1 times in one `PXL run --time --repeat R+1` (the runs alone: not
loading, compiling or saving; the first run, which loads the kernels, not counted), the
peers R times in this process on the same data; best of R, ms; 'peer/pxl' above 1: pxl
is faster.
  lloyd     n random clustered f32 vectors of k elements, K = 16 initial centroids (rows of
            X), 20 iterations: pxl's `lloyd` against scipy.cluster.vq.kmeans2(X, C,
            iter=20, minit='matrix') (one thread), whose centroids must be pxl's bit for bit
            where k < 5 (else within 1e-4)
  quantize  samples/scene.jpg, and the same scaled to 2048 x 1536, in K colours with
            k-means++ seeding and at most 10 iterations: pxl's `quantize` against
            cv2.kmeans(pixels as f32, K, criteria MAX_ITER 10, attempts 1,
            KMEANS_PP_CENTERS) on OpenCV's threads and scipy's kmeans2(pixels, K, iter=10,
            minit='++'); each clusters from its own seeds, so their results are not compared
            (tests/oracle/kmeans_oracle.py checks pxl's), only the mean squared error of
            each painted image is printed
"""
import argparse
import os
import sys
import tempfile

import cv2
import numpy as np
from scipy.cluster.vq import kmeans2

from bench_common import best_ms, pxl_time_ms

HERE = os.path.dirname(os.path.abspath(__file__))
KMEANS = os.path.join(HERE, "..", "examples", "kmeans.pxl")
SCENE = os.path.join(HERE, "..", "samples", "scene.jpg")


def pxl_ms(a, args, outs):
    """The best of R runs of `pxl run kmeans.pxl ARGS` after the first (one process)."""
    for o in outs:
        if os.path.exists(o):
            os.remove(o)
    cmd = [a.pxl, "run", KMEANS] + args + ["--device", a.device]
    if a.threads:
        cmd += ["--threads", str(a.threads)]
    return pxl_time_ms(cmd, a.reps, "bench_kmeans: " + args[0])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("pxl")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=0, help="pxl's CPU threads (default: all)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="small sizes (the test suite's smoke run)")
    a = ap.parse_args()
    rng = np.random.default_rng(1)
    bad = 0
    print("pxl on %s (examples/kmeans.pxl) against SciPy %s kmeans2 (1 thread) and OpenCV %s cv2.kmeans (%d threads); "
          "best of %d, ms" % (a.device, __import__("scipy").__version__, cv2.__version__, cv2.getNumThreads(), a.reps))
    print("%-24s %10s %10s %9s %10s %9s  %s" % ("job", "pxl", "SciPy", "SciPy/pxl", "OpenCV", "OpenCV/pxl", "check"))
    with tempfile.TemporaryDirectory() as tmp:
        xpath, cpath = os.path.join(tmp, "x.npy"), os.path.join(tmp, "c.npy")
        cout, lout = os.path.join(tmp, "co.npy"), os.path.join(tmp, "lo.npy")
        K = 16
        for n, k in ([(2000, 3), (2000, 8)] if a.quick else [(60000, 3), (60000, 16)]):
            centres = rng.normal(0, 6, (K, k))
            X = (centres[rng.integers(0, K, n)] + rng.normal(0, 1, (n, k))).astype(np.float32)
            C0 = X[rng.choice(n, K, replace=False)].copy()
            np.save(xpath, X)
            np.save(cpath, C0)
            tp = pxl_ms(a, ["lloyd", "--in", "X=" + xpath, "--in", "C=" + cpath, "--param", "iters=20",
                            "--out", cout, "--out", lout], [cout, lout])
            ts, (sc, _) = best_ms(lambda: kmeans2(X, C0.copy(), iter=20, minit="matrix", missing="warn"), a.reps)
            got = np.load(cout)
            ok = np.array_equal(got, sc) if k < 5 else np.allclose(got, sc, rtol=1e-4, atol=1e-4)
            bad += not ok
            print("%-24s %10.1f %10.1f %8.2fx %10s %9s  %s" % ("lloyd %dx%d K=%d" % (n, k, K), tp, ts, ts / tp, "-",
                                                                "-", "ok" if ok else "MISMATCH"))
        scene = cv2.imread(SCENE, cv2.IMREAD_COLOR)
        if scene is None:
            sys.exit("bench_kmeans: cannot read %s" % SCENE)
        images = [("scene crop 160x120", scene[:120, :160])] if a.quick else [("scene 640x480", scene)]
        if not a.quick:
            images.append(("scene 2048x1536", cv2.resize(scene, (2048, 1536), interpolation=cv2.INTER_LINEAR)))
        qin, qout = os.path.join(tmp, "in.png"), os.path.join(tmp, "out.png")
        for name, img in images:
            cv2.imwrite(qin, img)
            px = img.reshape(-1, 3).astype(np.float32)
            for K in (8, 16):
                tp = pxl_ms(a, ["quantize", "--in", qin, "--param", "K=%d" % K, "--param", "iters=10", "--param",
                                "seed=1", "--out", qout], [qout])
                got = cv2.imread(qout, cv2.IMREAD_COLOR).astype(np.float64)
                crit = (cv2.TERM_CRITERIA_MAX_ITER, 10, 0)
                cv2.setRNGSeed(1)
                to, (_, ol, oc) = best_ms(lambda: cv2.kmeans(px, K, None, crit, 1, cv2.KMEANS_PP_CENTERS), a.reps)
                ts, (scc, sl) = best_ms(lambda: kmeans2(px, K, iter=10, minit="++", seed=1), a.reps)
                mse = [np.mean((got - img) ** 2), np.mean((scc[sl] - px) ** 2), np.mean((oc[ol.ravel()] - px) ** 2)]
                print("%-24s %10.1f %10.1f %8.2fx %10.1f %8.2fx  squared error pxl %.1f, SciPy %.1f, OpenCV %.1f" %
                      ("quantize %s K=%d" % (name, K), tp, ts, ts / tp, to, to / tp, mse[0], mse[1], mse[2]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
