#!/usr/bin/env python3
"""Eigenpairs, affinities and normalized cuts of `pxl sparse` against NumPy and SciPy.

    spectral_oracle.py PXL WORKDIR

- eigs: random symmetric matrices (1 x 1 to 300 x 300, sparse and dense-ish, f64 and
  f32, a diagonal one with a repeated eigenvalue kept out of the wanted set), the k
  largest and smallest eigenvalues against numpy.linalg.eigh of the dense matrix to 1e-9
  relative for f64 (the issue asks 1e-6) and 1e-5 for f32 (whose products round),
  eigenvectors up to sign (|<x, x_ref>| within 1e-7 of 1, f32 1e-4) where the eigenvalue
  is separated from its neighbours, and each vector's sign rule (its largest component
  positive);
- affinity: `pxl sparse affinity` of small images (u8, u16, a float .npy; radius 0, 1,
  3 and 5; sigmas), read back with scipy.io.mmread, against the weights computed here
  with NumPy from the formula in docs/SPARSE.md, to 4 ulp (both sides call exp in
  double); the entry count and that no pair beyond the radius or across a row's edge is
  joined; an edge image for the intervening contour, against a loop over the segment's
  pixels written here;
- ncuts: eigenvalues of the generalized problem (D - W) y = lambda D y against
  scipy.sparse.linalg.eigsh of D^-1/2 W D^-1/2 built here (to 1e-9 absolute), and on an
  image of two flat halves with noise, that the two regions are the halves.
Prints "N passed, M failed"; exits 1 on any failure.
"""
import os
import subprocess
import sys

import numpy as np
import scipy.io
import scipy.sparse as sp
import scipy.sparse.linalg as sla

PXL, WORK = sys.argv[1], sys.argv[2]
os.makedirs(WORK, exist_ok=True)
passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what)


def pxl(*args):
    r = subprocess.run([PXL, "sparse"] + list(args), capture_output=True, text=True)
    if r.returncode != 0:
        print("pxl sparse %s: exit %d: %s" % (" ".join(args), r.returncode, r.stderr.strip()))
    return r


def eigs_cases():
    rng = np.random.default_rng(7)
    cases = []
    for n, dens in ((1, 1.0), (2, 1.0), (5, 0.6), (40, 0.2), (120, 0.05), (300, 0.02)):
        M = sp.random(n, n, density=dens, random_state=rng, data_rvs=lambda s: rng.standard_normal(s))
        cases.append(("random %d" % n, (M + M.T).tocsr()))
    # a diagonal with a repeated middle eigenvalue, away from both ends
    d = np.concatenate([np.linspace(-5, -1, 20), np.full(10, 0.5), np.linspace(1, 5, 20)])
    cases.append(("diagonal 50", sp.diags(d).tocsr()))
    return cases


def test_eigs():
    for name, A in eigs_cases():
        path = os.path.join(WORK, "A.mtx")
        scipy.io.mmwrite(path, A, precision=17)
        A = scipy.io.mmread(path).toarray()
        n = A.shape[0]
        ref, refv = np.linalg.eigh(A)
        for which in ("largest", "smallest"):
            for typ in ("f64", "f32"):
                k = min(n, 4)
                r = pxl("eigs", path, "--k", str(k), "--which", which, "--type", typ,
                        "--out", os.path.join(WORK, "v.npy"), "--vectors", os.path.join(WORK, "V.npy"))
                what = "%s %s %s" % (name, which, typ)
                check(r.returncode == 0, what + ": exit status")
                if r.returncode:
                    continue
                v, V = np.load(os.path.join(WORK, "v.npy")), np.load(os.path.join(WORK, "V.npy"))
                check(v.shape == (k,) and V.shape == (n, k), what + ": shapes")
                if typ == "f64":
                    Ar, rv, rvec = A, ref, refv
                else:  # the matrix as f32 values, its eigenpairs exactly (in double)
                    Ar = A.astype(np.float32).astype(np.float64)
                    rv, rvec = np.linalg.eigh(Ar)
                order = np.argsort(-rv)[:k] if which == "largest" else np.argsort(rv)[:k]
                want = rv[order]
                scale = max(np.abs(rv).max(), 1e-300)
                err = np.max(np.abs(v - want) / np.maximum(np.abs(want), 1e-3 * scale))
                # f64: the issue asks 1e-6; f32 products round at 6e-8 of |A| (tol 1e-5)
                bound = 1e-9 if typ == "f64" else 1e-5
                check(err < bound, "%s: eigenvalues %s, want %s (rel %.2g)" % (what, v, want, err))
                for c in range(k):
                    lam = want[c]
                    gap = np.min(np.abs(np.delete(rv, order[c]) - lam)) if n > 1 else np.inf
                    x = V[:, c]
                    check(abs(np.linalg.norm(x) - 1) < 1e-9, "%s: vector %d not of unit length" % (what, c))
                    j = np.argmax(np.abs(x))
                    check(x[j] > 0, "%s: vector %d's largest component is negative" % (what, c))
                    if gap > 1e-6 * scale and (typ == "f64" or gap > 1e-2 * scale):
                        dotp = abs(x @ rvec[:, order[c]])
                        check(abs(dotp - 1) < (1e-7 if typ == "f64" else 1e-4),
                              "%s: vector %d |<x, ref>| = %.12f" % (what, c, dotp))


