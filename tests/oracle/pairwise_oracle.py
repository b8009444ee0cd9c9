#!/usr/bin/env python3
"""Distance tables between vector sets (examples/pairwise.pxl) against SciPy and NumPy.

Usage: pairwise_oracle.py PXL EXAMPLES_DIR DEVICE...

X (n rows) and Y (m rows) of k elements, u8 (PNG) or f32 (TIFF), for sizes from 1 x 1 x 1
up to n = 130, m = 257, k = 300 (past any blocking a backend might use), and X against
itself. On each DEVICE, `PXL run` makes the m x n table, compared with:
  sqeuclidean  scipy.spatial.distance.cdist(X, Y, 'sqeuclidean')
  cityblock    cdist(X, Y, 'cityblock')
  cosine       cdist(X, Y, 'cosine'); NaN where a vector is all zeros (0 / 0), as SciPy's
  chisquare    1/2 sum over the elements with a + b != 0 of (a - b)^2 / (a + b), in NumPy (f64)
  intersection sum of min(a, b), in NumPy
  rbf          exp(-gamma * cdist 'sqeuclidean'), gamma = 0.01 (f64)
  nearest_row  for each row of X the index of the nearest row of Y (squared Euclidean, the
               smallest index on a tie): numpy.argmin over the cdist table, exactly for u8
               sets (integer distances, so ties are ties); for f32 where the best row is
               nearer than the second by more than the tolerance, and elsewhere the row pxl
               chose must be within the tolerance of the nearest
pxl sums in f32 in order of k (cosine in f64): u8 tables of sums of integers below 2^24
(sqeuclidean, cityblock, intersection) must be exact; the others within a relative 2e-7 * k
+ 1e-6 (the bound of k f32 roundings of a sum of non-negative terms), or 1e-5 where SciPy's
value is below 1. Prints 'N passed, N failed' and exits 1 on a failure.
"""
import os
import sys
import tempfile

import cv2
import numpy as np
import tifffile
from scipy.spatial.distance import cdist

from oracle_common import Tally, run_pxl, skip_without_cuda

GAMMA = 0.01
ENTRIES = ["sqeuclidean", "cityblock", "cosine", "chisquare", "intersection", "rbf", "nearest_row"]
EXACT_U8 = {"sqeuclidean", "cityblock", "intersection"}


def sets():
    """(name, X, Y) pairs: u8 and f32, odd sizes, duplicate rows (ties), zero rows."""
    rng = np.random.default_rng(20261128)
    for n, m, k in [(1, 1, 1), (5, 3, 7), (64, 50, 33), (130, 257, 300)]:
        xu = rng.integers(0, 256, (n, k), dtype=np.uint8)
        yu = rng.integers(0, 256, (m, k), dtype=np.uint8)
        if m > 2:
            yu[2] = yu[0]  # two equal rows of Y: nearest_row's tie goes to row 0
            yu[1] = 0      # a zero vector: cosine is NaN
        yield "u8 %dx%dx%d" % (n, m, k), xu, yu
        xf = (rng.random((n, k)) * 2).astype(np.float32)  # non-negative: chi-square is for histograms
        yf = (rng.random((m, k)) * 3).astype(np.float32)
        yield "f32 %dx%dx%d" % (n, m, k), xf, yf
    a = rng.integers(0, 4, (40, 16), dtype=np.uint8)  # few values: many equal distances
    yield "u8 40x40x16 X against itself", a, a


def expected(entry, X, Y):
    x, y = X.astype(np.float64), Y.astype(np.float64)
    if entry in ("sqeuclidean", "cityblock", "cosine"):
        with np.errstate(invalid="ignore", divide="ignore"):
            return cdist(x, y, entry)
    if entry == "chisquare":
        a, b = x[:, None, :], y[None, :, :]
        s = a + b
        with np.errstate(invalid="ignore", divide="ignore"):
            return 0.5 * np.where(s != 0, (a - b) ** 2 / np.where(s != 0, s, 1), 0).sum(axis=2)
    if entry == "intersection":
        return np.minimum(x[:, None, :], y[None, :, :]).sum(axis=2)
    if entry == "rbf":
        return np.exp(-GAMMA * cdist(x, y, "sqeuclidean"))
    raise ValueError(entry)


def f32_table(X, Y):
    """The squared Euclidean table as pxl sums it: f32, in order of the elements."""
    s = np.zeros((X.shape[0], Y.shape[0]), np.float32)
    for k in range(X.shape[1]):
        d = X[:, k:k + 1].astype(np.float32) - Y[None, :, k].astype(np.float32)
        s = s + d * d
    return s


NO_ROW = 4294967295


def knn_expected(D, kk=10):
    """The kk nearest rows per row of D, nearest first, equal distances by index (a stable
    sort); NO_ROW past the rows there are and for infinite or NaN distances."""
    order = np.argsort(D, axis=1, kind="stable")[:, :kk]
    got = np.full((D.shape[0], kk), NO_ROW, np.uint32)
    finite = np.isfinite(np.take_along_axis(D, order, axis=1))
    got[:, :order.shape[1]] = np.where(finite, order, NO_ROW)
    return got


def save(path, a):
    if a.dtype == np.uint8:
        cv2.imwrite(path, a)
    else:
        tifffile.imwrite(path, a)


