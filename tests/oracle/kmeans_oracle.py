#!/usr/bin/env python3
"""K-means (examples/kmeans.pxl) against SciPy's kmeans2 and a NumPy k-means written here.

Usage: kmeans_oracle.py PXL EXAMPLES_DIR DEVICE...

Vector sets X (n rows of k elements, f32 and u8, as .npy), n from 1 to 3000, k from 1 to
9, K from 1 to 12, clustered, uniform, and with fewer distinct rows than K. On each DEVICE:
  lloyd     from K rows of X: scipy.cluster.vq.kmeans2(X, C, iter, minit='matrix') - bit for
            bit where k < 5 (SciPy's vq then sums the squared differences in order, as pxl;
            from 5 elements on it uses a matrix product); for every k, bit for bit the
            NumPy k-means below
  kmeans    k-means++ seeding as examples/kmeans.pxl documents it (SplitMix64 draws, the
            draw over blocks of 1024 distances), written here in NumPy, then the NumPy
            Lloyd: centroids and labels bit for bit; the seeds are rows of X, distinct
            while X has K distinct rows; and with k < 5 the same as kmeans2 from the seeds
  quantize  the same on the pixels of colour images (a crop of samples/scene.jpg, the
            shapes image, random colours), the painted image bit for bit; and kmeans2 in
            f64 from the same seeds agrees on at least 99.5% of the labels
The NumPy Lloyd: labels by the smallest squared distance summed in f32 in order of the
elements (the first on a tie), centroids by f32 sums in order of the rows (np.add.at)
divided by the count, empty clusters kept; at most `iters` iterations, stopping when the
centroids do not change. Prints 'N passed, N failed' and exits 1 on a failure.
"""
import os
import sys
import tempfile
import warnings

import cv2
import numpy as np
from scipy.cluster.vq import kmeans2

from oracle_common import Tally, run_pxl, sample, skip_without_cuda

M64 = (1 << 64) - 1


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def uniform(seed, j):
    """Draw j of a seed: the top 53 bits of the hash as a number in [0, 1)."""
    return (mix64((seed * 0x9E3779B97F4A7C15 + j) & M64) >> 11) * (1.0 / 9007199254740992.0)


def uniform_index(seed, j, n):
    return min(int(np.floor(uniform(seed, j) * n)), n - 1)


def draw(D, seed, j):
    """k-means++ draw j over the distances D (flattened in row order)."""
    d = D.reshape(-1).astype(np.float64)
    n = len(d)
    blocks = [np.cumsum(d[b:b + 1024]) for b in range(0, n, 1024)]  # sequential f64 sums
    sums = np.array([c[-1] for c in blocks])
    total = np.cumsum(sums)[-1]
    if not (total > 0 and np.isfinite(total)):
        return uniform_index(seed, j, n)
    r = uniform(seed, j) * total
    run = 0.0
    for b, c in enumerate(blocks):
        if run + c[-1] > r:
            return b * 1024 + int(np.nonzero(run + c > r)[0][0])
        run += c[-1]
    return n - 1


def sqdist(X, C):
    """n x K squared distances, summed in f32 in order of the elements."""
    s = np.zeros((X.shape[0], C.shape[0]), np.float32)
    for k in range(X.shape[1]):
        d = X[:, k:k + 1].astype(np.float32) - C[None, :, k]
        s = s + d * d
    return s


def seeds(X, K, seed):
    n = X.shape[0]
    C = np.zeros((K, X.shape[1]), np.float32)
    C[0] = X[uniform_index(seed, 0, n)]
    D = np.full(n, np.inf, np.float32)
    for j in range(1, K):
        D = np.minimum(D, sqdist(X, C[j - 1:j])[:, 0])
        C[j] = X[draw(D, seed, j)]
    return C


def lloyd(X, C, iters, means):
    """Lloyd's iterations as examples/kmeans.pxl runs them; means(X, L, C) the update."""
    L = np.argmin(sqdist(X, C), axis=1)
    for _ in range(iters):
        L = np.argmin(sqdist(X, C), axis=1)
        N = means(X, L, C)
        if np.array_equal(N.view(np.uint32), C.view(np.uint32)):
            break
        C = N
    return C, L


