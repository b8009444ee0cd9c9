#!/usr/bin/env python3
"""Normalized cuts end to end: `pxl sparse ncuts` against SciPy's eigsh on the same problem.

    bench_ncuts.py PXL [--image samples/scene.png] [--size 481x321] [--k 9] [--radius 5]
                       [--threads N]

The seed's configuration (PALLOR, seed 003): a 321 x 481 image, radius 5 (81
diagonals), the 9 smallest eigenpairs of (D - W) y = lambda D y. pxl: the whole command
(reading the image, the affinity, D^-1/2 W D^-1/2, Lanczos, k-means, writing the
labels), wall time. SciPy: the affinity built here with NumPy (the formula of
docs/SPARSE.md), D^-1/2 W D^-1/2 as CSR, and scipy.sparse.linalg.eigsh(k, which='LA',
tol=1e-10) - the eigensolver alone timed, ARPACK on one thread with its products in
SciPy's CSR code. Prints both times, the ratio and the largest difference between the
eigenvalues.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import cv2
import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sla


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pxl")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--image", default=os.path.join(here, "..", "samples", "scene.png"))
    ap.add_argument("--size", default="481x321")
    ap.add_argument("--k", type=int, default=9)
    ap.add_argument("--radius", type=int, default=5)
    ap.add_argument("--threads", type=int, default=0)
    a = ap.parse_args()
    w, h = map(int, a.size.split("x"))
    g = cv2.resize(cv2.imread(a.image, cv2.IMREAD_GRAYSCALE), (w, h), interpolation=cv2.INTER_AREA)
    with tempfile.TemporaryDirectory() as d:
        ip, lp, vp = (os.path.join(d, f) for f in ("in.png", "labels.png", "vals.npy"))
        cv2.imwrite(ip, g)
        t = time.perf_counter()
        r = subprocess.run([a.pxl, "sparse", "ncuts", ip, "--k", str(a.k), "--radius", str(a.radius), "--threads",
                            str(a.threads), "--out", lp, "--vals", vp], capture_output=True, text=True)
        t_pxl = time.perf_counter() - t
        if r.returncode:
            sys.exit("pxl sparse ncuts failed: " + r.stderr.strip())
        lam_pxl = np.load(vp)
    I = (g.astype(np.float64) / 255).astype(np.float32).astype(np.float64).ravel()
    ys, xs = np.mgrid[0:h, 0:w]
    ys, xs = ys.ravel(), xs.ravel()
    rows, cols, vals = [], [], []
    for dy in range(-a.radius, a.radius + 1):
        for dx in range(-a.radius, a.radius + 1):
            if dx * dx + dy * dy > a.radius ** 2:
                continue
            ok = (ys + dy >= 0) & (ys + dy < h) & (xs + dx >= 0) & (xs + dx < w)
            i = (ys * w + xs)[ok]
            j = ((ys + dy) * w + xs + dx)[ok]
            di = I[i] - I[j]
            rows.append(i), cols.append(j)
            vals.append(np.exp(-di * di / 0.01) * np.exp(-(dx * dx + dy * dy) / 16.0))
    n = w * h
    W = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n))
    dd = np.asarray(W.sum(axis=1)).ravel()
    Dm = sp.diags(1 / np.sqrt(dd))
    N = (Dm @ W @ Dm).tocsr()
    t = time.perf_counter()
    mu = sla.eigsh(N, k=a.k, which="LA", tol=1e-10)[0]
    t_sp = time.perf_counter() - t
    lam = np.sort(1 - mu)
    print("normalized cuts, %d x %d image (%d rows, %d entries), radius %d, %d eigenpairs" %
          (w, h, n, W.nnz, a.radius, a.k))
    print("pxl sparse ncuts (whole command, %s threads): %.3f s" % (a.threads or "all", t_pxl))
    print("SciPy eigsh alone (ARPACK, CSR products):    %.3f s" % t_sp)
    print("ratio SciPy / pxl: %.2fx" % (t_sp / t_pxl))
    print("largest eigenvalue difference: %.3g" % np.max(np.abs(lam_pxl - lam)))
    print("lambda (pxl):  ", " ".join("%.9g" % v for v in lam_pxl))
    print("lambda (SciPy):", " ".join("%.9g" % v for v in lam))


if __name__ == "__main__":
    main()