def weights(img, r, si, sx, edge=None, se=None):
    """The affinity by the formula, as a dict (p, q) -> weight."""
    h, w = img.shape
    out = {}
    for y in range(h):
        for x in range(w):
            for dy in range(-r, r + 1):
                for dx in range(-r, r + 1):
                    if dx * dx + dy * dy > r * r or not (0 <= y + dy < h and 0 <= x + dx < w):
                        continue
                    di = float(img[y, x]) - float(img[y + dy, x + dx])
                    v = np.exp(-di * di / (si * si)) * np.exp(-(dx * dx + dy * dy) / (sx * sx))
                    if edge is not None:
                        m = max(abs(dx), abs(dy))
                        e = 0.0
                        for s in range(m + 1):
                            # the nearest pixel to the point s/m along, halves away from zero
                            px = x + (int(np.floor(abs(dx) * s / m + 0.5)) * (1 if dx >= 0 else -1) if m else 0)
                            py = y + (int(np.floor(abs(dy) * s / m + 0.5)) * (1 if dy >= 0 else -1) if m else 0)
                            e = max(e, float(edge[py, px]))
                        v *= np.exp(-e * e / (se * se))
                    out[(y * w + x, (y + dy) * w + x + dx)] = v
    return out


def save_image(path, a):
    if path.endswith(".npy"):
        np.save(path, a)
    else:
        import cv2
        cv2.imwrite(path, a)


def test_affinity():
    rng = np.random.default_rng(11)
    cases = [
        ("u8 9x7 r1", rng.integers(0, 256, (7, 9), dtype=np.uint8), 1, 0.1, 4.0, ".png", 255.0),
        ("u8 13x11 r3", rng.integers(0, 256, (11, 13), dtype=np.uint8), 3, 0.3, 2.0, ".png", 255.0),
        ("u16 12x12 r5", rng.integers(0, 65536, (12, 12), dtype=np.uint16), 5, 0.2, 4.0, ".png", 65535.0),
        ("f32 10x6 r0", rng.random((6, 10), dtype=np.float32), 0, 0.1, 1.0, ".npy", 1.0),
        ("f32 11x9 r2", rng.random((9, 11), dtype=np.float32), 2, 0.05, 3.0, ".npy", 1.0),
    ]
    for name, img, r, si, sx, ext, top in cases:
        ip = os.path.join(WORK, "img" + ext)
        save_image(ip, img)
        out = os.path.join(WORK, "W.mtx")
        res = pxl("affinity", ip, "--radius", str(r), "--sigma-i", repr(si), "--sigma-x", repr(sx), "--out", out)
        check(res.returncode == 0, name + ": exit status")
        if res.returncode:
            continue
        W = scipy.io.mmread(out).tocsr()
        vals = (img.astype(np.float64) / top).astype(np.float32)  # pxl's image values, f32
        want = weights(vals, r, si, sx)
        got = W.todok()
        check(W.nnz == len(want), "%s: %d entries, want %d" % (name, W.nnz, len(want)))
        worst = max((abs(got[p] - v) / (abs(v) * 2.0 ** -52) for p, v in want.items() if v > 0), default=0)
        check(worst <= 4, "%s: weights off by %.1f ulp" % (name, worst))
    # the intervening-contour cue
    img = rng.integers(0, 256, (8, 10), dtype=np.uint8)
    edge = rng.integers(0, 256, (8, 10), dtype=np.uint8)
    ip, ep, out = (os.path.join(WORK, f) for f in ("ic.png", "ice.png", "icW.mtx"))
    save_image(ip, img)
    save_image(ep, edge)
    res = pxl("affinity", ip, "--edges", ep, "--sigma-e", "0.5", "--radius", "3", "--out", out)
    check(res.returncode == 0, "edges: exit status")
    if res.returncode == 0:
        W = scipy.io.mmread(out).todok()
        f = lambda a: (a.astype(np.float64) / 255).astype(np.float32)
        want = weights(f(img), 3, 0.1, 4.0, f(edge), 0.5)
        worst = max(abs(W[p] - v) / (abs(v) * 2.0 ** -52) for p, v in want.items() if v > 1e-300)
        check(worst <= 4, "edges: weights off by %.1f ulp" % worst)


def test_ncuts():
    import cv2
    rng = np.random.default_rng(5)
    img = np.full((24, 32), 60, np.uint8)
    img[:, 16:] = 190
    img = np.clip(img.astype(int) + rng.integers(-8, 9, img.shape), 0, 255).astype(np.uint8)
    ip, lp, vp = (os.path.join(WORK, f) for f in ("halves.png", "labels.png", "vals.npy"))
    cv2.imwrite(ip, img)
    res = pxl("ncuts", ip, "--k", "2", "--radius", "3", "--out", lp, "--vals", vp)
    check(res.returncode == 0, "ncuts: exit status")
    if res.returncode:
        return
    lab = cv2.imread(lp, cv2.IMREAD_UNCHANGED)
    left, right = lab[:, :16], lab[:, 16:]
    check(lab.shape == img.shape and len(np.unique(left)) == 1 and len(np.unique(right)) == 1 and
          left[0, 0] != right[0, 0], "ncuts: the two halves are not the two regions: %s" % np.unique(lab))
    # the eigenvalues against SciPy on the same affinity
    Wp = os.path.join(WORK, "hW.mtx")
    pxl("affinity", ip, "--radius", "3", "--out", Wp)
    W = scipy.io.mmread(Wp).tocsr()
    d = np.asarray(W.sum(axis=1)).ravel()
    Dm = sp.diags(1 / np.sqrt(d))
    res = pxl("ncuts", ip, "--k", "5", "--radius", "3", "--out", lp, "--vals", vp)
    mu = sla.eigsh((Dm @ W @ Dm).tocsr(), k=5, which="LA", tol=1e-13)[0]
    lam = np.sort(1 - mu)
    got = np.load(vp)
    check(res.returncode == 0 and np.max(np.abs(got - lam)) < 1e-9, "ncuts: eigenvalues %s, want %s" % (got, lam))


test_eigs()
test_affinity()
test_ncuts()
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