def means_f32(X, L, C):
    """Mean of each cluster's rows: f32 sums in order of the rows, divided by the count."""
    S = np.zeros(C.shape, np.float32)
    np.add.at(S, L, X.astype(np.float32))
    n = np.bincount(L, minlength=C.shape[0])
    out = C.copy()
    out[n > 0] = S[n > 0] / n[n > 0].astype(np.float32)[:, None]
    return out


def means_exact(X, L, C):
    """The colour palette's update: exact integer sums, the f64 quotient rounded to f32."""
    S = np.zeros(C.shape, np.int64)
    np.add.at(S, L, X.astype(np.int64))
    n = np.bincount(L, minlength=C.shape[0])
    out = C.copy()
    out[n > 0] = (S[n > 0] / n[n > 0][:, None]).astype(np.float32)
    return out


def vector_sets():
    rng = np.random.default_rng(20261128)
    for n, k, K, kind in [(1, 1, 1, "clusters"), (7, 2, 3, "uniform"), (200, 3, 5, "clusters"),
                          (3000, 4, 8, "clusters"), (1500, 3, 12, "uniform"), (700, 9, 6, "clusters"),
                          (10, 3, 4, "two rows")]:
        if kind == "clusters":
            centres = rng.normal(0, 6, (K, k))
            xf = centres[rng.integers(0, K, n)] + rng.normal(0, 1, (n, k))
        elif kind == "uniform":
            xf = rng.random((n, k)) * 10
        else:  # fewer distinct rows than K: the draws find every distance 0
            xf = np.repeat(rng.random((2, k)) * 10, n // 2, axis=0)
        yield "f32 %s %dx%d K=%d" % (kind, n, k, K), xf.astype(np.float32), K
        xu = np.clip(xf * 12 + 128, 0, 255).astype(np.uint8)
        yield "u8 %s %dx%d K=%d" % (kind, n, k, K), xu, K


def colour_images(examples):
    scene = sample(examples, "scene.jpg", cv2.IMREAD_COLOR)[100:220, 200:360]
    shapes = sample(examples, "shapes.png", cv2.IMREAD_COLOR)[::4, ::4]
    rand = np.random.default_rng(7).integers(0, 256, (33, 45, 3), dtype=np.uint8)
    return [("scene crop 160x120", cv2.cvtColor(scene, cv2.COLOR_BGR2RGB)),
            ("shapes 1/4", cv2.cvtColor(shapes, cv2.COLOR_BGR2RGB)), ("random 45x33", rand)]


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    pxl, examples, devices = sys.argv[1], sys.argv[2], sys.argv[3:]
    if skip_without_cuda(devices):
        return 77
    src = os.path.join(examples, "kmeans.pxl")
    warnings.filterwarnings("ignore", "One of the clusters is empty")  # kmeans2 keeps them, as pxl
    tally = Tally()
    check = tally.check

    def same(a, b):
        return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a.view(np.uint8), b.view(np.uint8))

    def first_diff(got, want):
        if got.shape != want.shape:
            return "shape %s, expected %s" % (got.shape, want.shape)
        at = np.argwhere(got != want)
        return "%d differ, first at %s: pxl %r, expected %r" % (len(at), tuple(at[0]), got[tuple(at[0])],
                                                                want[tuple(at[0])]) if len(at) else "bits differ"

    with tempfile.TemporaryDirectory() as tmp:
        xpath, cpath = os.path.join(tmp, "x.npy"), os.path.join(tmp, "c.npy")
        cout, lout = os.path.join(tmp, "co.npy"), os.path.join(tmp, "lo.npy")
        iters = 25
        for name, X, K in vector_sets():
            np.save(xpath, X)
            rng = np.random.default_rng(X.shape[0] * 31 + K)
            C0 = X[rng.choice(X.shape[0], K, replace=X.shape[0] < K)].astype(np.float32)
            np.save(cpath, C0)
            want_c, want_l = lloyd(X, C0, iters, means_f32)
            sc, sl = kmeans2(X.astype(np.float32), C0.copy(), iter=iters, minit="matrix", missing="warn") \
                if X.shape[1] < 5 else (None, None)
            seed = 1 + X.shape[0]
            S = seeds(X, K, seed)
            want_kc, want_kl = lloyd(X, S, iters, means_f32)
            for dev in devices:
                what = "lloyd %s on %s" % (name, dev)
                why = run_pxl([pxl, "run", src, "lloyd", "--device", dev, "--in", "X=" + xpath, "--in", "C=" + cpath,
                               "--param", "iters=%d" % iters, "--out", cout, "--out", lout], [cout, lout])
                if why:
                    check(what, False, why)
                else:
                    got_c, got_l = np.load(cout), np.load(lout).reshape(-1).astype(np.int64)
                    check(what + " (NumPy)", same(got_c, want_c) and np.array_equal(got_l, want_l),
                          lambda: first_diff(got_c, want_c) + "; labels: " + first_diff(got_l, want_l))
                    if sc is not None:
                        check(what + " (kmeans2)", same(got_c, sc.astype(np.float32)) and np.array_equal(got_l, sl),
                              lambda: first_diff(got_c, sc) + "; labels: " + first_diff(got_l, sl))
                what = "kmeans %s seed %d on %s" % (name, seed, dev)
                why = run_pxl([pxl, "run", src, "kmeans", "--device", dev, "--in", "X=" + xpath, "--param", "K=%d" % K,
                               "--param", "iters=%d" % iters, "--param", "seed=%d" % seed, "--out", cout,
                               "--out", lout], [cout, lout])
                if why:
                    check(what, False, why)
                    continue
                got_c, got_l = np.load(cout), np.load(lout).reshape(-1).astype(np.int64)
                check(what, same(got_c, want_kc) and np.array_equal(got_l, want_kl),
                      lambda: first_diff(got_c, want_kc) + "; labels: " + first_diff(got_l, want_kl))
            # the seeds themselves: rows of X, distinct while X has K distinct rows
            rows = {tuple(r) for r in X.astype(np.float32)}
            distinct = len({tuple(r) for r in S})
            check("kmeans++ seeds of %s are distinct rows of X" % name,
                  all(tuple(r) in rows for r in S) and distinct == min(K, len(rows)),
                  "%d distinct seeds of %d, X has %d distinct rows" % (distinct, K, len(rows)))
            if X.shape[1] < 5:
                kc, kl = kmeans2(X.astype(np.float32), S.copy(), iter=iters, minit="matrix", missing="warn")
                check("kmeans2 from the seeds of %s" % name, same(want_kc, kc) and np.array_equal(want_kl, kl),
                      "the NumPy k-means differs from SciPy's")

        qin, qout = os.path.join(tmp, "in.png"), os.path.join(tmp, "out.png")
        for name, img in colour_images(examples):
            cv2.imwrite(qin, cv2.cvtColor(img, cv2.COLOR_RGB2BGR))
            px = img.reshape(-1, 3)
            for K, seed in [(1, 3), (2, 5), (8, 1), (16, 2)]:
                S = seeds(px, K, seed)
                P, L = lloyd(px, S, 10, means_exact)
                want = np.clip(np.rint(P[L]), 0, 255).astype(np.uint8).reshape(img.shape)
                sp, sl = kmeans2(px.astype(np.float64), S.astype(np.float64), iter=10, minit="matrix", missing="warn")
                agree = np.mean(sl == L)
                check("kmeans2 (f64) agrees with the NumPy quantisation of %s, K=%d" % (name, K), agree >= 0.995,
                      "%.4f of the labels agree" % agree)
                for dev in devices:
                    what = "quantize %s K=%d seed %d on %s" % (name, K, seed, dev)
                    why = run_pxl([pxl, "run", src, "quantize", "--device", dev, "--in", qin, "--param", "K=%d" % K,
                                   "--param", "iters=10", "--param", "seed=%d" % seed, "--out", qout], [qout])
                    if why:
                        check(what, False, why)
                        continue
                    got = cv2.cvtColor(cv2.imread(qout, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
                    check(what, same(got, want), lambda: first_diff(got, want))
    return tally.summary()


if __name__ == "__main__":
    sys.exit(main())
