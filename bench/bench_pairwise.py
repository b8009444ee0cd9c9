#!/usr/bin/env python3
"""bench_pairwise - distance tables of examples/pairwise.pxl on pxl's CPU backend against SciPy.

Usage: bench_pairwise.py PXL [--sizes 2048x64,1024x512] [--threads N] [--reps R] [--device D]

For each size NxK: X and Y of N random f32 vectors of K elements (uniform in [0, 2), as
histograms are non-negative), written as TIFF images (K wide, N high). Each entry runs
R + 1 times in one `PXL run --time --repeat R+1 --threads N` (the runs alone: not
loading, compiling or saving; the m x n f32 table allocated and written each run; the
first run, which loads the kernel, not counted); the peer runs R times in this process
on the same arrays, SciPy's cdist single-threaded as it is (it has no threads option):
  sqeuclidean, cityblock, cosine   scipy.spatial.distance.cdist(X, Y, metric)
  rbf                               numpy.exp(-gamma * cdist(X, Y, 'sqeuclidean'))
  nearest_row                       cdist(X, Y, 'sqeuclidean').argmin(axis=1)
  knn10                             numpy.argsort(cdist(X, Y, 'sqeuclidean'), axis=1,
                                    kind='stable')[:, :10]
  chisquare, intersection           no SciPy function (cdist with a Python callable runs
                                    one call per pair); pxl's time only
Best of R, ms; 'peer/pxl' above 1: pxl is faster. Each pxl table is checked against the
peer's (relative 1e-4) before its time is printed.
"""
import argparse
import os
import sys
import tempfile

import numpy as np
import tifffile
from scipy.spatial.distance import cdist

from bench_common import best_ms, pxl_time_ms

GAMMA = 0.01
HERE = os.path.dirname(os.path.abspath(__file__))
PAIRWISE = os.path.join(HERE, "..", "examples", "pairwise.pxl")


def peers(X, Y):
    return {
        "sqeuclidean": lambda: cdist(X, Y, "sqeuclidean"),
        "cityblock": lambda: cdist(X, Y, "cityblock"),
        "cosine": lambda: cdist(X, Y, "cosine"),
        "rbf": lambda: np.exp(-GAMMA * cdist(X, Y, "sqeuclidean")),
        "nearest_row": lambda: cdist(X, Y, "sqeuclidean").argmin(axis=1),
        "knn10": lambda: np.argsort(cdist(X, Y, "sqeuclidean"), axis=1, kind="stable")[:, :10],
        "chisquare": None,
        "intersection": None,
    }


def pxl_ms(pxl, entry, xpath, ypath, out, threads, reps, device="cpu"):
    """The best of reps runs after the first in one `pxl run`, and the table of the last."""
    if os.path.exists(out):
        os.remove(out)
    cmd = [pxl, "run", PAIRWISE, entry, "--in", "X=" + xpath, "--in", "Y=" + ypath, "--out", out,
           "--device", device, "--threads", str(threads)]
    if entry == "rbf":
        cmd += ["--param", "gamma=%r" % GAMMA]
    return pxl_time_ms(cmd, reps, "bench_pairwise: " + entry), tifffile.imread(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("pxl")
    ap.add_argument("--sizes", default="2048x64,1024x512")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--device", default="cpu", help="pxl's device (on a GPU the times include copying the sets "
                    "in and the table out)")
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    rng = np.random.default_rng(1)
    bad = 0
    print("pxl on %s (%d CPU threads, examples/pairwise.pxl) against SciPy %s cdist (1 thread); best of %d, ms"
          % (a.device, a.threads, __import__("scipy").__version__, a.reps))
    print("%-10s %-13s %10s %10s %9s  %s" % ("N x K", "entry", "pxl", "SciPy", "peer/pxl", "check"))
    with tempfile.TemporaryDirectory() as tmp:
        for size in a.sizes.split(","):
            n, k = (int(v) for v in size.split("x"))
            X = (rng.random((n, k)) * 2).astype(np.float32)
            Y = (rng.random((n, k)) * 2).astype(np.float32)
            xpath, ypath, out = (os.path.join(tmp, f) for f in ("X.tif", "Y.tif", "D.tif"))
            tifffile.imwrite(xpath, X)
            tifffile.imwrite(ypath, Y)
            for entry, peer in peers(X.astype(np.float64), Y.astype(np.float64)).items():
                tp, got = pxl_ms(a.pxl, entry, xpath, ypath, out, a.threads, a.reps, a.device)
                if peer is None:
                    print("%-10s %-13s %10.1f %10s %9s  (no SciPy function)" % (size, entry, tp, "-", "-"))
                    continue
                ts, want = best_ms(peer, a.reps)
                if entry in ("nearest_row", "knn10"):
                    # f32 sums may settle a near-tie otherwise
                    ok = got.size == want.size and np.mean(got.reshape(-1) == want.reshape(-1)) > 0.999
                else:
                    ok = np.allclose(got, want, rtol=1e-4, atol=1e-5)
                bad += not ok
                print("%-10s %-13s %10.1f %10.1f %8.2fx  %s" % (size, entry, tp, ts, ts / tp, "ok" if ok else "MISMATCH"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