def run(pxl, examples, dev, entry, xpath, ypath, tmp, ipath=None):
    out = os.path.join(tmp, "out.tif")
    cmd = [pxl, "run", os.path.join(examples, "pairwise.pxl"), entry, "--in", "X=" + xpath, "--in", "Y=" + ypath,
           "--out", out, "--device", dev]
    if ipath:
        cmd += ["--in", "I=" + ipath]
    if entry == "rbf":
        cmd += ["--param", "gamma=%r" % GAMMA]
    why = run_pxl(cmd, [out], timeout=300)
    return (None, why) if why else (tifffile.imread(out), None)


def main():
    pxl, examples, devices = sys.argv[1], sys.argv[2], sys.argv[3:]
    if skip_without_cuda(devices):
        return 77
    tally = Tally()
    check = tally.check

    with tempfile.TemporaryDirectory() as tmp:
        for name, X, Y in sets():
            ext = ".png" if X.dtype == np.uint8 else ".tif"
            xpath, ypath = os.path.join(tmp, "X" + ext), os.path.join(tmp, "Y" + ext)
            save(xpath, X)
            save(ypath, Y)
            k = X.shape[1]
            rtol = 2e-7 * k + 1e-6
            sq = cdist(X.astype(np.float64), Y.astype(np.float64), "sqeuclidean")
            d32 = f32_table(X, Y)
            near = knn_expected(d32)
            ipath = os.path.join(tmp, "I.npy")
            np.save(ipath, near)
            # pxl's f32 sums in order against SciPy's f64 table, for the k-NN entries' oracle
            check("f32 table of %s" % name, np.allclose(d32, sq, rtol=rtol, atol=1e-5), "NumPy's f32 sums")
            for dev in devices:
                what = "knn10 on %s, %s" % (name, dev)
                got, why = run(pxl, examples, dev, "knn10", xpath, ypath, tmp)
                if got is None:
                    check(what, False, why)
                else:
                    check(what, got.dtype == np.uint32 and np.array_equal(got, near),
                          lambda: "%s %s, expected %s: %d differ" % (got.shape, got.dtype, near.shape,
                                                                      np.sum(got != near) if got.shape == near.shape else -1))
                what = "knn_dist on %s, %s" % (name, dev)
                got, why = run(pxl, examples, dev, "knn_dist", xpath, ypath, tmp, ipath)
                want = np.where(near != NO_ROW, np.take_along_axis(d32, np.minimum(near, Y.shape[0] - 1).astype(np.int64),
                                                                       axis=1), np.inf).astype(np.float32)
                if got is None:
                    check(what, False, why)
                else:
                    check(what, got.dtype == np.float32 and np.array_equal(got, want),
                          lambda: "%s %s: %d differ" % (got.shape, got.dtype,
                                                        np.sum(got != want) if got.shape == want.shape else -1))
            for entry in ENTRIES:
                for dev in devices:
                    what = "%s on %s, %s" % (entry, name, dev)
                    got, why = run(pxl, examples, dev, entry, xpath, ypath, tmp)
                    if got is None:
                        check(what, False, lambda: why)
                        continue
                    if entry == "nearest_row":
                        got = got.reshape(-1).astype(np.int64)
                        if got.shape != (X.shape[0],) or np.any(got < 0) or np.any(got >= Y.shape[0]):
                            check(what, False, lambda: "shape %s or an index out of range" % (got.shape,))
                            continue
                        order = np.sort(sq, axis=1)
                        best = order[:, 0]
                        gap = order[:, 1] - best if Y.shape[0] > 1 else np.full_like(best, np.inf)
                        tol = rtol * np.maximum(best, 1)
                        # u8: exact integer distances, so the rule itself (ties to the smaller index)
                        clear = gap > 2 * tol if X.dtype != np.uint8 else np.full(best.shape, True)
                        chosen = sq[np.arange(len(got)), got]
                        ok = np.all(got[clear] == np.argmin(sq, axis=1)[clear]) and np.all(chosen - best <= tol)
                        check(what, ok, lambda: "rows %s" % np.nonzero((got != np.argmin(sq, axis=1)) & clear)[0][:5])
                        continue
                    want = expected(entry, X, Y)
                    if got.shape != (X.shape[0], Y.shape[0]) or got.dtype != np.float32:
                        check(what, False, lambda: "table %s %s, expected %s float32" %
                              (got.shape, got.dtype, (X.shape[0], Y.shape[0])))
                        continue
                    g = got.astype(np.float64)
                    nan = np.isnan(want)
                    if X.dtype == np.uint8 and entry in EXACT_U8:
                        bad = ~(g == want)
                    else:
                        bad = ~nan & ~(np.abs(g - want) <= np.maximum(rtol * np.abs(want), 1e-5))
                    bad |= nan != np.isnan(g)
                    def why_bad():
                        at = tuple(np.argwhere(bad)[0])
                        return "%d entries differ, first (row %d of X, row %d of Y): pxl %r, expected %r" % (
                            bad.sum(), at[0], at[1], g[at], want[at])
                    check(what, not bad.any(), why_bad)
    return tally.summary()


if __name__ == "__main__":
    sys.exit(main())
